//! The classic problems, all minimised: Branin, Hartmann-3/-6, Ackley, Levy, Rosenbrock,
//! Styblinski–Tang, Michalewicz and the six-hump camel as in Surjanovic & Bingham's Virtual
//! Library of Simulation Experiments (the usual BoTorch/Optuna definitions), and Hartmann-6 with
//! observation noise.

use bo_core::Assignment;

use super::problem::Problem;
use super::space::{box_space, coords};

fn branin(a: &Assignment) -> f64 {
    branin_of(&coords(a, 2))
}

/// Branin at `(u, v) ∈ [−5, 10] × [0, 15]`.
pub fn branin_of(x: &[f64]) -> f64 {
    let pi = std::f64::consts::PI;
    let (b, c, r, s, t) = (5.1 / (4.0 * pi * pi), 5.0 / pi, 6.0, 10.0, 1.0 / (8.0 * pi));
    (x[1] - b * x[0] * x[0] + c * x[0] - r).powi(2) + s * (1.0 - t) * x[0].cos() + s
}

const HARTMANN_ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];

fn hartmann(x: &[f64], a: &[&[f64]], p: &[&[f64]]) -> f64 {
    hartmann_with(x, a, p, &HARTMANN_ALPHA)
}

fn hartmann_with(x: &[f64], a: &[&[f64]], p: &[&[f64]], alpha: &[f64; 4]) -> f64 {
    -(0..4)
        .map(|i| {
            let inner: f64 = x.iter().enumerate().map(|(j, xj)| a[i][j] * (xj - p[i][j]).powi(2)).sum();
            alpha[i] * (-inner).exp()
        })
        .sum::<f64>()
}

fn hartmann3(a: &Assignment) -> f64 {
    hartmann3_of(&coords(a, 3))
}

/// Hartmann-3 at `x ∈ [0, 1]³`.
pub fn hartmann3_of(x: &[f64]) -> f64 {
    let am: [&[f64]; 4] = [&[3.0, 10.0, 30.0], &[0.1, 10.0, 35.0], &[3.0, 10.0, 30.0], &[0.1, 10.0, 35.0]];
    let pm: [&[f64]; 4] = [&[0.3689, 0.1170, 0.2673], &[0.4699, 0.4387, 0.7470], &[0.1091, 0.8732, 0.5547], &[0.03815, 0.5743, 0.8828]];
    hartmann(x, &am, &pm)
}

fn hartmann6(a: &Assignment) -> f64 {
    hartmann6_of(&coords(a, 6))
}

/// Hartmann-6 at `x ∈ [0, 1]⁶`.
pub fn hartmann6_of(x: &[f64]) -> f64 {
    hartmann6_with(x, &HARTMANN_ALPHA)
}

/// Hartmann-6 with the weights `alpha` of its four bumps instead of the standard ones (a related
/// problem with the same bumps, for transfer learning).
pub fn hartmann6_with(x: &[f64], alpha: &[f64; 4]) -> f64 {
    let am: [&[f64]; 4] = [
        &[10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        &[0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        &[3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        &[17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ];
    let pm: [&[f64]; 4] = [
        &[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        &[0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        &[0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        &[0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ];
    hartmann_with(x, &am, &pm, alpha)
}

pub(super) fn ackley(x: &[f64]) -> f64 {
    let d = x.len() as f64;
    let tau = std::f64::consts::TAU;
    let s1 = x.iter().map(|v| v * v).sum::<f64>() / d;
    let s2 = x.iter().map(|v| (tau * v).cos()).sum::<f64>() / d;
    -20.0 * (-0.2 * s1.sqrt()).exp() - s2.exp() + 20.0 + std::f64::consts::E
}

fn levy(x: &[f64]) -> f64 {
    let pi = std::f64::consts::PI;
    let w: Vec<f64> = x.iter().map(|v| 1.0 + (v - 1.0) / 4.0).collect();
    let d = w.len();
    let mut f = (pi * w[0]).sin().powi(2);
    for wi in &w[..d - 1] {
        f += (wi - 1.0).powi(2) * (1.0 + 10.0 * (pi * wi + 1.0).sin().powi(2));
    }
    f + (w[d - 1] - 1.0).powi(2) * (1.0 + (2.0 * pi * w[d - 1]).sin().powi(2))
}

pub(super) fn rosenbrock(x: &[f64]) -> f64 {
    x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum()
}

/// Michalewicz with m = 10 on `[0, π]^d` (separable: each coordinate's minimiser is its own).
fn michalewicz(x: &[f64]) -> f64 {
    -x.iter().enumerate().map(|(i, v)| v.sin() * ((i + 1) as f64 * v * v / std::f64::consts::PI).sin().powi(20)).sum::<f64>()
}

/// The six-hump camel on `[−3, 3] × [−2, 2]`.
fn six_hump_camel(x: &[f64]) -> f64 {
    let (a, b) = (x[0], x[1]);
    (4.0 - 2.1 * a * a + a.powi(4) / 3.0) * a * a + a * b + (-4.0 + 4.0 * b * b) * b * b
}

pub(super) fn styblinski_tang(x: &[f64]) -> f64 {
    0.5 * x.iter().map(|v| v.powi(4) - 16.0 * v * v + 5.0 * v).sum::<f64>()
}

/// The problems of this family.
pub fn problems() -> Vec<Problem> {
    vec![
        Problem {
            name: "branin",
            dim: 2,
            optimum: 0.397887,
            space: || box_space(&[(-5.0, 10.0), (0.0, 15.0)]),
            eval: branin,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "hartmann3",
            dim: 3,
            optimum: -3.86278,
            space: || box_space(&[(0.0, 1.0); 3]),
            eval: hartmann3,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "hartmann6",
            dim: 6,
            optimum: -3.32237,
            space: || box_space(&[(0.0, 1.0); 6]),
            eval: hartmann6,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "ackley5",
            dim: 5,
            optimum: 0.0,
            space: || box_space(&[(-32.768, 32.768); 5]),
            eval: |a| ackley(&coords(a, 5)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "levy10",
            dim: 10,
            optimum: 0.0,
            space: || box_space(&[(-10.0, 10.0); 10]),
            eval: |a| levy(&coords(a, 10)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "rosenbrock4",
            dim: 4,
            optimum: 0.0,
            space: || box_space(&[(-5.0, 10.0); 4]),
            eval: |a| rosenbrock(&coords(a, 4)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "michalewicz5",
            dim: 5,
            optimum: -4.687658179,
            space: || box_space(&[(0.0, std::f64::consts::PI); 5]),
            eval: |a| michalewicz(&coords(a, 5)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "six_hump_camel",
            dim: 2,
            optimum: -1.0316284535,
            space: || box_space(&[(-3.0, 3.0), (-2.0, 2.0)]),
            eval: |a| six_hump_camel(&coords(a, 2)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "hartmann6_noisy",
            dim: 6,
            optimum: -3.32237,
            space: || box_space(&[(0.0, 1.0); 6]),
            eval: hartmann6,
            // About 3 % of the function's range over the box.
            noise_sd: 0.1,
            graph: None,
            groups: None,
        },
        Problem {
            name: "styblinski_tang8",
            dim: 8,
            optimum: -39.16616570377142 * 8.0,
            space: || box_space(&[(-5.0, 5.0); 8]),
            eval: |a| styblinski_tang(&coords(a, 8)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
    ]
}
