//! GetOperation: the stored Operation of a suggest or early-stopping call, answered as the call
//! was (with the trials as they are now) — or, for a suggest still being computed, `done: false`.

use axum::Json;
use axum::extract::{Path, State};
use bo_store::{Load, Operation, OperationKind, StoreError, StudyRecord};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, Code, ErrorBodyW};
use super::extract::load_study;
use super::extract::{PathVersion, parse_id};
use super::state::AppState;
use crate::wire::format_time;
use crate::wire::operation::{
    ApiVersion, OperationW, StatusW, early_stopping_operation, failed_suggest_operation, finished_suggest_operation,
    pending_suggest_operation,
};
use crate::wire::study::StudyStateW;
use crate::wire::study::study_name;
use crate::wire::trial::TrialW;

/// An operation of a study.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct OperationPath {
    /// The project (tenant).
    pub project: String,
    /// The location.
    pub location: String,
    /// The study's number.
    pub study: String,
    /// The operation's number.
    pub operation: String,
}

/// An operation of a trial.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TrialOperationPath {
    /// The project (tenant).
    pub project: String,
    /// The location.
    pub location: String,
    /// The study's number.
    pub study: String,
    /// The trial's number.
    pub trial: String,
    /// The operation's number.
    pub operation: String,
}

/// GetOperation (google.longrunning) for a suggest.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/operations/{operation}", tag = "operations",
    params(OperationPath), responses((status = 200, description = "success", body = OperationW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn get_operation(
    State(state): State<AppState>,
    PathVersion(version): PathVersion,
    Path(path): Path<OperationPath>,
) -> Result<Json<OperationW>, ApiError> {
    operation(&state, version, &path.project, &path.location, &path.study, None, &path.operation).await
}

/// GetOperation (google.longrunning) for an early-stopping check.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}/operations/{operation}", tag = "operations",
    params(TrialOperationPath), responses((status = 200, description = "success", body = OperationW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn get_trial_operation(
    State(state): State<AppState>,
    PathVersion(version): PathVersion,
    Path(path): Path<TrialOperationPath>,
) -> Result<Json<OperationW>, ApiError> {
    operation(&state, version, &path.project, &path.location, &path.study, Some(&path.trial), &path.operation).await
}

/// The operation, naming the messages of the version its path names — or, polled under `/ui/`,
/// of the version it was asked through.
async fn operation(
    state: &AppState,
    version: Option<ApiVersion>,
    project: &str,
    location: &str,
    study: &str,
    trial: Option<&str>,
    raw_op: &str,
) -> Result<Json<OperationW>, ApiError> {
    let study = load_study(state, project, location, study).await?;
    let sname = study_name(&study);
    let missing = || ApiError::not_found(format!("operation {raw_op:?} of {sname} not found"));
    let op_id = parse_id("operation", raw_op).map_err(|_| missing())?;
    let op = state.store.get_operation(study.id, op_id).await.map_err(|e| match e {
        StoreError::NotFound(_) => missing(),
        e => e.into(),
    })?;
    let version = version.unwrap_or_else(|| ApiVersion::parse(&op.api_version));
    match (&op.kind, trial) {
        (OperationKind::Suggest { .. }, None) => Ok(Json(operation_to_wire(state, &study, op).await?.in_version(version))),
        (OperationKind::EarlyStopping { trial_id, should_stop }, Some(raw_trial)) if raw_trial == trial_id.to_string() => {
            let trial_name = format!("{sname}/trials/{trial_id}");
            let time = format_time(op.create_time_ms);
            let answer = early_stopping_operation(format!("{trial_name}/operations/{op_id}"), &sname, &trial_name, &time, *should_stop);
            Ok(Json(answer.in_version(version)))
        }
        _ => Err(missing()),
    }
}

/// A suggest operation as the API shows it: pending, failed, or done with its trials as they
/// are now (those deleted since left out).
pub(crate) async fn operation_to_wire(state: &AppState, study: &StudyRecord, op: Operation) -> Result<OperationW, ApiError> {
    let sname = study_name(study);
    let name = format!("{sname}/operations/{}", op.id);
    let (created, updated) = (format_time(op.create_time_ms), format_time(op.update_time_ms));
    let OperationKind::Suggest { client_id, trial_ids, study_completed } = op.kind else {
        return Err(ApiError::new(super::error::Code::Internal, "not a suggest operation"));
    };
    if !op.done {
        return Ok(pending_suggest_operation(name, &client_id, &created));
    }
    if let Some(message) = op.error {
        return Ok(failed_suggest_operation(name, &client_id, &created, &updated, StatusW { code: Code::Internal.faces().1, message }));
    }
    // One read for all of them, those deleted since left out, in the order they were handed out.
    let found = state.store.trials_by_id(study.id, &trial_ids, Load::Full).await?;
    let trials = found.iter().map(|t| TrialW::from_domain(t, &sname, &study.spec.space)).collect();
    let study_state = if study_completed { StudyStateW::COMPLETED } else { StudyStateW::ACTIVE };
    Ok(finished_suggest_operation(name, &client_id, &created, &updated, trials, study_state))
}
