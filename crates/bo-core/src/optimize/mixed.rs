//! Maximising an acquisition over a mixed, conditional search space.
//!
//! 1. Candidates: scrambled Sobol points of the unit cube decoded through the tree (so every
//!    branch is sampled), plus small perturbations of the best observed points.
//! 2. Every candidate is scored at once (`score_batch`); those already tried are dropped.
//! 3. From the best few, L-BFGS moves the free coordinates — the active numeric parameters
//!    without children — within [0, 1], the rest held fixed (`score_grad`).
//! 4. Each result is decoded (INTEGER and DISCRETE values rounded to their nearest bucket),
//!    re-scored, and the best new assignment wins.
//!
//! INTEGER and DISCRETE parameters are optimised relaxed and rounded; CATEGORICAL values and
//! parents keep the values of their candidate, which the candidate set enumerates.

use std::collections::HashSet;

use rand::{Rng, RngExt};

use super::lbfgsb::minimize;
use crate::designer::quasi_random::sobol_point;
use crate::space::features::Features;
use crate::trial::Assignment;

/// Scores a batch of feature vectors.
pub type ScoreBatch<'a> = &'a dyn Fn(&[Vec<f64>]) -> Vec<f64>;
/// The score and its gradient at one feature vector.
pub type ScoreGrad<'a> = &'a dyn Fn(&[f64]) -> (f64, Vec<f64>);

/// How hard to search.
#[derive(Clone, Debug)]
pub struct MixedConfig {
    /// Sobol candidates.
    pub n_candidates: usize,
    /// Perturbations around each anchor.
    pub n_local: usize,
    /// Local optimisations from the best candidates.
    pub n_starts: usize,
    /// L-BFGS iterations per start.
    pub max_iter: usize,
}

impl Default for MixedConfig {
    fn default() -> Self {
        MixedConfig { n_candidates: 512, n_local: 16, n_starts: 4, max_iter: 60 }
    }
}

/// The assignment maximising the acquisition, with its value; `None` when every candidate has
/// been tried already (a small discrete space used up).
///
/// `score_batch` scores feature vectors; `score_grad` gives the value and gradient at one;
/// `taken` holds the keys of assignments not to propose again; `anchors` are the best observed
/// assignments, explored around.
pub fn maximize(
    features: &Features,
    score_batch: ScoreBatch<'_>,
    score_grad: ScoreGrad<'_>,
    taken: &HashSet<String>,
    anchors: &[Assignment],
    config: &MixedConfig,
    rng: &mut dyn Rng,
) -> Option<(Assignment, f64)> {
    let space = features.space();
    let d = space.n_params();
    let seed: u64 = rng.random();
    let offset: u64 = rng.random_range(0..1 << 15);
    let mut candidates: Vec<Assignment> =
        (0..config.n_candidates as u64).map(|i| space.decode(&sobol_point(offset + i, d, seed))).collect();
    for anchor in anchors {
        let u0 = space.encode(anchor);
        for _ in 0..config.n_local {
            let u: Vec<f64> = u0.iter().map(|v| (v + 0.05 * standard_normal(rng)).clamp(0.0, 1.0)).collect();
            candidates.push(space.decode(&u));
        }
    }
    let mut seen = HashSet::new();
    candidates.retain(|a| {
        let key = a.key();
        !taken.contains(&key) && seen.insert(key)
    });
    if candidates.is_empty() {
        return None;
    }
    let xs: Vec<Vec<f64>> = candidates.iter().map(|a| features.encode(a)).collect();
    let scores = score_batch(&xs);
    let mut order: Vec<usize> = (0..candidates.len()).filter(|&i| scores[i].is_finite()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut best: Option<(Assignment, f64)> = order.first().map(|&i| (candidates[i].clone(), scores[i]));
    for &start in order.iter().take(config.n_starts) {
        let free = features.free_dims(&candidates[start]);
        if free.is_empty() {
            continue;
        }
        let base = xs[start].clone();
        let x0: Vec<f64> = free.iter().map(|&i| base[i]).collect();
        let objective = |z: &[f64]| {
            let mut x = base.clone();
            for (k, &i) in free.iter().enumerate() {
                x[i] = z[k];
            }
            let (v, g) = score_grad(&x);
            (-v, free.iter().map(|&i| -g[i]).collect())
        };
        let m = minimize(objective, &x0, &vec![0.0; free.len()], &vec![1.0; free.len()], config.max_iter);
        let mut x = base.clone();
        for (k, &i) in free.iter().enumerate() {
            x[i] = m.x[k];
        }
        let a = features.decode(&x);
        if taken.contains(&a.key()) {
            continue;
        }
        let value = score_batch(&[features.encode(&a)])[0];
        if value.is_finite() && best.as_ref().is_none_or(|(_, b)| value > *b) {
            best = Some((a, value));
        }
    }
    best
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut dyn Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
