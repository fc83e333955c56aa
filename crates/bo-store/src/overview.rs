//! The overview of a location's studies: each study with its trial counts by state, its best
//! final objective and its last activity, aggregated in SQL (one query per page of studies) so
//! a page of studies costs the same whatever their size. Each study is summarised
//! ([`StudySummary`]) from what its row keeps beside its spec: no spec is read, so a page costs
//! a few KB a study whatever the specs hold. A plain read: no lock.

use std::collections::HashMap;

use bo_core::{Goal, TrialState};
use sqlx::Row;

use crate::Store;
use crate::error::StoreError;
use crate::studies::StudySummary;

/// One study of the overview.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyOverview {
    /// The study.
    pub study: StudySummary,
    /// Its trials by state, in [`TrialState::ALL`]'s order.
    pub counts: [i64; 5],
    /// Of its SUCCEEDED trials, those stopped early (asked to stop before they completed: a
    /// pruned trial's partial result).
    pub stopped_early: i64,
    /// The best final value of its objective (its first objective) among safe SUCCEEDED trials.
    pub best: Option<f64>,
    /// When a trial last started, ended or was seen, milliseconds since the epoch.
    pub last_activity_ms: Option<i64>,
}

impl Store {
    /// The studies of a location numbered above `after`, at most `limit`, each summarised with
    /// its counts, best value and last activity. Reads no spec.
    pub async fn study_overview(&self, project: &str, location: &str, after: i64, limit: i64) -> Result<Vec<StudyOverview>, StoreError> {
        let studies = self.list_study_summaries(project, location, after, limit).await?;
        if studies.is_empty() {
            return Ok(vec![]);
        }
        let placeholders: Vec<String> = (0..studies.len()).map(|k| format!("${}", k + 1)).collect();
        let sql = format!(
            "SELECT study_id, state, COUNT(*) AS n, \
             COALESCE(MIN(CASE WHEN is_unsafe = 0 AND stopped_ms IS NULL THEN objective END), MIN(CASE WHEN is_unsafe = 0 THEN objective END)) AS lo, \
             COALESCE(MAX(CASE WHEN is_unsafe = 0 AND stopped_ms IS NULL THEN objective END), MAX(CASE WHEN is_unsafe = 0 THEN objective END)) AS hi, \
             MAX(COALESCE(last_seen_ms, end_time_ms, start_time_ms)) AS seen, MAX(end_time_ms) AS ended, \
             SUM(CASE WHEN stopped_ms IS NULL THEN 0 ELSE 1 END) AS stopped \
             FROM trials WHERE study_id IN ({}) GROUP BY study_id, state",
            placeholders.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for s in &studies {
            query = query.bind(s.id);
        }
        // Per study: counts by state, best value, last activity.
        type Tally = ([i64; 5], Option<f64>, Option<i64>, i64);
        let mut by_study: HashMap<i64, Tally> = HashMap::new();
        for row in query.fetch_all(&self.pool).await? {
            let study_id: i64 = row.try_get("study_id")?;
            let state: String = row.try_get("state")?;
            let state = TrialState::parse(&state).ok_or_else(|| StoreError::Internal(format!("unknown stored trial state {state:?}")))?;
            let goal = studies.iter().find(|s| s.id == study_id).and_then(StudySummary::objective).map_or(Goal::Maximize, |m| m.goal);
            let entry = by_study.entry(study_id).or_default();
            entry.0[TrialState::ALL.iter().position(|s| *s == state).unwrap_or(0)] = row.try_get("n")?;
            if state == TrialState::Succeeded {
                let best: Option<f64> = if goal == Goal::Minimize { row.try_get("lo")? } else { row.try_get("hi")? };
                entry.1 = best;
                entry.3 = row.try_get::<Option<i64>, _>("stopped")?.unwrap_or(0);
            }
            let seen: Option<i64> = row.try_get("seen")?;
            let ended: Option<i64> = row.try_get("ended")?;
            entry.2 = entry.2.max(seen).max(ended);
        }
        let overview = studies
            .into_iter()
            .map(|study| {
                let (counts, best, last_activity_ms, stopped_early) = by_study.remove(&study.id).unwrap_or_default();
                StudyOverview { study, counts, stopped_early, best, last_activity_ms }
            })
            .collect();
        Ok(overview)
    }
}
