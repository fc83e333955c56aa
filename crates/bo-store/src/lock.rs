//! The study lock: the first statement of every transaction that reads a study before it writes
//! it. Writing the study row takes SQLite's database write lock or Postgres's row lock, so the
//! reads that follow see no concurrent writer to the study, and moves its change counter on.
//!
//! Must not do: read or write trials; callers do, under the lock.

use sqlx::{AnyConnection, Row};

use crate::apart::Apart;
use crate::error::{Entity, StoreError};
use crate::studies::StudyState;

/// Where a study stood: its data version (bumped by every completion and deletion) and the id
/// its next trial gets. Proposals computed from the trials read at a basis know every trial with
/// a smaller id, completed ones by their values and the others as pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Basis {
    /// The study's data version.
    pub data_version: i64,
    /// The id of the next trial.
    pub next_trial_id: i64,
}

/// What locking a study reads of it.
pub(crate) struct Locked {
    pub basis: Basis,
    pub state: StudyState,
    /// What a trial row stores apart from its measurements.
    pub objective: Apart,
    /// The revision of the study's space (what a trial created now records).
    pub space_revision: i64,
}

/// Takes the study's write lock for the rest of the transaction (an update: SQLite takes its
/// database write lock, Postgres the row lock), so reads that follow see no concurrent writer to
/// this study, and moves the study's change counter on (trials written in the transaction record
/// it: see `changes.rs`). Returns the study's basis, state and objective metric.
pub(crate) async fn lock_study(conn: &mut AnyConnection, study_id: i64) -> Result<Locked, StoreError> {
    let row = sqlx::query(
        "UPDATE studies SET change_seq = change_seq + 1 WHERE id = $1 RETURNING next_trial_id, data_version, state, objective_metric, safety_metrics, space_revision",
    )
    .bind(study_id)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound(Entity::Study))?;
    let state: String = row.try_get("state")?;
    let state = match state.as_str() {
        "COMPLETED" => StudyState::Completed,
        "INACTIVE" => StudyState::Inactive,
        _ => StudyState::Active,
    };
    Ok(Locked {
        basis: Basis { data_version: row.try_get("data_version")?, next_trial_id: row.try_get("next_trial_id")? },
        state,
        objective: Apart {
            metric: row.try_get("objective_metric")?,
            safety: serde_json::from_str(&row.try_get::<String, _>("safety_metrics")?)?,
        },
        space_revision: row.try_get("space_revision")?,
    })
}

/// The study's basis, read without the lock.
pub(crate) async fn basis(conn: &mut AnyConnection, study_id: i64) -> Result<Basis, StoreError> {
    let row = sqlx::query("SELECT data_version, next_trial_id FROM studies WHERE id = $1")
        .bind(study_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound(Entity::Study))?;
    Ok(Basis { data_version: row.try_get("data_version")?, next_trial_id: row.try_get("next_trial_id")? })
}
