//! Output warping: a monotone map of the objective, fitted to the trials at each fit, in which
//! the GP is trained. A GP on raw values of a function spanning several orders of magnitude
//! (Rosenbrock, a validation loss that diverges on some trials) spends its length scales and
//! its variance on the few worst trials and sees the good region as flat; a monotone warp keeps
//! the order of the trials — so the argmax, EI's incumbent and the trials not to repeat — and
//! gives the model values it can fit.
//!
//! - [`OutputWarping::YeoJohnson`] (HEBO, Cowen-Rivers et al. 2022, §4.1): the values
//!   standardised, then Yeo–Johnson's power transform (Yeo & Johnson 2000) with λ by maximum
//!   likelihood of a normal fit of the result, as `scipy.stats.yeojohnson_normmax`.
//! - [`OutputWarping::HalfRank`] (OSS Vizier's default output warper, `HalfRankComponent` then
//!   `LogWarperComponent`): the values below the median replaced by normal quantiles of their
//!   ranks at the spread of the better half, then a log warp over the range that stretches the
//!   differences among the best values.
//!
//! Every warp is a bijection of the real line: Yeo–Johnson's ψ is bounded above for λ < 0 and
//! below for λ > 2, so beyond the fitted values it continues along its tangent at the best and
//! the worst of them, and the half-rank warp continues linearly or logarithmically. A warp is
//! fitted once per fit and frozen: a model that conditions on new trials between fits maps their
//! values through the same warp (a value beyond the fitted range through that continuation), so
//! conditioning equals refactoring at the same θ.
//!
//! Predictions are mapped back as a distribution ([`Warp::prediction`]): a normal `N(μ, σ²)` of
//! warped values is the distribution of `g⁻¹(W)`, whose quantiles are `g⁻¹` of the normal's (the
//! median `g⁻¹(μ)`, the central 90 % interval), and whose mean and standard deviation are
//! integrals, computed by Gauss–Hermite quadrature.
//!
//! Must not: know kernels, fits or acquisitions; it maps numbers.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::acquisition::ndtr;
use crate::designer::Prediction;

/// Which warp of the objective a GP designer fits (`algorithmConfig.outputWarping`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OutputWarping {
    /// The values as they are (standardised by the GP).
    #[default]
    None,
    /// Yeo–Johnson's power transform, λ by maximum likelihood (HEBO).
    YeoJohnson,
    /// The worse half to normal quantiles of their ranks, then a log warp (OSS Vizier).
    HalfRank,
}

/// A fitted warp `g`: increasing, defined on every finite value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Warp {
    /// `g(y) = y`.
    Identity,
    /// `g(y) = ψ_λ(z)` for `z = (y − centre) / scale` in `[low, high]`, the fitted values' range,
    /// Yeo–Johnson's ψ; beyond it, ψ's tangent at the end.
    YeoJohnson { centre: f64, scale: f64, lambda: f64, low: f64, high: f64 },
    /// Half-rank then log warp.
    HalfRank(HalfRank),
}

/// The range λ is searched over: wide enough for values spanning ten orders of magnitude (λ near
/// 2 compresses the worse tail like a log), bounded so that ψ stays well conditioned.
const LAMBDA_RANGE: (f64, f64) = (-3.0, 5.0);

/// Vizier's `LogWarperComponent.offset`.
const LOG_OFFSET: f64 = 1.5;

impl Warp {
    /// The warp of `kind` fitted to `y` (finite values, higher is better).
    pub fn fit(kind: OutputWarping, y: &[f64]) -> Warp {
        let distinct = y.iter().any(|v| *v != y[0]);
        if y.len() < 3 || !distinct || y.iter().any(|v| !v.is_finite()) {
            return Warp::Identity;
        }
        match kind {
            OutputWarping::None => Warp::Identity,
            OutputWarping::YeoJohnson => {
                let n = y.len() as f64;
                let centre = y.iter().sum::<f64>() / n;
                let scale = (y.iter().map(|v| (v - centre).powi(2)).sum::<f64>() / n).sqrt();
                if !(scale > 0.0 && scale.is_finite()) {
                    return Warp::Identity;
                }
                let z: Vec<f64> = y.iter().map(|v| (v - centre) / scale).collect();
                let lambda = golden_max(|l| yeo_johnson_log_likelihood(&z, l), LAMBDA_RANGE.0, LAMBDA_RANGE.1);
                let low = z.iter().copied().fold(f64::INFINITY, f64::min);
                let high = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                Warp::YeoJohnson { centre, scale, lambda, low, high }
            }
            OutputWarping::HalfRank => HalfRank::fit(y).map_or(Warp::Identity, Warp::HalfRank),
        }
    }

    /// Whether this is the identity.
    pub fn is_identity(&self) -> bool {
        matches!(self, Warp::Identity)
    }

    /// `g(y)`.
    pub fn apply(&self, y: f64) -> f64 {
        match self {
            Warp::Identity => y,
            Warp::YeoJohnson { centre, scale, lambda, low, high } => {
                let z = (y - centre) / scale;
                let end = if z < *low {
                    *low
                } else if z > *high {
                    *high
                } else {
                    return yeo_johnson(z, *lambda);
                };
                yeo_johnson(end, *lambda) + yeo_johnson_slope(end, *lambda) * (z - end)
            }
            Warp::HalfRank(h) => h.apply(y),
        }
    }

    /// `g⁻¹(w)`, defined for every `w` (every warp is a bijection of the real line).
    pub fn invert(&self, w: f64) -> f64 {
        match self {
            Warp::Identity => w,
            Warp::YeoJohnson { centre, scale, lambda, low, high } => {
                let (w_low, w_high) = (yeo_johnson(*low, *lambda), yeo_johnson(*high, *lambda));
                let z = if w < w_low {
                    low + (w - w_low) / yeo_johnson_slope(*low, *lambda)
                } else if w > w_high {
                    high + (w - w_high) / yeo_johnson_slope(*high, *lambda)
                } else {
                    // Within ψ's image of [low, high], so within ψ's range: the inverse is exact.
                    yeo_johnson_inverse(w, *lambda).clamp(*low, *high)
                };
                centre + scale * z
            }
            Warp::HalfRank(h) => h.invert(w),
        }
    }

    /// `ln g'(y)` at the `y` with `g(y) = w`: what turns a density of warped values into one of
    /// the objective's own (`p(y) = p_g(g(y)) g'(y)`), so that models fitted under different
    /// warps are compared on the same footing.
    pub fn log_slope(&self, w: f64) -> f64 {
        match self {
            Warp::Identity => 0.0,
            Warp::YeoJohnson { centre, scale, lambda, low, high } => {
                // Beyond [low, high] the tangent's slope: ψ' at the end.
                let z = ((self.invert(w) - centre) / scale).clamp(*low, *high);
                yeo_johnson_log_slope(z, *lambda) - scale.ln()
            }
            Warp::HalfRank(h) => {
                // Piecewise: the slope of the segment the value is on, by a central difference
                // well inside it.
                let y = h.invert(w);
                let step = 1e-6 * (h.high - h.low);
                let slope = (h.apply(y + step) - h.apply(y - step)) / (2.0 * step);
                slope.max(f64::MIN_POSITIVE).ln()
            }
        }
    }

    /// The median and the central 90 % interval in the objective's units of a normal `N(mean,
    /// sd²)` of warped values: `g⁻¹` of the normal's.
    pub fn central(&self, mean: f64, sd: f64) -> (f64, f64, f64) {
        let z = crate::designer::Z_95;
        (self.invert(mean), self.invert(mean - z * sd), self.invert(mean + z * sd))
    }

    /// The prediction in the objective's units of a normal `N(mean, sd²)` of warped values: the
    /// distribution of `g⁻¹(W)`. Its quantiles are `g⁻¹` of the normal's; its mean and standard
    /// deviation are Gauss–Hermite quadratures of `g⁻¹` (exact for the identity), left out when
    /// they come out non-finite.
    pub fn prediction(&self, mean: f64, sd: f64) -> Prediction {
        let (median, lower, upper) = self.central(mean, sd);
        let (m, s) = match self {
            Warp::Identity => (mean, sd),
            _ => {
                let (nodes, weights) = hermite_rule();
                let values: Vec<f64> = nodes.iter().map(|x| self.invert(mean + sd * std::f64::consts::SQRT_2 * x)).collect();
                let norm = std::f64::consts::PI.sqrt();
                let m = weights.iter().zip(&values).map(|(w, v)| w * v).sum::<f64>() / norm;
                let var = weights.iter().zip(&values).map(|(w, v)| w * (v - m).powi(2)).sum::<f64>() / norm;
                (m, var.sqrt())
            }
        };
        let finite = m.is_finite() && s.is_finite();
        Prediction { median, lower, upper, mean: finite.then_some(m), stddev: finite.then_some(s) }
    }

    /// What the model's description shows of the warp.
    pub fn describe(&self) -> serde_json::Value {
        match self {
            Warp::Identity => serde_json::Value::Null,
            Warp::YeoJohnson { lambda, .. } => serde_json::json!({"kind": "YEO_JOHNSON", "lambda": lambda}),
            Warp::HalfRank(h) => serde_json::json!({"kind": "HALF_RANK", "median": h.median, "goodHalfSpread": h.spread}),
        }
    }
}

/// Yeo–Johnson's ψ_λ(z): `((z+1)^λ − 1)/λ` for z ≥ 0 (log(z+1) at λ = 0), and
/// `−((1−z)^(2−λ) − 1)/(2−λ)` for z < 0 (−log(1−z) at λ = 2).
fn yeo_johnson(z: f64, lambda: f64) -> f64 {
    if z >= 0.0 {
        if lambda.abs() < 1e-12 { z.ln_1p() } else { ((z.ln_1p() * lambda).exp_m1()) / lambda }
    } else {
        let mu = 2.0 - lambda;
        if mu.abs() < 1e-12 { -(-z).ln_1p() } else { -(((-z).ln_1p() * mu).exp_m1()) / mu }
    }
}

/// ln ψ_λ'(z): ψ_λ'(z) is `(1 + z)^(λ−1)` for z ≥ 0, `(1 − z)^(1−λ)` below.
fn yeo_johnson_log_slope(z: f64, lambda: f64) -> f64 {
    if z >= 0.0 { (lambda - 1.0) * z.ln_1p() } else { (1.0 - lambda) * (-z).ln_1p() }
}

/// ψ_λ'(z).
fn yeo_johnson_slope(z: f64, lambda: f64) -> f64 {
    yeo_johnson_log_slope(z, lambda).exp()
}

/// ψ_λ⁻¹(w) for `w` in ψ_λ's range (bounded above for λ < 0, below for λ > 2; the caller keeps
/// within the image of the fitted values, inside it).
fn yeo_johnson_inverse(w: f64, lambda: f64) -> f64 {
    if w >= 0.0 {
        if lambda.abs() < 1e-12 {
            w.exp_m1()
        } else {
            // (λw + 1)^(1/λ) − 1, with λw + 1 > 0 (for λ < 0, w < −1/λ).
            ((lambda * w).ln_1p() / lambda).exp_m1()
        }
    } else {
        let mu = 2.0 - lambda;
        if mu.abs() < 1e-12 { -(-w).exp_m1() } else { -((-mu * w).ln_1p() / mu).exp_m1() }
    }
}

/// The nodes and weights of the 40-point Gauss–Hermite rule, `∫ e^{−x²} f(x) dx ≈ Σ wᵢ f(xᵢ)`
/// (exact for polynomials of degree < 80): roots of the orthonormal Hermite polynomial by
/// Newton's method from the usual asymptotic starting guesses, computed once.
fn hermite_rule() -> &'static (Vec<f64>, Vec<f64>) {
    static RULE: OnceLock<(Vec<f64>, Vec<f64>)> = OnceLock::new();
    RULE.get_or_init(|| {
        const N: usize = 40;
        let mut x = vec![0.0; N];
        let mut w = vec![0.0; N];
        let mut z = 0.0f64;
        for i in 0..N.div_ceil(2) {
            z = match i {
                0 => (2.0 * N as f64 + 1.0).sqrt() - 1.85575 * (2.0 * N as f64 + 1.0).powf(-1.0 / 6.0),
                1 => z - 1.14 * (N as f64).powf(0.426) / z,
                2 => 1.86 * z - 0.86 * x[0],
                3 => 1.91 * z - 0.91 * x[1],
                _ => 2.0 * z - x[i - 2],
            };
            let mut derivative = 1.0;
            for _ in 0..100 {
                // The orthonormal recurrence hⱼ = z √(2/j) hⱼ₋₁ − √((j−1)/j) hⱼ₋₂, h₀ = π^(−1/4).
                let (mut p1, mut p2) = (std::f64::consts::PI.powf(-0.25), 0.0);
                for j in 1..=N {
                    let p3 = p2;
                    p2 = p1;
                    p1 = z * (2.0 / j as f64).sqrt() * p2 - ((j - 1) as f64 / j as f64).sqrt() * p3;
                }
                derivative = (2.0 * N as f64).sqrt() * p2;
                let step = p1 / derivative;
                z -= step;
                if step.abs() <= 1e-15 * z.abs().max(1.0) {
                    break;
                }
            }
            x[i] = z;
            x[N - 1 - i] = -z;
            w[i] = 2.0 / (derivative * derivative);
            w[N - 1 - i] = w[i];
        }
        (x, w)
    })
}

/// The profile log-likelihood of λ for a normal fit of ψ_λ(z): `−n/2 log σ̂²_λ + (λ − 1) Σ
/// sign(z) log(1 + |z|)` (Yeo & Johnson 2000, eq. 3.1, the mean and variance profiled out).
fn yeo_johnson_log_likelihood(z: &[f64], lambda: f64) -> f64 {
    let n = z.len() as f64;
    let w: Vec<f64> = z.iter().map(|&v| yeo_johnson(v, lambda)).collect();
    let mean = w.iter().sum::<f64>() / n;
    let var = w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    if !(var > 0.0 && var.is_finite()) {
        return f64::NEG_INFINITY;
    }
    let jacobian: f64 = z.iter().map(|v| v.signum() * v.abs().ln_1p()).sum();
    -0.5 * n * var.ln() + (lambda - 1.0) * jacobian
}

/// The maximiser of `f` on `[lo, hi]` by golden-section search (to 1e-6 of the range); `f` is
/// taken to be unimodal there, as the Yeo–Johnson likelihood is in practice.
fn golden_max(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (lo, hi);
    let mut c = b - ratio * (b - a);
    let mut d = a + ratio * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    while b - a > 1e-6 * (hi - lo) {
        if fc >= fd {
            b = d;
            (d, fd) = (c, fc);
            c = b - ratio * (b - a);
            fc = f(c);
        } else {
            a = c;
            (c, fc) = (d, fd);
            d = a + ratio * (b - a);
            fd = f(d);
        }
    }
    0.5 * (a + b)
}

/// Vizier's half-rank warp followed by its log warp, fitted to a set of values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct HalfRank {
    /// The median of the values: the half-rank warp is the identity from here up.
    median: f64,
    /// The spread of the better half about the median, the scale of the worse half's quantiles.
    spread: f64,
    /// The distinct values below the median, ascending, with their half-rank images.
    knots: Vec<(f64, f64)>,
    /// The log warp's range (of half-ranked values).
    low: f64,
    high: f64,
}

impl HalfRank {
    fn fit(y: &[f64]) -> Option<HalfRank> {
        let mut sorted = y.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 { sorted[n / 2] } else { 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]) };
        let mut unique = sorted.clone();
        unique.dedup();
        // The spread of the better half about the median (Vizier's `_estimate_std_of_good_half`),
        // falling back to all values' when the better half is one value.
        let good: Vec<f64> = unique.iter().copied().filter(|v| *v >= median).collect();
        let rms = |vs: &[f64]| (vs.iter().map(|v| (v - median).powi(2)).sum::<f64>() / vs.len().max(1) as f64).sqrt();
        let spread = [rms(&good), rms(&unique)].into_iter().find(|s| *s > 0.0 && s.is_finite())?;
        // Dense ranks among the distinct values; the ones below the median go to normal
        // quantiles `median + spread · Φ⁻¹(½ (rank − ½) / denominator)`, all below the median.
        let at_median = unique.partition_point(|v| *v < median);
        let denominator = at_median as f64 + if unique.get(at_median) == Some(&median) { 0.5 } else { 0.0 };
        let knots: Vec<(f64, f64)> = unique[..at_median]
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, median + spread * normal_quantile(0.5 * (i as f64 + 0.5) / denominator)))
            .collect();
        let low = knots.first().map_or(sorted[0], |k| k.1);
        let high = sorted[n - 1];
        // Not increasing (or not numbers): no warp to fit.
        if high.partial_cmp(&low) != Some(std::cmp::Ordering::Greater) {
            return None;
        }
        Some(HalfRank { median, spread, knots, low, high })
    }

    /// The half-rank image of `y`: the identity from the median up, linear between the knots,
    /// and below the lowest knot the line through the lowest and the highest.
    fn half_rank(&self, y: f64) -> f64 {
        interpolate(&self.knots, self.median, y, |k| k.0, |k| k.1)
    }

    fn half_rank_inverse(&self, v: f64) -> f64 {
        interpolate(&self.knots, self.median, v, |k| k.1, |k| k.0)
    }

    /// The log warp: `½ − log(1 + (offset − 1)(high − v)/(high − low)) / log(offset)`, in
    /// [−½, ½] over the range; above `high` its tangent there.
    fn log_warp(&self, v: f64) -> f64 {
        let range = self.high - self.low;
        if v > self.high {
            return 0.5 + (v - self.high) / range * (LOG_OFFSET - 1.0) / LOG_OFFSET.ln();
        }
        0.5 - ((self.high - v) / range * (LOG_OFFSET - 1.0)).ln_1p() / LOG_OFFSET.ln()
    }

    fn log_warp_inverse(&self, w: f64) -> f64 {
        let range = self.high - self.low;
        if w > 0.5 {
            return self.high + (w - 0.5) * range * LOG_OFFSET.ln() / (LOG_OFFSET - 1.0);
        }
        self.high - (LOG_OFFSET.ln() * (0.5 - w)).exp_m1() * range / (LOG_OFFSET - 1.0)
    }

    fn apply(&self, y: f64) -> f64 {
        self.log_warp(self.half_rank(y))
    }

    fn invert(&self, w: f64) -> f64 {
        self.half_rank_inverse(self.log_warp_inverse(w))
    }
}

/// The piecewise-linear map through `knots` (ascending in both `from` and `to`) that is the
/// identity from `median` up; between the last knot and the median the segment joining them;
/// below the first knot the line through the first knot and the median.
fn interpolate<K>(knots: &[K], median: f64, v: f64, from: impl Fn(&K) -> f64, to: impl Fn(&K) -> f64) -> f64 {
    if v >= median || knots.is_empty() {
        return v;
    }
    let i = knots.partition_point(|k| from(k) <= v);
    let (a, b) = match i {
        0 => ((from(&knots[0]), to(&knots[0])), (median, median)),
        i if i == knots.len() => ((from(&knots[i - 1]), to(&knots[i - 1])), (median, median)),
        i => ((from(&knots[i - 1]), to(&knots[i - 1])), (from(&knots[i]), to(&knots[i]))),
    };
    if b.0 <= a.0 {
        return a.1;
    }
    a.1 + (v - a.0) * (b.1 - a.1) / (b.0 - a.0)
}

/// Φ⁻¹(p) for p in (0, 1): Acklam's rational approximation, refined by one Halley step on Φ
/// (`erfc`), to about 1e-15.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] =
        [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
    const B: [f64; 5] = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] =
        [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // Halley's step: e = Φ(x) − p, u = e √(2π) e^{x²/2}.
    let e = ndtr(x) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (0.5 * x * x).exp();
    x - u / (1.0 + 0.5 * x * u)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values spanning six orders of magnitude, as a Rosenbrock's are (maximised: negated).
    fn heavy_tailed() -> Vec<f64> {
        (0..40).map(|i| -(1.5f64).powi(i % 35) - 0.1 * i as f64).collect()
    }

    #[test]
    fn the_normal_quantile_inverts_the_normal_cdf() {
        for p in [1e-12, 1e-6, 0.01, 0.02425, 0.1, 0.3, 0.5, 0.77, 0.975, 0.999_999] {
            let x = normal_quantile(p);
            assert!((ndtr(x) - p).abs() < 1e-14 * p.max(1e-3) / 1e-3, "Φ(Φ⁻¹({p})) = {}", ndtr(x));
        }
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-12);
        assert!((normal_quantile(0.95) - crate::designer::Z_95).abs() < 1e-14);
    }

    #[test]
    fn every_warp_is_increasing_and_inverts_itself() {
        let y = heavy_tailed();
        for kind in [OutputWarping::YeoJohnson, OutputWarping::HalfRank] {
            let warp = Warp::fit(kind, &y);
            assert!(!warp.is_identity(), "{kind:?}");
            // Over and beyond the data: below the worst, between, above the best.
            let mut probes: Vec<f64> = y.clone();
            probes.extend([-1e7, -3e6, 0.0, 0.5, 3.0, 50.0]);
            probes.sort_by(f64::total_cmp);
            let warped: Vec<f64> = probes.iter().map(|v| warp.apply(*v)).collect();
            for (w, v) in warped.windows(2).zip(probes.windows(2)) {
                assert!(w[0].is_finite() && w[1].is_finite(), "{kind:?}: finite at {v:?}");
                if v[1] > v[0] {
                    assert!(w[1] > w[0], "{kind:?}: increasing between {} and {}: {} {}", v[0], v[1], w[0], w[1]);
                }
            }
            for (v, w) in probes.iter().zip(&warped) {
                let back = warp.invert(*w);
                assert!((back - v).abs() <= 1e-8 * v.abs().max(1.0), "{kind:?}: g⁻¹(g({v})) = {back}");
            }
        }
    }

    #[test]
    fn the_log_slope_is_the_derivative_of_the_warp() {
        let y = heavy_tailed();
        for kind in [OutputWarping::YeoJohnson, OutputWarping::HalfRank] {
            let warp = Warp::fit(kind, &y);
            for v in [-3e5f64, -400.0, -12.0, -2.5, -1.2] {
                let h = 1e-4 * v.abs().max(1.0);
                let fd = (warp.apply(v + h) - warp.apply(v - h)) / (2.0 * h);
                let analytic = warp.log_slope(warp.apply(v)).exp();
                assert!((analytic - fd).abs() < 1e-3 * fd.abs(), "{kind:?} at {v}: {analytic} vs {fd}");
            }
        }
        assert_eq!(Warp::Identity.log_slope(3.0), 0.0);
    }

    #[test]
    fn yeo_johnson_compresses_the_worse_tail() {
        let y = heavy_tailed();
        let Warp::YeoJohnson { lambda, .. } = Warp::fit(OutputWarping::YeoJohnson, &y) else { panic!("a Yeo–Johnson warp") };
        // A long tail of bad (low) values: λ > 1 pulls it in.
        assert!(lambda > 1.0, "λ = {lambda}");
        // And the result is closer to normal: less than half as skewed as the values.
        let skew = |v: &[f64]| {
            let n = v.len() as f64;
            let m = v.iter().sum::<f64>() / n;
            let s = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt();
            v.iter().map(|x| ((x - m) / s).powi(3)).sum::<f64>() / n
        };
        let warp = Warp::fit(OutputWarping::YeoJohnson, &y);
        let w: Vec<f64> = y.iter().map(|v| warp.apply(*v)).collect();
        assert!(skew(&w).abs() < skew(&y).abs() / 2.0, "skew {} → {}", skew(&y), skew(&w));
        // ψ is continuous with a continuous derivative at 0 for every λ.
        for l in [-2.5, 0.0, 0.7, 1.0, 2.0, 4.5] {
            let (a, b) = (yeo_johnson(-1e-9, l), yeo_johnson(1e-9, l));
            assert!((a + 1e-9).abs() < 1e-15 && (b - 1e-9).abs() < 1e-15, "λ = {l}: {a} {b}");
        }
    }

    #[test]
    fn half_rank_keeps_the_better_half_and_spreads_the_worse_as_normal_quantiles() {
        let y: Vec<f64> = (0..21).map(|i| if i < 10 { -1e6 * (i + 1) as f64 } else { i as f64 }).collect();
        let Warp::HalfRank(h) = Warp::fit(OutputWarping::HalfRank, &y) else { panic!("a half-rank warp") };
        assert_eq!(h.median, 10.0);
        for v in [10.0, 12.5, 20.0] {
            assert_eq!(h.half_rank(v), v, "the better half is unchanged");
        }
        // The worse half lands within a few spreads below the median, not a million below.
        let lowest = h.half_rank(-1e7);
        assert!(lowest > h.median - 4.0 * h.spread && lowest < h.median, "{lowest}");
        // The log warp puts the data within [−½, ½], the best at ½.
        let w: Vec<f64> = y.iter().map(|v| h.apply(*v)).collect();
        assert!(w.iter().all(|v| (-0.5 - 1e-12..=0.5 + 1e-12).contains(v)), "{w:?}");
        assert!((h.apply(20.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn too_few_or_equal_values_are_not_warped() {
        for kind in [OutputWarping::YeoJohnson, OutputWarping::HalfRank] {
            assert!(Warp::fit(kind, &[1.0, 2.0]).is_identity());
            assert!(Warp::fit(kind, &[3.0; 10]).is_identity());
        }
        assert!(Warp::fit(OutputWarping::None, &heavy_tailed()).is_identity());
    }

    #[test]
    fn a_prediction_is_mapped_back_as_a_distribution() {
        let warp = Warp::fit(OutputWarping::YeoJohnson, &heavy_tailed());
        let w = warp.apply(-20.0);
        let p = warp.prediction(w, 0.01);
        assert!((p.median + 20.0).abs() < 1e-9, "{p:?}");
        assert!(p.lower < p.median && p.median < p.upper, "{p:?}");
        let (m, s) = (p.mean.unwrap(), p.stddev.unwrap());
        assert!((p.lower..=p.upper).contains(&m) && s > 0.0 && s < p.upper - p.lower, "{p:?}");
        let z = normal_quantile(0.95);
        let id = Warp::Identity.prediction(1.5, 0.2);
        assert_eq!((id.median, id.mean, id.stddev), (1.5, Some(1.5), Some(0.2)));
        assert!((id.lower - (1.5 - z * 0.2)).abs() < 1e-15 && (id.upper - (1.5 + z * 0.2)).abs() < 1e-15);
    }

    #[test]
    fn the_hermite_rule_integrates_the_normal_moments() {
        let (x, w) = hermite_rule();
        let e = |f: &dyn Fn(f64) -> f64| {
            w.iter().zip(x).map(|(w, x)| w * f(std::f64::consts::SQRT_2 * x)).sum::<f64>() / std::f64::consts::PI.sqrt()
        };
        assert!((e(&|_| 1.0) - 1.0).abs() < 1e-13);
        assert!(e(&|z| z).abs() < 1e-13);
        assert!((e(&|z| z * z) - 1.0).abs() < 1e-12);
        assert!((e(&|z| z.powi(4)) - 3.0).abs() < 1e-11);
        // A log-normal's mean: E[e^{σZ}] = e^{σ²/2}.
        assert!((e(&|z| (0.8 * z).exp()) - (0.32f64).exp()).abs() < 1e-12);
    }

    /// The regression of issue 43: with λ above 2, ψ is bounded below, and a warped prediction
    /// below that bound was mapped back to about 1e147. Every λ of the searched range now maps
    /// every warped value to a finite value, increasingly, and a prediction far from the data
    /// stays within the data's range widened by its own interval.
    #[test]
    fn every_lambda_maps_every_value_back_finitely() {
        let y = heavy_tailed();
        let n = y.len() as f64;
        let centre = y.iter().sum::<f64>() / n;
        let scale = (y.iter().map(|v| (v - centre).powi(2)).sum::<f64>() / n).sqrt();
        let z: Vec<f64> = y.iter().map(|v| (v - centre) / scale).collect();
        let low = z.iter().copied().fold(f64::INFINITY, f64::min);
        let high = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for lambda in [-3.0, -1.0, 0.0, 1.0, 2.0, 3.3, 4.1, 5.0] {
            let warp = Warp::YeoJohnson { centre, scale, lambda, low, high };
            let ws: Vec<f64> = (-200..=200).map(|i| i as f64 * 0.05).collect();
            let back: Vec<f64> = ws.iter().map(|w| warp.invert(*w)).collect();
            for (pair, w) in back.windows(2).zip(ws.windows(2)) {
                assert!(pair[0].is_finite() && pair[1] > pair[0], "λ = {lambda}: g⁻¹ at {w:?}: {pair:?}");
            }
            for v in [-1e7, -40.0, -1.3, 0.0, 7.0] {
                assert!((warp.invert(warp.apply(v)) - v).abs() <= 1e-8 * v.abs().max(1.0), "λ = {lambda} at {v}");
            }
            // The warped data's spread, far below and far above: what a GP predicts away from
            // its data is at most a few of its own deviations out.
            let w_data: Vec<f64> = y.iter().map(|v| warp.apply(*v)).collect();
            let (w_lo, w_hi) =
                (w_data.iter().copied().fold(f64::INFINITY, f64::min), w_data.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            let sd = w_hi - w_lo;
            for mean in [w_lo - 2.0 * sd, w_lo, 0.5 * (w_lo + w_hi), w_hi + 2.0 * sd] {
                let p = warp.prediction(mean, sd);
                let wide = warp.prediction(mean, sd * normal_quantile(0.995) / normal_quantile(0.95));
                let (y_lo, y_hi) = (y.iter().copied().fold(f64::INFINITY, f64::min), y.iter().copied().fold(f64::NEG_INFINITY, f64::max));
                let (bound_lo, bound_hi) = (y_lo.min(wide.lower), y_hi.max(wide.upper));
                for v in [Some(p.median), Some(p.lower), Some(p.upper), p.mean] {
                    let v = v.expect("a finite mean under a bijective warp");
                    assert!(
                        v.is_finite() && (bound_lo..=bound_hi).contains(&v),
                        "λ = {lambda}, μ = {mean}: {p:?} beyond [{bound_lo}, {bound_hi}]"
                    );
                }
            }
        }
    }
}
