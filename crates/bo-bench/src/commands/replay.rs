//! `bo-bench replay`: a served study's own trials (`bo-server export`) through its designer in
//! process, the last observation and a suggestion timed (see `crate::replay`).

use std::path::PathBuf;

use anyhow::Result;

use crate::replay;

#[derive(clap::Args)]
pub struct Args {
    /// The export (JSON).
    export: PathBuf,
    /// Observe + suggest timed (the median is reported).
    #[arg(long, default_value_t = 41)]
    repeats: usize,
}

pub fn main(Args { export, repeats }: Args) -> Result<()> {
    let r = replay::replay(&export, repeats)?;
    println!(
        "{} completed trials: fit on all but the last {:.3} s; observe the last + suggest {:.4} s (median of {})",
        r.trials,
        r.fit_seconds,
        r.observe_suggest_seconds,
        repeats.max(1)
    );
    Ok(())
}
