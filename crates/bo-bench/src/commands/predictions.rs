//! `bo-bench curve-predictions`: the decay-curve and freeze-thaw models' predictions of final
//! values from prefixes of learning curves, against the prefix's last value
//! ([`crate::predictions`]).

use anyhow::{Context, Result};

use crate::curves;
use crate::harness::median;
use crate::predictions;

#[derive(clap::Args)]
pub struct Args {
    /// Number of seeds (from `--first-seed`).
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Configurations trained in full that the model is fitted on (at least 5).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(5..=2000))]
    train: u64,
    /// Configurations whose final values are predicted from prefixes (at least 3).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(3..=2000))]
    test: u64,
    /// Prefix lengths in epochs, comma-separated, each from 1 to 50.
    #[arg(long, value_delimiter = ',', default_value = "2,5,10,25")]
    prefixes: Vec<usize>,
    /// Problems, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    problems: Vec<String>,
}

pub fn main(args: Args) -> Result<()> {
    let Args { seeds, first_seed, train, test, prefixes, problems: names } = args;
    if let Some(bad) = prefixes.iter().find(|p| !(1..=curves::EPOCHS).contains(p)) {
        anyhow::bail!("--prefixes must each be from 1 to {}, got {bad}", curves::EPOCHS);
    }
    let chosen: Vec<curves::CurveProblem> =
        curves::problems().into_iter().filter(|p| names.is_empty() || names.iter().any(|n| n == p.name)).collect();
    println!("{train} full curves, {test} predicted from their prefixes, {seeds} seeds: medians over seeds");
    println!(
        "{:<7} {:>6} {:>14} {:>11} {:>14} {:>11} {:>10}",
        "problem", "prefix", "decay density", "decay rank", "freeze density", "freeze rank", "last rank"
    );
    for p in &chosen {
        let runs = (first_seed..first_seed + seeds)
            .map(|seed| predictions::score(p, seed, train as usize, test as usize, &prefixes).with_context(|| format!("{} seed {seed}", p.name)))
            .collect::<Result<Vec<_>>>()?;
        for (k, prefix) in prefixes.iter().enumerate() {
            let of = |f: fn(&predictions::PrefixScore) -> f64| median(runs.iter().map(|r| f(&r[k])).collect());
            println!(
                "{:<7} {:>6} {:>14.3} {:>11.3} {:>14.3} {:>11.3} {:>10.3}",
                p.name,
                prefix,
                of(|s| s.log_density),
                of(|s| s.model_rank),
                of(|s| s.freeze_thaw_density),
                of(|s| s.freeze_thaw_rank),
                of(|s| s.last_rank)
            );
        }
    }
    Ok(())
}
