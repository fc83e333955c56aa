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

mod add_tree;
mod ard;
mod branching_nested;
mod categorical;
mod exp;
mod exp_decay;
mod group_additive;
mod input_warp;
mod matern52;
mod squared_exp;
mod sum_product;
#[cfg(test)]
mod tests;

pub use add_tree::{AddTree, Term};
pub use ard::{Ard, LengthScalePrior, Profile};
pub use branching_nested::{Branch, BranchingNested, Nested};
pub use categorical::Categorical;
pub use exp_decay::ExpDecay;
pub use group_additive::GroupAdditive;
pub use input_warp::InputWarped;
pub use matern52::{Matern52, Matern52Profile, matern52};
pub use squared_exp::{SquaredExp, SquaredExpProfile, squared_exp};
pub use sum_product::{Product, Sum, additive};

use faer::{Mat, MatRef};

/// The bounds of a length scale on the unit cube, for every GP of this crate: below 0.01 a GP on
/// a few hundred points interpolates noise (Kandasamy et al. 2015's code searches bandwidths in
/// [1e-5, 5] on [0, 1]); above 20 a coordinate hardly matters.
pub const LENGTH_SCALE_BOUNDS: (f64, f64) = (0.01, 20.0);

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

    /// The Gram matrix `K[i, j] = k(xᵢ, xⱼ)`. The default evaluates every pair; the base
    /// kernels override it with loops that hoist their per-parameter work out of the pairs.
    fn gram(&self, xs: &[Vec<f64>]) -> Mat<f64> {
        let n = xs.len();
        let mut k = Mat::zeros(n, n);
        for j in 0..n {
            for i in j..n {
                let v = self.eval(&xs[i], &xs[j]);
                k[(i, j)] = v;
                k[(j, i)] = v;
            }
        }
        k
    }

    /// The cross-covariance `K[i, j] = k(aᵢ, bⱼ)`.
    fn cross(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> Mat<f64> {
        Mat::from_fn(a.len(), b.len(), |i, j| self.eval(&a[i], &b[j]))
    }

    /// Adds `Σᵢⱼ W[i, j] ∂k(xᵢ, xⱼ)/∂θ_q` into `out[q]` for a symmetric `w` (n × n): the
    /// contraction the likelihood gradient needs, without n² gradient vectors.
    fn gram_grad_dot(&self, xs: &[Vec<f64>], w: &Mat<f64>, out: &mut [f64]) {
        let mut dk = vec![0.0; out.len()];
        for j in 0..xs.len() {
            for i in j..xs.len() {
                let factor = if i == j { w[(i, i)] } else { 2.0 * w[(i, j)] };
                self.eval_grad(&xs[i], &xs[j], &mut dk);
                for (o, g) in out.iter_mut().zip(&dk) {
                    *o += factor * g;
                }
            }
        }
    }

    /// Adds `Σᵢ W[i, c] ∂k(x, dataᵢ)/∂x` into `out[c]` for each column `c` of `w` (n × r): the
    /// contraction a posterior's x-gradient needs (the mean's weights are α, the variance's
    /// K⁻¹k(X, x)), in one pass over the data instead of one gradient vector per point.
    fn grad_x_dot(&self, x: &[f64], data: &[Vec<f64>], w: MatRef<'_, f64>, out: &mut [Vec<f64>]) {
        let mut dk = vec![0.0; x.len()];
        for (i, xi) in data.iter().enumerate() {
            dk.iter_mut().for_each(|v| *v = 0.0);
            self.grad_x(x, xi, &mut dk);
            for (c, o) in out.iter_mut().enumerate() {
                let wi = w[(i, c)];
                o.iter_mut().zip(&dk).for_each(|(o, g)| *o += wi * g);
            }
        }
    }

    /// [`Kernel::grad_x_dot`] at each of the points `xs` at once, given `k_star = cross(data, xs)`
    /// (a posterior's cross-covariance, n × m): for point `j` and each weight matrix
    /// `weights[c]` — n × m, or n × 1 for one column every point shares (a posterior mean's α) —
    /// adds `Σᵢ W_c[i, j] ∂k(xs_j, dataᵢ)/∂x` into `out[j][c]`. A kernel whose derivative follows
    /// from its value (the ARD profiles) spends no second transcendental per pair and prepares
    /// the data once for the batch; the default calls `grad_x_dot` per point.
    fn grad_x_dot_batch(
        &self,
        xs: &[Vec<f64>],
        data: &[Vec<f64>],
        k_star: MatRef<'_, f64>,
        weights: &[MatRef<'_, f64>],
        out: &mut [Vec<Vec<f64>>],
    ) {
        let _ = k_star;
        for (j, (x, out)) in xs.iter().zip(out).enumerate() {
            let w = Mat::from_fn(data.len(), weights.len(), |i, c| weights[c][(i, weight_column(weights[c], j))]);
            self.grad_x_dot(x, data, w.as_ref(), out);
        }
    }

    /// What the hyperparameters mean in the model's terms, for a model's description (e.g. the
    /// branch correlations γ of [`BranchingNested`]); `Null` when the names say it all.
    fn summary(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

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

/// The column of a weight matrix of [`Kernel::grad_x_dot_batch`] that point `j` reads: its own,
/// or the one column every point shares.
pub(crate) fn weight_column(w: MatRef<'_, f64>, j: usize) -> usize {
    if w.ncols() == 1 { 0 } else { j }
}

/// A Gaussian log-density (up to a constant) and its derivative, for priors: `N(mean, sd²)` at `x`.
pub fn normal_log_prior(x: f64, mean: f64, sd: f64) -> (f64, f64) {
    let z = (x - mean) / sd;
    (-0.5 * z * z, -z / sd)
}
