//! `bo-bench suite`: one designer on every problem (or those named), one row per problem — the
//! median simple regret at a quarter, half and all of the budget, and the time of one step.

use std::path::PathBuf;

use anyhow::Result;

use super::{Bench, Design, RunReport, Sweep, create_out_dir, median_cells, parse_config, write_json};
use crate::harness::median;
use crate::problems;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sweep: Sweep,
    /// A directory to write each problem's JSON (as `run --out` would) into.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(args: Args) -> Result<()> {
    let Args {
        sweep: Sweep { design: Design { algorithm, budget, seeds, first_seed, batch, config, true_structure }, problems: names },
        out,
    } = args;
    let config = parse_config(config)?;
    let chosen: Vec<Bench> = if names.is_empty() {
        problems::all().into_iter().map(Bench::Listed).collect()
    } else {
        names.iter().map(|n| Bench::named(n)).collect::<Result<_>>()?
    };
    create_out_dir(&out)?;
    let mid = (budget / 2).max(1);
    let early = (budget / 4).max(1);
    println!(
        "{algorithm}, {seeds} seeds from {first_seed}, budget {budget}, batches of {batch}: median simple regret (and distinct cells of the discrete parameters evaluated)"
    );
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6}",
        "problem",
        format!("@{early}"),
        format!("@{mid}"),
        format!("@{budget}"),
        "step ms",
        "max ms",
        "cells"
    );
    for p in chosen {
        let config = p.config(&config, true_structure)?;
        let mut runs = (first_seed..first_seed + seeds)
            .map(|seed| p.run(&algorithm, &config, budget, batch as usize, seed))
            .collect::<Result<Vec<_>>>()?;
        runs.iter_mut().for_each(|r| r.suggestions.clear());
        let at = |t: usize| median(runs.iter().map(|r| r.regret[t - 1]).collect());
        let times: Vec<f64> = runs.iter().flat_map(|r| r.suggest_seconds.iter().copied()).collect();
        let max = times.iter().copied().fold(0.0, f64::max);
        let cells = median_cells(&runs).map_or_else(|| "-".to_owned(), |c| c.to_string());
        println!(
            "{:<18} {:>10.3e} {:>10.3e} {:>10.3e} {:>9.1} {:>9.1} {:>6}",
            p.name(),
            at(early),
            at(mid),
            at(budget),
            1e3 * median(times),
            1e3 * max,
            cells
        );
        if let Some(dir) = &out {
            let report =
                RunReport { problem: p.name().to_owned(), algorithm: algorithm.clone(), config, budget, optimum: p.optimum(), runs };
            write_json(&dir.join(format!("{}.json", p.name())), &report)?;
        }
    }
    Ok(())
}
