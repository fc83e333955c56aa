//! A study out of the service and into another over REST, under the same keys as every call
//! (bo extensions; Vertex has no counterpart).
//!
//! - `GET …/studies/{study}:export?format=json|csv|optuna-journal` streams the study: its head
//!   is read in one short transaction, then the trials that existed then, a page (at most 1 MiB
//!   as stored) per read, each page encoded on a blocking thread and handed to the connection
//!   through a queue of two — memory stays a few pages whatever the study's size. A client that
//!   reads slower than [`MIN_EXPORT_RATE`] on average (after [`EXPORT_GRACE`]) is cut off, the
//!   body left unfinished. At most [`MAX_EXPORTS`](super::in_progress::MAX_EXPORTS) run at once, [`MAX_EXPORTS_PER_PROJECT`](super::in_progress::MAX_EXPORTS_PER_PROJECT) of
//!   them a project's (`in_progress::ExportSlots`), each counted in flight for its key until its stream ends.
//! - `POST …/studies:import` opens an upload with the JSON document's head (its `trials` may
//!   hold a first part, or be left out); `POST …/imports/{import}:append` stages a part
//!   `{"trials": […]}` (each under the body limit, ids increasing across parts); `:commit`
//!   creates the study with all of them, seen whole or not at all. A commit runs as a task of
//!   its own (`in_progress::Commits`, one per upload on a replica; a second `:commit` joins it): the request
//!   waits up to [`COMMIT_WAIT`](super::in_progress::COMMIT_WAIT) and answers the study, or 202 with the upload's progress, and
//!   the client asks again. `GET` shows how far an upload got (to resume after a failure),
//!   `DELETE` abandons it. Every part is checked as a created trial
//!   is and a bad one names its field and stores nothing; an upload unused for [`IMPORT_TTL_MS`]
//!   expires. Uploads live in the database, so the parts may go to different replicas.
//!
//! The file formats are `crate::transfer`'s; this module owns only the HTTP around them.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bo_store::{ImportError, ImportRecord, StoreError, StudyHead};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, Code, ErrorBodyW};
use super::extract::{AppJson, RawBody, parse_body};
use super::extract::{StudyPath, load_study};
use super::in_progress::ExportSlot;
use super::offload::blocking;
use super::state::AppState;
use super::studies::LocationPath;
use crate::transfer::document::{DocumentError, StudyExport, trial_from_wire};
use crate::transfer::{Encoder, Format, Pages};
use crate::wire::study::StudyW;
use crate::wire::study::study_to_wire;
use crate::wire::trial::TrialW;
use crate::wire::{format_time, int64, shown};

/// The slowest an export's client may read on average, in bytes per second, beyond
/// [`EXPORT_GRACE`]; a slower one is cut off (a 38 MB export at this rate takes ten minutes).
pub const MIN_EXPORT_RATE: f64 = 64.0 * 1024.0;
/// The time an export's client may wait, in all, beyond what [`MIN_EXPORT_RATE`] allows.
pub const EXPORT_GRACE: Duration = Duration::from_secs(10);
/// How long an upload lives after its last part.
pub const IMPORT_TTL_MS: i64 = 24 * 3600 * 1000;
/// How long a committed upload is kept at least, answering `:commit` and `GET` with its study.
pub const COMMITTED_TTL_MS: i64 = 3600 * 1000;
/// Uploads open at once in one project, over all its locations (each may hold
/// [`MAX_IMPORT_TRIALS`]).
pub const MAX_OPEN_IMPORTS: i64 = 16;
/// Trials one upload holds at most.
pub const MAX_IMPORT_TRIALS: i64 = 2_000_000;

/// `?format=` of an export.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// `json` (default): bo's document, for `studies:import`; `csv`: one row per trial;
    /// `optuna-journal`: Optuna's JournalStorage file, for optuna-dashboard and `optuna.load_study`.
    pub format: Option<String>,
}

/// ExportStudy (bo extension): the study as a file, streamed in `format`. The answer carries
/// `Content-Disposition: attachment` with a file name. Trials created after the export began
/// are not in it; each trial is as it was when its page was read.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}:export", tag = "studies",
    params(StudyPath, ExportParams),
    responses((status = 200, description = "the study as a file: the export document (json), CSV, or Optuna's journal (one JSON operation per line)",
               content((Object = "application/json"), (String = "text/csv"), (String = "application/x-ndjson"))),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW),
              (status = 404, description = "no such study", body = ErrorBodyW),
              (status = 429, description = "too many exports in progress; retry", body = ErrorBodyW)))]
pub async fn export_study(state: AppState, path: StudyPath, query: BTreeMap<String, String>) -> Result<Response, ApiError> {
    let mut format = Format::Json;
    for (key, value) in &query {
        match key.as_str() {
            "format" => {
                format = Format::parse(value).ok_or_else(|| {
                    let names: Vec<&str> = Format::ALL.iter().map(|f| f.as_str()).collect();
                    ApiError::invalid(format!("format: {} is not a format; formats are {}", shown(value), names.join(", ")))
                })?
            }
            other => return Err(ApiError::invalid(format!("{}: not a parameter of :export; it takes format", shown(other)))),
        }
    }
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let permit = state.exports.take(&path.project)?;
    let head = state.store.study_head(study.id).await?;
    let number = study.number;
    let pages = Pages::of(&head);
    let (encoder, opening) = blocking("opening the export", move || Encoder::new(format, head, crate::clock::now_ms()))
        .await?
        .map_err(|e| ApiError::new(Code::Internal, format!("writing the export failed: {e}")))?;
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let whole = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn(stream_export(state, path.project, study.id, pages, encoder, opening, sender, permit, whole.clone()));
    // A stream that ends before its last part (the client cut off, the study deleted, a
    // failure) ends in an error, so the connection is broken rather than the body closed as
    // if whole.
    let body = Body::from_stream(futures_util::stream::unfold((receiver, whole), |(mut r, whole)| async move {
        match r.recv().await {
            Some(part) => Some((part, (r, whole))),
            None if whole.load(std::sync::atomic::Ordering::SeqCst) => None,
            None => {
                whole.store(true, std::sync::atomic::Ordering::SeqCst);
                Some((Err(std::io::Error::other("the export ended before its last part")), (r, whole)))
            }
        }
    }));
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(format.content_type()));
    if let Ok(disposition) = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", format.file_name(number))) {
        headers.insert(header::CONTENT_DISPOSITION, disposition);
    }
    Ok(response)
}

/// Reads, encodes and sends the export's parts until the last, the client's leaving or a
/// failure (which ends the body unfinished, so the client sees a broken transfer, never a
/// shorter file that looks whole).
#[allow(clippy::too_many_arguments)]
async fn stream_export(
    state: AppState,
    project: String,
    study_id: i64,
    mut pages: Pages,
    encoder: Encoder,
    opening: Vec<u8>,
    sender: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    _slot: ExportSlot,
    whole: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    // The time spent waiting for the client, against what the bytes handed over allow.
    let mut pace = Pace::default();
    let mut send = async |part: Result<Bytes, std::io::Error>| {
        let allowed = pace.allowed(part.as_ref().map_or(0, Bytes::len));
        let started = tokio::time::Instant::now();
        let sent = matches!(tokio::time::timeout(allowed, sender.send(part)).await, Ok(Ok(())));
        pace.waited += started.elapsed();
        sent
    };
    if !send(Ok(Bytes::from(opening))).await {
        return;
    }
    // Lent to each page's blocking thread and given back.
    let mut encoder = Some(encoder);
    loop {
        let page = {
            let _turn = state.engine.read_turn(&project, Some(study_id)).await;
            match pages.next(&state.store).await {
                Ok(Some(trials)) => {
                    let mut lent = encoder.take();
                    let encoded = tokio::task::spawn_blocking(move || {
                        let bytes = lent.as_mut().map(|e| e.page(&trials));
                        (lent, bytes)
                    })
                    .await;
                    match encoded {
                        Ok((back, Some(Ok(bytes)))) => {
                            encoder = back;
                            Ok(Some(bytes))
                        }
                        Ok((_, None)) => Err("the export's encoder was lost".to_owned()),
                        Ok((_, Some(Err(e)))) => Err(e.to_string()),
                        Err(e) => Err(format!("writing a page panicked: {e}")),
                    }
                }
                Ok(None) => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        };
        match page {
            Ok(Some(bytes)) => {
                if !send(Ok(Bytes::from(bytes))).await {
                    tracing::info!(study_id, "export cut off: the client left, or read slower than the least rate allowed");
                    return;
                }
            }
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(study_id, error = %e, "export failed part way; the body is cut off");
                send(Err(std::io::Error::other(e))).await;
                return;
            }
        }
    }
    if let Some(encoder) = encoder {
        // Whole once the last part is handed over (the body sees the end only after this
        // function returns and drops the sender).
        if send(Ok(Bytes::from(encoder.finish()))).await {
            whole.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// How long an export's client has waited for, against how much it was sent.
#[derive(Default)]
struct Pace {
    /// Bytes handed over so far.
    sent: usize,
    /// Time spent waiting for the client to take them.
    waited: Duration,
}

impl Pace {
    /// How long the next part of `len` bytes may wait: the grace, plus what the bytes up to
    /// and including it are allowed at [`MIN_EXPORT_RATE`], less what was waited already.
    fn allowed(&mut self, len: usize) -> Duration {
        self.sent += len;
        (EXPORT_GRACE + Duration::from_secs_f64(self.sent as f64 / MIN_EXPORT_RATE)).saturating_sub(self.waited)
    }
}

/// `GET …/studies/{study}{:verb}`: the study, or `:export`.
pub async fn get_study_or_verb(
    State(state): State<AppState>,
    Path((project, location, study_verb)): Path<(String, String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Result<Response, ApiError> {
    match study_verb.split_once(':') {
        None => {
            Ok(super::studies::get_study(State(state), Path(StudyPath { project, location, study: study_verb })).await?.into_response())
        }
        Some((study, "export")) => export_study(state, StudyPath { project, location, study: study.to_owned() }, query).await,
        Some((_, other)) => Err(ApiError::not_found(format!("GET :{} is not a study method; the GET method is :export", shown(other)))),
    }
}

/// An upload of `studies:import` in progress.
#[derive(Serialize, ToSchema)]
#[schema(as = Import)]
#[serde(rename_all = "camelCase")]
pub struct ImportW {
    /// `projects/{project}/locations/{location}/imports/{import}`.
    pub name: String,
    /// The study's display name once committed.
    pub display_name: String,
    /// Trials staged so far (int64 as a string).
    #[serde(with = "int64")]
    #[schema(value_type = String)]
    pub trial_count: i64,
    /// The largest staged trial id (int64 as a string; `"0"` before the first): the next part
    /// starts above it — after a failed `:append`, resume with the trials after it.
    #[serde(with = "int64")]
    #[schema(value_type = String)]
    pub last_trial_id: i64,
    /// When it was opened, RFC 3339.
    pub create_time: String,
    /// When it is dropped unless a part arrives first, RFC 3339.
    pub expire_time: String,
    /// `STAGING` (taking parts), `COMMITTING` (its commit has begun: running, or stopped by a
    /// conflict or a restart, which another `:commit` resumes) or `COMMITTED`.
    pub state: ImportStateW,
    /// Staged trials moved into the study so far (int64 as a string).
    #[serde(with = "int64")]
    #[schema(value_type = String)]
    pub committed_trial_count: i64,
    /// Once committed, the study's name: `projects/{project}/locations/{location}/studies/{study}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub study: Option<String>,
}

/// Where an upload stands.
#[derive(Serialize, ToSchema, Clone, Copy, Debug, PartialEq)]
#[schema(as = ImportState)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ImportStateW {
    /// Taking parts.
    Staging,
    /// Its commit has begun and not ended.
    Committing,
    /// Its study exists.
    Committed,
}

fn import_to_wire(r: &ImportRecord, study: Option<&bo_store::StudyRecord>) -> ImportW {
    let state = match (r.study_id, r.committed_ms) {
        (_, Some(_)) => ImportStateW::Committed,
        (Some(_), None) => ImportStateW::Committing,
        (None, None) => ImportStateW::Staging,
    };
    ImportW {
        state,
        committed_trial_count: r.committed_trials,
        study: study.map(crate::wire::study::study_name),
        name: format!("projects/{}/locations/{}/imports/{}", r.project, r.location, r.id),
        display_name: r.display_name.clone(),
        trial_count: r.trials,
        last_trial_id: r.last_trial_id,
        create_time: format_time(r.create_time_ms),
        expire_time: format_time(r.expire_time_ms),
    }
}

/// The body of `:append`.
#[derive(Deserialize, ToSchema)]
#[schema(as = AppendImportRequest)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppendImportW {
    /// The next trials, in id order, as the export document holds them.
    pub trials: Vec<TrialW>,
}

/// `?displayName=` of `studies:import`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ImportParams {
    /// The new study's display name (default: the document's); it must be free in the location.
    #[serde(rename = "displayName")]
    pub display_name: Option<String>,
}

/// An upload: `projects/{project}/locations/{location}/imports/{import}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct ImportPath {
    /// The project (tenant).
    pub project: String,
    /// The location.
    pub location: String,
    /// The upload's id, as `studies:import` named it.
    pub import: String,
}

fn document_error(e: DocumentError) -> ApiError {
    ApiError::invalid(e.to_string())
}

fn import_error(e: ImportError) -> ApiError {
    match e {
        ImportError::TooMany { .. } => ApiError::new(Code::ResourceExhausted, e.to_string()),
        ImportError::OutOfOrder { .. } | ImportError::TooLarge { .. } => ApiError::invalid(e.to_string()),
        ImportError::Committing => ApiError::precondition(e.to_string()),
        ImportError::Store(e) => store_error(e),
    }
}

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound(_) => ApiError::not_found("import not found (it was deleted, has expired, or its study was deleted since)"),
        e => e.into(),
    }
}

/// The checked head of an upload and the checked trials that came with it.
fn check_document(doc: StudyExport, limits: &bo_core::Limits) -> Result<(StudyHead, Vec<bo_core::Trial>), ApiError> {
    let (head, wire) = doc.into_head(limits).map_err(document_error)?;
    let trials = check_trials(wire, &head, limits)?;
    Ok((head, trials))
}

/// A part's trials, checked; `trials[i]` in a message is the part's i-th.
fn check_trials(wire: Vec<TrialW>, head: &StudyHead, limits: &bo_core::Limits) -> Result<Vec<bo_core::Trial>, ApiError> {
    wire.into_iter()
        .enumerate()
        .map(|(i, t)| trial_from_wire(t, &head.study, limits, &format!("trials[{i}]")).map_err(document_error))
        .collect()
}

/// ImportStudy (bo extension): opens an upload of an export document (`GET …:export`'s JSON)
/// as a new study of this project and location. The body is the document; its `trials` may be
/// all of them (then `:commit` at once), a first part, or left out, with the rest sent by
/// `:append`. The document's own project and location are not used.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/studies:import", tag = "studies",
    params(LocationPath, ImportParams), request_body(content = Object, description = "the export document (`boExportFormat`, `study`, `nextTrialId`, `dataVersion`, `model`, `trials`), under the body limit"),
    responses((status = 200, description = "the upload, open", body = ImportW),
              (status = 400, description = "invalid document (the message names the field)", body = ErrorBodyW),
              (status = 409, description = "the location already has a study of that name", body = ErrorBodyW),
              (status = 429, description = "too many uploads open in the location", body = ErrorBodyW)))]
pub async fn import_study(
    State(state): State<AppState>,
    Path(path): Path<LocationPath>,
    Query(params): Query<ImportParams>,
    AppJson(doc): AppJson<StudyExport>,
) -> Result<Json<ImportW>, ApiError> {
    let limits = state.access.limits.clone();
    let (head, trials) = blocking("checking the document", move || check_document(doc, &limits)).await??;
    let display_name = params.display_name.unwrap_or_else(|| head.study.display_name.clone());
    super::studies::check_display_name(&display_name, &state.access.limits)?;
    match state.store.lookup_study(&path.project, &path.location, &display_name).await {
        Ok(_) => {
            return Err(ApiError::new(
                Code::AlreadyExists,
                format!(
                    "{}/{} already has a study named {}; import it under another name (?displayName=)",
                    path.project,
                    path.location,
                    shown(&display_name)
                ),
            ));
        }
        Err(StoreError::NotFound(_)) => {}
        Err(e) => return Err(e.into()),
    }
    // The head is kept as the document without its trials, decoded again at the commit.
    let head_json = {
        let mut empty = StudyExport::head(&head, crate::clock::now_ms());
        empty.study.display_name = display_name.clone();
        serde_json::to_string(&empty).map_err(|e| ApiError::new(Code::Internal, format!("keeping the document's head failed: {e}")))?
    };
    let now = crate::clock::now_ms();
    let id = format!("{:032x}", rand::random::<u128>());
    let record = ImportRecord::opening(id, path.project.clone(), path.location.clone(), display_name, head_json, now, now + IMPORT_TTL_MS);
    let mut opened = state.store.open_import(&record, MAX_OPEN_IMPORTS).await.map_err(import_error)?;
    if !trials.is_empty() {
        opened = stage(&state, &opened, &head, &trials).await?;
    }
    tracing::info!(import = %opened.id, project = %opened.project, trials = opened.trials, "import opened");
    Ok(Json(import_to_wire(&opened, None)))
}

async fn stage(state: &AppState, upload: &ImportRecord, head: &StudyHead, trials: &[bo_core::Trial]) -> Result<ImportRecord, ApiError> {
    let now = crate::clock::now_ms();
    state
        .store
        .stage_import_trials(
            &upload.project,
            &upload.location,
            &upload.id,
            &head.study.spec,
            trials,
            now,
            now + IMPORT_TTL_MS,
            MAX_IMPORT_TRIALS,
        )
        .await
        .map_err(import_error)
}

/// The upload's head, decoded from what `studies:import` kept.
async fn upload_head(state: &AppState, upload: &ImportRecord) -> Result<StudyHead, ApiError> {
    let text = upload.head.clone();
    let limits = state.access.limits.clone();
    blocking("reading the upload", move || -> Result<StudyHead, ApiError> {
        let doc: StudyExport =
            serde_json::from_str(&text).map_err(|e| ApiError::new(Code::Internal, format!("a kept upload head does not decode: {e}")))?;
        Ok(doc.into_head(&limits).map_err(|e| ApiError::new(Code::Internal, format!("a kept upload head is not valid: {e}")))?.0)
    })
    .await?
}

async fn find_upload(state: &AppState, path: &ImportPath) -> Result<ImportRecord, ApiError> {
    state.store.get_import(&path.project, &path.location, &path.import, crate::clock::now_ms()).await.map_err(store_error)
}

/// GetImport (bo extension): how far an upload got.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/imports/{import}", tag = "studies",
    params(ImportPath), responses((status = 200, description = "the upload", body = ImportW), (status = 404, description = "no such upload (deleted, expired, or its study deleted since)", body = ErrorBodyW)))]
pub async fn get_import(State(state): State<AppState>, Path(path): Path<ImportPath>) -> Result<Json<ImportW>, ApiError> {
    Ok(Json(upload_to_wire(&state, &find_upload(&state, &path).await?).await?))
}

/// The upload as answered, naming its study once committed (a committed upload whose study has
/// been deleted since is not found).
async fn upload_to_wire(state: &AppState, upload: &ImportRecord) -> Result<ImportW, ApiError> {
    let study = match (upload.committed_ms, upload.study_id) {
        (Some(_), Some(id)) => Some(state.store.study_by_id(id).await.map_err(store_error)?),
        _ => None,
    };
    Ok(import_to_wire(upload, study.as_ref()))
}

/// DeleteImport (bo extension): abandons an upload and what it staged.
#[utoipa::path(delete, path = "/v1/projects/{project}/locations/{location}/imports/{import}", tag = "studies",
    params(ImportPath), responses((status = 200, description = "deleted; an empty object", body = Object), (status = 404, description = "no such upload (deleted, expired, or its study deleted since)", body = ErrorBodyW)))]
pub async fn delete_import(State(state): State<AppState>, Path(path): Path<ImportPath>) -> Result<Json<serde_json::Value>, ApiError> {
    state.store.delete_import(&path.project, &path.location, &path.import, crate::clock::now_ms()).await.map_err(store_error)?;
    Ok(Json(serde_json::json!({})))
}

/// AppendImport (bo extension): stages the next trials of an upload, all or none. Their ids
/// must be above the upload's `lastTrialId`; each is checked as a created trial is.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/imports/{import}:append", tag = "studies",
    params(ImportPath), request_body = AppendImportW,
    responses((status = 200, description = "the upload, with the part staged", body = ImportW),
              (status = 400, description = "invalid trial (the message names the field)", body = ErrorBodyW),
              (status = 404, description = "no such upload (deleted, expired, or its study deleted since)", body = ErrorBodyW)))]
pub async fn append_import(state: AppState, path: ImportPath, body: AppendImportW) -> Result<Json<ImportW>, ApiError> {
    let upload = find_upload(&state, &path).await?;
    let head = upload_head(&state, &upload).await?;
    let limits = state.access.limits.clone();
    let (head, trials) = blocking("checking the trials", move || check_trials(body.trials, &head, &limits).map(|t| (head, t))).await??;
    Ok(Json(import_to_wire(&stage(&state, &upload, &head, &trials).await?, None)))
}

/// CommitImport (bo extension): creates the study with every staged trial and the document's
/// model state, seen whole or not at all. The commit runs on its own, whatever becomes of the
/// request: answered with the study if it ends within [`COMMIT_WAIT`](super::in_progress::COMMIT_WAIT), else 202 with the
/// upload's progress — ask again (it joins the running commit, or resumes one a restart cut) or
/// poll `GET`. A committed upload answers its study.
#[utoipa::path(post, path = "/v1/projects/{project}/locations/{location}/imports/{import}:commit", tag = "studies",
    params(ImportPath), request_body = crate::wire::request::EmptyRequestW,
    responses((status = 200, description = "the new study", body = StudyW),
              (status = 202, description = "still committing: the upload with its progress; ask again", body = ImportW),
              (status = 404, description = "no such upload (deleted, expired, or its study deleted since)", body = ErrorBodyW),
              (status = 409, description = "the location has a study of that name by now", body = ErrorBodyW)))]
pub async fn commit_import(state: AppState, path: ImportPath, _body: crate::wire::request::EmptyRequestW) -> Result<Response, ApiError> {
    let upload = find_upload(&state, &path).await?;
    if let (Some(_), Some(id)) = (upload.committed_ms, upload.study_id) {
        return Ok(Json(study_to_wire(&state.store.study_by_id(id).await.map_err(store_error)?)).into_response());
    }
    let id = upload.id.clone();
    let commit = {
        let state = state.clone();
        async move { commit(&state, &upload).await }
    };
    let mut done = state.commits.join_or_start(&id, commit);
    // The answer is cloned out at once: a borrowed one must not be held across an await.
    let answered = tokio::time::timeout(state.access.commit_wait, done.wait_for(Option::is_some)).await.map(|r| r.map(|a| a.clone()));
    match answered {
        Ok(Ok(Some(Ok(study)))) => Ok(Json(study_to_wire(&study)).into_response()),
        Ok(Ok(Some(Err(e)))) => Err(e),
        Ok(_) => Err(ApiError::new(Code::Internal, "the import's commit stopped unexpectedly; ask again to resume it")),
        Err(_) => {
            let now = find_upload(&state, &path).await?;
            Ok((axum::http::StatusCode::ACCEPTED, Json(upload_to_wire(&state, &now).await?)).into_response())
        }
    }
}

async fn commit(state: &AppState, upload: &ImportRecord) -> Result<bo_store::StudyRecord, ApiError> {
    let head = upload_head(state, upload).await?;
    let now = crate::clock::now_ms();
    let study = state.store.commit_import(upload, &head, now, now + COMMITTED_TTL_MS).await.map_err(|e| match e {
        StoreError::AlreadyExists(m) => ApiError::new(Code::AlreadyExists, m),
        e => store_error(e),
    })?;
    if upload.committed_ms.is_none() {
        tracing::info!(study = %crate::wire::study::study_name(&study), trials = upload.trials, "study imported");
    }
    state.engine.notify_changed(&study);
    Ok(study)
}

/// `POST …/imports/{import}:{verb}`: `:append` and `:commit`.
pub async fn post_import_verb(
    State(state): State<AppState>,
    Path((project, location, import_verb)): Path<(String, String, String)>,
    RawBody(body): RawBody,
) -> Result<Response, ApiError> {
    let Some((import, verb)) = import_verb.split_once(':') else {
        return Err(ApiError::not_found(format!("POST {} is not a method; upload methods are :append and :commit", shown(&import_verb))));
    };
    let path = ImportPath { project, location, import: import.to_owned() };
    let limits = state.access.limits.clone();
    match verb {
        "append" => Ok(append_import(state, path, parse_body(body, &limits).await?).await?.into_response()),
        "commit" => commit_import(state, path, parse_body(body, &limits).await?).await,
        other => Err(ApiError::not_found(format!("{} is not an upload method; upload methods are append and commit", shown(other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_may_wait_its_grace_and_what_its_bytes_allow() {
        let mut pace = Pace::default();
        assert_eq!(pace.allowed(0), EXPORT_GRACE, "the opening waits the grace");
        pace.waited = EXPORT_GRACE;
        assert_eq!(pace.allowed(64 * 1024), Duration::from_secs(1), "64 KiB more: a second more");
        pace.waited += Duration::from_secs(1);
        assert_eq!(pace.allowed(0), Duration::ZERO, "a reader slower than the least rate has no time left");
    }
}
