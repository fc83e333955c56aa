//! `bo-bench priors`: GP_BANDIT warm-started from a related prior study against the same study
//! cold — the median regret of the best trial after 1, 5, 10, 20 and the whole budget.

use std::path::PathBuf;

use anyhow::Result;

use super::{create_out_dir, write_json};
use crate::harness::median;
use crate::priors;

#[derive(clap::Args)]
pub struct Args {
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
}

pub fn main(Args { budget, prior_budget, seeds, out }: Args) -> Result<()> {
    create_out_dir(&out)?;
    let mut marks: Vec<usize> = [1, 5, 10, 20, budget].into_iter().filter(|m| *m <= budget).collect();
    marks.dedup();
    println!("GP_BANDIT, {seeds} seeds, budget {budget}, prior study of {prior_budget} trials: median regret of the best trial");
    print!("{:<22} {:<5}", "problem", "start");
    marks.iter().for_each(|m| print!(" {:>10}", format!("@{m}")));
    println!();
    for p in priors::problems() {
        let mut report = serde_json::Map::new();
        for arm in ["cold", "warm"] {
            let runs = (0..seeds)
                .map(|seed| {
                    let prior = (arm == "warm").then(|| priors::prior_study(&p, prior_budget, seed)).transpose()?;
                    priors::run(&p, prior, budget, seed)
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
            write_json(&dir.join(format!("{}.json", p.name)), &json)?;
        }
    }
    Ok(())
}
