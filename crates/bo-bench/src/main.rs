//! `bo-bench`: measures bo's designers in process on the problems of the papers and the classic
//! ones — sample efficiency (`run`, `suite`, `multi`, `safe`, `curves`, `priors`), whether
//! predictions mean what they say (`calibration`, `regression`) and speed (`latency`, `large`,
//! `replay`, `fronts`, `load`). Numbers go to docs/journal/benchmarks.md with the command that produced
//! them (and replace their row in docs/benchmarks.md when current); tests never assert them. Each subcommand is a file of `commands/`.

mod calibration;
mod commands;
mod curves;
mod embedded;
mod fronts;
mod harness;
mod large;
mod latency;
mod load;
mod multi;
mod pool;
mod predictions;
mod priors;
mod problems;
mod recovery;
mod regression;
mod replay;
mod safety;
mod stopping_pool;

use anyhow::Result;
use clap::{Parser, Subcommand};

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

#[derive(Subcommand)]
enum Command {
    /// Runs a designer on a problem over several seeds; prints a table and writes JSON.
    Run(commands::run::Args),
    /// Runs a designer on every problem (or those named) and prints one row per problem: median
    /// simple regret after 25, 50 and the whole budget, and the median time of one step.
    Suite(commands::suite::Args),
    /// Lists the problems with their dimension and optimum.
    List,
    /// Whether predictions mean what they say: each designer fitted on a run's first trials
    /// predicts the run's next trials and random points; prints the coverage of its central 50 %
    /// and 90 % intervals and its mean log predictive density beside a constant baseline's.
    Calibration(commands::calibration::Args),
    /// Runs a designer on the multi-objective problems (studies of 2 or 3 minimised metrics) and
    /// prints one row per problem: median hypervolume regret after a quarter, half and the whole
    /// budget, the worst seed's at the end, and the median time of one step. `--list` prints each problem's reference point and true
    /// hypervolume (what the peers' script is given).
    Multi(commands::multi::Args),
    /// Runs a designer on the constrained problems (a minimised objective `f` and safety metrics
    /// `c1`, … safe at or below 0) and prints one row per problem: the median regret of the best
    /// safe trial after 25, 50 and the whole budget, the fraction of trials that were safe, and
    /// the median time of one step.
    Safe(commands::safe::Args),
    /// Runs a designer with each early-stopping rule on the learning-curve problems until a budget
    /// of epochs is spent; prints, per problem and rule, the median regret of the fully trained
    /// incumbent at a quarter, half and all of the budget, trials run, the share of them trained
    /// fully, and the rule's time per trial.
    Curves(commands::curves::Args),
    /// How well the decay-curve and freeze-thaw models predict a trial's final value from a
    /// prefix of its curve, against the prefix's last value: per problem and prefix, the mean log
    /// density of the observed final values and the rank correlation with the true ones, median
    /// over seeds.
    CurvePredictions(commands::predictions::Args),
    /// The median rule's settings on their own: random search over pools of curves (synthetic,
    /// or real ones exported by `bench/peers/real_curves.py`), each trial judged by the rule
    /// after each step; per pool and arm, the median regret of the fully trained incumbent at a
    /// quarter, half and all of the budget, trials, full trainings, stops and the share of them
    /// at the rule's first look.
    StoppingPool(commands::stopping_pool::Args),
    /// GP_BANDIT warm-started from a related prior study (transfer learning) against the same
    /// study cold: median regret of the best trial after 1, 5, 10, 20 and the whole budget.
    Priors(commands::priors::Args),
    /// Ma & Blaschko 2020, Fig. 4b: median log10 test MSE of Add-Tree against independent
    /// per-leaf GPs.
    Regression(commands::regression::Args),
    /// Seconds to choose the optimal trials of a front larger than the cap, 2 to 20 objectives,
    /// and the hypervolume the cut keeps against the exact cut where that can be computed.
    Fronts(commands::fronts::Args),
    /// Seconds per fit (cold and warm-started) and per suggest against n and D.
    Latency(commands::latency::Args),
    /// A served study's own trials (`bo-server export`) through its designer in process: fitted
    /// on all but the last completed trial, the last observed, then a suggestion, timed — what
    /// the server computes for a sequential suggest, on the study's real model state.
    Replay(commands::replay::Args),
    /// Large studies: a study preloaded with N uniformly random evaluations, then `steps`
    /// suggestions, each evaluated and added: the designer as a service runs it (beyond 2,048
    /// observations fitted on a subset of them) against the same designer fitted on every
    /// observation. Prints each one's regret before and after the steps and its seconds per step.
    Large(commands::large::Args),
    /// Puts a running service under load over HTTP: workers suggesting and completing trials;
    /// prints trials per second and request latency percentiles.
    Load(commands::load::Args),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    bo_core::linalg::set_threads(cli.linalg_threads);
    match cli.command {
        Command::Run(args) => commands::run::main(args),
        Command::Suite(args) => commands::suite::main(args),
        Command::List => {
            commands::list::main();
            Ok(())
        }
        Command::Calibration(args) => commands::calibration::main(args),
        Command::Multi(args) => commands::multi::main(args),
        Command::Safe(args) => commands::safe::main(args),
        Command::Curves(args) => commands::curves::main(args),
        Command::CurvePredictions(args) => commands::predictions::main(args),
        Command::StoppingPool(args) => commands::stopping_pool::main(args),
        Command::Priors(args) => commands::priors::main(args),
        Command::Regression(args) => commands::regression::main(args),
        Command::Fronts(args) => commands::fronts::main(args),
        Command::Latency(args) => commands::latency::main(args),
        Command::Replay(args) => commands::replay::main(args),
        Command::Large(args) => commands::large::main(args),
        Command::Load(args) => commands::load::main(args),
    }
}
