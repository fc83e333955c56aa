//! Early-stopping decisions (`bo_core::stopping`): the median rule from running averages the
//! database aggregates; the curve rules from the finished trials' thinned curves, computed on a
//! blocking thread. The decay-curve model is fitted once per data version (fits of one study take
//! turns on its slot, warm-started from the last θ) and kept in the study's slot; judging a trial
//! only conditions it on the trial's curve. Nothing here runs inside a transaction.

use std::sync::Arc;

use bo_core::Trial;
use bo_core::stopping::decay_curve::{DecayCurveModel, too_few};
use bo_core::stopping::{Check, StoppingDecision, check, convex, median_decision};
use bo_core::{Goal, StoppingSpec};
use bo_store::StudyRecord;
use rand::SeedableRng;

use super::permits::Class;
use super::slot::CurveFit;
use super::{Engine, EngineError, study_seed};

impl Engine {
    /// Whether `trial` (read just now) should stop, by the study's automated stopping rule.
    pub async fn early_stopping(&self, study: &StudyRecord, trial: Trial) -> Result<StoppingDecision, EngineError> {
        let spec = &study.spec;
        let objective = spec.objective();
        match check(spec.stopping.as_ref(), objective, &trial) {
            Check::Decided(decision) => Ok(decision),
            Check::Median { at, best, use_elapsed } => {
                let averages = self.inner.store.running_averages(study.id, trial.id, at, use_elapsed).await?;
                Ok(median_decision(objective, at, best, averages))
            }
            Check::Curves { use_elapsed } => {
                let maximize = objective.goal == Goal::Maximize;
                if let Some(StoppingSpec::Convex(rule)) = &spec.stopping {
                    let finished = self.inner.store.finished_curves(study.id, trial.id, use_elapsed, maximize).await?;
                    let (rule, spec) = (rule.clone(), spec.clone());
                    return self.compute(study, Class::Waited, move || convex::decide(&rule, &spec, &finished, &trial)).await;
                }
                let objective = objective.clone();
                match self.decay_curve_model(study, use_elapsed, maximize).await? {
                    Ok(model) => self.compute(study, Class::Waited, move || model.decide(&objective, &trial)).await,
                    Err(reason) => Ok(StoppingDecision::go_on(reason)),
                }
            }
        }
    }

    /// The study's decay-curve model at its data version: kept, or fitted now on a blocking
    /// thread (warm from the last θ) and kept. `Err` carries why there is none.
    async fn decay_curve_model(
        &self,
        study: &StudyRecord,
        use_elapsed: bool,
        maximize: bool,
    ) -> Result<Result<Arc<DecayCurveModel>, String>, EngineError> {
        let slot = self.inner.slots.get(study.id);
        let mut kept = slot.decay_curve.lock().await;
        if let Some(fit) = kept.as_ref().filter(|f| f.data_version == study.data_version) {
            return Ok(fit.model.clone().ok_or_else(|| fit.reason.clone()));
        }
        // Trial ids start at 1: nothing is left out.
        let finished = self.inner.store.finished_curves(study.id, 0, use_elapsed, maximize).await?;
        let warm = kept.as_ref().and_then(|f| f.warm.clone());
        let spec = study.spec.clone();
        let seed = study_seed(study) ^ study.data_version as u64;
        let (model, reason) = self
            .compute(study, Class::Waited, move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                match DecayCurveModel::fit(&spec, &finished, warm.as_ref(), &mut rng) {
                    Ok(Some(model)) => (Some(Arc::new(model)), String::new()),
                    Ok(None) => (None, too_few(&finished)),
                    Err(e) => (None, format!("the curve model could not be fitted: {e}")),
                }
            })
            .await?;
        let warm = model.as_ref().map(|m| m.hyperparameters()).or_else(|| kept.as_ref().and_then(|f| f.warm.clone()));
        *kept = Some(CurveFit { data_version: study.data_version, model: model.clone(), reason: reason.clone(), warm });
        Ok(model.ok_or(reason))
    }
}
