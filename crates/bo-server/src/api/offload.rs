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
    let mut response = answer(accepts_gzip(headers), build).await?;
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

/// Whether the request's `Accept-Encoding` takes gzip (RFC 9110, 12.5.3): `gzip`, `x-gzip` or
/// `*` with a weight above 0 (`gzip;q=0` refuses it, and `*;q=0` refuses what is not named).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()) else { return false };
    let mut named = None;
    let mut any = None;
    for item in value.split(',') {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let weight = parts
            .filter_map(|p| p.trim().split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .map_or(Some(1.0), |(_, q)| q.trim().parse::<f64>().ok().filter(|q| (0.0..=1.0).contains(q)));
        let Some(weight) = weight else { continue }; // a malformed weight: the item is ignored
        match coding.as_str() {
            "gzip" | "x-gzip" => named = Some(named.map_or(weight, |w: f64| w.max(weight))),
            "*" => any = Some(weight),
            _ => {}
        }
    }
    named.or(any).is_some_and(|w| w > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_taken_only_where_its_weight_is_above_zero() {
        let takes = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
            accepts_gzip(&headers)
        };
        for yes in ["gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.5", "*", "x-gzip", "GZIP", "gzip;q=0.001", "identity;q=0, *"] {
            assert!(takes(yes), "{yes:?}");
        }
        for no in ["gzip;q=0", "gzip; q=0.0", "br", "identity", "*;q=0", "gzip;q=0, *", "gzip;q=x", ""] {
            assert!(!takes(no), "{no:?}");
        }
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
