//! Exact Gaussian-process regression (Rasmussen & Williams 2006, Alg. 2.1) on standardised
//! outputs: the posterior mean and variance (and their gradients in x, for acquisition
//! optimisation), in batch; conditioning on one more point in O(n²) by extending the Cholesky
//! factor — which is how pending trials and batch members become fantasies; and, in [`fit`], the
//! log marginal likelihood with its analytic gradient, maximised by multi-start L-BFGS. A point
//! may carry a known noise variance of its own on top of the fitted one (a target that is an
//! estimate: `K + σ²I + diag(extra)`, Rasmussen & Williams 2006, §2.2 with a heteroscedastic
//! diagonal); fantasies carry none.
//!
//! A GP may stand on a *base*: another GP fitted before on other data (a prior study), whose
//! posterior is this one's prior mean (OSS Vizier's stacked residual GP, `set_priors`). It is
//! fitted on the residuals `y − μ_base(x)`; it predicts the sum of the two means and, for the
//! deviation, their weighted geometric mean `σ_top^α σ_base^(1−α)`, with α from the two models'
//! degrees of freedom (Vizier's `combine_predictions_with_aux`): little data of its own, and the
//! base's deviation dominates.
//!
//! Must not know about search spaces, trials or acquisitions.

pub mod fit;
pub mod sample;

use std::sync::Arc;

use faer::{Mat, MatRef};
use serde::{Deserialize, Serialize};

use crate::kernel::Kernel;
use crate::linalg::{Cholesky, LinalgError, dot};

pub use fit::{FitConfig, NoiseBounds, Search, fit, fit_subset, fit_with, log_marginal_likelihood};

/// The smallest posterior variance reported (standardised units), so σ is never 0.
pub const MIN_VARIANCE: f64 = 1e-12;

/// A GP's hyperparameters: the kernel's θ and the log noise variance (standardised units).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hyperparameters {
    /// The kernel's parameters, log space, in `Kernel::param_names` order.
    pub kernel: Vec<f64>,
    /// Their names.
    pub names: Vec<String>,
    /// log σ²_noise.
    pub log_noise: f64,
    /// θ drawn from its posterior besides the fitted one, each the kernel's parameters then
    /// log σ²_noise ([`FitConfig::samples`]); empty for a fit that kept one θ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Vec<f64>>,
}

/// One observation as the GP predicts it from all the others (see [`Gp::loo_residuals`]), in
/// standardised units.
#[derive(Clone, Copy, Debug)]
pub struct LooResidual {
    /// The observation less its leave-one-out mean.
    pub error: f64,
    /// The leave-one-out predictive variance, the noise included.
    pub variance: f64,
    /// The noise variance.
    pub noise: f64,
    /// The kernel's prior variance there.
    pub prior_var: f64,
}

impl LooResidual {
    /// The leave-one-out variance of the latent function (never below 1e-12).
    pub fn latent_var(&self) -> f64 {
        (self.variance - self.noise).max(1e-12)
    }
}

/// A GP conditioned on data.
#[derive(Clone, Debug)]
pub struct Gp {
    kernel: Box<dyn Kernel>,
    log_noise: f64,
    x: Vec<Vec<f64>>,
    /// Standardised targets.
    y: Vec<f64>,
    /// Each point's noise variance beyond the model's (standardised units): a target that is
    /// itself an estimate, e.g. a partial trial's predicted final value, is that much less
    /// certain. Empty when every point has the model's noise alone; else one per point.
    extra: Vec<f64>,
    y_mean: f64,
    y_std: f64,
    chol: Cholesky,
    /// `(K + σ²I)⁻¹ (y − offsets)`.
    alpha: Vec<f64>,
    /// The GP this one stands on, if any.
    base: Option<Base>,
    /// The same data's GPs at θ drawn from its posterior ([`FitConfig::samples`]): predictions
    /// are the equal mixture of this GP's and theirs, moment-matched. Empty: this θ alone.
    members: Vec<Gp>,
}

/// The base a GP stands on: its posterior mean is the GP's prior mean.
#[derive(Clone, Debug)]
struct Base {
    gp: Arc<Gp>,
    /// The base's mean at each point, in this GP's standardised units: `y − offsets` are the
    /// residuals the GP is conditioned on.
    offsets: Vec<f64>,
    /// α, the weight of this GP's own deviation in the geometric mean with the base's.
    weight: f64,
}

/// Points a prediction takes at once: more are predicted a chunk at a time (see
/// [`Gp::predict_component`]).
pub const PREDICT_CHUNK: usize = 256;

/// The expected RMS fractional mismatch between a base's deviation and a top model's
/// (Vizier's `expected_base_stddev_mismatch`, its default).
const BASE_STDDEV_MISMATCH: f64 = 1.0;

/// The degrees of freedom of a model of `n` points and `p` hyperparameters (Vizier's
/// `_compute_dof`).
fn degrees_of_freedom(n: usize, p: usize) -> f64 {
    let (n, p) = (n as f64, p as f64);
    (n - p).max(n / (1.0 + p))
}

/// α of the geometric mean of a top model's deviation with its base's: near 0 while the top
/// has few points beside the base, near 1 once it has many.
pub fn stack_weight(top: (usize, usize), base: (usize, usize)) -> f64 {
    let dof_top = degrees_of_freedom(top.0, top.1);
    let dof_base = degrees_of_freedom(base.0, base.1).max(f64::MIN_POSITIVE);
    let beta_sq = dof_top / dof_base * (1.0 + dof_base + BASE_STDDEV_MISMATCH.powi(2));
    beta_sq / (1.0 + beta_sq)
}

/// Mean and variance with their gradients in x, standardised units.
#[derive(Clone, Debug)]
pub struct PosteriorGrad {
    /// μ(x).
    pub mean: f64,
    /// σ²(x).
    pub var: f64,
    /// ∂μ/∂x.
    pub d_mean: Vec<f64>,
    /// ∂σ²/∂x.
    pub d_var: Vec<f64>,
}

/// Above this magnitude a target's square (or a sum of targets) could overflow: standardise in
/// units of the largest magnitude instead.
const LARGE_TARGET: f64 = 1e150;

/// `y` standardised: (mean, std) with std 1 for constant or single targets. Finite targets of
/// any magnitude, up to ±f64::MAX, give finite results: huge ones are standardised in units of
/// the largest; for ordinary ones the unit is 1 and the arithmetic the plain one.
pub fn standardize(y: &[f64]) -> (Vec<f64>, f64, f64) {
    let n = y.len().max(1) as f64;
    let largest = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let unit = if largest > LARGE_TARGET && largest.is_finite() { largest } else { 1.0 };
    let z: Vec<f64> = y.iter().map(|v| v / unit).collect();
    let mean = z.iter().sum::<f64>() / n;
    let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    // Constant targets (a variance that is nothing in the targets' own units) keep std 1.
    let (std, std_z) = if var > 1e-24 / (unit * unit) { (var.sqrt() * unit, var.sqrt()) } else { (1.0, 1.0 / unit) };
    (z.iter().map(|v| (v - mean) / std_z).collect(), mean * unit, std)
}

impl Gp {
    /// The posterior of `kernel` (with its current θ) and noise `exp(log_noise)` given `x` and
    /// already-standardised `y` (`y_mean`, `y_std` restore the original scale).
    pub fn new(kernel: Box<dyn Kernel>, log_noise: f64, x: Vec<Vec<f64>>, y: Vec<f64>, y_mean: f64, y_std: f64) -> Result<Gp, LinalgError> {
        Gp::with_extra_noise(kernel, log_noise, x, y, Vec::new(), y_mean, y_std)
    }

    /// [`Gp::new`] where point `i` is observed with noise variance `exp(log_noise) + extra[i]`
    /// (standardised units; `extra` empty, or one finite non-negative value per point).
    pub fn with_extra_noise(
        kernel: Box<dyn Kernel>,
        log_noise: f64,
        x: Vec<Vec<f64>>,
        y: Vec<f64>,
        extra: Vec<f64>,
        y_mean: f64,
        y_std: f64,
    ) -> Result<Gp, LinalgError> {
        assert!(extra.is_empty() || extra.len() == x.len(), "extra noise: one value per point");
        let k = gram(kernel.as_ref(), &x, log_noise.exp(), &extra);
        let chol = Cholesky::new(&k)?;
        let alpha = chol.solve(&y);
        Ok(Gp { kernel, log_noise, x, y, extra, y_mean, y_std, chol, alpha, base: None, members: Vec::new() })
    }

    /// Each point's noise variance beyond the model's (standardised units); empty when none.
    pub fn extra_noise(&self) -> &[f64] {
        &self.extra
    }

    /// The noise variance of point `i` (standardised units): the model's, plus its own extra.
    fn noise_at(&self, i: usize) -> f64 {
        self.log_noise.exp() + self.extra.get(i).copied().unwrap_or(0.0)
    }

    /// This GP, fitted on the residuals of `base` over its points, standing on `base`: its targets
    /// become the observations themselves (residual + the base's mean), its predictions the
    /// stack's. `fitted_on` is the number of points its θ was fitted to (its degrees of freedom).
    pub fn on_base(mut self, base: Arc<Gp>, fitted_on: usize) -> Gp {
        let offsets: Vec<f64> = base.mean_original(&self.x).into_iter().map(|m| m / self.y_std).collect();
        self.y.iter_mut().zip(&offsets).for_each(|(y, o)| *y += o);
        let weight = stack_weight((fitted_on, self.kernel.n_params() + 1), (base.n(), base.kernel.n_params() + 1));
        self.members = std::mem::take(&mut self.members).into_iter().map(|m| m.on_base(base.clone(), fitted_on)).collect();
        self.base = Some(Base { gp: base, offsets, weight });
        self
    }

    /// This GP with `members`: the same data's GPs at θ drawn from its posterior, whose
    /// predictions its own are mixed with (see [`Gp::predict`]).
    pub fn with_members(mut self, members: Vec<Gp>) -> Gp {
        self.members = members;
        self
    }

    /// How many GPs its predictions mix: 1, and one per θ sampled.
    pub fn mixture_size(&self) -> usize {
        1 + self.members.len()
    }

    /// The posterior mean at `xs` in the original units (the stack's, with a base), without the
    /// variance: O(n) a point where [`Gp::predict`] is O(n²). What a GP standing on this one
    /// subtracts from its observations.
    pub fn mean_original(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        if xs.is_empty() {
            return Vec::new();
        }
        if !self.members.is_empty() {
            let all: Vec<Vec<f64>> = std::iter::once(self).chain(&self.members).map(|g| g.mean_original_one(xs)).collect();
            return (0..xs.len()).map(|j| all.iter().map(|m| m[j]).sum::<f64>() / all.len() as f64).collect();
        }
        self.mean_original_one(xs)
    }

    /// [`Gp::mean_original`] at this GP's θ alone.
    fn mean_original_one(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        let k_star = self.kernel.cross(&self.x, xs);
        let base = self.base.as_ref().map(|b| b.gp.mean_original(xs));
        (0..xs.len())
            .map(|j| {
                let own: f64 = k_star.col_as_slice(j).iter().zip(&self.alpha).map(|(k, a)| k * a).sum();
                own * self.y_std + self.y_mean + base.as_ref().map_or(0.0, |b| b[j])
            })
            .collect()
    }

    /// Posterior mean and variance at `xs` in the original units (the stack's, with a base).
    pub fn predict_original(&self, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        self.predict(xs).into_iter().map(|(m, v)| self.unstandardize(m, v)).collect()
    }

    /// The weight of this GP's own deviation against its base's (1 without a base).
    pub fn stack_weight(&self) -> f64 {
        self.base.as_ref().map_or(1.0, |b| b.weight)
    }

    /// The number of GPs under this one.
    pub fn stack_depth(&self) -> usize {
        self.base.as_ref().map_or(0, |b| 1 + b.gp.stack_depth())
    }

    /// The residual targets the factor solves for.
    fn residuals(&self) -> Vec<f64> {
        match &self.base {
            Some(b) => self.y.iter().zip(&b.offsets).map(|(y, o)| y - o).collect(),
            None => self.y.clone(),
        }
    }

    /// The number of points conditioned on (fantasies included).
    pub fn n(&self) -> usize {
        self.x.len()
    }

    /// The leave-one-out log predictive density of each observation, in the objective's own
    /// units (Rasmussen & Williams 2006, eq. 5.10–5.12, at the fitted θ): each point predicted by
    /// the GP conditioned on all the others, `μ₋ᵢ = yᵢ − αᵢ/[K⁻¹]ᵢᵢ`, `σ²₋ᵢ = 1/[K⁻¹]ᵢᵢ` (the
    /// noise included), under a constant prior mean at the observations' mean (where fitting
    /// puts it, whatever [`Gp::set_prior_mean`] moved it to since) or on a base's residuals: a
    /// score of the kernel. Comparable point by point between models of the same observations
    /// whatever their kernels; O(n³) for the inverse, about as much as one fit.
    pub fn loo_log_predictive(&self) -> Vec<f64> {
        let ln_2pi = (2.0 * std::f64::consts::PI).ln();
        let ln_scale = self.y_std.ln();
        self.loo_residuals(usize::MAX)
            .into_iter()
            .map(|r| -0.5 * (ln_2pi + r.variance.ln() + r.error * r.error / r.variance) - ln_scale)
            .collect()
    }

    /// The leave-one-out residuals of at most `most` observations, spread evenly over the data,
    /// in standardised units at the fitted θ (Rasmussen & Williams 2006, eq. 5.12): each point's
    /// error `yᵢ − μ₋ᵢ = αᵢ/[K⁻¹]ᵢᵢ` and variance `1/[K⁻¹]ᵢᵢ`, with the prior variance `k(xᵢ,
    /// xᵢ)` there — how far off the model is at a point, and how much the rest of the data told
    /// it there. All of them take the inverse, O(n³) as one fit; `m` of fewer, `[K⁻¹]ᵢᵢ =
    /// ‖L⁻¹eᵢ‖²`, O(n²m). With members (θ sampled), each point's residuals under every θ,
    /// moment-matched as [`Gp::predict`] mixes predictions.
    pub fn loo_residuals(&self, most: usize) -> Vec<LooResidual> {
        if self.members.is_empty() {
            return self.loo_residuals_one(most);
        }
        let all: Vec<Vec<LooResidual>> = std::iter::once(self).chain(&self.members).map(|g| g.loo_residuals_one(most)).collect();
        let k = all.len() as f64;
        let mean = |j: usize, f: &dyn Fn(&LooResidual) -> f64| all.iter().map(|r| f(&r[j])).sum::<f64>() / k;
        (0..all[0].len())
            .map(|j| {
                let (error, variance) = moment_matched(all.iter().map(|r| (r[j].error, r[j].variance)));
                LooResidual { error, variance, noise: mean(j, &|r| r.noise), prior_var: mean(j, &|r| r.prior_var) }
            })
            .collect()
    }

    /// [`Gp::loo_residuals`] at this GP's θ alone.
    fn loo_residuals_one(&self, most: usize) -> Vec<LooResidual> {
        let n = self.n();
        let m = n.min(most);
        if m == 0 {
            return Vec::new();
        }
        let alpha = self.chol.solve(&self.centred_residuals());
        let at: Vec<usize> = (0..m).map(|k| k * n / m).collect();
        let precisions: Vec<f64> = if m == n {
            let inverse = self.chol.inverse();
            (0..n).map(|i| inverse[(i, i)]).collect()
        } else {
            let columns = self.chol.solve_lower_mat(Mat::from_fn(n, m, |i, j| if i == at[j] { 1.0 } else { 0.0 }));
            (0..m).map(|j| columns.col(j).squared_norm_l2()).collect()
        };
        at.iter()
            .zip(precisions)
            .map(|(&i, precision)| {
                let precision = precision.max(f64::MIN_POSITIVE);
                LooResidual {
                    error: alpha[i] / precision,
                    variance: 1.0 / precision,
                    noise: self.noise_at(i),
                    prior_var: self.kernel.eval(&self.x[i], &self.x[i]),
                }
            })
            .collect()
    }

    /// `folds`-fold cross-validated residuals, in the order of the points: the points of each
    /// fold (every `folds`-th in the order held) predicted by a GP whose θ was optimised again
    /// on the rest (from this GP's θ, at most 25 iterations, noise within `noise`), under this
    /// GP's prior mean and in its standardised units. Unlike [`Gp::loo_residuals`] at the fitted θ they see how
    /// uncertain θ itself is. `None` on a GP standing on a base or with fewer than `2 · folds`
    /// points; a fold whose fit fails is left out. O(folds) fits.
    pub fn cross_validated_residuals(&self, folds: usize, noise: NoiseBounds) -> Option<Vec<LooResidual>> {
        let n = self.n();
        if self.base.is_some() || folds < 2 || n < 2 * folds {
            return None;
        }
        let own = self.hyperparameters();
        let level = self.log_noise.exp();
        let noise = NoiseBounds { min: noise.min.min(level), max: noise.max.max(level) };
        let config = FitConfig { noise, restarts: 0, search: Search::Warm, max_iter: 25, ..FitConfig::default() };
        // A warm search draws nothing; the generator is only what `fit` takes.
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
        let mut out: Vec<Option<LooResidual>> = vec![None; n];
        for f in 0..folds {
            let (held, kept): (Vec<usize>, Vec<usize>) = (0..n).partition(|i| i % folds == f);
            let x: Vec<Vec<f64>> = kept.iter().map(|&i| self.x[i].clone()).collect();
            let y: Vec<f64> = kept.iter().map(|&i| self.y[i]).collect();
            // Back in the fold's raw units (this GP's standardised ones), as `fit_with` takes them.
            let extra: Vec<f64> = if self.extra.is_empty() { Vec::new() } else { kept.iter().map(|&i| self.extra[i]).collect() };
            let Ok(mut fold) = fit_with(self.kernel.clone_box(), x, &y, &extra, &config, Some(&own), &mut rng) else { continue };
            // This GP's prior mean is 0 in its standardised units, the fold's original ones.
            fold.set_prior_mean(-fold.y_mean / fold.y_std);
            let xs: Vec<Vec<f64>> = held.iter().map(|&i| self.x[i].clone()).collect();
            let scale = fold.y_std * fold.y_std;
            let noise_var = fold.log_noise.exp() * scale;
            for ((&i, (m, v)), prior) in held.iter().zip(fold.predict(&xs)).zip(fold.prior_variance(&xs)) {
                let (m, v) = fold.unstandardize(m, v);
                let noise = noise_var + self.extra.get(i).copied().unwrap_or(0.0);
                out[i] = Some(LooResidual { error: self.y[i] - m, variance: v + noise, noise, prior_var: prior * scale });
            }
        }
        Some(out.into_iter().flatten().collect())
    }

    /// The prior variance of the latent function at each of `xs` (standardised units); with
    /// members, its mean over the mixture's θ.
    pub fn prior_variance(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        let k = self.mixture_size() as f64;
        xs.iter().map(|x| std::iter::once(self).chain(&self.members).map(|g| g.kernel.eval(x, x)).sum::<f64>() / k).collect()
    }

    /// The sequential log predictive density of each observation given those before it, in
    /// the order the GP holds them and in the objective's own units, at the fitted θ: the chain
    /// rule's terms of the log marginal likelihood, `log p(yᵢ | y₁…yᵢ₋₁)`, read off the factor
    /// (`zᵢ²/2 + ln Lᵢᵢ + ½ ln 2π` with `z = L⁻¹y`), under the same centring as
    /// [`Gp::loo_log_predictive`]. Summed over the later observations it is the conditional
    /// marginal likelihood (Lotfi et al. 2022): how well the model would have predicted the
    /// points a search went on to choose. O(n²).
    pub fn sequential_log_predictive(&self) -> Vec<f64> {
        let n = self.n();
        let z = self.chol.solve_lower(&self.centred_residuals());
        let l = self.chol.l();
        let constant = 0.5 * (2.0 * std::f64::consts::PI).ln() + self.y_std.ln();
        (0..n).map(|i| -0.5 * z[i] * z[i] - l[(i, i)].ln() - constant).collect()
    }

    /// What the self-predictions score: the residuals on a base, else the targets less their
    /// mean (the constant prior mean a fit puts there, wherever [`Gp::set_prior_mean`] moved it).
    fn centred_residuals(&self) -> Vec<f64> {
        if self.base.is_some() {
            return self.residuals();
        }
        let mean = self.y.iter().sum::<f64>() / self.y.len().max(1) as f64;
        self.y.iter().map(|v| v - mean).collect()
    }

    /// The kernel.
    pub fn kernel(&self) -> &dyn Kernel {
        self.kernel.as_ref()
    }

    /// An estimate of the heap the GP holds, in bytes: its factor, inputs, targets and weights,
    /// and the GP it stands on (checked against a counting allocator in `tests/memory.rs`).
    pub fn memory_bytes(&self) -> usize {
        let n = self.x.len();
        let width = self.x.first().map_or(0, Vec::len);
        self.chol.memory_bytes()
            + n * (8 * width + 48)
            + 16 * n
            + 8 * self.extra.len()
            + self.base.as_ref().map_or(0, |b| b.gp.memory_bytes() + 8 * b.offsets.len())
            + self.members.iter().map(Gp::memory_bytes).sum::<usize>()
            + 512
    }

    /// The hyperparameters.
    pub fn hyperparameters(&self) -> Hyperparameters {
        let samples = self
            .members
            .iter()
            .map(|m| {
                let mut theta = m.kernel.params();
                theta.push(m.log_noise);
                theta
            })
            .collect();
        Hyperparameters { kernel: self.kernel.params(), names: self.kernel.param_names(), log_noise: self.log_noise, samples }
    }

    /// The inputs (data and fantasies).
    pub fn x(&self) -> &[Vec<f64>] {
        &self.x
    }

    /// The standardised targets.
    pub fn y(&self) -> &[f64] {
        &self.y
    }

    /// Maps a standardised value back to the original scale.
    pub fn unstandardize(&self, mean: f64, var: f64) -> (f64, f64) {
        (mean * self.y_std + self.y_mean, var * self.y_std * self.y_std)
    }

    /// A standardised mean and variance as the original scale's mean and standard deviation
    /// (the deviation computed without squaring the scale, so it stays finite for huge targets).
    pub fn unstandardize_sd(&self, mean: f64, var: f64) -> (f64, f64) {
        (mean * self.y_std + self.y_mean, var.sqrt() * self.y_std)
    }

    /// The observation noise's standard deviation, in the original scale.
    pub fn noise_sd(&self) -> f64 {
        self.unstandardize_sd(0.0, self.log_noise.exp()).1
    }

    /// Maps an original-scale value to standardised units.
    pub fn standardize_value(&self, y: f64) -> f64 {
        (y - self.y_mean) / self.y_std
    }

    /// Posterior mean and variance of the latent f at each of `xs`, standardised units.
    /// `xs`: m points; O(n² m) for each GP of the mixture. With members (θ sampled), the equal
    /// mixture of their posteriors and this one's, moment-matched: the mean of the means, and
    /// the mean variance plus the variance of the means — wide where the θ disagree.
    pub fn predict(&self, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        if self.members.is_empty() {
            return self.predict_one(xs);
        }
        let all: Vec<Vec<(f64, f64)>> = std::iter::once(self).chain(&self.members).map(|g| g.predict_one(xs)).collect();
        (0..xs.len()).map(|j| moment_matched(all.iter().map(|p| p[j]))).collect()
    }

    /// [`Gp::predict`] of this θ alone.
    fn predict_one(&self, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        let own = self.predict_component(self.kernel.as_ref(), xs);
        let Some(base) = &self.base else { return own };
        let (s2, a) = (self.y_std * self.y_std, base.weight);
        own.into_iter()
            .zip(base.gp.predict_original(xs))
            .map(|((m, v), (bm, bv))| {
                let bv = (bv / s2).max(MIN_VARIANCE);
                (m + bm / self.y_std, (v.powf(a) * bv.powf(1.0 - a)).max(MIN_VARIANCE))
            })
            .collect()
    }

    /// The posterior of one additive component `f_c` of the latent function when the kernel
    /// is a sum `k = Σ_c k_c` of independent components (Ma & Blaschko 2020's per-vertex
    /// posterior): mean `k_c(X, x)ᵀα`, variance `k_c(x, x) − k_c(X, x)ᵀK⁻¹k_c(X, x)`.
    /// With `component` the whole kernel it is [`Gp::predict`].
    ///
    /// Many points are predicted in chunks of [`PREDICT_CHUNK`] with a checkpoint between
    /// (`crate::pace`), so a long prediction can pause; a point's posterior does not depend on
    /// its batch, so the values are those of one batch. At this GP's θ alone, whatever its
    /// members.
    pub fn predict_component(&self, component: &dyn Kernel, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        if xs.len() <= PREDICT_CHUNK {
            return self.predict_chunk(component, xs);
        }
        let mut out = Vec::with_capacity(xs.len());
        for chunk in xs.chunks(PREDICT_CHUNK) {
            crate::pace::checkpoint();
            out.extend(self.predict_chunk(component, chunk));
        }
        out
    }

    fn predict_chunk(&self, component: &dyn Kernel, xs: &[Vec<f64>]) -> Vec<(f64, f64)> {
        if xs.is_empty() {
            return Vec::new();
        }
        let k_star = component.cross(&self.x, xs);
        let means: Vec<f64> = (0..xs.len()).map(|j| dot(k_star.col_as_slice(j), &self.alpha)).collect();
        // v = L⁻¹ k* in k*'s storage (a copy of it was a candidate-by-trial matrix per call).
        let v = self.chol.solve_lower_mat(k_star);
        means
            .into_iter()
            .enumerate()
            .map(|(j, mean)| {
                let vj = v.col_as_slice(j);
                (mean, (component.eval(&xs[j], &xs[j]) - dot(vj, vj)).max(MIN_VARIANCE))
            })
            .collect()
    }

    /// Posterior mean and variance at `x` with their gradients in x; O(n² + n·d).
    pub fn predict_with_grad(&self, x: &[f64]) -> PosteriorGrad {
        self.predict_with_grad_batch(std::slice::from_ref(&x.to_vec())).remove(0)
    }

    /// [`Gp::predict_with_grad`] at each of `xs`, solving for all of them at once (one pass
    /// over the factor for the batch instead of one per point); the mixture's, moment-matched,
    /// with members (as [`Gp::predict`]): `∂σ² = mean(∂σ²ₛ + 2μₛ∂μₛ) − 2μ∂μ`.
    pub fn predict_with_grad_batch(&self, xs: &[Vec<f64>]) -> Vec<PosteriorGrad> {
        if self.members.is_empty() {
            return self.predict_with_grad_one(xs);
        }
        let all: Vec<Vec<PosteriorGrad>> = std::iter::once(self).chain(&self.members).map(|g| g.predict_with_grad_one(xs)).collect();
        let k = all.len() as f64;
        (0..xs.len())
            .map(|j| {
                let d = xs[j].len();
                let mean = all.iter().map(|p| p[j].mean).sum::<f64>() / k;
                let second = all.iter().map(|p| p[j].var + p[j].mean * p[j].mean).sum::<f64>() / k;
                let mut d_mean = vec![0.0; d];
                let mut d_second = vec![0.0; d];
                for p in &all {
                    for i in 0..d {
                        d_mean[i] += p[j].d_mean[i] / k;
                        d_second[i] += (p[j].d_var[i] + 2.0 * p[j].mean * p[j].d_mean[i]) / k;
                    }
                }
                let var_raw = second - mean * mean;
                let d_var = if var_raw < MIN_VARIANCE {
                    vec![0.0; d]
                } else {
                    d_second.iter().zip(&d_mean).map(|(s, m)| s - 2.0 * mean * m).collect()
                };
                PosteriorGrad { mean, var: var_raw.max(MIN_VARIANCE), d_mean, d_var }
            })
            .collect()
    }

    /// [`Gp::predict_with_grad_batch`] at this GP's θ alone.
    fn predict_with_grad_one(&self, xs: &[Vec<f64>]) -> Vec<PosteriorGrad> {
        let own = self.predict_own_with_grad_batch(xs);
        let Some(base) = &self.base else { return own };
        let (s, a) = (self.y_std, base.weight);
        // The base's posterior in this GP's units: mean μ_b/s, variance v_b/s² (its own units
        // scaled by its s_b). v = v_t^α v_b^(1−α), so ∂v/∂x = v (α ∂v_t/v_t + (1−α) ∂v_b/v_b).
        let (bs, bm) = (base.gp.y_std / s, base.gp.y_mean / s);
        own.into_iter()
            .zip(base.gp.predict_with_grad_batch(xs))
            .map(|(t, b)| {
                let b_var = (b.var * bs * bs).max(MIN_VARIANCE);
                let var = (t.var.powf(a) * b_var.powf(1.0 - a)).max(MIN_VARIANCE);
                let d_var =
                    t.d_var.iter().zip(&b.d_var).map(|(dt, db)| var * (a * dt / t.var + (1.0 - a) * db * bs * bs / b_var)).collect();
                let d_mean = t.d_mean.iter().zip(&b.d_mean).map(|(dt, db)| dt + db * bs).collect();
                PosteriorGrad { mean: t.mean + b.mean * bs + bm, var, d_mean, d_var }
            })
            .collect()
    }

    /// [`Gp::predict_with_grad`] of this GP alone (without its base), in batch.
    fn predict_own_with_grad_batch(&self, xs: &[Vec<f64>]) -> Vec<PosteriorGrad> {
        self.predict_component_with_grad(self.kernel.as_ref(), xs)
    }

    /// [`Gp::predict_component`] with gradients in x, in batch; of this GP alone (without a base).
    pub fn predict_component_with_grad(&self, component: &dyn Kernel, xs: &[Vec<f64>]) -> Vec<PosteriorGrad> {
        if xs.is_empty() {
            return Vec::new();
        }
        let k_star = component.cross(&self.x, xs);
        // w = K⁻¹ k*, var = k(x,x) − k*ᵀ w.
        let w = self.chol.solve_mat(&k_star);
        // ∂μ/∂x = Σᵢ αᵢ ∂kᵢ/∂x and ∂σ²/∂x = −2 Σᵢ wᵢ ∂kᵢ/∂x, in one pass over the data.
        let alpha = MatRef::from_column_major_slice(&self.alpha, self.n(), 1);
        let mut grads = vec![vec![vec![0.0; xs[0].len()]; 2]; xs.len()];
        component.grad_x_dot_batch(xs, &self.x, k_star.as_ref(), &[alpha, w.as_ref()], &mut grads);
        xs.iter()
            .zip(grads)
            .enumerate()
            .map(|(j, (x, mut g))| {
                let (d_var, d_mean) = (g.pop().expect("two weight columns"), g.pop().expect("two weight columns"));
                let (kj, wj) = (k_star.col_as_slice(j), w.col_as_slice(j));
                let mean = dot(kj, &self.alpha);
                let var_raw = component.eval(x, x) - dot(kj, wj);
                let d_var = if var_raw < MIN_VARIANCE { vec![0.0; x.len()] } else { d_var.iter().map(|g| -2.0 * g).collect() };
                // ∂k(x,x)/∂x is zero for the stationary and categorical kernels used here.
                PosteriorGrad { mean, var: var_raw.max(MIN_VARIANCE), d_mean, d_var }
            })
            .collect()
    }

    /// A copy with room for `extra` more points before its factor must grow (so conditioning
    /// a copy on pending points and a batch does not copy the factor again).
    pub fn with_room(&self, extra: usize) -> Gp {
        Gp {
            kernel: self.kernel.clone(),
            log_noise: self.log_noise,
            x: self.x.clone(),
            y: self.y.clone(),
            extra: self.extra.clone(),
            y_mean: self.y_mean,
            y_std: self.y_std,
            chol: self.chol.with_room(extra),
            alpha: self.alpha.clone(),
            base: self.base.clone(),
            members: self.members.iter().map(|m| m.with_room(extra)).collect(),
        }
    }

    /// The same posterior from a fresh factorisation of all its points at the same θ and
    /// standardisation: what conditioning by factor extension must equal.
    pub fn refactored(&self) -> Result<Gp, LinalgError> {
        let mut gp = Gp::with_extra_noise(
            self.kernel.clone(),
            self.log_noise,
            self.x.clone(),
            self.residuals(),
            self.extra.clone(),
            self.y_mean,
            self.y_std,
        )?;
        gp.y = self.y.clone();
        gp.base = self.base.clone();
        gp.members = self.members.iter().map(Gp::refactored).collect::<Result<_, _>>()?;
        Ok(gp)
    }

    /// Moves the constant prior mean to `level` (standardised units; 0 is the data's mean, where
    /// fitting puts it) at the same θ: the targets are re-centred and α solved again, O(n²). A
    /// low level makes the posterior mean fall towards it away from the data, so an acquisition
    /// stops treating unexplored regions as average ones.
    pub fn set_prior_mean(&mut self, level: f64) {
        self.y.iter_mut().for_each(|v| *v -= level);
        self.y_mean += level * self.y_std;
        self.alpha = self.chol.solve(&self.residuals());
        self.members.iter_mut().for_each(|m| m.set_prior_mean(level));
    }

    /// Conditions the GP in place on points `xs` with standardised targets `ys`, each observed
    /// with noise variance `noise` (`None`: the model's), in O(n²p + p³) by extending the factor.
    /// A fantasy is `y` = the posterior mean with a tiny `noise`, which collapses the variance at
    /// `x` and leaves the mean everywhere unchanged — so the means of several fantasies can be
    /// taken from the GP before any of them. On error the GP is unchanged. Members condition on
    /// the same targets, each with its own noise unless `noise` is given; a member that cannot
    /// is dropped from the mixture.
    pub fn condition_on(&mut self, xs: Vec<Vec<f64>>, ys: Vec<f64>, noise: Option<f64>) -> Result<(), LinalgError> {
        assert_eq!(xs.len(), ys.len(), "condition_on: one target per point");
        if xs.is_empty() {
            return Ok(());
        }
        if !self.members.is_empty() {
            let mut members = std::mem::take(&mut self.members);
            let own = self.condition_on(xs.clone(), ys.clone(), noise);
            members.retain_mut(|m| own.is_ok() && m.condition_on(xs.clone(), ys.clone(), noise).is_ok());
            self.members = members;
            return own;
        }
        let b = self.kernel.cross(&self.x, &xs);
        let c = gram(self.kernel.as_ref(), &xs, noise.unwrap_or_else(|| self.log_noise.exp()), &[]);
        self.chol.extend(b.as_ref(), c.as_ref())?;
        if !self.extra.is_empty() {
            self.extra.resize(self.x.len() + xs.len(), 0.0);
        }
        if let Some(base) = &mut self.base {
            base.offsets.extend(base.gp.mean_original(&xs).into_iter().map(|m| m / self.y_std));
        }
        self.x.extend(xs);
        self.y.extend(ys);
        self.alpha = self.chol.solve(&self.residuals());
        Ok(())
    }
}

/// The mean and variance of an equal mixture of Gaussians given as (mean, variance) pairs: the
/// mean of the means, and the mean variance plus the variance of the means.
fn moment_matched(parts: impl Iterator<Item = (f64, f64)>) -> (f64, f64) {
    let (mut k, mut first, mut second) = (0.0, 0.0, 0.0);
    for (m, v) in parts {
        k += 1.0;
        first += m;
        second += v + m * m;
    }
    let mean = first / k;
    (mean, (second / k - mean * mean).max(MIN_VARIANCE))
}

/// `K(x, x) + noise·I + diag(extra)` (`extra` empty, or one value per point).
pub(crate) fn gram(kernel: &dyn Kernel, x: &[Vec<f64>], noise: f64, extra: &[f64]) -> Mat<f64> {
    let mut k = kernel.gram(x);
    for i in 0..x.len() {
        k[(i, i)] += noise + extra.get(i).copied().unwrap_or(0.0);
    }
    k
}

#[cfg(test)]
mod tests;
