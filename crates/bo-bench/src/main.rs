//! `bo-bench`: measures bo's designers in process on the problems of the papers and the classic
//! ones — sample efficiency (`run`) and speed (`latency`). Numbers go to docs/benchmarks.md with
//! the command that produced them; tests never assert them.

mod calibration;
mod curves;
mod embedded;
mod fronts;
mod harness;
mod large;
mod latency;
mod load;
mod multi;
mod problems;
mod recovery;
mod regression;
mod replay;
mod safety;
mod transfer;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use serde::Serialize;

use harness::median;
use latency::LatencyObjective;

/// The server's allocator (bo-server's `main.rs`), so what is timed in process is timed as the
/// server runs it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "bo-bench", about = "Benchmarks of bo's designers")]
struct Cli {
    /// Threads one model's linear algebra may use (the server's `--linalg-threads`).
    #[arg(long, global = true, default_value_t = 1)]
    linalg_threads: usize,
    #[command(subcommand)]
    command: Command,
}

/// What `run` and `suite` run: a designer, its settings, a budget and seeds.
#[derive(Args)]
struct Design {
    /// Algorithm name, as in a study's `algorithm`.
    #[arg(long, default_value = "GP_BANDIT")]
    algorithm: String,
    /// Evaluations per seed.
    #[arg(long, default_value_t = 100)]
    budget: usize,
    /// Number of seeds (0, 1, …).
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// The first seed (seeds run from here up).
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Suggestions asked for at each step, all evaluated before the next fit (a batch of
    /// parallel workers; `run` and `suite` on the listed problems).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    batch: u32,
    /// `algorithmConfig` as JSON.
    #[arg(long)]
    config: Option<String>,
    /// Also tell the designer the problem's true structure (its `groups` or `edges`):
    /// Kandasamy et al. 2015's "Add-*", Rolland et al. 2018's "Oracle".
    #[arg(long)]
    true_structure: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Runs a designer on a problem over several seeds; prints a table and writes JSON.
    Run {
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
    },
    /// Runs a designer on every problem (or those named) and prints one row per problem: median
    /// simple regret after 25, 50 and the whole budget, and the median time of one step.
    Suite {
        #[command(flatten)]
        design: Design,
        /// Problems, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        problems: Vec<String>,
        /// A directory to write each problem's JSON (as `run --out` would) into.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Lists the problems with their dimension and optimum.
    List,
    /// Whether predictions mean what they say: each designer fitted on a run's first trials
    /// predicts the run's next trials and random points; prints the coverage of its central 50 %
    /// and 90 % intervals and its mean log predictive density beside a constant baseline's.
    Calibration {
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
        /// Where to write the JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Runs a designer on the multi-objective problems (studies of 2 or 3 minimised metrics) and
    /// prints one row per problem: median hypervolume regret after 25, 50 and the whole budget,
    /// and the median time of one step. `--list` prints each problem's reference point and true
    /// hypervolume (what the peers' script is given).
    Multi {
        #[command(flatten)]
        design: Design,
        /// Problems, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        problems: Vec<String>,
        /// List the problems instead.
        #[arg(long)]
        list: bool,
        /// A directory to write each problem's JSON into (as the peers' script writes it).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Runs a designer on the constrained problems (a minimised objective `f` and safety metrics
    /// `c1`, … safe at or below 0) and prints one row per problem: the median regret of the best
    /// safe trial after 25, 50 and the whole budget, the fraction of trials that were safe, and
    /// the median time of one step.
    Safe {
        #[command(flatten)]
        design: Design,
        /// Problems, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        problems: Vec<String>,
        /// Every safety metric's desiredMinSafeTrialsFraction.
        #[arg(long, default_value_t = 0.0)]
        desired: f64,
        /// Tell the designer nothing of the constraints but that unsafe trials are infeasible
        /// (no safety metrics; what `algorithmConfig.infeasibleTrials` decides).
        #[arg(long)]
        infeasible: bool,
        /// A directory to write each problem's JSON into (as the peers' script writes it).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Runs a designer with each early-stopping rule on the learning-curve problems until a budget
    /// of epochs is spent; prints, per problem and rule, the median regret of the fully trained
    /// incumbent at a quarter, half and all of the budget, trials run, the share of them trained
    /// fully, and the rule's time per trial.
    Curves {
        /// Algorithm name, as in a study's `algorithm`.
        #[arg(long, default_value = "GP_BANDIT")]
        algorithm: String,
        /// `algorithmConfig` as JSON.
        #[arg(long)]
        config: Option<String>,
        /// Epochs per seed (a full training is 50).
        #[arg(long, default_value_t = 2000)]
        budget: usize,
        /// Number of seeds (from `--first-seed`, 0 unless given).
        #[arg(long, default_value_t = 10)]
        seeds: u64,
        /// Problems, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        problems: Vec<String>,
        /// Rules, comma-separated: none, median, decay, convex, asha, hyperband (asha with a bracket at each rung; hyperband2, hyperband3: the first 2 or 3); the successive-halving rules with the suffix -topk promote by TOP_K; asha-resume is ASHA with checkpoints (paused trials resumed when promoted).
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
    },
    /// GP_BANDIT warm-started from a related prior study (transfer learning) against the same
    /// study cold: median regret of the best trial after 1, 5, 10, 20 and the whole budget.
    Transfer {
        /// Evaluations of the new study.
        #[arg(long, default_value_t = 30)]
        budget: usize,
        /// Trials of the prior study (GP_BANDIT on the prior problem).
        #[arg(long, default_value_t = 40)]
        prior_budget: usize,
        /// Number of seeds (0, 1, …).
        #[arg(long, default_value_t = 10)]
        seeds: u64,
        /// A directory to write each problem's JSON into.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Seed 000 Fig. 4b: median log10 test MSE of Add-Tree against independent per-leaf GPs.
    Regression {
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
        out: Option<std::path::PathBuf>,
    },
    /// Seconds to choose the optimal trials of a front larger than the cap, 2 to 20 objectives,
    /// and the hypervolume the cut keeps against the exact cut where that can be computed.
    Fronts {
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
    },
    /// Seconds per fit (cold and warm-started) and per suggest against n and D.
    Latency {
        /// Algorithm name, as in a study's `algorithm`.
        #[arg(long, default_value = "GP_BANDIT")]
        algorithm: String,
        /// `algorithmConfig` as JSON.
        #[arg(long)]
        config: Option<String>,
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
    },
    /// A served study's own trials (`bo-server export`) through its designer in process: fitted
    /// on all but the last completed trial, the last observed, then a suggestion, timed — what
    /// the server computes for a sequential suggest, on the study's real model state.
    Replay {
        /// The export (JSON).
        export: PathBuf,
        /// Observe + suggest timed (the median is reported).
        #[arg(long, default_value_t = 41)]
        repeats: usize,
    },
    /// Large studies: a study preloaded with N uniformly random evaluations, then `steps`
    /// suggestions, each evaluated and added: the designer as a service runs it (beyond 2,048
    /// observations fitted on a subset of them) against the same designer fitted on every
    /// observation. Prints each one's regret before and after the steps and its seconds per step.
    Large {
        /// Problem name (see `list`).
        #[arg(long, default_value = "hartmann6")]
        problem: String,
        /// Algorithm name, as in a study's `algorithm`.
        #[arg(long, default_value = "GP_BANDIT")]
        algorithm: String,
        /// Preloaded evaluations, comma-separated.
        #[arg(long, default_value = "3000", value_delimiter = ',')]
        n: Vec<usize>,
        /// Suggestions after the preload.
        #[arg(long, default_value_t = 30)]
        steps: usize,
        /// Number of seeds (0, 1, …).
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// Also run the designer fitted on every observation (cubic in N).
        #[arg(long)]
        exact: bool,
        /// Where to write the JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Puts a running service under load over HTTP: workers suggesting and completing trials;
    /// prints trials per second and request latency percentiles.
    Load {
        /// Replica base URLs, comma-separated (requests go round robin).
        #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:8080")]
        url: Vec<String>,
        /// Concurrent workers.
        #[arg(long, default_value_t = 16)]
        workers: usize,
        /// Suggest-and-complete cycles per measurement.
        #[arg(long, default_value_t = 2000)]
        trials: usize,
        /// Study sizes (completed trials) to fill to before each measurement, comma-separated.
        #[arg(long, value_delimiter = ',')]
        prefill: Vec<usize>,
        /// The study's algorithm.
        #[arg(long, default_value = "RANDOM_SEARCH")]
        algorithm: String,
        /// An API key, when the service has keys.
        #[arg(long, env = "BO_API_KEY")]
        key: Option<String>,
        /// The project of the study.
        #[arg(long, default_value = "load")]
        project: String,
        /// Studies the workers spread over (worker w uses study w mod studies).
        #[arg(long, default_value_t = 1)]
        studies: usize,
        /// Where to write the JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

#[derive(Serialize)]
struct RunReport {
    problem: String,
    algorithm: String,
    config: serde_json::Value,
    budget: usize,
    optimum: f64,
    runs: Vec<harness::RunTrace>,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    bo_core::linalg::set_threads(cli.linalg_threads);
    match cli.command {
        Command::List => {
            println!("{:<18} {:>4} {:>14}", "problem", "dim", "optimum");
            for p in problems::all() {
                println!("{:<18} {:>4} {:>14.6}", p.name, p.dim, p.optimum);
            }
            for p in embedded::all() {
                println!("{:<18} {:>4.0e} {:>14.6}   (REMBO only)", p.name, p.dim as f64, p.optimum);
            }
        }
        Command::Suite { design: Design { algorithm, budget, seeds, first_seed, batch, config, true_structure }, problems: names, out } => {
            let config = parse_config(config)?;
            let chosen: Vec<Bench> = if names.is_empty() {
                problems::all().into_iter().map(Bench::Listed).collect()
            } else {
                names.iter().map(|n| bench_named(n)).collect::<Result<_>>()?
            };
            if let Some(dir) = &out {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let mid = (budget / 2).max(1);
            let early = (budget / 4).max(1);
            println!("{algorithm}, {seeds} seeds from {first_seed}, budget {budget}, batches of {batch}: median simple regret");
            println!(
                "{:<18} {:>10} {:>10} {:>10} {:>9} {:>9}",
                "problem",
                format!("@{early}"),
                format!("@{mid}"),
                format!("@{budget}"),
                "step ms",
                "max ms"
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
                println!(
                    "{:<18} {:>10.3e} {:>10.3e} {:>10.3e} {:>9.1} {:>9.1}",
                    p.name(),
                    at(early),
                    at(mid),
                    at(budget),
                    1e3 * median(times),
                    1e3 * max
                );
                if let Some(dir) = &out {
                    let report = RunReport {
                        problem: p.name().to_owned(),
                        algorithm: algorithm.clone(),
                        config,
                        budget,
                        optimum: p.optimum(),
                        runs,
                    };
                    let path = dir.join(format!("{}.json", p.name()));
                    std::fs::write(&path, serde_json::to_string(&report)?).with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
        Command::Multi { design: Design { algorithm, budget, seeds, first_seed, batch, config, .. }, problems: names, list, out } => {
            only_sequential(first_seed, batch)?;
            let all = multi::problems();
            let chosen: Vec<&multi::MoProblem> = if names.is_empty() {
                all.iter().collect()
            } else {
                names
                    .iter()
                    .map(|n| all.iter().find(|p| p.name == n).with_context(|| format!("no multi-objective problem {n:?}")))
                    .collect::<Result<_>>()?
            };
            if list {
                for p in chosen {
                    let reference: Vec<String> = p.reference.iter().map(f64::to_string).collect();
                    println!("{} {} {}", p.name, reference.join(","), (p.max_hv)());
                }
                return Ok(());
            }
            let config = parse_config(config)?;
            if let Some(dir) = &out {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let (early, mid) = ((budget / 4).max(1), (budget / 2).max(1));
            println!("{algorithm}, {seeds} seeds, budget {budget}: median hypervolume regret");
            println!(
                "{:<14} {:>10} {:>10} {:>10} {:>9}",
                "problem",
                format!("@{early}"),
                format!("@{mid}"),
                format!("@{budget}"),
                "step ms"
            );
            for p in chosen {
                let runs = (0..seeds).map(|seed| multi::run(p, &algorithm, config.clone(), budget, seed)).collect::<Result<Vec<_>>>()?;
                let at = |t: usize| median(runs.iter().map(|r| r.hv_regret[t - 1]).collect());
                let times: Vec<f64> = runs.iter().flat_map(|r| r.suggest_seconds.iter().copied()).collect();
                println!("{:<14} {:>10.3e} {:>10.3e} {:>10.3e} {:>9.1}", p.name, at(early), at(mid), at(budget), 1e3 * median(times));
                if let Some(dir) = &out {
                    let report = serde_json::json!({ "problem": p.name, "algorithm": algorithm, "budget": budget, "runs": runs });
                    let path = dir.join(format!("{}.json", p.name));
                    std::fs::write(&path, serde_json::to_string(&report)?).with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
        Command::Transfer { budget, prior_budget, seeds, out } => {
            if let Some(dir) = &out {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let mut marks: Vec<usize> = [1, 5, 10, 20, budget].into_iter().filter(|m| *m <= budget).collect();
            marks.dedup();
            println!("GP_BANDIT, {seeds} seeds, budget {budget}, prior study of {prior_budget} trials: median regret of the best trial");
            print!("{:<22} {:<5}", "problem", "start");
            marks.iter().for_each(|m| print!(" {:>10}", format!("@{m}")));
            println!();
            for p in transfer::problems() {
                let mut report = serde_json::Map::new();
                for arm in ["cold", "warm"] {
                    let runs = (0..seeds)
                        .map(|seed| {
                            let prior = (arm == "warm").then(|| transfer::prior_study(&p, prior_budget, seed)).transpose()?;
                            transfer::run(&p, prior, budget, seed)
                        })
                        .collect::<Result<Vec<_>>>()?;
                    print!("{:<22} {:<5}", p.name, arm);
                    for m in &marks {
                        print!(" {:>10.3e}", median(runs.iter().map(|r| r.regret[m - 1]).collect()));
                    }
                    println!();
                    report.insert(arm.into(), serde_json::to_value(&runs)?);
                }
                if let Some(dir) = &out {
                    let json = serde_json::json!({ "problem": p.name, "budget": budget, "priorBudget": prior_budget, "runs": report });
                    let path = dir.join(format!("{}.json", p.name));
                    std::fs::write(&path, serde_json::to_string(&json)?).with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
        Command::Curves { algorithm, config, budget, seeds, first_seed, workers, problems: names, rules, partials, out } => {
            let config = parse_config(config)?;
            let (partials, partials_suffix) = match partials.as_str() {
                "model" => (curves::Partials::Model, ""),
                "predicted" => (curves::Partials::Predicted, "-predicted"),
                "last" => (curves::Partials::Last, "-last"),
                "mean" => (curves::Partials::Mean, "-mean"),
                "half-spread" => (curves::Partials::HalfSpread, "-half-spread"),
                "cautious" => (curves::Partials::Cautious, "-cautious"),
                other => anyhow::bail!("--partials is model, predicted, mean, half-spread, last or cautious, got {other:?}"),
            };
            let suffix = if workers > 1 { format!("{partials_suffix}-w{workers}") } else { partials_suffix.to_owned() };
            let rules =
                rules.iter().map(|r| curves::Rule::parse(r).with_context(|| format!("no rule {r:?}"))).collect::<Result<Vec<_>>>()?;
            let chosen: Vec<curves::CurveProblem> =
                curves::problems().into_iter().filter(|p| names.is_empty() || names.iter().any(|n| n == p.name)).collect();
            if let Some(dir) = &out {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let marks = [budget / 4, budget / 2, budget];
            println!("{algorithm}, {seeds} seeds, {budget} epochs, {workers} worker(s): median regret of the fully trained incumbent");
            println!(
                "{:<6} {:<7} {:>9} {:>9} {:>9} {:>7} {:>6} {:>12}",
                "problem",
                "rule",
                format!("@{}", marks[0]),
                format!("@{}", marks[1]),
                format!("@{}", marks[2]),
                "trials",
                "full",
                "rule ms/trial"
            );
            for p in &chosen {
                let optimum = p.optimum();
                for &rule in &rules {
                    let setup = curves::Setup {
                        algorithm: algorithm.clone(),
                        config: config.clone(),
                        rule,
                        partials,
                        budget,
                        workers: workers.into(),
                    };
                    let runs = (first_seed..first_seed + seeds).map(|seed| curves::run(p, &setup, seed)).collect::<Result<Vec<_>>>()?;
                    let at =
                        |e: usize| median(runs.iter().map(|r| curves::at_epochs(r, e).map_or(f64::INFINITY, |v| optimum - v)).collect());
                    let trials: Vec<f64> = runs.iter().map(|r| r.spent.len() as f64).collect();
                    let full = runs.iter().map(|r| r.full as f64).sum::<f64>() / trials.iter().sum::<f64>().max(1.0);
                    let rule_ms = 1e3 * runs.iter().map(|r| r.rule_seconds).sum::<f64>() / trials.iter().sum::<f64>().max(1.0);
                    println!(
                        "{:<6} {:<7} {:>9.4} {:>9.4} {:>9.4} {:>7.0} {:>6.2} {:>12.1}",
                        p.name,
                        rule.name(),
                        at(marks[0]),
                        at(marks[1]),
                        at(marks[2]),
                        median(trials),
                        full,
                        rule_ms
                    );
                    if let Some(dir) = &out {
                        let report = serde_json::json!({ "problem": p.name, "optimizer": format!("bo {algorithm}"), "rule": format!("{}{suffix}", rule.name()),
                            "budget": budget, "optimum": optimum, "runs": runs });
                        let path = dir.join(format!("{}-bo-{}{suffix}.json", p.name, rule.name()));
                        std::fs::write(&path, serde_json::to_string(&report)?).with_context(|| format!("writing {}", path.display()))?;
                    }
                }
            }
        }
        Command::Safe {
            design: Design { algorithm, budget, seeds, first_seed, batch, config, .. },
            problems: names,
            desired,
            infeasible,
            out,
        } => {
            only_sequential(first_seed, batch)?;
            let constraints = if infeasible { safety::Constraints::Infeasible } else { safety::Constraints::Safety(desired) };
            let all = safety::problems();
            let chosen: Vec<&safety::SafeProblem> = if names.is_empty() {
                all.iter().collect()
            } else {
                names
                    .iter()
                    .map(|n| all.iter().find(|p| p.name == n).with_context(|| format!("no constrained problem {n:?}")))
                    .collect::<Result<_>>()?
            };
            let config = parse_config(config)?;
            if let Some(dir) = &out {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            let (early, mid) = ((budget / 4).max(1), (budget / 2).max(1));
            println!("{algorithm}, {seeds} seeds, budget {budget}, {constraints:?}: median regret of the best safe trial");
            println!(
                "{:<14} {:>10} {:>10} {:>10} {:>6} {:>9}",
                "problem",
                format!("@{early}"),
                format!("@{mid}"),
                format!("@{budget}"),
                "safe",
                "step ms"
            );
            for p in chosen {
                let runs = (0..seeds)
                    .map(|seed| safety::run(p, &algorithm, config.clone(), constraints, budget, seed))
                    .collect::<Result<Vec<_>>>()?;
                // Before a safe trial the regret is infinite (a median may still be finite).
                let at = |t: usize| median(runs.iter().map(|r| r.regret[t - 1].unwrap_or(f64::INFINITY)).collect());
                let safe = runs.iter().flat_map(|r| &r.safe).filter(|s| **s).count() as f64 / (seeds as usize * budget).max(1) as f64;
                let times: Vec<f64> = runs.iter().flat_map(|r| r.suggest_seconds.iter().copied()).collect();
                println!(
                    "{:<14} {:>10.3e} {:>10.3e} {:>10.3e} {:>6.2} {:>9.1}",
                    p.name,
                    at(early),
                    at(mid),
                    at(budget),
                    safe,
                    1e3 * median(times)
                );
                if let Some(dir) = &out {
                    let report = serde_json::json!({ "problem": p.name, "algorithm": algorithm, "desired": desired, "budget": budget, "runs": runs });
                    let path = dir.join(format!("{}.json", p.name));
                    std::fs::write(&path, serde_json::to_string(&report)?).with_context(|| format!("writing {}", path.display()))?;
                }
            }
        }
        Command::Run {
            problem,
            design: Design { algorithm, budget, seeds, first_seed, batch, config, true_structure },
            out,
            suggestions,
        } => {
            let p = bench_named(&problem)?;
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
            for at in [10, 25, 50, 100, 200, 300]
                .into_iter()
                .filter(|&t| t <= budget)
                .chain(std::iter::once(budget))
                .collect::<std::collections::BTreeSet<_>>()
            {
                let values: Vec<f64> = runs.iter().map(|r| r.regret[at - 1]).collect();
                println!("  after {at:>4}: {:.3e}", median(values));
            }
            let all_times: Vec<f64> = runs.iter().flat_map(|r| r.suggest_seconds.iter().copied()).collect();
            println!("  fit + suggest: median {:.1} ms", 1e3 * median(all_times));
            let report = RunReport { problem, algorithm, config, budget, optimum: p.optimum(), runs };
            if let Some(path) = out {
                std::fs::write(&path, serde_json::to_string(&report)?).with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Command::Calibration { designers, problems: names, sizes, seeds, held_out, random, out } => {
            let settings = calibration::Settings { designers, sizes, seeds, held_out, random };
            let mut rows = Vec::new();
            for name in &names {
                let found = calibration::calibrate(&problem_named(name)?, &settings)?;
                calibration::print(&found);
                rows.extend(found);
            }
            calibration::print_pooled(&calibration::pooled(&rows));
            if let Some(path) = out {
                std::fs::write(&path, serde_json::to_string_pretty(&rows)?).with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Command::Regression { problem, n, seeds, config, out } => {
            let config = match parse_config(config)? {
                serde_json::Value::Null => serde_json::json!({}),
                c => c,
            };
            let rows = regression::regression(&problem_named(&problem)?, &n, seeds, &config)?;
            if let Some(path) = out {
                std::fs::write(&path, serde_json::to_string_pretty(&rows)?).with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Command::Load { url, workers, trials, prefill, algorithm, key, project, studies, out } => {
            let rows = load::run(&load::LoadConfig { urls: url, workers, trials, prefill, algorithm, key, project, studies })?;
            if let Some(path) = out {
                std::fs::write(&path, serde_json::to_string_pretty(&rows)?).with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Command::Large { problem, algorithm, n, steps, seeds, exact, out } => {
            let problem = problems::by_name(&problem).with_context(|| format!("no problem {problem} (see `list`)"))?;
            let rows = large::compare(&problem, &algorithm, &n, steps, seeds, exact)?;
            if let Some(path) = out {
                std::fs::write(&path, serde_json::to_string_pretty(&rows)?).with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Command::Replay { export, repeats } => {
            let r = replay::replay(&export, repeats)?;
            println!(
                "{} completed trials: fit on all but the last {:.3} s; observe the last + suggest {:.4} s (median of {})",
                r.trials,
                r.fit_seconds,
                r.observe_suggest_seconds,
                repeats.max(1)
            );
        }
        Command::Fronts { objectives, trials, cap, exact_up_to, out } => {
            let rows = fronts::run(&objectives, &trials, cap, exact_up_to);
            if let Some(path) = out {
                std::fs::write(&path, serde_json::to_string_pretty(&rows)?).with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Command::Latency { algorithm, config, n, d, repeats, objective, out } => {
            let rows = latency::latency(&algorithm, parse_config(config)?, &n, &d, repeats.max(1), objective)?;
            if let Some(path) = out {
                std::fs::write(&path, serde_json::to_string_pretty(&rows)?).with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(())
}

/// A problem with a search space, or one only REMBO can run.
enum Bench {
    Listed(problems::Problem),
    Lazy(embedded::Lazy),
}

impl Bench {
    fn name(&self) -> &'static str {
        match self {
            Bench::Listed(p) => p.name,
            Bench::Lazy(p) => p.name,
        }
    }

    fn optimum(&self) -> f64 {
        match self {
            Bench::Listed(p) => p.optimum,
            Bench::Lazy(p) => p.optimum,
        }
    }

    /// `config`, with the problem's true structure added when `true_structure`.
    fn config(&self, config: &serde_json::Value, true_structure: bool) -> Result<serde_json::Value> {
        if !true_structure {
            return Ok(config.clone());
        }
        let structure = match self {
            Bench::Listed(p) => p.true_structure(),
            Bench::Lazy(_) => None,
        };
        let Some(serde_json::Value::Object(structure)) = structure else {
            anyhow::bail!("{} has no known structure to tell the designer", self.name());
        };
        let mut merged = match config {
            serde_json::Value::Object(map) => map.clone(),
            serde_json::Value::Null => serde_json::Map::new(),
            _ => anyhow::bail!("--config must be a JSON object"),
        };
        merged.extend(structure);
        Ok(serde_json::Value::Object(merged))
    }

    fn run(&self, algorithm: &str, config: &serde_json::Value, budget: usize, batch: usize, seed: u64) -> Result<harness::RunTrace> {
        match self {
            Bench::Listed(p) => harness::run(p, algorithm, config.clone(), budget, batch, seed),
            Bench::Lazy(p) if batch == 1 => embedded::run(p, algorithm, config, budget, seed),
            Bench::Lazy(p) => anyhow::bail!("{} is run one suggestion at a time: --batch applies to the listed problems", p.name),
        }
    }
}

/// `--first-seed` and `--batch` are `run`'s and `suite`'s: elsewhere they are refused, not ignored.
fn only_sequential(first_seed: u64, batch: u32) -> Result<()> {
    anyhow::ensure!(first_seed == 0 && batch == 1, "--first-seed and --batch apply to run and suite only");
    Ok(())
}

fn bench_named(name: &str) -> Result<Bench> {
    match embedded::by_name(name) {
        Some(p) => Ok(Bench::Lazy(p)),
        None => problem_named(name).map(Bench::Listed),
    }
}

fn problem_named(name: &str) -> Result<problems::Problem> {
    problems::by_name(name).with_context(|| {
        let names: Vec<&str> = problems::all().iter().map(|p| p.name).collect();
        format!("unknown problem {name:?}; problems: {}", names.join(", "))
    })
}

fn parse_config(config: Option<String>) -> Result<serde_json::Value> {
    match config {
        Some(text) => serde_json::from_str(&text).context("--config must be JSON"),
        None => Ok(serde_json::Value::Null),
    }
}
