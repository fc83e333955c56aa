use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;
use crate::kernel::{matern52, squared_exp};

const B: (f64, f64) = (0.01, 20.0);

#[test]
fn posterior_matches_a_hand_solved_case() {
    // SE kernel, ℓ = 1, a = 1, noise 0.01, points 0 and 1 with y = (1, −1) (already standardised):
    // K = [[1.01, e^{-1/2}], [e^{-1/2}, 1.01]]; at x* = 0.5, k* = (e^{-1/8}, e^{-1/8}).
    let k = squared_exp(vec![0], 1.0, B);
    let gp = Gp::new(Box::new(k), 0.01f64.ln(), vec![vec![0.0], vec![1.0]], vec![1.0, -1.0], 0.0, 1.0).unwrap();
    let (mean, var) = gp.predict(&[vec![0.5]])[0];
    assert!(mean.abs() < 1e-12, "symmetric data: zero mean at the midpoint");
    let e = (-0.5f64).exp();
    let ks = (-0.125f64).exp();
    // k*ᵀ K⁻¹ k* with K⁻¹ of [[a, b], [b, a]] = [[a, −b], [−b, a]] / (a² − b²).
    let (a, b) = (1.01, e);
    let quad = ks * ks * (2.0 * a - 2.0 * b) / (a * a - b * b);
    assert!((var - (1.0 - quad)).abs() < 1e-12, "{var} vs {}", 1.0 - quad);
    // At x* = 0: μ = k*ᵀ α with k* = (1, e).
    // α = K⁻¹ (1, −1).
    let alpha = [(a + b) / (a * a - b * b), (-b - a) / (a * a - b * b)];
    let (m0, _) = gp.predict(&[vec![0.0]])[0];
    assert!((m0 - (alpha[0] + e * alpha[1])).abs() < 1e-12);
}

#[test]
fn mean_and_variance_gradients_match_finite_differences() {
    let mut rng = StdRng::seed_from_u64(1);
    let x: Vec<Vec<f64>> = (0..15).map(|_| (0..3).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| (3.0 * p[0]).sin() + p[1] * p[2]).collect();
    let (ys, m, s) = standardize(&y);
    let gp = Gp::new(Box::new(matern52(vec![0, 1, 2], 0.4, B)), -6.0, x, ys, m, s).unwrap();
    let at = vec![0.3, 0.6, 0.45];
    let g = gp.predict_with_grad(&at);
    let (m0, v0) = gp.predict(std::slice::from_ref(&at))[0];
    assert!((g.mean - m0).abs() < 1e-10 && (g.var - v0).abs() < 1e-10);
    let h = 1e-6;
    for i in 0..3 {
        let mut p = at.clone();
        p[i] += h;
        let mut q = at.clone();
        q[i] -= h;
        let (mp, vp) = gp.predict(&[p])[0];
        let (mq, vq) = gp.predict(&[q])[0];
        assert!(((mp - mq) / (2.0 * h) - g.d_mean[i]).abs() < 1e-5, "∂μ/∂x[{i}]");
        assert!(((vp - vq) / (2.0 * h) - g.d_var[i]).abs() < 1e-5, "∂σ²/∂x[{i}]");
    }
}

#[test]
fn log_marginal_likelihood_gradient_matches_finite_differences() {
    let mut rng = StdRng::seed_from_u64(2);
    let x: Vec<Vec<f64>> = (0..20).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| (5.0 * p[0]).cos() - p[1]).collect();
    let (ys, _, _) = standardize(&y);
    let mut k: Box<dyn crate::kernel::Kernel> = Box::new(matern52(vec![0, 1], 0.3, B));
    let theta = vec![0.2, -1.0, -0.5, -4.0];
    // Without and with points of their own noise (every third an estimate).
    let extra: Vec<f64> = (0..20).map(|i| if i % 3 == 0 { 0.05 * (1 + i) as f64 } else { 0.0 }).collect();
    for extra in [&[][..], &extra[..]] {
        let (f0, g) = fit::neg_log_posterior(k.as_mut(), &x, &ys, extra, &theta).unwrap();
        let h = 1e-6;
        for j in 0..theta.len() {
            let mut tp = theta.clone();
            tp[j] += h;
            let mut tm = theta.clone();
            tm[j] -= h;
            let fp = fit::neg_log_posterior(k.as_mut(), &x, &ys, extra, &tp).unwrap().0;
            let fm = fit::neg_log_posterior(k.as_mut(), &x, &ys, extra, &tm).unwrap().0;
            let fd = (fp - fm) / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-5 * (1.0 + fd.abs()), "θ[{j}], {} extra: analytic {} vs {fd} (f = {f0})", extra.len(), g[j]);
        }
    }
}

/// A target with noise of its own pulls the posterior less than a measured one: an uncertain
/// low value beside a measured high one leaves the mean near the measured one, and the point's
/// own variance is the sum of the two noises (as the leave-one-out residuals report it).
#[test]
fn a_point_with_noise_of_its_own_pulls_the_posterior_less() {
    let x = vec![vec![0.1], vec![0.5], vec![0.52], vec![0.9]];
    let y = vec![0.0, 1.0, -1.0, 0.0];
    let k = matern52(vec![0], 0.3, B);
    let same = Gp::new(Box::new(k.clone()), -6.0, x.clone(), y.clone(), 0.0, 1.0).unwrap();
    let extra = vec![0.0, 0.0, 4.0, 0.0];
    let own = Gp::with_extra_noise(Box::new(k.clone()), -6.0, x.clone(), y.clone(), extra.clone(), 0.0, 1.0).unwrap();
    let at = [vec![0.51]];
    let (m_same, m_own) = (same.predict(&at)[0].0, own.predict(&at)[0].0);
    assert!(m_own > 0.6 && m_same < 0.5, "the uncertain point pulls less: {m_own} against {m_same}");
    let loo = own.loo_residuals(usize::MAX);
    assert!((loo[2].noise - (4.0 + (-6.0f64).exp())).abs() < 1e-12, "{:?}", loo[2]);
    assert!((loo[1].noise - (-6.0f64).exp()).abs() < 1e-12, "{:?}", loo[1]);
    // Fantasies have no noise of their own, and a fresh factorisation is the same posterior.
    let mut fantasy = own.with_room(1);
    fantasy.condition_on(vec![vec![0.3]], vec![0.2], None).unwrap();
    assert_eq!(fantasy.extra_noise(), &[0.0, 0.0, 4.0, 0.0, 0.0]);
    let again = fantasy.refactored().unwrap();
    for (a, b) in fantasy.predict(&at).iter().zip(again.predict(&at)) {
        assert!((a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9);
    }
    // `fit_with` takes the extra in the targets' own units: scaled targets, scaled extra, and
    // the same standardised posterior.
    let mut rng = StdRng::seed_from_u64(1);
    let config = FitConfig { restarts: 0, ..FitConfig::default() };
    let scaled: Vec<f64> = y.iter().map(|v| 10.0 * v).collect();
    let a = fit::fit_with(Box::new(k.clone()), x.clone(), &y, &extra, &config, None, &mut rng).unwrap();
    let b = fit::fit_with(Box::new(k), x, &scaled, &extra.iter().map(|v| 100.0 * v).collect::<Vec<_>>(), &config, None, &mut rng).unwrap();
    for (p, q) in a.extra_noise().iter().zip(b.extra_noise()) {
        assert!((p - q).abs() < 1e-12, "{:?} against {:?}", a.extra_noise(), b.extra_noise());
    }
    // An estimate of no use (an infinite or enormous spread) is bounded, and the fit stands.
    let (x3, y3) = (vec![vec![0.1], vec![0.5], vec![0.9]], [0.0, 1.0, 0.5]);
    let hopeless =
        fit::fit_with(Box::new(matern52(vec![0], 0.3, B)), x3, &y3, &[0.0, f64::INFINITY, 1e300], &config, None, &mut rng).unwrap();
    assert!(hopeless.extra_noise().iter().all(|v| v.is_finite()), "{:?}", hopeless.extra_noise());
    assert!(hopeless.predict(&at)[0].0.is_finite());
}

#[test]
fn fitting_learns_relevance_and_interpolates() {
    // y depends on x0 only: the fitted length scale of x1 must be much longer than x0's.
    let mut rng = StdRng::seed_from_u64(3);
    let x: Vec<Vec<f64>> = (0..40).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| (6.0 * p[0]).sin()).collect();
    let gp = fit(Box::new(matern52(vec![0, 1], 0.5, B)), x.clone(), &y, &FitConfig::default(), None, &mut rng).unwrap();
    let h = gp.hyperparameters();
    assert!(h.kernel[2] > h.kernel[1] + 1.0, "log ℓ: {:?}", h.kernel);
    assert!(h.log_noise < (1e-3f64).ln(), "noise-free data: {}", h.log_noise);
    let (m, _) = gp.predict(&[vec![0.25, 0.9]])[0];
    let (mean, _) = gp.unstandardize(m, 0.0);
    assert!((mean - 1.5f64.sin()).abs() < 0.05, "{mean}");
    // A warm start from the fit returns (nearly) the same fit.
    let again =
        fit(Box::new(matern52(vec![0, 1], 0.5, B)), x, &y, &FitConfig { restarts: 0, ..FitConfig::default() }, Some(&h), &mut rng).unwrap();
    for (a, b) in again.hyperparameters().kernel.iter().zip(&h.kernel) {
        assert!((a - b).abs() < 0.05, "warm start moved θ: {a} vs {b}");
    }
}

#[test]
fn a_fantasy_shrinks_variance_there_and_equals_refitting_with_the_point() {
    let x = vec![vec![0.1], vec![0.5], vec![0.9]];
    let y = vec![0.3, -0.2, 0.5];
    let k = matern52(vec![0], 0.3, B);
    let gp = Gp::new(Box::new(k.clone()), -5.0, x.clone(), y.clone(), 0.0, 1.0).unwrap();
    let at = vec![0.3];
    let (mu, var) = gp.predict(std::slice::from_ref(&at))[0];
    let mut fantasy = gp.with_room(1);
    fantasy.condition_on(vec![at.clone()], vec![mu], None).unwrap();
    let (mu2, var2) = fantasy.predict(std::slice::from_ref(&at))[0];
    assert!((mu2 - mu).abs() < 1e-9, "conditioning on the mean keeps the mean");
    assert!(var2 < 0.1 * var, "{var2} vs {var}");
    let mut noise_free = gp.clone();
    noise_free.condition_on(vec![at.clone()], vec![mu], Some(1e-8)).unwrap();
    assert!(noise_free.predict(std::slice::from_ref(&at))[0].1 < 1e-7, "a noise-free fantasy pins the variance");
    let mut x2 = x;
    x2.push(at.clone());
    let mut y2 = y;
    y2.push(mu);
    let direct = Gp::new(Box::new(k), -5.0, x2, y2, 0.0, 1.0).unwrap();
    let probe = vec![vec![0.0], vec![0.42], vec![0.77]];
    for (a, b) in fantasy.predict(&probe).iter().zip(direct.predict(&probe)) {
        assert!((a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9);
    }
}

#[test]
fn several_fantasies_at_once_equal_one_after_another_at_the_running_mean() {
    let x = vec![vec![0.1, 0.2], vec![0.5, 0.9], vec![0.9, 0.4], vec![0.3, 0.6]];
    let y = vec![0.3, -0.2, 0.5, 1.0];
    let gp = Gp::new(Box::new(matern52(vec![0, 1], 0.3, B)), -4.0, x, y, 0.0, 1.0).unwrap();
    let at = vec![vec![0.2, 0.2], vec![0.7, 0.1], vec![0.4, 0.8]];
    // All at once, each at the mean of the GP before any of them.
    let means: Vec<f64> = gp.predict(&at).iter().map(|p| p.0).collect();
    let mut joint = gp.clone();
    joint.condition_on(at.clone(), means, Some(1e-6)).unwrap();
    // One after another, each at the mean of the GP including the previous ones.
    let mut sequential = gp.clone();
    for a in &at {
        let m = sequential.predict(std::slice::from_ref(a))[0].0;
        sequential.condition_on(vec![a.clone()], vec![m], Some(1e-6)).unwrap();
    }
    assert_eq!(joint.n(), 7);
    let probe = vec![vec![0.0, 0.0], vec![0.42, 0.5], vec![0.77, 0.9], vec![0.2, 0.21]];
    for (a, b) in joint.predict(&probe).iter().zip(sequential.predict(&probe)) {
        assert!((a.0 - b.0).abs() < 1e-8 && (a.1 - b.1).abs() < 1e-8, "{a:?} vs {b:?}");
    }
}

#[test]
fn large_data_fits_hyperparameters_on_a_subset_and_conditions_on_everything() {
    let mut rng = StdRng::seed_from_u64(4);
    let x: Vec<Vec<f64>> = (0..120).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| (6.0 * p[0]).sin()).collect();
    let config = FitConfig { max_fit_points: 40, ..FitConfig::default() };
    let gp = fit(Box::new(matern52(vec![0, 1], 0.5, B)), x.clone(), &y, &config, None, &mut rng).unwrap();
    assert_eq!(gp.n(), 120, "the posterior uses every point");
    let h = gp.hyperparameters();
    assert!(h.kernel[2] > h.kernel[1] + 1.0, "relevance still learned from the subset: {:?}", h.kernel);
    let (m, _) = gp.predict(&[vec![0.25, 0.5]])[0];
    assert!((gp.unstandardize(m, 0.0).0 - 1.5f64.sin()).abs() < 0.02);
}

#[test]
fn a_block_diagonal_likelihood_is_fitted_block_by_block_with_the_same_value_and_gradient() {
    // Two subtrees that share nothing (an Add-Tree with an empty root): K is block-diagonal.
    use crate::kernel::{AddTree, Kernel, Term};
    let mut rng = StdRng::seed_from_u64(4);
    let x: Vec<Vec<f64>> = (0..24)
        .map(|i| {
            let left = i % 3 != 0;
            let mut p: Vec<f64> = (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect();
            p.extend([f64::from(u8::from(left)), f64::from(u8::from(!left))]);
            p
        })
        .collect();
    let y: Vec<f64> = x.iter().map(|p| if p[2] > 0.5 { (4.0 * p[0]).sin() } else { p[1] * p[1] + 1.0 }).collect();
    let (ys, _, _) = standardize(&y);
    let term = |name: &str, dim, indicator| Term {
        name: name.into(),
        indicator: Some(indicator),
        log_bias: Some(-1.0),
        kernel: Some(Box::new(matern52(vec![dim], 0.3, B)) as Box<dyn Kernel>),
    };
    let mut k: Box<dyn Kernel> = Box::new(AddTree::new(vec![term("left", 0, 2), term("right", 1, 3)]));
    let mut theta = k.params();
    theta.push(-3.0);
    let (f0, g) = fit::neg_log_posterior(k.as_mut(), &x, &ys, &[], &theta).unwrap();
    // The dense reference: one Cholesky of the whole K.
    k.set_params(&theta[..theta.len() - 1]);
    let dense = gram(k.as_ref(), &x, (-3.0f64).exp(), &[]);
    assert_eq!(fit::blocks(&dense).len(), 2, "the two subtrees are two blocks");
    let chol = crate::linalg::Cholesky::new(&dense).unwrap();
    let alpha = chol.solve(&ys);
    let lml = -0.5 * ys.iter().zip(&alpha).map(|(a, b)| a * b).sum::<f64>()
        - 0.5 * chol.log_det()
        - 0.5 * ys.len() as f64 * (2.0 * std::f64::consts::PI).ln();
    let mut prior = vec![0.0; theta.len()];
    let lp = k.log_prior(&mut prior[..theta.len() - 1])
        + crate::kernel::normal_log_prior(-3.0, fit::LOG_NOISE_PRIOR.0, fit::LOG_NOISE_PRIOR.1).0;
    assert!((f0 + lml + lp).abs() < 1e-9, "block-wise {f0} vs dense {}", -(lml + lp));
    let h = 1e-6;
    for j in 0..theta.len() {
        let (mut tp, mut tm) = (theta.clone(), theta.clone());
        tp[j] += h;
        tm[j] -= h;
        let fd = (fit::neg_log_posterior(k.as_mut(), &x, &ys, &[], &tp).unwrap().0
            - fit::neg_log_posterior(k.as_mut(), &x, &ys, &[], &tm).unwrap().0)
            / (2.0 * h);
        assert!((fd - g[j]).abs() < 1e-5 * (1.0 + fd.abs()), "θ[{j}]: analytic {} vs {fd}", g[j]);
    }
}

#[test]
fn a_moved_prior_mean_is_the_gp_with_that_constant_mean() {
    // Moving the prior mean to c equals fitting y − c with mean 0 and adding c back: the
    // posterior mean tends to c far from the data, keeps the data where the noise is small,
    // and the variance does not change.
    let x = vec![vec![0.2], vec![0.3], vec![0.5]];
    let y = vec![0.5, 1.0, -1.5];
    let mut gp = Gp::new(Box::new(squared_exp(vec![0], 0.1, B)), -12.0, x.clone(), y.clone(), 0.0, 1.0).unwrap();
    let before = gp.predict(&[vec![0.25], vec![5.0]]);
    gp.set_prior_mean(-1.5);
    let after = gp.predict(&[vec![0.25], vec![5.0], vec![0.3]]);
    assert!((after[1].0 - 0.0).abs() < 1e-9, "far away: the level, in the moved units");
    assert!((gp.unstandardize(after[1].0, 0.0).0 - -1.5).abs() < 1e-9, "which is −1.5 on the original scale");
    assert!((gp.unstandardize(after[2].0, 0.0).0 - 1.0).abs() < 1e-4, "the data are kept");
    assert!((after[0].1 - before[0].1).abs() < 1e-12, "the variance does not depend on the mean");
    let shifted = Gp::new(Box::new(squared_exp(vec![0], 0.1, B)), -12.0, x, y.iter().map(|v| v + 1.5).collect(), -1.5, 1.0).unwrap();
    let expected = shifted.predict(&[vec![0.25]])[0].0;
    assert!((after[0].0 - expected).abs() < 1e-9);
}

/// Targets of any finite magnitude standardise to finite numbers (the sum and the squares of
/// values near f64::MAX would overflow), and ordinary ones exactly as before.
#[test]
fn huge_targets_standardise_to_finite_numbers() {
    for y in [vec![1.0, 0.5, 5e307, 0.25], vec![-1.7e308, 1.7e308, 0.0], vec![1e300, 1e300]] {
        let (ys, mean, std) = standardize(&y);
        assert!(ys.iter().all(|v| v.is_finite()) && mean.is_finite() && std.is_finite() && std > 0.0, "{y:?}: {ys:?} {mean} {std}");
        for (v, z) in y.iter().zip(&ys) {
            assert!(((z * std + mean) - v).abs() <= 1e-12 * v.abs().max(std), "{v} back from {z}");
        }
    }
    let (ys, mean, std) = standardize(&[1.0, 2.0, 3.0]);
    assert_eq!((mean, std), (2.0, (2.0f64 / 3.0).sqrt()));
    assert_eq!(ys[1], 0.0);
}

/// The closed-form leave-one-out density equals refitting without each point at the same θ.
#[test]
fn leave_one_out_matches_refitting_without_each_point() {
    let mut rng = StdRng::seed_from_u64(3);
    let x: Vec<Vec<f64>> = (0..12).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| 10.0 * (4.0 * p[0]).sin() + 3.0 * p[1]).collect();
    let (ys, m, s) = standardize(&y);
    let kernel = matern52(vec![0, 1], 0.3, B);
    let log_noise = (0.05f64).ln();
    let gp = Gp::new(Box::new(kernel.clone()), log_noise, x.clone(), ys.clone(), m, s).unwrap();
    let got = gp.loo_log_predictive();
    assert_eq!(got.len(), x.len());
    for i in 0..x.len() {
        let keep: Vec<usize> = (0..x.len()).filter(|&j| j != i).collect();
        let without = Gp::new(
            Box::new(kernel.clone()),
            log_noise,
            keep.iter().map(|&j| x[j].clone()).collect(),
            keep.iter().map(|&j| ys[j]).collect(),
            m,
            s,
        )
        .unwrap();
        let (mean, var) = without.predict(std::slice::from_ref(&x[i]))[0];
        let var = var + log_noise.exp();
        // In the objective's units: the density of y_i under N(mean·s + m, var·s²).
        let expected = -0.5 * ((2.0 * std::f64::consts::PI * var).ln() + (ys[i] - mean).powi(2) / var) - s.ln();
        assert!((got[i] - expected).abs() < 1e-8, "point {i}: {} vs {expected}", got[i]);
    }
    // A few of the residuals, by triangular solves, are the same as all of them by the inverse.
    let all = gp.loo_residuals(usize::MAX);
    let some = gp.loo_residuals(5);
    assert_eq!(some.len(), 5);
    for (k, r) in some.iter().enumerate() {
        let full = all[k * x.len() / 5];
        assert!((r.error - full.error).abs() < 1e-9 && (r.variance / full.variance - 1.0).abs() < 1e-9, "{r:?} vs {full:?}");
        assert!(r.latent_var() < r.variance && r.prior_var > 0.0);
    }
}

/// Cross-validation refits θ on each fold: a GP held at a length scale twenty times too long is
/// far too sure of its leave-one-out predictions, and its cross-validated residuals — each fold's
/// θ optimised again — say so much less; the residuals are one per point, in this GP's units
/// and under its prior mean; none on fewer than two points a fold or on a stacked GP.
#[test]
fn cross_validated_residuals_refit_theta_on_each_fold() {
    let mut rng = StdRng::seed_from_u64(9);
    let x: Vec<Vec<f64>> = (0..40).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| (9.0 * p[0]).sin() + (7.0 * p[1]).cos()).collect();
    let (ys, m, s) = standardize(&y);
    let wrong = Gp::new(Box::new(matern52(vec![0, 1], 4.0, B)), (1e-6f64).ln(), x.clone(), ys.clone(), m, s).unwrap();
    let median_z = |r: &[LooResidual]| {
        let mut z: Vec<f64> = r.iter().map(|r| r.error.abs() / r.variance.sqrt()).collect();
        z.sort_by(f64::total_cmp);
        z[z.len() / 2]
    };
    let loo = wrong.loo_residuals(usize::MAX);
    let cv = wrong.cross_validated_residuals(5, NoiseBounds::DEFAULT).expect("40 points in 5 folds");
    assert_eq!(cv.len(), 40);
    assert!(cv.iter().all(|r| r.error.is_finite() && r.variance > r.noise && r.prior_var > 0.0), "{cv:?}");
    let (at_fitted, refitted) = (median_z(&loo), median_z(&cv));
    assert!(at_fitted > 3.0 && refitted < at_fitted / 3.0, "median |z|: {at_fitted} at the fixed θ, {refitted} refitted");
    // The prior mean moved far away: a fold predicts under it too, so the held-out points' errors
    // stay those of a model with this GP's prior mean (they would not if the fold reverted to its
    // own data's mean).
    let mut moved = wrong.clone();
    moved.set_prior_mean(-50.0);
    let shifted = moved.cross_validated_residuals(5, NoiseBounds::DEFAULT).unwrap();
    assert!(shifted.iter().zip(&cv).any(|(a, b)| (a.error - b.error).abs() > 1e-6), "the prior mean is this GP's");
    assert!(wrong.cross_validated_residuals(25, NoiseBounds::DEFAULT).is_none(), "fewer than two points a fold");
    let base = Arc::new(wrong.clone());
    let stacked = Gp::new(Box::new(matern52(vec![0, 1], 0.3, B)), -6.0, x, ys, m, s).unwrap().on_base(base, 40);
    assert!(stacked.cross_validated_residuals(5, NoiseBounds::DEFAULT).is_none());
}

/// The sequential density of each point equals the prediction of a GP on the points before it,
/// and the terms sum to the log marginal likelihood.
#[test]
fn sequential_densities_are_the_chain_rule_of_the_marginal_likelihood() {
    let mut rng = StdRng::seed_from_u64(4);
    let x: Vec<Vec<f64>> = (0..10).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| 5.0 * (3.0 * p[0]).cos() - 2.0 * p[1]).collect();
    let (ys, m, s) = standardize(&y);
    let kernel = matern52(vec![0, 1], 0.4, B);
    let log_noise = (0.02f64).ln();
    let gp = Gp::new(Box::new(kernel.clone()), log_noise, x.clone(), ys.clone(), m, s).unwrap();
    let got = gp.sequential_log_predictive();
    for i in 1..x.len() {
        let before = Gp::new(Box::new(kernel.clone()), log_noise, x[..i].to_vec(), ys[..i].to_vec(), m, s).unwrap();
        let (mean, var) = before.predict(std::slice::from_ref(&x[i]))[0];
        let var = var + log_noise.exp();
        let expected = -0.5 * ((2.0 * std::f64::consts::PI * var).ln() + (ys[i] - mean).powi(2) / var) - s.ln();
        assert!((got[i] - expected).abs() < 1e-8, "point {i}: {} vs {expected}", got[i]);
    }
    let lml = log_marginal_likelihood(&kernel, &x, &ys, &[], log_noise).unwrap();
    let total: f64 = got.iter().sum::<f64>() + x.len() as f64 * s.ln();
    assert!((total - lml).abs() < 1e-8, "{total} vs {lml}");
}

#[test]
fn a_point_is_predicted_alike_in_any_batch_and_any_share_of_it() {
    // What lets a candidate search split its batches over threads without changing a result:
    // every column's arithmetic is its own, whatever the batch's width. Large enough that the
    // triangular solves block (n = 600).
    let mut rng = StdRng::seed_from_u64(3);
    let mut point = |d: usize| (0..d).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect::<Vec<f64>>();
    let x: Vec<Vec<f64>> = (0..600).map(|_| point(6)).collect();
    let y: Vec<f64> = x.iter().map(|p| (3.0 * p[0]).sin() + p[1] * p[2] - p[5]).collect();
    let (ys, m, s) = standardize(&y);
    let gp = Gp::new(Box::new(matern52((0..6).collect(), 0.3, B)), -6.0, x, ys, m, s).unwrap();
    let xs: Vec<Vec<f64>> = (0..257).map(|_| point(6)).collect();
    let whole = gp.predict(&xs);
    for cut in [1, 2, 7, 64, 128, 255, 256] {
        let (a, b) = xs.split_at(cut);
        let shares: Vec<(f64, f64)> = gp.predict(a).into_iter().chain(gp.predict(b)).collect();
        assert!(whole.iter().zip(&shares).all(|(p, q)| p.0.to_bits() == q.0.to_bits() && p.1.to_bits() == q.1.to_bits()), "cut at {cut}");
    }
    let whole = gp.predict_with_grad_batch(&xs[..8]);
    for cut in [1, 3, 4, 7] {
        let shares: Vec<PosteriorGrad> =
            gp.predict_with_grad_batch(&xs[..cut]).into_iter().chain(gp.predict_with_grad_batch(&xs[cut..8])).collect();
        for (p, q) in whole.iter().zip(&shares) {
            assert_eq!((p.mean.to_bits(), p.var.to_bits()), (q.mean.to_bits(), q.var.to_bits()), "cut at {cut}");
            assert!(p.d_mean.iter().chain(&p.d_var).zip(q.d_mean.iter().chain(&q.d_var)).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }
}

/// A prediction of many points, taken in chunks with checkpoints between, gives each point the
/// values it gets alone, bit for bit.
#[test]
fn predicting_in_chunks_changes_no_value() {
    let mut rng = StdRng::seed_from_u64(8);
    let x: Vec<Vec<f64>> = (0..60).map(|_| (0..3).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| (4.0 * p[0]).sin() + p[1] * p[2]).collect();
    let gp = fit(Box::new(matern52(vec![0, 1, 2], 0.5, B)), x, &y, &FitConfig::default(), None, &mut rng).unwrap();
    let xs: Vec<Vec<f64>> = (0..2 * PREDICT_CHUNK + 3).map(|_| (0..3).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let together = gp.predict(&xs);
    for (i, p) in xs.iter().enumerate().step_by(37) {
        let alone = gp.predict(std::slice::from_ref(p))[0];
        assert_eq!((alone.0.to_bits(), alone.1.to_bits()), (together[i].0.to_bits(), together[i].1.to_bits()), "point {i}");
    }
}

#[test]
fn a_mixture_over_sampled_theta_is_wider_where_they_disagree_with_exact_gradients() {
    let mut rng = StdRng::seed_from_u64(5);
    let x: Vec<Vec<f64>> = (0..12).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
    let y: Vec<f64> = x.iter().map(|p| (5.0 * p[0]).sin() + p[1]).collect();
    let kernel = || Box::new(matern52(vec![0, 1], 0.4, B));
    let one = fit::fit(kernel(), x.clone(), &y, &FitConfig::default(), None, &mut StdRng::seed_from_u64(1)).unwrap();
    let config = FitConfig { samples: 8, ..FitConfig::default() };
    let mix = fit::fit(kernel(), x.clone(), &y, &config, None, &mut StdRng::seed_from_u64(1)).unwrap();
    assert_eq!(mix.mixture_size(), 9);
    assert_eq!(mix.hyperparameters().samples.len(), 8);
    assert_eq!(one.hyperparameters().kernel, mix.hyperparameters().kernel, "the same best θ, samples beside it");
    assert!(mix.hyperparameters().samples.iter().any(|t| t != &mix.hyperparameters().samples[0]), "the chain moves");
    // Far from the data the θ disagree most: the mixture is no narrower than the mean variance.
    let far = vec![vec![1.6, -0.6]];
    let each: Vec<(f64, f64)> = std::iter::once(&mix).chain(&mix.members).map(|g| g.predict_one(&far)[0]).collect();
    let mean_var = each.iter().map(|p| p.1).sum::<f64>() / 9.0;
    let mean = each.iter().map(|p| p.0).sum::<f64>() / 9.0;
    let spread = each.iter().map(|p| (p.0 - mean).powi(2)).sum::<f64>() / 9.0;
    let (m, v) = mix.predict(&far)[0];
    assert!(spread > 1e-4, "the sampled θ predict differently far away: {each:?}");
    assert!((m - mean).abs() < 1e-12 && (v - (mean_var + spread)).abs() < 1e-9, "{m}, {v}");
    // The moment-matched gradient against finite differences.
    let at = vec![0.3, 0.7];
    let g = mix.predict_with_grad(&at);
    let (m0, v0) = mix.predict(std::slice::from_ref(&at))[0];
    assert!((g.mean - m0).abs() < 1e-10 && (g.var - v0).abs() < 1e-10);
    let h = 1e-6;
    for i in 0..2 {
        let (mut p, mut q) = (at.clone(), at.clone());
        p[i] += h;
        q[i] -= h;
        let ((mp, vp), (mq, vq)) = (mix.predict(&[p])[0], mix.predict(&[q])[0]);
        assert!(((mp - mq) / (2.0 * h) - g.d_mean[i]).abs() < 1e-5, "∂μ/∂x[{i}]");
        assert!(((vp - vq) / (2.0 * h) - g.d_var[i]).abs() < 1e-5, "∂σ²/∂x[{i}]");
    }
    // A fantasy collapses every member's variance there, and a refactored copy agrees.
    let mut fantasy = mix.with_room(1);
    let m = fantasy.predict(std::slice::from_ref(&at))[0].0;
    fantasy.condition_on(vec![at.clone()], vec![m], None).unwrap();
    assert_eq!(fantasy.mixture_size(), 9);
    assert!(fantasy.predict(std::slice::from_ref(&at))[0].1 < 1e-2);
    let again = fantasy.refactored().unwrap();
    for (a, b) in fantasy.predict(&far).iter().zip(again.predict(&far)) {
        assert!((a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9);
    }
    // A reuse of the stored θ rebuilds the same mixture without sampling.
    let reuse = FitConfig { search: Search::Reuse, samples: 8, ..FitConfig::default() };
    let back = fit::fit(kernel(), x.clone(), &y, &reuse, Some(&mix.hyperparameters()), &mut StdRng::seed_from_u64(9)).unwrap();
    let off = FitConfig { search: Search::Reuse, ..FitConfig::default() };
    let one = fit::fit(kernel(), x.clone(), &y, &off, Some(&mix.hyperparameters()), &mut StdRng::seed_from_u64(9)).unwrap();
    assert_eq!(one.mixture_size(), 1, "without samples asked for, stored ones are not used");
    let warm = FitConfig { search: Search::Warm, samples: 8, ..FitConfig::default() };
    let moved = fit::fit(kernel(), x.clone(), &y, &warm, Some(&mix.hyperparameters()), &mut StdRng::seed_from_u64(9)).unwrap();
    assert_eq!(moved.hyperparameters().samples, mix.hyperparameters().samples, "a warm search keeps the samples");
    let full = FitConfig { samples: 8, ..FitConfig::default() };
    let again = fit::fit(kernel(), x.clone(), &y, &full, Some(&mix.hyperparameters()), &mut StdRng::seed_from_u64(9)).unwrap();
    assert_ne!(again.hyperparameters().samples, mix.hyperparameters().samples, "a full search draws them again");
    assert_eq!(back.hyperparameters(), mix.hyperparameters());
    let (a, b) = (back.predict(&far)[0], mix.predict(&far)[0]);
    assert!((a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9, "{a:?} against {b:?}");
}
