//! What a model predicts at a point, for the model page and the API: a [`Prediction`] — the
//! median, a central 90 % interval, and the mean and deviation where finite — in the
//! objective's own units.

use serde::Serialize;

/// A prediction of the objective at one point: the model's predictive distribution of the
/// latent objective (without observation noise), in its units. Under an output warp it is not
/// normal, so it is given by quantiles, and by its mean and standard deviation where they are
/// finite.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The median.
    pub median: f64,
    /// The 5 % quantile: the lower end of the central 90 % interval.
    pub lower: f64,
    /// The 95 % quantile.
    pub upper: f64,
    /// The mean, where it is finite.
    pub mean: Option<f64>,
    /// The standard deviation, where it is finite.
    pub stddev: Option<f64>,
}

impl Prediction {
    /// The prediction of `sign · y` from one of `y` (`sign` ±1): a model of a maximisation
    /// turned back to the study's direction.
    pub fn signed(self, sign: f64) -> Prediction {
        if sign >= 0.0 {
            return self;
        }
        Prediction { median: -self.median, lower: -self.upper, upper: -self.lower, mean: self.mean.map(|m| -m), stddev: self.stddev }
    }

    /// The normal with this prediction's median and central 90 % interval, as (centre,
    /// deviation): what an acquisition over a model's predictions (hypervolume, a context's
    /// improvement) takes the prediction to be. Under no warp it is the posterior itself.
    pub fn normal_approximation(&self) -> (f64, f64) {
        (self.median, (self.upper - self.lower) / (2.0 * Z_95))
    }
}

/// Φ⁻¹(0.95): a central 90 % interval is 2 × 1.645 deviations of a normal wide.
pub(crate) const Z_95: f64 = 1.644_853_626_951_472;
