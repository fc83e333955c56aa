//! `Connection: close` on the answer to a request whose body was left unread: a 413 over the
//! body limit, a 408 past the body timeout, a refusal by key or rate before the body mattered.
//!
//! hyper closes such a connection once it has answered (it cannot tell where the next request
//! begins), but whether the answer *says* so depends on whether hyper saw the body dropped
//! before it wrote the head. When it did not, a client keeps the connection for its next
//! request and meets a closed socket ("connection closed before message completed"). Saying it
//! every time lets every client open a new connection instead. Owns nothing else: the refusals
//! themselves are made where the limits live.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// Marks its answer `Connection: close` when the request's body was not read to its end. A body
/// whose last bytes hyper has taken counts as read, even if the handler then refused it (a
/// 413 found on the last chunk): the connection is at a request's boundary and stays good.
pub async fn close_when_unread(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let ended = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| Body::new(Tracked { inner: body, ended: ended.clone() }));
    let mut response = next.run(request).await;
    if !ended.load(Ordering::Acquire) {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that records reaching its end.
struct Tracked {
    inner: Body,
    ended: Arc<AtomicBool>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.ended.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        let ended = self.inner.is_end_stream();
        if ended {
            self.ended.store(true, Ordering::Release);
        }
        ended
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::{Body, Bytes};
    use axum::http::{Request, StatusCode};
    use axum::routing::post;
    use tower::ServiceExt;

    fn app() -> Router {
        Router::new()
            .route("/read", post(|body: Bytes| async move { body.len().to_string() }))
            .route("/refuse", post(|| async { StatusCode::UNAUTHORIZED }))
            .layer(axum::middleware::from_fn(super::close_when_unread))
    }

    async fn connection(path: &str, body: &'static str) -> Option<String> {
        let request = Request::post(path).body(Body::from(body)).unwrap();
        let response = app().oneshot(request).await.unwrap();
        response.headers().get("connection").map(|v| v.to_str().unwrap().to_owned())
    }

    #[tokio::test]
    async fn an_unread_body_closes_the_connection_and_a_read_or_empty_one_does_not() {
        assert_eq!(connection("/refuse", "a body nobody reads").await.as_deref(), Some("close"));
        assert_eq!(connection("/read", "a body read to its end").await, None);
        assert_eq!(connection("/refuse", "").await, None, "no body: nothing was left unread");
    }
}
