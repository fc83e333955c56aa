//! The engine: runs a study's designer to propose new trials. It knows designers and the
//! store's records, never HTTP.
//!
//! The baseline designers are cheap, so a proposal is made on the request path, inside the
//! store's suggest transaction (which holds the study's lock, so what is proposed is consistent
//! with what is handed out). The seed is the study's, so a study's quasi-random sequence and
//! grid order are fixed for its life; the random generator is seeded from the study and its
//! trial count, so a replay of the same history proposes the same points.

use bo_core::designer::designer_for;
use bo_core::{Assignment, ConfigError, FitError, Observation, Problem, StudySpec, Trial};
use bo_store::StudyRecord;
use rand::SeedableRng;
use rand::rngs::StdRng;

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
}

/// Checks that `spec` names a known algorithm with valid settings.
pub fn check_algorithm(spec: &StudySpec) -> Result<(), ConfigError> {
    designer_for(spec).map(|_| ())
}

/// Up to `count` new assignments for `study`, given all its `trials`.
pub fn propose(study: &StudyRecord, trials: &[Trial], count: usize) -> Result<Vec<Assignment>, EngineError> {
    let designer = designer_for(&study.spec)?;
    let history: Vec<Observation> = trials.iter().filter_map(Observation::from_trial).collect();
    let pending: Vec<Assignment> = trials.iter().filter(|t| !t.state.is_completed()).map(|t| t.assignment.clone()).collect();
    let seed = study_seed(study);
    let problem = Problem { spec: study.spec.clone(), seed };
    let mut rng = StdRng::seed_from_u64(seed ^ (trials.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let fitted = designer.fit(&problem, &history, None, &mut rng)?;
    Ok(fitted.model.suggest(&pending, count, &mut rng)?)
}

/// The study's seed: from its number and display name only, so the same study on a fresh
/// database proposes the same points (the README's walk-through relies on it).
fn study_seed(study: &StudyRecord) -> u64 {
    // FNV-1a over the name, mixed with the id.
    let name_hash = study.display_name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (study.id as u64).wrapping_mul(0xd1b5_4a32_d192_ed03) ^ name_hash
}
