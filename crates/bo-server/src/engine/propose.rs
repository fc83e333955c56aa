//! Proposals from a fitted model: the CPU work of a suggestion, as a plain function.
//!
//! Completed trials the model was not fitted on are observed by it (a GP conditions on their real
//! values by rank-one extensions of its factor) or, for designers that cannot, passed as pending;
//! the trials in flight, and `extra` points about to be handed out before these, are pending —
//! fantasies for the GP designers — so a slightly stale model never proposes what is being
//! evaluated. A designer that fails to propose gives way to quasi-random proposals (the study's
//! initial design), reported in [`Proposals::failed`]. The random generator is seeded from the study and the number of trials the
//! proposal comes after, so a precomputed k-th item equals what a suggest after k more trials
//! would have computed from the same model. Call it on a blocking thread.

use std::sync::Arc;

use bo_core::{Assignment, Model, Observation, Trial};
use bo_store::StudyRecord;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::cache::Entry;
use super::{EngineError, study_seed};

/// Up to `count` new assignments for `study` from `entry`'s model, given all its `trials` and the
/// `extra` points handed out before them (see the module docs).
pub fn propose(study: &StudyRecord, entry: &Entry, trials: &[Trial], extra: &[Assignment], count: usize) -> Result<Proposals, EngineError> {
    let after = (trials.len() + extra.len()) as u64;
    let mut rng = StdRng::seed_from_u64(study_seed(study) ^ after.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let (model, mut pending) = up_to_date(entry, trials);
    pending.extend(extra.iter().cloned());
    match super::refit::guarded(|| model.suggest(&pending, count, &mut rng)) {
        Ok(points) => Ok(Proposals { points, failed: None }),
        Err(e) => {
            // A designer that fails to propose (its numbers went wrong) gives way to the study's
            // initial design for this proposal; the next fit may do better. Never "exhausted".
            let fallback = super::refit::fallback_entry(study, entry.data_version, trials);
            let mut pending: Vec<Assignment> = trials.iter().map(|t| t.assignment.clone()).collect();
            pending.extend(extra.iter().cloned());
            let points = fallback.model.suggest(&pending, count, &mut rng)?;
            Ok(Proposals { points, failed: Some(e) })
        }
    }
}

/// `entry`'s model brought up to `trials`: the completions it has not seen observed (a GP
/// conditions on their values), and the points in flight for it — the running trials, and the
/// unseen completions of a model that cannot observe them.
fn up_to_date(entry: &Entry, trials: &[Trial]) -> (Arc<dyn Model>, Vec<Assignment>) {
    let unseen: Vec<Observation> =
        trials.iter().filter(|t| t.state.is_completed() && !entry.trial_ids.contains(&t.id)).filter_map(Observation::from_trial).collect();
    let updated = if unseen.is_empty() { None } else { entry.model.observe(&unseen) };
    let pending = trials
        .iter()
        .filter(|t| !t.state.is_completed() || (updated.is_none() && !entry.trial_ids.contains(&t.id)))
        .map(|t| t.assignment.clone())
        .collect();
    (updated.unwrap_or_else(|| entry.model.clone()), pending)
}

/// What [`propose`] gives: the points, and the designer's failure when quasi-random proposals
/// stood in for its own.
pub struct Proposals {
    /// The new assignments.
    pub points: Vec<Assignment>,
    /// Why the designer's own proposal failed, if it did.
    pub failed: Option<bo_core::FitError>,
}

/// One new assignment per context for `study` from `entry`'s model, given all its `trials`
/// (unseen completions observed, the rest in flight as [`propose`] treats them): each context
/// searched by `bo_core::designer::context::suggest_in`, the earlier contexts' proposals in
/// flight for the later ones. Call it on a blocking thread.
pub fn propose_in_contexts(
    study: &StudyRecord,
    entry: &Entry,
    trials: &[Trial],
    contexts: &[Assignment],
) -> Result<Vec<Assignment>, EngineError> {
    use bo_core::designer::context::{CANDIDATES, Slice, suggest_in};
    let mut rng = StdRng::seed_from_u64(study_seed(study) ^ (trials.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xc0_47e7);
    let (model, mut pending) = up_to_date(entry, trials);
    let objective = study.spec.objective();
    let best = trials
        .iter()
        .filter(|t| t.state == bo_core::TrialState::Succeeded)
        .filter_map(|t| t.final_measurement.as_ref()?.metrics.get(&objective.id).copied())
        .reduce(|a, b| if objective.goal.better(b, a) { b } else { a });
    let mut taken: std::collections::HashSet<String> = trials.iter().map(|t| t.assignment.key()).collect();
    // The search's work grows with the contexts only up to twice one context's: a request of
    // many shares the candidates (at least 100 each).
    let candidates = (2 * CANDIDATES / contexts.len().max(1)).clamp(100, CANDIDATES);
    let mut out = Vec::with_capacity(contexts.len());
    for context in contexts {
        let slice = Slice { space: &study.spec.space, goal: objective.goal, best, taken: &taken, candidates };
        let a = super::refit::guarded(|| suggest_in(model.as_ref(), &slice, context, &pending, &mut rng))?;
        taken.insert(a.key());
        pending.push(a.clone());
        out.push(a);
    }
    Ok(out)
}
