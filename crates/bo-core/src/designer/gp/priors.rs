//! Transfer learning from prior studies (Vertex's `transferLearningConfig`, bo's
//! `algorithmConfig.priorStudies`): OSS Vizier's stack of GPs on residuals (`set_priors`;
//! Golovin et al. 2017, §3.3). The first prior study's trials train a GP; each next prior's trials
//! train a GP on the residuals of the stack below it; the study's own GP stands on the whole stack
//! ([`Gp::on_base`]): the prior studies set its prior mean, and, while it has few trials of its
//! own, most of its deviation.
//!
//! Each level is GP_BANDIT's flat model of the study's space (its [`Features`], ARD Matérn-5/2 ×
//! the categorical kernel, the study's noise setting), so any designer over those features can
//! stand on it. A level's θ is searched once and then kept in the designer's state under
//! [`STATE_KEY`] — a prior study's data does not change (the service hands over the trials it had
//! completed when this study was created) — so a refit only factorises each level again.
//!
//! Must not: read a database or decide which studies are priors (the service does); propose.

use std::sync::Arc;

use rand::Rng;

use super::{KernelKind, Start, noise_bounds, objective_values, product_kernel};
use crate::designer::{FitError, ModelState};
use crate::gp::{self, FitConfig, Gp, Hyperparameters, Search};
use crate::kernel::LengthScalePrior;
use crate::space::ParamSpec;
use crate::space::features::Features;
use crate::study::StudySpec;
use crate::trial::Observation;

/// The most prior studies a study may stand on.
pub const MAX_PRIOR_STUDIES: usize = 5;

/// The most trials of one prior study its level is fitted to (the last ones it completed): each
/// level costs a factorisation of this size at every refit.
pub const MAX_PRIOR_TRIALS: usize = 500;

/// The fewest measured trials a prior study needs to inform another.
pub const MIN_PRIOR_TRIALS: usize = 2;

/// A designer standing on priors starts its model after this many trials of its own (the first
/// the space's defaults or centre), not after a whole initial design: the priors stand in for it.
pub const INITIAL_DESIGN_WITH_PRIORS: usize = 2;

/// The key of a designer's state that holds the levels' θ.
const STATE_KEY: &str = "priors";

/// A prior study: its name (for what the service echoes) and the trials it had completed.
#[derive(Clone, Debug)]
pub struct PriorStudy {
    /// Its resource name.
    pub name: String,
    /// Its completed trials (at most [`MAX_PRIOR_TRIALS`] are used, the last ones).
    pub history: Vec<Observation>,
}

/// Whether `prior` can inform a study of `spec`: the same parameters (ids, types, ranges or
/// values, scales and conditions; default values may differ) and the same objective metric
/// (id and goal). `Err` says what differs.
pub fn compatible(spec: &StudySpec, prior: &StudySpec) -> Result<(), String> {
    let (ours, theirs) = (spec.objective(), prior.objective());
    if ours.id != theirs.id || ours.goal != theirs.goal {
        return Err(format!(
            "its objective is {:?} ({:?}), this study's {:?} ({:?}); a prior study must measure the same objective",
            theirs.id, theirs.goal, ours.id, ours.goal
        ));
    }
    let (a, b) = (spec.space.roots(), prior.space.roots());
    if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| !same_parameter(x, y)) {
        return Err("its parameters differ from this study's; a prior study must have the same parameters (ids, types, ranges, scales and conditions)".into());
    }
    Ok(())
}

fn same_parameter(a: &ParamSpec, b: &ParamSpec) -> bool {
    a.id == b.id
        && a.domain == b.domain
        && a.scale == b.scale
        && a.children.len() == b.children.len()
        && a.children.iter().zip(&b.children).all(|(x, y)| x.parent_values == y.parent_values && same_parameter(&x.spec, &y.spec))
}

/// The fitted stack of prior studies.
pub(crate) struct Stack {
    /// The top level (standing on the ones below).
    pub gp: Arc<Gp>,
    /// The names of the prior studies that make it, the base first.
    pub names: Vec<String>,
    /// Each level's θ, base first, for the designer's state.
    thetas: Vec<Hyperparameters>,
}

impl Stack {
    /// `state` with the levels' θ added, so the next fit keeps them.
    pub fn keep_in(&self, state: ModelState) -> ModelState {
        let mut value = state.0;
        if let Some(object) = value.as_object_mut() {
            object.insert(STATE_KEY.into(), serde_json::to_value(&self.thetas).unwrap_or_default());
        }
        ModelState(value)
    }

    /// The residuals of observations `y` at points `x` (model features) from the stack's mean.
    pub fn residuals(&self, x: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
        y.iter().zip(self.gp.mean_original(x)).map(|(y, m)| y - m).collect()
    }
}

/// A level's kernel: GP_BANDIT's under its default settings.
fn level_kernel(features: &Features) -> Box<dyn crate::kernel::Kernel> {
    product_kernel(features, KernelKind::Matern52, LengthScalePrior::Weak, false)
}

/// The stack of `priors` over `features` for a study of `spec` (`None` without priors with
/// enough trials): each level's θ as `start`'s state keeps it, else searched.
pub(crate) fn fit_stack(
    spec: &StudySpec,
    priors: &[PriorStudy],
    features: &Features,
    start: Start<'_>,
    rng: &mut dyn Rng,
) -> Result<Option<Stack>, FitError> {
    let kept: Vec<Hyperparameters> =
        start.state().and_then(|s| s.0.get(STATE_KEY)).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
    let noise = noise_bounds(spec.observation_noise);
    let mut top: Option<Arc<Gp>> = None;
    let (mut names, mut thetas) = (Vec::new(), Vec::new());
    for prior in priors.iter().take(MAX_PRIOR_STUDIES) {
        let recent = &prior.history[prior.history.len().saturating_sub(MAX_PRIOR_TRIALS)..];
        let (_, values) = objective_values(spec, recent);
        let (x, y): (Vec<Vec<f64>>, Vec<f64>) =
            recent.iter().zip(values).filter_map(|(o, v)| v.map(|v| (features.encode(&o.assignment), v))).unzip();
        if x.len() < MIN_PRIOR_TRIALS {
            continue;
        }
        let below = top.as_ref().map_or_else(|| vec![0.0; x.len()], |b| b.mean_original(&x));
        let residuals: Vec<f64> = y.iter().zip(below).map(|(y, m)| y - m).collect();
        let warm = kept.get(thetas.len());
        let search = if warm.is_some() { Search::Reuse } else { Search::Full };
        let config = FitConfig { noise, search, ..FitConfig::default() };
        let kernel = level_kernel(features);
        let n = x.len();
        let level = gp::fit(kernel, x, &residuals, &config, warm, rng)
            .map_err(|e| FitError::Numerical(format!("the GP of prior study {} failed: {e}", prior.name)))?;
        thetas.push(level.hyperparameters());
        names.push(prior.name.clone());
        top = Some(Arc::new(match top {
            Some(base) => level.on_base(base, n),
            None => level,
        }));
    }
    Ok(top.map(|gp| Stack { gp, names, thetas }))
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::designer::testing::fixtures;
    use crate::designer::{Problem, designer_for};
    use crate::space::SearchSpace;
    use crate::study::Goal;
    use crate::trial::{Assignment, Outcome, ParamValue};

    fn plane() -> SearchSpace {
        fixtures::unit_box(&["x", "y"])
    }

    fn observe(f: &dyn Fn(f64, f64) -> f64, points: &[(f64, f64)]) -> Vec<Observation> {
        points
            .iter()
            .map(|&(x, y)| {
                let a = Assignment::new([("x".into(), ParamValue::Float(x)), ("y".into(), ParamValue::Float(y))].into_iter().collect());
                Observation {
                    objective_sd: None,
                    assignment: a,
                    outcome: Outcome::Measured([("m".to_owned(), f(x, y))].into_iter().collect()),
                }
            })
            .collect()
    }

    fn grid(n: usize, seed: u64) -> Vec<(f64, f64)> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| (rng.random::<f64>(), rng.random::<f64>())).collect()
    }

    /// A peak at (0.7, 0.3) in the prior, the same peak slightly moved in the study.
    fn prior_f(x: f64, y: f64) -> f64 {
        -((x - 0.7).powi(2) + (y - 0.3).powi(2)) * 10.0
    }

    fn study_f(x: f64, y: f64) -> f64 {
        -((x - 0.75).powi(2) + (y - 0.3).powi(2)) * 10.0 + 1.0
    }

    /// The stack's mean is the prior's function where the prior was measured; a study standing
    /// on it with two trials of its own predicts its own function far better than the same GP
    /// without the prior, and its deviation there is the prior's rather than the wide one of
    /// two points.
    #[test]
    fn a_stack_carries_a_prior_studys_shape_into_a_new_study() {
        let spec = StudySpec::new("m", Goal::Maximize, plane(), "GP_BANDIT");
        let features = Features::new(&spec.space);
        let prior = PriorStudy { name: "projects/p/locations/l/studies/1".into(), history: observe(&prior_f, &grid(40, 1)) };
        let mut rng = StdRng::seed_from_u64(0);
        let stack = fit_stack(&spec, std::slice::from_ref(&prior), &features, Start::Cold, &mut rng).unwrap().unwrap();
        assert_eq!(stack.names, vec![prior.name.clone()]);
        let probe: Vec<(f64, f64)> = grid(20, 9);
        let encode = |&(x, y): &(f64, f64)| vec![x, y];
        let xs: Vec<Vec<f64>> = probe.iter().map(encode).collect();
        let means = stack.gp.mean_original(&xs);
        for (((m, _), p), quick) in stack.gp.predict_original(&xs).into_iter().zip(&probe).zip(&means) {
            assert!((m - quick).abs() < 1e-9 * (1.0 + m.abs()), "the mean alone is the prediction's mean");
            assert!((m - prior_f(p.0, p.1)).abs() < 0.15, "the prior's mean at {p:?}: {m} against {}", prior_f(p.0, p.1));
        }

        let own = observe(&study_f, &[(0.5, 0.5), (0.2, 0.8)]);
        let warm = designer_for(&spec).unwrap();
        let problem = Problem { spec: spec.clone(), seed: 1, priors: vec![prior] };
        let points: Vec<Assignment> = observe(&study_f, &probe).into_iter().map(|o| o.assignment).collect();
        // Cold, the same GP from as few trials.
        let mut cold_spec = spec.clone();
        cold_spec.algorithm_config = serde_json::json!({"initialDesignSize": 2});
        let cold = Problem { spec: cold_spec, seed: 1, priors: vec![] };
        let error = |problem: &Problem, history: &[Observation]| {
            let designer = designer_for(&problem.spec).unwrap();
            let model = designer.fit(problem, history, None, &mut StdRng::seed_from_u64(2)).unwrap().model;
            let predictions = model.predictor().unwrap().predict(&points).expect("a GP predicts");
            predictions.iter().zip(&probe).map(|(p, q)| (p.median - study_f(q.0, q.1)).abs()).sum::<f64>() / probe.len() as f64
        };
        let history = [own.clone(), observe(&study_f, &[(0.9, 0.1)])].concat();
        let (with, without) = (error(&problem, &history), error(&cold, &history));
        assert!(with < 0.3 && with < without / 2.0, "mean error with the prior {with}, without {without}");
        let model = warm.fit(&problem, &history, None, &mut StdRng::seed_from_u64(2)).unwrap();
        let described = model.model.describe();
        assert_eq!(described["priorStudies"][0], "projects/p/locations/l/studies/1", "{described}");
        assert!(model.state.0.get(STATE_KEY).is_some(), "the levels' θ are kept");
    }

    /// The stacked GP's gradients (mean and variance in x, through both levels and the geometric
    /// mean of deviations) match finite differences: the acquisition search follows them.
    #[test]
    fn stacked_gradients_match_finite_differences() {
        let spec = StudySpec::new("m", Goal::Maximize, plane(), "GP_BANDIT");
        let features = Features::new(&spec.space);
        let priors = [
            PriorStudy { name: "a".into(), history: observe(&prior_f, &grid(25, 3)) },
            PriorStudy { name: "b".into(), history: observe(&|x, y| prior_f(x, y) + x, &grid(15, 4)) },
        ];
        let mut rng = StdRng::seed_from_u64(5);
        let stack = fit_stack(&spec, &priors, &features, Start::Cold, &mut rng).unwrap().unwrap();
        assert_eq!(stack.gp.stack_depth(), 1);
        let own = observe(&study_f, &grid(4, 6));
        let x: Vec<Vec<f64>> = own.iter().map(|o| features.encode(&o.assignment)).collect();
        let y: Vec<f64> = own.iter().map(|o| if let Outcome::Measured(m) = &o.outcome { m["m"] } else { 0.0 }).collect();
        let r = stack.residuals(&x, &y);
        let kernel = level_kernel(&features);
        let top = gp::fit(kernel, x.clone(), &r, &FitConfig::default(), None, &mut rng).unwrap().on_base(stack.gp.clone(), 4);
        let w = top.stack_weight();
        assert!(w > 0.0 && w < 0.5, "four points against 25 and 15: the base's deviation dominates ({w})");
        for (i, yi) in top.y().iter().enumerate() {
            assert!((top.unstandardize(*yi, 0.0).0 - y[i]).abs() < 1e-9, "targets are the observations");
        }
        for at in [[0.3, 0.6], [0.81, 0.12], [0.5, 0.5]] {
            let g = top.predict_with_grad(&at);
            let plain = top.predict(&[at.to_vec()])[0];
            assert!((g.mean - plain.0).abs() < 1e-9 && (g.var - plain.1).abs() < 1e-9, "the gradient path predicts the same");
            for d in 0..2 {
                let h = 1e-6;
                let (mut up, mut down) = (at.to_vec(), at.to_vec());
                up[d] += h;
                down[d] -= h;
                let (pu, pd) = (top.predict(&[up])[0], top.predict(&[down])[0]);
                let (dm, dv) = ((pu.0 - pd.0) / (2.0 * h), (pu.1 - pd.1) / (2.0 * h));
                assert!((g.d_mean[d] - dm).abs() < 1e-4 * (1.0 + dm.abs()), "∂μ/∂x{d} at {at:?}: {} against {dm}", g.d_mean[d]);
                assert!((g.d_var[d] - dv).abs() < 1e-4 * (1.0 + dv.abs()), "∂σ²/∂x{d} at {at:?}: {} against {dv}", g.d_var[d]);
            }
        }
        // Conditioning by factor extension equals a fresh factorisation, base and all.
        let mut grown = top.clone();
        grown.condition_on(vec![vec![0.4, 0.4]], vec![0.3], None).unwrap();
        let fresh = grown.refactored().unwrap();
        let probe = vec![vec![0.2, 0.9], vec![0.45, 0.41]];
        for (a, b) in grown.predict(&probe).into_iter().zip(fresh.predict(&probe)) {
            assert!((a.0 - b.0).abs() < 1e-8 && (a.1 - b.1).abs() < 1e-8, "{a:?} against {b:?}");
        }
    }

    #[test]
    fn compatibility_names_what_differs() {
        let spec = StudySpec::new("m", Goal::Maximize, plane(), "GP_BANDIT");
        let mut other = spec.clone();
        assert!(compatible(&spec, &other).is_ok());
        other.space = fixtures::all_types();
        assert!(compatible(&spec, &other).unwrap_err().contains("parameters"));
        let minimised = StudySpec::new("m", Goal::Minimize, plane(), "GP_BANDIT");
        assert!(compatible(&spec, &minimised).unwrap_err().contains("objective"));
        let mut defaults = plane().roots().to_vec();
        defaults[0].default = Some(ParamValue::Float(0.5));
        let with_default = StudySpec::new("m", Goal::Maximize, SearchSpace::new(defaults).unwrap(), "RANDOM_SEARCH");
        assert!(compatible(&spec, &with_default).is_ok(), "defaults and the algorithm may differ");
    }
}
