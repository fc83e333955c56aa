//! Request extraction: JSON bodies read leniently but strictly checked (any content type, no
//! body is `{}`, snake_case keys accepted, unknown fields rejected with their path), the
//! body limit answered as a Google-shaped 413, and resource ids parsed from the path.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use bo_core::Limits;
use bo_core::limits::Text;
use bo_store::{StoreError, StudyRecord};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::IntoParams;

use super::access::{BodyLimit, BodyTimeout};
use super::error::ApiError;
use super::state::AppState;
use crate::wire::normalize_keys;
use crate::wire::operation::ApiVersion;

/// A JSON body of type `T`, errors as [`ApiError`].
pub struct AppJson<T>(pub T);

impl<T: DeserializeOwned + Send + 'static> FromRequest<AppState> for AppJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let bytes = read_body(req, state).await?;
        parse_body(bytes, &state.access.limits).await.map(AppJson)
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
    let timeout = req.extensions().get::<BodyTimeout>().map(|t| t.0);
    let read = Bytes::from_request(req, state);
    let read = match timeout {
        None => read.await,
        Some(timeout) => tokio::time::timeout(timeout, read).await.map_err(|_| {
            ApiError::new(
                super::error::Code::DeadlineExceeded,
                format!("the request body did not arrive within {} s of the request head (--body-timeout)", timeout.as_secs_f64()),
            )
            .with_status(StatusCode::REQUEST_TIMEOUT)
        })?,
    };
    read.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::invalid(format!("the request body is larger than the limit of {limit} bytes")).with_status(status)
        } else {
            ApiError::invalid(format!("could not read the request body: {rejection}"))
        }
    })
}

/// Bodies larger than this are parsed on the blocking pool, not on the async runtime.
const PARSE_INLINE_BYTES: usize = 16 << 10;

/// Parses a JSON body (empty means `{}`) into `T`, naming the field that is wrong: on the
/// blocking pool when it is large, so a megabyte of JSON never holds a runtime thread.
pub async fn parse_body<T: DeserializeOwned + Send + 'static>(bytes: Bytes, limits: &Limits) -> Result<T, ApiError> {
    if bytes.len() <= PARSE_INLINE_BYTES {
        return parse_body_now(&bytes, limits);
    }
    let limits = limits.clone();
    tokio::task::spawn_blocking(move || parse_body_now(&bytes, &limits))
        .await
        .map_err(|e| ApiError::new(super::error::Code::Internal, format!("parsing a request body panicked: {e}")))?
}

/// [`parse_body`] on this thread.
pub fn parse_body_now<T: DeserializeOwned>(bytes: &[u8], limits: &Limits) -> Result<T, ApiError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ApiError::invalid("the request body is not UTF-8"))?;
    // No body at all is `{}` (curl -X POST, clients of methods whose body is optional); a body
    // of whitespace is not JSON.
    let mut value: serde_json::Value = if text.is_empty() {
        serde_json::Value::Object(Default::default())
    } else {
        serde_json::from_str(text).map_err(|e| ApiError::invalid(format!("the request body is not valid JSON: {e}")))?
    };
    check_strings(&value, &mut String::new(), limits, Text::Free)?;
    normalize_keys(&mut value);
    serde_path_to_error::deserialize(crate::wire::strict::Strict(value)).map_err(|e| {
        let path = e.path().to_string();
        let inner = in_words(&e.into_inner().to_string());
        if path == "." {
            ApiError::invalid(format!("invalid request body: {inner}"))
        } else {
            ApiError::invalid(format!("{path}: {inner}"))
        }
    })
}

/// serde's message with the Rust type it expected in words: "expected u32" reads "expected an
/// integer from 0 to 4294967295", "expected f64" reads "expected a number".
fn in_words(message: &str) -> String {
    const WORDS: [(&str, &str); 12] = [
        ("u8", "an integer from 0 to 255"),
        ("u16", "an integer from 0 to 65535"),
        ("u32", "an integer from 0 to 4294967295"),
        ("u64", "a non-negative integer"),
        ("usize", "a non-negative integer"),
        ("i8", "an integer from -128 to 127"),
        ("i16", "an integer from -32768 to 32767"),
        ("i32", "an integer from -2147483648 to 2147483647"),
        ("i64", "an integer"),
        ("isize", "an integer"),
        ("f32", "a number"),
        ("f64", "a number"),
    ];
    let mut out = message.to_owned();
    for (ty, words) in WORDS {
        let needle = format!("expected {ty}");
        let mut from = 0;
        while let Some(at) = out[from..].find(&needle).map(|i| i + from) {
            let end = at + needle.len();
            if out[end..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                from = end;
                continue;
            }
            out.replace_range(at..end, &format!("expected {words}"));
            from = at + "expected ".len() + words.len();
        }
    }
    out
}

/// Every string and key of a body, at any depth, is free text at most: no NUL or other control
/// character but tabs and line breaks, and no longer than the text limit — the id limit for ids
/// and names (`parameterId`, `metricId`, `clientId`, `displayName`, and the strings of a
/// `values` list: categories). This is the one place request strings are held to the limits;
/// fields then apply their own rules of form (a parameter id without whitespace, a name not
/// blank). No field — not even one bo ignores or only stores — keeps or echoes a NUL or a
/// megabyte. `kind` is what the strings at `path` are.
fn check_strings(value: &serde_json::Value, path: &mut String, limits: &Limits, kind: Text) -> Result<(), ApiError> {
    use std::fmt::Write;
    let check = |text: &str, path: &str, kind: Text| {
        limits.check_text(text, kind).map_err(|e| super::error::text_error(if path.is_empty() { "body" } else { path }, &e))
    };
    match value {
        serde_json::Value::String(s) => check(s, path, kind),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                let _ = write!(path, "[{i}]");
                check_strings(item, path, limits, kind)?;
                path.truncate(len);
            }
            Ok(())
        }
        serde_json::Value::Object(map) => {
            for (key, item) in map {
                check(key, path, Text::Free)?;
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                let kind = if ID_KEYS.contains(&key.as_str()) || key == "values" { Text::Id } else { Text::Free };
                check_strings(item, path, limits, kind)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Keys whose string values are ids or names.
const ID_KEYS: [&str; 8] = ["parameterId", "parameter_id", "metricId", "metric_id", "clientId", "client_id", "displayName", "display_name"];

/// A numeric resource id from the path, in its one canonical spelling (decimal digits, no sign,
/// no leading zero): `+1` and `01` name nothing, as they would alias `1`. Anything else names a
/// resource that cannot exist.
pub fn parse_id(kind: &str, raw: &str) -> Result<i64, ApiError> {
    let canonical = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) && !raw.starts_with('0');
    canonical
        .then(|| raw.parse::<i64>().ok())
        .flatten()
        .ok_or_else(|| ApiError::not_found(format!("{kind} {} not found", crate::wire::shown(raw))))
}

/// A study: `projects/{project}/locations/{location}/studies/{study}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct StudyPath {
    /// The project (tenant).
    pub project: String,
    /// The location.
    pub location: String,
    /// The study's number.
    pub study: String,
}

/// Loads the study of `path`, a 404 naming it when it does not exist.
pub async fn load_study(state: &AppState, project: &str, location: &str, raw_id: &str) -> Result<StudyRecord, ApiError> {
    let id = parse_id("study", raw_id)?;
    state.store.get_study(project, location, id).await.map_err(|e| match e {
        StoreError::NotFound(_) => ApiError::not_found(format!("study projects/{project}/locations/{location}/studies/{raw_id} not found")),
        e => e.into(),
    })
}

/// The API version the request's path names (`/v1/…` or `/v1beta1/…`), `None` under `/ui/…`:
/// what an Operation answered to it names (see [`ApiVersion`]).
pub struct PathVersion(pub Option<ApiVersion>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for PathVersion {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        // Nested routers see their path with the prefix taken off; the original keeps it.
        let path =
            parts.extensions.get::<axum::extract::OriginalUri>().map_or_else(|| parts.uri.path().to_owned(), |u| u.0.path().to_owned());
        Ok(PathVersion(ApiVersion::of_path(&path)))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_body_now;
    use crate::wire::request::EmptyRequestW;

    fn parse<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, super::ApiError> {
        parse_body_now(bytes, &bo_core::Limits::default())
    }

    #[test]
    fn no_body_is_an_empty_object_and_whitespace_is_not_json() {
        assert!(parse::<EmptyRequestW>(b"").is_ok());
        assert!(parse::<EmptyRequestW>(b"{}").is_ok());
        assert!(parse::<EmptyRequestW>(b" {} \n").is_ok());
        for bad in [&b"\t"[..], b" ", b"[]", b"null"] {
            assert!(parse::<EmptyRequestW>(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn no_string_anywhere_holds_a_nul_or_a_megabyte() {
        let e = parse::<serde_json::Value>(br#"{"a": [{"b": "x\u0000y"}]}"#).unwrap_err();
        assert!(format!("{e:?}").contains("a[0].b"), "{e:?}");
        let e = parse::<serde_json::Value>(br#"{"k\u0000": 1}"#).unwrap_err();
        assert!(format!("{e:?}").contains("control"), "{e:?}");
        let long = format!(r#"{{"a": "{}"}}"#, "x".repeat(5000));
        let e = parse::<serde_json::Value>(long.as_bytes()).unwrap_err();
        assert!(format!("{e:?}").contains("--max-text-length"), "{e:?}");
        let id = format!(r#"{{"p": [{{"parameterId": "{}"}}]}}"#, "x".repeat(500));
        let e = parse::<serde_json::Value>(id.as_bytes()).unwrap_err();
        assert!(format!("{e:?}").contains("p[0].parameterId") && format!("{e:?}").contains("--max-id-length"), "{e:?}");
        assert!(parse::<serde_json::Value>(br#"{"reason": "line 1\nline 2\ttab"}"#).is_ok());
    }

    /// A user reads what was expected, never a Rust type.
    #[test]
    fn wrong_types_are_named_in_words() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Counts {
            small: Option<u32>,
            big: Option<i64>,
            x: Option<f64>,
        }
        for (body, field, words) in [
            (&br#"{"small": 2.5}"#[..], "small", "an integer from 0 to 4294967295"),
            (br#"{"small": -1}"#, "small", "an integer from 0 to 4294967295"),
            (br#"{"big": "x"}"#, "big", "expected an integer"),
            (br#"{"x": true}"#, "x", "expected a number"),
        ] {
            let e = format!("{:?}", parse::<Counts>(body).unwrap_err());
            assert!(e.contains(field) && e.contains(words), "{e}");
            assert!(!["u32", "i64", "f64"].iter().any(|t| e.contains(t)), "{e}");
        }
        assert_eq!(super::in_words("expected u32, expected u64x"), "expected an integer from 0 to 4294967295, expected u64x");
    }

    #[test]
    fn ids_have_one_spelling() {
        assert_eq!(super::parse_id("trial", "12").unwrap(), 12);
        for bad in ["+1", "01", "0", "-1", "1 ", "", "1e3", "99999999999999999999"] {
            assert!(super::parse_id("trial", bad).is_err(), "{bad:?}");
        }
    }
}
