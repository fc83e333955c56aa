//! Liveness and readiness.

use axum::Json;
use axum::extract::State;

use super::error::{ApiError, Code, ErrorBodyW};
use super::state::AppState;

/// Liveness: the process answers, with its version and the commit it was built from.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "alive: `{\"status\": \"ok\", \"version\": \"0.1.0\", \"commit\": \"1a2b3c4d5e6f\"}` (`commit` is `unknown` for a build outside a git checkout without BO_COMMIT)", body = Object)))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok", "version": env!("CARGO_PKG_VERSION"), "commit": crate::COMMIT}))
}

/// Readiness: the database answers, and (SQLite) its writes do not fail on a full disk.
///
/// A disk with under 4 MiB free is not ready once a write failed on it in the last minute, and
/// ready while its writes still succeed.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, description = "ready", body = Object), (status = 503, description = "the database is unreachable, or (SQLite) the disk under it is full", body = ErrorBodyW)))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    if let Some(free) = state.store.low_on_disk() {
        tracing::debug!(free_bytes = free, "readiness check failed: the database's disk is full");
        return Err(ApiError::new(
            Code::Unavailable,
            format!(
                "the database's disk is full ({free} bytes free, fewer than {}): writes fail until room is made",
                bo_store::MIN_FREE_BYTES
            ),
        ));
    }
    match state.store.ping().await {
        Ok(()) => Ok(Json(serde_json::json!({"status": "ok", "database": format!("{:?}", state.store.backend()).to_lowercase()}))),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ApiError::new(Code::Unavailable, "the database is unreachable"))
        }
    }
}
