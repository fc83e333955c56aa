//! bo's reads for live views (bo extensions the dashboard polls): `GET …/trials:columns`, the
//! trials changed after a cursor, one array per field; `GET …/trials:curves`, the learning
//! curves of the running and the latest trials; `GET …/trials:history`, the history in at most a
//! few thousand buckets. Plain reads of the store: no lock, no designer.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use bo_store::{Cursor, CurveMetric};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ErrorBodyW};
use super::extract::{StudyPath, load_study};
use super::state::AppState;
use crate::wire::columns::{ColumnsHead, CurveW, TrialColumnsW, TrialCurvesW, TrialHistoryW};
use crate::wire::shown;
use crate::wire::study::state_to_wire;

/// Trials per read when `pageSize` is absent, and the most one read takes.
pub const DEFAULT_COLUMNS_PAGE: i64 = 20_000;
/// The most trials one read takes.
pub const MAX_COLUMNS_PAGE: i64 = 100_000;
/// The most stored bytes (parameters and final measurements) one read holds beyond its first
/// trial: a read stops early, with `more`, rather than pass it.
pub const COLUMNS_BYTES: usize = 32 << 20;

/// The query of a columnar read.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ColumnsParams {
    /// The `cursor` of the previous read; absent: from the first trial.
    #[param(pattern = r"^([0-9]{1,18}(\.[0-9]{1,19})?)?$")]
    pub after: Option<String>,
    /// Trials per read: 1 to 100,000; absent means 20,000.
    #[param(minimum = 1, maximum = 100000)]
    pub page_size: Option<i64>,
}

/// The trials of a study changed after `after`, as columns (bo extension). Poll with the
/// returned `cursor` to receive only what changed since; `reset` says to drop what was held (a
/// trial was deleted), `more` to ask again at once.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials:columns", tag = "trials",
    params(StudyPath, ColumnsParams),
    responses((status = 200, description = "success", body = TrialColumnsW),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW),
              (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn trial_columns(
    State(state): State<AppState>,
    Path(path): Path<StudyPath>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (after, size) = read_query(&query)?;
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let _turn = state.engine.read_turn(&path.project, Some(study.id)).await;
    let changes = state.store.trial_changes(study.id, after, size, COLUMNS_BYTES).await?;
    let head = ColumnsHead {
        study_state: state_to_wire(changes.state),
        data_version: changes.data_version,
        reset: changes.reset,
        more: changes.more,
        cursor: cursor_to_wire(changes.cursor),
    };
    // Columns of up to 100,000 trials, as JSON, gzipped when the client takes it (a tenth of
    // the bytes): tens of milliseconds per 100,000, off the runtime.
    let spec = study.spec.clone();
    super::offload::json_negotiated(&headers, move || TrialColumnsW::new(head, &changes.trials, &spec)).await
}

fn read_query(query: &BTreeMap<String, String>) -> Result<(Cursor, i64), ApiError> {
    only(query, "trials:columns", &["after", "pageSize", "page_size"])?;
    let after = match query.get("after").filter(|a| !a.is_empty()) {
        None => Cursor::START,
        Some(raw) => {
            cursor_from_wire(raw).ok_or_else(|| ApiError::invalid(format!("after: {} is not a cursor this service issued", shown(raw))))?
        }
    };
    let raw_size = query.get("pageSize").or_else(|| query.get("page_size"));
    Ok((after, count("pageSize", raw_size, DEFAULT_COLUMNS_PAGE, MAX_COLUMNS_PAGE)?))
}

/// Buckets of the history when `maxPoints` is absent, and the most one read takes.
pub const DEFAULT_HISTORY_POINTS: i64 = 2_000;
/// The most buckets one history read takes.
pub const MAX_HISTORY_POINTS: i64 = 20_000;

/// The query of a history read.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct HistoryParams {
    /// Buckets at most: 1 to 20,000; absent means 2,000.
    #[param(minimum = 1, maximum = 20000)]
    pub max_points: Option<i64>,
}

/// The optimisation history of a study's first metric in at most `maxPoints` buckets of
/// consecutive trial ids, aggregated by the database (bo extension): a chart of any study's size
/// at a bounded cost.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials:history", tag = "trials",
    params(StudyPath, HistoryParams),
    responses((status = 200, description = "success", body = TrialHistoryW),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW),
              (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn trial_history(
    State(state): State<AppState>,
    Path(path): Path<StudyPath>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Result<axum::response::Response, ApiError> {
    only(&query, "trials:history", &["maxPoints", "max_points"])?;
    let raw = query.get("maxPoints").or_else(|| query.get("max_points"));
    let max_points = count("maxPoints", raw, DEFAULT_HISTORY_POINTS, MAX_HISTORY_POINTS)?;
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let (width, buckets) = state.store.history(study.id, max_points).await?;
    let safety = study.spec.safety_metrics().next().is_some();
    let metric_id = study.spec.objective().id.clone();
    // Up to 20,000 buckets of nine series: written out off the runtime.
    super::offload::json(move || TrialHistoryW {
        metric_id,
        bucket_width: width,
        first_ids: buckets.iter().map(|b| b.first_id).collect(),
        last_ids: buckets.iter().map(|b| b.last_id).collect(),
        min: buckets.iter().map(|b| b.min).collect(),
        max: buckets.iter().map(|b| b.max).collect(),
        succeeded: buckets.iter().map(|b| b.succeeded).collect(),
        infeasible: buckets.iter().map(|b| b.infeasible).collect(),
        stopped: buckets.iter().map(|b| b.stopped).collect(),
        unsafe_trials: safety.then(|| buckets.iter().map(|b| b.unsafe_trials).collect()),
        safe_min: safety.then(|| buckets.iter().map(|b| b.safe_min).collect()),
        safe_max: safety.then(|| buckets.iter().map(|b| b.safe_max).collect()),
    })
    .await
}

/// Refuses a query parameter `method` does not take, naming it and those it does.
fn only(query: &BTreeMap<String, String>, method: &str, allowed: &[&str]) -> Result<(), ApiError> {
    match query.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(other) => Err(ApiError::invalid(format!("{}: not a parameter of {method} ({})", shown(other), allowed.join(", ")))),
        None => Ok(()),
    }
}

/// A count parameter `name`: `default` when absent, else 1 to `max`.
fn count(name: &str, raw: Option<&String>, default: i64, max: i64) -> Result<i64, ApiError> {
    match raw {
        None => Ok(default),
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| ApiError::invalid(format!("{name}: must be 1 to {max}, got {}", shown(raw)))),
    }
}

/// The most points one curves read answers (about 4 MB of JSON): the curves beyond are left
/// out, and the answer says how many.
pub const CURVE_POINTS: usize = 100_000;

/// Curves per read when `limit` is absent, and the most one read takes.
pub const DEFAULT_CURVES: i64 = 100;
/// The most curves one read takes.
pub const MAX_CURVES: i64 = 500;

/// The query of a curves read.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct CurvesParams {
    /// The metric to draw; absent: the study's first.
    pub metric: Option<String>,
    /// Curves: 1 to 500; absent means 100.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<i64>,
}

/// The learning curves of a study's trials for one metric (bo extension): the ACTIVE and
/// STOPPING trials first, then the newest others, each with when it was asked to stop; at most
/// 100,000 points in all (`omitted` says how many curves the limit took in but the points left
/// out), and a curve of more than 1,000 measurements thinned evenly to 1,000.
#[utoipa::path(get, path = "/v1/projects/{project}/locations/{location}/studies/{study}/trials:curves", tag = "trials",
    params(StudyPath, CurvesParams),
    responses((status = 200, description = "success", body = TrialCurvesW),
              (status = 400, description = "invalid request (the message names the field)", body = ErrorBodyW),
              (status = 404, description = "no such study, trial or operation", body = ErrorBodyW)))]
pub async fn trial_curves(
    State(state): State<AppState>,
    Path(path): Path<StudyPath>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Result<axum::response::Response, ApiError> {
    only(&query, "trials:curves", &["metric", "limit"])?;
    let limit = count("limit", query.get("limit"), DEFAULT_CURVES, MAX_CURVES)?;
    let study = load_study(&state, &path.project, &path.location, &path.study).await?;
    let metric = match query.get("metric") {
        None => study.spec.objective().id.clone(),
        Some(m) if study.spec.metrics.iter().any(|s| &s.id == m) => m.clone(),
        Some(m) => return Err(ApiError::invalid(format!("metric: {} is not a metric of the study", shown(m)))),
    };
    let which = if metric == study.spec.objective().id { CurveMetric::Objective } else { CurveMetric::Named(&metric) };
    let _turn = state.engine.read_turn(&path.project, Some(study.id)).await;
    let read = state.store.curves(study.id, which, limit, CURVE_POINTS).await?;
    // Up to 100,000 points: written out off the runtime.
    super::offload::json(move || TrialCurvesW {
        metric_id: metric,
        curves: read.curves.iter().map(CurveW::new).collect(),
        omitted: read.omitted,
    })
    .await
}

/// A cursor as the wire shows it: `SEQ` after a whole read, `SEQ.ID` inside a page.
fn cursor_to_wire(c: Cursor) -> String {
    if c.trial_id == i64::MAX { c.seq.to_string() } else { format!("{}.{}", c.seq, c.trial_id) }
}

/// A cursor from the wire, as [`cursor_to_wire`] wrote it.
fn cursor_from_wire(s: &str) -> Option<Cursor> {
    let (seq, id) = match s.split_once('.') {
        Some((seq, id)) => (seq, id.parse::<i64>().ok().filter(|id| *id >= 0)?),
        None => (s, i64::MAX),
    };
    let seq = seq.parse::<i64>().ok().filter(|s| *s >= 0)?;
    Some(Cursor { seq, trial_id: id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_nonsense_is_refused() {
        for c in [Cursor { seq: 0, trial_id: i64::MAX }, Cursor { seq: 12, trial_id: 7 }] {
            assert_eq!(cursor_from_wire(&cursor_to_wire(c)), Some(c));
        }
        for bad in ["", "-1", "1.-2", "x", "1.2.3", "99999999999999999999"] {
            assert_eq!(cursor_from_wire(bad), None, "{bad}");
        }
    }
}
