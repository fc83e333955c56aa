//! High-dimensional benchmark problems, all minimised: Branin and Hartmann-6 embedded among dummy coordinates (Wang et al. 2016's
//! protocol), Kandasamy et al.'s additive three-modal functions (Kandasamy et al. 2015), and eight
//! Hartmann-3 functions on disjoint groups.
//!
//! Which coordinates matter is chosen by a fixed permutation from [`permutation`] (SplitMix64,
//! stable across Rust and crate versions, unlike a library RNG), the same on every run.

use bo_core::{Assignment, SearchSpace};

use super::classic::{branin_of, hartmann3_of, hartmann6_of};
use super::problem::Problem;
use super::space::{box_space, coords, unit_box};

/// A fixed permutation of `0..n` (Fisher–Yates on SplitMix64 from `seed`).
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// `[−1, 1]^d`.
pub fn centred_box(d: usize) -> SearchSpace {
    box_space(&vec![(-1.0, 1.0); d])
}

/// Branin on coordinates i, j of `x ∈ [−1, 1]^D` chosen by the permutation, rescaled as Wang et al.
/// 2016's code does: u = −5 + 15 (x_i + 1)/2, v = 15 (x_j + 1)/2.
fn branin_embedded(a: &Assignment, d: usize) -> f64 {
    let x = coords(a, d);
    let p = permutation(d, 1);
    branin_centred(x[p[0]], x[p[1]])
}

/// Branin in D = 25.
pub fn branin_d25(a: &Assignment) -> f64 {
    branin_embedded(a, 25)
}

/// Branin of `[−1, 1]` coordinates, rescaled as [`branin_embedded`].
pub fn branin_centred(xi: f64, xj: f64) -> f64 {
    branin_of(&[-5.0 + 15.0 * (xi + 1.0) / 2.0, 15.0 * (xj + 1.0) / 2.0])
}

/// A fixed random orthogonal `n × n` matrix: Gram–Schmidt on the rows of a standard normal
/// matrix (Wang et al. 2016 §4's rotation; its code takes Q of `qr(randn(D, D))`), rows from
/// `bo_core::embedding`'s seeded generator.
pub fn rotation(n: usize, seed: u64) -> Vec<Vec<f64>> {
    let g = bo_core::embedding::Embedding::new(seed, n);
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(n);
    for i in 0..n {
        let mut v = g.row(i as u64);
        for u in &q {
            let dot: f64 = v.iter().zip(u).map(|(a, b)| a * b).sum();
            v.iter_mut().zip(u).for_each(|(a, b)| *a -= dot * b);
        }
        let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
        q.push(v.into_iter().map(|a| a / norm).collect());
    }
    q
}

/// Branin in D = 25 seen through a rotation: `f(R x)` (Wang et al. 2016 §4, "REMBO's performance is not
/// affected"). `R x` may leave the box; Branin's minimum 0.397887 is its minimum on all of R², and
/// `Rᵀ z*` for an optimiser `z*` lies inside the box (tested).
pub fn branin_d25_rotated(a: &Assignment) -> f64 {
    let x = coords(a, 25);
    let (r, p) = (rotation(25, 5), permutation(25, 1));
    let z = |k: usize| r[k].iter().zip(&x).map(|(a, b)| a * b).sum::<f64>();
    branin_centred(z(p[0]), z(p[1]))
}

/// Branin in D = 100.
pub fn branin_d100(a: &Assignment) -> f64 {
    branin_embedded(a, 100)
}

/// Hartmann-6 on 6 permuted coordinates of `x ∈ [−1, 1]^100`, each mapped by (x + 1)/2.
pub fn hartmann6_d100(a: &Assignment) -> f64 {
    let x = coords(a, 100);
    let p = permutation(100, 2);
    hartmann6_of(&p[..6].iter().map(|&i| (x[i] + 1.0) / 2.0).collect::<Vec<_>>())
}

/// Σ of 8 Hartmann-3 on disjoint permuted groups of `x ∈ [0, 1]^24`; optimum 8 × −3.86278.
pub fn additive_hartmann3x8_d24(a: &Assignment) -> f64 {
    let x = coords(a, 24);
    additive_hartmann_groups().iter().map(|g| hartmann3_of(&g.iter().map(|&i| x[i]).collect::<Vec<_>>())).sum()
}

/// The groups of [`additive_hartmann3x8_d24`].
pub fn additive_hartmann_groups() -> Vec<Vec<usize>> {
    permutation(24, 3).chunks(3).map(<[usize]>::to_vec).collect()
}

/// Kandasamy's three-modal `f_{d'}` (Kandasamy et al. 2015's code `get3ModalFunction.m`):
/// the log of a 3-component Gaussian mixture on `[−1, 1]^{d'}`, clipped below at −700; maximal
/// at `c_2`.
pub fn three_modal(z: &[f64]) -> f64 {
    let d = z.len();
    let v = 0.01 * (d as f64).powf(0.1);
    let centre = |first: [f64; 2], rest: f64| (0..d).map(|i| if i < 2 { first[i] } else { rest }).collect::<Vec<f64>>();
    let centres = [centre([0.62, -0.38], -0.66), centre([0.18, 0.58], -0.19), centre([-0.58, -0.56], 0.62)];
    let weights: [f64; 3] = [0.1, 0.8, 0.1];
    let terms: Vec<f64> = centres
        .iter()
        .zip(weights)
        .map(|(c, p)| {
            let r2: f64 = z.iter().zip(c).map(|(a, b)| (a - b).powi(2)).sum();
            p.ln() - 0.5 * d as f64 * (2.0 * std::f64::consts::PI * v).ln() - r2 / (2.0 * v)
        })
        .collect();
    let m = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (m + terms.iter().map(|t| (t - m).exp()).sum::<f64>().ln()).max(-700.0)
}

/// Kandasamy's additive function in `d` dimensions of `m` groups of `dp`, negated: minimised.
fn kandasamy(a: &Assignment, d: usize, dp: usize, m: usize) -> f64 {
    let x = coords(a, d);
    -kandasamy_groups(d, dp, m).iter().map(|g| three_modal(&g.iter().map(|&i| x[i]).collect::<Vec<_>>())).sum::<f64>()
}

/// The `m` groups of `dp` coordinates Kandasamy's function in `d` dimensions depends on (the
/// other `d − m·dp` are irrelevant).
pub fn kandasamy_groups(d: usize, dp: usize, m: usize) -> Vec<Vec<usize>> {
    permutation(d, 4)[..m * dp].chunks(dp).map(<[usize]>::to_vec).collect()
}

/// (D, d', M') = (10, 3, 3).
pub fn kandasamy_10_3_3(a: &Assignment) -> f64 {
    kandasamy(a, 10, 3, 3)
}

/// (24, 11, 2).
pub fn kandasamy_24_11_2(a: &Assignment) -> f64 {
    kandasamy(a, 24, 11, 2)
}

/// (40, 18, 2).
pub fn kandasamy_40_18_2(a: &Assignment) -> f64 {
    kandasamy(a, 40, 18, 2)
}

/// (96, 5, 19).
pub fn kandasamy_96_5_19(a: &Assignment) -> f64 {
    kandasamy(a, 96, 5, 19)
}

/// The problems of this family.
pub fn problems() -> Vec<Problem> {
    vec![
        Problem {
            name: "branin_d25",
            dim: 25,
            optimum: 0.397887,
            space: || centred_box(25),
            eval: branin_d25,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "branin_d100",
            dim: 100,
            optimum: 0.397887,
            space: || centred_box(100),
            eval: branin_d100,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "hartmann6_d100",
            dim: 100,
            optimum: -3.32237,
            space: || centred_box(100),
            eval: hartmann6_d100,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "additive_hartmann3x8_d24",
            dim: 24,
            optimum: -3.86278 * 8.0,
            space: || unit_box(24),
            eval: additive_hartmann3x8_d24,
            noise_sd: 0.0,
            graph: None,
            groups: Some(additive_hartmann_groups),
        },
        Problem {
            name: "kandasamy_10_3_3",
            dim: 10,
            optimum: -11.289013,
            space: || centred_box(10),
            eval: kandasamy_10_3_3,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| kandasamy_groups(10, 3, 3)),
        },
        Problem {
            name: "kandasamy_24_11_2",
            dim: 24,
            optimum: -27.356252,
            space: || centred_box(24),
            eval: kandasamy_24_11_2,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| kandasamy_groups(24, 11, 2)),
        },
        Problem {
            name: "kandasamy_40_18_2",
            dim: 40,
            optimum: -44.162320,
            space: || centred_box(40),
            eval: kandasamy_40_18_2,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| kandasamy_groups(40, 18, 2)),
        },
        Problem {
            name: "branin_d25_rotated",
            dim: 25,
            optimum: 0.397887,
            space: || centred_box(25),
            eval: branin_d25_rotated,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "kandasamy_96_5_19",
            dim: 96,
            optimum: -119.561866,
            space: || centred_box(96),
            eval: kandasamy_96_5_19,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| kandasamy_groups(96, 5, 19)),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_modal_constants_follow_kandasamys_code() {
        // §3.8's table: f_{d'}(c_2) (global), f_{d'}(c_1) (local), f_{d'}(0).
        let c = |d: usize, first: [f64; 2], rest: f64| (0..d).map(|i| if i < 2 { first[i] } else { rest }).collect::<Vec<f64>>();
        for (d, top, local, zero) in [
            (3, 3.763004, 1.6836, -14.376),
            (5, 6.292730, 4.2133, -14.016),
            (11, 13.678126, 11.5987, -13.612),
            (18, 22.081160, 20.0017, -13.361),
        ] {
            assert!((three_modal(&c(d, [0.18, 0.58], -0.19)) - top).abs() < 1e-5, "d' = {d}");
            assert!((three_modal(&c(d, [0.62, -0.38], -0.66)) - local).abs() < 1e-3, "d' = {d}");
            assert!((three_modal(&vec![0.0; d]) - zero).abs() < 1e-3, "d' = {d}");
        }
    }

    #[test]
    fn branin_constants_follow_the_virtual_library() {
        let pi = std::f64::consts::PI;
        for (u, v) in [(-pi, 12.275), (pi, 2.275)] {
            assert!((branin_of(&[u, v]) - 0.397887357729738).abs() < 1e-12);
        }
        assert!((branin_of(&[9.42478, 2.475]) - 0.39788735775).abs() < 1e-10);
        assert!((branin_of(&[2.5, 7.5]) - 24.1299644136).abs() < 1e-9);
        assert!((branin_of(&[-5.0, 0.0]) - 308.129096).abs() < 1e-6);
        for (xi, xj) in [(-0.752212, 0.636667), (0.085546, -0.696667), (0.923304, -0.670000)] {
            assert!((branin_centred(xi, xj) - 0.397887).abs() < 1e-5, "rescaled optimiser ({xi}, {xj})");
        }
    }

    #[test]
    fn the_rotated_branin_keeps_its_optimum_inside_the_box() {
        let r = rotation(25, 5);
        for (i, u) in r.iter().enumerate() {
            for (j, v) in r.iter().enumerate() {
                let dot: f64 = u.iter().zip(v).map(|(a, b)| a * b).sum();
                assert!((dot - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12, "orthonormal rows");
            }
        }
        let p = permutation(25, 1);
        // x* = Rᵀ z* with z* zero but for the optimiser (0.085546, −0.696667) on (p0, p1).
        let x: Vec<f64> = (0..25).map(|k| r[p[0]][k] * 0.085546 + r[p[1]][k] * -0.696667).collect();
        assert!(x.iter().all(|v| v.abs() <= 1.0));
        let a = Assignment::new(x.iter().enumerate().map(|(i, v)| (format!("x{i}").into(), bo_core::ParamValue::Float(*v))).collect());
        assert!((branin_d25_rotated(&a) - 0.397887).abs() < 1e-5);
    }

    #[test]
    fn permutations_are_fixed_and_complete() {
        let p = permutation(25, 1);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..25).collect::<Vec<_>>());
        assert_eq!(p, permutation(25, 1));
        assert_ne!(p, permutation(25, 2));
    }
}
