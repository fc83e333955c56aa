//! API errors in Google's shape, `{"error": {"code", "message", "status"}}`, from one table of
//! google.rpc codes with their HTTP statuses. For a 5xx the client gets a generic message and the
//! cause is logged; a 503 carries `Retry-After`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bo_core::limits::{OverLimit, TextError};
use bo_core::{ConfigError, FieldError, Limit, TrialError};
use bo_store::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::limit_flag;

/// The google.rpc codes Vertex answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// 400: the request is malformed.
    InvalidArgument,
    /// 400: the resource is not in a state that allows it.
    FailedPrecondition,
    /// 404.
    NotFound,
    /// 409.
    AlreadyExists,
    /// 500: a bug.
    Internal,
    /// 503: the database is down; retry.
    Unavailable,
    /// 401: no API key, or not one of ours.
    Unauthenticated,
    /// 429: over the key's rate limit; retry.
    ResourceExhausted,
    /// 504: the request took longer than the server's limit.
    DeadlineExceeded,
    /// 409: a concurrent change won too often; retry.
    Aborted,
}

impl Code {
    /// (name, gRPC number, HTTP status).
    pub fn faces(self) -> (&'static str, i32, StatusCode) {
        match self {
            Code::InvalidArgument => ("INVALID_ARGUMENT", 3, StatusCode::BAD_REQUEST),
            Code::FailedPrecondition => ("FAILED_PRECONDITION", 9, StatusCode::BAD_REQUEST),
            Code::NotFound => ("NOT_FOUND", 5, StatusCode::NOT_FOUND),
            Code::AlreadyExists => ("ALREADY_EXISTS", 6, StatusCode::CONFLICT),
            Code::Aborted => ("ABORTED", 10, StatusCode::CONFLICT),
            Code::Internal => ("INTERNAL", 13, StatusCode::INTERNAL_SERVER_ERROR),
            Code::Unavailable => ("UNAVAILABLE", 14, StatusCode::SERVICE_UNAVAILABLE),
            Code::Unauthenticated => ("UNAUTHENTICATED", 16, StatusCode::UNAUTHORIZED),
            Code::ResourceExhausted => ("RESOURCE_EXHAUSTED", 8, StatusCode::TOO_MANY_REQUESTS),
            Code::DeadlineExceeded => ("DEADLINE_EXCEEDED", 4, StatusCode::GATEWAY_TIMEOUT),
        }
    }
}

/// An error answer.
#[derive(Clone, Debug)]
pub struct ApiError {
    code: Code,
    /// Overrides the table's HTTP status (413 and 405, which google.rpc has no code for).
    status: Option<StatusCode>,
    message: String,
}

impl ApiError {
    /// An error with `code`.
    pub fn new(code: Code, message: impl Into<String>) -> ApiError {
        ApiError { code, status: None, message: message.into() }
    }

    /// 400 INVALID_ARGUMENT.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::InvalidArgument, message)
    }

    /// 400 FAILED_PRECONDITION.
    pub fn precondition(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::FailedPrecondition, message)
    }

    /// 404 NOT_FOUND.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(Code::NotFound, message)
    }

    /// Whether this is a 404.
    pub fn is_not_found(&self) -> bool {
        self.code == Code::NotFound
    }

    /// The same error with another HTTP status.
    pub fn with_status(mut self, status: StatusCode) -> ApiError {
        self.status = Some(status);
        self
    }
}

/// The JSON body of an error.
#[derive(Serialize, ToSchema)]
#[schema(as = ErrorBody)]
pub struct ErrorBodyW {
    /// The error.
    pub error: ErrorStatusW,
}

/// `google.rpc.Status` as Google's REST APIs write it.
#[derive(Serialize, ToSchema)]
#[schema(as = ErrorStatus)]
pub struct ErrorStatusW {
    /// The HTTP status.
    pub code: u16,
    /// What went wrong, naming the field.
    pub message: String,
    /// The google.rpc code's name.
    pub status: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (name, _, table_status) = self.code.faces();
        let status = self.status.unwrap_or(table_status);
        let message = if status.is_server_error() && !matches!(self.code, Code::Unavailable | Code::DeadlineExceeded) {
            tracing::error!(error = %self.message, "internal error");
            "internal error; the server log has the details".to_owned()
        } else {
            self.message
        };
        let body = ErrorBodyW { error: ErrorStatusW { code: status.as_u16(), message, status: name.to_owned() } };
        let mut response = (status, axum::Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(entity) => ApiError::not_found(format!("{entity} not found")),
            StoreError::AlreadyExists(m) => ApiError::new(Code::AlreadyExists, m),
            StoreError::Trial(TrialError::OverLimit(over)) => over_limit("measurement", over),
            StoreError::Trial(e) => ApiError::precondition(e.to_string()),
            StoreError::Unavailable(e) => {
                tracing::warn!(error = %e, "database unavailable");
                ApiError::new(Code::Unavailable, "the database is unavailable; retry later")
            }
            StoreError::DiskFull(e) => {
                // Once a minute at most: a full disk fails every write until room is made.
                static LOGGED_AT_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
                let now = crate::clock::now_ms();
                let last = LOGGED_AT_MS.load(std::sync::atomic::Ordering::Relaxed);
                if now.saturating_sub(last) >= 60_000
                    && LOGGED_AT_MS
                        .compare_exchange(last, now, std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed)
                        .is_ok()
                {
                    tracing::warn!(error = %e, "the database's disk is full: writes fail until room is made (logged once a minute)");
                }
                ApiError::new(Code::Unavailable, "the database's disk is full: writes fail until the operator makes room; retry later")
            }
            StoreError::Internal(m) => ApiError::new(Code::Internal, m),
        }
    }
}

/// A space that did not grow: what was asked is the user's to fix (400), a fixed space a
/// precondition, a race lost too often ABORTED (409, retry).
impl From<crate::engine::GrowError> for ApiError {
    fn from(e: crate::engine::GrowError) -> Self {
        use crate::engine::GrowError;
        match e {
            GrowError::Field(e) => ApiError::from(e),
            GrowError::Fixed => ApiError::precondition(e.to_string()),
            GrowError::Config(e) => ApiError::from(e),
            GrowError::Contended => ApiError::new(Code::Aborted, e.to_string()),
            GrowError::Engine(e) => ApiError::from(e),
        }
    }
}

/// An engine failure: bad settings are the user's (400), a designer's failure ours.
impl From<crate::engine::EngineError> for ApiError {
    fn from(e: crate::engine::EngineError) -> Self {
        use crate::engine::EngineError;
        match e {
            EngineError::Config(e) => ApiError::from(e),
            EngineError::Fit(e) => ApiError::new(Code::Internal, format!("the designer failed: {e}")),
            EngineError::Store(e) => ApiError::from(e),
        }
    }
}

/// `message`, naming the flag that sets `limit` when a limit was met.
fn naming_flag(message: String, limit: Option<Limit>) -> String {
    match limit {
        Some(limit) => format!("{message} (the server's {})", limit_flag(limit)),
        None => message,
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        let limit = e.limit;
        ApiError::invalid(naming_flag(e.to_string(), limit))
    }
}

impl From<ConfigError> for ApiError {
    fn from(e: ConfigError) -> Self {
        let limit = e.limit();
        ApiError::invalid(naming_flag(format!("studySpec.{e}"), limit))
    }
}

/// A count over its limit at `field`: 400 naming the field, the limit and its flag.
pub fn over_limit(field: &str, over: OverLimit) -> ApiError {
    ApiError::invalid(naming_flag(format!("{field}: {over}"), Some(over.limit)))
}

/// A text refused by [`bo_core::Limits::check_text`] at `field`.
pub fn text_error(field: &str, e: &TextError) -> ApiError {
    ApiError::invalid(naming_flag(format!("{field}: {e}"), e.limit()))
}
