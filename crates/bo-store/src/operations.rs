//! The long-running operations the API returns (suggest, early-stopping checks), kept so that
//! `GET …/operations/{id}` answers as the call did, until the server's retention deletes the
//! finished ones. An operation is numbered within its study. A suggest whose proposals take longer than
//! the server's bound is stored *pending* (`done = 0`, with the count asked for) and finished
//! later by [`Store::suggest`] with `finishing`, or failed with a message.

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
    /// Its number within its study: what its name shows.
    pub id: i64,
    /// The study it belongs to.
    pub study_id: i64,
    /// What it did.
    pub kind: OperationKind,
    /// Whether it has finished (a pending suggest has not).
    pub done: bool,
    /// Why a finished operation failed.
    pub error: Option<String>,
    /// The number of suggestions asked for (suggest operations).
    pub suggestion_count: i64,
    /// When, milliseconds since the epoch.
    pub create_time_ms: i64,
    /// When it last changed (finished), milliseconds since the epoch.
    pub update_time_ms: i64,
    /// The API version it was asked through (an opaque label the server gives, `v1` by default):
    /// what its rendering names, wherever it is polled from.
    pub api_version: String,
    /// A suggest's labels for the trials it creates (kept while it is pending).
    pub labels: std::collections::BTreeMap<String, String>,
}

const OPERATION_COLUMNS: &str = "number, study_id, trial_id, kind, client_id, trial_ids, should_stop, study_completed, create_time_ms, done, suggestion_count, error_message, update_time_ms, api_version, labels";

fn operation_from_row(row: &sqlx::any::AnyRow) -> Result<Operation, StoreError> {
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
    let create_time_ms: i64 = row.try_get("create_time_ms")?;
    Ok(Operation {
        id: row.try_get("number")?,
        study_id: row.try_get("study_id")?,
        kind,
        done: row.try_get::<i64, _>("done")? != 0,
        error: row.try_get("error_message")?,
        suggestion_count: row.try_get("suggestion_count")?,
        create_time_ms,
        update_time_ms: row.try_get::<Option<i64>, _>("update_time_ms")?.unwrap_or(create_time_ms),
        api_version: row.try_get("api_version")?,
        labels: row.try_get::<Option<String>, _>("labels")?.as_deref().map(serde_json::from_str).transpose()?.unwrap_or_default(),
    })
}

/// Records a finished operation.
pub(crate) async fn insert_operation(
    conn: &mut AnyConnection,
    study_id: i64,
    kind: &OperationKind,
    api_version: &str,
    now_ms: i64,
) -> Result<i64, StoreError> {
    insert(conn, study_id, kind, true, 0, api_version, now_ms).await
}

/// Records a suggest operation that is not finished yet.
pub(crate) async fn insert_pending_suggest(
    conn: &mut AnyConnection,
    study_id: i64,
    client_id: &str,
    count: usize,
    api_version: &str,
    labels: &std::collections::BTreeMap<String, String>,
    now_ms: i64,
) -> Result<i64, StoreError> {
    let kind = OperationKind::Suggest { client_id: client_id.to_owned(), trial_ids: vec![], study_completed: false };
    let id = insert(conn, study_id, &kind, false, count, api_version, now_ms).await?;
    if !labels.is_empty() {
        sqlx::query("UPDATE operations SET labels = $1 WHERE study_id = $2 AND number = $3")
            .bind(serde_json::to_string(labels)?)
            .bind(study_id)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(id)
}

/// The pending suggest operation of a client, if any.
pub(crate) async fn pending_suggest(conn: &mut AnyConnection, study_id: i64, client_id: &str) -> Result<Option<Operation>, StoreError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {OPERATION_COLUMNS} FROM operations WHERE study_id = $1 AND client_id = $2 AND done = 0 ORDER BY id LIMIT 1"
    )))
    .bind(study_id)
    .bind(client_id)
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(operation_from_row).transpose()
}

/// One operation, read inside a transaction.
pub(crate) async fn operation_in(conn: &mut AnyConnection, study_id: i64, id: i64) -> Result<Operation, StoreError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE study_id = $1 AND number = $2")))
        .bind(study_id)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound(Entity::Operation))?;
    operation_from_row(&row)
}

/// Marks a pending suggest finished with the trials it handed out.
pub(crate) async fn finish_suggest(
    conn: &mut AnyConnection,
    study_id: i64,
    id: i64,
    trial_ids: &[i64],
    study_completed: bool,
    now_ms: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE operations SET done = 1, trial_ids = $1, study_completed = $2, update_time_ms = $3 WHERE study_id = $4 AND number = $5",
    )
    .bind(serde_json::to_string(trial_ids)?)
    .bind(i64::from(study_completed))
    .bind(now_ms)
    .bind(study_id)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn insert(
    conn: &mut AnyConnection,
    study_id: i64,
    kind: &OperationKind,
    done: bool,
    count: usize,
    api_version: &str,
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
    // The study's row is locked by the caller's transaction: its counter gives the number.
    let number: i64 = sqlx::query("UPDATE studies SET next_operation = next_operation + 1 WHERE id = $1 RETURNING next_operation - 1 AS n")
        .bind(study_id)
        .fetch_one(&mut *conn)
        .await?
        .try_get("n")?;
    sqlx::query(
        "INSERT INTO operations (study_id, trial_id, kind, client_id, trial_ids, should_stop, study_completed, create_time_ms, done, suggestion_count, update_time_ms, number, api_version) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $8, $11, $12)",
    )
    .bind(study_id)
    .bind(trial_id)
    .bind(name)
    .bind(client_id)
    .bind(trial_ids)
    .bind(i64::from(should_stop))
    .bind(i64::from(completed))
    .bind(now_ms)
    .bind(i64::from(done))
    .bind(count as i64)
    .bind(number)
    .bind(api_version)
    .execute(&mut *conn)
    .await?;
    Ok(number)
}

impl Store {
    /// The operation `id` of a study.
    pub async fn get_operation(&self, study_id: i64, id: i64) -> Result<Operation, StoreError> {
        let mut conn = self.pool.acquire().await?;
        operation_in(&mut conn, study_id, id).await
    }

    /// Every pending suggest operation in the database, oldest first: a server finishes them at
    /// start-up (they were left by a server that stopped before it could).
    pub async fn pending_operations(&self) -> Result<Vec<Operation>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE done = 0 ORDER BY id")))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(operation_from_row).collect()
    }

    /// Deletes up to `batch` finished operations last changed before `before_ms` (the server's
    /// retention); pending ones are kept whatever their age. Returns how many went.
    pub async fn delete_finished_operations(&self, before_ms: i64, batch: i64) -> Result<u64, StoreError> {
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "DELETE FROM operations WHERE id IN (SELECT id FROM operations WHERE done = 1 AND update_time_ms < $1 ORDER BY update_time_ms LIMIT $2)",
        )
        .bind(before_ms)
        .bind(batch)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Marks a pending operation failed with `message`; an operation already finished is left
    /// as it is. Returns whether it was pending.
    pub async fn fail_operation(&self, study_id: i64, id: i64, message: &str, now_ms: i64) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE operations SET done = 1, error_message = $1, update_time_ms = $2 WHERE study_id = $3 AND number = $4 AND done = 0",
        )
        .bind(message)
        .bind(now_ms)
        .bind(study_id)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }
}
