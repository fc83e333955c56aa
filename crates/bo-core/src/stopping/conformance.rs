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
//!
//! Successive halving with resumption pauses every trial at each rung instead, so it passes its
//! own list ([`resumption_conforms`]): it never stops a completed or unmeasured trial; it pauses
//! at the first rung, and a resumed trial only at a rung past the one it resumed at; among trials
//! paused at a rung it promotes the best configuration and never the worst, counting a chain of
//! resumptions once; a minimised study promotes as the maximised one it mirrors; NaN and
//! infinities promote nothing wrong and panic nowhere.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::curves::testing::{running, study};
use super::spec::{ConvexStopping, Promotion, StoppingSpec, SuccessiveHalving};
use super::successive_halving::{promotable_among, value_at};
use super::{StoppingDecision, decide};
use crate::study::{Goal, StudySpec};
use crate::trial::{Resumed, Trial, TrialState};

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
        resume: false,
    };
    vec![
        ("median", StoppingSpec::Median(Default::default())),
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

#[test]
fn resumption_conforms() {
    let rule = SuccessiveHalving {
        min_step_count: 1.0,
        max_step_count: STEPS as f64,
        reduction_factor: 3.0,
        use_elapsed_duration: false,
        brackets: 1,
        promotion: Promotion::TopK,
        resume: true,
    };
    rule.check("resume").expect("valid");
    let spec = study(StoppingSpec::SuccessiveHalving(rule.clone()));
    let objective = spec.objective().clone();
    let others = others();

    // Completed, or not measured yet: never stopped.
    let mut done = judged(0.0, 10);
    done.state = TrialState::Succeeded;
    assert!(!decision(&spec, &done, &others).should_stop, "stopped a completed trial");
    assert!(!decision(&spec, &judged(0.0, 0), &others).should_stop, "stopped a trial without measurements");
    // Even the best configuration pauses at its first rung, in plain words.
    let d = decision(&spec, &judged(0.7, 1), &others);
    assert!(d.should_stop, "did not pause at the first rung: {}", d.reason);
    plain_words("resume", &d);
    // Resumed at 3, it goes on through 4–8 and pauses at 9.
    let mut resumed = judged(0.7, 5);
    resumed.resumed = Some(Resumed { from: 3, at: 3.0 });
    assert!(!decision(&spec, &resumed, &others).should_stop, "paused again at the rung it resumed at");
    let mut resumed = judged(0.7, 9);
    resumed.resumed = Some(Resumed { from: 3, at: 3.0 });
    assert!(decision(&spec, &resumed, &others).should_stop, "did not pause at the next rung");

    // 24 configurations paused at 9: the best of the best ⌊24/3⌋ is promoted.
    let cut = |t: &Trial| {
        let mut t = t.clone();
        t.measurements.truncate(9);
        t.final_measurement = t.measurements.last().cloned();
        t.stop_time_ms = Some(1);
        t
    };
    let paused: Vec<Trial> = others.iter().map(cut).collect();
    let best = paused
        .iter()
        .max_by(|a, b| value_at(&objective, a, 9.0, false).unwrap().total_cmp(&value_at(&objective, b, 9.0, false).unwrap()))
        .unwrap()
        .id;
    let worst = paused
        .iter()
        .min_by(|a, b| value_at(&objective, a, 9.0, false).unwrap().total_cmp(&value_at(&objective, b, 9.0, false).unwrap()))
        .unwrap()
        .id;
    assert_eq!(promotable_among(&objective, &rule, &paused), Some(best));
    // A minimised study mirrored promotes the same trial.
    let (min_spec, min_paused) = mirrored(&spec, &paused);
    assert_eq!(promotable_among(min_spec.objective(), &rule, &min_paused), Some(best));

    // Once resumed, the chain counts once: the new trial running, the paused one superseded.
    // No other paused trial takes its place beyond the best ⌊24/3⌋ = 8, and the worst never
    // goes on however many of the best are taken up.
    let mut trials = paused.clone();
    let mut taken = vec![];
    while let Some(id) = promotable_among(&objective, &rule, &trials) {
        assert_ne!(id, worst, "promoted the worst configuration");
        let from = &trials[id as usize - 1];
        let mut next = Trial::new(trials.len() as i64 + 1, from.assignment.clone());
        next.measurements = from.measurements.clone();
        next.resumed = Some(Resumed { from: id, at: 9.0 });
        trials.push(next);
        taken.push(id);
        assert!(taken.len() <= 8, "promoted more than the best third: {taken:?}");
    }
    assert_eq!(taken.len(), 8, "{taken:?}");

    // NaN and infinities at the rung: never promoted, no panic.
    let mut hostile = paused.clone();
    for t in hostile.iter_mut().take(3) {
        t.measurements.iter_mut().for_each(|m| m.metrics.values_mut().for_each(|x| *x = f64::NAN));
    }
    let id = promotable_among(&objective, &rule, &hostile).expect("the finite ones still promote");
    assert!(id > 3, "promoted a NaN");
}
