//! Learning curves: the intermediate measurements of a study's trials, for a view that draws
//! them — the running trials first, then the most recent others, at most a given number. A
//! plain read: no lock.

use std::collections::BTreeMap;

use bo_core::{Measurement, TrialState};
use sqlx::Row;

use crate::Store;
use crate::error::StoreError;

/// One trial's curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    /// The trial.
    pub trial_id: i64,
    /// Its state.
    pub state: TrialState,
    /// When it was asked to stop (by its client or the early-stopping rule), if it was.
    pub stopped_ms: Option<i64>,
    /// When it ended, if it has.
    pub end_time_ms: Option<i64>,
    /// Its intermediate measurements, in the order they arrived.
    pub measurements: Vec<Measurement>,
}

impl Store {
    /// The curves of at most `limit` trials of a study that have intermediate measurements:
    /// ACTIVE and STOPPING trials first, then the others, newest first; each curve in arrival
    /// order.
    pub async fn curves(&self, study_id: i64, limit: i64) -> Result<Vec<Curve>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let rows = sqlx::query(
            "SELECT t.id, t.state, t.stopped_ms, t.end_time_ms FROM trials t WHERE t.study_id = $1 \
             AND EXISTS (SELECT 1 FROM measurements m WHERE m.study_id = t.study_id AND m.trial_id = t.id) \
             ORDER BY CASE WHEN t.state IN ('ACTIVE', 'STOPPING') THEN 0 ELSE 1 END, t.id DESC LIMIT $2",
        )
        .bind(study_id)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
        let mut curves = Vec::with_capacity(rows.len());
        for row in &rows {
            let state: String = row.try_get("state")?;
            curves.push(Curve {
                trial_id: row.try_get("id")?,
                state: TrialState::parse(&state).ok_or_else(|| StoreError::Internal(format!("unknown stored trial state {state:?}")))?,
                stopped_ms: row.try_get("stopped_ms")?,
                end_time_ms: row.try_get("end_time_ms")?,
                measurements: Vec::new(),
            });
        }
        if curves.is_empty() {
            return Ok(curves);
        }
        let placeholders: Vec<String> = (0..curves.len()).map(|k| format!("${}", k + 2)).collect();
        let sql = format!(
            "SELECT trial_id, step_count, elapsed_secs, metrics FROM measurements WHERE study_id = $1 AND trial_id IN ({}) ORDER BY trial_id, seq",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(study_id);
        for c in &curves {
            query = query.bind(c.trial_id);
        }
        let mut by_trial: BTreeMap<i64, Vec<Measurement>> = BTreeMap::new();
        for row in query.fetch_all(&mut *conn).await? {
            let metrics: String = row.try_get("metrics")?;
            by_trial.entry(row.try_get("trial_id")?).or_default().push(Measurement {
                step_count: row.try_get("step_count")?,
                elapsed_secs: row.try_get("elapsed_secs")?,
                metrics: serde_json::from_str(&metrics)?,
            });
        }
        for c in &mut curves {
            c.measurements = by_trial.remove(&c.trial_id).unwrap_or_default();
        }
        Ok(curves)
    }
}
