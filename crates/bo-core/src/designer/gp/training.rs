//! A study's completed trials as a GP's training data: the objective made a maximisation,
//! infeasible trials at the worst feasible value (their penalty), the trials ranked, the targets
//! warped as the designer asks ([`super::output_warp`]), and each target that is an estimate
//! (a partial trial's predicted final value, [`Observation::objective_sd`]) with its own noise
//! variance, carried through the warp by its slope there (the delta method). The one rule every
//! GP designer trains on; it knows nothing of kernels or fits.

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
    /// Each output's noise variance of its own, in the warped units (`(g'(y)·sd)²` for an
    /// estimate, 0 for a measurement); empty when every output is measured.
    pub extra: Vec<f64>,
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
        let (mut x, mut y, mut sd) = (Vec::new(), Vec::new(), Vec::new());
        for (o, v) in history.iter().zip(&values) {
            if let Some(v) = v {
                x.push(encode(&o.assignment));
                y.push(*v);
                sd.push(o.objective_sd.filter(|s| s.is_finite() && *s > 0.0 && matches!(o.outcome, Outcome::Measured(_))));
            }
        }
        let warp = Warp::fit(warping, &y);
        let y: Vec<f64> = if warp.is_identity() { y } else { y.iter().map(|v| warp.apply(*v)).collect() };
        // `log_slope` takes the warped value.
        let extra: Vec<f64> = if sd.iter().any(Option::is_some) {
            y.iter().zip(&sd).map(|(w, s)| s.map_or(0.0, |s| (warp.log_slope(*w).exp() * s).powi(2))).collect()
        } else {
            Vec::new()
        };
        Some(Training { sign, worst, ranked, x, y, extra, warp })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::designer::testing::fixtures;
    use crate::study::Goal;
    use crate::trial::ParamValue;

    fn observed(x: f64, y: f64, sd: Option<f64>) -> Observation {
        Observation {
            assignment: Assignment::new(BTreeMap::from([("x0".into(), ParamValue::Float(x))])),
            outcome: Outcome::Measured(BTreeMap::from([("loss".to_owned(), y)])),
            objective_sd: sd,
        }
    }

    /// An estimate's spread becomes its own noise variance, carried through the warp by the
    /// warp's slope at its value (the delta method); a measured value has none, an infeasible
    /// trial's penalty none, and a study of measured values no extra at all.
    #[test]
    fn an_estimates_spread_is_its_own_noise_through_the_warp() {
        let spec = StudySpec::new("loss", Goal::Minimize, fixtures::unit_cube(1), "GP_BANDIT");
        let encode = |a: &Assignment| vec![a.0["x0"].as_f64().unwrap_or(0.0)];
        let mut history: Vec<Observation> = (0..8).map(|i| observed(i as f64 / 8.0, (i as f64 - 3.0).powi(2), None)).collect();
        let measured = Training::new(&spec, &history, &encode, 2, OutputWarping::None).unwrap();
        assert!(measured.extra.is_empty(), "no estimate, no extra noise");
        history[2].objective_sd = Some(0.5);
        history.push(Observation { outcome: Outcome::Infeasible, ..observed(0.99, 0.0, Some(3.0)) });
        for warping in [OutputWarping::None, OutputWarping::YeoJohnson, OutputWarping::HalfRank] {
            let t = Training::new(&spec, &history, &encode, 2, warping).unwrap();
            assert_eq!(t.extra.len(), t.y.len(), "{warping:?}");
            let slope = t.warp.log_slope(t.y[2]).exp();
            assert!((t.extra[2] - (slope * 0.5).powi(2)).abs() < 1e-12, "{warping:?}: {:?}", t.extra);
            assert!(t.extra.iter().enumerate().all(|(i, v)| i == 2 || *v == 0.0), "{warping:?}: {:?}", t.extra);
        }
    }
}
