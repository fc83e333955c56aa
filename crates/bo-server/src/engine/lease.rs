//! The refit lease: a row in the database, renewed while its holder fits and expiring when the
//! holder dies, so one replica refits a study at a time. The others keep serving from their
//! cached models (conditioned on the trials they have not seen) and adopt the holder's stored
//! fit when it lands — the designer's model rebuilt from the stored state without a search.

use std::time::Duration;

use bo_store::{StoreError, StudyRecord};

use super::hooks::Point;
use super::model::RefitOutcome;
use super::{Engine, EngineError, millis};

/// How often a replica waiting on another's refit looks again.
const LEASE_POLL: Duration = Duration::from_millis(200);

impl Engine {
    /// Refits the study on this replica if it can take the study's refit lease (renewing it
    /// while it fits), so a refit runs on one replica at a time. Otherwise another replica is
    /// fitting: this one keeps serving from its cached model (conditioned on the trials it has
    /// not seen) and waits until either the stored model has caught up with the data — then
    /// adopts it, the designer's model rebuilt from the stored state without a search — or the
    /// lease is free. A holder that dies stops renewing, and its lease runs out after
    /// `refit_lease`.
    pub(super) async fn refit(&self, study: &StudyRecord) -> Result<RefitOutcome, EngineError> {
        let store = &self.inner.store;
        let ttl = self.inner.config.refit_lease;
        let ttl_ms = millis(ttl);
        let me = self.inner.replica.as_str();
        loop {
            if store.take_refit_lease(study.id, me, crate::clock::now_ms(), ttl_ms).await? {
                self.lease_held(study.id, true);
                let renewer = {
                    let (engine, store, me, id) = (self.clone(), store.clone(), me.to_owned(), study.id);
                    tokio::spawn(async move {
                        loop {
                            tokio::time::sleep(ttl / 3).await;
                            if engine.stopping() {
                                return; // the shutdown gives the lease back
                            }
                            if let Err(e) = store.take_refit_lease(id, &me, crate::clock::now_ms(), ttl_ms).await {
                                tracing::warn!(study = id, error = %e, "could not renew the refit lease");
                            }
                        }
                    })
                };
                let outcome = match self.inner.hooks.reached(Point::Refit).await {
                    Ok(()) => {
                        let slot = self.inner.slots.get(study.id);
                        let _fitting = slot.fitting.lock().await;
                        match self.trials_now(study).await {
                            Ok(snapshot) => self.refit_study(study.id, self.reproducible(study), snapshot).await,
                            Err(EngineError::Store(StoreError::NotFound(_))) => Ok(RefitOutcome::Gone),
                            Err(e) => Err(e),
                        }
                    }
                    Err(e) => Err(e),
                };
                renewer.abort();
                match store.release_refit_lease(study.id, me).await {
                    Ok(()) => {}
                    // Past the shutdown's grace the pool may be closed: the shutdown gave the
                    // lease back before closing it.
                    Err(e) if self.stopping() => tracing::debug!(study = study.id, error = %e, "refit lease left to the shutdown"),
                    Err(e) => tracing::warn!(study = study.id, error = %e, "could not release the refit lease (it will expire)"),
                }
                self.lease_held(study.id, false);
                return outcome;
            }
            let basis = match store.study_basis(study.id).await {
                Ok(basis) => basis,
                Err(StoreError::NotFound(_)) => return Ok(RefitOutcome::Gone),
                Err(e) => return Err(e.into()),
            };
            let cached = self.inner.cache.get(study.id, study.spec.space_revision).map(|e| e.data_version);
            if cached.is_some_and(|v| v >= basis.data_version) {
                return Ok(RefitOutcome::Adopted { data_version: basis.data_version });
            }
            if let Some(stored) = store.model_state(study.id).await?
                && stored.data_version >= basis.data_version
                && stored.space_revision == study.spec.space_revision
            {
                let (basis, trials) = self.trials_now(study).await?;
                let fitted = self.restore(study, basis.data_version, trials, stored.state).await?;
                self.inner.cache.insert(study.id, fitted);
                return Ok(RefitOutcome::Adopted { data_version: basis.data_version });
            }
            self.inner.hooks.reached(Point::LeaseBusy).await?;
            tokio::time::sleep(LEASE_POLL).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bo_store::StoredModel;

    use super::*;
    use crate::engine::{EngineConfig, testing};

    /// A SQLite store with one study of one completed trial, and an engine over it.
    async fn setup() -> (testing::TestStore, StudyRecord, Engine) {
        let store = testing::store().await;
        let study = testing::study(&store, "leased", serde_json::Value::Null).await;
        testing::complete(&store, &study, 0.5).await;
        let engine = Engine::new(store.clone(), &EngineConfig::default(), Arc::default());
        (store, study, engine)
    }

    /// While another replica holds the refit lease, this one does not fit: it waits, adopts the
    /// other's stored fit when it lands (leaving it stored as it was), and once the lease is
    /// free it refits itself.
    #[tokio::test]
    async fn a_refit_waits_for_the_lease_holder_and_adopts_its_fit() {
        let (store, study, engine) = setup().await;
        assert!(store.take_refit_lease(study.id, "other", crate::clock::now_ms(), 60_000).await.unwrap());
        let mut reached = engine.inner.hooks.watch();
        engine.inner.hooks.hold(Point::LeaseBusy);
        let waiting = tokio::spawn({
            let (engine, study) = (engine.clone(), study.clone());
            async move { engine.refit(&study).await }
        });
        assert_eq!(reached.recv().await, Some(Point::LeaseBusy), "the lease is taken: the refit waits");
        assert!(!waiting.is_finished(), "no fit while another replica holds the lease");
        assert!(store.model_state(study.id).await.unwrap().is_none());
        // The holder's fit lands (its state: the designer's own, as a warm start would store it).
        let basis = store.study_basis(study.id).await.unwrap();
        let (_, trials) = store.suggest_snapshot(study.id).await.unwrap();
        let theirs = crate::engine::FittedModel::fitted_now(&study, basis.data_version, &trials, None).unwrap();
        let stored = StoredModel { data_version: basis.data_version, space_revision: 0, state: theirs.state.clone(), fitted_at_ms: 5 };
        assert!(store.save_model_state(study.id, &stored).await.unwrap());
        engine.inner.hooks.release(Point::LeaseBusy, 1);
        let outcome = tokio::time::timeout(Duration::from_secs(30), waiting).await.unwrap().unwrap().unwrap();
        assert_eq!(outcome, RefitOutcome::Adopted { data_version: basis.data_version });
        assert_eq!(engine.inner.cache.get(study.id, 0).map(|e| e.data_version), Some(basis.data_version));
        assert_eq!(store.model_state(study.id).await.unwrap(), Some(stored), "the adopter stores nothing");
        // The lease given back: this replica refits, and gives it back in turn.
        store.release_refit_lease(study.id, "other").await.unwrap();
        assert_eq!(engine.refit(&study).await.unwrap(), RefitOutcome::Fitted { data_version: basis.data_version });
        assert!(store.take_refit_lease(study.id, "other", crate::clock::now_ms(), 60_000).await.unwrap(), "released after the fit");
    }

    /// A background refit that fails leaves the study's last model in place, and the job goes
    /// on to its refill and ends.
    #[tokio::test]
    async fn a_failed_background_refit_keeps_the_last_model() {
        let (_store, study, engine) = setup().await;
        let before = engine.model(&study).await.unwrap();
        let mut reached = engine.inner.hooks.watch();
        engine.inner.hooks.fail(Point::Refit);
        engine.notify_changed(&study);
        for point in [Point::Refit, Point::Refill, Point::JobEnded] {
            assert_eq!(reached.recv().await, Some(point));
        }
        let after = engine.inner.cache.get(study.id, 0).expect("still cached");
        assert!(Arc::ptr_eq(&before, &after), "the failed refit replaced nothing");
        assert!(!engine.busy());
    }

    /// Changes that arrive while a study's job refits are coalesced: one more refit and refill,
    /// not one per change.
    #[tokio::test]
    async fn changes_during_a_refit_run_the_job_once_more() {
        let (_store, study, engine) = setup().await;
        let mut reached = engine.inner.hooks.watch();
        engine.inner.hooks.hold(Point::Refit);
        engine.notify_changed(&study);
        assert_eq!(reached.recv().await, Some(Point::Refit));
        for _ in 0..3 {
            engine.notify_changed(&study);
        }
        assert!(engine.busy());
        engine.inner.hooks.release(Point::Refit, 2);
        for point in [Point::Refill, Point::Refit, Point::Refill, Point::JobEnded] {
            // (The fits themselves are reached too, inside each refit.)
            let mut next = reached.recv().await;
            while next == Some(Point::Fit) {
                next = reached.recv().await;
            }
            assert_eq!(next, Some(point));
        }
        assert!(!engine.busy(), "three changes during the first refit made one more round, then the job ended");
    }
}
