//! Automated early stopping: whether a running trial should stop, by the study's rule. One file
//! per rule — `median.rs` (the median rule), `decay_curve.rs` (a GP over parameters and position
//! predicts the final value), `convex.rs` (the curve extrapolated under convexity, with an
//! autoregressive last measurement), `successive_halving.rs` (ASHA's promotion rule at rungs,
//! with Hyperband's brackets) — with `curves.rs`, the finished trials' learning curves the curve
//! rules read, `partial.rs`, a stopped trial's final value as the designers learn it, and
//! `conformance.rs`, the tests every rule passes.
//!
//! Must not do: I/O, clocks or threads. A service learns from [`check`] what a rule needs, reads
//! it from its database (bounded: [`curves::MAX_CURVES`] curves of [`curves::CURVE_POINTS`]
//! points) and runs the curve rules off its async runtime; [`decide`] does all of it in process
//! from the study's trials whole.

#[cfg(test)]
mod conformance;
pub mod convex;
pub mod curves;
pub mod decay_curve;
pub mod freeze_thaw;
pub mod median;
pub mod partial;
pub mod spec;
pub mod successive_halving;

use rand::Rng;

pub use curves::{Curve, Finished};
pub use median::{median_decision, median_rule, running_average, value_at_position};
pub use spec::MIN_COMPLETED;

use spec::{StoppingSpec, SuccessiveHalving};

use crate::study::{MetricSpec, StudySpec};
use crate::trial::{Measurement, Trial};

/// The decision for one trial, with why.
#[derive(Clone, Debug, PartialEq)]
pub struct StoppingDecision {
    /// Whether the trial should stop.
    pub should_stop: bool,
    /// Why, in a sentence, for logs and the model page.
    pub reason: String,
    /// A measurement to append to a trial told to stop: the convex rule's prediction of its
    /// value at the last position (see [`convex`]).
    pub last_measurement: Option<Measurement>,
}

impl StoppingDecision {
    /// Not stopping, because of `reason`.
    pub fn go_on(reason: impl Into<String>) -> StoppingDecision {
        StoppingDecision { should_stop: false, reason: reason.into(), last_measurement: None }
    }
}

/// What deciding on a trial needs of the study's other trials ([`check`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// Decided without them.
    Decided(StoppingDecision),
    /// The median rule: the running averages, up to `at`, of the completed trials (see
    /// [`running_average`]; a service aggregates them in its database), for [`median_decision`]
    /// against the trial's `best`.
    Median {
        /// The trial's position: steps, or seconds with `use_elapsed`.
        at: f64,
        /// Its best objective value so far.
        best: f64,
        /// Positions are elapsed seconds rather than steps.
        use_elapsed: bool,
        /// The completed trials the rule needs at `at` (`minCompletedTrials`).
        min_completed: usize,
        /// What of each completed trial the median is of.
        median_of: spec::MedianOf,
    },
    /// A curve rule: the finished trials' curves ([`Finished`], positions in seconds with
    /// `use_elapsed`), for [`decay_curve::DecayCurveModel`] or [`convex::decide`].
    Curves {
        /// Positions are elapsed seconds rather than steps.
        use_elapsed: bool,
    },
    /// Successive halving: the values the other trials had at `rung` (see
    /// [`successive_halving::values_at`]; a service reads them in its database), for
    /// [`successive_halving::rung_decision`] against the trial's `value` there.
    Rung {
        /// The rule.
        rule: SuccessiveHalving,
        /// The highest rung the trial has reached.
        rung: f64,
        /// Its value at the rung.
        value: f64,
    },
}

/// Applies `spec` to `trial` as far as the trial alone allows: a completed trial, a study without
/// a stopping spec or a trial without a measurement of the objective is decided; otherwise the
/// rule needs the other trials.
pub fn check(spec: Option<&StoppingSpec>, objective: &MetricSpec, trial: &Trial) -> Check {
    let Some(spec) = spec else { return Check::Decided(StoppingDecision::go_on("the study has no automated stopping spec")) };
    if trial.state.is_completed() {
        return Check::Decided(StoppingDecision::go_on("the trial is completed"));
    }
    let use_elapsed = spec.use_elapsed();
    let Some((at, best)) = progress(objective, trial, use_elapsed) else {
        return Check::Decided(StoppingDecision::go_on("the trial has no measurement of the objective yet"));
    };
    match spec {
        StoppingSpec::Median(rule) => {
            let positions = trial.measurements.iter().filter(|m| m.metrics.contains_key(&objective.id)).map(|m| position(m, use_elapsed));
            if !rule.judges(at, positions) {
                return Check::Decided(StoppingDecision::go_on(match rule.min_step_count {
                    Some(start) if at < start => format!("the trial is at {at}, before minStepCount {start}"),
                    _ => format!("the trial is at {at}, between two of the rule's intervals"),
                }));
            }
            Check::Median { at, best, use_elapsed, min_completed: rule.min_completed(), median_of: rule.median_of }
        }
        StoppingSpec::DecayCurve { .. } | StoppingSpec::Convex(_) => Check::Curves { use_elapsed },
        StoppingSpec::SuccessiveHalving(rule) => {
            let bracket = rule.bracket_of(trial.id);
            let Some(rung) = rule.rung_at(at, bracket) else {
                return Check::Decided(StoppingDecision::go_on(if at >= rule.max_step_count {
                    format!("the trial is at {at}, at or past maxStepCount {}", rule.max_step_count)
                } else {
                    format!("the trial is at {at}, below the first rung of its bracket")
                }));
            };
            match successive_halving::value_at(objective, trial, rung, use_elapsed) {
                Some(_) if rule.resume && trial.resumed.is_some_and(|r| r.at >= rung) => Check::Decided(StoppingDecision::go_on(format!(
                    "the trial resumed at or past the rung at {rung} and trains to its next rung"
                ))),
                Some(value) if rule.resume => Check::Decided(StoppingDecision {
                    should_stop: true,
                    reason: format!(
                        "paused at the rung at {rung} with value {value}, to be resumed as a new trial if it becomes one of the best there"
                    ),
                    last_measurement: None,
                }),
                Some(value) => Check::Rung { rule: rule.clone(), rung, value },
                None => Check::Decided(StoppingDecision::go_on("the trial has no measurement of the objective at its rung")),
            }
        }
    }
}

/// Applies the study's rule to `trial` given the study's other trials whole (the decay-curve
/// rule fits its model here, from the warm θ if given: a caller deciding often keeps a
/// [`decay_curve::DecayCurveModel`] per set of finished trials instead).
pub fn decide(study: &StudySpec, trial: &Trial, others: &[Trial], rng: &mut dyn Rng) -> StoppingDecision {
    let objective = study.objective();
    match check(study.stopping.as_ref(), objective, trial) {
        Check::Decided(decision) => decision,
        Check::Median { use_elapsed, min_completed, median_of, .. } => {
            median_rule(objective, trial, others, use_elapsed, min_completed, median_of)
        }
        Check::Rung { rule, rung, value } => {
            let values = successive_halving::values_at(objective, others, trial.id, rung, rule.use_elapsed_duration);
            successive_halving::rung_decision(objective, &rule, trial.id, rung, value, values)
        }
        Check::Curves { use_elapsed } => {
            let finished = Finished::from_trials(study, others, trial.id, use_elapsed);
            match study.stopping.as_ref() {
                Some(StoppingSpec::Convex(spec)) => convex::decide(spec, study, &finished, trial),
                _ => match decay_curve::DecayCurveModel::fit(study, &finished, None, rng) {
                    Ok(Some(model)) => model.decide(objective, trial),
                    Ok(None) => StoppingDecision::go_on(decay_curve::too_few(&finished)),
                    Err(e) => StoppingDecision::go_on(format!("the curve model could not be fitted: {e}")),
                },
            }
        }
    }
}

fn position(m: &Measurement, use_elapsed: bool) -> f64 {
    if use_elapsed { m.elapsed_secs } else { m.step_count as f64 }
}

/// Where the trial being checked stands: the position of its latest measurement of the
/// objective (steps, or seconds with `use_elapsed`) and its best value so far; `None` before it
/// has one.
pub fn progress(objective: &MetricSpec, trial: &Trial, use_elapsed: bool) -> Option<(f64, f64)> {
    let own: Vec<(f64, f64)> =
        trial.measurements.iter().filter_map(|m| m.metrics.get(&objective.id).map(|v| (position(m, use_elapsed), *v))).collect();
    let s = own.iter().map(|(p, _)| *p).reduce(f64::max)?;
    let best = own.iter().map(|(_, v)| *v).reduce(|a, b| if objective.goal.better(b, a) { b } else { a })?;
    Some((s, best))
}
