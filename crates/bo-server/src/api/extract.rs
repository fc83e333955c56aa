//! Request extraction: JSON bodies read leniently but strictly checked (any content type, no
//! body is `{}`, snake_case keys accepted, unknown fields rejected with their path), the
//! body limit answered as a Google-shaped 413, and resource ids parsed from the path.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use super::wire::normalize_keys;

/// The body limit a request is held to, put in its extensions by the access guard (for the
/// message that names it).
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// A JSON body of type `T`, errors as [`ApiError`].
pub struct AppJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for AppJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = read_body(req, state).await?;
        parse_body(&bytes).map(AppJson)
    }
}

/// The raw body within the size limit, for handlers that choose its type themselves.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        read_body(req, state).await.map(RawBody)
    }
}

/// The raw body within the size limit.
pub async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    let limit = req.extensions().get::<BodyLimit>().map_or(super::DEFAULT_BODY_LIMIT, |l| l.0);
    Bytes::from_request(req, state).await.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::invalid(format!("the request body is larger than the limit of {limit} bytes")).with_status(status)
        } else {
            ApiError::invalid(format!("could not read the request body: {rejection}"))
        }
    })
}

/// Parses a JSON body (empty means `{}`) into `T`, naming the field that is wrong.
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ApiError::invalid("the request body is not UTF-8"))?;
    // No body at all is `{}` (curl -X POST, clients of methods whose body is optional); a body
    // of whitespace is not JSON.
    let mut value: serde_json::Value = if text.is_empty() {
        serde_json::Value::Object(Default::default())
    } else {
        serde_json::from_str(text).map_err(|e| ApiError::invalid(format!("the request body is not valid JSON: {e}")))?
    };
    normalize_keys(&mut value);
    serde_path_to_error::deserialize(super::wire::strict::Strict(value)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ApiError::invalid(format!("invalid request body: {inner}"))
        } else {
            ApiError::invalid(format!("{path}: {inner}"))
        }
    })
}

/// A numeric resource id from the path; anything else names a resource that cannot exist.
pub fn parse_id(kind: &str, raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| ApiError::not_found(format!("{kind} {raw:?} not found")))
}

#[cfg(test)]
mod tests {
    use super::parse_body;
    use crate::api::wire::trial::EmptyRequest;

    #[test]
    fn no_body_is_an_empty_object_and_whitespace_is_not_json() {
        assert!(parse_body::<EmptyRequest>(b"").is_ok());
        assert!(parse_body::<EmptyRequest>(b"{}").is_ok());
        assert!(parse_body::<EmptyRequest>(b" {} \n").is_ok());
        for bad in [&b"\t"[..], b" ", b"[]", b"null"] {
            assert!(parse_body::<EmptyRequest>(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
