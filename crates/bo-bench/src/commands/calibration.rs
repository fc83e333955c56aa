//! `bo-bench calibration`: whether predictions mean what they say — the coverage of each
//! designer's central 50 % and 90 % intervals and its mean log predictive density (see
//! `crate::calibration`).

use std::path::PathBuf;

use anyhow::Result;

use super::{parse_config, problem_named, write_json_pretty};
use crate::calibration;

#[derive(clap::Args)]
pub struct Args {
    /// Designers, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = calibration::DESIGNERS)]
    designers: Vec<String>,
    /// Problems, comma-separated: one classic, one tree, one high-dimensional, one mixed, one noisy.
    #[arg(long, value_delimiter = ',', default_value = calibration::PROBLEMS)]
    problems: Vec<String>,
    /// Training sizes, comma-separated (above 2,048 the designers fit a subset).
    #[arg(long, value_delimiter = ',', default_value = "30,100,3000")]
    sizes: Vec<usize>,
    /// Seeds per problem.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// The run's next trials predicted at each size.
    #[arg(long, default_value_t = 20)]
    held_out: usize,
    /// Uniform random points predicted at each size.
    #[arg(long, default_value_t = 20)]
    random: usize,
    /// `algorithmConfig` of every designer judged, as JSON (a designer that refuses it is skipped
    /// with its reason); the trials come from `GP_BANDIT`'s defaults either way.
    #[arg(long)]
    config: Option<String>,
    /// Where to write the JSON.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(Args { designers, problems, sizes, seeds, held_out, random, config, out }: Args) -> Result<()> {
    let settings = calibration::Settings { designers, sizes, seeds, held_out, random, config: parse_config(config)? };
    let mut rows = Vec::new();
    for name in &problems {
        let found = calibration::calibrate(&problem_named(name)?, &settings)?;
        calibration::print(&found);
        rows.extend(found);
    }
    calibration::print_pooled(&calibration::pooled(&rows));
    if let Some(path) = out {
        write_json_pretty(&path, &rows)?;
    }
    Ok(())
}
