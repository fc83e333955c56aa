//! bo's extensions for looking inside a study's model: `GET …/studies/{study}/model` (what the
//! fitted model learned) and `POST …/studies/{study}:predict` (the predictive distribution of
//! the objective at given parameters, or along one of a REMBO model's random embeddings). The engine supplies the model (fitting one
//! if the study has none cached); this module never runs a designer.

use axum::Json;
use axum::extract::{Path, State};

use super::error::{ApiError, ErrorBodyW};
use super::extract::{StudyPath, load_study};
use super::state::AppState;
use crate::engine::{EmbeddedRefusal, ImportanceAnswer};
use crate::wire::model::{
    EmbeddedPointsW, ImportanceW, MetricPredictionW, ModelSummaryW, ParameterImportanceW, PredictRequestW, PredictResponseW, PredictionW,
    TermShareW,
};
use crate::wire::trial::assignment_from_wire;

/// The most points one `:predict` takes.
pub const MAX_PREDICT_POINTS: usize = 1000;

/// What the study's model learned (bo extension).
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/model", tag = "model",
    params(StudyPath), responses((status = 200, description = "success", body = ModelSummaryW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn get_model(State(state): State<AppState>, Path(path): Path<StudyPath>) -> Result<Json<ModelSummaryW>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let (fitted, described) = state.engine.described(&study).await?;
    Ok(Json(ModelSummaryW {
        algorithm: study.spec.algorithm.clone(),
        data_version: study.data_version,
        fitted_data_version: fitted.data_version,
        trials: fitted.trial_ids.len(),
        fitted_on_trials: fitted.fitted_on,
        precomputed_suggestions: state.engine.precomputed(&study).await?,
        model: described,
    }))
}

/// Which parameters matter (bo extension): PED-ANOVA over the completed trials and Sobol
/// indices of the model's posterior mean. Computed on request for studies of up to 2,000
/// trials; for larger ones a background job computes them (and keeps them current after each
/// refit) while the answer says `computing` and carries the last numbers.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/importance", tag = "model",
    params(StudyPath), responses((status = 200, description = "success", body = ImportanceW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn get_importance(State(state): State<AppState>, Path(path): Path<StudyPath>) -> Result<Json<ImportanceW>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let (report, computing) = match state.engine.importance(&study).await? {
        ImportanceAnswer::Current(r) => (Some(r), false),
        ImportanceAnswer::Computing(r) => (r, true),
    };
    let parameters = study
        .spec
        .space
        .params()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let ped = report.as_ref().and_then(|r| r.ped_anova.as_ref()).and_then(|v| v.get(i));
            let sobol = report.as_ref().and_then(|r| r.sobol.as_ref()).and_then(|(v, _)| v.get(i));
            ParameterImportanceW {
                parameter_id: p.id.clone(),
                ped_anova: ped.map(|x| x.importance),
                active_trials: ped.map_or(0, |x| x.trials),
                sobol_first: sobol.map(|s| s.first),
                sobol_total: sobol.map(|s| s.total),
            }
        })
        .collect();
    Ok(Json(ImportanceW {
        data_version: study.data_version,
        computed_data_version: report.as_ref().map(|r| r.data_version),
        computing,
        metric_id: study.spec.objective().id.clone(),
        trials: report.as_ref().map_or(0, |r| r.trials),
        sobol_base_points: report.as_ref().and_then(|r| r.sobol.as_ref()).map(|(_, n)| *n),
        sobol_absent: report.as_ref().and_then(|r| r.sobol_absent.clone()),
        parameters,
        terms: report
            .as_ref()
            .and_then(|r| r.terms.as_ref())
            .map(|t| t.iter().map(|t| TermShareW { name: t.name.clone(), share: t.share }).collect())
            .unwrap_or_default(),
    }))
}

/// The model's predictive distribution of the objective at given parameters — median, central
/// 90 % interval, and mean and standard deviation where finite (bo extension).
/// Studies whose algorithm has no predictive model (random, quasi-random, grid, or a GP study
/// still in its initial design) answer 400.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}:predict", tag = "model",
    params(StudyPath), request_body = PredictRequestW,
    responses((status = 200, description = "success", body = PredictResponseW),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW),
              (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn predict(state: AppState, path: StudyPath, body: PredictRequestW) -> Result<Json<PredictResponseW>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    if let Some(embedded) = body.embedded {
        if !body.trials.is_empty() {
            return Err(ApiError::invalid("trials: points are given as trials or as embedded, not both"));
        }
        return predict_embedded(&state, &study, embedded).await;
    }
    if body.trials.is_empty() {
        return Err(ApiError::invalid("trials: at least one point to predict at"));
    }
    if body.trials.len() > MAX_PREDICT_POINTS {
        return Err(ApiError::invalid(format!("trials: {} points, at most {MAX_PREDICT_POINTS} per request", body.trials.len())));
    }
    let points = body
        .trials
        .into_iter()
        .enumerate()
        .map(|(i, p)| assignment_from_wire(p.parameters, &study.spec).map_err(|e| ApiError::from(e.under(&format!("trials[{i}]")))))
        .collect::<Result<Vec<_>, _>>()?;
    let (predictions, per_metric) = match state.engine.predict(&study, points).await? {
        Ok(p) => (p.objective, p.metrics),
        Err(only) => {
            return Err(ApiError::precondition(match only {
                Some(only) => format!("the study's model does not predict at these points: {} predicts only {only}", study.spec.algorithm),
                None => format!(
                    "the study's model does not predict: {} studies have no predictive model, or the study is still in its initial design (the GP designers predict once it is complete)",
                    study.spec.algorithm
                ),
            }));
        }
    };
    let metrics_at = |i: usize| per_metric.as_ref().map(|m| m.iter().map(|(id, p)| (id.clone(), MetricPredictionW::from(&p[i]))).collect());
    Ok(Json(PredictResponseW {
        predictions: predictions
            .iter()
            .enumerate()
            .map(|(i, p)| PredictionW { objective: MetricPredictionW::from(p), metrics: metrics_at(i) })
            .collect(),
    }))
}

/// `:predict` along one of the model's random embeddings (`embedded`).
async fn predict_embedded(
    state: &AppState,
    study: &bo_store::StudyRecord,
    embedded: EmbeddedPointsW,
) -> Result<Json<PredictResponseW>, ApiError> {
    let n = embedded.points.len();
    if n == 0 || n > MAX_PREDICT_POINTS {
        return Err(ApiError::invalid(format!("embedded.points: {n} points; 1 to {MAX_PREDICT_POINTS} per request")));
    }
    match state.engine.predict_embedded(study, embedded.embedding, embedded.points).await? {
        Ok(predictions) => Ok(Json(PredictResponseW {
            predictions: predictions.iter().map(|p| PredictionW { objective: MetricPredictionW::from(p), metrics: None }).collect(),
        })),
        Err(EmbeddedRefusal::Invalid(why)) => Err(ApiError::invalid(why)),
        Err(EmbeddedRefusal::NoEmbeddings) => Err(ApiError::precondition(format!(
            "embedded: the study's model has no random embeddings ({} predicts at trials' parameters: give trials instead); embedded points are for REMBO's LOW_DIM kernel",
            study.spec.algorithm
        ))),
    }
}
