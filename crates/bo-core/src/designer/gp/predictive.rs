//! A GP's predictive distribution at a point ([`Predictive`]): normal in the warped units,
//! mapped back through the output warp, with the observation noise beside it. A
//! [`Prediction`](crate::designer::Prediction) summarises it; calibration reads its quantiles
//! and densities at any level.

use super::Warp;
use super::output_warp::normal_quantile;
use crate::designer::Prediction;
use crate::designer::calibration;

/// A model's predictive distribution of the objective at one point: `sign · g⁻¹(W)`, `W` normal
/// in the model's warped units, beside the model's observation noise there. A [`Prediction`]
/// summarises it; calibration reads its quantiles and densities at any level.
#[derive(Clone, Copy, Debug)]
pub struct Predictive<'a> {
    mean: f64,
    sd: f64,
    noise: f64,
    warp: &'a Warp,
    sign: f64,
}

impl<'a> Predictive<'a> {
    /// `sign · g⁻¹(W)` with `W ~ N(mean, sd²)` and observation noise `noise` (a deviation), both
    /// in the warped units of `warp`.
    pub(crate) fn new(mean: f64, sd: f64, noise: f64, warp: &'a Warp, sign: f64) -> Self {
        Predictive { mean, sd, noise, warp, sign }
    }

    /// The predictive distributions of `gp` (fitted to `warp`ed, `sign`-adjusted values) at
    /// `xs`, its inputs, each latent deviation widened or narrowed by `calibration` at the
    /// point's posterior over prior variance.
    pub(crate) fn of_gp(
        gp: &'a crate::gp::Gp,
        xs: &[Vec<f64>],
        warp: &'a Warp,
        sign: f64,
        calibration: &calibration::ByRegion,
    ) -> Vec<Predictive<'a>> {
        let noise = gp.noise_sd();
        gp.predict(xs)
            .into_iter()
            .zip(gp.prior_variance(xs))
            .map(|((m, v), prior)| {
                let factor = calibration.at(v / prior);
                let (mean, sd) = gp.unstandardize_sd(m, v * factor * factor);
                Predictive::new(mean, sd, noise, warp, sign)
            })
            .collect()
    }

    /// The summary the API returns: median, central 90 % interval, and mean and deviation where
    /// finite.
    pub fn summary(&self) -> Prediction {
        self.warp.prediction(self.mean, self.sd).signed(self.sign)
    }

    /// [`Prediction::normal_approximation`] of [`Predictive::summary`], bit for bit, without
    /// the quadrature of the mean and deviation: what an acquisition over predictions reads.
    pub fn normal_approximation(&self) -> (f64, f64) {
        let (median, lower, upper) = self.warp.central(self.mean, self.sd);
        Prediction { median, lower, upper, mean: None, stddev: None }.signed(self.sign).normal_approximation()
    }

    /// The `p` quantile (0 < p < 1) of the latent objective.
    pub fn quantile(&self, p: f64) -> f64 {
        // The warp is increasing; a sign of −1 turns the upper tail of W into the lower of y.
        let p = if self.sign >= 0.0 { p } else { 1.0 - p };
        self.sign * self.warp.invert(self.mean + self.sd * normal_quantile(p))
    }

    /// The log density of the latent objective at `y`: the normal's at `g(sign · y)` times the
    /// warp's slope there.
    pub fn log_density(&self, y: f64) -> f64 {
        let w = self.warp.apply(self.sign * y);
        let z = (w - self.mean) / self.sd;
        -0.5 * z * z - self.sd.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() + self.warp.log_slope(w)
    }

    /// How an observation `y` the model did not see lies against this prediction, in its warped
    /// units: the evidence [`calibration::factor`] weighs.
    pub fn residual(&self, y: f64) -> calibration::Residual {
        calibration::Residual { error: self.warp.apply(self.sign * y) - self.mean, latent_sd: self.sd, noise_sd: self.noise }
    }

    /// The same distribution with the latent deviation `factor` times as wide.
    pub fn widened(self, factor: f64) -> Self {
        Predictive { sd: self.sd * factor, ..self }
    }
}
