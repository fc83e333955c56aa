//! `successiveHalvingStoppingSpec` (a bo extension): asynchronous successive halving, the
//! promotion rule of ASHA (Li et al., "A System for Massively Parallel Hyperparameter Tuning",
//! MLSys 2020, Algorithm 2) read as a stopping rule, as Ray Tune's `AsyncHyperBandScheduler`
//! reads it.
//!
//! Rungs sit at `r_k = minStepCount · η^k` below `maxStepCount` (η the `reductionFactor`). A
//! trial is judged at the highest rung its latest measurement has reached: its value there (the
//! objective of its first measurement at or past the rung) goes on when it is at least as good as
//! the `1 − 1/η` quantile of the values the study's other trials had at that rung — every trial
//! that reached it, running, stopped or completed — and stops otherwise. With no other trial at
//! the rung it goes on. There is no barrier: a trial is judged against whoever has reached its
//! rung so far, so any number of workers may run at once. A trial past the last rung is never
//! stopped.
//!
//! Unlike Ray's scheduler, which judges a trial once per rung, a trial checked again before it
//! reaches its next rung is judged again, against everyone at the rung by then: the decision
//! depends on the measurements alone, not on when checks happened to come.
//!
//! Must not do: I/O. A service reads the other trials' values at the rung from its database
//! ([`Check::Rung`](super::Check::Rung)); [`values_at`] does it from trials in memory.

use serde::{Deserialize, Serialize};

use super::{StoppingDecision, position};
use crate::space::SpaceError;
use crate::study::MetricSpec;
use crate::trial::Trial;

/// The reduction factor when none is given: a third goes on at each rung (Li et al. 2018).
pub const DEFAULT_REDUCTION_FACTOR: f64 = 3.0;
/// The lowest rung when none is given.
pub const DEFAULT_MIN_STEP: f64 = 1.0;
/// The most rungs a study may have: more would judge a trial at steps too close to tell apart.
pub const MAX_RUNGS: usize = 64;

/// The rule's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuccessiveHalving {
    /// The lowest rung (`minStepCount`): a trial is not judged before it.
    pub min_step_count: f64,
    /// The full training (`maxStepCount`): rungs sit below it, and a trial at it is not judged.
    pub max_step_count: f64,
    /// The factor between rungs, and the inverse of the share that goes on at each (`η`).
    pub reduction_factor: f64,
    /// Positions are elapsed seconds instead of steps.
    #[serde(default)]
    pub use_elapsed_duration: bool,
}

impl SuccessiveHalving {
    /// Checks the settings; errors name the field under `path`.
    pub fn check(&self, path: &str) -> Result<(), SpaceError> {
        let (min, max, eta) = (self.min_step_count, self.max_step_count, self.reduction_factor);
        if !(min.is_finite() && min > 0.0) {
            return Err(SpaceError::new(format!("{path}.minStepCount"), format!("must be positive, got {min}")));
        }
        if !(max.is_finite() && max > min) {
            return Err(SpaceError::new(
                format!("{path}.maxStepCount"),
                format!("is required and must be above minStepCount ({min}), got {max}"),
            ));
        }
        if !(1.5..=100.0).contains(&eta) {
            return Err(SpaceError::new(format!("{path}.reductionFactor"), format!("must be from 1.5 to 100, got {eta}")));
        }
        if self.rungs().len() > MAX_RUNGS {
            return Err(SpaceError::new(
                format!("{path}.reductionFactor"),
                format!("gives more than {MAX_RUNGS} rungs from {min} to {max}; raise it or minStepCount"),
            ));
        }
        Ok(())
    }

    /// The rungs, lowest first: `min · η^k` below the maximum (at most [`MAX_RUNGS`] + 1).
    pub fn rungs(&self) -> Vec<f64> {
        let mut rungs = Vec::new();
        let mut r = self.min_step_count;
        while r < self.max_step_count && rungs.len() <= MAX_RUNGS {
            rungs.push(r);
            r *= self.reduction_factor;
        }
        rungs
    }

    /// The highest rung at or below `at`, if `at` is below the maximum.
    pub fn rung_at(&self, at: f64) -> Option<f64> {
        if at >= self.max_step_count {
            return None;
        }
        self.rungs().into_iter().take_while(|r| *r <= at).last()
    }
}

/// A trial's value at `rung`: the objective of its first measurement (by position, then arrival)
/// at or past it; `None` if it has not reached the rung.
pub fn value_at(objective: &MetricSpec, trial: &Trial, rung: f64, use_elapsed: bool) -> Option<f64> {
    trial
        .measurements
        .iter()
        .filter(|m| position(m, use_elapsed) >= rung)
        .filter_map(|m| m.metrics.get(&objective.id).map(|v| (position(m, use_elapsed), *v)))
        .reduce(|a, b| if b.0 < a.0 { b } else { a })
        .map(|(_, v)| v)
}

/// The values the trials among `others` (all but `except`) had at `rung`.
pub fn values_at(objective: &MetricSpec, others: &[Trial], except: i64, rung: f64, use_elapsed: bool) -> Vec<f64> {
    others.iter().filter(|t| t.id != except).filter_map(|t| value_at(objective, t, rung, use_elapsed)).collect()
}

/// The rule for a trial whose value at `rung` is `value`, given the other trials' values there:
/// stop when it is worse than their `1 − 1/η` quantile (linear between order statistics).
pub fn rung_decision(objective: &MetricSpec, rule: &SuccessiveHalving, rung: f64, value: f64, mut others: Vec<f64>) -> StoppingDecision {
    others.retain(|v| v.is_finite());
    if others.is_empty() {
        return StoppingDecision::go_on(format!("the first trial to reach the rung at {rung}"));
    }
    let keep = 1.0 / rule.reduction_factor;
    // Larger is better once a minimised objective is negated: the cutoff is the value that the
    // best `keep` share of the others reach.
    let sign = if objective.goal.better(1.0, 0.0) { 1.0 } else { -1.0 };
    let mut oriented: Vec<f64> = others.iter().map(|v| sign * v).collect();
    oriented.sort_by(f64::total_cmp);
    let cutoff = sign * quantile(&oriented, 1.0 - keep);
    let should_stop = objective.goal.better(cutoff, value);
    let n = others.len();
    StoppingDecision {
        should_stop,
        reason: format!(
            "value {value} at the rung at {rung} against {cutoff}, the best {:.0} % of the {n} other trials that reached it",
            100.0 * keep
        ),
        last_measurement: None,
    }
}

/// The `q` quantile of sorted `v` (non-empty), linear between order statistics (numpy's default).
fn quantile(v: &[f64], q: f64) -> f64 {
    let h = q * (v.len() - 1) as f64;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopping::curves::testing::trial;
    use crate::study::Goal;
    use crate::trial::TrialState;

    fn rule() -> SuccessiveHalving {
        SuccessiveHalving { min_step_count: 1.0, max_step_count: 27.0, reduction_factor: 3.0, use_elapsed_duration: false }
    }

    #[test]
    fn rungs_grow_by_the_factor_below_the_maximum() {
        assert_eq!(rule().rungs(), vec![1.0, 3.0, 9.0]);
        assert_eq!(rule().rung_at(0.5), None);
        assert_eq!(rule().rung_at(4.0), Some(3.0));
        assert_eq!(rule().rung_at(26.0), Some(9.0));
        assert_eq!(rule().rung_at(27.0), None);
    }

    #[test]
    fn a_third_goes_on_at_each_rung() {
        let loss = MetricSpec::objective("loss", Goal::Minimize);
        // Others at rung 3: losses 0.1..0.9; the best third are ≤ 0.37 (the 1/3 quantile).
        let others: Vec<f64> = (1..=9).map(|k| k as f64 / 10.0).collect();
        assert!(!rung_decision(&loss, &rule(), 3.0, 0.3, others.clone()).should_stop);
        assert!(rung_decision(&loss, &rule(), 3.0, 0.4, others.clone()).should_stop);
        // Maximised: the best third are ≥ 0.63.
        let acc = MetricSpec::objective("loss", Goal::Maximize);
        assert!(!rung_decision(&acc, &rule(), 3.0, 0.7, others.clone()).should_stop);
        assert!(rung_decision(&acc, &rule(), 3.0, 0.6, others).should_stop);
        // The first at a rung goes on; one other sets the bar.
        assert!(!rung_decision(&loss, &rule(), 3.0, 9.0, vec![]).should_stop);
        assert!(rung_decision(&loss, &rule(), 3.0, 0.5, vec![0.4]).should_stop);
    }

    #[test]
    fn a_trial_is_judged_at_the_first_measurement_past_its_highest_rung() {
        let loss = MetricSpec::objective("acc", Goal::Minimize);
        let t = trial(1, TrialState::Active, &[(1, 0.9), (2, 0.8), (4, 0.5), (5, 0.1)]);
        assert_eq!(value_at(&loss, &t, 3.0, false), Some(0.5));
        assert_eq!(value_at(&loss, &t, 9.0, false), None);
        let others = vec![t.clone(), trial(2, TrialState::Succeeded, &[(3, 0.2)]), trial(3, TrialState::Active, &[(1, 0.1)])];
        assert_eq!(values_at(&loss, &others, 1, 3.0, false), vec![0.2]);
    }

    #[test]
    fn settings_are_checked_and_name_the_field() {
        let bad = |f: fn(&mut SuccessiveHalving)| {
            let mut r = rule();
            f(&mut r);
            r.check("studySpec.successiveHalvingStoppingSpec").unwrap_err().to_string()
        };
        assert!(bad(|r| r.min_step_count = 0.0).contains("minStepCount"));
        assert!(bad(|r| r.max_step_count = 1.0).contains("maxStepCount"));
        assert!(bad(|r| r.reduction_factor = 1.0).contains("reductionFactor"));
        assert!(bad(|r| r.reduction_factor = f64::NAN).contains("reductionFactor"));
        assert!(bad(|r| (r.max_step_count, r.reduction_factor) = (1e30, 1.5)).contains("rungs"));
        assert!(rule().check("x").is_ok());
    }
}
