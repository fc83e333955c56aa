//! Hyperparameter samples: θ drawn from its posterior `p(θ | y) ∝ p(y | θ) p(θ)` inside the fit's
//! bounds, instead of the one θ that maximises it, so a model is not surer than its data allow
//! (Snoek, Larochelle & Adams 2012, §3.2, "integrated acquisition"). Univariate slice sampling
//! with stepping out and shrinkage, one coordinate at a time in a random order (Neal 2003,
//! "Slice sampling", §4, Fig. 3 and 5): no gradient, no tuning beyond a starting width, and
//! every proposal inside the bounds.
//!
//! Must not know about kernels or GPs: it samples any log density on a box.

use rand::seq::SliceRandom;
use rand::{Rng, RngExt};

/// How many states a chain runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    /// Sweeps discarded before the first sample (the chain starts at the MAP θ, already in the
    /// posterior's bulk, so a few suffice).
    pub burn: usize,
    /// Samples kept.
    pub count: usize,
    /// Sweeps between two samples kept.
    pub thin: usize,
}

/// The most steps a slice is stepped out by on each side (Neal 2003, Fig. 3's `m`).
const MAX_STEPS_OUT: usize = 8;

/// The most shrinkages before a coordinate is left where it was (a density that is −∞ or NaN
/// almost everywhere on the slice; never reached for a continuous density).
const MAX_SHRINKS: usize = 64;

/// Samples of `log_density` (up to a constant; −∞ or NaN outside its support) on the box
/// `lower..=upper`, from `start` (inside the box, with a finite density), stepping out by
/// `width` on each coordinate. Returns `chain.count` states; `log_density` is evaluated about
/// `(burn + count·thin) · dim · 6` times.
pub fn slice_sample(
    mut log_density: impl FnMut(&[f64]) -> f64,
    start: &[f64],
    lower: &[f64],
    upper: &[f64],
    width: &[f64],
    chain: Chain,
    rng: &mut dyn Rng,
) -> Vec<Vec<f64>> {
    let dim = start.len();
    assert!(lower.len() == dim && upper.len() == dim && width.len() == dim, "slice_sample: one bound and width per coordinate");
    let mut x = start.to_vec();
    let mut fx = log_density(&x);
    let mut order: Vec<usize> = (0..dim).collect();
    let mut out = Vec::with_capacity(chain.count);
    let sweeps = chain.burn + chain.count * chain.thin.max(1);
    for sweep in 1..=sweeps {
        order.shuffle(rng);
        for &i in &order {
            fx = step(&mut log_density, &mut x, fx, i, (lower[i], upper[i]), width[i], rng);
        }
        if sweep > chain.burn && (sweep - chain.burn).is_multiple_of(chain.thin.max(1)) {
            out.push(x.clone());
        }
    }
    out
}

/// One update of coordinate `i` of `x` (log density `fx` there); returns the new log density.
fn step(
    log_density: &mut impl FnMut(&[f64]) -> f64,
    x: &mut [f64],
    fx: f64,
    i: usize,
    (lo, hi): (f64, f64),
    width: f64,
    rng: &mut dyn Rng,
) -> f64 {
    // The slice: {x : log f(x) > fx − Exp(1)}.
    let level = fx + rng.random::<f64>().max(f64::MIN_POSITIVE).ln();
    let x0 = x[i];
    let mut at = |x: &mut [f64], v: f64| {
        x[i] = v;
        let f = log_density(x);
        if f.is_nan() { f64::NEG_INFINITY } else { f }
    };
    // Step out an interval of `width` placed at random around x0, within the bounds.
    let mut left = x0 - width * rng.random::<f64>();
    let mut right = left + width;
    let (mut l_steps, mut r_steps) = (MAX_STEPS_OUT, MAX_STEPS_OUT);
    while left > lo && l_steps > 0 && at(x, left) > level {
        left -= width;
        l_steps -= 1;
    }
    while right < hi && r_steps > 0 && at(x, right) > level {
        right += width;
        r_steps -= 1;
    }
    let (mut left, mut right) = (left.max(lo), right.min(hi));
    // Shrink towards x0 until a point on the slice is drawn.
    for _ in 0..MAX_SHRINKS {
        let v = left + rng.random::<f64>() * (right - left);
        let f = at(x, v);
        if f > level {
            return f;
        }
        if v < x0 {
            left = v;
        } else {
            right = v;
        }
    }
    x[i] = x0;
    fx
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn moments(samples: &[Vec<f64>], i: usize) -> (f64, f64) {
        let n = samples.len() as f64;
        let mean = samples.iter().map(|s| s[i]).sum::<f64>() / n;
        (mean, samples.iter().map(|s| (s[i] - mean).powi(2)).sum::<f64>() / n)
    }

    #[test]
    fn samples_a_correlated_gaussian_with_its_moments() {
        // N((1, −2), Σ) with variances 1 and 4 and correlation 0.6.
        let (s1, s2, rho) = (1.0f64, 2.0f64, 0.6f64);
        let log_density = |x: &[f64]| {
            let (a, b) = ((x[0] - 1.0) / s1, (x[1] + 2.0) / s2);
            -0.5 * (a * a - 2.0 * rho * a * b + b * b) / (1.0 - rho * rho)
        };
        let mut rng = StdRng::seed_from_u64(7);
        let chain = Chain { burn: 50, count: 4000, thin: 1 };
        let s = slice_sample(log_density, &[1.0, -2.0], &[-50.0; 2], &[50.0; 2], &[1.0, 1.0], chain, &mut rng);
        assert_eq!(s.len(), 4000);
        let ((m0, v0), (m1, v1)) = (moments(&s, 0), moments(&s, 1));
        assert!((m0 - 1.0).abs() < 0.1 && (m1 + 2.0).abs() < 0.2, "means {m0}, {m1}");
        assert!((v0 - 1.0).abs() < 0.15 && (v1 - 4.0).abs() < 0.6, "variances {v0}, {v1}");
        let cov = s.iter().map(|x| (x[0] - m0) * (x[1] - m1)).sum::<f64>() / s.len() as f64;
        assert!((cov / (v0 * v1).sqrt() - rho).abs() < 0.08, "correlation {}", cov / (v0 * v1).sqrt());
    }

    #[test]
    fn never_leaves_the_box_and_samples_its_truncation() {
        // A standard normal truncated to [0, 3]: mean φ(0)−φ(3) over Φ(3)−½ ≈ 0.7920.
        let mut rng = StdRng::seed_from_u64(3);
        let chain = Chain { burn: 20, count: 4000, thin: 1 };
        let s = slice_sample(|x: &[f64]| -0.5 * x[0] * x[0], &[0.5], &[0.0], &[3.0], &[2.0], chain, &mut rng);
        assert!(s.iter().all(|x| (0.0..=3.0).contains(&x[0])));
        let (mean, _) = moments(&s, 0);
        assert!((mean - 0.792).abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn a_density_that_fails_off_its_support_is_sampled_on_it() {
        // log x on (0, 1] and NaN below: Beta(2, 1), mean 2/3.
        let mut rng = StdRng::seed_from_u64(11);
        let chain = Chain { burn: 20, count: 3000, thin: 1 };
        let s = slice_sample(|x: &[f64]| if x[0] > 0.0 { x[0].ln() } else { f64::NAN }, &[0.5], &[-1.0], &[1.0], &[0.5], chain, &mut rng);
        assert!(s.iter().all(|x| x[0] > 0.0 && x[0] <= 1.0));
        let (mean, _) = moments(&s, 0);
        assert!((mean - 2.0 / 3.0).abs() < 0.04, "mean {mean}");
    }

    #[test]
    fn the_same_seed_draws_the_same_chain() {
        let draw = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            slice_sample(
                |x: &[f64]| -x.iter().map(|v| v * v).sum::<f64>(),
                &[0.0; 3],
                &[-5.0; 3],
                &[5.0; 3],
                &[1.0; 3],
                Chain { burn: 2, count: 5, thin: 2 },
                &mut rng,
            )
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        assert_eq!(draw(1).len(), 5);
    }
}
