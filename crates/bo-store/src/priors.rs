//! What transfer learning reads: the COMPLETED studies of a location (the candidates for a new
//! study's priors, most recent first), how many trials a study had measured by a time, and a
//! prior study's trials completed before a time (what a study standing on it is fitted with). Which of them fit a study is bo-core's to decide.

use bo_core::{Trial, TrialState};
use sqlx::Row;

use crate::Store;
use crate::error::StoreError;
use crate::studies::{STUDY_COLUMNS, StudyRecord, study_from_row};
use crate::trials::{TRIAL_COLUMNS, trial_from_row};

impl Store {
    /// Up to `limit` COMPLETED studies of `project`/`location`, the most recently created first.
    pub async fn completed_studies(&self, project: &str, location: &str, limit: i64) -> Result<Vec<StudyRecord>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {STUDY_COLUMNS} FROM studies WHERE project = $1 AND location = $2 AND state = 'COMPLETED' \
             ORDER BY create_time_ms DESC, number DESC LIMIT $3"
        )))
        .bind(project)
        .bind(location)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(study_from_row).collect()
    }

    /// How many trials of `study_id` had succeeded with its objective measured by `before_ms`.
    pub async fn measured_before(&self, study_id: i64, before_ms: i64) -> Result<i64, StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM trials WHERE study_id = $1 AND state = 'SUCCEEDED' AND objective IS NOT NULL AND end_time_ms <= $2",
        )
        .bind(study_id)
        .bind(before_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }

    /// The last `limit` trials of `study_id` that had succeeded or been found infeasible by
    /// `before_ms`, in id order, without intermediate measurements.
    pub async fn trials_completed_before(&self, study_id: i64, before_ms: i64, limit: i64) -> Result<Vec<Trial>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TRIAL_COLUMNS} FROM trials WHERE study_id = $1 AND state IN ('SUCCEEDED', 'INFEASIBLE') \
             AND end_time_ms <= $2 ORDER BY id DESC LIMIT $3"
        )))
        .bind(study_id)
        .bind(before_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        let mut trials: Vec<Trial> = rows.iter().map(trial_from_row).collect::<Result<_, _>>()?;
        trials.reverse();
        debug_assert!(trials.iter().all(|t| matches!(t.state, TrialState::Succeeded | TrialState::Infeasible)));
        Ok(trials)
    }
}
