//! The engine: proposes trials from each study's designer, keeps fitted models in a per-study
//! cache, and refits studies in the background when their data changes. It knows designers and
//! the store, never HTTP (no axum here).
//!
//! - **Suggest** (`propose`) answers from the cached model: trials completed since its fit are
//!   observed by it (a GP conditions on their real values by rank-one extensions) or, for
//!   designers that cannot, passed as pending like the trials in flight (fantasies for the GP
//!   designers), so a slightly stale model never proposes what is being evaluated. Only
//!   when a study has no cached model at all does the fit run on the request path, warm-started
//!   from the stored state; its state is then stored.
//! - **Refits** (`notify_changed`, after a trial completes, is added or deleted) run on a
//!   bounded pool: at most `workers` fits at once, each on a blocking thread, one per study at a
//!   time; a change during a refit marks the study dirty and it is refitted once more, not once
//!   per change.
//! - The study's seed comes from its number and name only, so the same study on a fresh
//!   database proposes the same points (the README walk-through relies on it); each proposal's
//!   random generator is seeded from the study and its trial count.

mod cache;
mod refit;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bo_core::designer::designer_for;
use bo_core::{Assignment, ConfigError, FitError, ModelState, Observation, StudySpec, Trial};
use bo_store::{Store, StoreError, StudyRecord};
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::Semaphore;

pub use cache::{Entry, ModelCache};
use refit::fit_entry;
pub use refit::{RefitOutcome, refit_study};

/// Why no proposal could be made.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The study's algorithm settings are invalid (checked at creation, so only for studies
    /// stored by an older version).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The designer failed.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The engine's settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Refits running at once.
    pub workers: usize,
    /// The model cache's memory budget.
    pub cache_bytes: usize,
}

/// A proposal: the new assignments, and the entry fitted on the request path (to store).
pub struct Proposal {
    /// The assignments.
    pub assignments: Vec<Assignment>,
    /// Set when a model had to be fitted for this request.
    pub fitted: Option<Arc<Entry>>,
}

/// The engine handle; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    store: Store,
    cache: Arc<ModelCache>,
    workers: Arc<Semaphore>,
    /// Studies being refitted, with whether they changed again meanwhile.
    refits: Arc<Mutex<HashMap<i64, bool>>>,
}

/// Checks that `spec` names a known algorithm with valid settings.
pub fn check_algorithm(spec: &StudySpec) -> Result<(), ConfigError> {
    designer_for(spec).map(|_| ())
}

/// The study's seed: from its number and display name only.
pub(crate) fn study_seed(study: &StudyRecord) -> u64 {
    // FNV-1a over the name, mixed with the id.
    let name_hash = study.display_name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (study.id as u64).wrapping_mul(0xd1b5_4a32_d192_ed03) ^ name_hash
}

impl Engine {
    /// An engine over `store`.
    pub fn new(store: Store, config: &EngineConfig) -> Engine {
        Engine {
            store,
            cache: Arc::new(ModelCache::new(config.cache_bytes)),
            workers: Arc::new(Semaphore::new(config.workers.max(1))),
            refits: Arc::default(),
        }
    }

    /// The state to warm-start a request-path fit: the cached model's, else the stored one.
    pub async fn warm_state(&self, study_id: i64) -> Result<Option<ModelState>, EngineError> {
        refit::warm_state(&self.store, &self.cache, study_id).await
    }

    /// Up to `count` new assignments for `study` given all its `trials` (see the module docs).
    /// Synchronous: it runs inside the store's suggest transaction.
    pub fn propose(&self, study: &StudyRecord, trials: &[Trial], count: usize, warm: Option<&ModelState>) -> Result<Proposal, EngineError> {
        let mut rng = StdRng::seed_from_u64(study_seed(study) ^ (trials.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (entry, fitted) = match self.cache.get(study.id) {
            Some(entry) => (entry, None),
            None => {
                let entry = Arc::new(fit_entry(study, trials, warm)?);
                (entry.clone(), Some(entry))
            }
        };
        // Trials completed since the fit: conditioned on by the model when it can (a GP's rank-one
        // extension with their real values), else treated as pending like those in flight.
        let unseen: Vec<Observation> = trials
            .iter()
            .filter(|t| t.state.is_completed() && !entry.trial_ids.contains(&t.id))
            .filter_map(Observation::from_trial)
            .collect();
        let updated = if unseen.is_empty() { None } else { entry.model.observe(&unseen) };
        let model = updated.as_ref().unwrap_or(&entry.model);
        let pending: Vec<Assignment> = trials
            .iter()
            .filter(|t| !t.state.is_completed() || (updated.is_none() && !entry.trial_ids.contains(&t.id)))
            .map(|t| t.assignment.clone())
            .collect();
        let assignments = model.suggest(&pending, count, &mut rng)?;
        Ok(Proposal { assignments, fitted })
    }

    /// Keeps a model fitted on the request path (database and cache).
    pub async fn keep(&self, study_id: i64, entry: Arc<Entry>) -> Result<(), EngineError> {
        refit::keep(&self.store, &self.cache, study_id, entry).await
    }

    /// The study's model: the cached one, else one fitted now (warm-started, on a blocking
    /// thread) and kept. Failing to keep it is logged: the model is still good for the caller.
    pub async fn model(&self, study: &StudyRecord) -> Result<Arc<Entry>, EngineError> {
        if let Some(entry) = self.cache.get(study.id) {
            return Ok(entry);
        }
        let trials = self.store.all_trials(study.id).await?;
        let warm = self.warm_state(study.id).await?;
        let entry = refit::fit_on_blocking_thread(study, trials, warm).await?;
        if let Err(e) = self.keep(study.id, entry.clone()).await {
            tracing::warn!(study = study.id, error = %e, "could not keep a fitted model");
        }
        Ok(entry)
    }

    /// The study's data changed: refit it in the background.
    pub fn notify_changed(&self, study: &StudyRecord) {
        {
            let mut refits = self.refits.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(dirty) = refits.get_mut(&study.id) {
                *dirty = true;
                return;
            }
            refits.insert(study.id, false);
        }
        let engine = self.clone();
        let (id, project, location) = (study.id, study.project.clone(), study.location.clone());
        tokio::spawn(async move {
            loop {
                let outcome = {
                    let _permit = engine.workers.acquire().await;
                    refit_study(&engine.store, &engine.cache, id, (&project, &location)).await
                };
                match outcome {
                    Ok(RefitOutcome::Fitted { data_version }) => tracing::debug!(study = id, data_version, "refitted"),
                    Ok(RefitOutcome::Gone) => engine.cache.remove(id),
                    Err(e) => tracing::warn!(study = id, error = %e, "background refit failed"),
                }
                let mut refits = engine.refits.lock().unwrap_or_else(|e| e.into_inner());
                match refits.get_mut(&id) {
                    Some(dirty) if *dirty => *dirty = false,
                    _ => {
                        refits.remove(&id);
                        break;
                    }
                }
            }
        });
    }

    /// Forgets a deleted study's model.
    pub fn forget(&self, study_id: i64) {
        self.cache.remove(study_id);
    }

    /// Whether any refit is queued or running (for tests and shutdown).
    pub fn busy(&self) -> bool {
        !self.refits.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }
}
