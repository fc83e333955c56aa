//! Hyperparameter fitting: maximise the log marginal likelihood plus the log-priors (a MAP
//! estimate) over θ = (kernel θ, log σ²_noise) by multi-start L-BFGS within bounds, warm-started
//! from the last fit.
//!
//! `log p(y | θ) = −½ yᵀα − Σ log Lᵢᵢ − (n/2) log 2π`, and
//! `∂/∂θⱼ = ½ tr((ααᵀ − K⁻¹) ∂K/∂θⱼ)` (Rasmussen & Williams 2006, eq. 5.8–5.9).
//!
//! With [`FitConfig::samples`], θ is also sampled from its posterior, from the best θ found
//! ([`super::sample`]), and the GP returned mixes the GPs at every sample with its own.
//!
//! A point may carry a known noise variance of its own on top of the fitted one (a target that
//! is an estimate, [`fit_with`]): `K + σ²I + diag(extra)`. The extra is data, not a
//! hyperparameter, so the gradient in log σ² is unchanged: `½ σ² tr(W)`.

use faer::Mat;
use rand::{Rng, RngExt};

use super::sample::{Chain, slice_sample};
use super::{Gp, Hyperparameters, gram, standardize};
use crate::kernel::{Kernel, normal_log_prior};
use crate::linalg::{Cholesky, LinalgError};
use crate::optimize::lbfgsb::minimize_with_tolerance;

/// Bounds of the noise variance on standardised outputs (not in log space).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseBounds {
    /// Smallest noise variance: the floor for noise-free problems.
    pub min: f64,
    /// Largest noise variance.
    pub max: f64,
}

impl NoiseBounds {
    /// Unspecified noise: from a floor of 1e-6 to 1.
    pub const DEFAULT: NoiseBounds = NoiseBounds { min: 1e-6, max: 1.0 };
    /// `observationNoise: LOW`: nearly deterministic.
    pub const LOW: NoiseBounds = NoiseBounds { min: 1e-6, max: 1e-2 };
    /// `observationNoise: HIGH`: at least 1 % of the output variance.
    pub const HIGH: NoiseBounds = NoiseBounds { min: 1e-2, max: 1.0 };
}

/// How to fit.
#[derive(Clone, Debug)]
pub struct FitConfig {
    /// Noise bounds.
    pub noise: NoiseBounds,
    /// Random restarts besides the default and warm starts.
    pub restarts: usize,
    /// L-BFGS iterations per start.
    pub max_iter: usize,
    /// Stop a start once an iteration improves the log posterior by less than this, relatively.
    pub f_tol: f64,
    /// Where the optimisation of θ starts (see [`fit`]).
    pub search: Search,
    /// With more points than this, the hyperparameters are fitted on a subset of this size (the
    /// best half by value and an even spread of the rest) and the GP then conditions on all
    /// points: each likelihood evaluation costs O(m³) instead of O(n³).
    pub max_fit_points: usize,
    /// θ drawn from its posterior besides the best one found (0: the best alone), by slice
    /// sampling from it ([`super::sample`]); the GP's predictions mix all of them. A full search
    /// draws them again; a warm one or a reuse keeps the warm θ's samples (when it has as many).
    pub samples: usize,
}

impl Default for FitConfig {
    fn default() -> Self {
        FitConfig {
            noise: NoiseBounds::DEFAULT,
            restarts: 2,
            max_iter: 100,
            f_tol: 1e-9,
            search: Search::Full,
            max_fit_points: 300,
            samples: 0,
        }
    }
}

/// How much of θ's optimisation a fit runs. Without a usable warm θ every fit is [`Search::Full`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// From the warm θ, the default θ and `restarts` random θ.
    Full,
    /// From the warm θ alone: the optimum moves little when a few trials are added.
    Warm,
    /// No optimisation: the GP conditions on the data at the warm θ (one factorisation).
    Reuse,
}

/// The log-noise prior: N(log 1e-4, 1.5²), leaning to little noise. With a standard deviation of
/// 3 the fit explained the narrow optima of deterministic functions as noise (0.35 of the
/// standardised variance on Michalewicz-5, 0.06 on Ackley-5) and EI stopped short of them; at
/// 1.5, GP_BANDIT's median regret after 100 evaluations over 10 seeds was lower on 6 of 9
/// problems, the noisy ones among them (Michalewicz-5 1.86 against 2.37, Ackley-5 3.7 against
/// 5.3, noisy Hartmann-6 0.051 against 0.061), higher on Levy-10 and Hartmann-6
/// (docs/journal/benchmarks.md, "The noise prior").
pub(crate) const LOG_NOISE_PRIOR: (f64, f64) = (-9.21, 1.5);

/// The largest noise variance of a point's own (standardised units): 10⁶ times the targets'.
const MAX_EXTRA_NOISE: f64 = 1e6;

/// The negative log posterior (−LML − log prior) at `theta` and its gradient, each point `i`
/// observed with noise `exp(log σ²) + extra[i]` (`extra` empty: none beyond the fitted noise).
pub fn neg_log_posterior(
    kernel: &mut dyn Kernel,
    x: &[Vec<f64>],
    y: &[f64],
    extra: &[f64],
    theta: &[f64],
) -> Result<(f64, Vec<f64>), LinalgError> {
    crate::pace::checkpoint();
    let p = kernel.n_params();
    kernel.set_params(&theta[..p]);
    let log_noise = theta[p];
    let noise = log_noise.exp();
    let n = x.len();
    let k = gram(kernel, x, noise, extra);
    // A block-diagonal K (an Add-Tree over root subtrees that share nothing) factors block by
    // block: LML and W are sums over blocks, at Σ n_b³ instead of n³.
    let blocks = blocks(&k);
    let mut w = Mat::zeros(n, n);
    let mut lml = -0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
    for idx in &blocks {
        let chol = if blocks.len() == 1 {
            Cholesky::new(&k)?
        } else {
            Cholesky::new(&Mat::from_fn(idx.len(), idx.len(), |a, b| k[(idx[a], idx[b])]))?
        };
        let yb: Vec<f64> = idx.iter().map(|&i| y[i]).collect();
        let alpha = chol.solve(&yb);
        lml += -0.5 * yb.iter().zip(&alpha).map(|(a, b)| a * b).sum::<f64>() - 0.5 * chol.log_det();
        // W = ααᵀ − K⁻¹; ∂LML/∂θ_q = ½ Σᵢⱼ Wᵢⱼ ∂Kᵢⱼ/∂θ_q.
        let inv = chol.inverse();
        for (b, &j) in idx.iter().enumerate() {
            for (a, &i) in idx.iter().enumerate() {
                w[(i, j)] = alpha[a] * alpha[b] - inv[(a, b)];
            }
        }
    }
    let mut grad = vec![0.0; p + 1];
    kernel.gram_grad_dot(x, &w, &mut grad[..p]);
    grad[..p].iter_mut().for_each(|g| *g *= 0.5);
    grad[p] = 0.5 * noise * (0..n).map(|i| w[(i, i)]).sum::<f64>();
    let mut prior_grad = vec![0.0; p + 1];
    let mut lp = kernel.log_prior(&mut prior_grad[..p]);
    let (v, g) = normal_log_prior(log_noise, LOG_NOISE_PRIOR.0, LOG_NOISE_PRIOR.1);
    lp += v;
    prior_grad[p] += g;
    Ok((-(lml + lp), grad.iter().zip(&prior_grad).map(|(a, b)| -(a + b)).collect()))
}

/// The log posterior (LML + log priors) at `theta` without its gradient: one factorisation, what
/// sampling θ evaluates; −∞ where K cannot be factored.
pub fn log_posterior(kernel: &mut dyn Kernel, x: &[Vec<f64>], y: &[f64], extra: &[f64], theta: &[f64]) -> f64 {
    let p = kernel.n_params();
    kernel.set_params(&theta[..p]);
    let Ok(lml) = log_marginal_likelihood(kernel, x, y, extra, theta[p]) else { return f64::NEG_INFINITY };
    let mut unused = vec![0.0; p];
    lml + kernel.log_prior(&mut unused) + normal_log_prior(theta[p], LOG_NOISE_PRIOR.0, LOG_NOISE_PRIOR.1).0
}

/// The log marginal likelihood of standardised `y` under `kernel` at its current θ and noise
/// variance `exp(log_noise)` (plus each point's `extra`, as in [`neg_log_posterior`]), without
/// gradient: one factorisation, for comparing structures (groupings, graphs) at a fixed θ.
pub fn log_marginal_likelihood(kernel: &dyn Kernel, x: &[Vec<f64>], y: &[f64], extra: &[f64], log_noise: f64) -> Result<f64, LinalgError> {
    crate::pace::checkpoint();
    let chol = Cholesky::new(&gram(kernel, x, log_noise.exp(), extra))?;
    let alpha = chol.solve(y);
    let fit: f64 = y.iter().zip(&alpha).map(|(a, b)| a * b).sum();
    Ok(-0.5 * fit - 0.5 * chol.log_det() - 0.5 * x.len() as f64 * (2.0 * std::f64::consts::PI).ln())
}

/// The index sets of the connected components of `k`'s non-zero pattern, in order; one set
/// when `k` is not block-diagonal.
pub(super) fn blocks(k: &Mat<f64>) -> Vec<Vec<usize>> {
    let n = k.nrows();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for j in 0..n {
        for (i, v) in k.col_as_slice(j).iter().enumerate().skip(j + 1) {
            if *v != 0.0 {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut at = vec![usize::MAX; n];
    for i in 0..n {
        let r = root(&mut parent, i);
        if at[r] == usize::MAX {
            at[r] = out.len();
            out.push(Vec::new());
        }
        out[at[r]].push(i);
    }
    out
}

/// Fits `kernel` to (`x`, `y_raw`): standardises y, maximises the log posterior and returns the
/// GP at the best θ found. A full search starts from the `warm` θ (if its shape matches), the
/// default θ and `config.restarts` random θ; with a usable warm θ, [`Search::Warm`] starts from
/// that alone and [`Search::Reuse`] keeps it — the designers ask for these between full searches,
/// as the optimum moves little when a trial is added, and the search is most of a refit's cost.
pub fn fit(
    kernel: Box<dyn Kernel>,
    x: Vec<Vec<f64>>,
    y_raw: &[f64],
    config: &FitConfig,
    warm: Option<&Hyperparameters>,
    rng: &mut dyn Rng,
) -> Result<Gp, LinalgError> {
    fit_with(kernel, x, y_raw, &[], config, warm, rng)
}

/// [`fit`] where target `i` carries a known noise variance `extra_raw[i]` of its own, in
/// `y_raw`'s units, on top of the fitted noise: a value that is itself an estimate (a partial
/// trial's predicted final value) pulls the posterior less than a measured one. `extra_raw`
/// is empty, or one finite non-negative value per point.
pub fn fit_with(
    mut kernel: Box<dyn Kernel>,
    x: Vec<Vec<f64>>,
    y_raw: &[f64],
    extra_raw: &[f64],
    config: &FitConfig,
    warm: Option<&Hyperparameters>,
    rng: &mut dyn Rng,
) -> Result<Gp, LinalgError> {
    let (y, y_mean, y_std) = standardize(y_raw);
    // A point this uncertain tells the posterior nothing; a larger (or infinite) variance would
    // only spoil the factorisation.
    let extra: Vec<f64> = if extra_raw.iter().any(|v| *v > 0.0) {
        extra_raw.iter().map(|v| (v / (y_std * y_std)).max(0.0).min(MAX_EXTRA_NOISE)).collect()
    } else {
        Vec::new()
    };
    let p = kernel.n_params();
    let mut bounds = kernel.bounds();
    bounds.push((config.noise.min.ln(), config.noise.max.ln()));
    let (lower, upper): (Vec<f64>, Vec<f64>) = bounds.iter().copied().unzip();
    let mut default = kernel.params();
    default.push((1e-3f64).clamp(config.noise.min, config.noise.max).ln());
    let mut starts = vec![];
    if let Some(w) = warm
        && w.kernel.len() == p
        && w.names == kernel.param_names()
    {
        let mut t = w.kernel.clone();
        t.push(w.log_noise);
        starts.push(t);
    }
    if config.search == Search::Reuse
        && let Some(theta) = starts.first()
    {
        let samples = warm.filter(|_| config.samples > 0).map(|w| w.samples.clone()).unwrap_or_default();
        kernel.set_params(&theta[..p]);
        let members = members(kernel.as_ref(), &samples, &x, &y, &extra, (y_mean, y_std));
        return Ok(Gp::with_extra_noise(kernel, theta[p], x, y, extra, y_mean, y_std)?.with_members(members));
    }
    let full = starts.is_empty() || config.search == Search::Full;
    if full {
        starts.push(default);
    }
    for _ in 0..if full { config.restarts } else { 0 } {
        starts.push(
            bounds
                .iter()
                .map(|(l, u)| {
                    // Random starts in the middle half of each range, avoiding degenerate extremes.
                    let (a, b) = (l + 0.25 * (u - l), u - 0.25 * (u - l));
                    a + rng.random::<f64>() * (b - a)
                })
                .collect(),
        );
    }
    let (fit_x, fit_y, fit_extra) = fit_subset(&x, &y, &extra, config.max_fit_points);
    let mut best: Option<(f64, Vec<f64>)> = None;
    for start in starts {
        let mut k = kernel.clone();
        let m = minimize_with_tolerance(
            |theta| neg_log_posterior(k.as_mut(), &fit_x, &fit_y, &fit_extra, theta).unwrap_or((f64::INFINITY, vec![0.0; p + 1])),
            &start,
            &lower,
            &upper,
            config.max_iter,
            config.f_tol,
        );
        if m.f.is_finite() && best.as_ref().is_none_or(|(f, _)| m.f < *f) {
            best = Some((m.f, m.x));
        }
    }
    let theta = best.map(|(_, t)| t).unwrap_or_else(|| {
        let mut t = kernel.params();
        t.push(config.noise.max.ln());
        t
    });
    let kept = warm.map(|w| &w.samples).filter(|s| s.len() == config.samples && s.iter().all(|t| t.len() == p + 1));
    let samples = if let Some(kept) = kept
        && config.search == Search::Warm
    {
        // A warm refit moves θ a little; the samples, drawn at the last full search, stay.
        kept.clone()
    } else if config.samples > 0 {
        let mut k = kernel.clone();
        let width: Vec<f64> = bounds.iter().map(|(l, u)| ((u - l) / 4.0).min(1.0)).collect();
        let chain = Chain { burn: SAMPLE_BURN, count: config.samples, thin: SAMPLE_THIN };
        let density = |t: &[f64]| log_posterior(k.as_mut(), &fit_x, &fit_y, &fit_extra, t);
        slice_sample(density, &theta, &lower, &upper, &width, chain, rng)
    } else {
        Vec::new()
    };
    kernel.set_params(&theta[..p]);
    let members = members(kernel.as_ref(), &samples, &x, &y, &extra, (y_mean, y_std));
    Ok(Gp::with_extra_noise(kernel, theta[p], x, y, extra, y_mean, y_std)?.with_members(members))
}

/// Sweeps of the θ sampler before its first sample (it starts at the best θ found).
const SAMPLE_BURN: usize = 5;

/// Sweeps of the θ sampler between two samples.
const SAMPLE_THIN: usize = 2;

/// The GPs of the data at each of `samples` (θ then log noise, as stored in
/// [`Hyperparameters::samples`]); a θ whose K cannot be factored, or of another kernel's shape,
/// is left out.
fn members(kernel: &dyn Kernel, samples: &[Vec<f64>], x: &[Vec<f64>], y: &[f64], extra: &[f64], (y_mean, y_std): (f64, f64)) -> Vec<Gp> {
    let p = kernel.n_params();
    samples
        .iter()
        .filter(|t| t.len() == p + 1)
        .filter_map(|t| {
            let mut k = kernel.clone_box();
            k.set_params(&t[..p]);
            Gp::with_extra_noise(k, t[p], x.to_vec(), y.to_vec(), extra.to_vec(), y_mean, y_std).ok()
        })
        .collect()
}

/// The points the hyperparameters are fitted on: all of them up to `max` points; beyond, the
/// best `max / 2` by value (where the optimiser works) and an even spread of the rest (so the
/// length scales still see the whole space). Deterministic. `extra` (empty, or a point's own
/// noise each) follows the points chosen.
pub fn fit_subset(x: &[Vec<f64>], y: &[f64], extra: &[f64], max: usize) -> (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) {
    let n = x.len();
    if n <= max || max == 0 {
        return (x.to_vec(), y.to_vec(), extra.to_vec());
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| y[b].total_cmp(&y[a]));
    let best = max / 2;
    let rest = &order[best..];
    let spread = max - best;
    let mut chosen: Vec<usize> = order[..best].to_vec();
    chosen.extend((0..spread).map(|k| rest[k * rest.len() / spread]));
    chosen.sort_unstable();
    let extra = if extra.is_empty() { Vec::new() } else { chosen.iter().map(|&i| extra[i]).collect() };
    (chosen.iter().map(|&i| x[i].clone()).collect(), chosen.iter().map(|&i| y[i]).collect(), extra)
}
