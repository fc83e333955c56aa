//! What a batch member is chosen by: the hypervolume scalarisations of the objectives' upper
//! confidence bounds (Golovin & Zhang 2020, Thm. 4) or, with one objective, expected
//! improvement, weighted by each safety model's probability of safety (Gardner et al. 2014,
//! eq. 4), with the hard constraints of safety metrics below their desired safe fraction.
//!
//! Must not: hold or fit models; it scores predictions it is given.

use rand::Rng;

use crate::acquisition::{log_h, log_ndtr};
use crate::optimize::mixed::standard_normal;

/// Random scalarisation directions per suggestion. OSS Vizier uses 1,000; over 10 seeds of the
/// five `bo-bench multi` problems, 250 left the hypervolume regret at 100 evaluations within
/// seed spread (better on DTLZ2, level on the others) and took 30–40 % off the time per
/// suggestion (docs/journal/benchmarks.md, "Several objectives").
pub(super) const WEIGHTS: usize = 250;
/// The multiplier of each objective's posterior deviation in its upper confidence bound. OSS
/// Vizier uses 1.8; over 10 seeds of the five `bo-bench multi` problems, 1.8, 1.0, 0.5 and 0.25
/// explored too much (hypervolume regret at 100 up to 2.8× that of 0.1), and 0 (the posterior
/// mean alone) was within seed spread of 0.1 (docs/journal/benchmarks.md, "Several objectives"). The
/// scalarisations' floor and the fantasies already spread a batch.
pub(super) const UCB_COEFFICIENT: f64 = 0.1;
/// The highest probability of safety a hard constraint asks of a candidate (a target of 1 asks
/// for this: a posterior is never certain).
pub(super) const MAX_REQUIRED_SAFETY: f64 = 0.99;

/// What a batch member is chosen by.
pub(super) struct Acquisition {
    pub(super) gain: Gain,
    /// Per safety metric: its threshold (oriented: safe above it) and, while the constraint is
    /// hard, the probability of safety a candidate needs.
    pub(super) safety: Vec<(f64, Option<f64>)>,
}

/// The gain of a candidate's objectives.
pub(super) enum Gain {
    /// Several objectives: hypervolume scalarisations of the UCB.
    Hypervolume(Scalarised),
    /// One objective: expected improvement over the best safe value (`None`: no safe trial yet,
    /// every candidate gains alike), in units of the objective's observed range.
    Improvement { best: Option<f64>, scale: f64, reference: f64 },
}

impl Gain {
    /// Raises the floor to the (safe) oriented objective values `y`.
    pub(super) fn raise_floor(&mut self, y: &[f64]) {
        match self {
            Gain::Hypervolume(s) => s.raise_floor(y),
            Gain::Improvement { best, .. } => *best = Some(best.map_or(y[0], |b: f64| b.max(y[0]))),
        }
    }

    /// log of the gain at the objectives' oriented predictions (mean, deviation).
    pub(super) fn log_gain(&self, objectives: &[(f64, f64)]) -> f64 {
        match self {
            Gain::Hypervolume(s) => {
                let ucb: Vec<f64> = objectives.iter().map(|(m, sd)| m + UCB_COEFFICIENT * sd).collect();
                s.score(&ucb).max(f64::MIN_POSITIVE).ln()
            }
            Gain::Improvement { best: None, .. } => 0.0,
            Gain::Improvement { best: Some(best), scale, reference } => {
                let (mean, sd) = ((objectives[0].0 - reference) / scale, (objectives[0].1 / scale).max(1e-12));
                let z = (mean - (best - reference) / scale) / sd;
                sd.ln() + log_h(z)
            }
        }
    }
}

impl Acquisition {
    /// A candidate's score from every metric's oriented prediction (objectives first): whether
    /// it meets the hard constraints, then the log of its gain times its probability of safety
    /// — or, failing a hard constraint, that log probability alone.
    pub(super) fn score(&self, predicted: &[(f64, f64)], k: usize) -> (bool, f64) {
        let mut log_safe = 0.0;
        let mut meets = true;
        for ((threshold, required), (mean, sd)) in self.safety.iter().zip(&predicted[k..]) {
            let lp = log_ndtr((mean - threshold) / sd.max(1e-12));
            log_safe += lp;
            if required.is_some_and(|r| lp < r.ln()) {
                meets = false;
            }
        }
        if meets { (true, self.gain.log_gain(&predicted[..k]) + log_safe) } else { (false, log_safe) }
    }

    /// Whether the oriented predictions `predicted` are on the safe side of every threshold.
    pub(super) fn predicted_safe(&self, predicted: &[f64], k: usize) -> bool {
        self.safety.iter().zip(&predicted[k..]).all(|((t, _), v)| v >= t)
    }
}

/// The acquisition of one batch member: scalarisation directions, each objective's scale and the
/// floor each direction's scalarisation must beat.
pub(super) struct Scalarised {
    /// `1 / w_i` per direction, flattened `[direction][objective]`.
    pub(super) inverse_weights: Vec<f64>,
    pub(super) scales: Vec<(f64, f64)>,
    pub(super) floors: Vec<f64>,
    pub(super) k: usize,
}

impl Scalarised {
    pub(super) fn new(k: usize, scales: Vec<(f64, f64)>, rng: &mut dyn Rng) -> Scalarised {
        let mut inverse_weights = Vec::with_capacity(WEIGHTS * k);
        for _ in 0..WEIGHTS {
            let w: Vec<f64> = (0..k).map(|_| standard_normal(rng).abs().max(1e-12)).collect();
            let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            inverse_weights.extend(w.iter().map(|x| norm / x));
        }
        Scalarised { inverse_weights, scales, floors: vec![0.0; WEIGHTS], k }
    }

    /// `z` in units of each objective's range above its reference.
    pub(super) fn normalise(&self, y: &[f64]) -> Vec<f64> {
        y.iter().zip(&self.scales).map(|(v, (r, s))| ((v - r) / s).max(0.0)).collect()
    }

    /// `s_w(z)` for direction `j`.
    pub(super) fn scalarise(&self, j: usize, z: &[f64]) -> f64 {
        let inv = &self.inverse_weights[j * self.k..(j + 1) * self.k];
        z.iter().zip(inv).map(|(z, i)| z * i).fold(f64::INFINITY, f64::min).powi(self.k as i32)
    }

    /// Raises each direction's floor to the scalarised value of `y` (oriented values).
    pub(super) fn raise_floor(&mut self, y: &[f64]) {
        let z = self.normalise(y);
        for j in 0..WEIGHTS {
            let s = self.scalarise(j, &z);
            if s > self.floors[j] {
                self.floors[j] = s;
            }
        }
    }

    /// The mean hypervolume improvement over the floors of the optimistic value `ucb`, and —
    /// breaking ties where no direction improves — a millionth of its mean scalarisation.
    pub(super) fn score(&self, ucb: &[f64]) -> f64 {
        let z = self.normalise(ucb);
        let (mut gain, mut level) = (0.0, 0.0);
        for j in 0..WEIGHTS {
            let s = self.scalarise(j, &z);
            gain += (s - self.floors[j]).max(0.0);
            level += s;
        }
        (gain + 1e-6 * level) / WEIGHTS as f64
    }
}
