//! Studies: create (idempotent by display name), read, look up, list, delete, change state.

use bo_core::StudySpec;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Store;
use crate::error::{Entity, StoreError, is_unique_violation};

/// A study's life state (Vertex `Study.State`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StudyState {
    /// Taking suggestions.
    Active,
    /// Paused.
    Inactive,
    /// Done: its search space is exhausted.
    Completed,
}

impl StudyState {
    /// The stored (and Vertex) name.
    pub fn as_str(self) -> &'static str {
        match self {
            StudyState::Active => "ACTIVE",
            StudyState::Inactive => "INACTIVE",
            StudyState::Completed => "COMPLETED",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<StudyState, StoreError> {
        match s {
            "ACTIVE" => Ok(StudyState::Active),
            "INACTIVE" => Ok(StudyState::Inactive),
            "COMPLETED" => Ok(StudyState::Completed),
            other => Err(StoreError::Internal(format!("unknown stored study state {other:?}"))),
        }
    }
}

/// A stored study.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyRecord {
    /// Its key in the database (what trials, operations and models refer to): never shown.
    pub id: i64,
    /// Its number within its project and location: what its name shows.
    pub number: i64,
    /// The project (tenant) that owns it.
    pub project: String,
    /// Its location, free text.
    pub location: String,
    /// Unique within the project and location.
    pub display_name: String,
    /// Its configuration.
    pub spec: StudySpec,
    /// Its state.
    pub state: StudyState,
    /// Why it is not active, if it is not.
    pub inactive_reason: String,
    /// Creation time, milliseconds since the epoch.
    pub create_time_ms: i64,
    /// Bumped whenever one of its trials completes.
    pub data_version: i64,
}

pub(crate) const STUDY_COLUMNS: &str =
    "id, number, project, location, display_name, spec, state, inactive_reason, create_time_ms, data_version";

/// Takes the next study number of `project`/`location` in `conn`'s transaction (rolled back with
/// it, the number is not used up).
pub(crate) async fn take_study_number(conn: &mut sqlx::AnyConnection, project: &str, location: &str) -> Result<i64, sqlx::Error> {
    let row = sqlx::query(
        "INSERT INTO locations (project, location, next_study) VALUES ($1, $2, 2) \
         ON CONFLICT (project, location) DO UPDATE SET next_study = locations.next_study + 1 RETURNING next_study - 1 AS n",
    )
    .bind(project)
    .bind(location)
    .fetch_one(&mut *conn)
    .await?;
    row.try_get("n")
}

pub(crate) fn study_from_row(row: &AnyRow) -> Result<StudyRecord, StoreError> {
    let spec: String = row.try_get("spec")?;
    let state: String = row.try_get("state")?;
    Ok(StudyRecord {
        id: row.try_get("id")?,
        number: row.try_get("number")?,
        project: row.try_get("project")?,
        location: row.try_get("location")?,
        display_name: row.try_get("display_name")?,
        spec: serde_json::from_str(&spec)?,
        state: StudyState::parse(&state)?,
        inactive_reason: row.try_get("inactive_reason")?,
        create_time_ms: row.try_get("create_time_ms")?,
        data_version: row.try_get("data_version")?,
    })
}

impl Store {
    /// Creates a study, or returns the existing one with the same display name if its spec is
    /// the same (`created == false`); a different spec under that name is `AlreadyExists`. A new
    /// study takes the next number of its project and location.
    pub async fn create_study(
        &self,
        project: &str,
        location: &str,
        display_name: &str,
        spec: &StudySpec,
        now_ms: i64,
    ) -> Result<(StudyRecord, bool), StoreError> {
        let spec_json = serde_json::to_string(spec)?;
        let inserted = {
            let _turn = self.write_turn().await;
            let mut tx = self.pool.begin().await?;
            let number = take_study_number(&mut tx, project, location).await?;
            let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO studies (project, location, display_name, spec, state, create_time_ms, number, objective_metric, safety_metrics) \
                 VALUES ($1, $2, $3, $4, 'ACTIVE', $5, $6, $7, $8) RETURNING {STUDY_COLUMNS}"
            )))
            .bind(project)
            .bind(location)
            .bind(display_name)
            .bind(&spec_json)
            .bind(now_ms)
            .bind(number)
            .bind(&spec.objective().id)
            .bind(crate::trials::Apart::safety_json(spec)?)
            .fetch_one(&mut *tx)
            .await;
            match inserted {
                Ok(row) => {
                    tx.commit().await?;
                    Ok(row)
                }
                Err(e) => Err(e), // rolled back as `tx` drops: the number is not used up
            }
        };
        match inserted {
            Ok(row) => Ok((study_from_row(&row)?, true)),
            Err(e) if is_unique_violation(&e) => {
                let existing = self.lookup_study(project, location, display_name).await?;
                if existing.spec.same_request(spec) {
                    Ok((existing, false))
                } else {
                    Err(StoreError::AlreadyExists(format!(
                        "a study named {display_name:?} already exists with a different studySpec (study {})",
                        existing.number
                    )))
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The study numbered `number` in `project`/`location`.
    pub async fn get_study(&self, project: &str, location: &str, number: i64) -> Result<StudyRecord, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {STUDY_COLUMNS} FROM studies WHERE number = $1 AND project = $2 AND location = $3"
        )))
        .bind(number)
        .bind(project)
        .bind(location)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(study_from_row).transpose()?.ok_or(StoreError::NotFound(Entity::Study))
    }

    /// The study `id`, whatever its project (for the server's own bookkeeping, never a request).
    pub async fn study_by_id(&self, id: i64) -> Result<StudyRecord, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {STUDY_COLUMNS} FROM studies WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(study_from_row).transpose()?.ok_or(StoreError::NotFound(Entity::Study))
    }

    /// The study named `display_name`.
    pub async fn lookup_study(&self, project: &str, location: &str, display_name: &str) -> Result<StudyRecord, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {STUDY_COLUMNS} FROM studies WHERE project = $1 AND location = $2 AND display_name = $3"
        )))
        .bind(project)
        .bind(location)
        .bind(display_name)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(study_from_row).transpose()?.ok_or(StoreError::NotFound(Entity::Study))
    }

    /// Up to `limit` studies numbered above `after`, in number order.
    pub async fn list_studies(&self, project: &str, location: &str, after: i64, limit: i64) -> Result<Vec<StudyRecord>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {STUDY_COLUMNS} FROM studies WHERE project = $1 AND location = $2 AND number > $3 ORDER BY number LIMIT $4"
        )))
        .bind(project)
        .bind(location)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(study_from_row).collect()
    }

    /// The projects and locations that hold studies, with how many, in name order, at most
    /// `limit`; only `projects` when given.
    pub async fn locations(&self, projects: Option<&[String]>, limit: i64) -> Result<Vec<(String, String, i64)>, StoreError> {
        let filter = match projects {
            Some([]) => return Ok(vec![]),
            Some(names) => format!("WHERE project IN ({})", (0..names.len()).map(|k| format!("${}", k + 2)).collect::<Vec<_>>().join(", ")),
            None => String::new(),
        };
        let sql = format!(
            "SELECT project, location, COUNT(*) AS n FROM studies {filter} GROUP BY project, location ORDER BY project, location LIMIT $1"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(limit);
        for name in projects.unwrap_or_default() {
            query = query.bind(name);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok((r.try_get("project")?, r.try_get("location")?, r.try_get("n")?))).collect()
    }

    /// Deletes the study `id` (its key) with its trials, measurements and operations.
    pub async fn delete_study(&self, id: i64) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM studies WHERE id = $1").bind(id).execute(&self.pool).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(Entity::Study));
        }
        Ok(())
    }

    /// Sets a study's state and the reason shown while it is not active.
    pub async fn set_study_state(&self, id: i64, state: StudyState, reason: &str) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE studies SET state = $1, inactive_reason = $2 WHERE id = $3")
            .bind(state.as_str())
            .bind(reason)
            .bind(id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(Entity::Study));
        }
        Ok(())
    }
}
