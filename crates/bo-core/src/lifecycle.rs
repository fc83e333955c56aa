//! The rules of a trial's life — complete it once (with the measurement the study selects when
//! none is given), stop it, add a measurement within the limits — as methods of [`Trial`] that
//! refuse with a precise [`TrialError`]. The store applies them inside its transaction, so every
//! caller meets the same rules; this module holds no data of its own.

use crate::limits::{Limit, Limits, OverLimit};
use crate::study::StudySpec;
use crate::trial::{Measurement, Trial, TrialState};

/// How a trial is to be completed.
#[derive(Clone, Debug, PartialEq)]
pub enum Completion {
    /// INFEASIBLE, for this reason.
    Infeasible(String),
    /// SUCCEEDED with this final measurement.
    Measured(Measurement),
    /// SUCCEEDED with the measurement the study's `measurementSelectionType` chooses.
    Selected,
}

/// Why a trial cannot change as asked: the rules of a trial's life, which every service applies
/// the same way (Vertex's FAILED_PRECONDITION, or a limit).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TrialError {
    /// A completed trial is completed again.
    #[error("trial {id} is already {}; a trial is completed once", state.as_str())]
    AlreadyCompleted {
        /// The trial.
        id: i64,
        /// Its state.
        state: TrialState,
    },
    /// Completed without a final measurement, and none to choose from.
    #[error("trial {id} has no measurement: send finalMeasurement, or trialInfeasible")]
    NoMeasurement {
        /// The trial.
        id: i64,
    },
    /// The measurement chosen to complete it lacks one of the study's metrics.
    #[error("the measurement chosen by measurementSelectionType lacks metric {}; send finalMeasurement", serde_json::Value::from(metric.as_str()))]
    MissingMetric {
        /// The metric.
        metric: String,
    },
    /// A completed trial is given a measurement.
    #[error("trial {id} is {}: it takes no more measurements", state.as_str())]
    Closed {
        /// The trial.
        id: i64,
        /// Its state.
        state: TrialState,
    },
    /// A completed trial is stopped.
    #[error("trial {id} is already {}", state.as_str())]
    AlreadyStopped {
        /// The trial.
        id: i64,
        /// Its state.
        state: TrialState,
    },
    /// One measurement more than the limit allows.
    #[error("{0}")]
    OverLimit(OverLimit),
    /// A trial is added to a COMPLETED study (stopped, or done by its own rules).
    #[error("the study is COMPLETED: it takes no new trials (its trials can still be measured and completed)")]
    StudyCompleted,
    /// A completed trial is given parameters.
    #[error("trial {id} is {}: parameters are added to a trial while it runs", state.as_str())]
    ParametersClosed {
        /// The trial.
        id: i64,
        /// Its state.
        state: TrialState,
    },
}

impl Trial {
    /// Completes the trial at `now_ms` as `completion` asks, under `spec`'s measurement
    /// selection; a trial is completed once.
    pub fn complete(&mut self, spec: &StudySpec, completion: Completion, now_ms: i64) -> Result<(), TrialError> {
        if self.state.is_completed() {
            return Err(TrialError::AlreadyCompleted { id: self.id, state: self.state });
        }
        match completion {
            Completion::Infeasible(reason) => {
                self.state = TrialState::Infeasible;
                self.infeasible_reason = reason;
            }
            Completion::Measured(m) => {
                self.state = TrialState::Succeeded;
                self.final_measurement = Some(m);
            }
            Completion::Selected => {
                let m = spec.select_measurement(&self.measurements).cloned().ok_or(TrialError::NoMeasurement { id: self.id })?;
                if let Some(missing) = spec.metrics.iter().find(|s| !m.metrics.contains_key(&s.id)) {
                    return Err(TrialError::MissingMetric { metric: missing.id.clone() });
                }
                self.state = TrialState::Succeeded;
                self.final_measurement = Some(m);
            }
        }
        self.end_time_ms = Some(now_ms);
        Ok(())
    }

    /// Asks the trial to stop early at `now_ms`: ACTIVE or REQUESTED becomes STOPPING, its stop
    /// time set (stopping a STOPPING trial changes nothing); a completed trial cannot stop.
    pub fn stop(&mut self, now_ms: i64) -> Result<(), TrialError> {
        if self.state.is_completed() {
            return Err(TrialError::AlreadyStopped { id: self.id, state: self.state });
        }
        self.state = TrialState::Stopping;
        self.stop_time_ms.get_or_insert(now_ms);
        Ok(())
    }

    /// Appends an intermediate measurement, within `limits`; a completed trial takes none.
    pub fn add_measurement(&mut self, m: Measurement, limits: &Limits) -> Result<(), TrialError> {
        if self.state.is_completed() {
            return Err(TrialError::Closed { id: self.id, state: self.state });
        }
        limits.check(Limit::Measurements, self.measurements.len() + 1).map_err(TrialError::OverLimit)?;
        self.measurements.push(m);
        Ok(())
    }

    /// Gives a running trial of an open study the values of parameters it did not hold (those
    /// it holds keep theirs: asking twice changes nothing), recording the space's `revision`;
    /// whether anything changed. The caller has checked the values against the space.
    pub fn add_parameters(&mut self, values: &crate::trial::Assignment, revision: i64) -> Result<bool, TrialError> {
        if self.state.is_completed() {
            return Err(TrialError::ParametersClosed { id: self.id, state: self.state });
        }
        let mut changed = false;
        for (id, v) in values.0.iter() {
            if self.assignment.get(id).is_none() {
                self.assignment.insert(id.clone(), v.clone());
                changed = true;
            }
        }
        if changed {
            self.space_revision = self.space_revision.max(revision);
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::designer::testing::{fixtures, study};
    use crate::study::MeasurementSelection;
    use crate::trial::Assignment;

    fn trial(state: TrialState, measured: &[f64]) -> Trial {
        Trial {
            state,
            measurements: measured
                .iter()
                .map(|v| Measurement { metrics: BTreeMap::from([("loss".to_owned(), *v)]), ..Default::default() })
                .collect(),
            ..Trial::new(7, Assignment::default())
        }
    }

    #[test]
    fn a_trial_is_completed_once_with_the_measurement_asked_for() {
        let spec = study(fixtures::unit_cube(1), "RANDOM_SEARCH", serde_json::Value::Null);
        let mut t = trial(TrialState::Active, &[0.3, 0.1, 0.2]);
        t.complete(&spec, Completion::Selected, 9).unwrap();
        assert_eq!((t.state, t.end_time_ms), (TrialState::Succeeded, Some(9)));
        assert_eq!(t.final_measurement.as_ref().unwrap().metrics["loss"], 0.2, "the last, by default");
        let again = t.complete(&spec, Completion::Infeasible("late".into()), 10).unwrap_err();
        assert_eq!(again, TrialError::AlreadyCompleted { id: 7, state: TrialState::Succeeded });
        assert_eq!(again.to_string(), "trial 7 is already SUCCEEDED; a trial is completed once");
        assert_eq!(t.end_time_ms, Some(9), "a refused change changes nothing");

        let best = StudySpec { measurement_selection: MeasurementSelection::Best, ..spec.clone() };
        let mut t = trial(TrialState::Stopping, &[0.3, 0.1, 0.2]);
        t.complete(&best, Completion::Selected, 9).unwrap();
        assert_eq!(t.final_measurement.unwrap().metrics["loss"], 0.1, "the best for a minimised loss");

        let mut t = trial(TrialState::Active, &[]);
        assert_eq!(t.complete(&spec, Completion::Selected, 9).unwrap_err(), TrialError::NoMeasurement { id: 7 });
        let mut t = trial(TrialState::Active, &[]);
        t.measurements.push(Measurement::default());
        assert_eq!(t.complete(&spec, Completion::Selected, 9).unwrap_err(), TrialError::MissingMetric { metric: "loss".into() });
        t.complete(&spec, Completion::Infeasible("diverged".into()), 9).unwrap();
        assert_eq!((t.state, t.infeasible_reason.as_str()), (TrialState::Infeasible, "diverged"));
    }

    #[test]
    fn a_completed_trial_neither_stops_nor_takes_measurements() {
        let limits = Limits { measurements: 2, ..Limits::default() };
        let mut t = trial(TrialState::Active, &[0.5]);
        t.add_measurement(Measurement::default(), &limits).unwrap();
        let over = t.add_measurement(Measurement::default(), &limits).unwrap_err();
        assert!(matches!(over, TrialError::OverLimit(o) if o.limit == Limit::Measurements && o.found == 3), "{over:?}");
        assert_eq!(t.measurements.len(), 2);
        t.stop(5).unwrap();
        assert_eq!(t.state, TrialState::Stopping);
        t.stop(6).unwrap();
        assert_eq!(t.stop_time_ms, Some(5), "the first stop's time stays");
        t.state = TrialState::Infeasible;
        assert_eq!(t.stop(7).unwrap_err(), TrialError::AlreadyStopped { id: 7, state: TrialState::Infeasible });
        assert_eq!(
            t.add_measurement(Measurement::default(), &limits).unwrap_err().to_string(),
            "trial 7 is INFEASIBLE: it takes no more measurements"
        );
    }
}
