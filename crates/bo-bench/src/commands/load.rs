//! `bo-bench load`: a running service under load over HTTP — trials per second and request
//! latency percentiles (see `crate::load`).

use std::path::PathBuf;

use anyhow::Result;

use super::write_json_pretty;
use crate::load;

#[derive(clap::Args)]
pub struct Args {
    /// Replica base URLs, comma-separated (requests go round robin).
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:8080")]
    url: Vec<String>,
    /// Concurrent workers.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// Suggest-and-complete cycles per measurement.
    #[arg(long, default_value_t = 2000)]
    trials: usize,
    /// Study sizes (completed trials) to fill to before each measurement, comma-separated.
    #[arg(long, value_delimiter = ',')]
    prefill: Vec<usize>,
    /// The study's algorithm.
    #[arg(long, default_value = "RANDOM_SEARCH")]
    algorithm: String,
    /// An API key, when the service has keys.
    #[arg(long, env = "BO_API_KEY")]
    key: Option<String>,
    /// The project of the study.
    #[arg(long, default_value = "load")]
    project: String,
    /// Studies the workers spread over (worker w uses study w mod studies).
    #[arg(long, default_value_t = 1)]
    studies: usize,
    /// Where to write the JSON.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(Args { url, workers, trials, prefill, algorithm, key, project, studies, out }: Args) -> Result<()> {
    let rows = load::run(&load::LoadConfig { urls: url, workers, trials, prefill, algorithm, key, project, studies })?;
    if let Some(path) = out {
        write_json_pretty(&path, &rows)?;
    }
    Ok(())
}
