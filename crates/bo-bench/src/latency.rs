//! `bo-bench latency`: how long a designer takes to fit, refit, condition, observe and suggest
//! on random observations of a smooth function, by study size and dimension.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;
use bo_core::designer::designer_for;
use bo_core::{Assignment, Observation, Outcome, ParamValue};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use crate::harness::{self, median};
use crate::problems;

#[derive(Serialize)]
pub struct LatencyRow {
    n: usize,
    d: usize,
    cold_fit_seconds: f64,
    warm_fit_seconds: f64,
    condition_seconds: f64,
    observe_seconds: f64,
    suggest_seconds: f64,
}

/// What `bo-bench latency`'s random observations measure.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LatencyObjective {
    /// `Σᵢ sin((i + 1) xᵢ)` on the unit cube: smooth, easy for the acquisition's local search.
    Sines,
    /// Styblinski–Tang on [−5, 5]^D (the unit cube stretched), minimised: what
    /// `bench/http_latency.py` measures over HTTP, so the two compare like for like.
    StyblinskiTang,
}

impl LatencyObjective {
    fn value(self, x: &[f64]) -> f64 {
        match self {
            LatencyObjective::Sines => x.iter().enumerate().map(|(i, v)| ((i + 1) as f64 * v).sin()).sum(),
            LatencyObjective::StyblinskiTang => {
                x.iter().map(|v| 10.0 * v - 5.0).map(|u| u.powi(4) - 16.0 * u * u + 5.0 * u).sum::<f64>() / 2.0
            }
        }
    }
}

/// Times `algorithm` on `n` random observations of a smooth function in `d` dimensions: a cold fit
/// (every start), a refit warm-started from it (θ optimised from the warm θ alone), a fit on one
/// more observation (which keeps θ and only conditions: what most refits are), the warm model
/// observing that observation (a rank-one extension of its factor: what a server's suggest after
/// a completion does before its refit lands), and a suggestion.
pub fn latency(
    algorithm: &str,
    config: serde_json::Value,
    ns: &[usize],
    ds: &[usize],
    repeats: usize,
    objective: LatencyObjective,
) -> Result<Vec<LatencyRow>> {
    println!(
        "{:>6} {:>4} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "n", "D", "cold fit s", "warm fit s", "condition s", "observe s", "suggest s"
    );
    let mut rows = Vec::new();
    for &d in ds {
        let spec = harness::spec_with_space(problems::unit_box(d), algorithm, config.clone());
        let designer = designer_for(&spec)?;
        let study = bo_core::Problem { spec, seed: 0, priors: Vec::new() };
        for &n in ns {
            let mut rng = StdRng::seed_from_u64(n as u64 * 31 + d as u64);
            let history: Vec<Observation> = (0..=n)
                .map(|_| {
                    let x: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
                    let y = objective.value(&x);
                    let assignment =
                        Assignment::new(x.iter().enumerate().map(|(i, v)| (format!("x{i}").into(), ParamValue::Float(*v))).collect());
                    Observation { objective_sd: None, assignment, outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), y)])) }
                })
                .collect();
            let start = Instant::now();
            let cold = designer.fit(&study, &history[..n], None, &mut rng)?;
            let cold_fit = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let warm = designer.fit(&study, &history[..n], Some(&cold.state), &mut rng)?;
            let warm_fit = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let conditioned = designer.fit(&study, &history, Some(&warm.state), &mut rng)?;
            let condition = start.elapsed().as_secs_f64();
            let mut observe = Vec::with_capacity(repeats);
            for _ in 0..repeats {
                let start = Instant::now();
                let observed = warm.model.conditioning().and_then(|c| c.observe(&history[n..]));
                observe.push(start.elapsed().as_secs_f64());
                anyhow::ensure!(observed.is_some(), "{algorithm} cannot observe a new trial without a refit");
            }
            let observe = median(observe);
            let mut times = Vec::with_capacity(repeats);
            for _ in 0..repeats {
                let start = Instant::now();
                conditioned.model.suggest(&[], 1, &mut rng)?;
                times.push(start.elapsed().as_secs_f64());
            }
            let suggest = median(times);
            println!("{n:>6} {d:>4} {cold_fit:>12.3} {warm_fit:>12.3} {condition:>12.4} {observe:>12.4} {suggest:>12.4}");
            rows.push(LatencyRow {
                n,
                d,
                cold_fit_seconds: cold_fit,
                warm_fit_seconds: warm_fit,
                condition_seconds: condition,
                observe_seconds: observe,
                suggest_seconds: suggest,
            });
        }
    }
    Ok(rows)
}
