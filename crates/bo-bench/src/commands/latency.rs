//! `bo-bench latency`: seconds per fit (cold and warm-started) and per suggest against n and D
//! (see `crate::latency`).

use std::path::PathBuf;

use anyhow::Result;

use super::{Algorithm, parse_config, write_json_pretty};
use crate::latency::{self, LatencyObjective};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    algorithm: Algorithm,
    /// Trial counts, comma-separated.
    #[arg(long, default_value = "100,200,500,1000", value_delimiter = ',')]
    n: Vec<usize>,
    /// Dimensions, comma-separated.
    #[arg(long, default_value = "5,20", value_delimiter = ',')]
    d: Vec<usize>,
    /// Suggestions timed per row (the median is reported).
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// The function the random observations take their values from.
    #[arg(long, value_enum, default_value_t = LatencyObjective::Sines)]
    objective: LatencyObjective,
    /// Where to write the JSON.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(Args { algorithm: Algorithm { algorithm, config }, n, d, repeats, objective, out }: Args) -> Result<()> {
    let rows = latency::latency(&algorithm, parse_config(config)?, &n, &d, repeats.max(1), objective)?;
    if let Some(path) = out {
        write_json_pretty(&path, &rows)?;
    }
    Ok(())
}
