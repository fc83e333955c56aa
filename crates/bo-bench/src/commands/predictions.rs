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
    /// Real curves instead of the synthetic problems: files written by
    /// `bench/peers/real_curves.py export`, comma-separated. Each seed draws its full and its
    /// predicted curves from the file's; prefixes as long as a curve are left out.
    #[arg(long, value_delimiter = ',')]
    real: Vec<std::path::PathBuf>,
}

pub fn main(args: Args) -> Result<()> {
    let Args { seeds, first_seed, train, test, prefixes, problems: names, real } = args;
    if let Some(bad) = prefixes.iter().find(|p| !(1..=curves::EPOCHS).contains(p)) {
        anyhow::bail!("--prefixes must each be from 1 to {}, got {bad}", curves::EPOCHS);
    }
    let (train, test) = (train as usize, test as usize);
    println!("{train} full curves, {test} predicted from their prefixes, {seeds} seeds: medians over seeds");
    println!(
        "{:<12} {:>6} {:>14} {:>11} {:>14} {:>11} {:>10}",
        "problem", "prefix", "decay density", "decay rank", "freeze density", "freeze rank", "last rank"
    );
    let seeds = first_seed..first_seed + seeds;
    if !real.is_empty() {
        for path in &real {
            let curves = predictions::RealCurves::read(path)?;
            let shorter: Vec<usize> = prefixes.iter().copied().filter(|p| *p < curves.steps).collect();
            let runs = seeds
                .clone()
                .map(|seed| {
                    predictions::score_real(&curves, seed, train, test, &shorter).with_context(|| format!("{} seed {seed}", curves.problem))
                })
                .collect::<Result<Vec<_>>>()?;
            print_rows(&curves.problem, &shorter, &runs);
        }
        return Ok(());
    }
    let chosen: Vec<curves::CurveProblem> =
        curves::problems().into_iter().filter(|p| names.is_empty() || names.iter().any(|n| n == p.name)).collect();
    for p in &chosen {
        let runs = seeds
            .clone()
            .map(|seed| predictions::score(p, seed, train, test, &prefixes).with_context(|| format!("{} seed {seed}", p.name)))
            .collect::<Result<Vec<_>>>()?;
        print_rows(p.name, &prefixes, &runs);
    }
    Ok(())
}

/// A row per prefix: the medians over seeds of `runs`' scores.
fn print_rows(problem: &str, prefixes: &[usize], runs: &[Vec<predictions::PrefixScore>]) {
    for (k, prefix) in prefixes.iter().enumerate() {
        let of = |f: fn(&predictions::PrefixScore) -> f64| median(runs.iter().map(|r| f(&r[k])).collect());
        println!(
            "{:<12} {:>6} {:>14.3} {:>11.3} {:>14.3} {:>11.3} {:>10.3}",
            problem,
            prefix,
            of(|s| s.log_density),
            of(|s| s.model_rank),
            of(|s| s.freeze_thaw_density),
            of(|s| s.freeze_thaw_rank),
            of(|s| s.last_rank)
        );
    }
}
