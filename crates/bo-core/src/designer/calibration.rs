//! How much wider or narrower a model's predictions must be to mean what they say: factors on
//! the latent deviation under which observations the model did not see fall within their
//! central 50 % and 90 % intervals as often as those levels say. Two kinds of evidence:
//!
//! - a GP's own leave-one-out residuals (Rasmussen & Williams 2006, eq. 5.12), weighed by
//!   region ([`ByRegion`]): next to the data a search crowded (posterior over prior variance
//!   `ρ` near 0) and in the unexplored rest (`ρ` near 1) a model errs differently, and one
//!   factor cannot serve both. Every GP model's predictions go through it; a model whose
//!   structure was chosen on its own trials is judged by cross-validation with θ refitted on
//!   each fold instead ([`Evidence`]), and only ever widened;
//! - the trials a subset's model left out ([`factor`], never below 1; see [`super::subset`]).
//!
//! A factor multiplies the latent deviation only: the observation noise the model learned is
//! kept, and the observations are judged with it added. It changes what a model says it knows
//! (`:predict`, the model page) and what the searches that score candidates by a model's
//! predictions read (a context's search, the acquisition over several metrics and safety
//! metrics), never a single-metric GP designer's own acquisition. Must not: change
//! anything on fewer than [`MIN_EVIDENCE`] observations, or go beyond [`BOUNDS`]. Measured in
//! docs/journal/benchmarks.md, "Calibration": one factor per model from the leave-one-out residuals
//! broke the tree and 25-D problems; by region, and shrunk towards 1 where a group is small,
//! it holds on them.

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

/// Factors that differ with how much the data told the model at a point: its posterior over
/// prior latent variance `ρ`, near 0 next to the data and near 1 far from it. A model is wrong
/// in different ways in the two places — where a search crowded its trials, and in the
/// unexplored rest — and one factor cannot serve both.
#[derive(Clone, Debug)]
pub struct ByRegion {
    /// `(ln ρ, ln factor)` at each group's median, by increasing `ρ`; empty: the factor is 1.
    knots: Vec<(f64, f64)>,
    /// The residuals the factors were found from.
    checked: usize,
    /// Whether they were cross-validated with θ refitted ([`Evidence::Refitted`]) rather than
    /// left out one at a time at the fitted θ.
    refitted: bool,
}

impl ByRegion {
    /// Every factor 1.
    pub fn none() -> ByRegion {
        ByRegion { knots: Vec::new(), checked: 0, refitted: false }
    }

    /// The factors found from `residuals`, each with its `ρ`: the residuals sorted by `ρ` and cut
    /// into groups of equal count (at least [`GROUP`], at most [`MAX_GROUPS`]), each group's
    /// [`factor`] within [`BOUNDS`] (at least 1 unless `narrows`), its logarithm shrunk towards
    /// 0 by `m / (m + GROUP)` for a group of `m` (25 residuals say half of what they ask).
    pub fn fit(residuals: &[(Residual, f64)], narrows: bool) -> ByRegion {
        let mut usable: Vec<&(Residual, f64)> = residuals.iter().filter(|(_, rho)| rho.is_finite() && *rho > 0.0).collect();
        if usable.len() < MIN_EVIDENCE {
            return ByRegion::none();
        }
        usable.sort_by(|a, b| a.1.total_cmp(&b.1));
        let groups = (usable.len() / GROUP).clamp(1, MAX_GROUPS);
        let knots = (0..groups)
            .map(|g| {
                let part = &usable[g * usable.len() / groups..(g + 1) * usable.len() / groups];
                let own: Vec<Residual> = part.iter().map(|(r, _)| *r).collect();
                (
                    part[part.len() / 2].1.ln(),
                    factor(&own, if narrows { BOUNDS.0 } else { 1.0 }, BOUNDS.1).ln() * part.len() as f64 / (part.len() + GROUP) as f64,
                )
            })
            .collect();
        ByRegion { knots, checked: usable.len(), refitted: false }
    }

    /// The factors of `gp`'s predictions from the residuals `evidence` names, each at its `ρ`
    /// (see [`Evidence`]).
    pub fn of_gp(gp: &crate::gp::Gp, evidence: Evidence) -> ByRegion {
        let cross_validated = match evidence {
            Evidence::Refitted(noise) if gp.n() <= REFIT_POINTS => gp.cross_validated_residuals(FOLDS, noise),
            _ => None,
        };
        let refitted = cross_validated.is_some();
        let residuals: Vec<(Residual, f64)> = cross_validated
            .unwrap_or_else(|| gp.loo_residuals(LOO_POINTS))
            .into_iter()
            .map(|r| {
                let residual = Residual { error: r.error, latent_sd: r.latent_var().sqrt(), noise_sd: r.noise.sqrt() };
                (residual, r.latent_var() / r.prior_var)
            })
            .collect();
        ByRegion { refitted, ..ByRegion::fit(&residuals, evidence == Evidence::LeaveOneOut) }
    }

    /// What the model's description shows: each group's factor at its median `ρ`, and the
    /// observations checked; null when nothing was found (too few observations).
    pub fn describe(&self) -> serde_json::Value {
        if self.knots.is_empty() {
            return serde_json::Value::Null;
        }
        serde_json::json!({
            "checkedOnTrials": self.checked,
            "checkedBy": if self.refitted { "CROSS_VALIDATION_REFITTED" } else { "LEAVE_ONE_OUT" },
            "byRegion": self.knots.iter().map(|(rho, f)| serde_json::json!({
                "posteriorOverPriorVariance": rho.exp(),
                "factor": f.exp(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The factor at `ρ`: interpolated in the logarithms between the groups', the nearest
    /// group's beyond them.
    pub fn at(&self, rho: f64) -> f64 {
        let (Some(first), Some(last)) = (self.knots.first(), self.knots.last()) else { return 1.0 };
        let x = rho.max(1e-300).ln();
        if x <= first.0 {
            return first.1.exp();
        }
        if x >= last.0 {
            return last.1.exp();
        }
        let k = self.knots.partition_point(|(at, _)| *at <= x);
        let ((x0, y0), (x1, y1)) = (self.knots[k - 1], self.knots[k]);
        let t = if x1 > x0 { (x - x0) / (x1 - x0) } else { 0.0 };
        (y0 + t * (y1 - y0)).exp()
    }
}

/// Which residuals a GP's calibration ([`ByRegion::of_gp`]) is found from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Evidence {
    /// Leave-one-out at the fitted θ (Rasmussen & Williams 2006, eq. 5.12), up to
    /// [`LOO_POINTS`] observations; the factors widen or narrow.
    LeaveOneOut,
    /// For a model whose structure and θ were chosen by their likelihood on the same trials
    /// (`OVERLAP_ADD_GP`'s graph and length scales), whose leave-one-out residuals at that θ
    /// flatter it: [`FOLDS`]-fold cross-validation with θ optimised again on each fold within
    /// these noise bounds, up to [`REFIT_POINTS`] observations (leave-one-out beyond, where θ is
    /// settled); the factors only ever widen.
    Refitted(crate::gp::NoiseBounds),
}

/// The folds of [`Evidence::Refitted`].
pub const FOLDS: usize = 5;

/// Above this many observations [`Evidence::Refitted`] falls back to leave-one-out: five warm
/// fits of `OVERLAP_ADD_GP`'s 25-D model took 0.7 s at 100 trials and 1.8 s at 150 (its own fit
/// 2.3 s and 4.9 s), 9 s at 300; and θ is settled by then (docs/journal/benchmarks.md, "Calibration").
pub const REFIT_POINTS: usize = 150;

/// The observations whose leave-one-out residuals [`ByRegion::of_gp`] weighs, at most: a
/// 2,048-trial study's cost about a third of one Cholesky factorisation (a fit does dozens).
pub const LOO_POINTS: usize = 256;

/// The fewest residuals a group of [`ByRegion`] is found from.
const GROUP: usize = 25;

/// The most groups.
const MAX_GROUPS: usize = 5;

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
    fn each_region_gets_its_own_factor() {
        // Next to the data the model is 4 times too wide, far from it 2 times too narrow.
        // Each side's ρ spread by a permutation, so a group sorted by ρ is a fair sample of its
        // side's errors (which `residuals` gives in increasing order).
        let spread = |k: usize| 1.0 + ((k * 211) % 399) as f64 / 399.0;
        let near = residuals(4.0).into_iter().enumerate().map(|(k, r)| (r, 1e-4 * spread(k)));
        let far = residuals(0.5).into_iter().enumerate().map(|(k, r)| (r, 0.4 * spread(k)));
        let by = ByRegion::fit(&near.chain(far).collect::<Vec<_>>(), true);
        let shrink = |f: f64, m: f64| (f.ln() * m / (m + GROUP as f64)).exp();
        // 798 residuals in five groups: the nearest two and the farthest two are pure.
        let m = (798 / 5) as f64;
        assert!((by.at(1e-6) / shrink(0.25, m) - 1.0).abs() < 0.1, "{}", by.at(1e-6));
        assert!((by.at(1.0) / shrink(2.0, m) - 1.0).abs() < 0.1, "{}", by.at(1.0));
        // In between, between the two.
        let mid = by.at(1e-2);
        assert!(by.at(1e-6) < mid && mid < by.at(1.0), "{mid}");
        // Without evidence every factor is 1.
        assert_eq!(ByRegion::fit(&[], true).at(0.5), 1.0);
        // The description names each group's factor where it was found.
        let described = by.describe();
        assert_eq!(described["checkedOnTrials"], 798);
        assert_eq!(described["checkedBy"], "LEAVE_ONE_OUT");
        let groups = described["byRegion"].as_array().expect("groups");
        assert_eq!(groups.len(), 5);
        assert!((groups[0]["factor"].as_f64().unwrap() - by.at(1e-6)).abs() < 1e-12);
        assert!(ByRegion::fit(&[], true).describe().is_null());
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

    /// A GP whose amplitude is a hundred times too large is ten times too unsure: its
    /// leave-one-out residuals narrow its predictions, refitted cross-validation never does;
    /// the description says how they were checked, and beyond [`REFIT_POINTS`] it is
    /// leave-one-out.
    #[test]
    fn refitted_evidence_never_narrows() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let gp_of = |n: usize, rng: &mut rand::rngs::StdRng| {
            let x: Vec<Vec<f64>> = (0..n).map(|_| vec![rng.random::<f64>(), rng.random::<f64>()]).collect();
            let y: Vec<f64> = x.iter().map(|p| (3.0 * p[0]).sin() + p[1]).collect();
            let (ys, m, s) = crate::gp::standardize(&y);
            let mut kernel = crate::kernel::matern52(vec![0, 1], 0.5, (0.01, 20.0));
            crate::kernel::Kernel::set_params(&mut kernel, &[100f64.ln(), 0.5f64.ln(), 0.5f64.ln()]);
            crate::gp::Gp::new(Box::new(kernel), (1e-6f64).ln(), x, ys, m, s).expect("factorises")
        };
        let gp = gp_of(60, &mut rng);
        let grid = [1e-8, 1e-4, 1e-2, 0.1, 0.5, 1.0];
        let by_loo = ByRegion::of_gp(&gp, Evidence::LeaveOneOut);
        let loo: Vec<f64> = grid.iter().map(|&rho| by_loo.at(rho)).collect();
        assert!(loo.iter().any(|&f| f < 0.9), "leave-one-out narrows: {loo:?}");
        let evidence = Evidence::Refitted(crate::gp::NoiseBounds::DEFAULT);
        let by = ByRegion::of_gp(&gp, evidence);
        let at: Vec<f64> = grid.iter().map(|&rho| by.at(rho)).collect();
        assert!(at.iter().all(|&f| f >= 1.0), "never narrowed: {at:?}");
        assert_eq!(by.describe()["checkedBy"], "CROSS_VALIDATION_REFITTED");
        let large = ByRegion::of_gp(&gp_of(REFIT_POINTS + 1, &mut rng), evidence);
        assert_eq!(large.describe()["checkedBy"], "LEAVE_ONE_OUT");
    }
}
