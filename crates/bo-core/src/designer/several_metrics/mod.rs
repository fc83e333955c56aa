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
//! The designer wrapper and its settings are here; `model.rs` holds the metrics' models,
//! `acquisition.rs` what a candidate is scored by, `search.rs` how members are found.
//!
//! Must not: know which designer it wraps, or read anything of the study but its metrics and
//! space.

mod acquisition;
mod model;
mod search;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{ConfigError, Designer, FitError, Fitted, ModelState, Problem, Work};
use crate::space::SearchSpace;
use crate::study::{Goal, MetricSpec, StudySpec};
use crate::trial::{Observation, Outcome};
use model::MetricsModel;

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
            let predicts = f.model.predictor().and_then(|p| p.predict(&[])).is_some();
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
