//! The long-running operations the API returns (suggest, early-stopping checks), kept so that
//! `GET …/operations/{id}` answers as the call did.

use sqlx::{AnyConnection, Row};

use crate::Store;
use crate::error::{Entity, StoreError};

/// What an operation did.
#[derive(Clone, Debug, PartialEq)]
pub enum OperationKind {
    /// A suggest call.
    Suggest {
        /// The client that asked.
        client_id: String,
        /// The trials it was given.
        trial_ids: Vec<i64>,
        /// The study was completed (its space exhausted) at that time.
        study_completed: bool,
    },
    /// An early-stopping check of one trial.
    EarlyStopping {
        /// The trial.
        trial_id: i64,
        /// The answer.
        should_stop: bool,
    },
}

/// A stored operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// Its number, unique in the database.
    pub id: i64,
    /// The study it belongs to.
    pub study_id: i64,
    /// What it did.
    pub kind: OperationKind,
    /// When, milliseconds since the epoch.
    pub create_time_ms: i64,
}

pub(crate) async fn insert_operation(
    conn: &mut AnyConnection,
    study_id: i64,
    kind: &OperationKind,
    now_ms: i64,
) -> Result<i64, StoreError> {
    let (name, client_id, trial_ids, trial_id, should_stop, completed) = match kind {
        OperationKind::Suggest { client_id, trial_ids, study_completed } => {
            ("SUGGEST", client_id.as_str(), serde_json::to_string(trial_ids)?, None, false, *study_completed)
        }
        OperationKind::EarlyStopping { trial_id, should_stop } => {
            ("EARLY_STOPPING", "", "[]".to_owned(), Some(*trial_id), *should_stop, false)
        }
    };
    let row = sqlx::query(
        "INSERT INTO operations (study_id, trial_id, kind, client_id, trial_ids, should_stop, study_completed, create_time_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )
    .bind(study_id)
    .bind(trial_id)
    .bind(name)
    .bind(client_id)
    .bind(trial_ids)
    .bind(i64::from(should_stop))
    .bind(i64::from(completed))
    .bind(now_ms)
    .fetch_one(&mut *conn)
    .await?;
    Ok(row.try_get("id")?)
}

impl Store {
    /// The operation `id` of a study.
    pub async fn get_operation(&self, study_id: i64, id: i64) -> Result<Operation, StoreError> {
        let row = sqlx::query(
            "SELECT id, study_id, trial_id, kind, client_id, trial_ids, should_stop, study_completed, create_time_ms \
             FROM operations WHERE study_id = $1 AND id = $2",
        )
        .bind(study_id)
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound(Entity::Operation))?;
        let kind_name: String = row.try_get("kind")?;
        let kind = match kind_name.as_str() {
            "SUGGEST" => {
                let ids: String = row.try_get("trial_ids")?;
                OperationKind::Suggest {
                    client_id: row.try_get("client_id")?,
                    trial_ids: serde_json::from_str(&ids)?,
                    study_completed: row.try_get::<i64, _>("study_completed")? != 0,
                }
            }
            "EARLY_STOPPING" => OperationKind::EarlyStopping {
                trial_id: row.try_get::<Option<i64>, _>("trial_id")?.unwrap_or_default(),
                should_stop: row.try_get::<i64, _>("should_stop")? != 0,
            },
            other => return Err(StoreError::Internal(format!("unknown stored operation kind {other:?}"))),
        };
        Ok(Operation { id: row.try_get("id")?, study_id: row.try_get("study_id")?, kind, create_time_ms: row.try_get("create_time_ms")? })
    }
}
