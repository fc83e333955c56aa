//! How much wider a model's predictions must be to mean what they say: the one factor on the
//! latent deviation under which observations the model did not see fall within their central
//! 50 % and 90 % intervals as often as those levels say. What a subset's model is widened by
//! (see [`super::subset`]): the trials left out of it are the evidence.
//!
//! The factor multiplies the latent deviation only: the observation noise the model learned is
//! kept, and the observations are judged with it added. It changes what a model says it knows
//! (`:predict`, the model page), never what it proposes. Must not: change anything on fewer than
//! [`MIN_EVIDENCE`] observations, or go beyond [`BOUNDS`].
//!
//! A GP's own leave-one-out residuals (Rasmussen & Williams 2006, eq. 5.10–5.12) were tried as
//! the evidence for every model and not adopted: narrowing by them broke the tree and 25-D
//! problems (docs/benchmarks.md, "Calibration"), and they never asked for widening.

/// One observation a model did not see, as it predicted it in its warped units.
#[derive(Clone, Copy, Debug)]
pub struct Residual {
    /// The observation less the predicted mean.
    pub error: f64,
    /// The latent predictive deviation.
    pub latent_sd: f64,
    /// The observation noise's deviation.
    pub noise_sd: f64,
}

/// Below this many observations the factor is 1: too few to say.
pub const MIN_EVIDENCE: usize = 10;

/// The factors considered, smallest and largest.
pub const BOUNDS: (f64, f64) = (0.05, 1000.0);

/// Φ⁻¹(0.75) and Φ⁻¹(0.95): half and nine-tenths of a normal lie within these many deviations.
const HALF: f64 = 0.674_489_750_196_081_7;
const NINE_TENTHS: f64 = 1.644_853_626_951_472;

/// The factor within `[low, high]` (a subset's model asks for at least 1) under which the
/// coverage of `residuals` by their central 50 % and 90 % intervals is furthest from neither
/// level: the smallest worst miss, on a grid of 241 factors even in the logarithm; among equal
/// misses the one nearest 1.
pub fn factor(residuals: &[Residual], low: f64, high: f64) -> f64 {
    let usable: Vec<&Residual> =
        residuals.iter().filter(|r| r.error.is_finite() && r.latent_sd.is_finite() && r.noise_sd.is_finite()).collect();
    if usable.len() < MIN_EVIDENCE || low > high {
        return 1.0_f64.clamp(low, high);
    }
    let n = usable.len() as f64;
    let miss = |c: f64| {
        let (mut half, mut most) = (0usize, 0usize);
        for r in &usable {
            let z = r.error.abs() / ((c * r.latent_sd).powi(2) + r.noise_sd.powi(2)).sqrt();
            half += usize::from(z <= HALF);
            most += usize::from(z <= NINE_TENTHS);
        }
        (half as f64 / n - 0.5).abs().max((most as f64 / n - 0.9).abs())
    };
    let (a, b) = (low.max(BOUNDS.0).ln(), high.min(BOUNDS.1).ln());
    let steps = 240;
    let mut best = (f64::INFINITY, f64::INFINITY, 1.0);
    let one = (low..=high).contains(&1.0).then_some(1.0);
    for c in (0..=steps).map(|k| (a + (b - a) * k as f64 / steps as f64).exp()).chain(one) {
        let candidate = (miss(c), c.ln().abs(), c);
        if candidate.0 < best.0 - 1e-12 || (candidate.0 <= best.0 + 1e-12 && candidate.1 < best.1) {
            best = candidate;
        }
    }
    best.2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Residuals of a model whose deviations are `wrong` times the truth's.
    fn residuals(wrong: f64) -> Vec<Residual> {
        // Evenly spaced normal quantiles: a sample of N(0, 1) without randomness.
        (1..400)
            .map(|k| {
                let p = k as f64 / 400.0;
                let z = crate::designer::gp::output_warp::normal_quantile(p);
                Residual { error: z, latent_sd: wrong, noise_sd: 0.0 }
            })
            .collect()
    }

    #[test]
    fn a_model_too_sure_is_widened_and_one_too_unsure_narrowed() {
        assert!((factor(&residuals(0.25), BOUNDS.0, BOUNDS.1) - 4.0).abs() < 0.2);
        assert!((factor(&residuals(3.0), BOUNDS.0, BOUNDS.1) - 1.0 / 3.0).abs() < 0.02);
        assert!((factor(&residuals(1.0), BOUNDS.0, BOUNDS.1) - 1.0).abs() < 0.05);
        // A subset's model is only ever widened.
        assert_eq!(factor(&residuals(3.0), 1.0, BOUNDS.1), 1.0);
    }

    #[test]
    fn too_little_evidence_changes_nothing() {
        assert_eq!(factor(&residuals(0.25)[..MIN_EVIDENCE - 1], BOUNDS.0, BOUNDS.1), 1.0);
    }

    #[test]
    fn the_noise_is_kept() {
        // All the error is noise the model knows of: no latent widening helps or is needed.
        let noisy: Vec<Residual> = residuals(1.0).into_iter().map(|r| Residual { latent_sd: 1e-6, noise_sd: 1.0, ..r }).collect();
        assert!((factor(&noisy, BOUNDS.0, BOUNDS.1).ln()).abs() < 1.0, "{}", factor(&noisy, BOUNDS.0, BOUNDS.1));
    }
}
