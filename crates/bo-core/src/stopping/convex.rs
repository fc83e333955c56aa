//! `convexAutomatedStoppingSpec` as the proto describes it: "When there are enough completed
//! trials (configured by min_measurement_count), for pending trials with enough measurements and
//! steps, the policy first computes an overestimate of the objective value at max_num_steps
//! according to the slope of the incomplete objective value curve. No prediction can be made if
//! the curve is completely flat. If the overestimation is worse than the best objective value of
//! the completed trials, this pending trial will be early-stopped, but a last measurement will be
//! added to the pending trial with max_num_steps and predicted objective value from the
//! autoregression model."
//!
//! Literally, with each unstated detail decided so:
//! - *Enough*: at least `minMeasurementCount` + 1 finished trials with curves; the trial has at
//!   least `minMeasurementCount` measurements (and two), its latest past `minStepCount` (default a
//!   tenth of the maximum) and short of `maxStepCount` (default: the furthest a finished trial
//!   reached).
//! - *The overestimate*: a curve that improves with diminishing returns (concave when maximising,
//!   convex when minimising) lies below its secant's extension, so with the secant through the
//!   first and last of the trial's last `minMeasurementCount` measurements (at least two) the
//!   value at the maximum is at most `y_last + max(0, slope) · (max − t_last)` (mirrored for
//!   MINIMIZE). Flat: the window's values all equal.
//! - *The autoregression model*, trained anew at each decision on the finished trials whose curves
//!   reached 90 % of the maximum: a ridge regression of the final value on the last value, the
//!   slope over one thinned step times the steps left, the progress, and — with
//!   `learningRateParameterName` — the learning rate's unit coordinate. Its prediction is capped
//!   by the overestimate (which decided the stop); without enough curves to fit it the prediction
//!   is the overestimate itself.
//!
//! Must not do: I/O; `updateAllStoppedTrials` is refused where the study is read (a 400).

use super::curves::{CURVE_POINTS, Finished, points};
use super::spec::ConvexStopping;
use super::{StoppingDecision, position};
use crate::field::FieldError;
use crate::space::{Domain, SearchSpace};
use crate::study::{Goal, StudySpec};
use crate::trial::{Assignment, Measurement, Trial};

/// `minMeasurementCount` when unset (the proto's default).
pub const DEFAULT_MIN_MEASUREMENTS: u32 = 5;
/// The largest `minMeasurementCount` accepted: the measurements a trial may have.
pub const MAX_MIN_MEASUREMENTS: u32 = 1000;
/// Finished curves that reached this fraction of the maximum train the autoregression.
const TRAINING_REACH: f64 = 0.9;

impl ConvexStopping {
    /// Checks the settings against the study's `space`; errors name the field under `path`.
    pub fn check(&self, space: &SearchSpace, path: &str) -> Result<(), FieldError> {
        if let Some(max) = self.max_step_count
            && !(max.is_finite() && max > 0.0)
        {
            return Err(FieldError::new(format!("{path}.maxStepCount"), format!("must be positive, got {max}")));
        }
        if let Some(min) = self.min_step_count {
            if !(min.is_finite() && min >= 0.0) {
                return Err(FieldError::new(format!("{path}.minStepCount"), format!("must be at least 0, got {min}")));
            }
            if let Some(max) = self.max_step_count
                && min >= max
            {
                return Err(FieldError::new(format!("{path}.minStepCount"), format!("must be below maxStepCount ({max}), got {min}")));
            }
        }
        if let Some(k) = self.min_measurement_count
            && !(1..=MAX_MIN_MEASUREMENTS).contains(&k)
        {
            return Err(FieldError::new(
                format!("{path}.minMeasurementCount"),
                format!("must be from 1 to {MAX_MIN_MEASUREMENTS}, got {k}"),
            ));
        }
        if let Some(name) = &self.learning_rate_parameter_name {
            match space.param(name).map(|p| &p.domain) {
                Some(Domain::Double { .. }) => {}
                Some(_) => {
                    return Err(FieldError::new(
                        format!("{path}.learningRateParameterName"),
                        format!("names {name:?}, which is not a DOUBLE parameter"),
                    ));
                }
                None => {
                    return Err(FieldError::new(
                        format!("{path}.learningRateParameterName"),
                        format!("names {name:?}, which is not a parameter of the study"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The rule's decision on `trial` (running, with a measurement of the objective), given the
/// finished trials' curves.
pub fn decide(spec: &ConvexStopping, study: &StudySpec, finished: &Finished, trial: &Trial) -> StoppingDecision {
    let objective = study.objective();
    let use_elapsed = spec.use_elapsed_duration;
    let k = spec.min_measurement_count.unwrap_or(DEFAULT_MIN_MEASUREMENTS) as usize;
    if finished.count < k + 1 {
        return StoppingDecision::go_on(format!("{} finished trials have curves, the rule needs {}", finished.count, k + 1));
    }
    let Some(max) = spec.max_step_count.or_else(|| finished.horizon()).filter(|m| *m > 0.0) else {
        return StoppingDecision::go_on("no maximum position is set or learned yet");
    };
    let min = spec.min_step_count.unwrap_or(max / 10.0);
    let curve = points(objective, trial, use_elapsed);
    let window = k.max(2);
    if curve.len() < window {
        return StoppingDecision::go_on(format!("the trial has {} measurements, the rule needs {window}", curve.len()));
    }
    let (t_last, y_last) = curve[curve.len() - 1];
    if t_last <= min {
        return StoppingDecision::go_on(format!("the trial is at {t_last}, not past the minimum {min}"));
    }
    if t_last >= max {
        return StoppingDecision::go_on(format!("the trial reached the maximum {max}"));
    }
    let Some(best) = finished.best else { return StoppingDecision::go_on("no finished trial is safe yet") };
    // Gains: larger is better whatever the goal.
    let sign = if objective.goal == Goal::Maximize { 1.0 } else { -1.0 };
    let recent = &curve[curve.len() - window..];
    if recent.iter().all(|p| p.1 == y_last) {
        return StoppingDecision::go_on("the curve is flat: no prediction can be made");
    }
    let (t_first, y_first) = recent[0];
    if t_last <= t_first {
        return StoppingDecision::go_on("the last measurements share one position: no slope");
    }
    let slope = sign * (y_last - y_first) / (t_last - t_first);
    let over = sign * y_last + slope.max(0.0) * (max - t_last);
    if over >= sign * best {
        return StoppingDecision::go_on(format!("the overestimate {} at {max} is not worse than the best {best}", sign * over));
    }
    let lr = spec.learning_rate_parameter_name.as_deref().map(|name| learning_rate(&study.space, name, &trial.assignment));
    let features = Row::of(&curve, max, sign, lr);
    let predicted = Autoregression::fit(finished, max, sign, spec.learning_rate_parameter_name.as_deref(), &study.space)
        .and_then(|ar| ar.predict(&features))
        .filter(|p| p.is_finite())
        .map_or(over, |p| p.min(over));
    let last = trial.measurements.iter().max_by(|a, b| position(a, use_elapsed).total_cmp(&position(b, use_elapsed)));
    let measurement = Measurement {
        step_count: if use_elapsed { last.map_or(0, |m| m.step_count) } else { max.round() as i64 },
        elapsed_secs: if use_elapsed { max } else { last.map_or(0.0, |m| m.elapsed_secs) },
        metrics: [(objective.id.clone(), sign * predicted)].into(),
    };
    StoppingDecision {
        should_stop: true,
        reason: format!(
            "the overestimate {} at {max} is worse than the best {best}; predicted final value {}",
            sign * over,
            sign * predicted
        ),
        last_measurement: Some(measurement),
    }
}

/// The learning rate's unit coordinate in `assignment` (½ where it is inactive).
fn learning_rate(space: &SearchSpace, name: &str, assignment: &Assignment) -> f64 {
    let index = space.params().iter().position(|p| p.id == name);
    match (index, assignment.get(name)) {
        (Some(i), Some(_)) => space.encode(assignment)[i],
        _ => 0.5,
    }
}

/// One row of the autoregression: the last gain, the slope over about one thinned step times the
/// steps left, the progress, and optionally the learning rate.
struct Row(Vec<f64>);

impl Row {
    /// The features of a curve (gains from `sign`) as it stands at its last point.
    fn of(curve: &[(f64, f64)], max: f64, sign: f64, lr: Option<f64>) -> Row {
        let (t, y) = curve[curve.len() - 1];
        // The earlier point about one thinned step back, as the training curves are spaced.
        let back = t - max / CURVE_POINTS as f64;
        let (t0, y0) = curve[..curve.len() - 1].iter().rev().find(|p| p.0 <= back).copied().unwrap_or(curve[0]);
        let slope = if t > t0 { sign * (y - y0) / (t - t0) } else { 0.0 };
        let mut row = vec![sign * y, slope * (max - t), t / max];
        row.extend(lr);
        Row(row)
    }
}

/// A ridge regression of the final gain on [`Row`]s, on standardised columns.
struct Autoregression {
    weights: Vec<f64>,
    means: Vec<f64>,
    scales: Vec<f64>,
    y_mean: f64,
    y_scale: f64,
}

impl Autoregression {
    /// Fitted on every prefix (of two points or more) of the finished curves that reached
    /// [`TRAINING_REACH`] of `max`; `None` with fewer rows than twice the features.
    fn fit(finished: &Finished, max: f64, sign: f64, lr_name: Option<&str>, space: &SearchSpace) -> Option<Autoregression> {
        let (mut rows, mut targets) = (Vec::new(), Vec::new());
        for c in finished.curves.iter().filter(|c| c.points.last().is_some_and(|p| p.0 >= TRAINING_REACH * max)) {
            let lr = lr_name.map(|name| learning_rate(space, name, &c.assignment));
            for j in 2..=c.points.len() {
                rows.push(Row::of(&c.points[..j], max, sign, lr).0);
                targets.push(sign * c.final_value);
            }
        }
        let p = rows.first()?.len();
        if rows.len() < 2 * (p + 1) {
            return None;
        }
        let n = rows.len() as f64;
        let stats = |values: &mut dyn Iterator<Item = f64>| {
            let v: Vec<f64> = values.collect();
            let mean = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
            (mean, if sd > 1e-12 { sd } else { 1.0 })
        };
        let (means, scales): (Vec<f64>, Vec<f64>) = (0..p).map(|j| stats(&mut rows.iter().map(|r| r[j]))).unzip();
        let (y_mean, y_scale) = stats(&mut targets.iter().copied());
        let z: Vec<Vec<f64>> = rows.iter().map(|r| (0..p).map(|j| (r[j] - means[j]) / scales[j]).collect()).collect();
        let t: Vec<f64> = targets.iter().map(|y| (y - y_mean) / y_scale).collect();
        // (ZᵀZ + λI) w = Zᵀt, λ = 10⁻³ n.
        let mut a = faer::Mat::<f64>::zeros(p, p);
        let mut b = vec![0.0; p];
        for (row, target) in z.iter().zip(&t) {
            for i in 0..p {
                b[i] += row[i] * target;
                for j in 0..p {
                    a[(i, j)] += row[i] * row[j];
                }
            }
        }
        for i in 0..p {
            a[(i, i)] += 1e-3 * n;
        }
        let weights = crate::linalg::Cholesky::new(&a).ok()?.solve(&b);
        Some(Autoregression { weights, means, scales, y_mean, y_scale })
    }

    fn predict(&self, row: &Row) -> Option<f64> {
        (row.0.len() == self.weights.len()).then(|| {
            let z: f64 = row.0.iter().enumerate().map(|(j, v)| self.weights[j] * (v - self.means[j]) / self.scales[j]).sum();
            self.y_mean + self.y_scale * z
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopping::curves::testing::{curve, finished, level, running, study};
    use crate::stopping::spec::StoppingSpec;

    fn spec() -> ConvexStopping {
        ConvexStopping { max_step_count: Some(50.0), ..ConvexStopping::default() }
    }

    #[test]
    fn stops_a_trial_whose_overestimate_is_worse_than_the_best_and_predicts_its_end() {
        let study = study(StoppingSpec::Convex(spec()));
        let finished = finished(12);
        // x0 = 0.05 ends at 0.58 against a best of 1.0; at step 25 its secant's extension is lower.
        let decision = decide(&spec(), &study, &finished, &running(0.05, 0.5, 25));
        assert!(decision.should_stop, "{}", decision.reason);
        let m = decision.last_measurement.expect("a predicted last measurement");
        assert_eq!(m.step_count, 50);
        let truth = curve(0.05, 0.5, 50).last().unwrap().1;
        assert!((m.metrics["obj"] - truth).abs() < 0.05, "predicted {} against {truth}", m.metrics["obj"]);
        // A trial at the optimum is not stopped.
        assert!(!decide(&spec(), &study, &finished, &running(0.7, 0.5, 25)).should_stop);
        assert!(level(0.7) > level(0.05));
    }

    #[test]
    fn waits_for_enough_trials_measurements_and_steps() {
        let study = study(StoppingSpec::Convex(spec()));
        assert!(!decide(&spec(), &study, &finished(5), &running(0.05, 0.5, 25)).should_stop, "needs 6 finished trials");
        assert!(!decide(&spec(), &study, &finished(12), &running(0.05, 0.5, 4)).should_stop, "needs 5 measurements");
        assert!(!decide(&spec(), &study, &finished(12), &running(0.05, 0.5, 5)).should_stop, "step 5 is not past 50 / 10");
        let mut flat = running(0.05, 0.5, 25);
        flat.measurements.iter_mut().for_each(|m| *m.metrics.get_mut("obj").unwrap() = 0.1);
        assert!(!decide(&spec(), &study, &finished(12), &flat).should_stop, "a flat curve predicts nothing");
        // Without maxStepCount the maximum is learned from the finished curves (50 here).
        let learned = ConvexStopping::default();
        let decision = decide(&learned, &study, &finished(12), &running(0.05, 0.5, 25));
        assert!(decision.should_stop && decision.last_measurement.unwrap().step_count == 50);
    }

    #[test]
    fn minimisation_mirrors_the_rule() {
        let mut study = study(StoppingSpec::Convex(spec()));
        study.metrics[0].goal = Goal::Minimize;
        let negate = |mut t: Trial| {
            t.measurements.iter_mut().for_each(|m| *m.metrics.get_mut("obj").unwrap() *= -1.0);
            t
        };
        let mut finished = finished(12);
        for c in &mut finished.curves {
            c.final_value = -c.final_value;
            c.points.iter_mut().for_each(|p| p.1 = -p.1);
        }
        finished.best = finished.best.map(|b| -b);
        let decision = decide(&spec(), &study, &finished, &negate(running(0.05, 0.5, 25)));
        assert!(decision.should_stop, "{}", decision.reason);
        assert!(decision.last_measurement.unwrap().metrics["obj"] < 0.0);
        assert!(!decide(&spec(), &study, &finished, &negate(running(0.7, 0.5, 25))).should_stop);
    }

    #[test]
    fn settings_are_checked_against_the_space() {
        let space = crate::designer::testing::fixtures::all_types();
        let ok = ConvexStopping { learning_rate_parameter_name: Some("lr".into()), ..spec() };
        assert!(ok.check(&space, "s").is_ok());
        for (bad, field) in [
            (ConvexStopping { learning_rate_parameter_name: Some("layers".into()), ..spec() }, "s.learningRateParameterName"),
            (ConvexStopping { learning_rate_parameter_name: Some("nope".into()), ..spec() }, "s.learningRateParameterName"),
            (ConvexStopping { max_step_count: Some(0.0), ..spec() }, "s.maxStepCount"),
            (ConvexStopping { min_step_count: Some(60.0), ..spec() }, "s.minStepCount"),
            (ConvexStopping { min_measurement_count: Some(0), ..spec() }, "s.minMeasurementCount"),
        ] {
            let e = bad.check(&space, "s").unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
    }
}
