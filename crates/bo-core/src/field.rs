//! The error every validation of a request's fields reports: which field (its path in the
//! request, e.g. `studySpec.parameters[1].doubleValueSpec.minValue`), what is wrong with it, and
//! the limit it is over when that is what is wrong. The search space's checks, the stopping
//! rules' settings and the wire's conversions all answer with it, and the caller refuses the
//! request naming the field.

use crate::limits::{Limit, OverLimit, TextError};

/// A field of a request that is wrong — a parameter of the search space, an assignment the space
/// refuses, a stopping rule's setting, a measurement — with its path and, when it is over a limit,
/// that limit.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct FieldError {
    /// Where, e.g. `parameters[1].doubleValueSpec.minValue`.
    pub path: String,
    /// What is wrong, naming the value.
    pub reason: String,
    /// The limit the value is over, when that is what is wrong.
    pub limit: Option<Limit>,
}

impl FieldError {
    /// An error at `path`.
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> FieldError {
        FieldError { path: path.into(), reason: reason.into(), limit: None }
    }

    /// A count at `path` over its limit.
    pub fn over(path: impl Into<String>, over: OverLimit) -> FieldError {
        FieldError { path: path.into(), reason: over.to_string(), limit: Some(over.limit) }
    }

    /// A text at `path` that [`Limits::check_text`] refused.
    pub fn text(path: impl Into<String>, e: TextError) -> FieldError {
        FieldError { path: path.into(), reason: e.to_string(), limit: e.limit() }
    }

    /// The same error under a parent field: `prefix.path`.
    pub fn under(mut self, prefix: &str) -> FieldError {
        self.path = if self.path.is_empty() { prefix.to_owned() } else { format!("{prefix}.{}", self.path) };
        self
    }
}
