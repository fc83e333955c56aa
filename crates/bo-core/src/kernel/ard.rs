//! The shared core of stationary kernels with automatic relevance determination (ARD):
//! `k(x, y) = a · f(r²)`, `r² = Σᵢ (xᵢ − yᵢ)² / ℓᵢ²` over the kernel's dimensions, for a radial
//! profile `f` (Matérn-5/2, squared exponential). θ = (log a, log ℓ₁ … log ℓ_d).
//!
//! Priors (on standardised outputs and unit-cube inputs): log a ~ N(0, 1), and one of three
//! length-scale priors ([`LengthScalePrior`]):
//! - `Weak`: `log p(ℓ) = −0.1 (ℓ² + ℓ⁻²)`, mode ℓ = 1 (the form Optuna's GP puts on 1/ℓ²). The
//!   default: measured with bo-bench, ARD under the dimension-scaled prior pushed two of
//!   Hartmann-6's relevant coordinates to ℓ ≈ 10–20 and missed the global basin in 4 of 7 seeds
//!   (3 of 7 with this one; docs/journal/benchmarks.md).
//! - `DimensionScaled`: log ℓ ~ N(√2 + ½ log d, 3) — Hvarfner, Hellsten & Nardi (2024), meant
//!   for high-dimensional spaces, where long length scales keep the model from over-fitting.
//! - `Saas`: the sparse axis-aligned subspace prior of Eriksson & Jankowiak (2021, eq. 3): each
//!   inverse squared length scale ρᵢ = ℓᵢ⁻² ~ half-Cauchy(0, τ), the global shrinkage
//!   τ ~ half-Cauchy(0, 0.1). Where SAASBO samples τ with the rest by NUTS, here τ is
//!   integrated out of the prior by quadrature on [`SAAS_TAU_GRID`] log-spaced points, so the
//!   kernel's θ is unchanged and any fit or sampler of θ reads the hierarchy's marginal
//!   `log ∫ Πᵢ p(ρᵢ | τ) p(τ) dτ` (to within 0.01 of a 20,000-point quadrature). The
//!   coordinates are coupled through τ: the more of them the data leave irrelevant, the harder
//!   the prior shrinks the rest. Meant for D ≥ 20, with θ sampled (`hyperparameterSamples`), as
//!   the paper's posterior is.

use std::marker::PhantomData;

use faer::{Mat, MatRef};

use super::{Kernel, normal_log_prior, weight_column};

/// A radial profile `f(r²)` with `f(0) = 1`.
pub trait Profile: Send + Sync + std::fmt::Debug + Clone + 'static {
    /// The kernel's name, for summaries.
    const NAME: &'static str;
    /// `f(r²)`.
    fn value(r2: f64) -> f64;
    /// `df/d(r²)`.
    fn d_dr2(r2: f64) -> f64;
    /// `(f(r²), df/d(r²))`, sharing their work where the profile allows.
    fn value_and_d(r2: f64) -> (f64, f64) {
        (Self::value(r2), Self::d_dr2(r2))
    }
    /// `df/d(r²)` given `f = f(r²)`: without the profile's transcendental where the derivative
    /// is an algebraic function of the value (the default evaluates it again).
    fn d_dr2_given(r2: f64, f: f64) -> f64 {
        let _ = f;
        Self::d_dr2(r2)
    }
}

/// The prior on the length scales (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LengthScalePrior {
    /// `−0.1 (ℓ² + ℓ⁻²)`, mode 1.
    #[default]
    Weak,
    /// log ℓ ~ N(√2 + ½ log d, 3).
    DimensionScaled,
    /// ℓ⁻² ~ half-Cauchy(0, τ), τ ~ half-Cauchy(0, 0.1), τ integrated out (module docs).
    Saas,
}

/// Points of the quadrature over log τ of the SAAS prior, log-spaced on [`SAAS_TAU_RANGE`].
pub const SAAS_TAU_GRID: usize = 64;
/// The range of τ the quadrature covers: its prior's half-Cauchy(0, 0.1) puts 0.06 % of its mass
/// below 1e-4 and 1 % above 10.
pub const SAAS_TAU_RANGE: (f64, f64) = (1e-4, 10.0);
/// The scale of τ's half-Cauchy prior (the paper's β = 0.1).
const SAAS_TAU_SCALE: f64 = 0.1;

/// The SAAS prior's log density of the log length scales (up to a constant) and its gradient,
/// τ integrated out: `log Σ_g w_g Πᵢ q(log ℓᵢ | τ_g)` over a log-spaced grid of τ with `w_g`
/// τ's half-Cauchy density times τ (the grid is uniform in log τ), and `q` the half-Cauchy
/// density of ρ = ℓ⁻² times the Jacobian of log ℓ, `2ρ`: with `r = ρ/τ`, `log q = log r −
/// log(1 + r²)` up to a constant, `∂ log q/∂ log ℓ = −2 (1 − r²)/(1 + r²)`.
pub fn saas_log_prior(log_ls: &[f64], grad: &mut [f64]) -> f64 {
    let (lo, hi) = (SAAS_TAU_RANGE.0.ln(), SAAS_TAU_RANGE.1.ln());
    let step = (hi - lo) / (SAAS_TAU_GRID - 1) as f64;
    let d = log_ls.len();
    let mut terms = [0.0; SAAS_TAU_GRID];
    // ∂ log q/∂ log ℓᵢ at each grid point, row g after row g, kept for the gradient.
    let mut slopes = vec![0.0; SAAS_TAU_GRID * d];
    for (g, (term, slope)) in terms.iter_mut().zip(slopes.chunks_mut(d.max(1))).enumerate() {
        let log_tau = lo + step * g as f64;
        let s = log_tau.exp() / SAAS_TAU_SCALE;
        let mut t = s.ln() - (s * s).ln_1p();
        for (l, slope) in log_ls.iter().zip(slope) {
            let log_r = -2.0 * l - log_tau;
            t += log_r - log1p_exp(2.0 * log_r);
            let r2 = (2.0 * log_r).exp();
            *slope = -2.0 * (1.0 - r2) / (1.0 + r2);
        }
        *term = t;
    }
    // The gradient is the slopes averaged under τ's posterior weights on the grid.
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = terms.iter().map(|t| (t - top).exp()).collect();
    let total: f64 = weights.iter().sum();
    for (w, slope) in weights.iter().zip(slopes.chunks(d.max(1))) {
        for (gi, s) in grad.iter_mut().zip(slope) {
            *gi += w / total * s;
        }
    }
    top + total.ln()
}

impl LengthScalePrior {
    /// The prior's median length scale for a kernel over `d` dimensions (the weak prior's is
    /// its mode, 1).
    pub fn median(self, d: usize) -> f64 {
        match self {
            LengthScalePrior::Weak => 1.0,
            LengthScalePrior::DimensionScaled => dimension_scaled_log_median(d).exp(),
            // The mode of ℓ's conditional prior at τ's scale, ρ = 0.1.
            LengthScalePrior::Saas => SAAS_TAU_SCALE.powf(-0.5),
        }
    }
}

/// `log(1 + eˣ)` without overflow.
fn log1p_exp(x: f64) -> f64 {
    if x > 0.0 { x + (-x).exp().ln_1p() } else { x.exp().ln_1p() }
}

/// The mean of log ℓ under the dimension-scaled prior: √2 + ½ log d.
fn dimension_scaled_log_median(d: usize) -> f64 {
    std::f64::consts::SQRT_2 + 0.5 * (d.max(1) as f64).ln()
}

/// An ARD kernel with profile `P` over `dims`.
#[derive(Clone, Debug)]
pub struct Ard<P: Profile> {
    dims: Vec<usize>,
    prior: LengthScalePrior,
    log_amplitude: f64,
    log_length_scales: Vec<f64>,
    /// `1/ℓᵢ`, kept in step with `log_length_scales` (so no pair pays for an `exp`).
    inv_length_scales: Vec<f64>,
    length_scale_bounds: (f64, f64),
    _profile: std::marker::PhantomData<P>,
}

/// Bounds of log a.
const LOG_AMPLITUDE_BOUNDS: (f64, f64) = (-4.0, 4.0);

impl<P: Profile> Ard<P> {
    /// A kernel over `dims` with amplitude 1 and every length scale `length_scale`, length
    /// scales bounded to `length_scale_bounds` (not in log space).
    pub fn new(dims: Vec<usize>, length_scale: f64, length_scale_bounds: (f64, f64)) -> Ard<P> {
        let d = dims.len();
        Ard {
            dims,
            prior: LengthScalePrior::default(),
            log_amplitude: 0.0,
            log_length_scales: vec![length_scale.ln(); d],
            inv_length_scales: vec![1.0 / length_scale; d],
            length_scale_bounds: (length_scale_bounds.0.ln(), length_scale_bounds.1.ln()),
            _profile: std::marker::PhantomData,
        }
    }

    /// The same kernel with another length-scale prior.
    pub fn with_prior(mut self, prior: LengthScalePrior) -> Ard<P> {
        self.prior = prior;
        self
    }

    /// The dimensions it reads.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    fn r2(&self, x: &[f64], y: &[f64]) -> f64 {
        self.dims
            .iter()
            .zip(&self.inv_length_scales)
            .map(|(&i, &inv_l)| {
                let d = (x[i] - y[i]) * inv_l;
                d * d
            })
            .sum()
    }

    /// The kernel's coordinates of each point divided by their length scales, row after row.
    fn scaled(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        let mut z = Vec::with_capacity(xs.len() * self.dims.len());
        for x in xs {
            z.extend(self.dims.iter().zip(&self.inv_length_scales).map(|(&i, &inv_l)| x[i] * inv_l));
        }
        z
    }

    /// The same, transposed: row `q` holds coordinate `dims[q]/ℓ_q` of every point, so a pass
    /// over one coordinate of all the points is a contiguous loop that vectorises.
    fn scaled_columns(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        // Each point is read once (they are separate allocations); the writes stride.
        let n = xs.len();
        let mut zt = vec![0.0; self.dims.len() * n];
        for (i, x) in xs.iter().enumerate() {
            for (q, (&dim, &inv_l)) in self.dims.iter().zip(&self.inv_length_scales).enumerate() {
                zt[q * n + i] = x[dim] * inv_l;
            }
        }
        zt
    }
}

/// `K ← a · f(K)` for a matrix of squared distances `K` (only below the diagonal of a Gram
/// matrix), as a loop of its own compiled for the widest vectors the CPU has (AVX2 and FMA on
/// x86-64, chosen at run time by `pulp`, faer's dispatcher): the profile's `exp`
/// (`kernel::exp`) then takes four pairs an instruction. `with_simd` is inlined into the
/// dispatcher's target-feature function, which a closure's body would not be.
struct Profiled<'a, P> {
    k: &'a mut Mat<f64>,
    amplitude: f64,
    below_diagonal: bool,
    profile: PhantomData<P>,
}

impl<P: Profile> pulp::WithSimd for Profiled<'_, P> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let (a, below) = (self.amplitude, self.below_diagonal);
        for j in 0..self.k.ncols() {
            let col = self.k.col_as_slice_mut(j);
            let col = if below { &mut col[j + 1..] } else { col };
            for v in col {
                *v = a * P::value(*v);
            }
        }
    }
}

/// `(f(r²), f'(r²))` over a slice of squared distances (`values` in, `f` out), compiled for
/// the widest vectors as [`Profiled`] is.
struct Sloped<'a, P> {
    values: &'a mut [f64],
    slopes: &'a mut [f64],
    profile: PhantomData<P>,
}

impl<P: Profile> pulp::WithSimd for Sloped<'_, P> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        for (v, s) in self.values.iter_mut().zip(self.slopes.iter_mut()) {
            (*v, *s) = P::value_and_d(*v);
        }
    }
}

/// `k = a f(r²)` of every point of transposed scaled coordinates `zt` (d rows of n) against
/// each scaled point of `zb` (m rows of d), column by column, compiled for the widest vectors
/// as [`Profiled`] is: the distances are passes over the points ([`sq_dists`]), each equal to
/// [`sq_dist`]'s bit for bit, and each column's profile is applied while it is in cache.
struct Cross<'a, P> {
    zt: &'a [f64],
    zb: &'a [f64],
    amplitude: f64,
    k: &'a mut Mat<f64>,
    profile: PhantomData<P>,
}

impl<P: Profile> pulp::WithSimd for Cross<'_, P> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let (n, m) = (self.k.nrows(), self.k.ncols());
        if n == 0 || m == 0 {
            return;
        }
        let d = self.zb.len() / m;
        let mut lanes = vec![0.0; 4 * n];
        for j in 0..m {
            let col = self.k.col_as_slice_mut(j);
            sq_dists(self.zt, &self.zb[j * d..(j + 1) * d], &mut lanes, col);
            for v in col.iter_mut() {
                *v = self.amplitude * P::value(*v);
            }
        }
    }
}

/// [`Kernel::grad_x_dot_batch`] of an ARD kernel, compiled for the widest vectors: per point,
/// its squared distances to the data ([`sq_dists`]), the slopes `a f'(r²)` from the
/// cross-covariance's values (`Profile::d_dr2_given`), then for each weight column and
/// coordinate one sum over the data in eight lanes.
struct GradBatch<'a, P: Profile> {
    kernel: &'a Ard<P>,
    /// The data's scaled coordinates, transposed (d rows of n).
    zt: &'a [f64],
    /// The points' scaled coordinates (m rows of d).
    zxs: &'a [f64],
    k_star: MatRef<'a, f64>,
    weights: &'a [MatRef<'a, f64>],
    out: &'a mut [Vec<Vec<f64>>],
}

impl<P: Profile> pulp::WithSimd for GradBatch<'_, P> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Ard { dims, inv_length_scales, log_amplitude, .. } = self.kernel;
        let (n, d, a) = (self.k_star.nrows(), dims.len(), log_amplitude.exp());
        if n == 0 || d == 0 {
            return;
        }
        let (mut lanes, mut r2, mut slopes, mut coef) = (vec![0.0; 4 * n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let mut kj = vec![0.0; n];
        for (j, (zx, out)) in self.zxs.chunks_exact(d).zip(self.out.iter_mut()).enumerate() {
            sq_dists(self.zt, zx, &mut lanes, &mut r2);
            for (k, v) in kj.iter_mut().zip(self.k_star.col(j).iter()) {
                *k = *v;
            }
            // k = a f, so a f'(r²) = a · f'(r², k/a).
            for ((s, &r), &k) in slopes.iter_mut().zip(&r2).zip(&kj) {
                *s = a * P::d_dr2_given(r, k / a);
            }
            for (&w, out) in self.weights.iter().zip(out.iter_mut()) {
                for ((c, &s), w) in coef.iter_mut().zip(&slopes).zip(w.col(weight_column(w, j)).iter()) {
                    *c = s * *w;
                }
                // ∂k(x, y)/∂x_q = a f'(r²) · 2 (z_q − z'_q)/ℓ_q with z = x/ℓ.
                for (q, ((&dim, &inv_l), row)) in dims.iter().zip(inv_length_scales).zip(self.zt.chunks_exact(n)).enumerate() {
                    out[dim] += 2.0 * inv_l * weighted_offsets(&coef, zx[q], row);
                }
            }
        }
    }
}

/// `Σᵢ cᵢ (z − rowᵢ)`, in eight independent lanes.
#[inline(always)]
fn weighted_offsets(c: &[f64], z: f64, row: &[f64]) -> f64 {
    let mut lanes = [0.0; 8];
    let (cc, cr) = (c.chunks_exact(8), row.chunks_exact(8));
    let tail: f64 = cc.remainder().iter().zip(cr.remainder()).map(|(c, v)| c * (z - v)).sum();
    for (c, v) in cc.zip(cr) {
        for k in 0..8 {
            lanes[k] += c[k] * (z - v[k]);
        }
    }
    ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7])) + tail
}

/// `out[i] = ‖zᵢ − z‖²` for every point `i` of transposed scaled coordinates `zt` (d rows of
/// `out.len()`), as passes over the points that vectorise, summed in [`sq_dist`]'s order —
/// coordinate `q` of the leading multiple of four into lane `q mod 4`, the rest into a tail,
/// then `(l₀ + l₁) + (l₂ + l₃) + tail` — so each equals `sq_dist(zᵢ, z)` bit for bit.
/// `lanes` is scratch of four times `out.len()`.
#[inline(always)]
fn sq_dists(zt: &[f64], z: &[f64], lanes: &mut [f64], out: &mut [f64]) {
    let n = out.len();
    let full = z.len() - z.len() % 4;
    lanes.fill(0.0);
    out.fill(0.0);
    for (q, (&zq, row)) in z.iter().zip(zt.chunks_exact(n)).enumerate() {
        let acc = if q < full { &mut lanes[(q % 4) * n..(q % 4 + 1) * n] } else { &mut *out };
        for (s, &v) in acc.iter_mut().zip(row) {
            let t = v - zq;
            *s += t * t;
        }
    }
    if full > 0 {
        let (l01, l23) = lanes.split_at(2 * n);
        let (l0, l1) = l01.split_at(n);
        let (l2, l3) = l23.split_at(n);
        for (i, o) in out.iter_mut().enumerate() {
            *o += (l0[i] + l1[i]) + (l2[i] + l3[i]);
        }
    }
}

/// `‖a − b‖²`, summed in four independent lanes so the compiler can vectorise it (a plain
/// `sum()` is one dependent chain of additions: measured 2× slower at 20 dimensions).
#[inline(always)]
fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ca.remainder().iter().zip(cb.remainder()).map(|(u, v)| (u - v) * (u - v)).sum();
    for (u, v) in ca.zip(cb) {
        for k in 0..4 {
            let d = u[k] - v[k];
            lanes[k] += d * d;
        }
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

impl<P: Profile> Kernel for Ard<P> {
    fn param_names(&self) -> Vec<String> {
        let mut names = vec![format!("{}.log_amplitude", P::NAME)];
        names.extend(self.dims.iter().map(|i| format!("{}.log_length_scale[{i}]", P::NAME)));
        names
    }

    fn params(&self) -> Vec<f64> {
        let mut p = Vec::with_capacity(1 + self.dims.len());
        p.push(self.log_amplitude);
        p.extend_from_slice(&self.log_length_scales);
        p
    }

    fn set_params(&mut self, p: &[f64]) {
        self.log_amplitude = p[0];
        self.log_length_scales.copy_from_slice(&p[1..]);
        for (inv, log_l) in self.inv_length_scales.iter_mut().zip(&self.log_length_scales) {
            *inv = (-log_l).exp();
        }
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        let mut b = vec![LOG_AMPLITUDE_BOUNDS];
        b.extend(std::iter::repeat_n(self.length_scale_bounds, self.dims.len()));
        b
    }

    fn log_prior(&self, grad: &mut [f64]) -> f64 {
        let (mut lp, g) = normal_log_prior(self.log_amplitude, 0.0, 1.0);
        grad[0] += g;
        let mean = dimension_scaled_log_median(self.dims.len());
        for (k, &log_l) in self.log_length_scales.iter().enumerate() {
            let (v, g) = match self.prior {
                LengthScalePrior::DimensionScaled => normal_log_prior(log_l, mean, 3.0f64.sqrt()),
                LengthScalePrior::Weak => {
                    let l2 = (2.0 * log_l).exp();
                    (-0.1 * (l2 + 1.0 / l2), -0.1 * (2.0 * l2 - 2.0 / l2))
                }
                // The coordinates' joint density, below.
                LengthScalePrior::Saas => (0.0, 0.0),
            };
            lp += v;
            grad[1 + k] += g;
        }
        if self.prior == LengthScalePrior::Saas {
            lp += saas_log_prior(&self.log_length_scales, &mut grad[1..]);
        }
        lp
    }

    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.log_amplitude.exp() * P::value(self.r2(x, y))
    }

    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let a = self.log_amplitude.exp();
        let r2 = self.r2(x, y);
        let k = a * P::value(r2);
        let df = a * P::d_dr2(r2);
        grad[0] = k;
        for (k_idx, (&i, &inv_l)) in self.dims.iter().zip(&self.inv_length_scales).enumerate() {
            let d = (x[i] - y[i]) * inv_l;
            // ∂r²/∂log ℓᵢ = −2 dᵢ² / ℓᵢ²
            grad[1 + k_idx] = df * (-2.0 * d * d);
        }
        k
    }

    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]) {
        let df = self.log_amplitude.exp() * P::d_dr2(self.r2(x, y));
        for (&i, &inv_l) in self.dims.iter().zip(&self.inv_length_scales) {
            let inv_l2 = inv_l * inv_l;
            // ∂r²/∂xᵢ = 2 (xᵢ − yᵢ) / ℓᵢ²
            out[i] += df * 2.0 * (x[i] - y[i]) * inv_l2;
        }
    }

    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }

    fn gram(&self, xs: &[Vec<f64>]) -> Mat<f64> {
        let (n, d, a) = (xs.len(), self.dims.len(), self.log_amplitude.exp());
        let z = self.scaled(xs);
        let mut k = Mat::zeros(n, n);
        for j in 0..n {
            let zj = &z[j * d..(j + 1) * d];
            let col = k.col_as_slice_mut(j);
            col[j] = a * P::value(0.0);
            for i in j + 1..n {
                col[i] = sq_dist(&z[i * d..(i + 1) * d], zj);
            }
        }
        pulp::Arch::new().dispatch(Profiled::<P> { k: &mut k, amplitude: a, below_diagonal: true, profile: PhantomData });
        for j in 0..n {
            for i in j + 1..n {
                k[(j, i)] = k[(i, j)];
            }
        }
        k
    }

    fn cross(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> Mat<f64> {
        let mut k = Mat::zeros(a.len(), b.len());
        pulp::Arch::new().dispatch(Cross::<P> {
            zt: &self.scaled_columns(a),
            zb: &self.scaled(b),
            amplitude: self.log_amplitude.exp(),
            k: &mut k,
            profile: PhantomData,
        });
        k
    }

    fn grad_x_dot(&self, x: &[f64], data: &[Vec<f64>], w: MatRef<'_, f64>, out: &mut [Vec<f64>]) {
        let a = self.log_amplitude.exp();
        // ∂k(x, y)/∂x_q = a f'(r²) · 2 (x_q − y_q)/ℓ_q² = a f'(r²) · 2 (z_q − z'_q)/ℓ_q, z = x/ℓ:
        // accumulate Σᵢ Wᵢ a f'(r²ᵢ)(z − zᵢ) per column, scale by 2/ℓ once. In three passes —
        // the scaled data and their r², the slopes, the sums — so the slopes' arithmetic (a
        // square root and a division per pair for Matérn) runs as a loop of its own. One point
        // at a time (sum kernels, input warping); a posterior's batch takes `grad_x_dot_batch`.
        let (d, r) = (self.dims.len(), w.ncols());
        let zx: Vec<f64> = self.dims.iter().zip(&self.inv_length_scales).map(|(&i, &inv_l)| x[i] * inv_l).collect();
        let mut zi = vec![0.0; d];
        let scale = |xi: &[f64], zi: &mut [f64]| {
            for ((z, &dim), &inv_l) in zi.iter_mut().zip(&self.dims).zip(&self.inv_length_scales) {
                *z = xi[dim] * inv_l;
            }
        };
        let mut slopes: Vec<f64> = data
            .iter()
            .map(|xi| {
                scale(xi, &mut zi);
                sq_dist(&zi, &zx)
            })
            .collect();
        for v in slopes.iter_mut() {
            *v = a * P::d_dr2(*v);
        }
        let mut acc = vec![0.0; r * d];
        for (i, (xi, df)) in data.iter().zip(&slopes).enumerate() {
            scale(xi, &mut zi);
            for (c, acc) in acc.chunks_exact_mut(d).enumerate() {
                let coef = df * w[(i, c)];
                for ((s, u), v) in acc.iter_mut().zip(&zx).zip(&zi) {
                    *s += coef * (u - v);
                }
            }
        }
        for (o, acc) in out.iter_mut().zip(acc.chunks_exact(d)) {
            for ((&dim, &inv_l), s) in self.dims.iter().zip(&self.inv_length_scales).zip(acc) {
                o[dim] += 2.0 * inv_l * s;
            }
        }
    }

    fn grad_x_dot_batch(
        &self,
        xs: &[Vec<f64>],
        data: &[Vec<f64>],
        k_star: MatRef<'_, f64>,
        weights: &[MatRef<'_, f64>],
        out: &mut [Vec<Vec<f64>>],
    ) {
        pulp::Arch::new().dispatch(GradBatch::<P> {
            kernel: self,
            zt: &self.scaled_columns(data),
            zxs: &self.scaled(xs),
            k_star,
            weights,
            out,
        });
    }

    fn gram_grad_dot(&self, xs: &[Vec<f64>], w: &Mat<f64>, out: &mut [f64]) {
        // ∂k/∂log a = k; ∂k/∂log ℓ_q = a f'(r²) · (−2 (z_q − z'_q)²) with z = x/ℓ.
        let (n, d, a) = (xs.len(), self.dims.len(), self.log_amplitude.exp());
        let z = self.scaled(xs);
        let mut amplitude = 0.0;
        let mut lengths = vec![0.0; d];
        let arch = pulp::Arch::new();
        let (mut values, mut slopes) = (vec![0.0; n], vec![0.0; n]);
        for j in 0..n {
            let zj = &z[j * d..(j + 1) * d];
            let wj = w.col_as_slice(j);
            amplitude += wj[j] * a * P::value(0.0);
            for (i, v) in values[j + 1..].iter_mut().enumerate() {
                *v = sq_dist(&z[(j + 1 + i) * d..(j + 2 + i) * d], zj);
            }
            arch.dispatch(Sloped::<P> { values: &mut values[j + 1..], slopes: &mut slopes[j + 1..], profile: PhantomData });
            for i in j + 1..n {
                let zi = &z[i * d..(i + 1) * d];
                let (f, df) = (values[i], slopes[i]);
                let weight = 2.0 * wj[i];
                amplitude += weight * a * f;
                let g = -2.0 * weight * a * df;
                for ((l, u), v) in lengths.iter_mut().zip(zi).zip(zj) {
                    *l += g * (u - v) * (u - v);
                }
            }
        }
        out[0] += amplitude;
        for (o, l) in out[1..].iter_mut().zip(&lengths) {
            *o += l;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch distances equal the pairwise ones bit for bit, so `cross` gives what it gave
    /// before it was batched, in every dimension (lanes only, lanes and a tail, a tail only).
    #[test]
    fn batched_squared_distances_equal_the_pairwise_ones_bit_for_bit() {
        for d in 0..=13 {
            let n = 11;
            let point = |i: usize| (0..d).map(|q| ((i * 7 + q * 13) % 17) as f64 / 17.0 * 3.1).collect::<Vec<f64>>();
            let rows: Vec<f64> = (0..n).flat_map(point).collect();
            let zt: Vec<f64> = (0..d).flat_map(|q| (0..n).map(move |i| ((i * 7 + q * 13) % 17) as f64 / 17.0 * 3.1)).collect();
            let z = point(40);
            let (mut lanes, mut out) = (vec![0.0; 4 * n], vec![0.0; n]);
            sq_dists(&zt, &z, &mut lanes, &mut out);
            for (i, got) in out.iter().enumerate() {
                assert_eq!(got.to_bits(), sq_dist(&rows[i * d..(i + 1) * d], &z).to_bits(), "d = {d}, point {i}");
            }
        }
    }
}
