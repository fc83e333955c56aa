//! `bo-bench large`: a study preloaded with N random evaluations, then a few steps — the
//! designer as the service runs it against the same designer fitted on every observation (see
//! `crate::large`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::write_json_pretty;
use crate::{large, problems};

#[derive(clap::Args)]
pub struct Args {
    /// Problem name (see `list`).
    #[arg(long, default_value = "hartmann6")]
    problem: String,
    /// Algorithm name, as in a study's `algorithm`.
    #[arg(long, default_value = "GP_BANDIT")]
    algorithm: String,
    /// Preloaded evaluations, comma-separated.
    #[arg(long, default_value = "3000", value_delimiter = ',')]
    n: Vec<usize>,
    /// Suggestions after the preload.
    #[arg(long, default_value_t = 30)]
    steps: usize,
    /// Number of seeds (0, 1, …).
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// Also run the designer fitted on every observation (cubic in N).
    #[arg(long)]
    exact: bool,
    /// Where to write the JSON.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(Args { problem, algorithm, n, steps, seeds, exact, out }: Args) -> Result<()> {
    let problem = problems::by_name(&problem).with_context(|| format!("no problem {problem} (see `list`)"))?;
    let rows = large::compare(&problem, &algorithm, &n, steps, seeds, exact)?;
    if let Some(path) = out {
        write_json_pretty(&path, &rows)?;
    }
    Ok(())
}
