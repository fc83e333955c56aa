//! One refit of one study, as a plain function the pool (and tests) call: load the study and its
//! trials, fit its designer on a blocking thread (fitting is CPU-bound work that would stall the
//! async runtime), store the state for warm starts, and swap the cache entry.

use std::collections::HashSet;
use std::sync::Arc;

use bo_core::designer::designer_for;
use bo_core::{ModelState, Observation, Problem, Trial};
use bo_store::{Store, StoreError, StoredModel, StudyRecord};
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::cache::{Entry, ModelCache};
use super::{EngineError, study_seed};

/// What a refit did.
#[derive(Debug, PartialEq, Eq)]
pub enum RefitOutcome {
    /// Fitted on this data version.
    Fitted {
        /// The study's data version fitted on.
        data_version: i64,
    },
    /// The study no longer exists.
    Gone,
}

/// Fits `study`'s designer on `trials` (warm-started from `warm`), returning the cache entry.
/// Pure CPU work: call it on a blocking thread.
pub fn fit_entry(study: &StudyRecord, trials: &[Trial], warm: Option<&ModelState>) -> Result<Entry, EngineError> {
    let designer = designer_for(&study.spec)?;
    let history: Vec<Observation> = trials.iter().filter_map(Observation::from_trial).collect();
    let seed = study_seed(study);
    let mut rng = StdRng::seed_from_u64(seed ^ (history.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let fitted = designer.fit(&Problem { spec: study.spec.clone(), seed }, &history, warm, &mut rng)?;
    Ok(Entry {
        data_version: study.data_version,
        trial_ids: trials.iter().filter(|t| t.state.is_completed()).map(|t| t.id).collect::<HashSet<_>>(),
        model: fitted.model,
        state: fitted.state,
    })
}

/// Refits `study_id` from the database and updates the cache and the stored state.
pub async fn refit_study(
    store: &Store,
    cache: &Arc<ModelCache>,
    study_id: i64,
    project_location: (&str, &str),
) -> Result<RefitOutcome, EngineError> {
    let study = match store.get_study(project_location.0, project_location.1, study_id).await {
        Ok(s) => s,
        Err(StoreError::NotFound(_)) => return Ok(RefitOutcome::Gone),
        Err(e) => return Err(e.into()),
    };
    let trials = store.all_trials(study_id).await?;
    let warm = match cache.get(study_id) {
        Some(e) => Some(e.state.clone()),
        None => store.model_state(study_id).await?.map(|m| m.state),
    };
    let entry = {
        let study = study.clone();
        tokio::task::spawn_blocking(move || fit_entry(&study, &trials, warm.as_ref()))
            .await
            .map_err(|e| EngineError::Fit(bo_core::FitError::Numerical(format!("the fit panicked: {e}"))))??
    };
    let stored = StoredModel { data_version: entry.data_version, state: entry.state.clone(), fitted_at_ms: crate::now_ms() };
    store.save_model_state(study_id, &stored).await?;
    cache.insert(study_id, entry);
    Ok(RefitOutcome::Fitted { data_version: study.data_version })
}
