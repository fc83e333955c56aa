//! Trial methods: SuggestTrials, CreateTrial, GetTrial, ListTrials, DeleteTrial,
//! AddTrialMeasurement, CompleteTrial, StopTrial, CheckTrialEarlyStoppingState,
//! ListOptimalTrials.
//!
//! Every change to a trial goes through one store transaction holding the study's lock, and the
//! rules (what a state allows, what a measurement must contain) are checked inside it, so a
//! refused request changes nothing.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use bo_core::stopping::StoppingDecision;
use bo_core::{Completion, Trial, TrialState};
use bo_store::{Load, NewTrial, StoreError, StudyRecord};
use serde::Deserialize;
use utoipa::IntoParams;

use bo_core::Limit;

use super::error::{ApiError, ErrorBodyW, over_limit};
use super::extract::PathVersion;
use super::extract::{AppJson, RawBody, parse_body, parse_id};
use super::extract::{StudyPath, load_study};
use super::page::{Page, TrialPageParams};
use super::state::AppState;
use crate::engine::SuggestReply;
use crate::wire::format_time;
use crate::wire::measurement::measurement_from_wire;
use crate::wire::operation::{ApiVersion, OperationW, early_stopping_operation, suggest_operation};
use crate::wire::request::{
    AddParametersRequestW, AddTrialMeasurementRequestW, CompleteTrialRequestW, EmptyRequestW, ListOptimalTrialsResponseW,
    ListTrialsResponseW, SuggestTrialsRequestW, TrialContextW,
};
use crate::wire::study::StudyStateW;
use crate::wire::study::{state_to_wire, study_name};
use crate::wire::trial::{EarlyStoppingAnswerW, ThresholdW, TrialStateW, TrialW, assignment_from_wire, context_from_wire};

/// A trial: `projects/{project}/locations/{location}/studies/{study}/trials/{trial}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TrialPath {
    /// The project (tenant).
    pub project: String,
    /// The location.
    pub location: String,
    /// The study's number.
    pub study: String,
    /// The trial's number.
    pub trial: String,
}

fn trial_to_wire(study: &StudyRecord, trial: &Trial) -> TrialW {
    TrialW::from_domain(trial, &study_name(study), &study.spec.space)
}

fn trial_not_found(study: &StudyRecord, raw: &str) -> ApiError {
    ApiError::not_found(format!("trial {}/trials/{raw} not found", study_name(study)))
}

/// Names the trial in a not-found error from the store.
fn map_trial_error(study: &StudyRecord, raw: &str) -> impl Fn(ApiError) -> ApiError {
    let study = study.clone();
    let raw = raw.to_owned();
    move |e| if e.is_not_found() { trial_not_found(&study, &raw) } else { e }
}

async fn load(state: &AppState, path: &TrialPath) -> Result<(StudyRecord, i64), ApiError> {
    let study = load_study(state, &path.project, &path.location, &path.study).await?;
    let id = parse_id("trial", &path.trial).map_err(|_| trial_not_found(&study, &path.trial))?;
    Ok((study, id))
}

/// SuggestTrials — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/suggest>.
/// Returns an Operation: done, with the trials, when they are ready within the server's bound
/// (`--max-suggest-wait`, 5 s by default — only a first fit on a large study takes longer);
/// otherwise `done: false`, to poll with `GET …/operations/{id}` (the same client asking again
/// gets the same pending operation). A client holding ACTIVE trials gets them back; otherwise
/// REQUESTED trials are handed out first, then new ones from the study's algorithm.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials:suggest", tag = "trials",
    params(StudyPath), request_body = SuggestTrialsRequestW,
    responses((status = 200, description = "an Operation: done with the trials in its response, or pending (poll it)", body = OperationW),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn suggest_trials(
    State(state): State<AppState>,
    PathVersion(version): PathVersion,
    Path(path): Path<StudyPath>,
    AppJson(body): AppJson<SuggestTrialsRequestW>,
) -> Result<Json<OperationW>, ApiError> {
    let version = version.unwrap_or(ApiVersion::V1);
    let limits = &state.access.limits;
    if body.suggestion_count < 1 {
        return Err(ApiError::invalid(format!("suggestionCount: must be at least 1, got {}", body.suggestion_count)));
    }
    limits.check(Limit::SuggestionCount, body.suggestion_count as usize).map_err(|o| over_limit("suggestionCount", o))?;
    if body.client_id.is_empty() {
        return Err(ApiError::invalid("clientId: required; the same clientId gets its pending trials back"));
    }
    bo_core::trial::check_labels(&body.labels, limits)?;
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let name = |id: i64| format!("{}/operations/{id}", study_name(&study));
    let reply = if body.contexts.is_empty() {
        state.engine.suggest(&study, &body.client_id, body.suggestion_count as usize, version.as_str(), &body.labels).await?
    } else {
        let contexts = contexts_from_wire(body.contexts, body.suggestion_count, &study)?;
        state.engine.suggest_in_contexts(&study, &body.client_id, contexts, version.as_str(), &body.labels).await?
    };
    match reply {
        SuggestReply::Done(outcome) => {
            let study_state = if outcome.exhausted { StudyStateW::COMPLETED } else { state_to_wire(study.state) };
            if outcome.exhausted {
                tracing::info!(study = %study_name(&study), "search space exhausted; study completed");
            }
            let trials: Vec<TrialW> = outcome.trials.iter().map(|t| trial_to_wire(&study, t)).collect();
            let now = format_time(crate::clock::now_ms());
            Ok(Json(suggest_operation(name(outcome.operation_id), &body.client_id, &now, trials, study_state).in_version(version)))
        }
        SuggestReply::Pending(op) => Ok(Json(super::operations::operation_to_wire(&state, &study, op).await?.in_version(version))),
    }
}

/// A suggest's contexts, checked: one per suggestion, each a slice of the study's space.
fn contexts_from_wire(contexts: Vec<TrialContextW>, count: i64, study: &StudyRecord) -> Result<Vec<bo_core::Assignment>, ApiError> {
    if contexts.len() as i64 != count {
        return Err(ApiError::invalid(format!(
            "contexts: give none or one per suggestion; suggestionCount is {count} and there are {} contexts",
            contexts.len()
        )));
    }
    contexts
        .into_iter()
        .enumerate()
        .map(|(i, c)| context_from_wire(c.parameters, &study.spec.space).map_err(|e| ApiError::from(e.under(&format!("contexts[{i}]")))))
        .collect()
}

/// CreateTrial — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/create>.
/// Adds a trial: with a `finalMeasurement` it is SUCCEEDED (evaluated elsewhere), with state
/// INFEASIBLE it is infeasible, otherwise REQUESTED and handed out by the next suggest.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials", tag = "trials",
    params(StudyPath), request_body = TrialW,
    responses((status = 200, description = "success", body = TrialW), (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn create_trial(
    State(state): State<AppState>,
    Path(path): Path<StudyPath>,
    AppJson(body): AppJson<TrialW>,
) -> Result<Json<TrialW>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let spec = &study.spec;
    let assignment = assignment_from_wire(body.parameters, spec)?;
    let measurements = body
        .measurements
        .into_iter()
        .enumerate()
        .map(|(i, m)| measurement_from_wire(m, spec, &format!("measurements[{i}]"), false))
        .collect::<Result<Vec<_>, _>>()?;
    let limits = &state.access.limits;
    limits.check(Limit::Measurements, measurements.len()).map_err(|o| over_limit("measurements", o))?;
    let final_measurement = match body.final_measurement {
        Some(m) => Some(measurement_from_wire(m, spec, "finalMeasurement", body.state != TrialStateW::INFEASIBLE)?),
        None => None,
    };
    // The state a created trial takes is what its fields say; a state given must agree with them
    // rather than be silently changed.
    let trial_state = match (body.state, &final_measurement) {
        (TrialStateW::INFEASIBLE, None) => TrialState::Infeasible,
        (TrialStateW::INFEASIBLE, Some(_)) => {
            return Err(ApiError::invalid("finalMeasurement: an INFEASIBLE trial has no final measurement"));
        }
        (TrialStateW::SUCCEEDED | TrialStateW::STATE_UNSPECIFIED, Some(_)) => TrialState::Succeeded,
        (TrialStateW::SUCCEEDED, None) => {
            return Err(ApiError::invalid("finalMeasurement: required for a SUCCEEDED trial (its final measurement)"));
        }
        (TrialStateW::REQUESTED | TrialStateW::STATE_UNSPECIFIED, None) => TrialState::Requested,
        (TrialStateW::REQUESTED, Some(_)) => {
            return Err(ApiError::invalid(
                "state: a REQUESTED trial has no finalMeasurement; leave state out (or SUCCEEDED) to add an evaluated trial",
            ));
        }
        (other @ (TrialStateW::ACTIVE | TrialStateW::STOPPING), _) => {
            return Err(ApiError::invalid(format!(
                "state: a trial cannot be created {}; create it REQUESTED (handed out by the next suggest), SUCCEEDED (with finalMeasurement) or INFEASIBLE",
                other.as_str()
            )));
        }
    };
    if trial_state != TrialState::Infeasible && !body.infeasible_reason.is_empty() {
        return Err(ApiError::invalid("infeasibleReason: only an INFEASIBLE trial has one"));
    }
    bo_core::trial::check_labels(&body.labels, limits)?;
    let new = NewTrial {
        assignment,
        state: trial_state,
        measurements,
        final_measurement,
        infeasible_reason: body.infeasible_reason,
        labels: body.labels,
    };
    let trial = state.store.create_trial(study.id, new, crate::clock::now_ms()).await?;
    if trial.state.is_completed() {
        state.engine.notify_changed(&study);
    }
    Ok(Json(trial_to_wire(&study, &trial)))
}

/// GetTrial — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/get>.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}", tag = "trials",
    params(TrialPath), responses((status = 200, description = "success", body = TrialW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn get_trial(State(state): State<AppState>, Path(path): Path<TrialPath>) -> Result<Json<TrialW>, ApiError> {
    let (study, id) = load(&state, &path).await?;
    let trial = state.store.get_trial(study.id, id).await.map_err(ApiError::from).map_err(map_trial_error(&study, &path.trial))?;
    Ok(Json(trial_to_wire(&study, &trial)))
}

/// ListTrials — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/list>.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials", tag = "trials",
    params(StudyPath, TrialPageParams), responses((status = 200, description = "success", body = ListTrialsResponseW), (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn list_trials(
    State(state): State<AppState>,
    Path(path): Path<StudyPath>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Result<axum::response::Response, ApiError> {
    // Without a page size, every trial (as Vertex answers, and as Google's high-level SDK, which
    // reads one page, expects), within bounds.
    let page = Page::from_query_or(&query, UNSIZED_TRIALS)?;
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let budget = if page.sized { PAGE_BYTES } else { UNSIZED_BYTES };
    let _turn = state.engine.read_turn(&path.project, Some(study.id)).await;
    let (mut trials, cut) = state.store.list_trials(study.id, page.after_id, page.size + 1, budget).await?;
    // A page cut short by its size budget goes on after its last trial.
    let next_page_token = page.next_token_or_cut(&mut trials, cut, |t| t.id);
    // Up to 32 MiB of trials to write out: off the runtime.
    super::offload::json(move || ListTrialsResponseW { trials: trials.iter().map(|t| trial_to_wire(&study, t)).collect(), next_page_token })
        .await
}

/// DeleteTrial — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/delete>.
#[utoipa::path(delete, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}", tag = "trials",
    params(TrialPath), responses((status = 200, description = "deleted; an empty object", body = Object), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn delete_trial(State(state): State<AppState>, Path(path): Path<TrialPath>) -> Result<Json<serde_json::Value>, ApiError> {
    let (study, id) = load(&state, &path).await?;
    state.store.delete_trial(study.id, id).await.map_err(ApiError::from).map_err(map_trial_error(&study, &path.trial))?;
    state.engine.notify_changed(&study);
    Ok(Json(serde_json::json!({})))
}

/// The most stored bytes of trials (parameters, measurements) one page of ListTrials holds: a
/// page stops early, with a `nextPageToken`, rather than pass it (it always holds one trial).
pub const PAGE_BYTES: usize = 4 << 20;
/// Trials one ListTrials page holds without a `pageSize`: every trial of a study up to this.
pub const UNSIZED_TRIALS: i64 = 10_000;
/// The stored bytes such a page holds at most (it goes on with a `nextPageToken`).
pub const UNSIZED_BYTES: usize = 32 << 20;

/// The most trials ListOptimalTrials returns: a Pareto front larger than this (many metrics,
/// many trials) keeps the trials that add the most hypervolume (`bo_core::optimal`).
pub const MAX_OPTIMAL_TRIALS: usize = 1000;

/// ListOptimalTrials — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/listOptimalTrials>.
/// The best SUCCEEDED trial for a single metric — with `observationNoise: HIGH`, the one whose
/// value the model predicts best, once it predicts; the Pareto front for several, best first: by
/// the first objective, then the next, ties by id, so the first is the study's best trial (at
/// most 1,000 trials: a larger front keeps those that add the most hypervolume). The trials carry their
/// final measurement; their intermediate measurements are read with GetTrial or ListTrials.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials:listOptimalTrials", tag = "trials",
    params(StudyPath), request_body = EmptyRequestW,
    responses((status = 200, description = "success", body = ListOptimalTrialsResponseW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn list_optimal_trials(
    State(state): State<AppState>,
    Path(path): Path<StudyPath>,
    AppJson(_body): AppJson<EmptyRequestW>,
) -> Result<axum::response::Response, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let ids = state.engine.optimal_trial_ids(&study, MAX_OPTIMAL_TRIALS).await?;
    let trials = {
        let _turn = state.engine.read_turn(&path.project, Some(study.id)).await;
        // Best first, as chosen.
        state.store.trials_by_id(study.id, &ids, Load::NoMeasurements).await?
    };
    // Up to 1,000 whole trials: written out off the runtime.
    super::offload::json(move || ListOptimalTrialsResponseW { optimal_trials: trials.iter().map(|t| trial_to_wire(&study, t)).collect() })
        .await
}

/// `POST …/trials/{trial}:{verb}`: one route for the four trial methods, dispatched on the verb
/// after the colon (axum cannot route a suffix after a parameter in one segment).
pub async fn post_trial_verb(
    State(state): State<AppState>,
    PathVersion(version): PathVersion,
    Path((project, location, study, trial_verb)): Path<(String, String, String, String)>,
    RawBody(body): RawBody,
) -> Result<Json<serde_json::Value>, ApiError> {
    let version = version.unwrap_or(ApiVersion::V1);
    let Some((trial, verb)) = trial_verb.split_once(':') else {
        return Err(ApiError::not_found(format!(
            "POST {} is not a method; trial methods are :complete, :addTrialMeasurement, :addTrialParameters, :stop and :checkTrialEarlyStoppingState",
            crate::wire::shown(&trial_verb)
        )));
    };
    let path = TrialPath { project, location, study, trial: trial.to_owned() };
    let json = |v: Result<Json<_>, ApiError>| v.map(|Json(v)| Json(serde_json::to_value(v).unwrap_or_default()));
    let limits = state.access.limits.clone();
    match verb {
        "complete" => json(complete_trial(state, path, parse_body(body, &limits).await?).await),
        "addTrialMeasurement" => json(add_trial_measurement(state, path, parse_body(body, &limits).await?).await),
        "stop" => json(stop_trial(state, path, parse_body(body, &limits).await?).await),
        "addTrialParameters" => json(add_trial_parameters(state, path, parse_body(body, &limits).await?).await),
        "checkTrialEarlyStoppingState" => {
            let op = check_trial_early_stopping_state(state, path, version, parse_body(body, &limits).await?).await?;
            Ok(Json(serde_json::to_value(op.0).unwrap_or_default()))
        }
        other => Err(ApiError::not_found(format!(
            "{} is not a trial method; trial methods are complete, addTrialMeasurement, addTrialParameters, stop and checkTrialEarlyStoppingState",
            crate::wire::shown(other)
        ))),
    }
}

/// CompleteTrial — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/complete>.
/// With `trialInfeasible` the trial becomes INFEASIBLE; otherwise SUCCEEDED with
/// `finalMeasurement`, or without one the measurement chosen by the study's
/// `measurementSelectionType`. A completed trial cannot be completed again.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:complete", tag = "trials",
    params(TrialPath), request_body = CompleteTrialRequestW,
    responses((status = 200, description = "success", body = TrialW), (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn complete_trial(state: AppState, path: TrialPath, body: CompleteTrialRequestW) -> Result<Json<TrialW>, ApiError> {
    let (study, id) = load(&state, &path).await?;
    let spec = &study.spec;
    // Checked even when the trial is marked infeasible (and the measurement then dropped): a
    // malformed request is refused whatever it asks.
    let final_measurement = match body.final_measurement {
        Some(m) => Some(measurement_from_wire(m, spec, "finalMeasurement", !body.trial_infeasible)?).filter(|_| !body.trial_infeasible),
        None => None,
    };
    let completion = match (body.trial_infeasible, final_measurement) {
        (true, _) => Completion::Infeasible(body.infeasible_reason),
        (false, Some(m)) => Completion::Measured(m),
        (false, None) => Completion::Selected,
    };
    let trial = state
        .store
        .complete_trial(study.id, id, spec, completion, crate::clock::now_ms())
        .await
        .map_err(ApiError::from)
        .map_err(map_trial_error(&study, &path.trial))?;
    state.engine.notify_changed(&study);
    Ok(Json(trial_to_wire(&study, &trial)))
}

/// AddTrialMeasurement — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/addTrialMeasurement>.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:addTrialMeasurement", tag = "trials",
    params(TrialPath), request_body = AddTrialMeasurementRequestW,
    responses((status = 200, description = "success", body = TrialW), (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn add_trial_measurement(state: AppState, path: TrialPath, body: AddTrialMeasurementRequestW) -> Result<Json<TrialW>, ApiError> {
    let (study, id) = load(&state, &path).await?;
    let limits = &state.access.limits;
    let ms = match (body.measurement, body.measurements.is_empty()) {
        (Some(m), true) => vec![measurement_from_wire(m, &study.spec, "measurement", false)?],
        (None, false) => {
            limits.check(Limit::Measurements, body.measurements.len()).map_err(|o| over_limit("measurements", o))?;
            body.measurements
                .into_iter()
                .enumerate()
                .map(|(i, m)| measurement_from_wire(m, &study.spec, &format!("measurements[{i}]"), false))
                .collect::<Result<Vec<_>, _>>()?
        }
        (None, true) => return Err(ApiError::invalid("measurement: required")),
        (Some(_), false) => return Err(ApiError::invalid("measurements: give measurement or measurements, not both")),
    };
    let now = crate::clock::now_ms();
    let trial = state
        .store
        .add_measurements(study.id, id, ms, limits, now)
        .await
        .map_err(ApiError::from)
        .map_err(map_trial_error(&study, &path.trial))?;
    if !body.check_early_stopping {
        return Ok(Json(trial_to_wire(&study, &trial)));
    }
    // Advice, not an act: the client's own loop may run past it before the answer arrives (a
    // report sent in the background), and a trial trained in full is no partial result. The
    // client stops the trial (`:stop`) when it acts on the answer.
    let thresholds = state.engine.median_thresholds(&study, &trial).await?;
    let decision = stopping_decision(&state, &study, trial.clone()).await?;
    let mut wire = trial_to_wire(&study, &trial);
    wire.early_stopping = Some(EarlyStoppingAnswerW {
        should_stop: decision.should_stop,
        reason: decision.reason,
        median_thresholds: thresholds
            .as_ref()
            .map(|t| t.points.iter().map(|&(position, value)| ThresholdW { position, value }).collect())
            .unwrap_or_default(),
        thresholds_through: thresholds.as_ref().and_then(|t| t.through),
        thresholds_pointwise: thresholds.is_some_and(|t| t.pointwise),
    });
    Ok(Json(wire))
}

/// What the study's stopping rule says of `trial` now — a study stopped by its rules with
/// `shouldStopAsap` interrupts its running trials without asking the rule. Decided outside any
/// transaction from what the rule needs (the trial, and what the database aggregates of the
/// others).
async fn stopping_decision(state: &AppState, study: &StudyRecord, trial: Trial) -> Result<StoppingDecision, ApiError> {
    let asap = study.state == bo_store::StudyState::Completed
        && study.spec.study_stopping.as_ref().is_some_and(|c| c.should_stop_asap)
        && !trial.state.is_completed();
    if asap {
        return Ok(StoppingDecision { should_stop: true, reason: "the study stopped with shouldStopAsap".into(), last_measurement: None });
    }
    Ok(state.engine.early_stopping(study, trial).await?)
}

/// AddTrialParameters (bo extension, for a study with `openSearchSpace`): the parameters a
/// define-by-run objective asks for that the running trial does not hold. Each is added to the
/// study's space where the trial holds its parent's value (a known one is widened until it is
/// active under the trial), and takes its given `value`, or one the study's model chooses given
/// the trial's other values (as a suggest within a context chooses). A parameter the trial
/// already holds keeps its value, so asking again answers the same. A completed trial takes
/// none (FAILED_PRECONDITION); a parameter asked with another domain than the study's is a 400;
/// 409 ABORTED when other workers kept growing the study meanwhile (retry).
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:addTrialParameters", tag = "trials",
    params(TrialPath), request_body = AddParametersRequestW,
    responses((status = 200, description = "the trial, with its new parameters", body = TrialW), (status = 400, description = "invalid request (the message names the field), or a fixed search space or a completed trial", body = ErrorBodyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW), (status = 409, description = "other workers kept growing the study; retry", body = ErrorBodyW)))]
pub async fn add_trial_parameters(state: AppState, path: TrialPath, body: AddParametersRequestW) -> Result<Json<TrialW>, ApiError> {
    let (study, id) = load(&state, &path).await?;
    let limits = &state.access.limits;
    let asked = body.into_asked(limits)?;
    let (study, trial) = state
        .engine
        .add_trial_parameters(&study, id, &asked, limits)
        .await
        .map_err(ApiError::from)
        .map_err(map_trial_error(&study, &path.trial))?;
    Ok(Json(trial_to_wire(&study, &trial)))
}

/// StopTrial — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/stop>.
/// An ACTIVE (or REQUESTED) trial becomes STOPPING; stopping a STOPPING trial changes nothing.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:stop", tag = "trials",
    params(TrialPath), request_body = EmptyRequestW,
    responses((status = 200, description = "success", body = TrialW), (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn stop_trial(state: AppState, path: TrialPath, _body: EmptyRequestW) -> Result<Json<TrialW>, ApiError> {
    let (study, id) = load(&state, &path).await?;
    let trial = state
        .store
        .stop_trial(study.id, id, crate::clock::now_ms())
        .await
        .map_err(ApiError::from)
        .map_err(map_trial_error(&study, &path.trial))?;
    Ok(Json(trial_to_wire(&study, &trial)))
}

/// CheckTrialEarlyStoppingState — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials/checkTrialEarlyStoppingState>.
/// Applies the study's automated stopping rule to the trial's latest measurement: the median
/// rule, the decay-curve rule or the convex rule (which also appends its prediction of the
/// trial's last measurement to a trial it stops); a study without one never stops a trial. A
/// trial told to stop becomes STOPPING.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials/{trial}:checkTrialEarlyStoppingState", tag = "trials",
    params(TrialPath), request_body = EmptyRequestW,
    responses((status = 200, description = "a done Operation whose response says shouldStop", body = OperationW),
              (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn check_trial_early_stopping_state(
    state: AppState,
    path: TrialPath,
    version: ApiVersion,
    _body: EmptyRequestW,
) -> Result<Json<OperationW>, ApiError> {
    let (study, id) = load(&state, &path).await?;
    let now = crate::clock::now_ms();
    let trial = state.store.get_trial(study.id, id).await.map_err(ApiError::from).map_err(map_trial_error(&study, &path.trial))?;
    let decision = stopping_decision(&state, &study, trial).await?;
    let (op_id, should_stop) =
        state.store.record_early_stopping(study.id, id, now, decision, &state.access.limits, version.as_str()).await.map_err(
            |e| match e {
                StoreError::NotFound(bo_store::Entity::Trial) => trial_not_found(&study, &path.trial),
                e => e.into(),
            },
        )?;
    let trial_name = format!("{}/trials/{id}", study_name(&study));
    let name = format!("{trial_name}/operations/{op_id}");
    Ok(Json(early_stopping_operation(name, &study_name(&study), &trial_name, &format_time(now), should_stop).in_version(version)))
}
