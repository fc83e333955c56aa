//! A study's optimisation history at a bounded size: the trials in id order cut into buckets of
//! consecutive ids, each with the lowest and highest final objective of its SUCCEEDED trials and
//! its counts, and the same extremes among its safe trials trained in full (what a best so far
//! may be: a trial asked to stop is partial, see `bo_core::Trial::is_partial`) —
//! aggregated in SQL, so a chart of a study of any size costs at most a few
//! thousand rows. With no more trials than buckets, each bucket is one trial. A plain read.

use sqlx::Row;

use crate::Store;
use crate::error::StoreError;

/// One bucket of consecutive trial ids.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryBucket {
    /// Its first and last trial ids.
    pub first_id: i64,
    /// Its last trial id.
    pub last_id: i64,
    /// The lowest final objective among its SUCCEEDED trials.
    pub min: Option<f64>,
    /// The highest.
    pub max: Option<f64>,
    /// Its SUCCEEDED trials with an objective.
    pub succeeded: i64,
    /// Its INFEASIBLE trials.
    pub infeasible: i64,
    /// Its trials that were asked to stop.
    pub stopped: i64,
    /// Its SUCCEEDED trials that are unsafe (a safety metric on the wrong side of its threshold).
    pub unsafe_trials: i64,
    /// The lowest final objective among its safe SUCCEEDED trials that were not asked to stop.
    pub safe_min: Option<f64>,
    /// The highest.
    pub safe_max: Option<f64>,
}

impl Store {
    /// The history of a study in at most `max_buckets` buckets of equal id ranges (the last one
    /// shorter), and the bucket width in ids.
    pub async fn history(&self, study_id: i64, max_buckets: i64) -> Result<(i64, Vec<HistoryBucket>), StoreError> {
        let mut conn = self.pool.acquire().await?;
        let last: Option<i64> = sqlx::query("SELECT MAX(id) AS last FROM trials WHERE study_id = $1")
            .bind(study_id)
            .fetch_one(&mut *conn)
            .await?
            .try_get("last")?;
        let Some(last) = last else { return Ok((1, vec![])) };
        let width = (last + max_buckets.max(1) - 1) / max_buckets.max(1);
        let width = width.max(1);
        let rows = sqlx::query(
            "SELECT (id - 1) / $2 AS bucket, MIN(id) AS first_id, MAX(id) AS last_id, \
             MIN(CASE WHEN state = 'SUCCEEDED' THEN objective END) AS lo, MAX(CASE WHEN state = 'SUCCEEDED' THEN objective END) AS hi, \
             SUM(CASE WHEN state = 'SUCCEEDED' AND objective IS NOT NULL THEN 1 ELSE 0 END) AS succeeded, \
             SUM(CASE WHEN state = 'INFEASIBLE' THEN 1 ELSE 0 END) AS infeasible, \
             SUM(CASE WHEN stopped_ms IS NOT NULL THEN 1 ELSE 0 END) AS stopped, \
             SUM(CASE WHEN state = 'SUCCEEDED' AND is_unsafe = 1 THEN 1 ELSE 0 END) AS unsafe_trials, \
             MIN(CASE WHEN state = 'SUCCEEDED' AND is_unsafe = 0 AND stopped_ms IS NULL THEN objective END) AS safe_lo, \
             MAX(CASE WHEN state = 'SUCCEEDED' AND is_unsafe = 0 AND stopped_ms IS NULL THEN objective END) AS safe_hi \
             FROM trials WHERE study_id = $1 GROUP BY (id - 1) / $2 ORDER BY bucket",
        )
        .bind(study_id)
        .bind(width)
        .fetch_all(&mut *conn)
        .await?;
        let buckets = rows
            .iter()
            .map(|r| {
                Ok(HistoryBucket {
                    first_id: r.try_get("first_id")?,
                    last_id: r.try_get("last_id")?,
                    min: r.try_get("lo")?,
                    max: r.try_get("hi")?,
                    succeeded: r.try_get("succeeded")?,
                    infeasible: r.try_get("infeasible")?,
                    stopped: r.try_get("stopped")?,
                    unsafe_trials: r.try_get("unsafe_trials")?,
                    safe_min: r.try_get("safe_lo")?,
                    safe_max: r.try_get("safe_hi")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok((width, buckets))
    }
}
