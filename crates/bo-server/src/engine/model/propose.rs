//! Proposals from a fitted model, as CPU work: plain functions a blocking thread runs.
//! Completed trials the model was not fitted on are observed by it (a GP conditions on their
//! real values by rank-one extensions of its factor) or, for designers that cannot, passed as
//! pending; the trials in flight, and `extra` points about to be handed out before these, are
//! pending — fantasies for the GP designers — so a slightly stale model never proposes what is
//! being evaluated. A designer that fails to propose — an error, or fewer points than asked
//! while the space has points left and its plan does not run out (`Model::runs_out`) — gives way
//! to quasi-random proposals (the study's initial design) for the rest, reported in
//! [`Proposals::failed`]. The random generator is seeded from the study and the number of
//! trials the proposal comes after, so a precomputed k-th item equals what a suggest after k
//! more trials would have computed from the same model.
//!
//! Must not: read or write the store, or hold a lock another request waits on.

use std::collections::HashSet;
use std::sync::Arc;

use bo_core::{Assignment, Model, Observation, Trial};
use bo_store::StudyRecord;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::{FittedModel, guarded, study_seed};
use crate::engine::EngineError;

impl FittedModel {
    /// Up to `count` new assignments for `study` from the model, given all its `trials` and the
    /// `extra` points handed out before them (see the module docs).
    pub fn propose(&self, study: &StudyRecord, trials: &[Trial], extra: &[Assignment], count: usize) -> Result<Proposals, EngineError> {
        let after = (trials.len() + extra.len()) as u64;
        let mut rng = StdRng::seed_from_u64(study_seed(study) ^ after.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (model, mut pending) = self.up_to_date(trials);
        pending.extend(extra.iter().cloned());
        let (mut points, failed) = match guarded(|| model.suggest(&pending, count, &mut rng)) {
            Ok(points) if points.len() >= count || model.runs_out() || used_up(study, trials, extra, &points) => {
                return Ok(Proposals { points, failed: None });
            }
            // Fewer than asked while the space has points left: a failure, not an exhausted space.
            Ok(points) => {
                let e = bo_core::FitError::TooFewProposals { proposed: points.len(), asked: count };
                (points, e)
            }
            Err(e) => (Vec::new(), e),
        };
        // A designer that fails to propose (its numbers went wrong, or it found nothing) gives way
        // to the study's initial design for the rest of this proposal; the next fit may do better.
        // Never "exhausted".
        let stand_in = FittedModel::stand_in(study, self.data_version, trials);
        let mut pending: Vec<Assignment> = trials.iter().map(|t| t.assignment.clone()).collect();
        pending.extend(extra.iter().chain(&points).cloned());
        points.extend(stand_in.model.suggest(&pending, count - points.len(), &mut rng)?);
        Ok(Proposals { points, failed: Some(failed) })
    }

    /// The model brought up to `trials`: the completions it has not seen observed (a GP
    /// conditions on their values), and the points in flight for it — the running trials, and the
    /// unseen completions of a model that cannot observe them or that are partial (their final
    /// value is predicted at the next refit, `bo_core::stopping::partial`).
    pub fn up_to_date(&self, trials: &[Trial]) -> (Arc<dyn Model>, Vec<Assignment>) {
        let unseen = |t: &&Trial| t.state.is_completed() && !self.trial_ids.contains(&t.id);
        let observable: Vec<Observation> =
            trials.iter().filter(unseen).filter(|t| !t.is_partial()).filter_map(Observation::from_trial).collect();
        let updated = if observable.is_empty() { None } else { self.model.conditioning().and_then(|c| c.observe(&observable)) };
        let pending = trials
            .iter()
            .filter(|t| !t.state.is_completed() || (!self.trial_ids.contains(&t.id) && (updated.is_none() || t.is_partial())))
            .map(|t| t.assignment.clone())
            .collect();
        (updated.unwrap_or_else(|| self.model.clone()), pending)
    }

    /// One new assignment per context for `study` from the model, given all its `trials`
    /// (unseen completions observed, the rest in flight as [`FittedModel::propose`] treats them): each context
    /// searched by `bo_core::designer::context::suggest_in`, the earlier contexts' proposals in
    /// flight for the later ones. Call it on a blocking thread.
    pub fn propose_in_contexts(
        &self,
        study: &StudyRecord,
        trials: &[Trial],
        contexts: &[Assignment],
    ) -> Result<Vec<Assignment>, EngineError> {
        use bo_core::designer::context::{CANDIDATES, Slice, suggest_in};
        let mut rng = StdRng::seed_from_u64(study_seed(study) ^ (trials.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xc0_47e7);
        let (model, mut pending) = self.up_to_date(trials);
        let objective = study.spec.objective();
        let best = trials
            .iter()
            .filter(|t| t.state == bo_core::TrialState::Succeeded)
            .filter_map(|t| t.final_measurement.as_ref()?.metrics.get(&objective.id).copied())
            .reduce(|a, b| if objective.goal.better(b, a) { b } else { a });
        let mut taken: std::collections::HashSet<bo_core::AssignmentKey> = trials.iter().map(|t| t.assignment.key()).collect();
        // The search's work grows with the contexts only up to twice one context's: a request of
        // many shares the candidates (at least 100 each).
        let candidates = (2 * CANDIDATES / contexts.len().max(1)).clamp(100, CANDIDATES);
        let mut out = Vec::with_capacity(contexts.len());
        for context in contexts {
            let slice = Slice { space: &study.spec.space, goal: objective.goal, best, taken: &taken, candidates };
            let a = guarded(|| suggest_in(model.as_ref(), &slice, context, &pending, &mut rng))?;
            taken.insert(a.key());
            pending.push(a.clone());
            out.push(a);
        }
        Ok(out)
    }
}

/// Whether the study's space has no point left beside its trials, the `extra` points and the
/// new `points`: only a space without a real parameter can be used up. In an open study only
/// points of the space as it stands count (a trial of an earlier revision lacks parameters
/// added since, and takes no point of this space), and a space with no parameter yet is never
/// used up.
fn used_up(study: &StudyRecord, trials: &[Trial], extra: &[Assignment], points: &[Assignment]) -> bool {
    let space = &study.spec.space;
    if space.n_params() == 0 {
        return false;
    }
    let Some(size) = space.point_count() else {
        return false;
    };
    let counts = |a: &&Assignment| !study.spec.open_space || space.is_complete(a);
    let taken: HashSet<bo_core::AssignmentKey> =
        trials.iter().map(|t| &t.assignment).chain(extra).chain(points).filter(counts).map(Assignment::key).collect();
    taken.len() as u128 >= size
}

/// What [`FittedModel::propose`] gives: the points, and the designer's failure when quasi-random proposals
/// stood in for its own.
pub struct Proposals {
    /// The new assignments.
    pub points: Vec<Assignment>,
    /// Why the designer's own proposal failed, if it did.
    pub failed: Option<bo_core::FitError>,
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use bo_core::{Domain, FitError, ModelState, ParamSpec, ParamValue, Scale, SearchSpace};

    use super::*;
    use crate::engine::testing;

    /// The point `k = value`.
    fn point(value: &str) -> Assignment {
        let mut a = Assignment::default();
        a.insert("k", ParamValue::Categorical(value.into()));
        a
    }

    /// A model proposing the first `n` of `k`'s values, whose plan may run out.
    struct Proposes {
        n: usize,
        runs_out: bool,
    }

    impl Model for Proposes {
        fn suggest(&self, _: &[Assignment], count: usize, _: &mut dyn rand::Rng) -> Result<Vec<Assignment>, FitError> {
            Ok(["a", "b", "c"].iter().take(self.n.min(count)).map(|v| point(v)).collect())
        }

        fn runs_out(&self) -> bool {
            self.runs_out
        }
    }

    /// A study over `k ∈ {a, b, c}`: three points in all.
    async fn three_points() -> StudyRecord {
        let store = testing::store().await;
        let mut study = testing::study(&store, "three", serde_json::Value::Null).await;
        let k = ParamSpec {
            id: "k".into(),
            domain: Domain::Categorical { values: vec!["a".into(), "b".into(), "c".into()] },
            scale: Scale::Linear,
            default: None,
            children: vec![],
        };
        study.spec.space = SearchSpace::new(vec![k]).unwrap();
        study
    }

    fn fitted(n: usize, runs_out: bool) -> FittedModel {
        FittedModel {
            data_version: 0,
            space_revision: 0,
            trial_ids: HashSet::new(),
            fitted_on: 0,
            model: Arc::new(Proposes { n, runs_out }),
            state: ModelState::default(),
            fallback: false,
            learns: true,
        }
    }

    #[tokio::test]
    async fn too_few_proposals_with_points_left_are_a_failure_filled_quasi_randomly() {
        let study = three_points().await;
        let got = fitted(0, false).propose(&study, &[], &[], 2).unwrap();
        assert_eq!(got.points.len(), 2, "the quasi-random design fills in");
        assert!(matches!(got.failed, Some(FitError::TooFewProposals { proposed: 0, asked: 2 })), "{:?}", got.failed);
        let got = fitted(1, false).propose(&study, &[], &[], 2).unwrap();
        assert_eq!(got.points[0], point("a"), "the designer's own point is kept");
        assert_ne!(got.points[1], point("a"));
        assert!(matches!(got.failed, Some(FitError::TooFewProposals { proposed: 1, asked: 2 })));
    }

    #[tokio::test]
    async fn too_few_proposals_end_the_study_only_when_the_space_or_the_plan_is_used_up() {
        let study = three_points().await;
        let all = [point("a"), point("b"), point("c")];
        let got = fitted(0, false).propose(&study, &[], &all, 1).unwrap();
        assert!(got.points.is_empty() && got.failed.is_none(), "every point taken: used up");
        let got = fitted(0, true).propose(&study, &[], &[], 1).unwrap();
        assert!(got.points.is_empty() && got.failed.is_none(), "a plan that runs out (a grid) is believed");
    }
}
