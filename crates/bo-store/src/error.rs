//! The store's errors, and the one place that reads sqlx errors.

use std::fmt;

/// The kind of thing that was not found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entity {
    /// A study.
    Study,
    /// A trial.
    Trial,
    /// An operation.
    Operation,
    /// An upload of `studies:import`.
    Import,
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Entity::Study => "study",
            Entity::Trial => "trial",
            Entity::Operation => "operation",
            Entity::Import => "import",
        })
    }
}

/// What can go wrong in the store. No HTTP here: the server maps these.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The entity does not exist.
    #[error("{0} not found")]
    NotFound(Entity),
    /// A different entity with the same unique name exists.
    #[error("{0}")]
    AlreadyExists(String),
    /// A trial cannot change as asked (completed twice, measured after completion, over the
    /// measurement limit): bo-core's rule, applied inside the transaction.
    #[error(transparent)]
    Trial(#[from] bo_core::TrialError),
    /// The database cannot be reached or is overloaded; retrying later may work.
    #[error("database unavailable: {0}")]
    Unavailable(#[source] sqlx::Error),
    /// The disk under the database is full: writes fail until room is made.
    #[error("the database's disk is full: {0}")]
    DiskFull(#[source] sqlx::Error),
    /// Anything else: a bug or corrupt data.
    #[error("database error: {0}")]
    Internal(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::RowNotFound => StoreError::Internal("a row expected to exist was missing".into()),
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed => {
                StoreError::Unavailable(e)
            }
            sqlx::Error::Database(ref db) if is_busy(db.code().as_deref()) => {
                let code = db.code();
                if is_sqlite_disk_error(code.as_deref()) {
                    SQLITE_DISK_FAILED.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                if matches!(code.as_deref(), Some("13" | "53100")) {
                    DISK_FULL_AT_MS.store(now_ms(), std::sync::atomic::Ordering::Relaxed);
                    return StoreError::DiskFull(e);
                }
                StoreError::Unavailable(e)
            }
            other => StoreError::Internal(other.to_string()),
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Internal(format!("stored JSON does not decode: {e}"))
    }
}

/// The database is there but cannot serve the request now: SQLite's BUSY and LOCKED, its disk
/// full and its I/O errors ([`is_sqlite_disk_error`]); Postgres's connection class, lock
/// timeout, disk full, and a server shutting down, crashed or starting.
fn is_busy(code: Option<&str>) -> bool {
    matches!(code, Some("5" | "6" | "517" | "262"))
        || is_sqlite_disk_error(code)
        || code.is_some_and(|c| c.starts_with("08") || matches!(c, "55P03" | "53100" | "57P01" | "57P02" | "57P03"))
}

/// SQLite's FULL (13) and IOERR (10, and its extended codes `10 + 256·k`). Postgres's codes
/// (five characters) are never numbers this short.
fn is_sqlite_disk_error(code: Option<&str>) -> bool {
    code.and_then(|c| c.parse::<u32>().ok()).is_some_and(|c| c == 13 || c & 0xff == 10)
}

/// Set once an SQLite statement of this process has failed on its disk (full, or an I/O
/// error): such a failure can leave its connection inside a transaction, so from then on every
/// released SQLite connection is checked before it is pooled again (`Store::connect`). Until
/// then, releasing a connection costs nothing extra.
pub(crate) static SQLITE_DISK_FAILED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// When a write last failed on a full disk (SQLite's FULL, Postgres's `disk_full`),
/// milliseconds since the epoch; 0 before the first. Readiness reads it: a disk nearly full
/// is still ready while its writes succeed.
pub(crate) static DISK_FULL_AT_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Whether `e` is a unique-constraint violation (SQLite and Postgres both report it; the
/// constraint's name is reported by Postgres only, so callers use this where one unique
/// constraint can fail).
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}
