//! What a trial row stores apart from its JSON, for SQL to read: the objective's value and
//! whether the trial is unsafe, derived from a study's spec.
//!
//! Must not do: I/O.

use bo_core::{MetricSpec, StudySpec, Trial};

use crate::error::StoreError;

/// What a trial row (and each measurement) stores apart from its JSON, for SQL to read: the
/// study's objective metric's value, and whether the trial is unsafe under its safety metrics.
pub(crate) struct Apart {
    /// The study's objective metric (its first without a safety constraint).
    pub metric: String,
    /// Its safety metrics.
    pub safety: Vec<MetricSpec>,
}

impl Apart {
    /// What the trial rows of a study of `spec` store apart.
    pub fn of(spec: &StudySpec) -> Apart {
        Apart { metric: spec.objective().id.clone(), safety: spec.safety_metrics().cloned().collect() }
    }

    /// The study's safety metrics as stored in `studies.safety_metrics`.
    pub fn safety_json(spec: &StudySpec) -> Result<String, StoreError> {
        Ok(serde_json::to_string(&spec.safety_metrics().collect::<Vec<_>>())?)
    }

    /// Whether `trial`'s final measurement is on the wrong side of a safety threshold.
    pub fn is_unsafe(&self, trial: &Trial) -> bool {
        trial.final_measurement.as_ref().is_some_and(|m| self.safety.iter().any(|s| m.metrics.get(&s.id).is_some_and(|&v| !s.is_safe(v))))
    }
}
