//! The command line: one file per subcommand, holding its flags and what it prints and writes.
//! This module holds what several of them share — the flags of a designer run, a problem found
//! by name, `--config` parsed, a report written. What is measured lives in the crate's other
//! modules (`harness`, `curves`, `multi`, …); a command only chooses, runs and reports.

pub mod calibration;
pub mod curves;
pub mod fronts;
pub mod large;
pub mod latency;
pub mod list;
pub mod load;
pub mod multi;
pub mod predictions;
pub mod priors;
pub mod regression;
pub mod replay;
pub mod run;
pub mod safe;
pub mod stopping_pool;
pub mod suite;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;

use crate::{embedded, harness, problems};

/// What `run`, `suite`, `multi` and `safe` run: a designer, its settings, a budget and seeds.
#[derive(Args)]
pub struct Design {
    /// Algorithm name, as in a study's `algorithm`.
    #[arg(long, default_value = "GP_BANDIT")]
    pub algorithm: String,
    /// Evaluations per seed.
    #[arg(long, default_value_t = 100)]
    pub budget: usize,
    /// Number of seeds (0, 1, …).
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// The first seed (seeds run from here up).
    #[arg(long, default_value_t = 0)]
    pub first_seed: u64,
    /// Suggestions asked for at each step, all evaluated before the next fit (a batch of
    /// parallel workers; `run` and `suite` on the listed problems).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub batch: u32,
    /// `algorithmConfig` as JSON.
    #[arg(long)]
    pub config: Option<String>,
    /// Also tell the designer the problem's true structure (its `groups` or `edges`):
    /// Kandasamy et al. 2015's "Add-*", Rolland et al. 2018's "Oracle".
    #[arg(long)]
    pub true_structure: bool,
}

/// A designer run over problems (`suite`, `multi`, `safe`): its [`Design`] and the problems.
#[derive(Args)]
pub struct Sweep {
    #[command(flatten)]
    pub design: Design,
    /// Problems, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub problems: Vec<String>,
}

/// The designer alone (`curves`, `latency`): its name and settings.
#[derive(Args)]
pub struct Algorithm {
    /// Algorithm name, as in a study's `algorithm`.
    #[arg(long, default_value = "GP_BANDIT")]
    pub algorithm: String,
    /// `algorithmConfig` as JSON.
    #[arg(long)]
    pub config: Option<String>,
}

impl Design {
    /// `--first-seed` and `--batch` are `run`'s and `suite`'s: elsewhere they are refused, not
    /// ignored.
    pub fn only_sequential(&self) -> Result<()> {
        anyhow::ensure!(self.first_seed == 0 && self.batch == 1, "--first-seed and --batch apply to run and suite only");
        Ok(())
    }
}

/// What `run` and `suite` write for one problem.
#[derive(Serialize)]
pub struct RunReport {
    pub problem: String,
    pub algorithm: String,
    pub config: serde_json::Value,
    pub budget: usize,
    pub optimum: f64,
    pub runs: Vec<harness::RunTrace>,
}

/// A problem with a search space, or one only REMBO can run.
pub enum Bench {
    Listed(problems::Problem),
    Lazy(embedded::Lazy),
}

impl Bench {
    /// The listed or REMBO-only problem of this name.
    pub fn named(name: &str) -> Result<Bench> {
        match embedded::by_name(name) {
            Some(p) => Ok(Bench::Lazy(p)),
            None => problem_named(name).map(Bench::Listed),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Bench::Listed(p) => p.name,
            Bench::Lazy(p) => p.name,
        }
    }

    pub fn optimum(&self) -> f64 {
        match self {
            Bench::Listed(p) => p.optimum,
            Bench::Lazy(p) => p.optimum,
        }
    }

    /// `config`, with the problem's true structure added when `true_structure`.
    pub fn config(&self, config: &serde_json::Value, true_structure: bool) -> Result<serde_json::Value> {
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

    pub fn run(&self, algorithm: &str, config: &serde_json::Value, budget: usize, batch: usize, seed: u64) -> Result<harness::RunTrace> {
        match self {
            Bench::Listed(p) => harness::run(p, algorithm, config.clone(), budget, batch, seed),
            Bench::Lazy(p) if batch == 1 => embedded::run(p, algorithm, config, budget, seed),
            Bench::Lazy(p) => anyhow::bail!("{} is run one suggestion at a time: --batch applies to the listed problems", p.name),
        }
    }
}

/// The listed problem of this name, or an error listing them.
pub fn problem_named(name: &str) -> Result<problems::Problem> {
    problems::by_name(name).with_context(|| {
        let names: Vec<&str> = problems::all().iter().map(|p| p.name).collect();
        format!("unknown problem {name:?}; problems: {}", names.join(", "))
    })
}

/// `--config` as JSON (null when not given).
pub fn parse_config(config: Option<String>) -> Result<serde_json::Value> {
    match config {
        Some(text) => serde_json::from_str(&text).context("--config must be JSON"),
        None => Ok(serde_json::Value::Null),
    }
}

/// The problems of `all` that `names` names (all of them when it names none), or an error naming
/// the first unknown name as a `what` problem.
pub fn chosen<'a, P>(all: &'a [P], names: &[String], name: impl Fn(&P) -> &str, what: &str) -> Result<Vec<&'a P>> {
    if names.is_empty() {
        return Ok(all.iter().collect());
    }
    names.iter().map(|n| all.iter().find(|p| name(p) == n.as_str()).with_context(|| format!("no {what} problem {n:?}"))).collect()
}

/// The median over `runs` of the distinct cells of the discrete parameters each evaluated
/// (rounded down); `None` in a space without discrete parameters.
pub fn median_cells(runs: &[harness::RunTrace]) -> Option<usize> {
    let cells: Vec<f64> = runs.iter().filter_map(|r| r.cells).map(|c| c as f64).collect();
    (!cells.is_empty()).then(|| harness::median(cells) as usize)
}

/// Creates `--out`'s directory, when one is given, before anything is run.
pub fn create_out_dir(out: &Option<PathBuf>) -> Result<()> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(())
}

/// Writes `value` as one line of JSON (a run's traces, which the report scripts read).
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    std::fs::write(path, serde_json::to_string(value)?).with_context(|| format!("writing {}", path.display()))
}

/// Writes `value` as indented JSON (a table of rows, read by people too).
pub fn write_json_pretty(path: &Path, value: &impl Serialize) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(value)?).with_context(|| format!("writing {}", path.display()))
}
