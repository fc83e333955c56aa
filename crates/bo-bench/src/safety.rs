//! Constrained problems and their runs: one minimised objective `f` and safety metrics `c1`,
//! `c2`, … each safe at or below 0, scored by the regret of the best *safe* trial so far (`None`
//! before one) and the fraction of trials that were safe. The peers' script
//! (bench/peers/optuna_safe.py) defines the same problems and writes the same JSON.
//!
//! - `gramacy`: Gramacy et al. (2016), "Modeling an augmented Lagrangian for blackbox
//!   constrained optimization", the toy problem with two constraints (BoTorch's
//!   `ConstrainedGramacy`, optimum 0.5998).
//! - `townsend`: the Townsend function inside its cardioid-like boundary (Townsend 2014, as used
//!   in constrained-optimisation benchmarks), optimum −2.0239884.
//! - `branin_disk`: Branin inside the disk (x1 − 2.5)² + (x2 − 7.5)² ≤ 50, which rules out one
//!   of its three minima (Gardner et al. 2014, §5.1), optimum 0.397887.
//! - `hartmann6_l1`: Hartmann-6 with Σx ≤ 3, BoTorch's constrained-BO tutorial, optimum
//!   −3.32237.

use std::time::Instant;

use anyhow::{Context, Result};
use bo_core::designer::designer_for;
use bo_core::{Assignment, Domain, Goal, MetricSpec, Observation, Outcome, ParamSpec, ParamValue, Safety, Scale, SearchSpace, StudySpec};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

/// A constrained problem: minimise `f` with every `c_i ≤ 0`.
pub struct SafeProblem {
    /// Its command-line name.
    pub name: &'static str,
    /// The parameters' space.
    pub space: fn() -> SearchSpace,
    /// The objective and the constraints' values.
    pub eval: fn(&[f64]) -> (f64, Vec<f64>),
    /// The least objective value among safe points.
    pub optimum: f64,
}

pub(crate) fn box_space(bounds: &[(f64, f64)]) -> SearchSpace {
    let param = |i: usize, (min, max): (f64, f64)| ParamSpec {
        id: format!("x{i}"),
        domain: Domain::Double { min, max },
        scale: Scale::Linear,
        default: None,
        children: vec![],
    };
    SearchSpace::new(bounds.iter().enumerate().map(|(i, b)| param(i, *b)).collect()).expect("valid")
}

pub(crate) fn values(a: &Assignment, d: usize) -> Vec<f64> {
    (0..d)
        .map(|i| match a.get(&format!("x{i}")) {
            Some(ParamValue::Float(x)) => *x,
            other => panic!("x{i} is {other:?}"),
        })
        .collect()
}

fn gramacy(x: &[f64]) -> (f64, Vec<f64>) {
    let (a, b) = (x[0], x[1]);
    let c1 = 1.5 - a - 2.0 * b - 0.5 * (2.0 * std::f64::consts::PI * (a * a - 2.0 * b)).sin();
    let c2 = a * a + b * b - 1.5;
    (a + b, vec![c1, c2])
}

fn townsend(x: &[f64]) -> (f64, Vec<f64>) {
    let (a, b) = (x[0], x[1]);
    let f = -((a - 0.1) * b).cos().powi(2) - a * (3.0 * a + b).sin();
    let t = a.atan2(b);
    let r = (2.0 * t.cos() - 0.5 * (2.0 * t).cos() - 0.25 * (3.0 * t).cos() - 0.125 * (4.0 * t).cos()).powi(2) + (2.0 * t.sin()).powi(2);
    (f, vec![a * a + b * b - r])
}

fn branin_disk(x: &[f64]) -> (f64, Vec<f64>) {
    let (a, b) = (x[0], x[1]);
    let pi = std::f64::consts::PI;
    let f = (b - 5.1 / (4.0 * pi * pi) * a * a + 5.0 / pi * a - 6.0).powi(2) + 10.0 * (1.0 - 1.0 / (8.0 * pi)) * a.cos() + 10.0;
    (f, vec![(a - 2.5).powi(2) + (b - 7.5).powi(2) - 50.0])
}

fn hartmann6_l1(x: &[f64]) -> (f64, Vec<f64>) {
    const ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
    const A: [[f64; 6]; 4] = [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ];
    const P: [[f64; 6]; 4] = [
        [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ];
    let f = -(0..4).map(|i| ALPHA[i] * (-(0..6).map(|j| A[i][j] * (x[j] - P[i][j]).powi(2)).sum::<f64>()).exp()).sum::<f64>();
    (f, vec![x.iter().sum::<f64>() - 3.0])
}

/// The constrained problems.
pub fn problems() -> Vec<SafeProblem> {
    vec![
        SafeProblem { name: "gramacy", space: || box_space(&[(0.0, 1.0); 2]), eval: gramacy, optimum: 0.5998 },
        SafeProblem { name: "townsend", space: || box_space(&[(-2.25, 2.5), (-2.5, 1.75)]), eval: townsend, optimum: -2.0239884 },
        SafeProblem { name: "branin_disk", space: || box_space(&[(-5.0, 10.0), (0.0, 15.0)]), eval: branin_disk, optimum: 0.397887 },
        SafeProblem { name: "hartmann6_l1", space: || box_space(&[(0.0, 1.0); 6]), eval: hartmann6_l1, optimum: -3.32237 },
    ]
}

/// One seed's trace.
#[derive(Serialize)]
pub struct SafeTrace {
    /// The seed.
    pub seed: u64,
    /// The best safe objective value less the optimum after each evaluation (`None` before a
    /// safe one).
    pub regret: Vec<Option<f64>>,
    /// Whether each evaluation was safe.
    pub safe: Vec<bool>,
    /// Seconds of fit + suggest before each evaluation.
    pub suggest_seconds: Vec<f64>,
}

/// How a run tells the designer about the constraints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Constraints {
    /// As safety metrics (MINIMIZE, threshold 0) whose desired safe fraction is this.
    Safety(f64),
    /// Only as infeasible trials: an unsafe point's trial fails, with no values.
    Infeasible,
}

/// Runs `algorithm` on `problem` for `budget` evaluations with `seed`, as a study minimising `f`
/// told of the constraints as `constraints` says.
pub fn run(
    problem: &SafeProblem,
    algorithm: &str,
    config: serde_json::Value,
    constraints: Constraints,
    budget: usize,
    seed: u64,
) -> Result<SafeTrace> {
    let space = (problem.space)();
    let d = space.n_params();
    let n_constraints = (problem.eval)(&vec![0.0; d]).1.len();
    let mut spec = StudySpec::new("f", Goal::Minimize, space, algorithm).with_config(config);
    if let Constraints::Safety(desired) = constraints {
        spec.metrics.extend((1..=n_constraints).map(|i| MetricSpec {
            safety: Some(Safety { threshold: 0.0, desired_min_safe_fraction: desired }),
            ..MetricSpec::objective(&format!("c{i}"), Goal::Minimize)
        }));
    }
    let designer = designer_for(&spec).with_context(|| format!("algorithm {algorithm}"))?;
    let study = bo_core::Problem { spec, seed, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut history: Vec<Observation> = Vec::new();
    let mut warm = None;
    let mut best: Option<f64> = None;
    let mut trace = SafeTrace { seed, regret: Vec::new(), safe: Vec::new(), suggest_seconds: Vec::new() };
    while history.len() < budget {
        let start = Instant::now();
        let fitted = designer.fit(&study, &history, warm.as_ref(), &mut rng)?;
        let a = fitted.model.suggest(&[], 1, &mut rng)?.into_iter().next().context("the designer proposed nothing")?;
        trace.suggest_seconds.push(start.elapsed().as_secs_f64());
        warm = Some(fitted.state);
        let (f, c) = (problem.eval)(&values(&a, d));
        let safe = c.iter().all(|v| *v <= 0.0);
        if safe {
            best = Some(best.map_or(f, |b| b.min(f)));
        }
        trace.safe.push(safe);
        trace.regret.push(best.map(|b| (b - problem.optimum).max(0.0)));
        let mut metrics: std::collections::BTreeMap<String, f64> = c.iter().enumerate().map(|(i, v)| (format!("c{}", i + 1), *v)).collect();
        metrics.insert("f".into(), f);
        let outcome = if constraints == Constraints::Infeasible && !safe { Outcome::Infeasible } else { Outcome::Measured(metrics) };
        history.push(Observation { objective_sd: None, assignment: a, outcome });
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each optimum is a safe point of the problem at (within rounding) the stated value, and
    /// no point among 300,000 (two dimensions) or 200,000 (six) quasi-random points that is
    /// safe does better.
    #[test]
    fn the_optima_are_safe_and_the_least() {
        let at = [
            ("gramacy", vec![0.1954, 0.4044]),
            ("townsend", vec![2.0052938, 1.1944509]),
            ("branin_disk", vec![std::f64::consts::PI, 2.275]),
        ];
        for (name, x) in at {
            let p = problems().into_iter().find(|p| p.name == name).unwrap();
            let (f, c) = (p.eval)(&x);
            assert!((f - p.optimum).abs() < 1e-3, "{name}: f = {f}");
            assert!(c.iter().all(|v| *v <= 1e-3), "{name}: the optimum is safe: {c:?}");
        }
        for p in problems() {
            let space = (p.space)();
            let d = space.n_params();
            let n = if d == 2 { 300_000 } else { 200_000 };
            let least = (0..n as u64)
                .map(|i| (p.eval)(&values(&space.decode(&bo_core::optimize::sobol::sobol_point(i, d, 1)), d)))
                .filter(|(_, c)| c.iter().all(|v| *v <= 0.0))
                .map(|(f, _)| f)
                .fold(f64::INFINITY, f64::min);
            assert!(least >= p.optimum - 1e-3, "{}: a safe point at {least} beats the optimum {}", p.name, p.optimum);
            assert!(least < p.optimum + 0.05 * p.optimum.abs().max(1.0), "{}: the search comes near it: {least}", p.name);
        }
    }
}
