//! `bo-bench stopping-pool`: the median rule's settings under random search over pools of
//! curves, synthetic or real ([`crate::stopping_pool`]).

use anyhow::{Context, Result};

use crate::curves;
use crate::harness::median;
use crate::pool::Pool;
use crate::predictions::RealCurves;
use crate::stopping_pool::{Arm, Run, run};

#[derive(clap::Args)]
pub struct Args {
    /// Arms, comma-separated: `none`, or `median` with any of `:first=K` (minStepCount K),
    /// `:first=F%` (F percent of the curve), `:min=N` (minCompletedTrials), `:every=K`
    /// (intervalSteps), `:of=value` (medianOf VALUE_AT_POSITION, Optuna's).
    #[arg(long, value_delimiter = ',', default_value = "none,median")]
    arms: Vec<String>,
    /// The budget, in full trainings' steps.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    trainings: u64,
    /// Number of seeds (from `--first-seed`).
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Synthetic problems, comma-separated (default: all, unless `--real` is given).
    #[arg(long, value_delimiter = ',')]
    problems: Vec<String>,
    /// Random configurations in a synthetic pool.
    #[arg(long, default_value_t = 150, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pool: u64,
    /// Real curves: files written by `bench/peers/real_curves.py export`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    real: Vec<std::path::PathBuf>,
    /// Writes every run as JSON here (for Mann–Whitney across arms).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

pub fn main(args: Args) -> Result<()> {
    let arms = args.arms.iter().map(|a| Arm::parse(a)).collect::<Result<Vec<_>>>()?;
    let mut pools = Vec::new();
    for path in &args.real {
        pools.push(Pool::real(RealCurves::read(path)?));
    }
    if args.real.is_empty() || !args.problems.is_empty() {
        for p in curves::problems().into_iter().filter(|p| args.problems.is_empty() || args.problems.iter().any(|n| n == p.name)) {
            pools.push(Pool::synthetic(&p, args.pool as usize, 1_000_003));
        }
    }
    println!("random search over each pool, {} full trainings' steps, {} seeds: medians over seeds", args.trainings, args.seeds);
    println!(
        "{:<12} {:<26} {:>9} {:>9} {:>9} {:>7} {:>6} {:>8} {:>12}",
        "pool", "arm", "regret¼", "regret½", "regret", "trials", "full", "stopped", "at 1st look"
    );
    let mut json = Vec::new();
    for pool in &pools {
        for arm in &arms {
            let runs: Vec<Run> =
                (args.first_seed..args.first_seed + args.seeds).map(|seed| run(pool, arm, args.trainings as usize, seed)).collect();
            let at = |k: usize| median(runs.iter().map(|r| r.regret[k].unwrap_or(f64::INFINITY)).collect());
            let of = |f: fn(&Run) -> usize| median(runs.iter().map(|r| f(r) as f64).collect());
            let (stopped, first): (usize, usize) = runs.iter().fold((0, 0), |(s, f), r| (s + r.stopped, f + r.stopped_first));
            let share = if stopped == 0 { "—".to_owned() } else { format!("{:.0} %", 100.0 * first as f64 / stopped as f64) };
            println!(
                "{:<12} {:<26} {:>9.4} {:>9.4} {:>9.4} {:>7} {:>6} {:>8} {:>12}",
                pool.name,
                arm.name,
                at(0),
                at(1),
                at(2),
                of(|r| r.trials),
                of(|r| r.full),
                of(|r| r.stopped),
                share
            );
            json.push(serde_json::json!({
                "pool": pool.name, "arm": arm.name,
                "runs": runs.iter().map(|r| serde_json::json!({"regret": r.regret, "trials": r.trials, "full": r.full, "stopped": r.stopped, "stopped_first": r.stopped_first})).collect::<Vec<_>>(),
            }));
        }
    }
    if let Some(out) = &args.out {
        std::fs::write(out, serde_json::to_string(&json)?).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}
