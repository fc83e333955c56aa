//! The learning curves the curve rules read: each finished trial's objective against its
//! position (steps, or elapsed seconds), thinned to at most [`CURVE_POINTS`] points, for at most
//! the [`MAX_CURVES`] most recent finished trials, and the best final value of all of them. A
//! service reads the same from its database (the same thinning, in SQL); [`Finished::from_trials`]
//! builds it from trials in memory.
//!
//! Must not do: decide anything; the rules do.

use super::position;
use crate::study::{MetricSpec, StudySpec};
use crate::trial::{Assignment, Trial, TrialState};

/// Points kept of one curve: evenly thinned ([`thin`]), the last always kept.
pub const CURVE_POINTS: usize = 8;
/// Finished trials whose curves a rule reads: the most recent ones.
pub const MAX_CURVES: usize = 60;

/// One finished trial's learning curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// Its parameters.
    pub assignment: Assignment,
    /// (position, objective) by position, thinned.
    pub points: Vec<(f64, f64)>,
    /// Its final objective value.
    pub final_value: f64,
}

/// What the curve rules know of the finished trials.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Finished {
    /// The curves of the most recent SUCCEEDED trials that have one (at most [`MAX_CURVES`]).
    pub curves: Vec<Curve>,
    /// How many SUCCEEDED trials have a curve, in all.
    pub count: usize,
    /// The best final objective value of the safe SUCCEEDED trials trained in full, or of all of
    /// them while none is (a partial trial's value is not a configuration's result).
    pub best: Option<f64>,
}

/// The trial's curve: (position, objective) of its measurements of the objective, by position
/// (equal positions in arrival order), unthinned.
pub fn points(objective: &MetricSpec, trial: &Trial, use_elapsed: bool) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> =
        trial.measurements.iter().filter_map(|m| m.metrics.get(&objective.id).map(|v| (position(m, use_elapsed), *v))).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// At most `max` of `points`, evenly spread: the k-th of n (from 1) is kept when ⌊k·max/n⌋ >
/// ⌊(k−1)·max/n⌋, which keeps all of them up to `max` and always the last. The store's SQL keeps
/// the same rows.
pub fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    let n = points.len();
    if n <= max {
        return points.to_vec();
    }
    (1..=n).filter(|k| k * max / n > (k - 1) * max / n).map(|k| points[k - 1]).collect()
}

impl Finished {
    /// The finished trials among `trials` (all but `except`), as a service reads them.
    pub fn from_trials(study: &StudySpec, trials: &[Trial], except: i64, use_elapsed: bool) -> Finished {
        let objective = study.objective();
        let mut finished = Finished::default();
        let mut best_partial: Option<f64> = None;
        for t in trials.iter().rev().filter(|t| t.id != except && t.state == TrialState::Succeeded) {
            let Some(m) = t.final_measurement.as_ref() else { continue };
            let Some(&value) = m.metrics.get(&objective.id) else { continue };
            let best = if t.is_partial() { &mut best_partial } else { &mut finished.best };
            if study.is_safe(&m.metrics) && best.is_none_or(|b| objective.goal.better(value, b)) {
                *best = Some(value);
            }
            let points = points(objective, t, use_elapsed);
            if points.is_empty() {
                continue;
            }
            finished.count += 1;
            if finished.curves.len() < MAX_CURVES {
                finished.curves.push(Curve { assignment: t.assignment.clone(), points: thin(&points, CURVE_POINTS), final_value: value });
            }
        }
        finished.best = finished.best.or(best_partial);
        finished
    }

    /// The furthest position any finished curve reached.
    pub fn horizon(&self) -> Option<f64> {
        self.curves.iter().filter_map(|c| c.points.last().map(|p| p.0)).reduce(f64::max)
    }
}

/// Learning curves for the rules' tests: a study maximising `obj` over `x0, x1` ∈ [0, 1]² whose
/// curves rise as `f(x) (1 − e^{−t/10})` to `f = 1 − (x0 − 0.7)²`.
#[cfg(test)]
pub(super) mod testing {
    use super::*;
    use crate::designer::testing::fixtures::unit_cube;
    use crate::stopping::spec::StoppingSpec;
    use crate::study::Goal;
    use crate::trial::{Measurement, ParamValue};

    /// A study over the unit square maximising `obj`, stopped by `rule`.
    pub fn study(rule: StoppingSpec) -> StudySpec {
        let mut s = StudySpec::new("obj", Goal::Maximize, unit_cube(2), "GP_BANDIT");
        s.stopping = Some(rule);
        s
    }

    /// The value a curve at `x0 = x` rises to: best at 0.7.
    pub fn level(x: f64) -> f64 {
        1.0 - (x - 0.7).powi(2)
    }

    /// The learning curve at `(x, y)` up to step `up_to`: (step, value), rising towards
    /// [`level`].
    pub fn curve(x: f64, y: f64, up_to: usize) -> Vec<(f64, f64)> {
        (1..=up_to).map(|t| (t as f64, level(x) * (1.0 - (-(t as f64) / 10.0).exp()) + 0.01 * y)).collect()
    }

    /// The assignment `x0 = x, x1 = y`.
    pub fn assignment(x: f64, y: f64) -> Assignment {
        Assignment::new([("x0".into(), ParamValue::Float(x)), ("x1".into(), ParamValue::Float(y))].into())
    }

    /// `n` trials finished after 50 steps, spread over x0.
    pub fn finished(n: usize) -> Finished {
        let curves: Vec<Curve> = (0..n)
            .map(|k| {
                let (x, y) = (k as f64 / (n - 1).max(1) as f64, ((k * 7) % 11) as f64 / 11.0);
                let points = curve(x, y, 50);
                Curve { assignment: assignment(x, y), final_value: points.last().unwrap().1, points: thin(&points, CURVE_POINTS) }
            })
            .collect();
        let best = curves.iter().map(|c| c.final_value).reduce(f64::max);
        Finished { count: curves.len(), curves, best }
    }

    /// A curve's points as measurements of `obj` (two seconds a step).
    pub fn measurements(points: &[(f64, f64)]) -> Vec<Measurement> {
        points
            .iter()
            .map(|&(p, v)| Measurement { step_count: p as i64, elapsed_secs: 2.0 * p, metrics: [("obj".to_owned(), v)].into() })
            .collect()
    }

    /// A trial in `state` whose measurements of `acc` are `curve`'s (step, value) pairs, two
    /// seconds a step.
    pub fn trial(id: i64, state: TrialState, curve: &[(i64, f64)]) -> Trial {
        let measurements = curve
            .iter()
            .map(|&(step, v)| Measurement { step_count: step, elapsed_secs: step as f64 * 2.0, metrics: [("acc".to_owned(), v)].into() })
            .collect();
        Trial { id, state, measurements, ..running(0.0, 0.0, 0) }
    }

    /// A running trial at (x, y) measured for `up_to` steps.
    pub fn running(x: f64, y: f64, up_to: usize) -> Trial {
        Trial { measurements: measurements(&curve(x, y, up_to)), ..Trial::new(99, assignment(x, y)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_an_even_spread_and_the_last() {
        let points: Vec<(f64, f64)> = (1..=20).map(|k| (k as f64, 0.0)).collect();
        let kept: Vec<f64> = thin(&points, 8).iter().map(|p| p.0).collect();
        assert_eq!(kept.len(), 8);
        assert_eq!(*kept.last().unwrap(), 20.0);
        assert!(kept.windows(2).all(|w| w[1] - w[0] >= 2.0 && w[1] - w[0] <= 3.0), "{kept:?}");
        assert_eq!(thin(&points[..5], 8).len(), 5);
        assert_eq!(thin(&points[..9], 8).len(), 8);
    }
}
