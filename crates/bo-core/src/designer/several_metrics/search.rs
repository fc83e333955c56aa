//! The gradient-free search for a batch's members, as OSS Vizier's evolutionary acquisition
//! optimiser: quasi-random points, perturbations of the front, each model's own proposal, then
//! finer perturbations around the best with coordinates snapped onto nearby bounds; pending
//! trials and chosen members as fantasies (the kriging believer).
//!
//! Must not: fit a model (it conditions the fitted ones on fantasies only).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rand::{Rng, RngExt};

use super::acquisition::Acquisition;
use super::model::{MetricsModel, Point, sign};
use crate::designer::{FitError, Model};
use crate::optimize::mixed::standard_normal;
use crate::optimize::sobol::sobol_point;
use crate::space::SearchSpace;
use crate::trial::{Assignment, AssignmentKey, Observation, Outcome};

/// Quasi-random candidates per batch member.
pub(super) const SOBOL_CANDIDATES: usize = 1000;
/// Front trials explored around, and perturbations of each.
pub(super) const ANCHORS: usize = 24;
pub(super) const PER_ANCHOR: usize = 16;
/// Refinement: rounds, the best candidates each explores around, perturbations of each, and the
/// perturbations' deviation (unit cube) in each round.
pub(super) const REFINE_TOP: usize = 8;
pub(super) const REFINE_PER: usize = 24;
pub(super) const REFINE_SCALES: [f64; 2] = [0.02, 0.005];

/// `n` Gaussian perturbations of `a` in the unit cube (deviation `sd`), decoded with `fixed`'s
/// values (a context; empty for none).
pub(super) fn perturb(space: &SearchSpace, a: &Assignment, n: usize, sd: f64, fixed: &Assignment, rng: &mut dyn Rng) -> Vec<Assignment> {
    let u0 = space.encode(a);
    (0..n)
        .map(|_| {
            let u: Vec<f64> = u0.iter().map(|v| (v + sd * standard_normal(rng)).clamp(0.0, 1.0)).collect();
            space.decode_fixed(&u, fixed)
        })
        .collect()
}

/// `n` copies of `a` with a random half of its coordinates within 0.1 of a bound of the unit
/// cube moved onto it (optima on a bound are common: no dropout, the smallest size), decoded
/// with `fixed`'s values.
pub(super) fn snap(space: &SearchSpace, a: &Assignment, n: usize, fixed: &Assignment, rng: &mut dyn Rng) -> Vec<Assignment> {
    let u0 = space.encode(a);
    (0..n)
        .map(|_| {
            let u: Vec<f64> = u0
                .iter()
                .map(|&v| match v {
                    v if v < 0.1 && rng.random_bool(0.5) => 0.0,
                    v if v > 0.9 && rng.random_bool(0.5) => 1.0,
                    v => v,
                })
                .collect();
            space.decode_fixed(&u, fixed)
        })
        .collect()
}

/// The indices of the non-dominated points among `values` (maximised).
pub(super) fn front(values: &[(usize, &Vec<f64>)]) -> Vec<usize> {
    let dominates = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y);
    let mut sorted: Vec<&(usize, &Vec<f64>)> = values.iter().collect();
    sorted.sort_by(|a, b| b.1.iter().sum::<f64>().total_cmp(&a.1.iter().sum::<f64>()));
    let mut out: Vec<(usize, &Vec<f64>)> = Vec::new();
    for &&(i, v) in &sorted {
        if !out.iter().any(|(_, f)| dominates(f, v) || *f == v) {
            out.push((i, v));
        }
    }
    out.into_iter().map(|(i, _)| i).collect()
}

/// A candidate's score: whether it meets the hard safety constraints, then its log acquisition.
pub(super) type Score = (bool, f64);

pub(super) fn better(a: &Score, b: &Score) -> bool {
    (a.0, a.1) > (b.0, b.1)
}

impl MetricsModel {
    /// The models with `points` observed at their own posterior means (fantasies), or unchanged
    /// where a model cannot observe, and each point's oriented predictions `[point][metric]`.
    pub(super) fn with_fantasies(
        &self,
        models: &[Arc<dyn Model>],
        points: &[Assignment],
    ) -> Result<(Vec<Arc<dyn Model>>, Vec<Vec<f64>>), FitError> {
        if points.is_empty() {
            return Ok((models.to_vec(), Vec::new()));
        }
        let predicted = Self::oriented(models, &self.metrics, points)?;
        let updated = models
            .iter()
            .zip(&self.metrics)
            .zip(&predicted)
            .map(|((m, spec), p)| {
                let fantasies: Vec<Observation> = points
                    .iter()
                    .zip(p)
                    .map(|(a, (mean, _))| Observation {
                        objective_sd: None,
                        assignment: a.clone(),
                        outcome: Outcome::Measured(BTreeMap::from([(spec.id.clone(), sign(spec.goal) * mean)])),
                    })
                    .collect();
                m.conditioning().and_then(|c| c.observe(&fantasies)).unwrap_or_else(|| m.clone())
            })
            .collect();
        let values = (0..points.len()).map(|j| predicted.iter().map(|p| p[j].0).collect()).collect();
        Ok((updated, values))
    }

    /// Raises the floor to fantasised values predicted safe.
    pub(super) fn raise_floor(&self, acquisition: &mut Acquisition, predicted: &[Vec<f64>]) {
        for v in predicted {
            if acquisition.predicted_safe(v, self.k) {
                acquisition.gain.raise_floor(&v[..self.k]);
            }
        }
    }

    /// The trials explored around: the front of the safe trials (of all, before any is safe).
    pub(super) fn anchors(&self) -> Vec<usize> {
        let measured = |safe_only: bool| -> Vec<(usize, &Vec<f64>)> {
            self.points
                .iter()
                .enumerate()
                .filter(|(_, p)| !safe_only || p.is_safe())
                .filter_map(|(i, p)| p.values.as_ref().map(|v| (i, v)))
                .collect()
        };
        let safe = measured(true);
        if safe.is_empty() { front(&measured(false)) } else { front(&safe) }
    }

    /// One batch member: the best-scoring new assignment over the candidate rounds, within
    /// `context` (every candidate takes its values; empty for none).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn member(
        &self,
        models: &[Arc<dyn Model>],
        acquisition: &Acquisition,
        taken: &HashSet<AssignmentKey>,
        pending: &[Assignment],
        front: &[usize],
        context: &Assignment,
        rng: &mut dyn Rng,
    ) -> Result<Option<Assignment>, FitError> {
        let d = self.space.n_params();
        let seed: u64 = rng.random();
        let offset: u64 = rng.random_range(0..1 << 15);
        let mut candidates: Vec<Assignment> =
            (0..SOBOL_CANDIDATES as u64).map(|i| self.space.decode_fixed(&sobol_point(offset + i, d, seed), context)).collect();
        let mut anchors = front.to_vec();
        if anchors.len() > ANCHORS {
            // A random share of a large front, so every part of it is explored over a study.
            for i in 0..ANCHORS {
                let j = rng.random_range(i..anchors.len());
                anchors.swap(i, j);
            }
            anchors.truncate(ANCHORS);
        }
        for &i in &anchors {
            candidates.extend(perturb(&self.space, &self.points[i].assignment, PER_ANCHOR / 2, 0.05, context, rng));
            candidates.extend(perturb(&self.space, &self.points[i].assignment, PER_ANCHOR / 2, 0.15, context, rng));
        }
        // Each metric's own designer, searching its model (with the in-flight trials as its own
        // fantasies) for that metric alone: an objective's optimum (the front's ends), a safety
        // metric's safest point.
        for m in &self.models {
            let own = m.suggest(pending, 1, rng)?;
            if context.0.is_empty() {
                candidates.extend(own);
            } else {
                candidates.extend(own.iter().map(|a| self.space.decode_fixed(&self.space.encode(a), context)));
            }
        }
        let mut best: Option<(Score, Assignment)> = None;
        let mut scored = self.score(models, acquisition, taken, candidates)?;
        for sd in REFINE_SCALES {
            if let Some(top) = scored.first()
                && best.as_ref().is_none_or(|(s, _)| better(&top.0, s))
            {
                best = Some(top.clone());
            }
            let mut around: Vec<Assignment> =
                scored.iter().take(REFINE_TOP).flat_map(|(_, a)| perturb(&self.space, a, REFINE_PER, sd, context, rng)).collect();
            around.extend(scored.iter().take(REFINE_TOP).flat_map(|(_, a)| snap(&self.space, a, REFINE_PER / 2, context, rng)));
            scored = self.score(models, acquisition, taken, around)?;
        }
        if let Some(top) = scored.into_iter().next()
            && best.as_ref().is_none_or(|(s, _)| better(&top.0, s))
        {
            best = Some(top);
        }
        Ok(best.map(|(_, a)| a))
    }

    /// `candidates` not taken, deduplicated, scored and sorted best first.
    pub(super) fn score(
        &self,
        models: &[Arc<dyn Model>],
        acquisition: &Acquisition,
        taken: &HashSet<AssignmentKey>,
        candidates: Vec<Assignment>,
    ) -> Result<Vec<(Score, Assignment)>, FitError> {
        let mut seen = HashSet::with_capacity(candidates.len());
        let fresh: Vec<Assignment> = candidates
            .into_iter()
            .filter(|a| {
                let key = a.key();
                !taken.contains(&key) && seen.insert(key)
            })
            .collect();
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let predicted = Self::oriented(models, &self.metrics, &fresh)?;
        let mut row = Vec::with_capacity(self.metrics.len());
        let mut scored: Vec<(Score, Assignment)> = fresh
            .into_iter()
            .enumerate()
            .map(|(j, a)| {
                row.clear();
                row.extend(predicted.iter().map(|p| p[j]));
                (acquisition.score(&row, self.k), a)
            })
            .filter(|(s, _)| !s.1.is_nan())
            .collect();
        scored.sort_by(|a, b| b.0.0.cmp(&a.0.0).then(b.0.1.total_cmp(&a.0.1)));
        Ok(scored)
    }

    pub(super) fn with_models(&self, models: Vec<Arc<dyn Model>>, points: Vec<Point>) -> Arc<dyn Model> {
        Arc::new(MetricsModel {
            space: self.space.clone(),
            metrics: self.metrics.clone(),
            models,
            k: self.k,
            points,
            classify: self.classify,
        })
    }
}

impl MetricsModel {
    /// Up to `count` members within `context` (empty: the whole space).
    pub(super) fn suggest_within(
        &self,
        pending: &[Assignment],
        count: usize,
        context: &Assignment,
        rng: &mut dyn Rng,
    ) -> Result<Vec<Assignment>, FitError> {
        let mut acquisition = self.acquisition(rng);
        let (mut models, fantasised) = self.with_fantasies(&self.models, pending)?;
        self.raise_floor(&mut acquisition, &fantasised);
        let mut taken: HashSet<AssignmentKey> =
            self.points.iter().map(|p| p.assignment.key()).chain(pending.iter().map(Assignment::key)).collect();
        let mut in_flight = pending.to_vec();
        // The data's front, once: the members explore around it.
        let anchors = self.anchors();
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            let Some(a) = self.member(&models, &acquisition, &taken, &in_flight, &anchors, context, rng)? else { break };
            taken.insert(a.key());
            if k + 1 < count {
                let (next, values) = self.with_fantasies(&models, std::slice::from_ref(&a))?;
                models = next;
                self.raise_floor(&mut acquisition, &values);
            }
            in_flight.push(a.clone());
            out.push(a);
        }
        Ok(out)
    }
}
