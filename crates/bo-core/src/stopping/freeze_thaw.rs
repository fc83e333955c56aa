//! A model of configuration × training progress after freeze-thaw Bayesian optimisation
//! (Swersky, Snoek & Adams 2014): each curve is its configuration's asymptote plus a
//! process that decays along the curve, `y_n(t) = f(x_n) + h(x_n, t) + g_n(t) + ε`.
//!
//! - `f` is a GP over the configurations: the designers' ARD Matérn-5/2, times the exchangeable
//!   kernel for categorical parameters.
//! - `h` is the shape that nearby configurations share: that kernel again, times the
//!   exponential-decay kernel over the position ([`ExpDecay::shared`]). Freeze-thaw itself has
//!   no such term; without it the model ranked final values worse than the decay-curve model on
//!   curves that cross (`lc_b`), and with it better on all three synthetic problems
//!   (docs/journal/benchmarks.md, "Freeze-thaw on the step's own scale").
//! - each `g_n` is independent, with the exponential-decay kernel ([`ExpDecay`]).
//!
//! Unlike the decay-curve model ([`super::decay_curve`]), it learns from *every* trial's curve,
//! partial ones included: a trial paused at its fifth step tells the model about its
//! configuration's asymptote, and through `f` about its neighbours'.
//!
//! Positions are fractions of the furthest position a finished trial reached, `t = p / P`, as
//! in freeze-thaw, where the decay kernel's exponentials are in the position itself. On the
//! decay-curve model's log scale (`ln(1 + p) / ln(1 + P)`, which stretches the first steps) the
//! fit took each curve for an offset that no longer moves and was certain of every final value
//! (docs/journal/benchmarks.md, "Freeze-thaw on the step's own scale").
//!
//! The values are modelled as they are, around a constant mean, not as residuals from the
//! finished trials' mean curve as that model does: a curve that rises to its own level is `f(x)`
//! plus a deviation that dies away along it — freeze-thaw's shape — while its residual from the
//! mean curve grows along it. A prior mean for the deviation (the finished curves' mean rise to
//! their final values) was measured and made the predictions worse. A trial's predicted final
//! value is the model's value at `t = 1` for its curve.
//!
//! Not yet used by a rule or a suggestion: `bo-bench curve-predictions` measures it against the
//! decay-curve model (issue 72). Must not do: I/O, or decide anything.

use rand::Rng;

use super::curves::{CURVE_POINTS, Finished, thin};
use super::decay_curve::{FinishedInputs, at, finished_inputs};
use crate::gp::{FitConfig, Gp, NoiseBounds, Search, fit};
use crate::kernel::{Categorical, ExpDecay, Kernel, LENGTH_SCALE_BOUNDS, Product, Sum, matern52};
use crate::linalg::LinalgError;
use crate::space::features::Features;
use crate::study::StudySpec;
use crate::trial::Assignment;

/// The fitted model of the study's curves, finished and partial.
#[derive(Clone, Debug)]
pub struct FreezeThawModel {
    gp: Gp,
    features: Features,
    log_horizon: f64,
    horizon: f64,
    /// Each partial curve's configuration features and code, in the order given to the fit.
    partial: Vec<(Vec<f64>, f64)>,
    /// A code no curve of the fit has: a new curve's.
    fresh: f64,
}

impl FreezeThawModel {
    /// Fits the model on `finished`'s curves and the `partial` curves (a configuration and its
    /// (position, value) points so far). `None` before
    /// [`MIN_CURVES`](super::decay_curve::MIN_CURVES) finished curves, or when no finished curve
    /// moves past position 0.
    pub fn fit(
        study: &StudySpec,
        finished: &Finished,
        partial: &[(Assignment, Vec<(f64, f64)>)],
        rng: &mut dyn Rng,
    ) -> Result<Option<FreezeThawModel>, LinalgError> {
        let Some(FinishedInputs { features, horizon, log_horizon, curves }) = finished_inputs(study, finished) else { return Ok(None) };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        let mut code = 0.0;
        for curve in curves {
            for (point, v) in curve {
                x.push(coded(point, code, log_horizon));
                y.push(v);
            }
            code += 1.0;
        }
        let mut partial_codes = Vec::with_capacity(partial.len());
        for (assignment, points) in partial {
            let base = features.encode(assignment);
            for &(p, v) in &thin(points, CURVE_POINTS) {
                x.push(coded(at(&base, p, log_horizon), code, log_horizon));
                y.push(v);
            }
            partial_codes.push((base, code));
            code += 1.0;
        }
        let config = FitConfig { noise: NoiseBounds::DEFAULT, restarts: 1, max_iter: 60, search: Search::Full, ..FitConfig::default() };
        let gp = fit(kernel_for(&features), x, &y, &config, None, rng)?;
        Ok(Some(FreezeThawModel { gp, features, log_horizon, horizon, partial: partial_codes, fresh: code }))
    }

    /// The predicted final value of the `k`-th partial curve given to the fit: the mean and
    /// standard deviation of an observation at the furthest position.
    pub fn predict_partial(&self, k: usize) -> (f64, f64) {
        let (base, code) = &self.partial[k];
        self.final_of(&self.gp, base, *code)
    }

    /// The predicted final value of a curve the fit did not see, at `assignment` with `points`
    /// so far (conditioned on them, no refit).
    pub fn predict_final(&self, assignment: &Assignment, points: &[(f64, f64)]) -> Result<(f64, f64), LinalgError> {
        let base = self.features.encode(assignment);
        let points = thin(points, CURVE_POINTS);
        let mut gp = self.gp.with_room(points.len());
        let xs: Vec<Vec<f64>> = points.iter().map(|&(p, _)| coded(at(&base, p, self.log_horizon), self.fresh, self.log_horizon)).collect();
        let ys = points.iter().map(|&(_, v)| gp.standardize_value(v)).collect();
        gp.condition_on(xs, ys, None)?;
        Ok(self.final_of(&gp, &base, self.fresh))
    }

    fn final_of(&self, gp: &Gp, base: &[f64], code: f64) -> (f64, f64) {
        let (mean, var) = gp.predict(&[coded(at(base, self.horizon, self.log_horizon), code, self.log_horizon)])[0];
        let noise = self.gp.hyperparameters().log_noise.exp();
        let (mean, sd) = gp.unstandardize_sd(mean, var + noise);
        (mean, sd)
    }
}

/// A point of the model: the features, the position as a fraction of the furthest, `p / P`
/// (the decay-curve model's log scale `u = ln(1 + p) / ln(1 + P)` turned back), and the curve's
/// code.
fn coded(mut x: Vec<f64>, code: f64, log_horizon: f64) -> Vec<f64> {
    if let Some(u) = x.last_mut() {
        *u = (*u * log_horizon).exp_m1() / log_horizon.exp_m1();
    }
    x.push(code);
    x
}

/// The model's kernel: `f`'s over the configuration ([`configuration`]), plus the shape every
/// curve shares near its configuration (that kernel again, times a decay over the position shared
/// by all curves), plus the decay within each curve.
fn kernel_for(features: &Features) -> Box<dyn Kernel> {
    let (t, code) = (features.dim(), features.dim() + 1);
    let shape = Box::new(Product(vec![configuration(features), Box::new(ExpDecay::shared(t))]));
    Box::new(Sum(vec![configuration(features), shape, Box::new(ExpDecay::new(t, code))]))
}

/// An ARD Matérn-5/2 over the numeric features, times the exchangeable kernel over the
/// categorical ones if there are any.
fn configuration(features: &Features) -> Box<dyn Kernel> {
    let numeric = Box::new(matern52(features.numeric_dims(), 0.5, LENGTH_SCALE_BOUNDS)) as Box<dyn Kernel>;
    let categorical = features.categorical_dims();
    if categorical.is_empty() { numeric } else { Box::new(Product(vec![numeric, Box::new(Categorical::new(categorical))])) }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::stopping::curves::testing::{assignment, curve, finished, study};
    use crate::stopping::spec::StoppingSpec;

    /// A trial far from the best region, seen for 10 of 50 steps, is predicted near its true end,
    /// whether the fit saw its prefix or not.
    #[test]
    fn predicts_final_values_from_partial_curves_seen_or_not() {
        let study = study(StoppingSpec::DecayCurve { use_elapsed_duration: false });
        let partial = vec![(assignment(0.05, 0.5), curve(0.05, 0.5, 10))];
        let model = FreezeThawModel::fit(&study, &finished(12), &partial, &mut StdRng::seed_from_u64(1)).unwrap().expect("enough curves");
        let truth = curve(0.05, 0.5, 50).last().unwrap().1;
        for (mean, sd) in [model.predict_partial(0), model.predict_final(&assignment(0.05, 0.5), &curve(0.05, 0.5, 10)).unwrap()] {
            assert!(sd > 0.0 && (mean - truth).abs() < 3.0 * sd + 0.02, "predicted {mean} ± {sd}, truth {truth}");
        }
        assert!(
            FreezeThawModel::fit(&study, &finished(crate::stopping::decay_curve::MIN_CURVES - 1), &[], &mut StdRng::seed_from_u64(1))
                .unwrap()
                .is_none()
        );
    }
}
