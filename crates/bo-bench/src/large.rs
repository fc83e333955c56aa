//! Large studies (`bo-bench large`): what fitting a designer on a subset of a large study's
//! observations (`bo_core::designer::subset`) costs in regret and saves in time, against the
//! same designer fitted on all of them. Each run preloads N uniformly random evaluations — as a
//! study of N trials evaluated elsewhere would — then takes `steps` suggestions one at a time,
//! each fitted warm from the last, evaluated and added. A noisy problem's designer is told
//! measurements with the problem's noise (`harness::Noise`); the regret is of the true values.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};
use bo_core::designer::{designer_fitted_whole, designer_for};
use bo_core::{Designer, Observation, Outcome};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::harness::{Noise, spec_for};
use crate::problems::Problem;

/// One designer's runs at one N.
#[derive(Serialize)]
pub struct LargeRow {
    /// Preloaded evaluations.
    pub n: usize,
    /// `subset` (as the service fits) or `exact` (every observation).
    pub fitted_on: &'static str,
    /// Per seed: the regret of the preload's best.
    pub regret_before: Vec<f64>,
    /// Per seed: the regret after the steps.
    pub regret_after: Vec<f64>,
    /// Per seed: median seconds of one step (fit + suggest).
    pub step_seconds: Vec<f64>,
}

/// Runs `algorithm` on `problem` after each preload size in `ns`, over `seeds` seeds, as the
/// service fits it and, with `exact`, fitted on every observation; prints a row per designer
/// and size.
pub fn compare(problem: &Problem, algorithm: &str, ns: &[usize], steps: usize, seeds: u64, exact: bool) -> Result<Vec<LargeRow>> {
    let spec = spec_for(problem, algorithm, serde_json::Value::Null);
    let mut designers: Vec<(&'static str, Box<dyn Designer>)> = vec![("subset", designer_for(&spec)?)];
    if exact {
        designers.push(("exact", designer_fitted_whole(&spec)?));
    }
    let random = designer_for(&spec_for(problem, "RANDOM_SEARCH", serde_json::Value::Null))?;
    println!("{:>7} {:>8} {:>16} {:>16} {:>10}", "N", "fitted", "regret before", "regret after", "step s");
    let mut rows = Vec::new();
    for &n in ns {
        for (fitted_on, designer) in &designers {
            let mut row = LargeRow { n, fitted_on, regret_before: Vec::new(), regret_after: Vec::new(), step_seconds: Vec::new() };
            for seed in 0..seeds {
                let study = bo_core::Problem { spec: spec.clone(), seed, priors: Vec::new() };
                let mut rng = StdRng::seed_from_u64(seed);
                // The preload: the same N points for both designers of a seed.
                let uniform = random.fit(&study, &[], None, &mut rng)?.model.suggest(&[], n, &mut rng)?;
                // The designer is told the measurement (with the problem's noise); the regret is of
                // the true value.
                let mut noise = Noise::new(problem, seed);
                let mut observe = |a: bo_core::Assignment| {
                    let y = (problem.eval)(&a);
                    let measured = noise.observe(y);
                    (
                        y,
                        Observation {
                            objective_sd: None,
                            assignment: a,
                            outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), measured)])),
                        },
                    )
                };
                let (mut best, mut history) = (f64::INFINITY, Vec::with_capacity(n + steps));
                for a in uniform {
                    let (y, o) = observe(a);
                    best = best.min(y);
                    history.push(o);
                }
                row.regret_before.push(best - problem.optimum);
                let (mut warm, mut times) = (None, Vec::with_capacity(steps));
                for _ in 0..steps {
                    let start = Instant::now();
                    let fitted = designer.fit(&study, &history, warm.as_ref(), &mut rng)?;
                    let a = fitted.model.suggest(&[], 1, &mut rng)?.into_iter().next().context("nothing proposed")?;
                    times.push(start.elapsed().as_secs_f64());
                    warm = Some(fitted.state);
                    let (y, o) = observe(a);
                    best = best.min(y);
                    history.push(o);
                }
                times.sort_by(f64::total_cmp);
                row.regret_after.push(best - problem.optimum);
                row.step_seconds.push(times[times.len() / 2]);
            }
            let median = |v: &[f64]| {
                let mut v = v.to_vec();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            println!(
                "{n:>7} {fitted_on:>8} {:>16.4e} {:>16.4e} {:>10.3}",
                median(&row.regret_before),
                median(&row.regret_after),
                median(&row.step_seconds)
            );
            rows.push(row);
        }
    }
    Ok(rows)
}
