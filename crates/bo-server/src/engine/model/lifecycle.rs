//! A fitted model's lifecycle in the engine, around the CPU work of `fit.rs`: which model a
//! suggest uses (`Engine::model_for`: the cached one, else one fitted or taken up now), what a
//! fit needs read first (prior studies; partial trials' estimates, `Engine::partial_estimates`,
//! by the stopping rules' decay-curve model), its run under a permit
//! (`Engine::fit`, `Engine::restore`), the warm start (cache, else database), keeping the result
//! (database and cache), and `Engine::refit_study`, which chains them. A background refit that
//! fails leaves the cached model as it was: the study keeps its last model; a suggest's fit that
//! fails gets the stand-in until one succeeds.

use std::collections::BTreeMap;
use std::sync::Arc;

use bo_core::stopping::partial::{self, Estimate};
use bo_core::{Goal, ModelState, Trial, TrialState};
use bo_store::{Basis, Store, StoreError, StoredModel, StudyRecord};

use super::{FittedModel, ModelCache};
use crate::engine::permits::Class;
use crate::engine::slot::Job;
use crate::engine::{Engine, EngineError};
use crate::metrics::FailedStage;

/// What a refit did.
#[derive(Debug, PartialEq, Eq)]
pub enum RefitOutcome {
    /// Fitted on this data version.
    Fitted {
        /// The study's data version fitted on.
        data_version: i64,
    },
    /// Another replica held the refit lease: its stored fit was taken up (or the cached model
    /// had already seen this data version).
    Adopted {
        /// The study's data version the model now covers.
        data_version: i64,
    },
    /// The study no longer exists.
    Gone,
}

/// How a fit of data version `target` starts: from another replica's stored fit of that very
/// version (taken up as it is, no search), or warm-started from the newest state of an earlier
/// version — this replica's cached one or the stored one, whichever is newer (the cached one on
/// a tie) — or cold.
#[derive(Debug, PartialEq)]
pub(crate) enum Start {
    Adopt(ModelState),
    Warm(Option<ModelState>),
}

/// [`Start`] from this replica's cached model and the stored one. A lone server always
/// warm-starts version v from its own fit of v - 1; with replicas taking turns, this replica's
/// cache can hold its own fit of v - 2 while the database has the other's of v - 1 (or of v):
/// warm-starting from the older one made a reproducible study's trials depend on which replica
/// had fitted last.
pub(crate) fn start_from(cached: Option<&FittedModel>, stored: Option<StoredModel>, target: i64, revision: i64) -> Start {
    // A state fitted for another revision of an open study's space has other dimensions.
    let stored = stored.filter(|s| s.space_revision == revision);
    let cached = cached.filter(|e| e.space_revision == revision);
    match stored {
        Some(s) if s.data_version == target => Start::Adopt(s.state),
        stored => Start::Warm(newest_before(cached, stored, target)),
    }
}

/// The newer of the cached state and the stored one among those fitted before `target` (the
/// cached one on a tie); a stand-in has no state to start from.
fn newest_before(cached: Option<&FittedModel>, stored: Option<StoredModel>, target: i64) -> Option<ModelState> {
    let cached = cached.filter(|e| !e.fallback && e.data_version < target);
    match stored.filter(|s| s.data_version < target) {
        Some(s) if cached.is_none_or(|c| s.data_version > c.data_version) => Some(s.state),
        _ => cached.map(|c| c.state.clone()),
    }
}

/// The state to warm-start a fit of data version `target`: the newest fitted before it, cached
/// or stored (see [`start_from`], for callers that can also take up a stored fit of `target`).
pub(crate) async fn warm_state(
    store: &Store,
    cache: &ModelCache,
    study: &StudyRecord,
    target: i64,
) -> Result<Option<ModelState>, EngineError> {
    let revision = study.spec.space_revision;
    let stored = store.model_state(study.id).await?.filter(|s| s.space_revision == revision);
    Ok(newest_before(cache.get(study.id, revision).as_deref(), stored, target))
}

impl Engine {
    /// The study's cached model — for a reproducible study only the one of `basis`'s data
    /// version — else one fitted now on `trials` (warm-started) and kept; the flag says which. A
    /// fit under way for the study (the background refit) ends first, and is used if it is the
    /// one wanted. A cached model fallen behind the data ([`FittedModel::keeps_up`]) proposes only
    /// when its refit has not caught up within the engine's `lag_wait`. A fit that fails is
    /// logged and counted, and the study's initial design (quasi-random) stands in until a later
    /// fit succeeds.
    pub(crate) async fn model_for(
        &self,
        study: &StudyRecord,
        basis: Basis,
        trials: &Arc<Vec<Trial>>,
    ) -> Result<(Arc<FittedModel>, bool), EngineError> {
        let reproducible = self.reproducible(study);
        if !reproducible && let Some(fitted) = self.inner.cache.get(study.id, study.spec.space_revision) {
            if fitted.keeps_up(basis.data_version, trials) {
                return Ok((fitted, false));
            }
            // Fallen behind: the refit (scheduled by every completion; asked again in case)
            // catches up, and the suggest waits for it a bounded time.
            self.schedule(study, Job { refit: true, ..Job::default() });
            let deadline = tokio::time::Instant::now() + self.inner.config.lag_wait;
            let ready = |e: &FittedModel| e.keeps_up(basis.data_version, trials);
            return Ok((self.inner.cache.wait_for(study.id, study.spec.space_revision, deadline, ready).await.unwrap_or(fitted), false));
        }
        let usable = |e: &Arc<FittedModel>| !reproducible || e.data_version == basis.data_version;
        if let Some(fitted) = self.inner.cache.get(study.id, study.spec.space_revision).filter(usable) {
            return Ok((fitted, false));
        }
        let slot = self.inner.slots.get(study.id);
        let _fitting = slot.fitting.lock().await;
        if let Some(fitted) = self.inner.cache.get(study.id, study.spec.space_revision).filter(usable) {
            return Ok((fitted, false));
        }
        // Another replica may have fitted this very version (it took the completion and the
        // refit lease): take its fit up, as a lone server would have fitted it.
        let stored = self.inner.store.model_state(study.id).await?;
        let warm = match start_from(
            self.inner.cache.get(study.id, study.spec.space_revision).as_deref(),
            stored,
            basis.data_version,
            study.spec.space_revision,
        ) {
            Start::Adopt(state) => match self.restore(study, basis.data_version, Arc::clone(trials), state).await {
                Ok(fitted) => {
                    self.inner.cache.insert(study.id, fitted.clone());
                    return Ok((fitted, true));
                }
                Err(e) => {
                    tracing::warn!(study = study.id, error = %e, "could not take up another replica's fit; fitting here");
                    warm_state(&self.inner.store, &self.inner.cache, study, basis.data_version).await?
                }
            },
            Start::Warm(state) => state,
        };
        let fitted = match self.fit(study, basis.data_version, Arc::clone(trials), warm, Class::Waited).await {
            Ok(fitted) => fitted,
            Err(EngineError::Fit(e)) => {
                tracing::warn!(study = study.id, error = %e, "the designer failed to fit; quasi-random proposals stand in until a fit succeeds");
                self.inner.metrics.fallback(FailedStage::Fit);
                Arc::new(FittedModel::stand_in(study, basis.data_version, trials))
            }
            Err(e) => return Err(e),
        };
        if let Err(e) = keep(&self.inner.store, &self.inner.cache, study.id, fitted.clone()).await {
            tracing::warn!(study = study.id, error = %e, "could not keep a fitted model");
        }
        Ok((fitted, true))
    }

    /// Fits `study`'s designer on `trials` (read at `data_version`, warm-started from `warm`)
    /// under a permit of the engine's pool (`Engine::compute`): as a request's computation
    /// (`Class::Waited`: a suggest's fit, or the refit after a completion, which a suggest waits
    /// for once the cached model falls behind) or as background work nobody waits for
    /// (importance computed ahead).
    pub(crate) async fn fit(
        &self,
        study: &StudyRecord,
        data_version: i64,
        trials: Arc<Vec<Trial>>,
        warm: Option<ModelState>,
        class: Class,
    ) -> Result<Arc<FittedModel>, EngineError> {
        self.build(study, data_version, trials, warm, false, class).await
    }

    /// The model another replica's stored fit (`state`) describes, rebuilt on `trials` without a
    /// search ([`bo_core::designer::Designer::restore`]), under a permit.
    pub(crate) async fn restore(
        &self,
        study: &StudyRecord,
        data_version: i64,
        trials: Arc<Vec<Trial>>,
        state: ModelState,
    ) -> Result<Arc<FittedModel>, EngineError> {
        self.build(study, data_version, trials, Some(state), true, Class::Waited).await
    }

    async fn build(
        &self,
        study: &StudyRecord,
        data_version: i64,
        trials: Arc<Vec<Trial>>,
        warm: Option<ModelState>,
        restore: bool,
        class: Class,
    ) -> Result<Arc<FittedModel>, EngineError> {
        self.inner.hooks.reached(crate::engine::hooks::Point::Fit).await?;
        let priors = crate::engine::priors::load_priors(&self.inner.store, study).await?;
        let estimates = self.partial_estimates(study, &trials).await?;
        let designer = self.designer(study)?;
        let owned = study.clone();
        let fitted = self
            .compute(study, class, move || {
                FittedModel::fit(designer.as_ref(), &owned, data_version, trials, &estimates, priors, warm.as_ref(), restore)
            })
            .await??;
        Ok(Arc::new(fitted))
    }

    /// The predicted final objective of each partial trial among `trials` (asked to stop, then
    /// completed: `bo_core::stopping::partial`), by the study's decay-curve model, for the
    /// designer to learn from; none while there is no model, and none under successive halving
    /// (`partial::predicts`). The model is the one the stopping rules use, fitted once per data
    /// version.
    pub(crate) async fn partial_estimates(
        &self,
        study: &StudyRecord,
        trials: &Arc<Vec<Trial>>,
    ) -> Result<BTreeMap<i64, Estimate>, EngineError> {
        if !partial::predicts(&study.spec) || !trials.iter().any(|t| t.is_partial() && t.state == TrialState::Succeeded) {
            return Ok(BTreeMap::new());
        }
        let use_elapsed = study.spec.stopping.as_ref().is_some_and(|s| s.use_elapsed());
        let maximize = study.spec.objective().goal == Goal::Maximize;
        let Ok(model) = self.decay_curve_model(study, use_elapsed, maximize).await? else { return Ok(BTreeMap::new()) };
        let curves = self.inner.store.partial_curves(study.id, use_elapsed).await?;
        let trials = trials.clone();
        self.compute(study, Class::Waited, move || partial::estimates(&model, &trials, &curves)).await
    }

    /// Refits the study on `snapshot` (its basis and trials, read by the caller) and updates the
    /// cache and the stored state. With `once_per_version`, a cached fit of the current data
    /// version stands (a reproducible study's suggest fitted it): fitting it again would
    /// optimise θ again and change what it proposes.
    pub(crate) async fn refit_study(
        &self,
        study_id: i64,
        once_per_version: bool,
        snapshot: (Basis, Arc<Vec<Trial>>),
    ) -> Result<RefitOutcome, EngineError> {
        let (store, cache) = (&self.inner.store, &self.inner.cache);
        let study = match store.study_by_id(study_id).await {
            Ok(s) => s,
            Err(StoreError::NotFound(_)) => return Ok(RefitOutcome::Gone),
            Err(e) => return Err(e.into()),
        };
        let (basis, trials) = snapshot;
        let revision = study.spec.space_revision;
        if once_per_version && cache.get(study_id, revision).is_some_and(|e| !e.fallback && e.data_version >= basis.data_version) {
            return Ok(RefitOutcome::Adopted { data_version: basis.data_version });
        }
        let warm = warm_state(store, cache, &study, basis.data_version).await?;
        // A request's work, not background work: a reproducible study's suggest waits for this
        // fit, and any other study's does once its cached model has fallen behind the data
        // (`FittedModel::keeps_up`, the engine's `lag_wait`). At nice +10 on a machine busy with
        // another tenant's reads, the fit starved and the suggest waited out the whole bound.
        let fitted = self.fit(&study, basis.data_version, trials, warm, Class::Waited).await?;
        keep(store, cache, study_id, fitted).await?;
        Ok(RefitOutcome::Fitted { data_version: basis.data_version })
    }
}

/// Keeps a fitted model: its state in the database (for warm starts after a restart or on
/// another replica), the model in the cache. A fallback is only cached.
pub(crate) async fn keep(store: &Store, cache: &ModelCache, study_id: i64, fitted: Arc<FittedModel>) -> Result<(), EngineError> {
    if fitted.fallback {
        cache.insert(study_id, fitted);
        return Ok(());
    }
    let stored = StoredModel {
        data_version: fitted.data_version,
        space_revision: fitted.space_revision,
        state: fitted.state.clone(),
        fitted_at_ms: crate::clock::now_ms(),
    };
    store.save_model_state(study_id, &stored).await?;
    cache.insert(study_id, fitted);
    Ok(())
}

#[cfg(test)]
mod tests {
    use bo_core::ModelState;
    use bo_store::StoredModel;
    use serde_json::json;

    use super::*;
    use crate::engine::testing;

    fn state(v: i64) -> ModelState {
        ModelState(json!({ "fitted_on_version": v }))
    }

    fn stored(v: i64) -> Option<StoredModel> {
        Some(StoredModel { data_version: v, space_revision: 0, state: state(v), fitted_at_ms: 0 })
    }

    /// A fit of version v starts as a lone server's would: from a stored fit of v itself (taken
    /// up), else from the newest state of an earlier version, cached or stored.
    #[tokio::test]
    async fn a_fit_starts_from_the_newest_earlier_state_or_takes_up_this_version_s() {
        let store = testing::store().await;
        let study = testing::study(&store, "warm", serde_json::Value::Null).await;
        let cached =
            |v: i64, fallback: bool| FittedModel { data_version: v, state: state(v), fallback, ..FittedModel::stand_in(&study, v, &[]) };
        // The other replica fitted v = 5: take it up.
        assert_eq!(start_from(Some(&cached(3, false)), stored(5), 5, 0), Start::Adopt(state(5)));
        // The other replica's 4 is newer than this one's cached 3.
        assert_eq!(start_from(Some(&cached(3, false)), stored(4), 5, 0), Start::Warm(Some(state(4))));
        // This replica's cached 4 is newer than the stored 3; a tie keeps the cached one.
        assert_eq!(start_from(Some(&cached(4, false)), stored(3), 5, 0), Start::Warm(Some(state(4))));
        assert_eq!(start_from(Some(&cached(4, false)), stored(4), 5, 0), Start::Warm(Some(state(4))));
        // A fallback has no state; neither has anything fitted at or after the target.
        assert_eq!(start_from(Some(&cached(4, true)), stored(2), 5, 0), Start::Warm(Some(state(2))));
        assert_eq!(start_from(Some(&cached(6, false)), None, 5, 0), Start::Warm(None));
        assert_eq!(start_from(None, stored(7), 5, 0), Start::Warm(None));
    }
}
