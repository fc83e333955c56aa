//! A study's configuration: its metrics, its search space and how it is optimised and stopped.
//! Validated when built, so every `StudySpec` in the system is consistent.

use serde::{Deserialize, Serialize};

use crate::field::FieldError;
use crate::limits::{Limit, Limits, Text};
use crate::space::SearchSpace;
use crate::stopping::spec::StoppingSpec;
use crate::trial::Measurement;

/// Whether a metric is to be maximised or minimised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Goal {
    /// Larger is better.
    Maximize,
    /// Smaller is better.
    Minimize,
}

impl Goal {
    /// Whether `a` is strictly better than `b` under this goal.
    pub fn better(self, a: f64, b: f64) -> bool {
        match self {
            Goal::Maximize => a > b,
            Goal::Minimize => a < b,
        }
    }
}

/// One metric the study measures: an objective, or with [`Safety`] a safety metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// Its id, unique in the study.
    pub id: String,
    /// Its direction; for a safety metric, the safe side of its threshold.
    pub goal: Goal,
    /// The constraint, for a safety metric (`metrics[].safetyConfig`): not optimised, kept on
    /// the safe side of its threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<Safety>,
}

/// A safety metric's constraint, as Vertex's `SafetyMetricConfig` says: a trial is safe when the
/// metric is at least `threshold` (MAXIMIZE) or at most `threshold` (MINIMIZE); a final
/// measurement without the metric counts as safe, as in OSS Vizier.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Safety {
    /// The boundary between safe and unsafe (0 when the client leaves it unset).
    pub threshold: f64,
    /// The fraction of trials, from 0 to 1, the designer should keep safe at any time in the
    /// study, best effort; 0: no target (unsafe trials are avoided only as far as they cost the
    /// objective).
    #[serde(default)]
    pub desired_min_safe_fraction: f64,
}

impl MetricSpec {
    /// An objective `id` towards `goal`.
    pub fn objective(id: &str, goal: Goal) -> MetricSpec {
        MetricSpec { id: id.into(), goal, safety: None }
    }

    /// Whether `value` of this metric is safe (always, for an objective).
    pub fn is_safe(&self, value: f64) -> bool {
        match self.safety {
            None => true,
            Some(s) => match self.goal {
                Goal::Maximize => value >= s.threshold,
                Goal::Minimize => value <= s.threshold,
            },
        }
    }
}

/// How noisy the user says the objective is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ObservationNoise {
    /// Not said.
    #[default]
    Unspecified,
    /// Nearly deterministic: the noise bounded low, and a measured point never proposed again.
    Low,
    /// Noisy: the noise at least 1 % of the variance, a measured point may be proposed again,
    /// EI improves on the best posterior mean, and optimal trials are ranked by the model.
    High,
}

/// Which intermediate measurement completes a trial when no final one is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MeasurementSelection {
    /// The last one reported.
    #[default]
    Last,
    /// The best one for the first metric.
    Best,
}

/// A study's whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudySpec {
    /// The metrics; the first without a safety constraint is the objective the single-objective
    /// designers optimise.
    pub metrics: Vec<MetricSpec>,
    /// The parameters.
    pub space: SearchSpace,
    /// The algorithm's name, one of [`crate::ALGORITHMS`].
    pub algorithm: String,
    /// Settings of the algorithm (`studySpec.algorithmConfig`), checked by its designer.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub algorithm_config: serde_json::Value,
    /// How noisy the objective is.
    #[serde(default)]
    pub observation_noise: ObservationNoise,
    /// Which measurement completes a trial without a final one.
    #[serde(default)]
    pub measurement_selection: MeasurementSelection,
    /// Early stopping, if any.
    #[serde(default)]
    pub stopping: Option<StoppingSpec>,
    /// When the whole study stops, if ever (`studyStoppingConfig`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study_stopping: Option<crate::study_stopping::StudyStoppingConfig>,
    /// How many trials the study expects to run (`algorithmConfig.expectedNumTrials`, a bo
    /// extension): the designers size their initial design to it as to a declared
    /// `maxNumTrials`, but the study does not stop there. For clients that know their budget
    /// without wanting it enforced (Optuna's `study.optimize(n_trials=…)`, run again to go on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_trials: Option<u32>,
    /// Transfer learning: the prior studies the model stands on.
    #[serde(default, skip_serializing_if = "Transfer::is_default")]
    pub transfer: Transfer,
    /// Whether the space grows as trials ask for parameters (`openSearchSpace`, a bo extension
    /// for define-by-run clients; see [`crate::space::grow`]). A trial of an open study may lack
    /// parameters added after it ran ([`SearchSpace::check_partial`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_space: bool,
    /// How many times the space has grown since the study was created (each trial records the
    /// revision it was drawn from).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub space_revision: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// Transfer learning (`transferLearningConfig`, `algorithmConfig.priorStudies`): which earlier
/// studies inform this one's model (see `designer::transfer`). The service fills `priors` when
/// the study is created and never changes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// `disableTransferLearning`: the service chooses no prior study.
    #[serde(default)]
    pub disabled: bool,
    /// Whether the client named the priors (`algorithmConfig.priorStudies`) rather than the
    /// service choosing them.
    #[serde(default)]
    pub explicit: bool,
    /// The prior studies' resource names, the base of the stack first.
    #[serde(default)]
    pub priors: Vec<String>,
}

impl Transfer {
    fn is_default(&self) -> bool {
        *self == Transfer::default()
    }
}

impl StudySpec {
    /// A study of `space` measuring one metric, `metric`, towards `goal`, optimised by
    /// `algorithm` with its default settings; everything else at its default. The one
    /// constructor: a new field gets its default here, and callers set others with the `with_*`
    /// methods or struct update syntax.
    pub fn new(metric: &str, goal: Goal, space: SearchSpace, algorithm: &str) -> StudySpec {
        StudySpec {
            metrics: vec![MetricSpec::objective(metric, goal)],
            space,
            algorithm: algorithm.into(),
            algorithm_config: serde_json::Value::Null,
            observation_noise: ObservationNoise::default(),
            measurement_selection: MeasurementSelection::default(),
            stopping: None,
            study_stopping: None,
            expected_trials: None,
            transfer: Transfer::default(),
            open_space: false,
            space_revision: 0,
        }
    }

    /// Whether `other` asks for the same study as this one: equal but for the prior studies the
    /// service chose (which depend on when it was asked) and the trials it expects (a script run
    /// again with another `n_trials` takes the study up as it was made) — and, when both are open, but for what
    /// the space has grown since: every parameter `other` names is in this space with its domain
    /// and scale (a second worker of a define-by-run script asks for the study as it began).
    pub fn same_request(&self, other: &StudySpec) -> bool {
        let grown = self.open_space && other.open_space;
        let asked = |s: &StudySpec| {
            let mut s = s.clone();
            if !s.transfer.explicit {
                s.transfer.priors.clear();
            }
            s.expected_trials = None;
            if grown {
                s.space = SearchSpace::empty();
                s.space_revision = 0;
            }
            s
        };
        let contained =
            || other.space.params().iter().all(|p| self.space.param(&p.id).is_some_and(|q| q.domain == p.domain && q.scale == p.scale));
        asked(self) == asked(other) && (!grown || contained())
    }

    /// Whether trial parameters may leave out active parameters: in an open study, a trial of an
    /// earlier revision lacks what was added after it.
    pub fn check_assignment(&self, assignment: &crate::trial::Assignment) -> Result<(), FieldError> {
        if self.open_space { self.space.check_partial(assignment) } else { self.space.check(assignment) }
    }

    /// The same study with `algorithmConfig` `config`.
    pub fn with_config(self, config: serde_json::Value) -> StudySpec {
        StudySpec { algorithm_config: config, ..self }
    }

    /// Checks what the space does not: at least one metric and at most `limits.metrics`, metric
    /// ids valid (tokens within the id length) and unique, at least one objective (a metric
    /// without a safety constraint), and each safety constraint a finite threshold with a target
    /// fraction from 0 to 1.
    pub fn validate_metrics(metrics: &[MetricSpec], limits: &Limits) -> Result<(), FieldError> {
        if metrics.is_empty() {
            return Err(FieldError::new("metrics", "a study needs at least one metric"));
        }
        if metrics.iter().all(|m| m.safety.is_some()) {
            return Err(FieldError::new("metrics", "a study needs at least one objective: a metric without safetyConfig"));
        }
        limits.check(Limit::Metrics, metrics.len()).map_err(|o| FieldError::over("metrics", o))?;
        let mut seen = std::collections::HashSet::with_capacity(metrics.len());
        for (i, m) in metrics.iter().enumerate() {
            let path = format!("metrics[{i}].metricId");
            if m.id.is_empty() {
                return Err(FieldError::new(path, "a metric id must not be empty"));
            }
            limits.check_text(&m.id, Text::Token).map_err(|e| FieldError::text(&path, e))?;
            if !seen.insert(m.id.as_str()) {
                return Err(FieldError::new(path, format!("metric id {:?} appears twice", m.id)));
            }
            if let Some(s) = m.safety {
                if !s.threshold.is_finite() {
                    return Err(FieldError::new(format!("metrics[{i}].safetyConfig.safetyThreshold"), "must be a finite number"));
                }
                if !(0.0..=1.0).contains(&s.desired_min_safe_fraction) {
                    return Err(FieldError::new(
                        format!("metrics[{i}].safetyConfig.desiredMinSafeTrialsFraction"),
                        format!("{} is not a fraction from 0 to 1", s.desired_min_safe_fraction),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The metrics to optimise: those without a safety constraint, in the study's order.
    pub fn objectives(&self) -> impl Iterator<Item = &MetricSpec> {
        self.metrics.iter().filter(|m| m.safety.is_none())
    }

    /// The safety metrics, in the study's order.
    pub fn safety_metrics(&self) -> impl Iterator<Item = &MetricSpec> {
        self.metrics.iter().filter(|m| m.safety.is_some())
    }

    /// Whether a trial whose final measurement holds `metrics` is safe: every safety metric it
    /// reports is on the safe side of its threshold (one it does not report counts as safe).
    pub fn is_safe(&self, metrics: &std::collections::BTreeMap<String, f64>) -> bool {
        self.safety_metrics().all(|m| metrics.get(&m.id).is_none_or(|&v| m.is_safe(v)))
    }

    /// The metric spec with id `id`.
    pub fn metric(&self, id: &str) -> Option<&MetricSpec> {
        self.metrics.iter().find(|m| m.id == id)
    }

    /// The objective: the first metric without a safety constraint (validation guarantees one).
    pub fn objective(&self) -> &MetricSpec {
        self.objectives().next().unwrap_or(&self.metrics[0])
    }

    /// The measurement that completes a trial with no final measurement given, per
    /// [`MeasurementSelection`]; `None` when there is none to choose from.
    pub fn select_measurement<'a>(&self, measurements: &'a [Measurement]) -> Option<&'a Measurement> {
        match self.measurement_selection {
            MeasurementSelection::Last => measurements.last(),
            MeasurementSelection::Best => {
                let objective = self.objective();
                let mut best: Option<&Measurement> = None;
                for m in measurements {
                    let Some(&v) = m.metrics.get(&objective.id) else { continue };
                    let better = match best.and_then(|b| b.metrics.get(&objective.id)) {
                        None => true,
                        Some(&b) => objective.goal.better(v, b),
                    };
                    if better {
                        best = Some(m);
                    }
                }
                best.or(measurements.last())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::designer::testing::fixtures;

    fn spec(goal: Goal, selection: MeasurementSelection) -> StudySpec {
        StudySpec { measurement_selection: selection, ..StudySpec::new("m", goal, fixtures::optimizer_tree(), "RANDOM_SEARCH") }
    }

    fn at(step: i64, v: f64) -> Measurement {
        Measurement { step_count: step, elapsed_secs: 0.0, metrics: BTreeMap::from([("m".to_owned(), v)]) }
    }

    #[test]
    fn measurement_selection_takes_the_last_or_the_best_by_goal() {
        let ms = [at(1, 0.2), at(2, 0.9), at(3, 0.5)];
        assert_eq!(spec(Goal::Maximize, MeasurementSelection::Last).select_measurement(&ms).unwrap().step_count, 3);
        assert_eq!(spec(Goal::Maximize, MeasurementSelection::Best).select_measurement(&ms).unwrap().step_count, 2);
        assert_eq!(spec(Goal::Minimize, MeasurementSelection::Best).select_measurement(&ms).unwrap().step_count, 1);
        assert!(spec(Goal::Maximize, MeasurementSelection::Best).select_measurement(&[]).is_none());
    }

    #[test]
    fn metrics_need_unique_ids_without_whitespace() {
        let m = |id: &str| MetricSpec::objective(id, Goal::Maximize);
        let limits = Limits { metrics: 2, ..Limits::default() };
        assert!(StudySpec::validate_metrics(&[], &limits).is_err());
        assert!(StudySpec::validate_metrics(&[m("a b")], &limits).is_err());
        assert!(StudySpec::validate_metrics(&[m("a\0")], &limits).is_err());
        assert_eq!(StudySpec::validate_metrics(&[m("a"), m("a")], &limits).unwrap_err().path, "metrics[1].metricId");
        assert!(StudySpec::validate_metrics(&[m("a"), m("b")], &limits).is_ok());
        assert_eq!(StudySpec::validate_metrics(&[m("a"), m("b"), m("c")], &limits).unwrap_err().limit, Some(Limit::Metrics));
    }
}
