//! `decayCurveStoppingSpec`: "a Gaussian Process Regressor to predict the final objective value
//! of a Trial based on the already completed Trials and the intermediate measurements of the
//! current Trial. Early stopping is requested for the current Trial if there is very low
//! probability to exceed the optimal value found so far" (the proto), after the performance-curve
//! rule of Golovin et al., "Google Vizier" (KDD 2017, §3.2.1).
//!
//! The model: one exact GP over (parameters, position) — the parameters' model features
//! ([`Features`]) and `u = ln(1 + p) / ln(1 + P)`, the position `p` on a log scale relative to
//! the furthest position `P` any finished trial reached, so early steps, where curves move most,
//! are as far apart as late ones — with an ARD Matérn-5/2 kernel (times the exchangeable kernel
//! for categorical parameters), fitted by maximum a-posteriori like the designers' GPs. It learns
//! from the finished trials' thinned curves, each ending at its final value, as residuals from
//! their mean curve over `u` (so an unexplored configuration is expected to end as an average
//! finished trial does, not at the average of all positions); a trial is judged by conditioning
//! the fitted GP on its own thinned curve (no refit: O(n²)) and predicting its value at `u = 1`.
//! It stops when the probability of beating the best safe final value is below [`STOP_BELOW`];
//! it is judged only past a tenth of `P` ([`MIN_PROGRESS`]: judged from its parameters alone,
//! the rule stopped 95 % of trials within a few epochs and lost on two problems of three,
//! docs/journal/benchmarks.md "Early stopping") and never once it has reached `P`.
//!
//! Must not do: I/O or caching: a service keeps one model per set of finished trials.

use rand::Rng;

use super::curves::{CURVE_POINTS, Finished, points, thin};
use super::{StoppingDecision, progress};
use crate::acquisition::ndtr;
use crate::gp::{FitConfig, Gp, Hyperparameters, NoiseBounds, Search, fit};
use crate::kernel::{Categorical, Kernel, LENGTH_SCALE_BOUNDS, Product, matern52};
use crate::linalg::LinalgError;
use crate::space::features::Features;
use crate::study::{Goal, MetricSpec, StudySpec};
use crate::trial::{Assignment, Trial};

/// A trial stops when its chance of beating the best final value is below this (chosen on
/// bo-bench's learning-curve problems, docs/journal/benchmarks.md "Early stopping").
pub const STOP_BELOW: f64 = 0.05;
/// A trial is judged only past this fraction of the furthest position (the convex rule's default
/// `minStepCount`): before it, the prediction is the parameters' alone.
pub const MIN_PROGRESS: f64 = 0.1;
/// Finished curves the model waits for.
pub const MIN_CURVES: usize = 5;

/// Why no model can be fitted yet.
pub fn too_few(finished: &Finished) -> String {
    format!("{} finished trials have curves, the decay-curve rule needs {MIN_CURVES}", finished.curves.len())
}

/// The fitted model of the finished trials' curves.
#[derive(Clone, Debug)]
pub struct DecayCurveModel {
    gp: Gp,
    features: Features,
    /// `ln(1 + P)`, P the furthest position of a finished trial.
    log_horizon: f64,
    horizon: f64,
    /// The mean curve the GP models residuals from.
    trend: Trend,
    best: Option<f64>,
    goal: Goal,
    use_elapsed: bool,
}

impl DecayCurveModel {
    /// Fits the model of `finished` (positions as `use_elapsed` says) for `study`, from `warm`'s
    /// θ alone when given (the optimum moves little as trials finish), else from the default θ and
    /// one random one. `None` before [`MIN_CURVES`] curves, or when no curve moves past position 0.
    pub fn fit(
        study: &StudySpec,
        finished: &Finished,
        warm: Option<&Hyperparameters>,
        rng: &mut dyn Rng,
    ) -> Result<Option<DecayCurveModel>, LinalgError> {
        let use_elapsed = study.stopping.as_ref().is_some_and(|s| s.use_elapsed());
        let Some(FinishedInputs { features, horizon, log_horizon, curves }) = finished_inputs(study, finished) else { return Ok(None) };
        let (x, y): (Vec<Vec<f64>>, Vec<f64>) = curves.into_iter().flatten().unzip();
        let trend = Trend::of(&x, &y);
        let y: Vec<f64> = x.iter().zip(&y).map(|(x, v)| v - trend.at(x[x.len() - 1])).collect();
        let kernel = kernel_for(&features);
        let config = FitConfig {
            noise: NoiseBounds::DEFAULT,
            restarts: 1,
            max_iter: 60,
            search: if warm.is_some() { Search::Warm } else { Search::Full },
            ..FitConfig::default()
        };
        let gp = fit(kernel, x, &y, &config, warm, rng)?;
        Ok(Some(DecayCurveModel {
            gp,
            features,
            log_horizon,
            horizon,
            trend,
            best: finished.best,
            goal: study.objective().goal,
            use_elapsed,
        }))
    }

    /// The fitted hyperparameters, to warm-start the next fit.
    pub fn hyperparameters(&self) -> Hyperparameters {
        self.gp.hyperparameters()
    }

    /// The predicted final value of a trial at `assignment` with the curve `points` so far: the
    /// mean and standard deviation of an observation at the furthest position.
    pub fn predict_final(&self, assignment: &Assignment, points: &[(f64, f64)]) -> Result<(f64, f64), LinalgError> {
        let base = self.features.encode(assignment);
        let points = thin(points, CURVE_POINTS);
        let mut gp = self.gp.with_room(points.len());
        let xs: Vec<Vec<f64>> = points.iter().map(|&(p, _)| at(&base, p, self.log_horizon)).collect();
        let ys = xs.iter().zip(&points).map(|(x, &(_, v))| gp.standardize_value(v - self.trend.at(x[x.len() - 1]))).collect();
        gp.condition_on(xs, ys, None)?;
        let (mean, var) = gp.predict(&[at(&base, self.horizon, self.log_horizon)])[0];
        let noise = self.gp.hyperparameters().log_noise.exp();
        let (mean, sd) = gp.unstandardize_sd(mean, var + noise);
        Ok((mean + self.trend.at(1.0), sd))
    }

    /// The rule's decision on `trial` (running, with a measurement of `objective`).
    pub fn decide(&self, objective: &MetricSpec, trial: &Trial) -> StoppingDecision {
        let Some((at_position, _)) = progress(objective, trial, self.use_elapsed) else {
            return StoppingDecision::go_on("the trial has no measurement of the objective yet");
        };
        if at_position >= self.horizon {
            return StoppingDecision::go_on(format!("the trial reached {at_position}, the furthest a finished trial reached"));
        }
        if at_position <= MIN_PROGRESS * self.horizon {
            return StoppingDecision::go_on(format!("the trial is at {at_position}, not past a tenth of {}", self.horizon));
        }
        let Some(best) = self.best else { return StoppingDecision::go_on("no finished trial is safe yet") };
        let (mean, sd) = match self.predict_final(&trial.assignment, &points(objective, trial, self.use_elapsed)) {
            Ok(p) => p,
            Err(e) => return StoppingDecision::go_on(format!("the curve model could not condition on the trial: {e}")),
        };
        let z = (best - mean) / sd.max(f64::MIN_POSITIVE);
        let chance = match self.goal {
            Goal::Maximize => ndtr(-z),
            Goal::Minimize => ndtr(z),
        };
        let should_stop = chance.is_finite() && chance < STOP_BELOW;
        StoppingDecision {
            should_stop,
            reason: format!("predicted final value {mean:.6} ± {sd:.6} at {}: chance {chance:.4} of beating the best {best}", self.horizon),
            last_measurement: None,
        }
    }
}

/// The mean curve of the finished trials over `u`: the mean value in each of [`TREND_BINS`]
/// equal bins of `u` ∈ [0, 1], interpolated linearly between the bins' mean positions and flat
/// beyond. The GP models each point's residual from it, so an unexplored configuration is
/// predicted to end as an average finished trial ends, not at the average of all positions.
#[derive(Clone, Debug)]
struct Trend(Vec<(f64, f64)>);

/// Bins of the mean curve.
const TREND_BINS: usize = 8;

impl Trend {
    fn of(x: &[Vec<f64>], y: &[f64]) -> Trend {
        let mut bins = vec![(0.0, 0.0, 0usize); TREND_BINS];
        for (x, v) in x.iter().zip(y) {
            let u = x[x.len() - 1].clamp(0.0, 1.0);
            let b = &mut bins[((u * TREND_BINS as f64) as usize).min(TREND_BINS - 1)];
            *b = (b.0 + u, b.1 + v, b.2 + 1);
        }
        Trend(bins.into_iter().filter(|b| b.2 > 0).map(|(u, v, n)| (u / n as f64, v / n as f64)).collect())
    }

    fn at(&self, u: f64) -> f64 {
        let p = &self.0;
        match p.iter().position(|&(c, _)| c >= u) {
            None => p.last().map_or(0.0, |l| l.1),
            Some(0) => p[0].1,
            Some(i) => {
                let ((u0, v0), (u1, v1)) = (p[i - 1], p[i]);
                v0 + (v1 - v0) * (u - u0) / (u1 - u0).max(f64::MIN_POSITIVE)
            }
        }
    }
}

/// What both curve models read of the finished trials ([`super::freeze_thaw`] too).
pub(super) struct FinishedInputs {
    pub features: Features,
    /// The furthest position a finished trial reached, and `ln(1 + P)`.
    pub horizon: f64,
    pub log_horizon: f64,
    /// Each finished curve's points: the model's input `(features, u)` and the value, the last
    /// point at the trial's final value, where it was measured.
    pub curves: Vec<Vec<(Vec<f64>, f64)>>,
}

/// `finished`'s curves as model inputs; `None` before [`MIN_CURVES`] curves, or when no curve
/// moves past position 0.
pub(super) fn finished_inputs(study: &StudySpec, finished: &Finished) -> Option<FinishedInputs> {
    let horizon = finished.horizon().filter(|h| *h > 0.0 && h.is_finite())?;
    if finished.curves.len() < MIN_CURVES {
        return None;
    }
    let features = Features::new(&study.space);
    let log_horizon = horizon.ln_1p();
    let curves = finished
        .curves
        .iter()
        .map(|curve| {
            let base = features.encode(&curve.assignment);
            let last = curve.points.len() - 1;
            curve
                .points
                .iter()
                .enumerate()
                .map(|(k, &(p, v))| (at(&base, p, log_horizon), if k == last { curve.final_value } else { v }))
                .collect()
        })
        .collect();
    Some(FinishedInputs { features, horizon, log_horizon, curves })
}

/// The model's input: the features and the position's `u`.
pub(super) fn at(base: &[f64], position: f64, log_horizon: f64) -> Vec<f64> {
    let mut x = base.to_vec();
    x.push(position.max(0.0).ln_1p() / log_horizon);
    x
}

fn kernel_for(features: &Features) -> Box<dyn Kernel> {
    let mut numeric = features.numeric_dims();
    numeric.push(features.dim());
    let numeric = Box::new(matern52(numeric, 0.5, LENGTH_SCALE_BOUNDS)) as Box<dyn Kernel>;
    let categorical = features.categorical_dims();
    if categorical.is_empty() { numeric } else { Box::new(Product(vec![numeric, Box::new(Categorical::new(categorical))])) }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::stopping::curves::testing::{assignment, curve, finished, running, study};
    use crate::stopping::spec::StoppingSpec;

    fn decay_study() -> StudySpec {
        study(StoppingSpec::DecayCurve { use_elapsed_duration: false })
    }

    #[test]
    fn predicts_final_values_from_early_curves_and_stops_only_the_hopeless() {
        let study = decay_study();
        let model = DecayCurveModel::fit(&study, &finished(12), None, &mut StdRng::seed_from_u64(1)).unwrap().expect("enough curves");
        // A trial far from the best region, seen for 10 of 50 steps: predicted near its true end.
        let (mean, sd) = model.predict_final(&assignment(0.05, 0.5), &curve(0.05, 0.5, 10)).unwrap();
        let truth = curve(0.05, 0.5, 50).last().unwrap().1;
        assert!((mean - truth).abs() < 3.0 * sd + 0.02, "predicted {mean} ± {sd}, truth {truth}");
        let objective = study.objective().clone();
        let decision = model.decide(&objective, &running(0.05, 0.5, 10));
        assert!(decision.should_stop, "{}", decision.reason);
        // One at the optimum is not stopped, nor one that reached the end.
        assert!(!model.decide(&objective, &running(0.7, 0.9, 10)).should_stop);
        assert!(!model.decide(&objective, &running(0.05, 0.5, 50)).should_stop);
    }

    #[test]
    fn waits_for_enough_finished_curves() {
        assert!(DecayCurveModel::fit(&decay_study(), &finished(MIN_CURVES - 1), None, &mut StdRng::seed_from_u64(1)).unwrap().is_none());
    }

    #[test]
    fn warm_fits_reuse_the_last_hyperparameters() {
        let study = decay_study();
        let cold = DecayCurveModel::fit(&study, &finished(12), None, &mut StdRng::seed_from_u64(1)).unwrap().unwrap();
        let warm =
            DecayCurveModel::fit(&study, &finished(12), Some(&cold.hyperparameters()), &mut StdRng::seed_from_u64(2)).unwrap().unwrap();
        let a = cold.predict_final(&assignment(0.3, 0.3), &curve(0.3, 0.3, 5)).unwrap();
        let b = warm.predict_final(&assignment(0.3, 0.3), &curve(0.3, 0.3, 5)).unwrap();
        assert!((a.0 - b.0).abs() < 0.05, "{a:?} vs {b:?}");
    }
}
