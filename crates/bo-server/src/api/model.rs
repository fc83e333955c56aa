//! bo's extensions for looking inside a study's model: `GET …/studies/{study}/model` (what the
//! fitted model learned) and `POST …/studies/{study}:predict` (posterior mean and standard
//! deviation of the objective at given parameters). The engine supplies the model (fitting one
//! if the study has none cached); this module never runs a designer.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ErrorBody};
use super::extract::{RawBody, parse_body};
use super::studies::{StudyPath, load_study};
use super::trials::engine_error;
use super::wire::trial::{ParameterW, assignment_from_wire};
use crate::state::AppState;

/// What a study's model learned.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelSummary {
    /// The study's algorithm.
    pub algorithm: String,
    /// The study's data version now (it grows with every completed, added or deleted trial).
    pub data_version: i64,
    /// The data version the model was fitted on.
    pub fitted_data_version: i64,
    /// Completed trials the model has seen.
    pub trials: usize,
    /// Suggestions computed in advance that the next suggest calls can take at once.
    pub precomputed_suggestions: usize,
    /// The designer's description: hyperparameters, structure.
    pub model: serde_json::Value,
}

/// The most points one `:predict` takes.
pub const MAX_PREDICT_POINTS: usize = 1000;

/// `:predict` request.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PredictRequest {
    /// The points, each a trial's parameters (exactly the active ones): 1 to 1,000.
    #[schema(min_items = 1, max_items = 1000)]
    pub trials: Vec<PredictPoint>,
}

/// One point to predict at.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PredictPoint {
    /// The parameters.
    pub parameters: Vec<ParameterW>,
}

/// `:predict` response.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PredictResponse {
    /// One per point, in order: the objective's posterior mean and standard deviation.
    pub predictions: Vec<PredictionW>,
}

/// A prediction.
#[derive(Serialize, ToSchema)]
pub struct PredictionW {
    /// Posterior mean of the objective (first metric), in its units.
    pub mean: f64,
    /// Posterior standard deviation.
    pub stddev: f64,
}

/// What the study's model learned (bo extension).
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/model", tag = "model",
    params(StudyPath), responses((status = 200, description = "success", body = ModelSummary), (status = 404, description = "no such study, trial or operation", body = ErrorBody)))]
pub async fn get_model(State(state): State<AppState>, Path(path): Path<StudyPath>) -> Result<Json<ModelSummary>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let entry = state.engine.model(&study).await.map_err(engine_error)?;
    Ok(Json(ModelSummary {
        algorithm: study.spec.algorithm.clone(),
        data_version: study.data_version,
        fitted_data_version: entry.data_version,
        trials: entry.trial_ids.len(),
        precomputed_suggestions: state.engine.precomputed(study.id).await.map_err(engine_error)?,
        model: entry.model.describe(),
    }))
}

/// Posterior mean and standard deviation of the objective at given parameters (bo extension).
/// Studies whose algorithm has no predictive model (random, quasi-random, grid, or a GP study
/// still in its initial design) answer 400.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}:predict", tag = "model",
    params(StudyPath), request_body = PredictRequest,
    responses((status = 200, description = "success", body = PredictResponse),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBody),
              (status = 404, description = "no such study, trial or operation", body = ErrorBody)))]
pub async fn predict(state: AppState, path: StudyPath, body: PredictRequest) -> Result<Json<PredictResponse>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
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
        .map(|(i, p)| assignment_from_wire(p.parameters, &study.spec.space).map_err(|e| ApiError::from(e.under(&format!("trials[{i}]")))))
        .collect::<Result<Vec<_>, _>>()?;
    let entry = state.engine.model(&study).await.map_err(engine_error)?;
    // The posterior at up to a thousand points: model work, off the runtime.
    let predicted = tokio::task::spawn_blocking(move || entry.model.predict(&points))
        .await
        .map_err(|e| ApiError::new(super::error::Code::Internal, format!("the model panicked while predicting: {e}")))?;
    let Some(predictions) = predicted else {
        return Err(ApiError::precondition(format!(
            "the study's model does not predict: {} studies have no predictive model, or the study is still in its initial design (the GP designers predict once it is complete)",
            study.spec.algorithm
        )));
    };
    Ok(Json(PredictResponse { predictions: predictions.into_iter().map(|p| PredictionW { mean: p.mean, stddev: p.stddev }).collect() }))
}

/// `POST …/studies/{study}:{verb}`: the study methods with a verb (`:predict`).
pub async fn post_study_verb(
    State(state): State<AppState>,
    Path((project, location, study_verb)): Path<(String, String, String)>,
    RawBody(body): RawBody,
) -> Result<Json<PredictResponse>, ApiError> {
    match study_verb.split_once(':') {
        Some((study, "predict")) => {
            let path = StudyPath { project, location, study: study.to_owned() };
            let body = parse_body(body, &state.access.limits).await?;
            predict(state, path, body).await
        }
        _ => Err(ApiError::not_found(format!("POST {} is not a method; study methods are :predict", super::wire::shown(&study_verb)))),
    }
}
