//! Liveness and readiness.

use axum::Json;
use axum::extract::State;

use super::error::{ApiError, Code, ErrorBodyW};
use super::state::AppState;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, description = "alive", body = Object)))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, description = "ready", body = Object), (status = 503, description = "the database is unreachable", body = ErrorBodyW)))]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    match state.store.ping().await {
        Ok(()) => Ok(Json(serde_json::json!({"status": "ok", "database": format!("{:?}", state.store.backend()).to_lowercase()}))),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            Err(ApiError::new(Code::Unavailable, "the database is unreachable"))
        }
    }
}
