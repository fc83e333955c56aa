//! The HTTP side of the metrics: the middleware that counts and times every request, and the
//! `GET /metrics` handler (on the API's listener or its own, `--metrics-listen`), which reads
//! the gauges and renders the recorder (`crate::metrics`).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::state::AppState;
use crate::metrics::{Metrics, Snapshot};

/// The middleware that counts and times every request by its route template (`unmatched` for
/// paths no route has).
pub async fn record(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route = request.extensions().get::<MatchedPath>().map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let response = next.run(request).await;
    metrics.request(method, &route, response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}

/// The method as a label: the standard ones by name, any other as `OTHER` (a client inventing
/// methods must not invent series).
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// `/metrics` alone, for its own listener (`--metrics-listen`).
pub fn router(state: AppState) -> axum::Router {
    axum::Router::new().route("/metrics", axum::routing::get(serve)).with_state(state)
}

/// `GET /metrics`: OpenMetrics to a scraper whose `Accept` names it, the classic text format
/// otherwise.
pub async fn serve(State(state): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let (idle, size, max) = state.store.pool_usage();
    let snapshot = Snapshot { engine: state.engine.usage(), pool_idle: idle, pool_in_use: size.saturating_sub(idle), pool_max: max };
    let text = state.metrics.render(snapshot);
    let openmetrics =
        headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|v| v.contains("application/openmetrics-text"));
    let (body, content_type) = if openmetrics {
        (text, "application/openmetrics-text; version=1.0.0; charset=utf-8")
    } else {
        (crate::metrics::classic(&text), "text/plain; version=0.0.4; charset=utf-8")
    };
    let mut response = body.into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invented_methods_share_one_label() {
        let invented = axum::http::Method::from_bytes(b"BREW").unwrap();
        assert_eq!(method_label(&invented), "OTHER");
        assert_eq!(method_label(&axum::http::Method::POST), "POST");
    }
}
