//! A study's configuration: its metrics, its search space and how it is optimised and stopped.
//! Validated when built, so every `StudySpec` in the system is consistent.

use serde::{Deserialize, Serialize};

use crate::space::{SearchSpace, SpaceError};
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

/// One metric the study measures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricSpec {
    /// Its id, unique in the study.
    pub id: String,
    /// Its direction.
    pub goal: Goal,
}

/// How noisy the user says the objective is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ObservationNoise {
    /// Not said.
    #[default]
    Unspecified,
    /// Nearly deterministic.
    Low,
    /// Noisy.
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

/// Automated early stopping of unpromising trials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoppingSpec {
    /// The median stopping rule (Golovin et al., 2017), measured by step count or elapsed time.
    Median {
        /// Compare at equal elapsed time instead of equal step count.
        use_elapsed_duration: bool,
    },
}

/// A study's whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudySpec {
    /// The metrics; the first is the objective the single-objective designers optimise.
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
}

impl StudySpec {
    /// Checks what the space does not: at least one metric, metric ids valid and unique.
    pub fn validate_metrics(metrics: &[MetricSpec]) -> Result<(), SpaceError> {
        if metrics.is_empty() {
            return Err(SpaceError::new("metrics", "a study needs at least one metric"));
        }
        for (i, m) in metrics.iter().enumerate() {
            let path = format!("metrics[{i}].metricId");
            if m.id.is_empty() || m.id.chars().any(char::is_whitespace) {
                return Err(SpaceError::new(path, format!("metric id {:?} must be non-empty without whitespace", m.id)));
            }
            if metrics[..i].iter().any(|o| o.id == m.id) {
                return Err(SpaceError::new(path, format!("metric id {:?} appears twice", m.id)));
            }
        }
        Ok(())
    }

    /// The metric spec with id `id`.
    pub fn metric(&self, id: &str) -> Option<&MetricSpec> {
        self.metrics.iter().find(|m| m.id == id)
    }

    /// The objective: the first metric.
    pub fn objective(&self) -> &MetricSpec {
        &self.metrics[0]
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
