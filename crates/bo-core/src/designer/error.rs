//! The designers' two errors: a study's algorithm settings are wrong ([`ConfigError`], a 400
//! at creation), or a fit failed ([`FitError`], a fallback to the initial design).

use crate::limits::Limit;

/// A study's algorithm settings are wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// No designer has this name.
    #[error("algorithm: {} is not an algorithm; the algorithms are {}", serde_json::Value::from(name.as_str()), known.join(", "))]
    UnknownAlgorithm {
        /// The name asked for.
        name: String,
        /// The names that exist.
        known: Vec<String>,
    },
    /// A field of `algorithmConfig` is wrong.
    #[error("algorithmConfig{}: {reason}", if field.is_empty() { String::new() } else { format!(".{field}") })]
    Invalid {
        /// The field, empty for the whole object.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The settings ask for more work than a limit allows.
    #[error("algorithmConfig{}: {reason}", if field.is_empty() { String::new() } else { format!(".{field}") })]
    OverLimit {
        /// The field, empty for the whole object.
        field: String,
        /// What is over, and by how much.
        reason: String,
        /// The limit.
        limit: Limit,
    },
}

impl ConfigError {
    /// The limit the settings are over, if that is what is wrong.
    pub fn limit(&self) -> Option<Limit> {
        match self {
            ConfigError::OverLimit { limit, .. } => Some(*limit),
            _ => None,
        }
    }
}

/// A designer could not fit or suggest.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FitError {
    /// The numbers went wrong (a matrix stayed indefinite, a value became NaN).
    #[error("numerical failure: {0}")]
    Numerical(String),
    /// Fewer proposals than asked in a space with points left (see [`Model::runs_out`](super::Model::runs_out)).
    #[error("proposed {proposed} of {asked} points while the space has points left")]
    TooFewProposals {
        /// How many it proposed.
        proposed: usize,
        /// How many were asked for.
        asked: usize,
    },
}
