//! Maximising a score over a few coordinates of a feature vector, the others held fixed: the
//! per-group acquisition maximisation of Kandasamy et al. 2015 (Add-GP-UCB's `φ̃_t^(j)` on `X^(j)`, the
//! reading's §3.4 — "the acquisition is optimised in d-dimensional pieces, never in D
//! dimensions") and the search over REMBO's low-dimensional box (Wang et al. 2016, Alg. 2 step 4).
//!
//! Scrambled Sobol candidates over the coordinates plus Gaussian perturbations of given anchors
//! are scored in one batch; L-BFGS then moves the numeric coordinates from the best few, in
//! lock-step (one batch per round, as [`super::mixed`] does). Categorical coordinates keep their
//! candidate's code. The score's gradient is read only along the moved coordinates.
//!
//! Must not know about GPs or search spaces: it sees coordinates and scores.

use rand::{Rng, RngExt};

use super::lbfgsb::{Lbfgsb, minimize_batch};
use super::mixed::{ACQUISITION_F_TOL, ScoreBatch, ScoreGrad, standard_normal};
use crate::optimize::sobol::sobol_point;

/// What a coordinate holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coordinate {
    /// A value in `[0, 1]`.
    Unit,
    /// A category code among this many values.
    Category(usize),
}

/// How hard to search.
#[derive(Clone, Debug)]
pub struct SubspaceConfig {
    /// Sobol candidates.
    pub n_candidates: usize,
    /// Perturbations around each anchor.
    pub n_local: usize,
    /// Local optimisations from the best candidates.
    pub n_starts: usize,
    /// L-BFGS iterations per start.
    pub max_iter: usize,
}

impl Default for SubspaceConfig {
    fn default() -> Self {
        SubspaceConfig { n_candidates: 256, n_local: 8, n_starts: 4, max_iter: 30 }
    }
}

/// The point maximising `score` among those equal to `base` off `dims` (each holding
/// `kinds[k]`), with its score. `anchors` are full points whose coordinates on `dims` are
/// searched around (the best observed points). `None` only if every score is non-finite.
#[allow(clippy::too_many_arguments)]
pub fn maximize(
    dims: &[usize],
    kinds: &[Coordinate],
    base: &[f64],
    score_batch: ScoreBatch<'_>,
    score_grad: ScoreGrad<'_>,
    anchors: &[Vec<f64>],
    config: &SubspaceConfig,
    rng: &mut dyn Rng,
) -> Option<(Vec<f64>, f64)> {
    assert_eq!(dims.len(), kinds.len(), "one kind per coordinate");
    let with = |z: &[f64]| {
        let mut x = base.to_vec();
        for (&i, &v) in dims.iter().zip(z) {
            x[i] = v;
        }
        x
    };
    let code = |u: f64, n: usize| (u * n as f64).floor().clamp(0.0, (n - 1) as f64);
    let seed: u64 = rng.random();
    let offset: u64 = rng.random_range(0..1 << 15);
    let mut zs: Vec<Vec<f64>> = (0..config.n_candidates as u64)
        .map(|i| {
            let u = sobol_point(offset + i, dims.len(), seed);
            u.iter()
                .zip(kinds)
                .map(|(&u, kind)| match kind {
                    Coordinate::Unit => u,
                    Coordinate::Category(n) => code(u, *n),
                })
                .collect()
        })
        .collect();
    for anchor in anchors {
        let z0: Vec<f64> = dims.iter().map(|&i| anchor[i]).collect();
        for k in 0..=config.n_local {
            zs.push(
                z0.iter()
                    .zip(kinds)
                    .map(|(&v, kind)| match kind {
                        Coordinate::Unit if k > 0 => (v + 0.05 * standard_normal(rng)).clamp(0.0, 1.0),
                        _ => v,
                    })
                    .collect(),
            );
        }
    }
    let xs: Vec<Vec<f64>> = zs.iter().map(|z| with(z)).collect();
    let scores = score_batch(&xs);
    let mut order: Vec<usize> = (0..xs.len()).filter(|&i| scores[i].is_finite()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut best = order.first().map(|&i| (xs[i].clone(), scores[i]))?;
    let free: Vec<usize> = (0..dims.len()).filter(|&k| kinds[k] == Coordinate::Unit).collect();
    if free.is_empty() {
        return Some(best);
    }
    let starts: Vec<usize> = order.iter().copied().take(config.n_starts).collect();
    let full = |start: usize, w: &[f64]| {
        let mut z = zs[start].clone();
        for (&k, &v) in free.iter().zip(w) {
            z[k] = v;
        }
        with(&z)
    };
    let runs = starts
        .iter()
        .map(|&s| {
            let w0: Vec<f64> = free.iter().map(|&k| zs[s][k]).collect();
            Lbfgsb::new(&w0, &vec![0.0; free.len()], &vec![1.0; free.len()], config.max_iter, ACQUISITION_F_TOL)
        })
        .collect();
    let minima = minimize_batch(
        |active, ws| {
            let points: Vec<Vec<f64>> = active.iter().zip(ws).map(|(&run, w)| full(starts[run], w)).collect();
            score_grad(&points).into_iter().map(|(v, g)| (-v, free.iter().map(|&k| -g[dims[k]]).collect())).collect()
        },
        runs,
    );
    for (run, m) in minima.iter().enumerate() {
        if m.f.is_finite() && -m.f > best.1 {
            best = (full(starts[run], &m.x), -m.f);
        }
    }
    Some(best)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn moves_only_its_coordinates_and_finds_the_top() {
        // A bowl in coordinates 1 and 3 with its top at (0.3, 0.8); coordinate 2 a category
        // whose code 2 adds 1.
        let f = |x: &[f64]| -(x[1] - 0.3).powi(2) - (x[3] - 0.8).powi(2) + if x[2] == 2.0 { 1.0 } else { 0.0 };
        let score_batch = |xs: &[Vec<f64>]| xs.iter().map(|x| f(x)).collect::<Vec<f64>>();
        let score_grad = |xs: &[Vec<f64>]| {
            xs.iter()
                .map(|x| {
                    let mut g = vec![0.0; x.len()];
                    g[1] = -2.0 * (x[1] - 0.3);
                    g[3] = -2.0 * (x[3] - 0.8);
                    (f(x), g)
                })
                .collect::<Vec<_>>()
        };
        let base = vec![0.5, 0.5, 0.0, 0.5, 0.9];
        let (x, v) = maximize(
            &[1, 2, 3],
            &[Coordinate::Unit, Coordinate::Category(3), Coordinate::Unit],
            &base,
            &score_batch,
            &score_grad,
            &[],
            &SubspaceConfig::default(),
            &mut StdRng::seed_from_u64(1),
        )
        .unwrap();
        assert_eq!((x[0], x[4]), (0.5, 0.9), "coordinates off the subspace are kept");
        assert_eq!(x[2], 2.0);
        assert!((x[1] - 0.3).abs() < 1e-4 && (x[3] - 0.8).abs() < 1e-4, "{x:?}");
        assert!((v - 1.0).abs() < 1e-8);
    }
}
