//! A handler's CPU work, off the async runtime: answers of megabytes (a page of trials or
//! studies, the columns of 100,000 trials) are built and serialized on a blocking thread, so no
//! runtime thread spends milliseconds on one request while others wait. Model computations are
//! not run here but by the engine, under its permits.

use std::io::Write;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::error::{ApiError, Code};

/// Runs `work` on a blocking thread; a panic in it is an internal error naming `what`.
pub async fn blocking<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ApiError::new(Code::Internal, format!("{what} panicked: {e}")))
}

/// A JSON answer built by `build` and serialized on a blocking thread.
pub async fn json<T: Serialize>(build: impl FnOnce() -> T + Send + 'static) -> Result<Response, ApiError> {
    answer(false, build).await
}

/// As [`json`], gzipped when the request's `Accept-Encoding` takes gzip (a tenth of the bytes
/// for columns of numbers), with `Vary: accept-encoding` either way.
pub async fn json_negotiated<T: Serialize>(headers: &HeaderMap, build: impl FnOnce() -> T + Send + 'static) -> Result<Response, ApiError> {
    let mut response = answer(super::columns::accepts_gzip(headers), build).await?;
    response.headers_mut().insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    Ok(response)
}

async fn answer<T: Serialize>(gzip: bool, build: impl FnOnce() -> T + Send + 'static) -> Result<Response, ApiError> {
    let body = blocking("building the answer", move || -> Result<Vec<u8>, std::io::Error> {
        let json = serde_json::to_vec(&build())?;
        if !gzip {
            return Ok(json);
        }
        let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(json.len() / 4), flate2::Compression::fast());
        encoder.write_all(&json)?;
        encoder.finish()
    })
    .await?
    .map_err(|e| ApiError::new(Code::Internal, format!("building the answer failed: {e}")))?;
    let mut response = body.into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    Ok(response)
}
