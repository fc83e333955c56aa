//! `bo-bench regression`: Ma & Blaschko 2020, Fig. 4b — the median log10 test MSE of Add-Tree
//! against independent per-leaf GPs (see `crate::regression`).

use std::path::PathBuf;

use anyhow::Result;

use super::{parse_config, problem_named, write_json_pretty};
use crate::regression;

#[derive(clap::Args)]
pub struct Args {
    /// Problem name (a conditional one).
    #[arg(long, default_value = "jenatton_small")]
    problem: String,
    /// Training-set sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,12,16,20,24,28,32,36,40,44,48")]
    n: Vec<usize>,
    /// Seeds per size.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Both models' `algorithmConfig` as JSON (`{"kernel": "SQUARED_EXP"}`).
    #[arg(long)]
    config: Option<String>,
    /// Where to write the JSON.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(Args { problem, n, seeds, config, out }: Args) -> Result<()> {
    let config = match parse_config(config)? {
        serde_json::Value::Null => serde_json::json!({}),
        c => c,
    };
    let rows = regression::regression(&problem_named(&problem)?, &n, seeds, &config)?;
    if let Some(path) = out {
        write_json_pretty(&path, &rows)?;
    }
    Ok(())
}
