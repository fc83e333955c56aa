//! The engine's CPU side, in one place: everything that runs designer code, as plain functions
//! called on a blocking thread, and [`Engine::compute`], which runs them under a permit of the
//! engine's pool.
//!
//! - **A fit** (`build_entry`): partial trials observed at their predicted final values
//!   (`bo_core::stopping::partial`), the designer fitted or a stored fit restored, seeded by the
//!   study ([`study_seed`]); `fallback_entry` is the stand-in when a designer fails, the study's
//!   initial design.
//! - **Proposals** (`propose`, `propose_in_contexts`): completed trials the model was not fitted
//!   on are observed by it (a GP conditions on their real values by rank-one extensions of its
//!   factor) or, for designers that cannot, passed as pending; the trials in flight, and `extra`
//!   points about to be handed out before these, are pending — fantasies for the GP designers —
//!   so a slightly stale model never proposes what is being evaluated. A designer that fails to
//!   propose — an error, or fewer points than asked while the space has points left and its plan
//!   does not run out (`Model::runs_out`) — gives way to quasi-random proposals (the study's
//!   initial design) for the rest, reported in [`Proposals::failed`]. The random generator is
//!   seeded from the study and the number of trials the proposal comes after, so a precomputed
//!   k-th item equals what a suggest after k more trials would have computed from the same model.
//! - **A designer's panic** is a failure like any other (`guarded`).
//!
//! Must not: read or write the store, or hold a lock another request waits on.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bo_core::designer::{PriorStudy, QuasiRandomSearch};
use bo_core::stopping::partial::{self, Estimate};
use bo_core::{Assignment, Designer, FitError, Model, ModelState, Observation, Problem, Trial};
use bo_store::StudyRecord;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::cache::Entry;
use super::permits::{Claim, Class};
use super::{Engine, EngineError};

/// Up to `count` new assignments for `study` from `entry`'s model, given all its `trials` and the
/// `extra` points handed out before them (see the module docs).
pub fn propose(study: &StudyRecord, entry: &Entry, trials: &[Trial], extra: &[Assignment], count: usize) -> Result<Proposals, EngineError> {
    let after = (trials.len() + extra.len()) as u64;
    let mut rng = StdRng::seed_from_u64(study_seed(study) ^ after.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let (model, mut pending) = up_to_date(entry, trials);
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
    let fallback = fallback_entry(study, entry.data_version, trials);
    let mut pending: Vec<Assignment> = trials.iter().map(|t| t.assignment.clone()).collect();
    pending.extend(extra.iter().chain(&points).cloned());
    points.extend(fallback.model.suggest(&pending, count - points.len(), &mut rng)?);
    Ok(Proposals { points, failed: Some(failed) })
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

/// `entry`'s model brought up to `trials`: the completions it has not seen observed (a GP
/// conditions on their values), and the points in flight for it — the running trials, and the
/// unseen completions of a model that cannot observe them or that are partial (their final
/// value is predicted at the next refit, `bo_core::stopping::partial`).
pub(super) fn up_to_date(entry: &Entry, trials: &[Trial]) -> (Arc<dyn Model>, Vec<Assignment>) {
    let unseen = |t: &&Trial| t.state.is_completed() && !entry.trial_ids.contains(&t.id);
    let observable: Vec<Observation> =
        trials.iter().filter(unseen).filter(|t| !t.is_partial()).filter_map(Observation::from_trial).collect();
    let updated = if observable.is_empty() { None } else { entry.model.observe(&observable) };
    let pending = trials
        .iter()
        .filter(|t| !t.state.is_completed() || (!entry.trial_ids.contains(&t.id) && (updated.is_none() || t.is_partial())))
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

/// `designer` fitted on `study`'s `trials`, read at `data_version` — partial trials at their
/// `estimates`, standing on `priors`, warm-started from `warm` or, with `restore`, that stored
/// fit taken up as it is — as the cache entry. The trials are let go before the fit: where
/// this was their last holder (the mirror keeps them packed), a large study's decoded trials
/// and its observations are not held at once beside the designer's work.
#[allow(clippy::too_many_arguments)] // one fit's inputs, each distinct
pub(super) fn build_entry(
    designer: &dyn Designer,
    study: &StudyRecord,
    data_version: i64,
    trials: Arc<Vec<Trial>>,
    estimates: &BTreeMap<i64, Estimate>,
    priors: Vec<PriorStudy>,
    warm: Option<&ModelState>,
    restore: bool,
) -> Result<Entry, EngineError> {
    let history = partial::observations(&study.spec, &trials, estimates);
    let trial_ids = trials.iter().filter(|t| t.state.is_completed()).map(|t| t.id).collect::<HashSet<_>>();
    drop(trials);
    let seed = study_seed(study);
    let mut rng = StdRng::seed_from_u64(seed ^ (history.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let problem = Problem { spec: study.spec.clone(), seed, priors };
    let fitted = guarded(|| match warm {
        Some(state) if restore => designer.restore(&problem, &history, state, &mut rng),
        _ => designer.fit(&problem, &history, warm, &mut rng),
    })?;
    Ok(Entry {
        data_version,
        space_revision: study.spec.space_revision,
        trial_ids,
        fitted_on: if designer.learns() { bo_core::designer::subset::fitted_on(history.len()) } else { 0 },
        model: fitted.model,
        state: fitted.state,
        fallback: false,
        learns: designer.learns(),
    })
}

/// The stand-in for a designer that failed: the study's initial design (quasi-random, over the
/// tree), which cannot fail. Pure CPU work, small.
pub fn fallback_entry(study: &StudyRecord, data_version: i64, trials: &[Trial]) -> Entry {
    let problem = Problem { spec: study.spec.clone(), seed: study_seed(study), priors: Vec::new() };
    let history: Vec<Observation> = trials.iter().filter_map(Observation::from_trial).collect();
    let mut rng = StdRng::seed_from_u64(study_seed(study));
    let fitted = QuasiRandomSearch.fit(&problem, &history, None, &mut rng).expect("quasi-random search does not fail");
    Entry {
        data_version,
        space_revision: study.spec.space_revision,
        trial_ids: trials.iter().filter(|t| t.state.is_completed()).map(|t| t.id).collect(),
        fitted_on: 0,
        model: fitted.model,
        state: ModelState::default(),
        fallback: true,
        learns: false,
    }
}

/// Runs designer code so that a panic in it is a failure like any other (a `FitError` naming the
/// panic's message), not a lost request or a dead background job.
pub(crate) fn guarded<T>(work: impl FnOnce() -> Result<T, bo_core::FitError>) -> Result<T, bo_core::FitError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let message =
            panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
        Err(bo_core::FitError::Numerical(format!("the designer panicked: {message}")))
    })
}

/// The study's seed: its own (`algorithmConfig.seed`), else from its number (within its
/// project and location) and display name only, so nothing another tenant does changes what a
/// study proposes.
pub(crate) fn study_seed(study: &StudyRecord) -> u64 {
    if let Some(seed) = study.settings.seed {
        return (seed as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed;
    }
    // FNV-1a over the name, mixed with the number.
    let name_hash = study.display_name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (study.number as u64).wrapping_mul(0xd1b5_4a32_d192_ed03) ^ name_hash
}

/// How much less CPU priority a background computation's thread takes (nice, 0–19).
const BACKGROUND_NICENESS: i32 = 10;

/// Lowers the calling thread's CPU priority by [`BACKGROUND_NICENESS`] (a thread may lower its
/// own without privileges, but not raise it again: so only on a thread of its own). Where it
/// cannot, the work runs at the usual priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let me = Some(rustix::thread::gettid());
        if let Ok(now) = getpriority_process(me) {
            let _ = setpriority_process(me, (now + BACKGROUND_NICENESS).min(19));
        }
    }
}

pub(super) fn panicked(e: tokio::task::JoinError) -> EngineError {
    EngineError::Fit(FitError::Numerical(format!("the designer panicked: {e}")))
}

impl Engine {
    /// Runs `work` — the engine's CPU work: a fit, proposals, predictions, importance, a front —
    /// under a permit of the pool claimed for `study` as `class` (`permits.rs`: fair between
    /// projects and studies, yielding at the computation's checkpoints). A request's work runs
    /// on the runtime's blocking pool; background work on a thread of its own at a lower CPU
    /// priority (nice +10), so on a busy machine requests' computations go first. A panic in
    /// `work` is a designer failure, and gives the permit back.
    pub(crate) async fn compute<T: Send + 'static>(
        &self,
        study: &StudyRecord,
        class: Class,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, EngineError> {
        let permit = self.inner.permits.acquire(Claim::new(&study.project, study.id, class)).await;
        match class {
            Class::Waited => tokio::task::spawn_blocking(move || permit.run(work)).await.map_err(panicked),
            Class::Background => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                std::thread::Builder::new()
                    .name("bo-background".into())
                    .spawn(move || {
                        lower_priority();
                        let _ = tx.send(permit.run(work));
                    })
                    .map_err(|e| EngineError::Fit(FitError::Numerical(format!("no thread for a background computation: {e}"))))?;
                rx.await.map_err(|_| EngineError::Fit(FitError::Numerical("a background computation panicked".to_owned())))
            }
        }
    }
}

/// Fits `study`'s designer on `trials`, read at `data_version` (warm-started from `warm`),
/// returning the cache entry, as a test asks for one.
#[cfg(test)]
pub fn fit_entry(study: &StudyRecord, data_version: i64, trials: &[Trial], warm: Option<&ModelState>) -> Result<Entry, EngineError> {
    build_entry(
        bo_core::designer::designer_for(&study.spec)?.as_ref(),
        study,
        data_version,
        Arc::new(trials.to_vec()),
        &BTreeMap::new(),
        Vec::new(),
        warm,
        false,
    )
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

    fn entry(n: usize, runs_out: bool) -> Entry {
        Entry {
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
        let got = propose(&study, &entry(0, false), &[], &[], 2).unwrap();
        assert_eq!(got.points.len(), 2, "the quasi-random design fills in");
        assert!(matches!(got.failed, Some(FitError::TooFewProposals { proposed: 0, asked: 2 })), "{:?}", got.failed);
        let got = propose(&study, &entry(1, false), &[], &[], 2).unwrap();
        assert_eq!(got.points[0], point("a"), "the designer's own point is kept");
        assert_ne!(got.points[1], point("a"));
        assert!(matches!(got.failed, Some(FitError::TooFewProposals { proposed: 1, asked: 2 })));
    }

    #[tokio::test]
    async fn too_few_proposals_end_the_study_only_when_the_space_or_the_plan_is_used_up() {
        let study = three_points().await;
        let all = [point("a"), point("b"), point("c")];
        let got = propose(&study, &entry(0, false), &[], &all, 1).unwrap();
        assert!(got.points.is_empty() && got.failed.is_none(), "every point taken: used up");
        let got = propose(&study, &entry(0, true), &[], &[], 1).unwrap();
        assert!(got.points.is_empty() && got.failed.is_none(), "a plan that runs out (a grid) is believed");
    }
}
