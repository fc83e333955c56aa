//! Transfer learning measured: a study warm-started from a related prior study (its model
//! standing on the prior's trials, `designer::gp::priors`) against the same study cold, same
//! designer, seeds and budget. The prior study is itself an optimisation run (GP_BANDIT on the
//! prior problem, its own seed), as a user's earlier study would be.
//!
//! - `branin_shifted`: the prior is Branin on [−5, 10] × [0, 15]; the study is Branin moved by
//!   (−0.8, +0.8) (its three minima stay inside the box, optimum 0.397887).
//! - `hartmann6_perturbed`: the prior is Hartmann-6; the study is Hartmann-6 with the weights of
//!   its four bumps perturbed (1.0, 1.2, 3.0, 3.2 → 1.1, 1.05, 2.8, 3.4), optimum found by a
//!   multi-start local search (see the test below).

use anyhow::{Context, Result};
use bo_core::designer::{PriorStudy, designer_for};
use bo_core::{Goal, Observation, Outcome, SearchSpace, StudySpec};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::problems::classic::{branin_of, hartmann6_of, hartmann6_with};
use crate::safety::{box_space, values};

/// A pair of related problems, both minimised.
pub struct PriorsProblem {
    /// Its command-line name.
    pub name: &'static str,
    /// The parameters' space (the same for both).
    pub space: fn() -> SearchSpace,
    /// The prior study's objective.
    pub prior: fn(&[f64]) -> f64,
    /// The new study's objective.
    pub target: fn(&[f64]) -> f64,
    /// The new study's optimum.
    pub optimum: f64,
}

const PERTURBED_ALPHA: [f64; 4] = [1.1, 1.05, 2.8, 3.4];

fn shifted_branin(x: &[f64]) -> f64 {
    branin_of(&[x[0] + 0.8, x[1] - 0.8])
}

fn perturbed_hartmann6(x: &[f64]) -> f64 {
    hartmann6_with(x, &PERTURBED_ALPHA)
}

/// The problems.
pub fn problems() -> Vec<PriorsProblem> {
    vec![
        PriorsProblem {
            name: "branin_shifted",
            space: || box_space(&[(-5.0, 10.0), (0.0, 15.0)]),
            prior: branin_of,
            target: shifted_branin,
            optimum: 0.397887,
        },
        PriorsProblem {
            name: "hartmann6_perturbed",
            space: || box_space(&[(0.0, 1.0); 6]),
            prior: hartmann6_of,
            target: perturbed_hartmann6,
            optimum: -3.402957,
        },
    ]
}

/// One run's regret of the best trial after each evaluation.
#[derive(Serialize)]
pub struct PriorsTrace {
    /// The seed.
    pub seed: u64,
    /// Regret after each evaluation.
    pub regret: Vec<f64>,
}

fn observe(f: fn(&[f64]) -> f64, spec: &StudySpec, priors: Vec<PriorStudy>, budget: usize, seed: u64) -> Result<Vec<(Observation, f64)>> {
    let designer = designer_for(spec).context("GP_BANDIT")?;
    let d = spec.space.n_params();
    let study = bo_core::Problem { spec: spec.clone(), seed, priors };
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut history, mut out) = (Vec::new(), Vec::new());
    let mut warm = None;
    while history.len() < budget {
        let fitted = designer.fit(&study, &history, warm.as_ref(), &mut rng)?;
        let a = fitted.model.suggest(&[], 1, &mut rng)?.into_iter().next().context("the designer proposed nothing")?;
        warm = Some(fitted.state);
        let y = f(&values(&a, d));
        let o = Observation { objective_sd: None, assignment: a, outcome: Outcome::Measured([("f".to_owned(), y)].into_iter().collect()) };
        history.push(o.clone());
        out.push((o, y));
    }
    Ok(out)
}

/// The prior study of `problem` for `seed`: `prior_budget` trials of GP_BANDIT on the prior
/// problem, with a seed of its own.
pub fn prior_study(problem: &PriorsProblem, prior_budget: usize, seed: u64) -> Result<PriorStudy> {
    let spec = StudySpec::new("f", Goal::Minimize, (problem.space)(), "GP_BANDIT");
    let trials = observe(problem.prior, &spec, vec![], prior_budget, seed.wrapping_add(1_000_003))?;
    Ok(PriorStudy { name: format!("prior-{}-{seed}", problem.name), history: trials.into_iter().map(|(o, _)| o).collect() })
}

/// GP_BANDIT on `problem`'s target for `budget` evaluations, standing on `prior` if given.
pub fn run(problem: &PriorsProblem, prior: Option<PriorStudy>, budget: usize, seed: u64) -> Result<PriorsTrace> {
    let spec = StudySpec::new("f", Goal::Minimize, (problem.space)(), "GP_BANDIT");
    let trials = observe(problem.target, &spec, prior.into_iter().collect(), budget, seed)?;
    let mut best = f64::INFINITY;
    let regret = trials
        .iter()
        .map(|(_, y)| {
            best = best.min(*y);
            (best - problem.optimum).max(0.0)
        })
        .collect();
    Ok(PriorsTrace { seed, regret })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each optimum is reached (within rounding) and no point of a local search from 2,000
    /// random starts does better.
    #[test]
    fn the_optima_are_the_least() {
        use rand::RngExt;
        assert!((shifted_branin(&[std::f64::consts::PI - 0.8, 2.275 + 0.8]) - 0.397887).abs() < 1e-5);
        let p = &problems()[1];
        let mut rng = StdRng::seed_from_u64(0);
        let mut best = f64::INFINITY;
        for _ in 0..2000 {
            let mut x: Vec<f64> = (0..6).map(|_| rng.random::<f64>()).collect();
            let mut step = 0.1;
            while step > 1e-7 {
                let mut moved = false;
                for i in 0..6 {
                    for s in [step, -step] {
                        let mut y = x.clone();
                        y[i] = (y[i] + s).clamp(0.0, 1.0);
                        if (p.target)(&y) < (p.target)(&x) {
                            x = y;
                            moved = true;
                        }
                    }
                }
                if !moved {
                    step /= 2.0;
                }
            }
            best = best.min((p.target)(&x));
        }
        assert!((best - p.optimum).abs() < 1e-5, "the least found is {best:.6}, the stated optimum {}", p.optimum);
    }
}
