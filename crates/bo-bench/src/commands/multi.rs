//! `bo-bench multi`: one designer on the multi-objective problems, one row per problem — the
//! median hypervolume regret at a quarter, half and all of the budget, the worst seed's at the end
//! (a median hides a run that never finds part of the front), and the time of one step.
//! `--list` prints each problem's reference point and true hypervolume, what the peers' script
//! is given.

use std::path::PathBuf;

use anyhow::Result;

use super::{Design, Sweep, chosen, create_out_dir, parse_config, write_json};
use crate::harness::median;
use crate::multi::{self, MoProblem};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    sweep: Sweep,
    /// List the problems instead.
    #[arg(long)]
    list: bool,
    /// A directory to write each problem's JSON into (as the peers' script writes it).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(args: Args) -> Result<()> {
    args.sweep.design.only_sequential()?;
    let Args { sweep: Sweep { design: Design { algorithm, budget, seeds, config, .. }, problems: names }, list, out } = args;
    let all = multi::problems();
    let chosen = chosen(&all, &names, |p: &MoProblem| p.name, "multi-objective")?;
    if list {
        for p in chosen {
            let reference: Vec<String> = p.reference.iter().map(f64::to_string).collect();
            println!("{} {} {}", p.name, reference.join(","), (p.max_hv)());
        }
        return Ok(());
    }
    let config = parse_config(config)?;
    create_out_dir(&out)?;
    let (early, mid) = ((budget / 4).max(1), (budget / 2).max(1));
    println!("{algorithm}, {seeds} seeds, budget {budget}: median hypervolume regret, and the worst seed's at the end");
    println!(
        "{:<14} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "problem",
        format!("@{early}"),
        format!("@{mid}"),
        format!("@{budget}"),
        "worst",
        "step ms"
    );
    for p in chosen {
        let runs = (0..seeds).map(|seed| multi::run(p, &algorithm, config.clone(), budget, seed)).collect::<Result<Vec<_>>>()?;
        let at = |t: usize| median(runs.iter().map(|r| r.hv_regret[t - 1]).collect());
        let times: Vec<f64> = runs.iter().flat_map(|r| r.suggest_seconds.iter().copied()).collect();
        let worst = runs.iter().map(|r| r.hv_regret[budget - 1]).fold(0.0, f64::max);
        println!(
            "{:<14} {:>10.3e} {:>10.3e} {:>10.3e} {:>10.3e} {:>9.1}",
            p.name,
            at(early),
            at(mid),
            at(budget),
            worst,
            1e3 * median(times)
        );
        if let Some(dir) = &out {
            let report = serde_json::json!({ "problem": p.name, "algorithm": algorithm, "budget": budget, "runs": runs });
            write_json(&dir.join(format!("{}.json", p.name)), &report)?;
        }
    }
    Ok(())
}
