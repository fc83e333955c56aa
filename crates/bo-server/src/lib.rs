//! bo-server: the HTTP service. It is the only crate that knows HTTP, Vertex JSON and threads:
//! `api` translates the wire format and serves the routes, `engine` runs designers (never
//! importing axum), `bo-store` keeps the data.

pub mod api;
pub mod cli;
pub mod clock;
pub mod config;
pub mod engine;
pub mod listener;
pub mod metrics;
mod sync;
pub mod transfer;
pub mod wire;

use std::time::Duration;

use anyhow::Context;

use api::access::Access;
pub use api::app;
use api::state::AppState;
pub use config::Config;

/// The commit this binary was built from (`build.rs`): `unknown` outside a git checkout
/// without `BO_COMMIT`.
pub const COMMIT: &str = env!("BO_COMMIT");

/// What `--version` prints: the crate's version and the commit.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("BO_COMMIT"), ")");

/// Connects to the database, serves until SIGTERM or Ctrl-C, then drains requests and closes
/// the database.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let access = Access::from_config(&config)?;
    let parts = config.split();
    let store = bo_store::Store::connect(&config.database_url, &parts.store)
        .await
        .with_context(|| format!("opening the database {}", config::redact(&config.database_url)))?;
    tracing::info!(database = %config::redact(&config.database_url), backend = ?store.backend(), "database ready");
    let (address, narrowed) = config.listen_address(!access.keys.is_empty());
    let listener = tokio::net::TcpListener::bind(address).await.with_context(|| format!("listening on {address}"))?;
    tracing::info!(address = %listener.local_addr()?, version = VERSION, "bo-server listening");
    if access.keys.is_empty() {
        if narrowed {
            tracing::warn!(
                asked = %config.listen, listening = %address,
                "no API keys configured, so listening on loopback only; configure keys (--api-keys-file) or pass --allow-unauthenticated to listen on the address asked for"
            );
        } else {
            tracing::warn!("no API keys configured: every request is allowed, to every project");
        }
    } else {
        tracing::info!(keys = access.keys.len(), "API keys configured: requests need `Authorization: Bearer KEY`");
    }
    let metrics = std::sync::Arc::new(metrics::Metrics::new());
    let engine = engine::Engine::new(store.clone(), &parts.engine, metrics.clone());
    let state = AppState::new(store.clone(), engine, std::sync::Arc::new(access), metrics);
    tracing::info!(replica = state.engine.replica(), "replica named (on refit leases)");
    match state.engine.resume_pending().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(operations = n, "finishing suggest operations left pending"),
        Err(e) => tracing::warn!(error = %e, "could not resume pending suggest operations"),
    }
    // The store's own upkeep, beside serving; stopped before the pool closes, so none of it
    // meets a closed pool. Deletes a stopped server left part way are finished (their studies
    // are hidden already; what is left is finished at the next start).
    let mut upkeep = vec![tokio::spawn({
        let store = state.store.clone();
        async move {
            match store.finish_deletes().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(studies = n, "finished deleting studies left part way"),
                Err(e) => tracing::warn!(error = %e, "could not finish deleting studies left part way (retried at the next start)"),
            }
        }
    })];
    if store.backend() == bo_store::Backend::Sqlite {
        upkeep.push(tokio::spawn(checkpoint_wal(store.clone())));
    }
    if config.operation_retention > 0.0 {
        upkeep.push(tokio::spawn(expire_operations(
            state.store.clone(),
            Duration::from_secs_f64(config.operation_retention.min(100.0 * 365.0 * 86_400.0)),
        )));
    }
    let limits = parts.connections;
    tracing::info!(cap = limits.max_connections, idle_timeout = ?limits.idle_timeout, "connection limits");
    let metrics_server = match config.metrics_listen {
        None => None,
        Some(address) => {
            let metrics_listener =
                tokio::net::TcpListener::bind(address).await.with_context(|| format!("listening on {address} (--metrics-listen)"))?;
            tracing::info!(address = %metrics_listener.local_addr()?, "serving /metrics");
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let served = tokio::spawn(listener::serve(metrics_listener, api::metrics::router(state.clone()), limits.clone(), async {
                let _ = stopped.await;
            }));
            Some((stop, served))
        }
    };
    let engine = state.engine.clone();
    let app = app(state, config.metrics_listen.is_none());
    let signalled = std::sync::Arc::new(std::sync::OnceLock::new());
    let signal = {
        let signalled = signalled.clone();
        async move {
            shutdown_signal().await;
            let _ = signalled.set(std::time::Instant::now());
        }
    };
    listener::serve(listener, app, limits, signal).await;
    if let Some((stop, served)) = metrics_server {
        let _ = stop.send(());
        let _ = served.await;
    }
    // The engine's background work ends (or gives its leases back) before the pool closes,
    // within what is left of the grace period (a second at least).
    let grace = Duration::from_secs_f64(config.shutdown_grace.clamp(0.0, 3600.0));
    let spent = signalled.get().map_or(Duration::ZERO, |at: &std::time::Instant| at.elapsed());
    engine.shutdown(grace.saturating_sub(spent).max(Duration::from_secs(1))).await;
    for task in upkeep {
        task.abort();
        let _ = task.await;
    }
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Deletes finished operations older than `retention`, now and then every so often (a tenth of
/// the retention, at most an hour), a batch per statement so no transaction grows with the
/// backlog. Failures are logged and retried at the next round.
async fn expire_operations(store: bo_store::Store, retention: Duration) {
    const BATCH: i64 = 1000;
    let every = (retention / 10).clamp(Duration::from_secs(1), Duration::from_secs(3600));
    loop {
        let before = clock::now_ms().saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX));
        let mut deleted = 0u64;
        loop {
            match store.delete_finished_operations(before, BATCH).await {
                Ok(n) => {
                    deleted += n;
                    if n < BATCH as u64 {
                        break;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not delete expired operations; retrying later");
                    break;
                }
            }
        }
        if deleted > 0 {
            tracing::info!(deleted, "expired finished operations deleted");
        }
        tokio::time::sleep(every).await;
    }
}

/// SQLite: copies the write-ahead log into the database file every second, off the write gate
/// ([`bo_store::Store::checkpoint`]), so no writer waits behind a checkpoint made inside
/// someone else's commit. A failure is logged once, and again only after a success.
async fn checkpoint_wal(store: bo_store::Store) {
    let mut failing = false;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let started = std::time::Instant::now();
        match store.checkpoint().await {
            Ok(Some((log, copied))) => {
                failing = false;
                if started.elapsed() > Duration::from_millis(250) {
                    tracing::debug!(pages = log, copied, took = ?started.elapsed(), "slow checkpoint of the write-ahead log");
                }
            }
            Ok(None) => return,
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "could not checkpoint the write-ahead log; retrying every second");
            }
            Err(_) => {}
        }
    }
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
