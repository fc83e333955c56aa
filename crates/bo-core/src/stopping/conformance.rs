//! The stopping rules' conformance suite: what every rule must do whatever it is, run on each
//! (median, decay curve, convex, successive halving with one bracket and with Hyperband's four)
//! through [`decide`], the in-process path that shares each rule's decision with the service.
//!
//! Each rule, on a study of 24 finished trials whose curves rise to `1 − (x0 − 0.7)²`:
//! - never stops a completed trial or one without a measurement;
//! - never stops the best configuration's trial, checked after every few steps;
//! - stops the worst configuration's trial before its full training;
//! - decides the same inputs the same way, in words without debug formats;
//! - decides a minimised study as the maximised one it mirrors;
//! - decides, without panicking, when other trials measured NaN or infinities.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::curves::testing::{running, study};
use super::successive_halving::{Promotion, SuccessiveHalving};
use super::{StoppingDecision, decide};
use crate::study::{ConvexStopping, Goal, StoppingSpec, StudySpec};
use crate::trial::{Trial, TrialState};

const STEPS: usize = 50;
const CHECKS: [usize; 7] = [1, 3, 5, 9, 15, 25, 40];

fn rules() -> Vec<(&'static str, StoppingSpec)> {
    let asha = SuccessiveHalving {
        min_step_count: 1.0,
        max_step_count: STEPS as f64,
        reduction_factor: 3.0,
        use_elapsed_duration: false,
        brackets: 1,
        promotion: Promotion::Quantile,
    };
    vec![
        ("median", StoppingSpec::Median { use_elapsed_duration: false }),
        ("decay curve", StoppingSpec::DecayCurve { use_elapsed_duration: false }),
        ("convex", StoppingSpec::Convex(ConvexStopping { max_step_count: Some(STEPS as f64), ..ConvexStopping::default() })),
        ("successive halving", StoppingSpec::SuccessiveHalving(asha.clone())),
        ("successive halving, top k", StoppingSpec::SuccessiveHalving(SuccessiveHalving { promotion: Promotion::TopK, ..asha.clone() })),
        ("hyperband", StoppingSpec::SuccessiveHalving(SuccessiveHalving { brackets: 4, ..asha.clone() })),
        ("hyperband, top k", StoppingSpec::SuccessiveHalving(SuccessiveHalving { brackets: 4, promotion: Promotion::TopK, ..asha })),
    ]
}

/// 24 trials trained in full, numbered 1 to 24, spread over x0.
fn others() -> Vec<Trial> {
    (0..24)
        .map(|k| {
            let mut t = running(k as f64 / 23.0, ((k * 7) % 11) as f64 / 11.0, STEPS);
            t.id = k as i64 + 1;
            t.state = TrialState::Succeeded;
            t.final_measurement = t.measurements.last().cloned();
            t
        })
        .collect()
}

/// Trial 25 at x0 = `x`, measured for `steps` steps; at x0 = 0.7 the best configuration of all
/// (its x1 = 1 gives the largest offset, so it ends above every finished trial).
fn judged(x: f64, steps: usize) -> Trial {
    let mut t = running(x, 1.0, steps);
    t.id = 25;
    t
}

fn decision(spec: &StudySpec, trial: &Trial, others: &[Trial]) -> StoppingDecision {
    decide(spec, trial, others, &mut StdRng::seed_from_u64(7))
}

/// The study mirrored: minimising the negated objective.
fn mirrored(spec: &StudySpec, trials: &[Trial]) -> (StudySpec, Vec<Trial>) {
    let mut spec = spec.clone();
    spec.metrics[0].goal = Goal::Minimize;
    let negate = |t: &Trial| {
        let mut t = t.clone();
        for m in t.measurements.iter_mut().chain(t.final_measurement.iter_mut()) {
            m.metrics.values_mut().for_each(|v| *v = -*v);
        }
        t
    };
    (spec, trials.iter().map(negate).collect())
}

fn plain_words(name: &str, d: &StoppingDecision) {
    assert!(!d.reason.trim().is_empty(), "{name}: a decision without a reason");
    for debug in ["Some(", "None", "Ok(", "Err(", "{", "\""] {
        assert!(!d.reason.contains(debug), "{name}: {:?} in the reason {:?}", debug, d.reason);
    }
}

#[test]
fn every_rule_conforms() {
    let others = others();
    for (name, rule) in rules() {
        let spec = study(rule);
        // Completed, or not measured yet: never stopped.
        let mut done = judged(0.0, 10);
        done.state = TrialState::Succeeded;
        assert!(!decision(&spec, &done, &others).should_stop, "{name}: stopped a completed trial");
        assert!(!decision(&spec, &judged(0.0, 0), &others).should_stop, "{name}: stopped a trial without measurements");

        // The best configuration goes on at every check; the worst stops before the end.
        let (best, worst) = (0.7, 0.0);
        let (min_spec, min_others) = mirrored(&spec, &others);
        let mut stopped_at = None;
        for steps in CHECKS {
            let b = decision(&spec, &judged(best, steps), &others);
            assert!(!b.should_stop, "{name}: stopped the best configuration after {steps} steps: {}", b.reason);
            plain_words(name, &b);
            let w = decision(&spec, &judged(worst, steps), &others);
            plain_words(name, &w);
            let again = decision(&spec, &judged(worst, steps), &others);
            assert_eq!((w.should_stop, &w.reason), (again.should_stop, &again.reason), "{name}: the same inputs decided twice");
            // A minimised study, mirrored, decides alike.
            let min_trial = mirrored(&spec, &[judged(worst, steps)]).1.remove(0);
            let m = decision(&min_spec, &min_trial, &min_others);
            assert_eq!(m.should_stop, w.should_stop, "{name}: minimised {} against maximised {}", m.reason, w.reason);
            if w.should_stop {
                stopped_at = Some(steps);
                break;
            }
        }
        assert!(stopped_at.is_some(), "{name}: never stopped the worst configuration");

        // Other trials with NaN or infinite values: a decision, no panic.
        let mut hostile = others.clone();
        for (t, v) in hostile.iter_mut().zip([f64::NAN, f64::INFINITY, f64::NEG_INFINITY]) {
            for m in t.measurements.iter_mut().chain(t.final_measurement.iter_mut()) {
                m.metrics.values_mut().for_each(|x| *x = v);
            }
        }
        for steps in [1, 5, 20] {
            plain_words(name, &decision(&spec, &judged(0.3, steps), &hostile));
        }
    }
}
