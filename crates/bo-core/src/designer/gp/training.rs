//! A study's completed trials as a GP's training data: the objective made a maximisation,
//! infeasible trials at the worst feasible value (their penalty), the trials ranked, the targets
//! warped as the designer asks ([`super::output_warp`]). The one rule every GP designer trains
//! on; it knows nothing of kernels or fits.

use super::output_warp::{OutputWarping, Warp};
use crate::study::{Goal, StudySpec};
use crate::trial::{Assignment, Observation, Outcome};

/// A study's completed trials as GP training data, the objective `sign`-adjusted so the GP
/// maximises it.
pub(crate) struct Training<'h> {
    /// +1 to maximise the objective, −1 to minimise it.
    pub sign: f64,
    /// The worst feasible value (`sign`-adjusted): infeasible trials' penalty.
    pub worst: f64,
    /// Trials with a measured objective, best first.
    pub ranked: Vec<(&'h Assignment, f64)>,
    /// Inputs, in the model's features.
    pub x: Vec<Vec<f64>>,
    /// Outputs, `sign`-adjusted and warped.
    pub y: Vec<f64>,
    /// The warp the outputs went through, fitted to them.
    pub warp: Warp,
}

/// Each trial's objective made a maximisation (×`sign`, returned), infeasible trials at the
/// worst feasible value (their penalty; `None` while no trial is feasible), `None` for a trial
/// without the objective: the rule every GP designer trains on.
pub(crate) fn objective_values(spec: &StudySpec, history: &[Observation]) -> (f64, Vec<Option<f64>>) {
    let objective = spec.objective();
    let sign = if objective.goal == Goal::Minimize { -1.0 } else { 1.0 };
    let measured = |o: &Observation| match &o.outcome {
        Outcome::Measured(m) => m.get(&objective.id).map(|v| sign * v),
        Outcome::Infeasible => None,
    };
    let worst = history.iter().filter_map(measured).fold(f64::INFINITY, f64::min);
    let values = history
        .iter()
        .map(|o| match &o.outcome {
            Outcome::Infeasible if worst.is_finite() => Some(worst),
            _ => measured(o),
        })
        .collect();
    (sign, values)
}

impl<'h> Training<'h> {
    /// The training data of `history` under `encode`, its outputs warped by a warp of kind
    /// `warping` fitted to them; `None` with fewer than `min` measured trials.
    pub fn new(
        spec: &StudySpec,
        history: &'h [Observation],
        encode: &dyn Fn(&Assignment) -> Vec<f64>,
        min: usize,
        warping: OutputWarping,
    ) -> Option<Training<'h>> {
        let (sign, values) = objective_values(spec, history);
        let mut ranked: Vec<(&Assignment, f64)> = history
            .iter()
            .zip(&values)
            .filter(|(o, _)| matches!(o.outcome, Outcome::Measured(_)))
            .filter_map(|(o, v)| v.map(|v| (&o.assignment, v)))
            .collect();
        if ranked.len() < min.max(2) {
            return None;
        }
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let worst = ranked.iter().map(|(_, y)| *y).fold(f64::INFINITY, f64::min);
        let (x, y): (Vec<Vec<f64>>, Vec<f64>) =
            history.iter().zip(&values).filter_map(|(o, v)| v.map(|v| (encode(&o.assignment), v))).unzip();
        let warp = Warp::fit(warping, &y);
        let y = if warp.is_identity() { y } else { y.iter().map(|v| warp.apply(*v)).collect() };
        Some(Training { sign, worst, ranked, x, y, warp })
    }
}
