//! Request ids: every request gets one — the caller's `x-request-id` when it sends a sane one,
//! else this process's next (`<random process prefix>-<counter>`, unique across replicas) — and
//! every response carries it back. The tracing span of the request holds it, so every log line
//! written while serving the request names it.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// The header, both ways.
pub const HEADER: &str = "x-request-id";

/// A request's id, in its extensions.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

static PREFIX: LazyLock<String> = LazyLock::new(|| format!("{:08x}", rand::random::<u32>()));
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Whether a caller's id may be used: 1 to 128 visible ASCII characters.
fn acceptable(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

fn next_id() -> String {
    format!("{}-{}", *PREFIX, NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The middleware: assigns the id before anything else runs and returns it on the response.
pub async fn assign(mut request: Request, next: Next) -> Response {
    let id = request.headers().get(HEADER).and_then(|v| v.to_str().ok()).filter(|v| acceptable(v)).map_or_else(next_id, str::to_owned);
    request.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_unique_and_callers_are_checked() {
        assert_ne!(super::next_id(), super::next_id());
        assert!(super::acceptable("trace-4bf92f3577b34da6"));
        assert!(!super::acceptable(""));
        assert!(!super::acceptable("has space"));
        assert!(!super::acceptable(&"x".repeat(129)));
    }
}
