//! `bo-bench curves`: one designer with each early-stopping rule on the learning-curve problems
//! (the synthetic family, or pools of real curves with `--pools`) until a budget of epochs is
//! spent — per problem and rule, the median regret of the fully trained incumbent at a quarter,
//! half and all of the budget, trials run, the share trained fully, and the rule's time per
//! trial.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{Algorithm, create_out_dir, parse_config, write_json};
use crate::curves::{self, CurveSource, Partials, Rule, Setup};
use crate::harness::median;
use crate::pool::Pool;
use crate::predictions::RealCurves;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    algorithm: Algorithm,
    /// Epochs per seed (a full training of the synthetic family is 50).
    #[arg(long, default_value_t = 2000)]
    budget: usize,
    /// The budget in full trainings' steps instead, for each problem its own curves' length
    /// (`--budget` is then ignored).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    trainings: Option<u64>,
    /// Pools of real curves, files written by `bench/peers/real_curves.py export`,
    /// comma-separated: each suggestion trains the blend of the 3 pooled curves nearest to it. With
    /// pools, the synthetic problems run only when `--problems` names them.
    #[arg(long, value_delimiter = ',')]
    pools: Vec<PathBuf>,
    /// Number of seeds (from `--first-seed`, 0 unless given).
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    /// Synthetic problems, comma-separated (default: all, unless `--pools` is given).
    #[arg(long, value_delimiter = ',')]
    problems: Vec<String>,
    /// Rules, comma-separated: none, median, median-value (medianOf VALUE_AT_POSITION), decay, convex, asha, hyperband (asha with a bracket at each rung; hyperband2, hyperband3: the first 2 or 3); the successive-halving rules with the suffix -topk promote by TOP_K; asha-resume is ASHA with checkpoints (paused trials resumed when promoted). A successive-halving rule may end in :min=K (minStepCount, 1 otherwise) and :eta=E (reductionFactor, 3 otherwise), e.g. asha:eta=2.
    #[arg(long, value_delimiter = ',', default_value = "none,median,decay,convex,asha")]
    rules: Vec<String>,
    /// The first seed: seeds run from it on (a validation half after a choosing half).
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Trials trained at once: asynchronous workers, each given a new trial as soon as its
    /// last one ends (the others pending).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    workers: u16,
    /// What the designer learns from a stopped trial: `model` (as the service does:
    /// `predicted`, but `last` under successive halving), `predicted` (its predicted final
    /// value with the prediction's variance as noise of its own, whatever the rule), `mean`
    /// (the predicted value as if measured), `half-spread` (`predicted` with half the
    /// standard deviation), `last` (its last value) or `cautious` (the prediction less one
    /// standard deviation).
    #[arg(long, default_value = "model")]
    partials: String,
    /// A directory to write each problem and rule's JSON into (as the peers' script writes it).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// `--partials` and the suffix it gives the JSON's rule name.
fn partials_named(name: &str) -> Result<(Partials, &'static str)> {
    Ok(match name {
        "model" => (Partials::Model, ""),
        "predicted" => (Partials::Predicted, "-predicted"),
        "last" => (Partials::Last, "-last"),
        "mean" => (Partials::Mean, "-mean"),
        "half-spread" => (Partials::HalfSpread, "-half-spread"),
        "cautious" => (Partials::Cautious, "-cautious"),
        other => anyhow::bail!("--partials is model, predicted, mean, half-spread, last or cautious, got {other:?}"),
    })
}

pub fn main(args: Args) -> Result<()> {
    let Args {
        algorithm: Algorithm { algorithm, config },
        budget,
        trainings,
        pools,
        seeds,
        first_seed,
        workers,
        problems: names,
        rules,
        partials,
        out,
    } = args;
    let config = parse_config(config)?;
    let (partials, partials_suffix) = partials_named(&partials)?;
    let suffix = if workers > 1 { format!("{partials_suffix}-w{workers}") } else { partials_suffix.to_owned() };
    let rules = rules.iter().map(|r| Rule::parse(r).with_context(|| format!("no rule {r:?}"))).collect::<Result<Vec<_>>>()?;
    let pools = pools.iter().map(|path| RealCurves::read(path).map(Pool::real)).collect::<Result<Vec<_>>>()?;
    let chosen: Vec<curves::CurveProblem> = if pools.is_empty() || !names.is_empty() {
        curves::problems().into_iter().filter(|p| names.is_empty() || names.iter().any(|n| n == p.name)).collect()
    } else {
        Vec::new()
    };
    create_out_dir(&out)?;
    let run = Run { algorithm, config, partials, workers: workers.into(), seeds, first_seed, trainings, suffix, out };
    let size = |steps: usize| trainings.map_or(budget, |t| t as usize * steps);
    match trainings {
        Some(t) => println!("{}, {seeds} seeds, {t} full trainings' steps, {workers} worker(s)", run.algorithm),
        None => println!("{}, {seeds} seeds, {budget} epochs, {workers} worker(s)", run.algorithm),
    }
    println!("median regret of the fully trained incumbent at a quarter, half and all of the budget");
    println!("{:<14} {:<12} {:>9} {:>9} {:>9} {:>7} {:>6} {:>12}", "problem", "rule", "@¼", "@½", "@1", "trials", "full", "rule ms/trial");
    for p in &chosen {
        run.report(p, &rules, size(p.steps()))?;
    }
    for p in &pools {
        run.report(p, &rules, size(p.steps()))?;
    }
    Ok(())
}

/// What every problem's runs share.
struct Run {
    algorithm: String,
    config: serde_json::Value,
    partials: Partials,
    workers: usize,
    seeds: u64,
    first_seed: u64,
    trainings: Option<u64>,
    suffix: String,
    out: Option<PathBuf>,
}

impl Run {
    /// Runs each rule on `problem` over the seeds with `budget` epochs, prints a row and writes
    /// the JSON.
    fn report<C: CurveSource>(&self, problem: &C, rules: &[Rule], budget: usize) -> Result<()> {
        let Run { algorithm, config, partials, workers, seeds, first_seed, suffix, out, .. } = self;
        let optimum = problem.optimum();
        let marks = [budget / 4, budget / 2, budget];
        for &rule in rules {
            let setup =
                Setup { algorithm: algorithm.clone(), config: config.clone(), rule, partials: *partials, budget, workers: *workers };
            let runs = (*first_seed..first_seed + seeds).map(|seed| curves::run(problem, &setup, seed)).collect::<Result<Vec<_>>>()?;
            let at = |e: usize| median(runs.iter().map(|r| curves::at_epochs(r, e).map_or(f64::INFINITY, |v| optimum - v)).collect());
            let trials: Vec<f64> = runs.iter().map(|r| r.spent.len() as f64).collect();
            let full = runs.iter().map(|r| r.full as f64).sum::<f64>() / trials.iter().sum::<f64>().max(1.0);
            let rule_ms = 1e3 * runs.iter().map(|r| r.rule_seconds).sum::<f64>() / trials.iter().sum::<f64>().max(1.0);
            println!(
                "{:<14} {:<12} {:>9.4} {:>9.4} {:>9.4} {:>7.0} {:>6.2} {:>12.1}",
                problem.name(),
                rule.name(),
                at(marks[0]),
                at(marks[1]),
                at(marks[2]),
                median(trials),
                full,
                rule_ms
            );
            if let Some(dir) = out {
                let report = serde_json::json!({ "problem": problem.name(), "optimizer": format!("bo {algorithm}"),
                    "rule": format!("{}{suffix}", rule.name()), "budget": budget, "trainings": self.trainings,
                    "steps": problem.steps(), "optimum": optimum, "runs": runs });
                write_json(&dir.join(format!("{}-bo-{}{suffix}.json", problem.name(), rule.name())), &report)?;
            }
        }
        Ok(())
    }
}
