//! Early-stopping decisions (`bo_core::stopping`): the median rule from running averages the
//! database aggregates; successive halving from the values at a rung it picks out; the curve
//! rules from the finished trials' thinned curves, computed on a blocking thread. The
//! decay-curve model is fitted once per data version (fits of one study take turns on its slot,
//! warm-started from the last θ) and kept in the study's slot; judging a trial only conditions it
//! on the trial's curve, and the same model predicts the final values of the partial trials a
//! refit learns from (`Engine::partial_estimates`, in `model/lifecycle.rs`, asks it). Nothing
//! here runs inside a transaction.

use std::sync::Arc;

use bo_core::stopping::decay_curve::{DecayCurveModel, too_few};
use bo_core::stopping::spec::MedianOf;
use bo_core::stopping::{Check, StoppingDecision, check, convex, median_decision, successive_halving};
use bo_core::{Goal, StoppingSpec, Trial};
use bo_store::StudyRecord;
use rand::SeedableRng;

use super::model::study_seed;
use super::permits::Class;
use super::slot::CurveFit;
use super::{Engine, EngineError};

/// How many positions past a trial's latest [`Engine::median_thresholds`] covers.
pub const THRESHOLD_POSITIONS: usize = 64;

/// The median rule's thresholds at a trial's next positions ([`Engine::median_thresholds`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    /// (position, threshold), in order from the trial's latest position; the threshold holds
    /// up to the next position; `None`: too few completed trials there, the trial goes on.
    pub points: Vec<(f64, Option<f64>)>,
    /// The last position they hold through; `None`: the last one holds for good.
    pub through: Option<f64>,
    /// Each holds at its own position only (the median of values at a position): elsewhere no
    /// completed trial was measured, and the trial goes on.
    pub pointwise: bool,
}

impl Engine {
    /// Whether `trial` (read just now) should stop, by the study's automated stopping rule.
    pub async fn early_stopping(&self, study: &StudyRecord, trial: Trial) -> Result<StoppingDecision, EngineError> {
        let spec = &study.spec;
        let objective = spec.objective();
        match check(spec.stopping.as_ref(), objective, &trial) {
            Check::Decided(decision) => Ok(decision),
            Check::Median { at, best, use_elapsed, min_completed, median_of } => {
                let averages = self.inner.store.running_averages(study.id, trial.id, at, use_elapsed, median_of).await?;
                Ok(median_decision(objective, at, best, averages, min_completed, median_of))
            }
            Check::Rung { rule, rung, value } => {
                let values = self.inner.store.values_at_rung(study.id, trial.id, rung, rule.use_elapsed_duration).await?;
                Ok(successive_halving::rung_decision(objective, &rule, trial.id, rung, value, values))
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

    /// Under the median rule, what a client needs to decide on `trial` at its next positions
    /// without asking (Optuna's `should_prune` between two answers): the rule's threshold — the
    /// median of the completed trials' running averages, or none while too few reached the
    /// position — at the trial's latest position and at the next [`THRESHOLD_POSITIONS`]
    /// positions where a completed trial was measured (between two of them it does not change).
    /// Under `medianOf: VALUE_AT_POSITION` each holds at its position only (`pointwise`).
    /// `None` under another rule, or for a trial without a measurement of the objective.
    pub async fn median_thresholds(&self, study: &StudyRecord, trial: &Trial) -> Result<Option<Thresholds>, EngineError> {
        let Some(StoppingSpec::Median(rule)) = &study.spec.stopping else { return Ok(None) };
        let use_elapsed = rule.use_elapsed_duration;
        let Some((at, _)) = bo_core::stopping::progress(study.spec.objective(), trial, use_elapsed) else { return Ok(None) };
        let limit = THRESHOLD_POSITIONS as i64 + 1;
        let mut positions = self.inner.store.measured_positions_after(study.id, trial.id, at, limit, use_elapsed).await?;
        let through = (positions.len() > THRESHOLD_POSITIONS).then(|| positions[THRESHOLD_POSITIONS - 1]);
        positions.truncate(THRESHOLD_POSITIONS);
        positions.insert(0, at);
        let pointwise = rule.median_of == MedianOf::ValueAtPosition;
        let averages = self.inner.store.running_averages_at(study.id, trial.id, &positions, use_elapsed, rule.median_of).await?;
        let min_completed = rule.min_completed();
        let points =
            positions.into_iter().zip(averages).map(|(p, a)| (p, bo_core::stopping::median::median_threshold(a, min_completed))).collect();
        Ok(Some(Thresholds { points, through, pointwise }))
    }

    /// The study's decay-curve model at its data version: kept, or fitted now on a blocking
    /// thread (warm from the last θ) and kept. `Err` carries why there is none.
    pub(super) async fn decay_curve_model(
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bo_core::stopping::partial;
    use bo_core::{Assignment, Completion, Measurement, MeasurementSelection, ParamValue, TrialState};
    use bo_store::NewTrial;

    use super::*;
    use crate::engine::{EngineConfig, testing};

    /// What a refit learns from a partial trial goes through the study's curve model: a trial
    /// stopped after 3 of 20 steps, whose last value is far from where its curve was heading, is
    /// learnt near its true final value.
    #[tokio::test]
    async fn a_refit_learns_a_partial_trial_at_its_predicted_final_value() {
        let store = testing::store().await;
        let study = testing::study(&store, "partial", serde_json::Value::Null).await;
        // Losses fall from 1 to (x − 0.3)² over 20 steps.
        let curve = |x: f64, steps: i64| -> Vec<Measurement> {
            (1..=steps)
                .map(|s| {
                    let level = (x - 0.3f64).powi(2);
                    let f = level + (1.0 - level) * (-(s as f64) / 3.0).exp();
                    Measurement { step_count: s, elapsed_secs: s as f64, metrics: BTreeMap::from([("f".to_owned(), f)]) }
                })
                .collect()
        };
        let new = |x: f64, steps: i64| NewTrial {
            assignment: Assignment::new(BTreeMap::from([("x".into(), ParamValue::Float(x))])),
            state: TrialState::Requested,
            measurements: curve(x, steps),
            final_measurement: None,
            infeasible_reason: String::new(),
            labels: BTreeMap::new(),
        };
        let mut spec = study.spec.clone();
        spec.measurement_selection = MeasurementSelection::Last;
        for x in [0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0] {
            let t = store.create_trial(study.id, new(x, 20), 1).await.unwrap();
            store.complete_trial(study.id, t.id, &spec, Completion::Selected, 2).await.unwrap();
        }
        let partial = store.create_trial(study.id, new(0.5, 3), 1).await.unwrap();
        store.stop_trial(study.id, partial.id, 3).await.unwrap();
        store.complete_trial(study.id, partial.id, &spec, Completion::Selected, 4).await.unwrap();

        let engine = Engine::new(store.clone(), &EngineConfig::default(), Arc::default());
        let study = store.study_by_id(study.id).await.unwrap();
        let (_, trials) = store.suggest_snapshot(study.id).await.unwrap();
        let estimates = engine.partial_estimates(&study, &Arc::new(trials.clone())).await.unwrap();
        assert_eq!(estimates.keys().copied().collect::<Vec<_>>(), vec![partial.id], "only the partial trial is predicted");
        let (last, truth) = (curve(0.5, 3)[2].metrics["f"], curve(0.5, 20)[19].metrics["f"]);
        let e = estimates[&partial.id];
        assert!((e.mean - truth).abs() < 0.5 * (last - truth).abs(), "predicted {e:?}, last {last}, truth {truth}");

        // Under successive halving the same trial is learnt at its rung value: nothing is
        // predicted, and the refit's observation is the last value.
        let mut halving = study.clone();
        halving.spec.stopping = Some(StoppingSpec::SuccessiveHalving(bo_core::stopping::spec::SuccessiveHalving {
            min_step_count: 1.0,
            max_step_count: 20.0,
            reduction_factor: 3.0,
            use_elapsed_duration: false,
            brackets: 1,
            promotion: bo_core::stopping::spec::Promotion::Quantile,
            resume: false,
        }));
        let trials = Arc::new(trials);
        assert!(engine.partial_estimates(&halving, &trials).await.unwrap().is_empty());
        let observed = partial::observations(&halving.spec, &trials, &BTreeMap::new());
        let at_rung = observed.iter().find(|o| o.assignment == trials.iter().find(|t| t.id == partial.id).unwrap().assignment).unwrap();
        assert_eq!(at_rung.outcome, bo_core::Outcome::Measured(BTreeMap::from([("f".to_owned(), last)])));
        assert_eq!(at_rung.objective_sd, None);
    }
}
