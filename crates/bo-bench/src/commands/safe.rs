//! `bo-bench safe`: one designer on the constrained problems (a minimised objective `f` and
//! safety metrics `c1`, … safe at or below 0), one row per problem — the median regret of the
//! best safe trial at a quarter, half and all of the budget, the fraction of trials that were
//! safe, and the time of one step.

use std::path::PathBuf;

use anyhow::Result;

use super::{Design, Sweep, chosen, create_out_dir, parse_config, write_json};
use crate::harness::median;
use crate::safety::{self, Constraints, SafeProblem};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sweep: Sweep,
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
}

pub fn main(args: Args) -> Result<()> {
    args.sweep.design.only_sequential()?;
    let Args { sweep: Sweep { design: Design { algorithm, budget, seeds, config, .. }, problems: names }, desired, infeasible, out } = args;
    let constraints = if infeasible { Constraints::Infeasible } else { Constraints::Safety(desired) };
    let all = safety::problems();
    let chosen = chosen(&all, &names, |p: &SafeProblem| p.name, "constrained")?;
    let config = parse_config(config)?;
    create_out_dir(&out)?;
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
        let runs =
            (0..seeds).map(|seed| safety::run(p, &algorithm, config.clone(), constraints, budget, seed)).collect::<Result<Vec<_>>>()?;
        // Before a safe trial the regret is infinite (a median may still be finite).
        let at = |t: usize| median(runs.iter().map(|r| r.regret[t - 1].unwrap_or(f64::INFINITY)).collect());
        let safe = runs.iter().flat_map(|r| &r.safe).filter(|s| **s).count() as f64 / (seeds as usize * budget).max(1) as f64;
        let times: Vec<f64> = runs.iter().flat_map(|r| r.suggest_seconds.iter().copied()).collect();
        println!("{:<14} {:>10.3e} {:>10.3e} {:>10.3e} {:>6.2} {:>9.1}", p.name, at(early), at(mid), at(budget), safe, 1e3 * median(times));
        if let Some(dir) = &out {
            let report =
                serde_json::json!({ "problem": p.name, "algorithm": algorithm, "desired": desired, "budget": budget, "runs": runs });
            write_json(&dir.join(format!("{}.json", p.name)), &report)?;
        }
    }
    Ok(())
}
