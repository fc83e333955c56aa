//! `bo-bench fronts`: seconds to choose the optimal trials of a front larger than the cap, and
//! the hypervolume the cut keeps (see `crate::fronts`).

use std::path::PathBuf;

use anyhow::Result;

use super::write_json_pretty;
use crate::fronts;

#[derive(clap::Args)]
pub struct Args {
    /// Numbers of objectives, comma-separated.
    #[arg(long, default_value = "2,3,4,6,8,12,20", value_delimiter = ',')]
    objectives: Vec<usize>,
    /// Trials on the front, comma-separated.
    #[arg(long, default_value = "1100,2000", value_delimiter = ',')]
    trials: Vec<usize>,
    /// The most trials kept (ListOptimalTrials keeps 1,000).
    #[arg(long, default_value_t = 1000)]
    cap: usize,
    /// Compare with the exact cut up to this many trials.
    #[arg(long, default_value_t = 0)]
    exact_up_to: usize,
    /// Where to write the JSON.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(Args { objectives, trials, cap, exact_up_to, out }: Args) -> Result<()> {
    let rows = fronts::run(&objectives, &trials, cap, exact_up_to);
    if let Some(path) = out {
        write_json_pretty(&path, &rows)?;
    }
    Ok(())
}
