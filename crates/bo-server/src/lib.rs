//! bo-server: the HTTP service. It is the only crate that knows HTTP, Vertex JSON and threads:
//! `api` translates the wire format and serves the routes, `engine` runs designers (never
//! importing axum), `bo-store` keeps the data.

pub mod api;
pub mod config;
pub mod engine;
pub mod state;

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

pub use config::Config;
use state::AppState;

/// The current time in milliseconds since the Unix epoch: the one clock of the service.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// The whole application for `state`: routes, tracing, and a panic guard that answers 500 in
/// Google's error shape instead of dropping the connection.
pub fn app(state: AppState) -> Router {
    api::router(state)
        .layer(CatchPanicLayer::custom(|_| {
            axum::response::IntoResponse::into_response(api::error::ApiError::new(api::error::Code::Internal, "a handler panicked"))
        }))
        .layer(TraceLayer::new_for_http())
}

/// Connects to the database, serves until SIGTERM or Ctrl-C, then drains requests and closes
/// the database.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let options = bo_store::StoreOptions {
        max_connections: config.max_connections,
        acquire_timeout: std::time::Duration::from_secs_f64(config.database_timeout.clamp(0.1, 3600.0)),
    };
    let store = bo_store::Store::connect(&config.database_url, &options)
        .await
        .with_context(|| format!("opening the database {}", config::redact(&config.database_url)))?;
    tracing::info!(database = %config::redact(&config.database_url), backend = ?store.backend(), "database ready");
    let listener = tokio::net::TcpListener::bind(config.listen).await.with_context(|| format!("listening on {}", config.listen))?;
    tracing::info!(address = %listener.local_addr()?, "bo-server listening");
    let engine_config = engine::EngineConfig {
        workers: config.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        cache_bytes: config.model_cache_mb.saturating_mul(1 << 20),
        prefetch: config.prefetch,
        queue_staleness: i64::from(config.queue_staleness),
        max_suggest_wait: std::time::Duration::from_secs_f64(config.max_suggest_wait.clamp(0.0, 3600.0)),
        refit_lease: std::time::Duration::from_secs_f64(config.refit_lease.clamp(1.0, 86_400.0)),
        trial_lease: (config.trial_lease > 0.0).then(|| std::time::Duration::from_secs_f64(config.trial_lease.min(365.0 * 86_400.0))),
    };
    let state = AppState { store: store.clone(), engine: engine::Engine::new(store.clone(), &engine_config) };
    tracing::info!(replica = state.engine.replica(), "replica named (on refit leases)");
    match state.engine.resume_pending().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(operations = n, "finishing suggest operations left pending"),
        Err(e) => tracing::warn!(error = %e, "could not resume pending suggest operations"),
    }
    axum::serve(listener, app(state)).with_graceful_shutdown(shutdown_signal()).await?;
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
