//! The median stopping rule of Golovin et al., "Google Vizier: A Service for Black-Box
//! Optimization" (KDD 2017, §3.2.2).
//!
//! A running trial is stopped at step `s` (its latest measurement) when its best objective value
//! up to `s` is strictly worse than the median, over the completed trials, of each one's running
//! average of the objective up to `s`. Only completed trials with at least one measurement at or
//! before `s` take part, and the rule waits for [`MIN_COMPLETED`](super::spec::MIN_COMPLETED) of them. With
//! `use_elapsed_duration` the same comparison is made on elapsed seconds instead of steps. With
//! [`MedianOf::ValueAtPosition`] (bo's extension, Optuna's `MedianPruner`) the median is of each
//! completed trial's value at `s` itself, among those measured there and not stopped early (as
//! Optuna leaves its pruned trials out).

use super::spec::MedianOf;
use super::{StoppingDecision, position, progress};
use crate::study::MetricSpec;
use crate::trial::{Trial, TrialState};

/// The median of the running averages (up to a position) of the completed trials that reached
/// it, when at least `min_completed` did: what a trial's best value must not be worse than.
/// Linear in the number of averages.
pub fn median_threshold(mut averages: Vec<f64>, min_completed: usize) -> Option<f64> {
    if averages.is_empty() || averages.len() < min_completed {
        return None;
    }
    let n = averages.len();
    let (_, upper, _) = averages.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    Some(if n % 2 == 1 {
        upper
    } else {
        let lower = averages[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lower + upper)
    })
}

/// The median stopping rule for a trial at position `s` with best value `best`, given the
/// running averages (up to `s`) of the completed trials that reached it: stop when `best` is
/// strictly worse than their median, once `min_completed` of them did.
pub fn median_decision(
    objective: &MetricSpec,
    s: f64,
    best: f64,
    averages: Vec<f64>,
    min_completed: usize,
    median_of: MedianOf,
) -> StoppingDecision {
    let n = averages.len();
    let Some(median) = median_threshold(averages, min_completed) else {
        let place = if median_of == MedianOf::ValueAtPosition { "were measured at" } else { "reached" };
        return StoppingDecision::go_on(format!("{n} completed trials {place} this point, the rule needs {}", min_completed.max(1)));
    };
    let should_stop = objective.goal.better(median, best);
    let of = if median_of == MedianOf::ValueAtPosition { "value" } else { "running average" };
    StoppingDecision {
        should_stop,
        reason: format!("best {best} at {s} against the median {of} {median} of {n} completed trials"),
        last_measurement: None,
    }
}

/// `other`'s objective at position `s` itself (its last measurement there), if it was measured
/// there.
pub fn value_at_position(objective: &MetricSpec, other: &Trial, s: f64, use_elapsed: bool) -> Option<f64> {
    other.measurements.iter().rev().filter(|m| position(m, use_elapsed) == s).find_map(|m| m.metrics.get(&objective.id).copied())
}

/// The running average of `other`'s objective over its measurements at or before `s`, if it has
/// any there.
pub fn running_average(objective: &MetricSpec, other: &Trial, s: f64, use_elapsed: bool) -> Option<f64> {
    let upto: Vec<f64> =
        other.measurements.iter().filter(|m| position(m, use_elapsed) <= s).filter_map(|m| m.metrics.get(&objective.id).copied()).collect();
    (!upto.is_empty()).then(|| upto.iter().sum::<f64>() / upto.len() as f64)
}

/// The median stopping rule, given the study's other trials whole (a service aggregates their
/// running averages in its database instead and calls [`median_decision`]).
pub fn median_rule(
    objective: &MetricSpec,
    trial: &Trial,
    others: &[Trial],
    use_elapsed: bool,
    min_completed: usize,
    median_of: MedianOf,
) -> StoppingDecision {
    let Some((s, best)) = progress(objective, trial, use_elapsed) else {
        return StoppingDecision::go_on("the trial has no measurement of the objective yet");
    };
    let of = |o: &Trial| match median_of {
        MedianOf::RunningAverage => running_average(objective, o, s, use_elapsed),
        MedianOf::ValueAtPosition => value_at_position(objective, o, s, use_elapsed),
    };
    // Optuna leaves its pruned trials out of its median: so does the value at a position.
    let takes_part = |o: &&Trial| !(median_of == MedianOf::ValueAtPosition && o.is_partial());
    let values: Vec<f64> =
        others.iter().filter(|o| o.id != trial.id && o.state == TrialState::Succeeded).filter(takes_part).filter_map(of).collect();
    median_decision(objective, s, best, values, min_completed, median_of)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::stopping::curves::testing::trial;
    use crate::stopping::spec::{MIN_COMPLETED, StoppingSpec};
    use crate::stopping::{Check, check, decide};
    use crate::study::Goal;

    fn study(rule: StoppingSpec) -> crate::StudySpec {
        let mut s = crate::StudySpec::new("acc", Goal::Maximize, crate::designer::testing::fixtures::unit_cube(1), "RANDOM_SEARCH");
        s.stopping = Some(rule);
        s
    }

    fn acc(goal: Goal) -> MetricSpec {
        MetricSpec::objective("acc", goal)
    }

    fn completed() -> Vec<Trial> {
        // Running averages at step 2: 0.55, 0.65, 0.75 → median 0.65.
        vec![
            trial(1, TrialState::Succeeded, &[(1, 0.5), (2, 0.6), (3, 0.9)]),
            trial(2, TrialState::Succeeded, &[(1, 0.6), (2, 0.7), (3, 0.9)]),
            trial(3, TrialState::Succeeded, &[(1, 0.7), (2, 0.8), (3, 0.9)]),
        ]
    }

    #[test]
    fn stops_a_trial_below_the_median_of_running_averages() {
        let others = completed();
        let bad = trial(9, TrialState::Active, &[(1, 0.3), (2, 0.6)]);
        assert!(median_rule(&acc(Goal::Maximize), &bad, &others, false, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
        let good = trial(9, TrialState::Active, &[(1, 0.3), (2, 0.66)]);
        assert!(!median_rule(&acc(Goal::Maximize), &good, &others, false, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
    }

    /// `check` decides what the trial alone decides and otherwise asks for the averages, and the
    /// median of an even count is the mean of the middle two.
    #[test]
    fn the_check_asks_only_for_what_it_needs() {
        let spec = StoppingSpec::Median(Default::default());
        let bad = trial(9, TrialState::Active, &[(1, 0.3), (2, 0.6)]);
        let Check::Median { at, best, use_elapsed, .. } = check(Some(&spec), &acc(Goal::Maximize), &bad) else {
            panic!("needs the others")
        };
        assert_eq!((at, best, use_elapsed), (2.0, 0.6, false));
        let averages: Vec<f64> = completed().iter().filter_map(|o| running_average(&acc(Goal::Maximize), o, at, false)).collect();
        assert_eq!(
            median_decision(&acc(Goal::Maximize), at, best, averages, MIN_COMPLETED, MedianOf::RunningAverage),
            decide(&study(spec.clone()), &bad, &completed(), &mut rand::rngs::StdRng::seed_from_u64(0))
        );
        assert!(
            median_decision(&acc(Goal::Maximize), 2.0, 0.64, vec![0.6, 0.9, 0.5, 0.7], MIN_COMPLETED, MedianOf::RunningAverage).should_stop,
            "median 0.65"
        );
        assert!(
            !median_decision(&acc(Goal::Maximize), 2.0, 0.66, vec![0.6, 0.9, 0.5, 0.7], MIN_COMPLETED, MedianOf::RunningAverage)
                .should_stop
        );
        let done = trial(9, TrialState::Succeeded, &[(1, 0.0)]);
        assert!(matches!(check(Some(&spec), &acc(Goal::Maximize), &done), Check::Decided(d) if !d.should_stop));
        assert!(matches!(check(None, &acc(Goal::Maximize), &bad), Check::Decided(d) if !d.should_stop));
    }

    /// Optuna's comparison: the others' values at the step itself (0.6, 0.7, 0.8 → 0.7) stop a
    /// trial their running averages (median 0.65) let go on; a step no completed trial was
    /// measured at judges nothing.
    #[test]
    fn the_value_at_the_position_is_a_higher_bar_on_a_climbing_curve() {
        let others = completed();
        let t = trial(9, TrialState::Active, &[(1, 0.3), (2, 0.66)]);
        let objective = acc(Goal::Maximize);
        assert!(!median_rule(&objective, &t, &others, false, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
        let at_step = median_rule(&objective, &t, &others, false, MIN_COMPLETED, MedianOf::ValueAtPosition);
        assert!(at_step.should_stop && at_step.reason.contains("median value 0.7"), "{at_step:?}");
        let between = trial(9, TrialState::Active, &[(1, 0.3), (2, 0.4), (5, 0.1)]);
        assert!(!median_rule(&objective, &between, &others, false, 1, MedianOf::ValueAtPosition).should_stop, "nobody measured at 5");
    }

    #[test]
    fn minimisation_flips_the_comparison() {
        let others = completed();
        let t = trial(9, TrialState::Active, &[(2, 0.6)]);
        assert!(!median_rule(&acc(Goal::Minimize), &t, &others, false, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
        let t = trial(9, TrialState::Active, &[(2, 0.7)]);
        assert!(median_rule(&acc(Goal::Minimize), &t, &others, false, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
    }

    #[test]
    fn elapsed_duration_compares_at_equal_time() {
        // At 4 s (step 2 of the others), the same medians as by step.
        let others = completed();
        let mut t = trial(9, TrialState::Active, &[(100, 0.6)]);
        t.measurements[0].elapsed_secs = 4.0;
        assert!(median_rule(&acc(Goal::Maximize), &t, &others, true, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
    }

    #[test]
    fn waits_for_enough_completed_trials() {
        let others = &completed()[..2];
        let t = trial(9, TrialState::Active, &[(2, 0.0)]);
        assert!(!median_rule(&acc(Goal::Maximize), &t, others, false, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
        let none = trial(9, TrialState::Active, &[]);
        assert!(!median_rule(&acc(Goal::Maximize), &none, &completed(), false, MIN_COMPLETED, MedianOf::RunningAverage).should_stop);
    }
}
