//! The posterior every GP designer's model holds: a fitted GP on the study's objective with the
//! sign that makes it a maximisation, the infeasible trials' penalty and the trials not to propose
//! again; fantasies for pending trials and batch members (the kriging-believer batch loop),
//! conditioning on new observations, predictions in the objective's units, and the level of the
//! constant prior mean. It knows nothing of acquisitions or candidate searches.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use super::output_warp::Warp;
use crate::designer::calibration::{ByRegion, Evidence};
use crate::designer::{FitError, Predictive};
use crate::gp::Gp;
use crate::study::{ObservationNoise, StudySpec};
use crate::trial::{Assignment, AssignmentKey, Observation, Outcome};

/// The noise variance of a fantasy observation (standardised units): as if measured exactly.
const FANTASY_NOISE: f64 = 1e-6;

/// `gp` conditioned on `points` as noise-free fantasies at its posterior mean: all at once, or —
/// when that factor cannot be extended, e.g. for a point already in the data — one at a time,
/// skipping those that cannot be added.
pub(crate) fn add_fantasies(gp: &mut Gp, encode: &dyn Fn(&Assignment) -> Vec<f64>, points: &[Assignment]) {
    let xs: Vec<Vec<f64>> = points.iter().map(encode).collect();
    let means: Vec<f64> = gp.predict(&xs).into_iter().map(|(m, _)| m).collect();
    if gp.condition_on(xs.clone(), means.clone(), Some(FANTASY_NOISE)).is_err() {
        for (x, m) in xs.into_iter().zip(means) {
            // Failing leaves the GP as it was; the fantasy is skipped (see above).
            let _ = gp.condition_on(vec![x], vec![m], Some(FANTASY_NOISE));
        }
    }
}

/// The level of a GP's constant prior mean, to which its posterior mean returns away from the
/// data. Fitting puts it at the observations' mean; an additive model's acquisition then finds
/// each group's unexplored corners as good as average, and with tens of groups it leaves the
/// incumbent for them (measured in docs/journal/benchmarks.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PriorMean {
    /// The observations' mean (Kandasamy et al. 2015's code).
    #[default]
    Mean,
    /// The worst observation: unexplored regions are assumed no better than the worst seen.
    Worst,
}

impl PriorMean {
    /// Moves `gp`'s prior mean to this level (θ unchanged).
    pub fn apply(self, gp: &mut Gp) {
        if self == PriorMean::Worst {
            let lowest = gp.y().iter().copied().fold(f64::INFINITY, f64::min);
            gp.set_prior_mean(lowest);
        }
    }
}

/// A fitted GP on a study's objective and what every GP model keeps with it: the sign that
/// makes it a maximisation, the warp of its outputs, the infeasible trials' penalty and the
/// trials not to propose again.
pub(crate) struct Posterior {
    pub gp: Gp,
    /// +1 to maximise the objective, −1 to minimise it (the GP models `g(sign · objective)`).
    pub sign: f64,
    /// The output warp `g`, frozen at the fit: new observations go through it too.
    pub warp: Warp,
    /// The objective's metric id.
    pub objective: String,
    /// The worst feasible value seen at the fit (`sign`-adjusted): infeasible trials' penalty.
    pub worst: f64,
    /// Keys of the assignments in the data (none when points may be measured again).
    pub taken: HashSet<AssignmentKey>,
    /// Whether the data's points may be proposed again (`observationNoise: HIGH`).
    pub repeats: bool,
    /// How much wider or narrower than the GP says its predictions must be, found from its
    /// leave-one-out residuals on the first prediction ([`ByRegion::of_gp`]) and kept by the
    /// posteriors conditioned on more trials (θ is the same; a refit finds it again).
    calibration: Arc<OnceLock<ByRegion>>,
    /// What the calibration is found from.
    evidence: Evidence,
}

impl Posterior {
    /// An estimate of the heap the posterior holds, in bytes: its GP and the keys of the points
    /// taken.
    pub fn memory_bytes(&self) -> usize {
        // The set's table: a key and a control byte per bucket.
        self.gp.memory_bytes() + self.taken.capacity() * (std::mem::size_of::<AssignmentKey>() + 1) + self.objective.capacity()
    }

    /// The posterior of `gp` fitted to `spec`'s objective (`sign`-adjusted, infeasible trials at
    /// `worst`, then warped by `warp`) over `history`.
    pub fn new(gp: Gp, sign: f64, warp: Warp, worst: f64, spec: &StudySpec, history: &[Observation]) -> Posterior {
        // Under `observationNoise: HIGH` a point may be measured again (a repeat tells the
        // model about the noise there, and a small discrete space is not used up by one look at
        // each point); otherwise the data's points are never proposed again.
        let repeats = spec.observation_noise == ObservationNoise::High;
        let taken = if repeats { HashSet::new() } else { history.iter().map(|o| o.assignment.key()).collect() };
        Posterior {
            gp,
            sign,
            warp,
            objective: spec.objective().id.clone(),
            worst,
            taken,
            repeats,
            calibration: Arc::default(),
            evidence: Evidence::LeaveOneOut,
        }
    }

    /// This posterior calibrated as a model whose structure was chosen on the same trials
    /// ([`Evidence::Refitted`], within the noise bounds of `noise`): `OVERLAP_ADD_GP`'s graph
    /// and length scales, sampled by their likelihood, whose leave-one-out residuals at the
    /// fitted θ flatter it (measured in docs/journal/benchmarks.md, "Calibration").
    pub fn chosen_on_its_trials(self, noise: ObservationNoise) -> Posterior {
        Posterior { evidence: Evidence::Refitted(super::schedule::noise_bounds(noise)), ..self }
    }

    /// The posterior conditioned on `new` completed trials (without refitting θ); `None` when
    /// one lacks the objective or the factor cannot be extended.
    pub fn observed(&self, new: &[Observation], encode: &dyn Fn(&Assignment) -> Vec<f64>) -> Option<Posterior> {
        let mut gp = self.gp.with_room(new.len());
        let mut taken = self.taken.clone();
        let mut xs = Vec::with_capacity(new.len());
        let mut ys = Vec::with_capacity(new.len());
        for o in new {
            let y = match &o.outcome {
                Outcome::Measured(m) => self.sign * *m.get(&self.objective)?,
                Outcome::Infeasible => self.worst,
            };
            xs.push(encode(&o.assignment));
            ys.push(gp.standardize_value(self.warp.apply(y)));
            if !self.repeats {
                taken.insert(o.assignment.key());
            }
        }
        gp.condition_on(xs, ys, None).ok()?;
        Some(self.with(gp, taken))
    }

    /// The same posterior from a fresh factorisation at the same θ (see [`Gp::refactored`]).
    pub fn refactored(&self) -> Option<Posterior> {
        Some(self.with(self.gp.refactored().ok()?, self.taken.clone()))
    }

    /// This posterior's objective, sign, warp and rules with another GP and trials taken.
    fn with(&self, gp: Gp, taken: HashSet<AssignmentKey>) -> Posterior {
        Posterior {
            gp,
            sign: self.sign,
            warp: self.warp.clone(),
            objective: self.objective.clone(),
            worst: self.worst,
            taken,
            repeats: self.repeats,
            calibration: self.calibration.clone(),
            evidence: self.evidence,
        }
    }

    /// Up to `count` new assignments chosen one at a time by the kriging believer (Ginsbourger
    /// et al. 2010): the pending trials, then each member chosen, are fantasies in a copy of the
    /// GP before the next member. `propose(gp, taken, k)` gives member `k` from the fantasised GP
    /// and the keys not to propose again (data, pending and members so far); `None` ends the
    /// batch early (a small discrete space used up).
    pub fn batch(
        &self,
        encode: &dyn Fn(&Assignment) -> Vec<f64>,
        pending: &[Assignment],
        count: usize,
        mut propose: impl FnMut(&Gp, &HashSet<AssignmentKey>, usize) -> Result<Option<Assignment>, FitError>,
    ) -> Result<Vec<Assignment>, FitError> {
        // One member and nothing pending — a sequential suggest — needs no fantasy, so no copy
        // of the factor (32 MB at 2,000 observations).
        let mut fantasised = (!pending.is_empty() || count > 1).then(|| {
            let mut gp = self.gp.with_room(pending.len() + count);
            add_fantasies(&mut gp, encode, pending);
            gp
        });
        let mut taken = self.taken.clone();
        taken.extend(pending.iter().map(Assignment::key));
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            let Some(a) = propose(fantasised.as_ref().unwrap_or(&self.gp), &taken, k)? else { break };
            taken.insert(a.key());
            if k + 1 < count
                && let Some(gp) = &mut fantasised
            {
                add_fantasies(gp, encode, std::slice::from_ref(&a));
            }
            out.push(a);
        }
        Ok(out)
    }

    /// The fitted hyperparameters by name (log scale), for a model's description.
    pub fn hyperparameter_map(&self) -> serde_json::Map<String, serde_json::Value> {
        let h = self.gp.hyperparameters();
        h.names.iter().zip(&h.kernel).map(|(name, v)| (name.clone(), serde_json::json!(v))).collect()
    }

    /// The GP's constant prior mean, in the objective's units.
    pub fn prior_mean(&self) -> f64 {
        self.sign * self.warp.invert(self.gp.unstandardize(0.0, 0.0).0)
    }

    /// How the GP's predictions are widened or narrowed ([`ByRegion::of_gp`]), found on first use.
    pub fn calibration(&self) -> &ByRegion {
        self.calibration.get_or_init(|| ByRegion::of_gp(&self.gp, self.evidence))
    }

    /// The predictive distribution of the objective, in its own units and direction (through a
    /// warp, see [`Warp::prediction`]).
    pub fn predictive(&self, points: &[Assignment], encode: &dyn Fn(&Assignment) -> Vec<f64>) -> Vec<Predictive<'_>> {
        let xs: Vec<Vec<f64>> = points.iter().map(encode).collect();
        Predictive::of_gp(&self.gp, &xs, &self.warp, self.sign, self.calibration())
    }
}
