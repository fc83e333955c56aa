//! The HTTP listener: accepts TCP connections and serves each with hyper (HTTP/1.1), holding
//! every connection to the server's bounds so that no client — careless or hostile, with or
//! without a key — can exhaust what the others need.
//!
//! - **Idle and slow connections.** A connection must deliver a complete request head within
//!   `idle_timeout` of being opened or of its last response (hyper's header-read timer, which
//!   runs whenever a connection waits for a head): a silent connection, a kept-alive one nobody
//!   uses, and a slow-loris one sending a header byte at a time are all closed then. A slow body
//!   is bounded by the request timeout (`access`).
//! - **A cap on open connections**, below the process's open-file limit (raised to its hard
//!   limit at start-up, with room left for the database pool and the logs). At the cap the
//!   connection idle the longest — no request in flight — is asked to close, so a flood of idle
//!   connections cannot lock out a client that sends a request; a warning says the cap was met.
//!   An accept that fails (no file descriptors) closes idle connections too and waits a moment.
//! - **Shutdown** stops accepting, closes idle connections at once and lets requests in flight
//!   finish, for at most `shutdown_grace`; whatever is still open then is dropped.
//!
//! Must not know the routes or the API: it serves any `Router`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tower::ServiceExt;

use crate::sync::lock;

/// The bounds every connection is held to.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// Connections open at once (at most: see [`effective_cap`]).
    pub max_connections: usize,
    /// How long a connection may go without delivering a complete request head.
    pub idle_timeout: Duration,
    /// How long shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
}

/// Raises the open-file limit to its hard limit and returns the connection cap that leaves
/// room under it for `reserved` other descriptors (the database pool, logs, the listener), never
/// more than `asked`.
pub fn effective_cap(asked: usize, reserved: usize) -> usize {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(files) => {
            let room = usize::try_from(files).unwrap_or(usize::MAX).saturating_sub(reserved).max(16);
            if room < asked {
                tracing::warn!(
                    open_files = files,
                    cap = room,
                    asked,
                    "the open-file limit leaves room for fewer connections than --max-open-connections; raise `ulimit -n` to serve more"
                );
            }
            asked.min(room)
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not read the open-file limit; keeping --max-open-connections as given");
            asked
        }
    }
}

/// One open connection, as the listener sees it.
struct Tracked {
    /// Asks the connection to close (gracefully: after its request in flight, if any).
    close: Arc<Notify>,
    /// Requests in flight on it.
    busy: Arc<AtomicUsize>,
    /// When it last started or finished a request, in ms since the listener started.
    last_active: Arc<AtomicU64>,
}

/// The open connections.
struct Registry {
    started: Instant,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Tracked>>,
    /// Signalled whenever a connection closes.
    closed: Notify,
    /// When the cap was last reported, so a flood logs a line every few seconds, not per accept.
    warned_ms: AtomicU64,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn len(&self) -> usize {
        lock(&self.open).len()
    }

    /// Asks up to `n` connections to close: those with no request in flight, idle the longest
    /// first. Returns how many were asked.
    fn close_idle(&self, n: usize) -> usize {
        let open = lock(&self.open);
        let mut idle: Vec<(u64, &Tracked)> =
            open.values().filter(|t| t.busy.load(Ordering::SeqCst) == 0).map(|t| (t.last_active.load(Ordering::SeqCst), t)).collect();
        idle.sort_by_key(|(at, _)| *at);
        for (_, t) in idle.iter().take(n) {
            t.close.notify_one();
        }
        idle.len().min(n)
    }

    fn close_all(&self) {
        for t in lock(&self.open).values() {
            t.close.notify_one();
        }
    }

    fn warn_at_cap(&self, cap: usize) {
        let now = self.now_ms();
        let last = self.warned_ms.load(Ordering::SeqCst);
        if (last == 0 || now.saturating_sub(last) >= 10_000)
            && self.warned_ms.compare_exchange(last, now.max(1), Ordering::SeqCst, Ordering::SeqCst).is_ok()
        {
            tracing::warn!(cap, "connection limit reached: closing the connections idle the longest (--max-open-connections)");
        }
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` completes, then drains (see the
/// module docs).
pub async fn serve(listener: TcpListener, app: Router, limits: ConnectionLimits, shutdown: impl Future<Output = ()>) {
    let registry = Arc::new(Registry {
        started: Instant::now(),
        next_id: AtomicU64::new(0),
        open: Mutex::new(HashMap::new()),
        closed: Notify::new(),
        warned_ms: AtomicU64::new(0),
    });
    let cap = limits.max_connections.max(1);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors (or another transient failure): make room and retry
                // after a moment rather than spin.
                tracing::warn!(error = %e, open = registry.len(), "accepting a connection failed");
                registry.close_idle(16);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let open = registry.len();
        if open >= cap {
            registry.warn_at_cap(cap);
            // Make room for this one, and wait until a connection has gone (or a moment has
            // passed): accepting faster than connections close would run out of descriptors.
            // With every connection busy, this holds the new one and the backlog the rest.
            let gone = registry.closed.notified();
            registry.close_idle(open + 1 - cap);
            tokio::select! {
                () = &mut shutdown => break,
                () = gone => {},
                () = tokio::time::sleep(Duration::from_millis(100)) => {},
            }
        }
        let _ = stream.set_nodelay(true);
        spawn_connection(stream, app.clone(), &limits, &registry);
    }
    drop(listener);
    let open = registry.len();
    if open > 0 {
        tracing::info!(open, grace = ?limits.shutdown_grace, "closing connections");
    }
    registry.close_all();
    let drained = async {
        while registry.len() > 0 {
            let closed = registry.closed.notified();
            if registry.len() == 0 {
                break;
            }
            closed.await;
        }
    };
    if tokio::time::timeout(limits.shutdown_grace, drained).await.is_err() {
        tracing::warn!(open = registry.len(), "shutdown grace period over; dropping the connections still open");
    }
}

fn spawn_connection(stream: tokio::net::TcpStream, app: Router, limits: &ConnectionLimits, registry: &Arc<Registry>) {
    let id = registry.next_id.fetch_add(1, Ordering::SeqCst);
    let close = Arc::new(Notify::new());
    let busy = Arc::new(AtomicUsize::new(0));
    let last_active = Arc::new(AtomicU64::new(registry.now_ms()));
    lock(&registry.open).insert(id, Tracked { close: close.clone(), busy: busy.clone(), last_active: last_active.clone() });
    let service = {
        let registry = registry.clone();
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let (app, busy, last_active, registry) = (app.clone(), busy.clone(), last_active.clone(), registry.clone());
            busy.fetch_add(1, Ordering::SeqCst);
            last_active.store(registry.now_ms(), Ordering::SeqCst);
            async move {
                let response = app.oneshot(request.map(axum::body::Body::new)).await;
                last_active.store(registry.now_ms(), Ordering::SeqCst);
                busy.fetch_sub(1, Ordering::SeqCst);
                response
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.idle_timeout).keep_alive(true);
    let registry = registry.clone();
    tokio::spawn(async move {
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => log_end(result),
            () = close.notified() => {
                connection.as_mut().graceful_shutdown();
                log_end(connection.await);
            }
        }
        lock(&registry.open).remove(&id);
        registry.closed.notify_waiters();
    });
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        // Timeouts, resets and malformed requests are the client's business, not an error here.
        tracing::debug!(error = %e, "connection ended");
    }
}
