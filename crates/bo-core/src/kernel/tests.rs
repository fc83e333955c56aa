//! One conformance check over every kernel: symmetric, a positive-definite Gram matrix on random
//! points, analytic gradients (θ and x) equal to central finite differences, parameters round-trip.

use faer::Mat;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::*;
use crate::linalg::Cholesky;

/// Points with `d` coordinates: categorical codes (0–2) in `cat_dims`, unit values elsewhere.
fn points(n: usize, d: usize, cat_dims: &[usize], rng: &mut StdRng) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| (0..d).map(|i| if cat_dims.contains(&i) { f64::from(rng.random_range(0..3u8)) } else { rng.random::<f64>() }).collect())
        .collect()
}

fn check_kernel(mut k: Box<dyn Kernel>, d: usize, cat_dims: &[usize]) {
    let mut rng = StdRng::seed_from_u64(3);
    // Move the parameters off their defaults so every term matters.
    let p0: Vec<f64> = k.params().iter().map(|p| p + rng.random_range(-0.5..0.5)).collect();
    k.set_params(&p0);
    assert_eq!(k.params(), p0, "parameters round-trip");
    assert_eq!(k.param_names().len(), p0.len());
    assert_eq!(k.bounds().len(), p0.len());
    let xs = points(25, d, cat_dims, &mut rng);

    let gram = Mat::from_fn(xs.len(), xs.len(), |i, j| k.eval(&xs[i], &xs[j]));
    for i in 0..xs.len() {
        for j in 0..xs.len() {
            assert!((gram[(i, j)] - gram[(j, i)]).abs() < 1e-12, "symmetric");
        }
    }
    let with_noise = Mat::from_fn(xs.len(), xs.len(), |i, j| gram[(i, j)] + if i == j { 1e-8 } else { 0.0 });
    assert_eq!(Cholesky::new(&with_noise).expect("positive definite").jitter(), 0.0, "Gram matrix is positive definite");

    let h = 1e-6;
    for (x, y) in xs.iter().zip(xs.iter().skip(1)).take(12) {
        let mut grad = vec![0.0; p0.len()];
        let value = k.eval_grad(x, y, &mut grad);
        assert!((value - k.eval(x, y)).abs() < 1e-12);
        for p in 0..p0.len() {
            let mut plus = p0.clone();
            plus[p] += h;
            let mut minus = p0.clone();
            minus[p] -= h;
            k.set_params(&plus);
            let fp = k.eval(x, y);
            k.set_params(&minus);
            let fm = k.eval(x, y);
            k.set_params(&p0);
            let fd = (fp - fm) / (2.0 * h);
            assert!(
                (fd - grad[p]).abs() < 1e-6 * (1.0 + fd.abs()),
                "{}: analytic {} vs finite difference {fd}",
                k.param_names()[p],
                grad[p]
            );
        }
        let mut gx = vec![0.0; d];
        k.grad_x(x, y, &mut gx);
        for i in (0..d).filter(|i| !cat_dims.contains(i)) {
            let mut xp = x.clone();
            xp[i] += h;
            let mut xm = x.clone();
            xm[i] -= h;
            let fd = (k.eval(&xp, y) - k.eval(&xm, y)) / (2.0 * h);
            assert!((fd - gx[i]).abs() < 1e-6 * (1.0 + fd.abs()), "∂k/∂x[{i}]: analytic {} vs finite difference {fd}", gx[i]);
        }
        for &i in cat_dims {
            assert_eq!(gx[i], 0.0, "no gradient along a categorical dimension");
        }
    }

    // The batch methods agree with the pairwise definitions.
    let gram = k.gram(&xs);
    let cross = k.cross(&xs[..7], &xs[7..]);
    for i in 0..xs.len() {
        for j in 0..xs.len() {
            assert!((gram[(i, j)] - k.eval(&xs[i], &xs[j])).abs() < 1e-12, "gram[{i}, {j}]");
            if i < 7 && j >= 7 {
                assert!((cross[(i, j - 7)] - k.eval(&xs[i], &xs[j])).abs() < 1e-12, "cross[{i}, {}]", j - 7);
            }
        }
    }
    // grad_x_dot, and grad_x_dot_batch given the cross-covariance, against pairwise grad_x: two
    // weight columns for one point; for a batch of three, one column shared by every point and
    // one per point.
    let wx = Mat::from_fn(xs.len() - 1, 2, |i, c| ((i * 5 + c * 3) % 7) as f64 / 7.0 - 0.3);
    let pairwise = |x: &[f64], data: &[Vec<f64>], w: &dyn Fn(usize) -> f64| {
        let mut slow = vec![0.0; d];
        for (i, xi) in data.iter().enumerate() {
            let mut g = vec![0.0; d];
            k.grad_x(x, xi, &mut g);
            slow.iter_mut().zip(&g).for_each(|(s, g)| *s += w(i) * g);
        }
        slow
    };
    let close = |fast: &[f64], slow: &[f64], what: &str| {
        for (q, (f, s)) in fast.iter().zip(slow).enumerate() {
            assert!((f - s).abs() < 1e-10 * (1.0 + s.abs()), "{what}, dimension {q}: {f} vs pairwise {s}");
        }
    };
    let (x0, data) = (&xs[0], &xs[1..]);
    let mut fast = vec![vec![0.0; d]; 2];
    k.grad_x_dot(x0, data, wx.as_ref(), &mut fast);
    for (c, fast) in fast.iter().enumerate() {
        close(fast, &pairwise(x0, data, &|i| wx[(i, c)]), &format!("grad_x_dot column {c}"));
    }
    let (points, data) = xs.split_at(3);
    let shared = Mat::from_fn(data.len(), 1, |i, _| ((i * 5) % 7) as f64 / 7.0 - 0.3);
    let each = Mat::from_fn(data.len(), points.len(), |i, j| ((i * 3 + j * 5) % 11) as f64 / 11.0 - 0.5);
    let mut batch = vec![vec![vec![0.0; d]; 2]; points.len()];
    k.grad_x_dot_batch(points, data, k.cross(data, points).as_ref(), &[shared.as_ref(), each.as_ref()], &mut batch);
    for (j, (x, g)) in points.iter().zip(&batch).enumerate() {
        close(&g[0], &pairwise(x, data, &|i| shared[(i, 0)]), &format!("grad_x_dot_batch point {j}, shared column"));
        close(&g[1], &pairwise(x, data, &|i| each[(i, j)]), &format!("grad_x_dot_batch point {j}, its column"));
    }
    let w = Mat::from_fn(xs.len(), xs.len(), |i, j| ((i * 7 + j * 7) % 11) as f64 / 11.0 - 0.4 + if i == j { 0.3 } else { 0.0 });
    let mut fast = vec![0.0; p0.len()];
    k.gram_grad_dot(&xs, &w, &mut fast);
    let mut slow = vec![0.0; p0.len()];
    let mut dk = vec![0.0; p0.len()];
    for i in 0..xs.len() {
        for j in 0..xs.len() {
            k.eval_grad(&xs[i], &xs[j], &mut dk);
            slow.iter_mut().zip(&dk).for_each(|(s, g)| *s += w[(i, j)] * g);
        }
    }
    for (q, (f, s)) in fast.iter().zip(&slow).enumerate() {
        assert!((f - s).abs() < 1e-9 * (1.0 + s.abs()), "gram_grad_dot of {}: {f} vs pairwise {s}", k.param_names()[q]);
    }

    let mut prior_grad = vec![0.0; p0.len()];
    let lp = k.log_prior(&mut prior_grad);
    for p in 0..p0.len() {
        let mut plus = p0.clone();
        plus[p] += h;
        k.set_params(&plus);
        let lpp = k.log_prior(&mut vec![0.0; p0.len()]);
        k.set_params(&p0);
        let fd = (lpp - lp) / h;
        assert!((fd - prior_grad[p]).abs() < 1e-4 * (1.0 + fd.abs()), "prior gradient of {}", k.param_names()[p]);
    }
}

const B: (f64, f64) = (0.01, 20.0);

#[test]
fn matern52_conforms() {
    check_kernel(Box::new(matern52(vec![0, 1, 2], 0.4, B)), 3, &[]);
}

#[test]
fn matern52_with_the_dimension_scaled_prior_conforms() {
    check_kernel(Box::new(matern52(vec![0, 1, 2], 0.4, B).with_prior(LengthScalePrior::DimensionScaled)), 3, &[]);
}

#[test]
fn matern52_with_the_saas_prior_conforms() {
    check_kernel(Box::new(matern52(vec![0, 1, 2, 3, 4], 0.4, B).with_prior(LengthScalePrior::Saas)), 5, &[]);
}

#[test]
fn the_saas_prior_integrates_tau_out() {
    use crate::kernel::ard::{SAAS_TAU_GRID, SAAS_TAU_RANGE, saas_log_prior};
    // Against a direct quadrature of ∫ Πᵢ HC(ρᵢ; τ) 2ρᵢ HC(τ; 0.1) dτ on a finer grid: the same
    // density up to a constant, so differences between two points agree.
    let direct = |log_ls: &[f64]| {
        let hc = |x: f64, s: f64| 2.0 / (std::f64::consts::PI * s * (1.0 + (x / s).powi(2)));
        let (lo, hi) = (SAAS_TAU_RANGE.0.ln(), SAAS_TAU_RANGE.1.ln());
        let n = 20_000;
        let step = (hi - lo) / n as f64;
        let mut total = 0.0;
        for g in 0..=n {
            let tau = (lo + step * g as f64).exp();
            let w = if g == 0 || g == n { 0.5 } else { 1.0 };
            let rhos = log_ls.iter().map(|l: &f64| (-2.0 * l).exp());
            total += w * step * tau * hc(tau, 0.1) * rhos.map(|r| hc(r, tau) * 2.0 * r).product::<f64>();
        }
        total.ln()
    };
    let a = [0.0, 2.0, 2.5, 3.0, 1.5, 2.9];
    let b = [-1.0, -0.5, 2.5, 3.0, 0.0, 2.0];
    let grid = |x: &[f64]| saas_log_prior(x, &mut vec![0.0; x.len()]);
    let (fine, coarse) = (direct(&a) - direct(&b), grid(&a) - grid(&b));
    assert!((fine - coarse).abs() < 0.01, "{SAAS_TAU_GRID} points: {coarse} against {fine}");
    // The coupling: with five coordinates irrelevant (ℓ = 20), a sixth is pushed longer than
    // with five relevant ones (ℓ = 0.2) — τ learns from the others.
    let slope_at = |others: f64| {
        let mut x = vec![others; 6];
        x[5] = 1.0f64.ln();
        let mut grad = vec![0.0; 6];
        saas_log_prior(&x, &mut grad);
        grad[5]
    };
    assert!(slope_at(20.0f64.ln()) > slope_at(0.2f64.ln()) + 0.5, "{} vs {}", slope_at(20.0f64.ln()), slope_at(0.2f64.ln()));
}

#[test]
fn squared_exp_conforms() {
    check_kernel(Box::new(squared_exp(vec![0, 1, 2], 0.4, B)), 3, &[]);
}

/// Past four dimensions the ARD kernels' batch passes sum in lanes and a tail.
#[test]
fn ard_kernels_conform_in_more_dimensions() {
    check_kernel(Box::new(matern52(vec![0, 1, 2, 3, 4, 5], 0.4, B)), 6, &[]);
    check_kernel(Box::new(squared_exp((0..9).collect(), 0.4, B)), 9, &[]);
    // A kernel over some of the coordinates.
    check_kernel(Box::new(matern52(vec![1, 2, 4, 5, 6], 0.4, B)), 7, &[]);
}

/// Freeze-thaw's decay kernel alone (position 0 within the curve coded in 1), shared by every
/// curve, and as the freeze-thaw model's sum: an asymptote kernel over the configuration, the
/// shape near a configuration (that kernel times the shared decay) and the decay within each
/// curve.
#[test]
fn exp_decay_conforms() {
    check_kernel(Box::new(ExpDecay::new(0, 1)), 2, &[1]);
    check_kernel(Box::new(ExpDecay::shared(0)), 1, &[]);
    let shape = Product(vec![Box::new(matern52(vec![0, 1], 0.4, B)), Box::new(ExpDecay::shared(2))]);
    let freeze_thaw = Sum(vec![Box::new(matern52(vec![0, 1], 0.4, B)), Box::new(shape), Box::new(ExpDecay::new(2, 3))]);
    check_kernel(Box::new(freeze_thaw), 4, &[3]);
}

#[test]
fn categorical_conforms() {
    check_kernel(Box::new(Categorical::new(vec![0, 2])), 3, &[0, 2]);
}

/// The categorical kernel's batch methods give what the pairwise definitions give, bit for bit:
/// taking `1/ℓⱼ` once instead of per pair changed no fit.
#[test]
fn categorical_batches_are_the_pairwise_sums_exactly() {
    let mut rng = StdRng::seed_from_u64(11);
    let dims: Vec<usize> = (1..41).collect();
    let mut k = Categorical::new(dims.clone());
    let p: Vec<f64> = k.params().iter().map(|_| rng.random_range(-2.0..2.0)).collect();
    k.set_params(&p);
    let xs = points(30, 41, &dims, &mut rng);
    let gram = k.gram(&xs);
    let cross = k.cross(&xs[..9], &xs[9..]);
    let w = Mat::from_fn(30, 30, |i, j| ((i * 7 + j * 7) % 11) as f64 / 11.0 - 0.4);
    let mut fast = vec![0.0; p.len()];
    k.gram_grad_dot(&xs, &w, &mut fast);
    let (mut slow, mut dk) = (vec![0.0; p.len()], vec![0.0; p.len()]);
    for j in 0..30 {
        for i in j..30 {
            assert_eq!(gram[(i, j)].to_bits(), k.eval(&xs[i], &xs[j]).to_bits(), "gram[{i}, {j}]");
            let factor = if i == j { w[(i, i)] } else { 2.0 * w[(i, j)] };
            k.eval_grad(&xs[i], &xs[j], &mut dk);
            slow.iter_mut().zip(&dk).for_each(|(s, g)| *s += factor * g);
        }
    }
    for i in 0..9 {
        for j in 0..21 {
            assert_eq!(cross[(i, j)].to_bits(), k.eval(&xs[i], &xs[9 + j]).to_bits(), "cross[{i}, {j}]");
        }
    }
    assert_eq!(fast.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), slow.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
}

#[test]
fn product_of_numeric_and_categorical_conforms() {
    let k = Product(vec![Box::new(matern52(vec![1, 3], 0.4, B)), Box::new(Categorical::new(vec![0, 2]))]);
    check_kernel(Box::new(k), 4, &[0, 2]);
}

#[test]
fn input_warped_conforms() {
    // Two of three numeric coordinates warped, inside a product with a categorical kernel.
    let warped = InputWarped::new(Box::new(matern52(vec![0, 1, 2], 0.4, B)), vec![0, 2]);
    check_kernel(Box::new(warped.clone()), 3, &[]);
    let k = Product(vec![
        Box::new(InputWarped::new(Box::new(matern52(vec![1, 3], 0.4, B)), vec![1, 3])),
        Box::new(Categorical::new(vec![0, 2])),
    ]);
    check_kernel(Box::new(k), 4, &[0, 2]);
}

#[test]
fn input_warping_starts_as_the_identity() {
    let inner = matern52(vec![0, 1], 0.4, B);
    let warped = InputWarped::new(Box::new(inner.clone()), vec![0, 1]);
    let (x, y) = ([0.2, 0.9], [0.6, 0.1]);
    assert!((warped.eval(&x, &y) - inner.eval(&x, &y)).abs() < 1e-9);
}

#[test]
fn sum_conforms() {
    let k = Sum(vec![Box::new(matern52(vec![0], 0.4, B)), Box::new(squared_exp(vec![1, 2], 0.3, B))]);
    check_kernel(Box::new(k), 3, &[]);
}

#[test]
fn additive_groups_conform() {
    check_kernel(Box::new(additive(vec![vec![0, 3], vec![1], vec![2, 4]], 0.4, B)), 5, &[]);
}

#[test]
fn group_additive_conforms() {
    // Overlapping groups, a categorical dimension, a dimension in no group.
    let groups = vec![vec![0, 3], vec![1], vec![3, 4, 1]];
    check_kernel(Box::new(GroupAdditive::<Matern52Profile>::new(vec![0, 1, 3, 4], &[4], &groups, 0.4, B)), 5, &[4]);
    check_kernel(Box::new(GroupAdditive::<SquaredExpProfile>::new(vec![0, 1, 2, 3], &[], &[vec![0, 2], vec![1, 3]], 0.4, B)), 4, &[]);
    let shared = GroupAdditive::<SquaredExpProfile>::new(vec![0, 1, 2, 3], &[3], &[vec![0, 2], vec![1, 3]], 0.4, B);
    check_kernel(Box::new(shared.with_shared_length_scale()), 4, &[3]);
}

#[test]
fn group_additive_components_sum_to_the_kernel() {
    let groups = vec![vec![0, 2], vec![1], vec![2, 3]];
    let mut k = GroupAdditive::<SquaredExpProfile>::new(vec![0, 1, 2, 3], &[], &groups, 0.3, B);
    k.set_params(&[0.4, -1.0, -0.5, 0.2, -1.2]);
    let (x, y) = ([0.1, 0.7, 0.3, 0.9], [0.5, 0.2, 0.35, 0.1]);
    let parts: f64 = (0..3).map(|g| k.component(g).eval(&x, &y)).sum();
    assert!((parts - k.eval(&x, &y)).abs() < 1e-14);
    // The amplitude is split by group size: k(x, x) = a.
    assert!((k.eval(&x, &x) - 0.4f64.exp()).abs() < 1e-14);
    assert_eq!(k.groups(), groups);
}

#[test]
fn matern52_matches_its_closed_form() {
    // One dimension, ℓ = 0.5, a = 1: at distance 0.25, r = 0.5.
    let k = matern52(vec![0], 0.5, B);
    let r: f64 = 0.5;
    let expected = (1.0 + 5f64.sqrt() * r + 5.0 * r * r / 3.0) * (-5f64.sqrt() * r).exp();
    assert!((k.eval(&[0.0], &[0.25]) - expected).abs() < 1e-15);
    assert_eq!(k.eval(&[0.3], &[0.3]), 1.0);
}

#[test]
fn add_tree_conforms() {
    // Root: ARD on 0–1. Vertex A (indicator 6): offset + ARD on 2–3. Vertex B (indicator 7):
    // offset + ARD on 5 × categorical on 4. Vertex C (indicator 8): an offset alone.
    let term = |name: &str, indicator, log_bias, kernel| Term { name: name.into(), indicator, log_bias, kernel };
    let b_kernel: Box<dyn Kernel> =
        Box::new(Product(vec![Box::new(matern52(vec![5], 0.5, (0.01, 1.0))), Box::new(Categorical::new(vec![4]))]));
    let k = AddTree::new(vec![
        term("root", None, None, Some(Box::new(matern52(vec![0, 1], 0.5, (0.01, 1.0))) as Box<dyn Kernel>)),
        term("A", Some(6), Some(-1.0), Some(Box::new(squared_exp(vec![2, 3], 0.5, (0.01, 1.0))))),
        term("B", Some(7), Some(-2.0), Some(b_kernel)),
        term("C", Some(8), Some(-0.5), None),
    ]);
    check_kernel(Box::new(k), 9, &[4, 6, 7, 8]);
}

#[test]
fn add_tree_terms_count_only_where_both_points_have_the_vertex() {
    let k = AddTree::new(vec![
        Term { name: "root".into(), indicator: None, log_bias: None, kernel: Some(Box::new(matern52(vec![0], 0.5, (0.01, 1.0)))) },
        Term { name: "leaf".into(), indicator: Some(2), log_bias: Some(0.0), kernel: Some(Box::new(matern52(vec![1], 0.5, (0.01, 1.0)))) },
    ]);
    let root_only = matern52(vec![0], 0.5, (0.01, 1.0));
    let (on, off) = (vec![0.3, 0.9, 1.0], vec![0.6, 0.1, 0.0]);
    assert_eq!(k.eval(&on, &off), root_only.eval(&on, &off), "different leaves share the root's term only");
    assert!((k.eval(&on, &on) - (2.0 + 1.0)).abs() < 1e-12, "prior variance: root amplitude + leaf offset + leaf amplitude");
    // An inactive parameter's value never matters.
    assert_eq!(k.eval(&off, &[0.6, 0.7, 0.0]), k.eval(&off, &off));
}

#[test]
fn branching_nested_conforms() {
    // Shared ARD on 0–1; branch z at 2 with levels: 0 → quantitative v at 3; 1 → qualitative
    // (3 values) at 4 and quantitative at 5; 2 → nothing. A second branch at 6 without nested.
    let q = |dim: usize| Nested { name: format!("v{dim}"), dim, values: None };
    let c = |dim: usize| Nested { name: format!("v{dim}"), dim, values: Some(3) };
    let levels = |l: Vec<Vec<Nested>>| l.into_iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect::<Vec<_>>();
    let k = BranchingNested::new(
        Some(Box::new(matern52(vec![0, 1], 0.5, (0.01, 1.0)))),
        vec![
            Branch { name: "z".into(), dim: 2, levels: levels(vec![vec![q(3)], vec![c(4), q(5)], vec![]]) },
            Branch { name: "y".into(), dim: 6, levels: levels(vec![vec![], vec![], vec![]]) },
        ],
    );
    check_kernel(Box::new(k), 7, &[2, 4, 6]);
    let alone = BranchingNested::new(None, vec![Branch { name: "z".into(), dim: 0, levels: levels(vec![vec![q(1)], vec![c(2)]]) }]);
    check_kernel(Box::new(alone), 3, &[0, 2]);
}

#[test]
fn branching_nested_is_valid_where_seed_003s_theorem_is_not() {
    // A counterexample to the paper's Theorem 1: 2 levels, each with 2 qualitative nested variables of
    // 2 values, e^{−φ} = 0.2. Theorem 1 allows e^{−γ} = 0.5; the Gram matrix over all 8
    // configurations is then indefinite (−0.56). The kernel caps e^{−γ} at Π ρ = 0.6² = 0.36.
    let nested = |a: usize, b: usize| {
        vec![Nested { name: format!("v{a}"), dim: a, values: Some(2) }, Nested { name: format!("v{b}"), dim: b, values: Some(2) }]
    };
    let levels = vec![("0".to_owned(), nested(1, 2)), ("1".to_owned(), nested(3, 4))];
    let mut k = BranchingNested::new(None, vec![Branch { name: "z".into(), dim: 0, levels }]);
    let phi = (-(0.2f64).ln()).ln();
    k.set_params(&[0.0, 6.0, phi, phi, phi, phi]);
    let configs: Vec<Vec<f64>> = (0..8)
        .map(|i| {
            let (level, u, v) = ((i >> 2) as f64, (i & 1) as f64, ((i >> 1) & 1) as f64);
            if level == 0.0 { vec![0.0, u, v, 0.0, 0.0] } else { vec![1.0, 0.0, 0.0, u, v] }
        })
        .collect();
    let min_eigen = |cross: f64| {
        let m = Mat::from_fn(8, 8, |i, j| {
            let (a, b) = (&configs[i], &configs[j]);
            if a[0] != b[0] { cross } else { k.eval(a, b) }
        });
        m.self_adjoint_eigenvalues(faer::Side::Lower).unwrap().into_iter().fold(f64::INFINITY, f64::min)
    };
    assert!((min_eigen(0.5) + 0.56).abs() < 0.01, "Theorem 1's e^(−γ) = 0.5: {}", min_eigen(0.5));
    let cross = k.eval(&configs[0], &configs[4]);
    assert!(cross <= 0.36 + 1e-12 && cross > 0.35, "the reparametrised e^(−γ) = s·0.36: {cross}");
    let gram = Mat::from_fn(8, 8, |i, j| k.eval(&configs[i], &configs[j]));
    let lowest = gram.self_adjoint_eigenvalues(faer::Side::Lower).unwrap().into_iter().fold(f64::INFINITY, f64::min);
    assert!(lowest > -1e-12, "valid at its largest cross-level correlation: {lowest}");
    assert!((k.gammas()[0] - -cross.ln()).abs() < 1e-12);
}

#[test]
fn the_dimension_scaled_prior_has_hvarfner_s_median() {
    // log ℓ ~ N(√2 + ½ log D, 3): median e^√2 · √D, 41.1 at D = 100.
    assert!((LengthScalePrior::DimensionScaled.median(100) - 41.1325).abs() < 1e-3);
    assert!((LengthScalePrior::DimensionScaled.median(1) - std::f64::consts::SQRT_2.exp()).abs() < 1e-12);
    assert_eq!(LengthScalePrior::Weak.median(100), 1.0);
}
