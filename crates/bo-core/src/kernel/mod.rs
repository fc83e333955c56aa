//! Covariance functions over encoded points, with hyperparameters in log space, their analytic
//! gradients, bounds and log-priors.
//!
//! A point is a slice of features: unit-cube coordinates for numeric parameters and category
//! codes (0, 1, …; −1 for inactive) for categorical ones. Each base kernel reads only its own
//! `dims`, so kernels compose: [`Sum`], [`Product`] and [`additive`] groups build the models of
//! the papers from the same parts. Every kernel passes `tests::check_kernel` (symmetry, a
//! positive-definite Gram matrix, gradients against central finite differences).
//!
//! Must not know about data, noise or the GP: that is `gp`.

mod ard;
mod categorical;
mod matern52;
mod squared_exp;
mod sum_product;
#[cfg(test)]
mod tests;

pub use ard::{Ard, LengthScalePrior};
pub use categorical::Categorical;
pub use matern52::{Matern52, matern52};
pub use squared_exp::{SquaredExp, squared_exp};
pub use sum_product::{Product, Sum, additive};

/// A covariance function with hyperparameters θ in log space.
pub trait Kernel: Send + Sync + std::fmt::Debug {
    /// Names of the hyperparameters, in order (e.g. `log_amplitude`, `log_length_scale[3]`).
    fn param_names(&self) -> Vec<String>;
    /// The hyperparameters θ (log space).
    fn params(&self) -> Vec<f64>;
    /// Sets θ; `p.len()` is `n_params()`.
    fn set_params(&mut self, p: &[f64]);
    /// Box bounds of θ.
    fn bounds(&self) -> Vec<(f64, f64)>;
    /// `log p(θ)` up to a constant; adds `∂ log p / ∂θ` into `grad`.
    fn log_prior(&self, grad: &mut [f64]) -> f64;
    /// `k(x, y)`.
    fn eval(&self, x: &[f64], y: &[f64]) -> f64;
    /// `k(x, y)`, writing `∂k/∂θ` into `grad` (length `n_params()`).
    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64;
    /// Adds `∂k(x, y)/∂x` into `out` (length of `x`); zero for categorical dimensions.
    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]);
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn Kernel>;

    /// The number of hyperparameters.
    fn n_params(&self) -> usize {
        self.params().len()
    }
}

impl Clone for Box<dyn Kernel> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// A Gaussian log-density (up to a constant) and its derivative, for priors: `N(mean, sd²)` at `x`.
pub fn normal_log_prior(x: f64, mean: f64, sd: f64) -> (f64, f64) {
    let z = (x - mean) / sd;
    (-0.5 * z * z, -z / sd)
}
