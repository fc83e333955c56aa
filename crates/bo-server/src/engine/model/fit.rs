//! A fit, as CPU work: plain functions a blocking thread runs (`Engine::compute` claims the
//! permit). Partial trials are observed at their predicted final values
//! (`bo_core::stopping::partial`); the designer is fitted, or a stored fit restored, seeded by
//! the study ([`study_seed`]); the study's initial design stands in when a designer fails
//! ([`FittedModel::stand_in`]); a designer's panic is a failure like any other ([`guarded`]).
//!
//! Must not: read or write the store, or hold a lock another request waits on.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bo_core::designer::{PriorStudy, QuasiRandomSearch};
use bo_core::stopping::partial::{self, Estimate};
use bo_core::{Designer, ModelState, Observation, Problem, Trial};
use bo_store::StudyRecord;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::FittedModel;
use crate::engine::EngineError;

impl FittedModel {
    /// `designer` fitted on `study`'s `trials`, read at `data_version` — partial trials at their
    /// `estimates`, standing on `priors`, warm-started from `warm` or, with `restore`, that
    /// stored fit taken up as it is. The trials are let go before the fit: where this was their
    /// last holder (the mirror keeps them packed), a large study's decoded trials and its
    /// observations are not held at once beside the designer's work.
    #[allow(clippy::too_many_arguments)] // one fit's inputs, each distinct
    pub fn fit(
        designer: &dyn Designer,
        study: &StudyRecord,
        data_version: i64,
        trials: Arc<Vec<Trial>>,
        estimates: &BTreeMap<i64, Estimate>,
        priors: Vec<PriorStudy>,
        warm: Option<&ModelState>,
        restore: bool,
    ) -> Result<FittedModel, EngineError> {
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
        Ok(FittedModel {
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

    /// The stand-in for a designer that failed: the study's initial design (quasi-random, over
    /// the tree), which cannot fail. Pure CPU work, small.
    pub fn stand_in(study: &StudyRecord, data_version: i64, trials: &[Trial]) -> FittedModel {
        let problem = Problem { spec: study.spec.clone(), seed: study_seed(study), priors: Vec::new() };
        let history: Vec<Observation> = trials.iter().filter_map(Observation::from_trial).collect();
        let mut rng = StdRng::seed_from_u64(study_seed(study));
        let fitted = QuasiRandomSearch.fit(&problem, &history, None, &mut rng).expect("quasi-random search does not fail");
        FittedModel {
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

    /// `study`'s designer fitted on `trials`, read at `data_version` (warm-started from
    /// `warm`), without priors or partial trials, as a test asks for one.
    #[cfg(test)]
    pub fn fitted_now(
        study: &StudyRecord,
        data_version: i64,
        trials: &[Trial],
        warm: Option<&ModelState>,
    ) -> Result<FittedModel, EngineError> {
        let designer = bo_core::designer::designer_for(&study.spec)?;
        FittedModel::fit(designer.as_ref(), study, data_version, Arc::new(trials.to_vec()), &BTreeMap::new(), Vec::new(), warm, false)
    }
}

/// Runs designer code so that a panic in it is a failure like any other (a `FitError` naming the
/// panic's message), not a lost request or a dead background job.
pub fn guarded<T>(work: impl FnOnce() -> Result<T, bo_core::FitError>) -> Result<T, bo_core::FitError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let message =
            panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
        Err(bo_core::FitError::Numerical(format!("the designer panicked: {message}")))
    })
}

/// The study's seed: its own (`algorithmConfig.seed`), else from its number (within its
/// project and location) and display name only, so nothing another tenant does changes what a
/// study proposes.
pub fn study_seed(study: &StudyRecord) -> u64 {
    if let Some(seed) = study.settings.seed {
        return (seed as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5eed;
    }
    // FNV-1a over the name, mixed with the number.
    let name_hash = study.display_name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (study.number as u64).wrapping_mul(0xd1b5_4a32_d192_ed03) ^ name_hash
}
