//! A study's parameter importance (`bo_core::importance`): PED-ANOVA over its completed trials
//! and Sobol indices of its model's posterior mean, computed under a permit of the engine's
//! pool and kept in the study's slot by data version — once per version, however many ask at
//! once. Background jobs compute it after each refit; a request computes it only for a small
//! study, and otherwise answers with the last report while a job computes the current one.

use std::sync::Arc;

use bo_core::importance::{PedAnova, SobolIndices, TermShare, ped_anova, sobol_indices, term_shares};
use bo_core::{Assignment, Observation, Outcome, Trial};
use bo_store::StudyRecord;

use super::model;
use super::model::study_seed;
use super::permits::Class;
use super::{Engine, EngineError};
use crate::sync::lock;

/// Studies with at most this many trials have their importance computed on request.
pub const ON_REQUEST_TRIALS: usize = 2_000;
/// Predictions one Sobol estimate may cost, in units of (trials seen by the model)²: the base
/// sample shrinks as the model grows, between [`SOBOL_MIN_BASE`] and [`SOBOL_MAX_BASE`].
const SOBOL_BUDGET: f64 = 4e8;
const SOBOL_MIN_BASE: usize = 64;
const SOBOL_MAX_BASE: usize = 1024;
/// Beyond this many trials seen by the model, no Sobol indices (each prediction costs O(n²)).
pub const SOBOL_MAX_TRIALS: usize = 5_000;

/// What a study's importance was found to be.
#[derive(Debug)]
pub struct Report {
    /// The data version it was computed at.
    pub data_version: i64,
    /// The metric judged (the study's first).
    pub metric_id: String,
    /// Completed trials with a value of it.
    pub trials: usize,
    /// PED-ANOVA per parameter; `None` with too few trials.
    pub ped_anova: Option<Vec<PedAnova>>,
    /// Sobol indices of the model's posterior mean per parameter, and the number of base points;
    /// `None` when the model does not predict.
    pub sobol: Option<(Vec<SobolIndices>, usize)>,
    /// Why there are no Sobol indices, when there are none.
    pub sobol_absent: Option<String>,
    /// For an additive model, each term's share of its variation.
    pub terms: Option<Vec<TermShare>>,
}

/// Where the answer to a request stands.
pub enum Answer {
    /// The report at the study's current data version.
    Current(Arc<Report>),
    /// An older report (or none) while a background job computes the current one.
    Computing(Option<Arc<Report>>),
}

impl Engine {
    /// The study's importance now: cached, computed for a small study, else the last report
    /// while the background computes (see the module docs).
    pub async fn importance(&self, study: &StudyRecord) -> Result<Answer, EngineError> {
        let slot = self.inner.slots.get(study.id);
        let last = lock(&slot.importance).clone();
        if let Some(report) = last.as_ref().filter(|r| r.data_version == study.data_version) {
            return Ok(Answer::Current(report.clone()));
        }
        // The study's size from its next trial id (ids are never reused: an upper bound), so a
        // large study is not read on the request path at all.
        let size = self.inner.store.study_basis(study.id).await?.next_trial_id - 1;
        if size > ON_REQUEST_TRIALS as i64 {
            self.schedule_importance(study);
            return Ok(Answer::Computing(last));
        }
        Ok(Answer::Current(self.current_importance(study, Class::Waited).await?))
    }

    /// The study's importance at its current data version: the kept report, else one computed
    /// now — once per version: callers arriving together wait for one computation (the slot's
    /// `importance_computing` lock) and take its report, so a burst of requests costs one fit.
    pub(super) async fn current_importance(&self, study: &StudyRecord, class: Class) -> Result<Arc<Report>, EngineError> {
        let slot = self.inner.slots.get(study.id);
        let _one_at_a_time = slot.importance_computing.lock().await;
        let (basis, trials) = self.trials_now(study).await?;
        if let Some(report) = lock(&slot.importance).as_ref().filter(|r| r.data_version >= basis.data_version) {
            return Ok(report.clone());
        }
        let model = self.model_at(study, basis.data_version, &trials, class).await?;
        self.inner.hooks.reached(super::hooks::Point::Importance).await?;
        let owned = study.clone();
        let report = Arc::new(self.compute(study, class, move || report(&owned, basis.data_version, &trials, model)).await?);
        let mut kept = lock(&slot.importance);
        if kept.as_ref().is_none_or(|k| k.data_version <= report.data_version) {
            *kept = Some(report.clone());
        }
        Ok(report)
    }
}

impl Engine {
    /// The study's model of exactly the trials read at `data_version`, for Sobol indices that
    /// describe the same data as the rest of the report: the cached model when it is of that
    /// version (or the designer learns nothing), else one fitted now — under the study's fitting
    /// lock, so a suggest or refit fitting the same version meanwhile is taken up, not repeated
    /// — and kept; `None` when the designer fails (never its stand-in).
    async fn model_at(
        &self,
        study: &StudyRecord,
        data_version: i64,
        trials: &Arc<Vec<Trial>>,
        class: Class,
    ) -> Result<Option<(Arc<dyn bo_core::Model>, usize)>, EngineError> {
        let learns = self.designer(study).is_ok_and(|d| d.learns());
        let current = |e: &Arc<super::FittedModel>| e.data_version == data_version || !learns;
        let fitted = match self.inner.cache.get(study.id, study.spec.space_revision) {
            Some(e) if current(&e) => e,
            None if !learns => self.model(study).await?,
            _ => {
                let slot = self.inner.slots.get(study.id);
                let _fitting = slot.fitting.lock().await;
                match self.inner.cache.get(study.id, study.spec.space_revision).filter(current) {
                    Some(e) => e,
                    None => {
                        let warm = model::warm_state(&self.inner.store, &self.inner.cache, study, data_version).await?;
                        match self.fit(study, data_version, trials.clone(), warm, class).await {
                            Ok(fitted) => {
                                if let Err(e) = model::keep(&self.inner.store, &self.inner.cache, study.id, fitted.clone()).await {
                                    tracing::warn!(study = study.id, error = %e, "could not keep a fitted model");
                                }
                                fitted
                            }
                            Err(EngineError::Fit(e)) => {
                                tracing::warn!(study = study.id, error = %e, "the designer failed to fit; importance without Sobol indices");
                                return Ok(None);
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        };
        Ok((!fitted.fallback).then(|| (fitted.model.clone(), fitted.trial_ids.len())))
    }
}

/// The report: CPU work, on a blocking thread.
fn report(study: &StudyRecord, data_version: i64, trials: &[Trial], model: Option<(Arc<dyn bo_core::Model>, usize)>) -> Report {
    let metric = study.spec.objective().clone();
    let observed: Vec<(&Assignment, f64)> = trials
        .iter()
        .filter_map(|t| match Observation::from_trial(t)?.outcome {
            Outcome::Measured(values) => values.get(&metric.id).map(|v| (&t.assignment, *v)),
            _ => None,
        })
        .collect();
    let ped = ped_anova(&study.spec.space, &observed, metric.goal);
    let d = study.spec.space.n_params();
    let (sobol, sobol_absent) = match model.as_ref().map(|(m, n)| (m, *n)) {
        None => (None, Some(format!("{} keeps no model of the objective", study.spec.algorithm))),
        Some((_, n)) if n > SOBOL_MAX_TRIALS => {
            (None, Some(format!("the model has seen {n} trials; Sobol indices are computed up to {SOBOL_MAX_TRIALS}")))
        }
        Some((model, n)) => {
            let base = ((SOBOL_BUDGET / ((d + 2) as f64 * (n.max(1) as f64).powi(2))) as usize).clamp(SOBOL_MIN_BASE, SOBOL_MAX_BASE);
            // The variation of the model's median: under an output warp its mean is an integral
            // per point, and the median is the warp's image of the GP's mean.
            let median = |points: &[Assignment]| model.predictor()?.predict(points).map(|p| p.into_iter().map(|p| p.median).collect());
            match sobol_indices(&study.spec.space, base, study_seed(study), median) {
                Some(s) => (Some((s, base)), None),
                None => match model.predictor().and_then(|p| p.predicts_only()) {
                    Some(only) => {
                        (None, Some(format!("{} predicts only {only}, and Sobol indices need it across the space", study.spec.algorithm)))
                    }
                    None => (
                        None,
                        Some("the model does not predict yet (random or grid search, or a GP still in its initial design)".to_owned()),
                    ),
                },
            }
        }
    };
    let terms = sobol.as_ref().zip(model.as_ref()).and_then(|((_, base), (model, _))| {
        term_shares(&study.spec.space, *base, study_seed(study) ^ 0x7465_726d, |points| model.predictor()?.term_means(points))
    });
    Report { data_version, metric_id: metric.id, trials: observed.len(), ped_anova: ped, sobol, sobol_absent, terms }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::hooks::Point;
    use crate::engine::{EngineConfig, testing};

    /// A study larger than the on-request bound is not read on the request path: the answer
    /// says `computing` and the study's job computes the report, which the next request gets.
    #[tokio::test]
    async fn a_large_study_is_computed_in_the_background() {
        let store = testing::store().await;
        let study = testing::study(&store, "large", serde_json::json!({})).await;
        for k in 0..=ON_REQUEST_TRIALS {
            testing::complete(&store, &study, (k as f64 * 0.618_034) % 1.0).await;
        }
        let study = store.get_study("p", "l", study.number).await.unwrap();
        let config = EngineConfig { max_suggest_wait: Duration::from_secs(30), prefetch: 0, ..EngineConfig::default() };
        let engine = Engine::new(store.clone(), &config, Arc::default());
        let mut reached = engine.inner.hooks.watch();
        assert!(matches!(engine.importance(&study).await.unwrap(), Answer::Computing(None)));
        while reached.recv().await != Some(Point::JobEnded) {}
        match engine.importance(&study).await.unwrap() {
            Answer::Current(report) => {
                assert_eq!(report.trials, ON_REQUEST_TRIALS + 1);
                assert_eq!(report.data_version, study.data_version);
                assert!(report.ped_anova.is_some(), "{report:?}");
                // A GP on 2,001 trials: the Sobol sample shrinks to its floor.
                assert_eq!(report.sobol.as_ref().map(|(_, base)| *base), Some(SOBOL_MIN_BASE), "{report:?}");
            }
            Answer::Computing(_) => panic!("the job has computed it"),
        }
    }

    /// 32 requests for the importance of a study without a model, at once: one fit and one
    /// report, which all of them get.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_cost_one_fit_and_one_report() {
        let store = testing::store().await;
        let study = testing::study(&store, "burst", serde_json::json!({})).await;
        for k in 0..30 {
            testing::complete(&store, &study, (k as f64 * 0.618_034) % 1.0).await;
        }
        let study = store.get_study("p", "l", study.number).await.unwrap();
        let config = EngineConfig { prefetch: 0, ..EngineConfig::default() };
        let engine = Engine::new(store.clone(), &config, Arc::default());
        let mut reached = engine.inner.hooks.watch();
        let asks: Vec<_> = (0..32)
            .map(|_| {
                let (engine, study) = (engine.clone(), study.clone());
                tokio::spawn(async move { engine.importance(&study).await })
            })
            .collect();
        let mut versions = Vec::new();
        for ask in asks {
            match ask.await.unwrap().unwrap() {
                Answer::Current(report) => versions.push(report.data_version),
                Answer::Computing(_) => panic!("a small study is computed on request"),
            }
        }
        assert!(versions.iter().all(|v| *v == study.data_version));
        let mut seen = Vec::new();
        while let Ok(point) = reached.try_recv() {
            seen.push(point);
        }
        assert_eq!(seen.iter().filter(|p| **p == Point::Fit).count(), 1, "{seen:?}");
        assert_eq!(seen.iter().filter(|p| **p == Point::Importance).count(), 1, "{seen:?}");
    }
}
