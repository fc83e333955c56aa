//! Studies of several metrics, for every learning designer: one model per metric — objectives and
//! safety metrics alike — each of the study's own designer fitted as if that metric were the
//! study's only one, and one acquisition over them, searched without gradients.
//!
//! - **Several objectives.** The mean over random hypervolume scalarisations (Golovin & Zhang
//!   2020, "Random hypervolume scalarizations for provable multi-objective black box
//!   optimization", Thm. 4) of each model's upper confidence bound, floored by the best
//!   scalarised value already observed, as OSS Vizier's GP bandit does for multi-metric studies.
//!   Each objective is oriented to be maximised and measured from its reference point — the worst
//!   value seen less 10 % of its range ([`crate::hypervolume::reference_point`]) — in units of
//!   its range, so no metric outweighs another by its units. For a weight `w` drawn uniformly
//!   from the positive unit sphere, `s_w(z) = min_i (max(z_i, 0) / w_i)^k` over `k` objectives;
//!   `E_w[s_w]` over the data's front is proportional to its hypervolume. A candidate gains
//!   `mean_w max(s_w(UCB(x)) − max_data s_w(y), 0)`: how much hypervolume its optimistic value
//!   would add, averaged over directions. [`WEIGHTS`] directions, drawn per suggestion; the
//!   UCB's coefficient is [`UCB_COEFFICIENT`], measured.
//! - **One objective** (a study with safety metrics): expected improvement over the best safe
//!   value observed, or, before any trial is safe, a constant — the search then looks for
//!   safety alone (Gardner et al. 2014, "Bayesian optimization with inequality constraints",
//!   §3).
//! - **Safety metrics** (Vertex's `safetyConfig`). The gain is multiplied by each safety model's
//!   probability that the metric lands on the safe side of its threshold (constrained EI,
//!   Gardner et al. 2014, eq. 4; the same weight on the hypervolume gain). While the observed
//!   fraction of safe trials for a metric is below its `desiredMinSafeTrialsFraction`, the
//!   constraint is hard: a candidate must be safe with at least that probability (at most
//!   [`MAX_REQUIRED_SAFETY`]), and where none is, the most probably safe candidate is proposed.
//!   Unsafe trials inform every model; only safe ones raise the floor.
//! - **Search.** Gradient-free, as OSS Vizier's evolutionary acquisition optimiser: quasi-random
//!   points of the space, perturbations of the front's trials, each model's own proposal (its
//!   designer's search, which knows the model's structure: an objective's optimum, a safety
//!   metric's safest point), then two rounds of finer perturbations around the best, with
//!   coordinates near a bound also moved onto it (a gradient search lands on a bound; a
//!   perturbation rarely does: on ZDT1, whose front lies on five bounds at once, this halved the
//!   regret at 25 evaluations).
//! - **Batches.** Pending trials and the members chosen so far are fantasies: each model
//!   observes them at its own posterior mean (the kriging believer), and their predicted values,
//!   where predicted safe, join the floor, so the next member looks for other gains.
//!
//! - **Infeasible trials** (with `algorithmConfig.infeasibleTrials: "CLASSIFIER"`): instead of
//!   the penalty every GP designer gives them (the worst feasible value), a model of the
//!   designer's own kind learns feasibility as a 0/1 label of every trial (regression on the
//!   labels, a cheap stand-in for a GP classifier), the objectives learn from feasible trials
//!   only, and feasibility is one more safety metric, safe above ½ (Gardner et al. 2014, §3:
//!   constraints observed only as satisfied or not).
//!
//! - **Models of the metrics' own values.** Its acquisition reads each model's predictions in
//!   the metric's units, so the models are fitted to the values as they are and their designers
//!   search the whole space: `outputWarping: NONE` and `trustRegion: false` unless the settings
//!   name them ([`single_objective_settings`]) — the warp and the trust region are defaults
//!   measured on studies of one objective.
//!
//! A model that does not predict yet (a designer still in its initial design, or a metric
//! nobody reports) takes no part: with one predicting objective and no predicting safety metric
//! the study is optimised on that objective by its own designer, with no predicting objective
//! the first objective's designer (its initial design) answers.
//!
//! Must not: know which designer it wraps, or read anything of the study but its metrics and
//! space.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};

use super::{ConfigError, Designer, FitError, Fitted, Model, ModelState, Prediction, Problem, Work};
use crate::acquisition::{log_h, log_ndtr};
use crate::hypervolume::reference_point;
use crate::optimize::mixed::standard_normal;
use crate::optimize::sobol::sobol_point;
use crate::space::SearchSpace;
use crate::study::{Goal, MetricSpec, StudySpec};
use crate::trial::{Assignment, Observation, Outcome};

/// Random scalarisation directions per suggestion. OSS Vizier uses 1,000; over 10 seeds of the
/// five `bo-bench multi` problems, 250 left the hypervolume regret at 100 evaluations within
/// seed spread (better on DTLZ2, level on the others) and took 30–40 % off the time per
/// suggestion (docs/benchmarks.md, "Several objectives").
const WEIGHTS: usize = 250;
/// The multiplier of each objective's posterior deviation in its upper confidence bound. OSS
/// Vizier uses 1.8; over 10 seeds of the five `bo-bench multi` problems, 1.8, 1.0, 0.5 and 0.25
/// explored too much (hypervolume regret at 100 up to 2.8× that of 0.1), and 0 (the posterior
/// mean alone) was within seed spread of 0.1 (docs/benchmarks.md, "Several objectives"). The
/// scalarisations' floor and the fantasies already spread a batch.
const UCB_COEFFICIENT: f64 = 0.1;
/// The highest probability of safety a hard constraint asks of a candidate (a target of 1 asks
/// for this: a posterior is never certain).
const MAX_REQUIRED_SAFETY: f64 = 0.99;
/// Quasi-random candidates per batch member.
const SOBOL_CANDIDATES: usize = 1000;
/// Front trials explored around, and perturbations of each.
const ANCHORS: usize = 24;
const PER_ANCHOR: usize = 16;
/// Refinement: rounds, the best candidates each explores around, perturbations of each, and the
/// perturbations' deviation (unit cube) in each round.
const REFINE_TOP: usize = 8;
const REFINE_PER: usize = 24;
const REFINE_SCALES: [f64; 2] = [0.02, 0.005];

/// Wraps a learning designer for studies with two or more metrics, or whose infeasible trials
/// a classifier models.
pub(crate) struct SeveralMetrics {
    inner: Box<dyn Designer>,
    classify_infeasible: bool,
}

/// The key of `algorithmConfig` that says how the learning designers treat infeasible trials;
/// the wrapper's, taken out before the designer's own settings are checked.
pub(crate) const INFEASIBLE_TRIALS_KEY: &str = "infeasibleTrials";

/// How infeasible trials inform a learning designer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InfeasibleTrials {
    /// At the worst feasible value of the objective (the default).
    Penalty,
    /// By a feasibility model, the objectives learning from feasible trials only.
    Classifier,
}

/// `spec` without `algorithmConfig.infeasibleTrials`, and its value (`None` when absent).
pub(crate) fn take_infeasible_trials(spec: &StudySpec) -> Result<(std::borrow::Cow<'_, StudySpec>, Option<InfeasibleTrials>), ConfigError> {
    let Some(raw) = spec.algorithm_config.get(INFEASIBLE_TRIALS_KEY) else { return Ok((std::borrow::Cow::Borrowed(spec), None)) };
    let mode = match raw.as_str() {
        Some("PENALTY") => InfeasibleTrials::Penalty,
        Some("CLASSIFIER") => InfeasibleTrials::Classifier,
        _ => {
            return Err(ConfigError::Invalid {
                field: INFEASIBLE_TRIALS_KEY.into(),
                reason: "must be \"PENALTY\" (the default) or \"CLASSIFIER\"".into(),
            });
        }
    };
    let mut owned = spec.clone();
    if let Some(map) = owned.algorithm_config.as_object_mut() {
        map.remove(INFEASIBLE_TRIALS_KEY);
        if map.is_empty() {
            owned.algorithm_config = serde_json::Value::Null;
        }
    }
    Ok((std::borrow::Cow::Owned(owned), Some(mode)))
}

/// The settings a several-metric study's designer gets unless its `algorithmConfig` names them:
/// no output warp, no trust region (see the module's header), for the designers that take them.
pub(crate) fn single_objective_settings(spec: &StudySpec) -> Vec<(&'static str, serde_json::Value)> {
    let takes = |keys: &[&str]| -> Vec<(&'static str, serde_json::Value)> {
        let mut out = Vec::new();
        for key in keys {
            if spec.algorithm_config.get(*key).is_none() {
                match *key {
                    "outputWarping" => out.push(("outputWarping", serde_json::json!("NONE"))),
                    "trustRegion" => out.push(("trustRegion", serde_json::json!(false))),
                    _ => {}
                }
            }
        }
        out
    };
    match spec.algorithm.as_str() {
        "GP_BANDIT" | "AUTO" | "ALGORITHM_UNSPECIFIED" => takes(&["outputWarping", "trustRegion"]),
        "ADD_GP_UCB" | "ADD_TREE" | "BRANCHING_NESTED" | "OVERLAP_ADD_GP" => takes(&["outputWarping"]),
        _ => Vec::new(),
    }
}

/// The id of the feasibility model's metric: not a token, so no study's metric can share it.
const FEASIBILITY: &str = "trial feasibility";

/// `o` with its feasibility as a metric: 1 with its measurements, or 0 alone for an infeasible
/// trial (which the objectives' models then skip).
fn labelled(o: &Observation) -> Observation {
    let metrics = match &o.outcome {
        Outcome::Measured(m) => {
            let mut m = m.clone();
            m.insert(FEASIBILITY.into(), 1.0);
            m
        }
        Outcome::Infeasible => BTreeMap::from([(FEASIBILITY.to_owned(), 0.0)]),
    };
    Observation { objective_sd: None, assignment: o.assignment.clone(), outcome: Outcome::Measured(metrics) }
}

/// What is stored: each metric's model state, in the study's metric order.
#[derive(Serialize, Deserialize)]
struct State {
    objectives: Vec<ModelState>,
}

impl SeveralMetrics {
    /// `inner`, fitted once per metric of the studies it is asked about.
    pub fn wrap(inner: Box<dyn Designer>, classify_infeasible: bool) -> Box<dyn Designer> {
        Box::new(SeveralMetrics { inner, classify_infeasible })
    }

    fn fit_each(
        &self,
        problem: &Problem,
        history: &[Observation],
        stored: Option<&ModelState>,
        restore: bool,
        rng: &mut dyn Rng,
    ) -> Result<Fitted, FitError> {
        let stored: Vec<ModelState> =
            stored.and_then(|s| serde_json::from_value::<State>(s.0.clone()).ok()).map(|s| s.objectives).unwrap_or_default();
        // Infeasible trials to classify: feasibility becomes one more (safety) metric.
        let classify = self.classify_infeasible && history.iter().any(|o| matches!(o.outcome, Outcome::Infeasible));
        let labelled_history: Vec<Observation>;
        let history = if classify {
            labelled_history = history.iter().map(labelled).collect();
            &labelled_history[..]
        } else {
            history
        };
        let mut all_metrics = problem.spec.metrics.clone();
        if classify {
            all_metrics.push(MetricSpec {
                id: FEASIBILITY.into(),
                goal: Goal::Maximize,
                safety: Some(crate::study::Safety { threshold: 0.5, desired_min_safe_fraction: 0.0 }),
            });
        }
        let metrics = &all_metrics;
        let mut fitted = Vec::with_capacity(metrics.len());
        for (i, metric) in metrics.iter().enumerate() {
            // Each metric as the one objective of its own study (a safety metric's model
            // predicts the metric itself; the threshold is the acquisition's business).
            let mut spec = problem.spec.clone();
            spec.metrics = vec![MetricSpec { safety: None, ..metric.clone() }];
            let one = Problem { spec, seed: problem.seed, priors: Vec::new() };
            let warm = stored.get(i);
            let f = match warm {
                Some(s) if restore => self.inner.restore(&one, history, s, rng)?,
                _ => self.inner.fit(&one, history, warm, rng)?,
            };
            fitted.push(f);
        }
        let state =
            ModelState(serde_json::to_value(State { objectives: fitted.iter().map(|f| f.state.clone()).collect() }).unwrap_or_default());
        let mut waiting = None;
        let (mut objectives, mut safety) = (Vec::new(), Vec::new());
        for (f, m) in fitted.into_iter().zip(metrics) {
            let predicts = f.model.predict(&[]).is_some();
            match (m.safety.is_some(), predicts) {
                (false, true) => objectives.push((f.model, m.clone())),
                (false, false) if waiting.is_none() => waiting = Some(f.model),
                (true, true) => safety.push((f.model, m.clone())),
                _ => {}
            }
        }
        let model = match (objectives.len(), safety.len()) {
            (0, _) => waiting.ok_or_else(|| FitError::Numerical("a study without objectives".into()))?,
            (1, 0) => objectives.pop().map(|(m, _)| m).expect("one"),
            _ => {
                let (models, metrics): (Vec<_>, Vec<_>) = objectives.into_iter().chain(safety).unzip();
                Arc::new(MetricsModel::new(problem.spec.space.clone(), metrics, models, history, classify))
            }
        };
        Ok(Fitted { model, state })
    }
}

impl Designer for SeveralMetrics {
    fn fit(&self, problem: &Problem, history: &[Observation], warm: Option<&ModelState>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit_each(problem, history, warm, false, rng)
    }

    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit_each(problem, history, Some(state), true, rng)
    }

    fn learns(&self) -> bool {
        self.inner.learns()
    }

    fn work(&self, space: &SearchSpace) -> Work {
        self.inner.work(space)
    }
}

/// One trial as the acquisition sees it: its objective values, oriented to be maximised, where
/// all were measured, and for each safety metric whether it was safe (`None`: not reported;
/// `false` for an infeasible trial).
#[derive(Clone)]
struct Point {
    assignment: Assignment,
    values: Option<Vec<f64>>,
    safe: Vec<Option<bool>>,
}

impl Point {
    /// Safe on every safety metric it reports (an infeasible trial is not).
    fn is_safe(&self) -> bool {
        self.safe.iter().all(|s| s.unwrap_or(true))
    }
}

/// The models of a study's metrics and the data their acquisition reads.
struct MetricsModel {
    space: SearchSpace,
    /// Objectives first, then safety metrics; `models` in the same order.
    metrics: Vec<MetricSpec>,
    models: Vec<Arc<dyn Model>>,
    /// How many of `metrics` are objectives.
    k: usize,
    /// The completed trials (infeasible ones without values).
    points: Vec<Point>,
    /// Whether feasibility is a metric (the last), so new observations are [`labelled`].
    classify: bool,
}

/// `o` as the acquisition sees it under `metrics` (objectives first, `k` of them).
fn point(metrics: &[MetricSpec], k: usize, o: &Observation) -> Point {
    let (values, safe) = match &o.outcome {
        Outcome::Measured(m) => (
            metrics[..k].iter().map(|s| m.get(&s.id).map(|v| sign(s.goal) * v)).collect(),
            metrics[k..].iter().map(|s| m.get(&s.id).map(|&v| s.is_safe(v))).collect(),
        ),
        // Not a safe trial: it counts against the safe fraction.
        Outcome::Infeasible => (None, vec![Some(false); metrics.len() - k]),
    };
    Point { assignment: o.assignment.clone(), values, safe }
}

fn sign(goal: Goal) -> f64 {
    if goal == Goal::Minimize { -1.0 } else { 1.0 }
}

impl MetricsModel {
    fn new(
        space: SearchSpace,
        metrics: Vec<MetricSpec>,
        models: Vec<Arc<dyn Model>>,
        history: &[Observation],
        classify: bool,
    ) -> MetricsModel {
        let k = metrics.iter().filter(|m| m.safety.is_none()).count();
        let points = history.iter().map(|o| point(&metrics, k, o)).collect();
        MetricsModel { space, metrics, models, k, points, classify }
    }

    /// Each objective's reference (worst seen less 10 % of the range) and range, from the trials
    /// that measured every objective; (0, 1) before there are any.
    fn scales(&self) -> Vec<(f64, f64)> {
        let values: Vec<Vec<f64>> = self.points.iter().filter_map(|p| p.values.clone()).collect();
        let Some(reference) = reference_point(&values) else { return vec![(0.0, 1.0); self.k] };
        reference
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let hi = values.iter().map(|v| v[i]).fold(f64::NEG_INFINITY, f64::max);
                if hi > r { (r, hi - r) } else { (0.0, 1.0) }
            })
            .collect()
    }

    /// Oriented predictions (mean, deviation) of every metric at `points`: `[metric][point]`.
    fn oriented(models: &[Arc<dyn Model>], metrics: &[MetricSpec], points: &[Assignment]) -> Result<Vec<Vec<(f64, f64)>>, FitError> {
        models
            .iter()
            .zip(metrics)
            .map(|(m, spec)| {
                let p = super::context::normal_approximations(m.as_ref(), points)
                    .ok_or_else(|| FitError::Numerical(format!("the model of {} stopped predicting", spec.id)))?;
                Ok(p.into_iter().map(|(centre, sd)| (sign(spec.goal) * centre, sd)).collect())
            })
            .collect()
    }

    /// The acquisition of the next member: its gain (hypervolume for several objectives,
    /// improvement for one) floored by the safe trials, and each safety metric's oriented
    /// threshold with the probability a hard constraint asks (while the metric's observed safe
    /// fraction is below its target).
    fn acquisition(&self, rng: &mut dyn Rng) -> Acquisition {
        let mut gain = if self.k > 1 {
            Gain::Hypervolume(Scalarised::new(self.k, self.scales(), rng))
        } else {
            let (r, s) = self.scales()[0];
            Gain::Improvement { best: None, scale: s, reference: r }
        };
        for p in self.points.iter().filter(|p| p.is_safe()) {
            if let Some(v) = &p.values {
                gain.raise_floor(v);
            }
        }
        Acquisition { gain, safety: self.constraints() }
    }

    /// Each safety metric's oriented threshold and, while its observed safe fraction is below
    /// its target, the probability of safety a candidate needs.
    fn constraints(&self) -> Vec<(f64, Option<f64>)> {
        self.metrics[self.k..]
            .iter()
            .enumerate()
            .map(|(j, m)| {
                let s = m.safety.expect("a safety metric");
                let (safe, judged) = self.safe_count(j);
                let hard = judged > 0 && s.desired_min_safe_fraction > 0.0 && (safe as f64) < s.desired_min_safe_fraction * judged as f64;
                (sign(m.goal) * s.threshold, hard.then(|| s.desired_min_safe_fraction.min(MAX_REQUIRED_SAFETY)))
            })
            .collect()
    }

    /// Safety metric `j`'s safe trials and the trials judged on it.
    fn safe_count(&self, j: usize) -> (usize, usize) {
        let seen = self.points.iter().filter_map(|p| p.safe[j]);
        seen.fold((0, 0), |(safe, judged), s| (safe + usize::from(s), judged + 1))
    }
}

/// What a batch member is chosen by.
struct Acquisition {
    gain: Gain,
    /// Per safety metric: its threshold (oriented: safe above it) and, while the constraint is
    /// hard, the probability of safety a candidate needs.
    safety: Vec<(f64, Option<f64>)>,
}

/// The gain of a candidate's objectives.
enum Gain {
    /// Several objectives: hypervolume scalarisations of the UCB.
    Hypervolume(Scalarised),
    /// One objective: expected improvement over the best safe value (`None`: no safe trial yet,
    /// every candidate gains alike), in units of the objective's observed range.
    Improvement { best: Option<f64>, scale: f64, reference: f64 },
}

impl Gain {
    /// Raises the floor to the (safe) oriented objective values `y`.
    fn raise_floor(&mut self, y: &[f64]) {
        match self {
            Gain::Hypervolume(s) => s.raise_floor(y),
            Gain::Improvement { best, .. } => *best = Some(best.map_or(y[0], |b: f64| b.max(y[0]))),
        }
    }

    /// log of the gain at the objectives' oriented predictions (mean, deviation).
    fn log_gain(&self, objectives: &[(f64, f64)]) -> f64 {
        match self {
            Gain::Hypervolume(s) => {
                let ucb: Vec<f64> = objectives.iter().map(|(m, sd)| m + UCB_COEFFICIENT * sd).collect();
                s.score(&ucb).max(f64::MIN_POSITIVE).ln()
            }
            Gain::Improvement { best: None, .. } => 0.0,
            Gain::Improvement { best: Some(best), scale, reference } => {
                let (mean, sd) = ((objectives[0].0 - reference) / scale, (objectives[0].1 / scale).max(1e-12));
                let z = (mean - (best - reference) / scale) / sd;
                sd.ln() + log_h(z)
            }
        }
    }
}

impl Acquisition {
    /// A candidate's score from every metric's oriented prediction (objectives first): whether
    /// it meets the hard constraints, then the log of its gain times its probability of safety
    /// — or, failing a hard constraint, that log probability alone.
    fn score(&self, predicted: &[(f64, f64)], k: usize) -> (bool, f64) {
        let mut log_safe = 0.0;
        let mut meets = true;
        for ((threshold, required), (mean, sd)) in self.safety.iter().zip(&predicted[k..]) {
            let lp = log_ndtr((mean - threshold) / sd.max(1e-12));
            log_safe += lp;
            if required.is_some_and(|r| lp < r.ln()) {
                meets = false;
            }
        }
        if meets { (true, self.gain.log_gain(&predicted[..k]) + log_safe) } else { (false, log_safe) }
    }

    /// Whether the oriented predictions `predicted` are on the safe side of every threshold.
    fn predicted_safe(&self, predicted: &[f64], k: usize) -> bool {
        self.safety.iter().zip(&predicted[k..]).all(|((t, _), v)| v >= t)
    }
}

/// The acquisition of one batch member: scalarisation directions, each objective's scale and the
/// floor each direction's scalarisation must beat.
struct Scalarised {
    /// `1 / w_i` per direction, flattened `[direction][objective]`.
    inverse_weights: Vec<f64>,
    scales: Vec<(f64, f64)>,
    floors: Vec<f64>,
    k: usize,
}

impl Scalarised {
    fn new(k: usize, scales: Vec<(f64, f64)>, rng: &mut dyn Rng) -> Scalarised {
        let mut inverse_weights = Vec::with_capacity(WEIGHTS * k);
        for _ in 0..WEIGHTS {
            let w: Vec<f64> = (0..k).map(|_| standard_normal(rng).abs().max(1e-12)).collect();
            let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            inverse_weights.extend(w.iter().map(|x| norm / x));
        }
        Scalarised { inverse_weights, scales, floors: vec![0.0; WEIGHTS], k }
    }

    /// `z` in units of each objective's range above its reference.
    fn normalise(&self, y: &[f64]) -> Vec<f64> {
        y.iter().zip(&self.scales).map(|(v, (r, s))| ((v - r) / s).max(0.0)).collect()
    }

    /// `s_w(z)` for direction `j`.
    fn scalarise(&self, j: usize, z: &[f64]) -> f64 {
        let inv = &self.inverse_weights[j * self.k..(j + 1) * self.k];
        z.iter().zip(inv).map(|(z, i)| z * i).fold(f64::INFINITY, f64::min).powi(self.k as i32)
    }

    /// Raises each direction's floor to the scalarised value of `y` (oriented values).
    fn raise_floor(&mut self, y: &[f64]) {
        let z = self.normalise(y);
        for j in 0..WEIGHTS {
            let s = self.scalarise(j, &z);
            if s > self.floors[j] {
                self.floors[j] = s;
            }
        }
    }

    /// The mean hypervolume improvement over the floors of the optimistic value `ucb`, and —
    /// breaking ties where no direction improves — a millionth of its mean scalarisation.
    fn score(&self, ucb: &[f64]) -> f64 {
        let z = self.normalise(ucb);
        let (mut gain, mut level) = (0.0, 0.0);
        for j in 0..WEIGHTS {
            let s = self.scalarise(j, &z);
            gain += (s - self.floors[j]).max(0.0);
            level += s;
        }
        (gain + 1e-6 * level) / WEIGHTS as f64
    }
}

/// `n` Gaussian perturbations of `a` in the unit cube (deviation `sd`), decoded with `fixed`'s
/// values (a context; empty for none).
fn perturb(space: &SearchSpace, a: &Assignment, n: usize, sd: f64, fixed: &Assignment, rng: &mut dyn Rng) -> Vec<Assignment> {
    let u0 = space.encode(a);
    (0..n)
        .map(|_| {
            let u: Vec<f64> = u0.iter().map(|v| (v + sd * standard_normal(rng)).clamp(0.0, 1.0)).collect();
            space.decode_fixed(&u, fixed)
        })
        .collect()
}

/// `n` copies of `a` with a random half of its coordinates within 0.1 of a bound of the unit
/// cube moved onto it (optima on a bound are common: no dropout, the smallest size), decoded
/// with `fixed`'s values.
fn snap(space: &SearchSpace, a: &Assignment, n: usize, fixed: &Assignment, rng: &mut dyn Rng) -> Vec<Assignment> {
    let u0 = space.encode(a);
    (0..n)
        .map(|_| {
            let u: Vec<f64> = u0
                .iter()
                .map(|&v| match v {
                    v if v < 0.1 && rng.random_bool(0.5) => 0.0,
                    v if v > 0.9 && rng.random_bool(0.5) => 1.0,
                    v => v,
                })
                .collect();
            space.decode_fixed(&u, fixed)
        })
        .collect()
}

/// The indices of the non-dominated points among `values` (maximised).
fn front(values: &[(usize, &Vec<f64>)]) -> Vec<usize> {
    let dominates = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y);
    let mut sorted: Vec<&(usize, &Vec<f64>)> = values.iter().collect();
    sorted.sort_by(|a, b| b.1.iter().sum::<f64>().total_cmp(&a.1.iter().sum::<f64>()));
    let mut out: Vec<(usize, &Vec<f64>)> = Vec::new();
    for &&(i, v) in &sorted {
        if !out.iter().any(|(_, f)| dominates(f, v) || *f == v) {
            out.push((i, v));
        }
    }
    out.into_iter().map(|(i, _)| i).collect()
}

/// A candidate's score: whether it meets the hard safety constraints, then its log acquisition.
type Score = (bool, f64);

fn better(a: &Score, b: &Score) -> bool {
    (a.0, a.1) > (b.0, b.1)
}

impl MetricsModel {
    /// The models with `points` observed at their own posterior means (fantasies), or unchanged
    /// where a model cannot observe, and each point's oriented predictions `[point][metric]`.
    fn with_fantasies(&self, models: &[Arc<dyn Model>], points: &[Assignment]) -> Result<(Vec<Arc<dyn Model>>, Vec<Vec<f64>>), FitError> {
        if points.is_empty() {
            return Ok((models.to_vec(), Vec::new()));
        }
        let predicted = Self::oriented(models, &self.metrics, points)?;
        let updated = models
            .iter()
            .zip(&self.metrics)
            .zip(&predicted)
            .map(|((m, spec), p)| {
                let fantasies: Vec<Observation> = points
                    .iter()
                    .zip(p)
                    .map(|(a, (mean, _))| Observation {
                        objective_sd: None,
                        assignment: a.clone(),
                        outcome: Outcome::Measured(BTreeMap::from([(spec.id.clone(), sign(spec.goal) * mean)])),
                    })
                    .collect();
                m.observe(&fantasies).unwrap_or_else(|| m.clone())
            })
            .collect();
        let values = (0..points.len()).map(|j| predicted.iter().map(|p| p[j].0).collect()).collect();
        Ok((updated, values))
    }

    /// Raises the floor to fantasised values predicted safe.
    fn raise_floor(&self, acquisition: &mut Acquisition, predicted: &[Vec<f64>]) {
        for v in predicted {
            if acquisition.predicted_safe(v, self.k) {
                acquisition.gain.raise_floor(&v[..self.k]);
            }
        }
    }

    /// The trials explored around: the front of the safe trials (of all, before any is safe).
    fn anchors(&self) -> Vec<usize> {
        let measured = |safe_only: bool| -> Vec<(usize, &Vec<f64>)> {
            self.points
                .iter()
                .enumerate()
                .filter(|(_, p)| !safe_only || p.is_safe())
                .filter_map(|(i, p)| p.values.as_ref().map(|v| (i, v)))
                .collect()
        };
        let safe = measured(true);
        if safe.is_empty() { front(&measured(false)) } else { front(&safe) }
    }

    /// One batch member: the best-scoring new assignment over the candidate rounds, within
    /// `context` (every candidate takes its values; empty for none).
    #[allow(clippy::too_many_arguments)]
    fn member(
        &self,
        models: &[Arc<dyn Model>],
        acquisition: &Acquisition,
        taken: &HashSet<String>,
        pending: &[Assignment],
        front: &[usize],
        context: &Assignment,
        rng: &mut dyn Rng,
    ) -> Result<Option<Assignment>, FitError> {
        let d = self.space.n_params();
        let seed: u64 = rng.random();
        let offset: u64 = rng.random_range(0..1 << 15);
        let mut candidates: Vec<Assignment> =
            (0..SOBOL_CANDIDATES as u64).map(|i| self.space.decode_fixed(&sobol_point(offset + i, d, seed), context)).collect();
        let mut anchors = front.to_vec();
        if anchors.len() > ANCHORS {
            // A random share of a large front, so every part of it is explored over a study.
            for i in 0..ANCHORS {
                let j = rng.random_range(i..anchors.len());
                anchors.swap(i, j);
            }
            anchors.truncate(ANCHORS);
        }
        for &i in &anchors {
            candidates.extend(perturb(&self.space, &self.points[i].assignment, PER_ANCHOR / 2, 0.05, context, rng));
            candidates.extend(perturb(&self.space, &self.points[i].assignment, PER_ANCHOR / 2, 0.15, context, rng));
        }
        // Each metric's own designer, searching its model (with the in-flight trials as its own
        // fantasies) for that metric alone: an objective's optimum (the front's ends), a safety
        // metric's safest point.
        for m in &self.models {
            let own = m.suggest(pending, 1, rng)?;
            if context.0.is_empty() {
                candidates.extend(own);
            } else {
                candidates.extend(own.iter().map(|a| self.space.decode_fixed(&self.space.encode(a), context)));
            }
        }
        let mut best: Option<(Score, Assignment)> = None;
        let mut scored = self.score(models, acquisition, taken, candidates)?;
        for sd in REFINE_SCALES {
            if let Some(top) = scored.first()
                && best.as_ref().is_none_or(|(s, _)| better(&top.0, s))
            {
                best = Some(top.clone());
            }
            let mut around: Vec<Assignment> =
                scored.iter().take(REFINE_TOP).flat_map(|(_, a)| perturb(&self.space, a, REFINE_PER, sd, context, rng)).collect();
            around.extend(scored.iter().take(REFINE_TOP).flat_map(|(_, a)| snap(&self.space, a, REFINE_PER / 2, context, rng)));
            scored = self.score(models, acquisition, taken, around)?;
        }
        if let Some(top) = scored.into_iter().next()
            && best.as_ref().is_none_or(|(s, _)| better(&top.0, s))
        {
            best = Some(top);
        }
        Ok(best.map(|(_, a)| a))
    }

    /// `candidates` not taken, deduplicated, scored and sorted best first.
    fn score(
        &self,
        models: &[Arc<dyn Model>],
        acquisition: &Acquisition,
        taken: &HashSet<String>,
        candidates: Vec<Assignment>,
    ) -> Result<Vec<(Score, Assignment)>, FitError> {
        let mut seen = HashSet::with_capacity(candidates.len());
        let fresh: Vec<Assignment> = candidates
            .into_iter()
            .filter(|a| {
                let key = a.key();
                !taken.contains(&key) && seen.insert(key)
            })
            .collect();
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let predicted = Self::oriented(models, &self.metrics, &fresh)?;
        let mut row = Vec::with_capacity(self.metrics.len());
        let mut scored: Vec<(Score, Assignment)> = fresh
            .into_iter()
            .enumerate()
            .map(|(j, a)| {
                row.clear();
                row.extend(predicted.iter().map(|p| p[j]));
                (acquisition.score(&row, self.k), a)
            })
            .filter(|(s, _)| !s.1.is_nan())
            .collect();
        scored.sort_by(|a, b| b.0.0.cmp(&a.0.0).then(b.0.1.total_cmp(&a.0.1)));
        Ok(scored)
    }

    fn with_models(&self, models: Vec<Arc<dyn Model>>, points: Vec<Point>) -> Arc<dyn Model> {
        Arc::new(MetricsModel {
            space: self.space.clone(),
            metrics: self.metrics.clone(),
            models,
            k: self.k,
            points,
            classify: self.classify,
        })
    }
}

impl MetricsModel {
    /// Up to `count` members within `context` (empty: the whole space).
    fn suggest_within(
        &self,
        pending: &[Assignment],
        count: usize,
        context: &Assignment,
        rng: &mut dyn Rng,
    ) -> Result<Vec<Assignment>, FitError> {
        let mut acquisition = self.acquisition(rng);
        let (mut models, fantasised) = self.with_fantasies(&self.models, pending)?;
        self.raise_floor(&mut acquisition, &fantasised);
        let mut taken: HashSet<String> =
            self.points.iter().map(|p| p.assignment.key()).chain(pending.iter().map(Assignment::key)).collect();
        let mut in_flight = pending.to_vec();
        // The data's front, once: the members explore around it.
        let anchors = self.anchors();
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            let Some(a) = self.member(&models, &acquisition, &taken, &in_flight, &anchors, context, rng)? else { break };
            taken.insert(a.key());
            if k + 1 < count {
                let (next, values) = self.with_fantasies(&models, std::slice::from_ref(&a))?;
                models = next;
                self.raise_floor(&mut acquisition, &values);
            }
            in_flight.push(a.clone());
            out.push(a);
        }
        Ok(out)
    }
}

impl Model for MetricsModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        self.suggest_within(pending, count, &Assignment::default(), rng)
    }

    /// Its own acquisition (hypervolume, safety), searched within the context.
    fn suggest_in_context(&self, context: &Assignment, pending: &[Assignment], rng: &mut dyn Rng) -> Option<Result<Assignment, FitError>> {
        let found = self.suggest_within(pending, 1, context, rng).map(|mut v| v.pop());
        match found {
            Ok(Some(a)) => Some(Ok(a)),
            Ok(None) => None, // every candidate taken: the generic search decides
            Err(e) => Some(Err(e)),
        }
    }

    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>> {
        let labelled_new: Vec<Observation>;
        let new = if self.classify {
            labelled_new = new.iter().map(labelled).collect();
            &labelled_new[..]
        } else {
            new
        };
        let models = self.models.iter().map(|m| m.observe(new)).collect::<Option<Vec<_>>>()?;
        let mut points = self.points.clone();
        points.extend(new.iter().map(|o| point(&self.metrics, self.k, o)));
        Some(self.with_models(models, points))
    }

    fn refactored(&self) -> Option<Arc<dyn Model>> {
        let models = self.models.iter().map(|m| m.refactored()).collect::<Option<Vec<_>>>()?;
        Some(self.with_models(models, self.points.clone()))
    }

    /// The first objective's prediction (what a one-metric caller reads); every metric's is
    /// [`Model::predict_metrics`].
    fn predict(&self, points: &[Assignment]) -> Option<Vec<Prediction>> {
        self.models[0].predict(points)
    }

    /// Every metric's prediction: the objectives, then the safety metrics.
    fn predict_metrics(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<Prediction>)>> {
        self.models.iter().zip(&self.metrics).map(|(m, s)| Some((s.id.clone(), m.predict(points)?))).collect()
    }

    fn describe(&self) -> serde_json::Value {
        let described = |range: std::ops::Range<usize>| -> serde_json::Map<String, serde_json::Value> {
            range.map(|i| (self.metrics[i].id.clone(), self.models[i].describe())).collect()
        };
        let gain = if self.k > 1 {
            format!(
                "mean of {WEIGHTS} random hypervolume scalarisations of UCB (coefficient {UCB_COEFFICIENT}), floored by the safe trials"
            )
        } else {
            "expected improvement over the best safe trial".to_owned()
        };
        let mut out = serde_json::json!({ "acquisition": gain, "objectives": described(0..self.k) });
        if self.metrics.len() > self.k {
            let constraints: Vec<serde_json::Value> = self.metrics[self.k..]
                .iter()
                .zip(self.constraints())
                .enumerate()
                .map(|(j, (m, (_, required)))| {
                    let (safe, judged) = self.safe_count(j);
                    serde_json::json!({
                        "metricId": m.id,
                        "safeTrials": safe,
                        "judgedTrials": judged,
                        "hard": required.is_some(),
                        "requiredProbability": required,
                    })
                })
                .collect();
            out["acquisition"] = serde_json::Value::String(format!("{gain}, times the probability that every safety metric is safe"));
            out["safety"] = serde_json::Value::Object(described(self.k..self.metrics.len()));
            out["constraints"] = serde_json::Value::Array(constraints);
        }
        out
    }

    fn term_means(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<f64>)>> {
        self.models[0].term_means(points)
    }

    fn memory_bytes(&self) -> usize {
        self.models.iter().map(|m| m.memory_bytes()).sum::<usize>() + self.points.len() * 256
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::designer_for;
    use crate::space::{Domain, ParamSpec, Scale};
    use crate::study::StudySpec;

    /// The unit square, x0 and x1.
    fn unit_square() -> SearchSpace {
        let x = |id: &str| ParamSpec {
            id: id.into(),
            domain: Domain::Double { min: 0.0, max: 1.0 },
            scale: Scale::Linear,
            default: None,
            children: vec![],
        };
        SearchSpace::new(vec![x("x0"), x("x1")]).unwrap()
    }

    fn two_metric_spec(algorithm: &str) -> StudySpec {
        let mut spec = StudySpec::new("f1", Goal::Minimize, unit_square(), algorithm);
        spec.metrics.push(MetricSpec::objective("f2", Goal::Minimize));
        spec
    }

    /// The two objectives of a simple trade-off: f1 = x0, f2 = 1 − x0 + x1² (the front is x1 = 0).
    fn evaluate(a: &Assignment) -> Outcome {
        let v = |id: &str| match a.get(id) {
            Some(crate::trial::ParamValue::Float(x)) => *x,
            _ => panic!("{id} missing"),
        };
        Outcome::Measured(BTreeMap::from([("f1".into(), v("x0")), ("f2".into(), 1.0 - v("x0") + v("x1").powi(2))]))
    }

    #[test]
    fn scalarisations_reward_only_what_adds_hypervolume() {
        let mut rng = StdRng::seed_from_u64(1);
        let mut s = Scalarised::new(2, vec![(0.0, 1.0), (0.0, 1.0)], &mut rng);
        s.raise_floor(&[0.5, 0.5]);
        assert!(s.score(&[0.4, 0.4]) < 1e-6, "a dominated value adds nothing: {}", s.score(&[0.4, 0.4]));
        assert!(s.score(&[0.6, 0.6]) > s.score(&[0.9, 0.1]).max(1e-6), "the dominating point adds most");
        assert!(s.score(&[0.9, 0.4]) > 1e-4, "a new trade-off adds some");
        // Without a floor the mean scalarisation estimates the hypervolume (up to its constant
        // π/4 for k = 2): a unit box and a half box.
        let mut fresh = Scalarised::new(2, vec![(0.0, 1.0), (0.0, 1.0)], &mut rng);
        fresh.floors.fill(0.0);
        let ratio = fresh.score(&[1.0, 0.5]) / fresh.score(&[1.0, 1.0]);
        assert!((ratio - 0.5).abs() < 0.05, "the half box scores half: {ratio}");
    }

    #[test]
    fn fronts_keep_the_non_dominated() {
        let v = [vec![1.0, 0.0], vec![0.5, 0.5], vec![0.4, 0.4], vec![0.0, 1.0], vec![0.5, 0.5]];
        let indexed: Vec<(usize, &Vec<f64>)> = v.iter().enumerate().collect();
        let mut f = front(&indexed);
        f.sort();
        assert_eq!(f, vec![0, 1, 3], "the duplicate counts once, the dominated not at all");
    }

    /// A GP_BANDIT study of two metrics spreads its suggestions along the front (x1 near 0) over
    /// the whole range of x0, where optimising the first metric alone would pile them at x0 = 0.
    #[test]
    fn two_objectives_are_both_optimised() {
        let spec = two_metric_spec("GP_BANDIT");
        let designer = designer_for(&spec).unwrap();
        let problem = Problem { spec, seed: 3, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(3);
        let mut history: Vec<Observation> = Vec::new();
        let mut warm = None;
        while history.len() < 30 {
            let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
            warm = Some(fitted.state);
            let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
            history.push(Observation { objective_sd: None, outcome: evaluate(&a), assignment: a });
        }
        let late: Vec<(f64, f64)> = history[15..]
            .iter()
            .map(|o| match (o.assignment.get("x0"), o.assignment.get("x1")) {
                (Some(crate::trial::ParamValue::Float(a)), Some(crate::trial::ParamValue::Float(b))) => (*a, *b),
                _ => unreachable!(),
            })
            .collect();
        let near_front = late.iter().filter(|(_, x1)| *x1 < 0.15).count();
        assert!(near_front >= 10, "most late suggestions lie near the front: {late:?}");
        let spread =
            late.iter().filter(|(_, x1)| *x1 < 0.15).map(|(x0, _)| *x0).fold((1.0f64, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
        assert!(spread.1 - spread.0 > 0.5, "and spread along it, not at one metric's optimum: {late:?}");
        let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
        let both = fitted.model.predict_metrics(&[history[0].assignment.clone()]).expect("every objective predicts");
        assert_eq!(both.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["f1", "f2"]);
        let batch = fitted.model.suggest(&[], 4, &mut rng).unwrap();
        let keys: HashSet<String> = batch.iter().map(Assignment::key).collect();
        assert_eq!(keys.len(), 4, "a batch has distinct members");
        // Within a context the model's own acquisition answers, and keeps the fixed value.
        let context = Assignment(BTreeMap::from([("x1".to_owned(), crate::trial::ParamValue::Float(0.25))]));
        let within = fitted.model.suggest_in_context(&context, &[], &mut rng).expect("its own search").unwrap();
        assert_eq!(within.get("x1"), Some(&crate::trial::ParamValue::Float(0.25)), "{within:?}");
    }

    /// Maximise f = x0 + x1 with the safety metric g = x0² + x1² at most 0.5: the unconstrained
    /// optimum (1, 1) is unsafe, the safe one is (0.5, 0.5) with f = 1.
    fn safe_spec(desired: f64) -> StudySpec {
        let mut spec = StudySpec::new("f", Goal::Maximize, unit_square(), "GP_BANDIT");
        spec.metrics.push(MetricSpec {
            safety: Some(crate::study::Safety { threshold: 0.5, desired_min_safe_fraction: desired }),
            ..MetricSpec::objective("g", Goal::Minimize)
        });
        spec
    }

    fn constrained(a: &Assignment) -> Outcome {
        let v = |id: &str| match a.get(id) {
            Some(crate::trial::ParamValue::Float(x)) => *x,
            _ => panic!("{id} missing"),
        };
        let (x0, x1) = (v("x0"), v("x1"));
        Outcome::Measured(BTreeMap::from([("f".into(), x0 + x1), ("g".into(), x0 * x0 + x1 * x1)]))
    }

    /// Runs a sequential study of `n` trials; returns the history and the last fitted model.
    fn run(spec: StudySpec, n: usize, seed: u64) -> (Vec<Observation>, Arc<dyn Model>) {
        let designer = designer_for(&spec).unwrap();
        let problem = Problem { spec, seed, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(seed);
        let (mut history, mut warm) = (Vec::new(), None);
        loop {
            let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
            if history.len() == n {
                return (history, fitted.model);
            }
            warm = Some(fitted.state);
            let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
            history.push(Observation { objective_sd: None, outcome: constrained(&a), assignment: a });
        }
    }

    fn values(o: &Observation) -> (f64, f64) {
        match &o.outcome {
            Outcome::Measured(m) => (m["f"], m["g"]),
            Outcome::Infeasible => unreachable!(),
        }
    }

    /// Constrained expected improvement finds the safe optimum (the first objective alone would
    /// climb to the unsafe corner) and then samples both sides of the constraint's boundary; a
    /// target fraction of safe trials keeps it on the safe side.
    #[test]
    fn a_safety_metric_keeps_the_search_safe() {
        let safe_late = |history: &[Observation]| history[20..].iter().filter(|o| values(o).1 <= 0.5).count();
        let (free, model) = run(safe_spec(0.0), 40, 5);
        let best_safe = free.iter().map(values).filter(|(_, g)| *g <= 0.5).map(|(f, _)| f).fold(f64::NEG_INFINITY, f64::max);
        assert!(best_safe > 0.97, "the safe optimum is f = 1: best safe {best_safe}");
        let at_the_boundary = free[20..].iter().filter(|o| (values(o).1 - 0.5).abs() < 0.05).count();
        assert!(at_the_boundary >= 15, "without a target the search hugs the constraint's boundary: {at_the_boundary} of 20");
        let described = model.describe();
        assert_eq!(described["constraints"][0]["metricId"], "g", "{described}");
        assert!(described["safety"]["g"].is_object(), "the safety metric's own model is described: {described}");
        let predicted = model.predict_metrics(&[free[0].assignment.clone()]).unwrap();
        assert_eq!(predicted.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["f", "g"]);
        let (careful, _) = run(safe_spec(0.95), 40, 5);
        let best_careful = careful.iter().map(values).filter(|(_, g)| *g <= 0.5).map(|(f, _)| f).fold(f64::NEG_INFINITY, f64::max);
        assert!(
            safe_late(&careful) >= 15 && safe_late(&careful) > safe_late(&free),
            "a target of 95 % safe trials keeps most late trials safe: {} of 20, against {} without one",
            safe_late(&careful),
            safe_late(&free)
        );
        assert!(best_careful > 0.95, "and still gets close to the safe optimum: {best_careful}");
    }

    /// Before any trial is safe the search looks for safety alone: with every initial trial
    /// unsafe (a threshold only a corner meets), the next suggestions move towards it.
    #[test]
    fn without_a_safe_trial_the_search_seeks_safety() {
        let mut spec = safe_spec(0.0);
        spec.metrics[1].safety = Some(crate::study::Safety { threshold: 0.02, desired_min_safe_fraction: 0.0 });
        let designer = designer_for(&spec).unwrap();
        let problem = Problem { spec, seed: 1, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(1);
        let history: Vec<Observation> = (0..12)
            .map(|i| problem.spec.space.decode(&sobol_point(i, 2, 3)))
            .filter(|a| values(&Observation { objective_sd: None, outcome: constrained(a), assignment: a.clone() }).1 > 0.02)
            .map(|a| Observation { objective_sd: None, outcome: constrained(&a), assignment: a })
            .collect();
        let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
        let next = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
        let (_, g) = values(&Observation { objective_sd: None, outcome: constrained(&next), assignment: next.clone() });
        let nearest = history.iter().map(|o| values(o).1).fold(f64::INFINITY, f64::min);
        assert!(g < nearest, "the suggestion ({next:?}, g = {g}) is safer than every trial so far (g ≥ {nearest})");
    }

    /// A several-metric study's models see the metrics' own values and the whole space unless
    /// its settings say otherwise; AUTO takes the same settings for its candidates.
    #[test]
    fn several_metrics_models_are_unwarped_unless_named() {
        let keys = |spec: &StudySpec| single_objective_settings(spec).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        let spec = safe_spec(0.0);
        assert_eq!(keys(&spec), ["outputWarping", "trustRegion"]);
        let named = spec.clone().with_config(serde_json::json!({"outputWarping": "YEO_JOHNSON"}));
        assert_eq!(keys(&named), ["trustRegion"]);
        let tree = StudySpec { algorithm: "ADD_TREE".into(), ..spec.clone() };
        assert_eq!(keys(&tree), ["outputWarping"]);
        assert!(keys(&StudySpec { algorithm: "RANDOM_SEARCH".into(), ..spec.clone() }).is_empty());
        for algorithm in ["GP_BANDIT", "AUTO", "ADD_GP_UCB"] {
            let spec = StudySpec { algorithm: algorithm.into(), ..safe_spec(0.0) };
            let designer = designer_for(&spec).unwrap_or_else(|e| panic!("{algorithm}: {e}"));
            let problem = Problem { spec, seed: 1, priors: Vec::new() };
            let history: Vec<Observation> = (0..14)
                .map(|i| {
                    let a = Assignment(BTreeMap::from([
                        ("x0".into(), crate::trial::ParamValue::Float((0.13 + 0.37 * i as f64) % 1.0)),
                        ("x1".into(), crate::trial::ParamValue::Float((0.29 + 0.61 * i as f64) % 1.0)),
                    ]));
                    Observation { objective_sd: None, outcome: constrained(&a), assignment: a }
                })
                .collect();
            let described = designer.fit(&problem, &history, None, &mut StdRng::seed_from_u64(1)).unwrap().model.describe().to_string();
            assert!(!described.contains("outputWarp") && !described.contains("trustRegion"), "{algorithm}: {described}");
            // The same study of its first metric alone warps and searches a region.
            let mut one = problem.spec.clone();
            one.metrics.truncate(1);
            let described =
                designer_for(&one).unwrap().fit(&Problem { spec: one, ..problem }, &history, None, &mut StdRng::seed_from_u64(1));
            let described = described.unwrap().model.describe().to_string();
            assert!(described.contains("outputWarp"), "{algorithm}: {described}");
        }
    }

    /// `infeasibleTrials`: PENALTY or CLASSIFIER, refused otherwise and for designers that learn
    /// nothing; with CLASSIFIER, a study whose trials outside the disk x0² + x1² ≤ 0.5 fail
    /// finds the best feasible point (f = x0 + x1 = 1), and its model describes the classifier.
    #[test]
    fn a_classifier_models_infeasible_trials() {
        let with = |algorithm: &str, mode: serde_json::Value| {
            let mut spec = safe_spec(0.0);
            spec.metrics.truncate(1);
            spec.algorithm = algorithm.into();
            spec.with_config(serde_json::json!({ "infeasibleTrials": mode }))
        };
        assert!(designer_for(&with("GP_BANDIT", "PENALTY".into())).is_ok());
        let e = designer_for(&with("GP_BANDIT", "SOMETIMES".into())).err().unwrap().to_string();
        assert!(e.contains("infeasibleTrials") && e.contains("CLASSIFIER"), "{e}");
        let e = designer_for(&with("RANDOM_SEARCH", "CLASSIFIER".into())).err().unwrap().to_string();
        assert!(e.contains("learns nothing"), "{e}");
        // The best feasible value after 40 trials, and the last model.
        // Both on the values as they are and the whole space (the classifier's models are), so
        // the comparison is of the two treatments of infeasible trials alone.
        let best_of = |mode: &str| {
            let mut spec = with("GP_BANDIT", mode.into());
            spec.algorithm_config["outputWarping"] = serde_json::json!("NONE");
            spec.algorithm_config["trustRegion"] = serde_json::json!(false);
            let designer = designer_for(&spec).unwrap();
            let problem = Problem { spec, seed: 2, priors: Vec::new() };
            let mut rng = StdRng::seed_from_u64(2);
            let (mut history, mut warm): (Vec<Observation>, _) = (Vec::new(), None);
            let mut model = None;
            while history.len() < 40 {
                let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
                warm = Some(fitted.state);
                let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
                let (f, g) = values(&Observation { objective_sd: None, outcome: constrained(&a), assignment: a.clone() });
                let outcome = if g <= 0.5 { Outcome::Measured(BTreeMap::from([("f".into(), f)])) } else { Outcome::Infeasible };
                history.push(Observation { objective_sd: None, assignment: a, outcome });
                model = Some(fitted.model);
            }
            let best = history
                .iter()
                .filter_map(|o| match &o.outcome {
                    Outcome::Measured(m) => Some(m["f"]),
                    Outcome::Infeasible => None,
                })
                .fold(f64::NEG_INFINITY, f64::max);
            (best, model.unwrap())
        };
        let (classified, model) = best_of("CLASSIFIER");
        let (penalised, _) = best_of("PENALTY");
        assert!(
            classified > 0.95 && classified >= penalised,
            "the best feasible point is f = 1: {classified} (with the penalty {penalised})"
        );
        let described = model.describe();
        assert!(described["safety"][FEASIBILITY].is_object(), "{described}");
    }

    /// A metric that no trial reports does not hold the study in its initial design: the study
    /// is optimised on the metrics that are reported.
    #[test]
    fn an_unreported_metric_leaves_the_others_optimised() {
        let spec = two_metric_spec("GP_BANDIT");
        let designer = designer_for(&spec).unwrap();
        let problem = Problem { spec, seed: 3, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(4);
        let history: Vec<Observation> = (0..20)
            .map(|i| {
                let a = problem.spec.space.decode(&sobol_point(i, 2, 9));
                let Outcome::Measured(mut m) = evaluate(&a) else { unreachable!() };
                m.remove("f2");
                Observation { objective_sd: None, assignment: a, outcome: Outcome::Measured(m) }
            })
            .collect();
        let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
        assert!(fitted.model.predict(&[history[0].assignment.clone()]).is_some(), "f1's GP answers");
        assert!(fitted.model.predict_metrics(&[]).is_none(), "not a model of both");
    }
}
