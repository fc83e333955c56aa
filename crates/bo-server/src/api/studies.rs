//! Study methods: CreateStudy, GetStudy, ListStudies, DeleteStudy, LookupStudy.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use bo_store::{StoreError, StudySettings, StudyState, StudySummary};
use serde::Deserialize;
use utoipa::IntoParams;

use bo_core::{StudySpec, TrialState};

use super::access::{Caller, Projects};
use super::error::{ApiError, ErrorBodyW};
use super::extract::{AppJson, RawBody, StudyPath, load_study, parse_body};
use super::offload;
use super::page::{Page, PageParams};
use super::state::AppState;
use crate::engine;
use crate::wire::format_time;
use crate::wire::request::{
    AddParametersRequestW, EmptyRequestW, ListLocationsResponseW, ListStudiesResponseW, ListStudyOverviewResponseW, LocationW,
    LookupStudyRequestW, StudyOverviewW, StudySummaryW,
};
use crate::wire::study::{MetricSpecW, StudyW, state_to_wire, study_name, study_to_wire};

/// The parent of studies: `projects/{project}/locations/{location}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct LocationPath {
    /// The project (tenant).
    pub project: String,
    /// The location; free text, e.g. `local`.
    pub location: String,
}

/// A display name is required, not blank, and reads as what it is (bo-core's `Text::Name`:
/// no invisible characters, no `.`/`..` path segments); its length and control characters were
/// checked with the body, as every name's are.
pub(super) fn check_display_name(name: &str, limits: &bo_core::Limits) -> Result<(), ApiError> {
    limits.check_text(name, bo_core::limits::Text::Name).map_err(|e| super::error::text_error("displayName", &e))
}

/// CreateStudy — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies/create>.
/// The same `displayName` with the same spec again returns the existing study; a different spec
/// under that name is a 409.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies", tag = "studies",
    params(LocationPath), request_body = StudyW,
    responses((status = 200, description = "the study (new, or the existing one with this name and spec)", body = StudyW),
              (status = 400, description = "invalid study", body = ErrorBodyW),
              (status = 409, description = "the name is taken by a study with another spec", body = ErrorBodyW)))]
pub async fn create_study(
    State(state): State<AppState>,
    Path(path): Path<LocationPath>,
    AppJson(body): AppJson<StudyW>,
) -> Result<Json<StudyW>, ApiError> {
    check_display_name(&body.display_name, &state.access.limits)?;
    // Validation is linear in the spec's size, but a spec may be a megabyte: off the runtime.
    let limits = state.access.limits.clone();
    let study_spec = body.study_spec;
    let (mut spec, settings) = tokio::task::spawn_blocking(move || -> Result<(StudySpec, StudySettings), ApiError> {
        let (spec, settings) = study_spec.into_domain(&limits)?;
        engine::check_algorithm(&spec, &limits)?;
        Ok((spec, settings))
    })
    .await
    .map_err(|e| ApiError::new(super::error::Code::Internal, format!("validating a study panicked: {e}")))??;
    let now = crate::clock::now_ms();
    engine::priors::choose_priors(&state.store, &path.project, &path.location, &mut spec, now).await?;
    let (study, created) = state.store.create_study(&path.project, &path.location, &body.display_name, &spec, settings, now).await?;
    if created {
        tracing::info!(study = %study_name(&study), algorithm = %study.spec.algorithm, "study created");
    }
    Ok(Json(study_to_wire(&study)))
}

/// GetStudy — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies/get>.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}", tag = "studies",
    params(StudyPath), responses((status = 200, description = "success", body = StudyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn get_study(State(state): State<AppState>, Path(path): Path<StudyPath>) -> Result<Json<StudyW>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    Ok(Json(study_to_wire(&study)))
}

/// The most stored bytes of specs one page of ListStudies holds: a page stops early, with a
/// `nextPageToken`, rather than pass it (it always holds one study).
pub const STUDY_PAGE_BYTES: usize = 4 << 20;

/// ListStudies — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies/list>.
/// A page stops early, with a `nextPageToken`, once its studies' specs pass 4 MiB as stored.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies", tag = "studies",
    params(LocationPath, PageParams), responses((status = 200, description = "success", body = ListStudiesResponseW), (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW)))]
pub async fn list_studies(
    State(state): State<AppState>,
    Path(path): Path<LocationPath>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_query(&query)?;
    let _turn = state.engine.read_turn(&path.project, None).await;
    let (mut studies, cut) =
        state.store.list_studies(&path.project, &path.location, page.after_id, page.size + 1, STUDY_PAGE_BYTES).await?;
    let next_page_token = page.next_token_or_cut(&mut studies, cut, |s| s.number);
    // Up to 4 MiB of specs to write out: off the runtime.
    offload::json(move || ListStudiesResponseW { studies: studies.iter().map(study_to_wire).collect(), next_page_token }).await
}

/// The studies of a location, each summarised (name, state, algorithm, metrics — never the
/// spec) with its trial counts by state, best value and last activity, for an overview page
/// (bo extension); paged like ListStudies, by number only (a summary is a few KB at most).
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies:overview", tag = "studies",
    params(LocationPath, PageParams), responses((status = 200, description = "success", body = ListStudyOverviewResponseW), (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW)))]
pub async fn study_overview(
    State(state): State<AppState>,
    Path(path): Path<LocationPath>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Result<Json<ListStudyOverviewResponseW>, ApiError> {
    let page = Page::from_query(&query)?;
    let _turn = state.engine.read_turn(&path.project, None).await;
    let mut studies = state.store.study_overview(&path.project, &path.location, page.after_id, page.size + 1).await?;
    let next_page_token = page.next_token(&mut studies, |o| o.study.number);
    let studies = studies
        .iter()
        .map(|o| StudyOverviewW {
            study: summary_to_wire(&o.study),
            trial_counts: TrialState::ALL.iter().zip(o.counts).map(|(s, n)| (s.as_str().to_owned(), n)).collect(),
            stopped_early_count: o.stopped_early,
            best_value: o.best,
            last_activity_time: o.last_activity_ms.map(format_time).unwrap_or_default(),
        })
        .collect();
    Ok(Json(ListStudyOverviewResponseW { studies, next_page_token }))
}

/// The wire form of a study's summary.
fn summary_to_wire(s: &StudySummary) -> StudySummaryW {
    StudySummaryW {
        name: format!("projects/{}/locations/{}/studies/{}", s.project, s.location, s.number),
        display_name: s.display_name.clone(),
        state: state_to_wire(s.state),
        algorithm: s.algorithm.clone(),
        metrics: s.metrics.iter().map(MetricSpecW::from_domain).collect(),
        create_time: format_time(s.create_time_ms),
        inactive_reason: s.inactive_reason.clone(),
    }
}

/// The most locations `GET /v1/locations` lists.
pub const MAX_LOCATIONS: i64 = 1000;

/// The projects and locations that hold studies — with API keys, only the projects the caller's
/// key grants (bo extension; the dashboard offers them to choose from).
#[utoipa::path(get, path = "/v1/locations", tag = "studies",
    responses((status = 200, description = "success", body = ListLocationsResponseW)))]
pub async fn list_locations(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
) -> Result<Json<ListLocationsResponseW>, ApiError> {
    let granted = match caller.as_ref().map(|c| &c.projects) {
        Some(Projects::Only(names)) => Some(names.as_slice()),
        _ => None,
    };
    let locations = state.store.locations(granted, MAX_LOCATIONS).await?;
    Ok(Json(ListLocationsResponseW {
        locations: locations.into_iter().map(|(project, location, studies)| LocationW { project, location, studies }).collect(),
    }))
}

/// DeleteStudy — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies/delete>.
/// Deletes the study with its trials and operations.
#[utoipa::path(delete, path = "/v1/projects/{project}/locations/{location}/studies/{study}", tag = "studies",
    params(StudyPath), responses((status = 200, description = "deleted; an empty object", body = Object), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn delete_study(State(state): State<AppState>, Path(path): Path<StudyPath>) -> Result<Json<serde_json::Value>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    state.store.delete_study(study.id).await?;
    state.engine.forget(study.id);
    tracing::info!(study = %study_name(&study), "study deleted");
    Ok(Json(serde_json::json!({})))
}

/// `POST …/studies/{study}:{verb}`: the study methods with a verb (`:predict`, `:stop`).
pub async fn post_study_verb(
    State(state): State<AppState>,
    Path((project, location, study_verb)): Path<(String, String, String)>,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let Some((study, verb)) = study_verb.split_once(':') else {
        return Err(ApiError::not_found(format!(
            "POST {} is not a method; study methods are :predict, :stop and :addParameters",
            crate::wire::shown(&study_verb)
        )));
    };
    let path = StudyPath { project, location, study: study.to_owned() };
    let limits = state.access.limits.clone();
    match verb {
        "predict" => Ok(super::model::predict(state, path, parse_body(body, &limits).await?).await?.into_response()),
        "stop" => Ok(stop_study(state, path, parse_body(body, &limits).await?).await?.into_response()),
        "addParameters" => Ok(add_parameters(state, path, parse_body(body, &limits).await?).await?.into_response()),
        other => Err(ApiError::not_found(format!(
            "{} is not a study method; study methods are predict, stop and addParameters",
            crate::wire::shown(other)
        ))),
    }
}

/// AddParameters (bo extension, for a study with `openSearchSpace`): grows the study's space
/// with parameters asked outside a running trial (a trial evaluated elsewhere, about to be
/// added with `POST …/trials`). Entries are read in order; each entry's `value` is what a later
/// entry's `parentParameterId` places it under. A parameter with another domain than the
/// study's is a 400; 409 ABORTED when other workers kept growing the study meanwhile (retry).
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}:addParameters", tag = "studies",
    params(StudyPath), request_body = AddParametersRequestW,
    responses((status = 200, description = "the study, its space grown", body = StudyW), (status = 400, description = "invalid request (the message names the field), or a fixed search space", body = ErrorBodyW), (status = 404, description = "no such study", body = ErrorBodyW), (status = 409, description = "other workers kept growing the study; retry", body = ErrorBodyW)))]
pub async fn add_parameters(state: AppState, path: StudyPath, body: AddParametersRequestW) -> Result<Json<StudyW>, ApiError> {
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let limits = &state.access.limits;
    let asked = body.into_asked(limits)?;
    let grown = state.engine.grow_space(&study, &bo_core::Assignment::default(), &asked, limits).await?;
    Ok(Json(study_to_wire(&grown)))
}

/// The reason a study stopped by `:stop` shows.
pub const STOPPED_REASON: &str = "stopped by a request (:stop)";

/// StopStudy (bo extension; OSS Vizier's SetStudyState to COMPLETED, which Vertex lacks): the
/// study becomes COMPLETED, with `inactiveReason` saying it was stopped, and suggests nothing
/// more; its trials keep their states and can still be measured and completed. Stopping a
/// COMPLETED study changes nothing (it keeps its first reason).
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies/{study}:stop", tag = "studies",
    params(StudyPath), request_body = EmptyRequestW,
    responses((status = 200, description = "the study, COMPLETED", body = StudyW),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW),
              (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn stop_study(state: AppState, path: StudyPath, _body: EmptyRequestW) -> Result<Json<StudyW>, ApiError> {
    let mut study = load_study(&state, &path.project, &path.location, &path.study).await?;
    if study.state != StudyState::Completed {
        state.store.complete_study(study.id, STOPPED_REASON).await?;
        study = load_study(&state, &path.project, &path.location, &path.study).await?;
        tracing::info!(study = %study_name(&study), "study stopped");
    }
    Ok(Json(study_to_wire(&study)))
}

/// LookupStudy — <https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies/lookup>.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies:lookup", tag = "studies",
    params(LocationPath), request_body = LookupStudyRequestW,
    responses((status = 200, description = "success", body = StudyW), (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn lookup_study(
    State(state): State<AppState>,
    Path(path): Path<LocationPath>,
    AppJson(body): AppJson<LookupStudyRequestW>,
) -> Result<Json<StudyW>, ApiError> {
    check_display_name(&body.display_name, &state.access.limits)?;
    let study = state.store.lookup_study(&path.project, &path.location, &body.display_name).await.map_err(|e| match e {
        StoreError::NotFound(_) => ApiError::not_found(format!(
            "no study named {} in projects/{}/locations/{}",
            crate::wire::shown(&body.display_name),
            path.project,
            path.location
        )),
        e => e.into(),
    })?;
    Ok(Json(study_to_wire(&study)))
}
