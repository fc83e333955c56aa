//! `bo-bench run`: one designer on one problem over several seeds — the median simple regret at
//! fixed points of the budget, and every seed's trace as JSON.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Result;

use super::{Bench, Design, RunReport, median_cells, parse_config, write_json};
use crate::harness::median;

#[derive(clap::Args)]
pub struct Args {
    /// Problem name (see `list`).
    #[arg(long)]
    problem: String,
    #[command(flatten)]
    design: Design,
    /// Where to write the JSON.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write each evaluation's suggestion into the JSON.
    #[arg(long)]
    suggestions: bool,
}

pub fn main(args: Args) -> Result<()> {
    let Args { problem, design: Design { algorithm, budget, seeds, first_seed, batch, config, true_structure }, out, suggestions } = args;
    let p = Bench::named(&problem)?;
    let config = p.config(&parse_config(config)?, true_structure)?;
    let mut runs = Vec::new();
    for seed in first_seed..first_seed + seeds {
        let mut trace = p.run(&algorithm, &config, budget, batch as usize, seed)?;
        if !suggestions {
            trace.suggestions.clear();
        }
        eprintln!(
            "seed {seed}: final regret {:.3e}, mean {:.1} ms per suggestion",
            trace.regret.last().copied().unwrap_or(f64::NAN),
            1e3 * trace.suggest_seconds.iter().sum::<f64>() / budget.max(1) as f64
        );
        runs.push(trace);
    }
    println!("{problem} / {algorithm}: median simple regret over {seeds} seeds");
    let marks: BTreeSet<usize> = [10, 25, 50, 100, 200, 300].into_iter().filter(|&t| t <= budget).chain(std::iter::once(budget)).collect();
    for at in marks {
        let values: Vec<f64> = runs.iter().map(|r| r.regret[at - 1]).collect();
        println!("  after {at:>4}: {:.3e}", median(values));
    }
    let all_times: Vec<f64> = runs.iter().flat_map(|r| r.suggest_seconds.iter().copied()).collect();
    println!("  fit + suggest: median {:.1} ms", 1e3 * median(all_times));
    if let Some(cells) = median_cells(&runs) {
        println!("  distinct cells of the discrete parameters evaluated: median {cells}");
    }
    let report = RunReport { problem, algorithm, config, budget, optimum: p.optimum(), runs };
    if let Some(path) = out {
        write_json(&path, &report)?;
    }
    Ok(())
}
