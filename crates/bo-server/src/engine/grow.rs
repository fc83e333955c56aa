//! An open study's space grown as a define-by-run objective asks (the `:addParameters` and
//! `:addTrialParameters` verbs), and a running trial given the values it lacks.
//!
//! Growing is optimistic: the next space is computed from the study as read (bo-core's
//! `SearchSpace::grown`, and the study's algorithm built on it, which must still accept it) off
//! the runtime and outside any transaction, then written by compare-and-set on the stored
//! revision; a worker that lost the race reads the study again and grows what is still missing.
//! A trial's new values come from the study's model searched within the trial's other values
//! (a context, as a suggest with `contexts` searches it), then are written to the trial — a
//! value once given stays, so a retried request gets the first answer.
//!
//! Must not: grow a space inside a transaction, or run a designer on the runtime.

use bo_core::space::grow::Asked;
use bo_core::{Assignment, ConfigError, FieldError, Limits, StudySpec, Trial};
use bo_store::{StoreError, StudyRecord};

use super::permits::Class;
use super::{Engine, EngineError, check_algorithm};

/// How many times a growth is computed again after another worker grew the study first.
const GROW_ATTEMPTS: usize = 32;

/// Why a space did not grow.
#[derive(Debug, thiserror::Error)]
pub enum GrowError {
    /// A parameter asked for is wrong: its spec, its parent, its value.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// The study's space is fixed.
    #[error("the study's search space is fixed (it was not created with openSearchSpace): its parameters are declared at creation")]
    Fixed,
    /// The study's algorithm does not accept the grown space.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Other workers kept growing the study while this request tried.
    #[error("the study's search space changed {GROW_ATTEMPTS} times while this request grew it; retry")]
    Contended,
    /// The engine failed (the store, the designer).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<StoreError> for GrowError {
    fn from(e: StoreError) -> Self {
        GrowError::Engine(e.into())
    }
}

impl Engine {
    /// Grows `study`'s space so that each of `asked` is active under `base` (the values asked
    /// for so far, to which each asked value is added in turn), within `limits`: the study as
    /// it stands after (unchanged when nothing was missing).
    pub async fn grow_space(
        &self,
        study: &StudyRecord,
        base: &Assignment,
        asked: &[Asked],
        limits: &Limits,
    ) -> Result<StudyRecord, GrowError> {
        if !study.spec.open_space {
            return Err(GrowError::Fixed);
        }
        let mut current = study.clone();
        for _ in 0..GROW_ATTEMPTS {
            let (from, base, asked, limits) = (current.spec.clone(), base.clone(), asked.to_vec(), limits.clone());
            let grown =
                tokio::task::spawn_blocking(move || next_spec(&from, &base, &asked, &limits)).await.map_err(super::permits::panicked)??;
            let Some(grown) = grown else { return Ok(current) };
            if self.inner.store.grow_space(current.id, current.spec.space_revision, &grown).await? {
                tracing::info!(
                    study = current.id,
                    revision = grown.space_revision,
                    parameters = grown.space.n_params(),
                    "search space grew"
                );
                let data_version = current.data_version + 1;
                let record = StudyRecord { spec: grown, data_version, ..current };
                self.notify_changed(&record);
                return Ok(record);
            }
            current = self.inner.store.study_by_id(current.id).await?;
        }
        Err(GrowError::Contended)
    }

    /// Gives running trial `trial_id` of `study` the parameters of `asked` it lacks, growing
    /// the space first where they are not active under the trial: a value given is taken, the
    /// others are chosen by the study's model within the trial's values. The study and the trial
    /// as they stand after.
    pub async fn add_trial_parameters(
        &self,
        study: &StudyRecord,
        trial_id: i64,
        asked: &[Asked],
        limits: &Limits,
    ) -> Result<(StudyRecord, Trial), GrowError> {
        let trial = self.inner.store.get_trial(study.id, trial_id).await?;
        if trial.state.is_completed() {
            return Err(GrowError::Engine(
                StoreError::Trial(bo_core::TrialError::ParametersClosed { id: trial.id, state: trial.state }).into(),
            ));
        }
        let study = self.grow_space(study, &trial.assignment, asked, limits).await?;
        let mut values = Assignment::default();
        let mut choose = Vec::new();
        for a in asked {
            match (&a.value, trial.assignment.get(&a.spec.id)) {
                (_, Some(_)) => {}
                (Some(v), None) => {
                    values.insert(a.spec.id.clone(), v.clone());
                }
                (None, None) => choose.push(a.spec.id.clone()),
            }
        }
        if !choose.is_empty() {
            let mut context = trial.assignment.clone();
            context.extend(values.0.iter().map(|(id, v)| (id.clone(), v.clone())));
            let chosen = self.choose_within(&study, context).await?;
            for id in choose {
                if let Some(v) = chosen.get(&id) {
                    values.insert(id, v.clone());
                }
            }
        }
        if values.0.is_empty() {
            return Ok((study, trial));
        }
        let trial = self.inner.store.add_trial_parameters(study.id, trial_id, &values, crate::clock::now_ms()).await?;
        Ok((study, trial))
    }

    /// A point of `study`'s space within `context` (a running trial's values): the study's model
    /// searched over the rest, as a suggest within a context is.
    async fn choose_within(&self, study: &StudyRecord, context: Assignment) -> Result<Assignment, EngineError> {
        let (basis, trials) = self.trials_now(study).await?;
        let (fitted, _) = self.model_for(study, basis, &trials).await?;
        let owned = study.clone();
        let mut proposals = self.compute(study, Class::Waited, move || fitted.propose_in_contexts(&owned, &trials, &[context])).await??;
        Ok(proposals.pop().unwrap_or_default())
    }
}

/// The spec of `from` grown for `asked` under `base`, its algorithm checked on the grown space;
/// `None` when nothing was missing.
fn next_spec(from: &StudySpec, base: &Assignment, asked: &[Asked], limits: &Limits) -> Result<Option<StudySpec>, GrowError> {
    let Some(space) = from.space.grown(base, asked, limits)? else { return Ok(None) };
    let grown = StudySpec { space, space_revision: from.space_revision + 1, ..from.clone() };
    check_algorithm(&grown, limits)?;
    Ok(Some(grown))
}
