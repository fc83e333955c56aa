//! A study's optimal trials (`bo_core::optimal`): the best trial, or the Pareto front of several
//! objectives (cut by hypervolume contribution at bounded cost), chosen from the values the
//! database reads out of the final measurements — under a permit of the engine's pool, and kept
//! in the study's slot by data version: once per version, however many ask at once (the
//! dashboard asks on every poll in which trials changed). With `observationNoise: HIGH` and one
//! objective, the best trial is the one the model predicts best, once it predicts. Partial
//! trials (asked to stop before completing) take part only while no trial was trained in full.

use std::sync::Arc;

use bo_core::optimal::{CUT_CHECKS, front_ids};
use bo_core::{Goal, ObservationNoise, TrialState};
use bo_store::StudyRecord;

use super::permits::Class;
use super::{Engine, EngineError};

/// The optimal trials of a study as last chosen.
pub struct Optimal {
    /// The study's data version when its trials were read.
    data_version: i64,
    /// The data version of the model that chose them (`observationNoise: HIGH`), if one did.
    model_version: Option<i64>,
    /// The trials' ids, best first (see `bo_core::optimal::optimal_ids`).
    ids: Arc<Vec<i64>>,
}

impl Engine {
    /// The ids of the study's optimal trials, best first, at most `cap` (see the module docs).
    pub async fn optimal_trial_ids(&self, study: &StudyRecord, cap: usize) -> Result<Arc<Vec<i64>>, EngineError> {
        let slot = self.inner.slots.get(study.id);
        let mut kept = slot.optimal.lock().await;
        // The version before the values: what is kept is never older than its label.
        let data_version = self.inner.store.study_basis(study.id).await?.data_version;
        let by_model = study.spec.observation_noise == ObservationNoise::High && study.spec.objectives().count() == 1;
        let model = if by_model { self.model(study).await.ok().filter(|e| !e.fallback) } else { None };
        let model_version = model.as_ref().map(|e| e.data_version);
        if let Some(k) = kept.as_ref().filter(|k| k.data_version == data_version && k.model_version == model_version) {
            return Ok(k.ids.clone());
        }
        let ids = match model {
            Some(fitted) => match self.best_by_the_model(study, fitted).await? {
                Some(id) => Arc::new(vec![id]),
                None => self.front(study, cap).await?,
            },
            None => self.front(study, cap).await?,
        };
        *kept = Some(Optimal { data_version, model_version, ids: ids.clone() });
        Ok(ids)
    }

    /// The best trial, or the front, of the trials' final values.
    async fn front(&self, study: &StudyRecord, cap: usize) -> Result<Arc<Vec<i64>>, EngineError> {
        let objectives: Vec<(String, Goal)> = study.spec.objectives().map(|m| (m.id.clone(), m.goal)).collect();
        let ids: Vec<String> = objectives.iter().map(|(id, _)| id.clone()).collect();
        let values = {
            let _turn = self.read_turn(&study.project, Some(study.id)).await;
            self.inner.store.final_values(study.id, &ids).await?
        };
        let goals: Vec<Goal> = objectives.iter().map(|(_, g)| *g).collect();
        self.compute(study, Class::Waited, move || {
            // A trial lacking an objective takes no part.
            let scored: Vec<(i64, Vec<f64>)> =
                values.into_iter().filter_map(|(id, v)| Some((id, v.into_iter().collect::<Option<Vec<f64>>>()?))).collect();
            Arc::new(front_ids(&goals, scored, cap, CUT_CHECKS))
        })
        .await
    }

    /// With `observationNoise: HIGH` a single observation says little: the best trial is the
    /// SUCCEEDED one whose *predicted* objective (the model's posterior mean at its parameters)
    /// is best, among the safe ones. `None` when the model does not predict (its initial design).
    async fn best_by_the_model(&self, study: &StudyRecord, fitted: Arc<super::FittedModel>) -> Result<Option<i64>, EngineError> {
        let (_, trials) = self.trials_now(study).await?;
        let spec = study.spec.clone();
        self.compute(study, Class::Waited, move || {
            let objective = spec.objective();
            let done: Vec<&bo_core::Trial> = trials
                .iter()
                .filter(|t| {
                    t.state == TrialState::Succeeded
                        && t.final_measurement.as_ref().is_some_and(|m| m.metrics.contains_key(&objective.id) && spec.is_safe(&m.metrics))
                })
                .collect();
            // Partial trials (asked to stop) only while none was trained in full.
            let any_full = done.iter().any(|t| !t.is_partial());
            let done: Vec<(i64, &bo_core::Assignment)> =
                done.into_iter().filter(|t| !(any_full && t.is_partial())).map(|t| (t.id, &t.assignment)).collect();
            if done.is_empty() {
                return None;
            }
            let points: Vec<bo_core::Assignment> = done.iter().map(|(_, a)| (*a).clone()).collect();
            let predicted = fitted.model.predictor()?.predict(&points)?;
            done.iter()
                .zip(predicted)
                .reduce(|a, b| if objective.goal.better(b.1.median, a.1.median) { b } else { a })
                .map(|((id, _), _)| *id)
        })
        .await
    }
}
