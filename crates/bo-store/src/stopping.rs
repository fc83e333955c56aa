//! What the early-stopping rules read and record: each trial's running average or its value at
//! a rung, aggregated in SQL (one number per trial, plain reads outside any transaction), and a
//! check's decision recorded under the study lock with its operation.

use bo_core::{Limits, TrialState};
use sqlx::{AnyConnection, Row};

use crate::Store;
use bo_core::stopping::spec::MedianOf;

use crate::error::StoreError;
use crate::lock::lock_study;
use crate::operations::{OperationKind, insert_operation};
use crate::trials::{Load, SUPERSEDED, insert_measurements, one_trial, touch, write_trial};

/// See [`Store::values_at_rung`]; on `conn`, inside a transaction or not.
pub(crate) async fn values_at_rung(
    conn: &mut AnyConnection,
    study_id: i64,
    except: i64,
    rung: f64,
    by_elapsed: bool,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let position = if by_elapsed { "m.elapsed_secs" } else { "m.step_count" };
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT trial_id, v FROM (SELECT m.trial_id, m.objective AS v, ROW_NUMBER() OVER (PARTITION BY m.trial_id ORDER BY {position}, m.seq) AS k \
         FROM measurements m WHERE m.study_id = $1 AND m.trial_id <> $2 AND m.objective IS NOT NULL AND {position} >= $3 \
         AND m.trial_id NOT IN {SUPERSEDED}) s WHERE k = 1"
    )))
    .bind(study_id)
    .bind(except)
    .bind(rung)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter().map(|r| Ok((r.try_get::<i64, _>("trial_id")?, r.try_get::<f64, _>("v")?))).collect()
}

/// How the median rule reads the completed trials at a position: the comparison of a
/// measurement's position with it, and which SUCCEEDED trials take part.
fn compared(median_of: MedianOf) -> (&'static str, &'static str) {
    match median_of {
        MedianOf::RunningAverage => ("<=", ""),
        MedianOf::ValueAtPosition => ("=", "AND t.stopped_ms IS NULL"),
    }
}

impl Store {
    /// What the median stopping rule compares a trial with at position `up_to` (steps, or
    /// elapsed seconds `by_elapsed`), one number per SUCCEEDED trial but `except`: its running
    /// average of the objective over its measurements at or before `up_to`, or under
    /// [`MedianOf::ValueAtPosition`] its value at `up_to` itself (the mean of several there),
    /// trials stopped early left out as Optuna leaves out its pruned ones. Aggregated in SQL, so
    /// the server reads one number per trial, not every measurement; a plain read, outside any
    /// transaction (no lock, no turn at SQLite's write gate).
    pub async fn running_averages(
        &self,
        study_id: i64,
        except: i64,
        up_to: f64,
        by_elapsed: bool,
        median_of: MedianOf,
    ) -> Result<Vec<f64>, StoreError> {
        let position = if by_elapsed { "m.elapsed_secs" } else { "m.step_count" };
        let (compare, which) = compared(median_of);
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT AVG(m.objective) AS average FROM measurements m JOIN trials t ON t.study_id = m.study_id AND t.id = m.trial_id \
             WHERE m.study_id = $1 AND t.state = 'SUCCEEDED' {which} AND m.trial_id <> $2 AND m.objective IS NOT NULL \
             AND {position} {compare} $3 GROUP BY m.trial_id"
        )))
        .bind(study_id)
        .bind(except)
        .bind(up_to)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| r.try_get::<f64, _>("average").map_err(StoreError::from)).collect()
    }

    /// What [`Store::running_averages`] gives, at each of `positions` at once (one read).
    pub async fn running_averages_at(
        &self,
        study_id: i64,
        except: i64,
        positions: &[f64],
        by_elapsed: bool,
        median_of: MedianOf,
    ) -> Result<Vec<Vec<f64>>, StoreError> {
        if positions.is_empty() {
            return Ok(vec![]);
        }
        let position = if by_elapsed { "m.elapsed_secs" } else { "m.step_count" };
        let (compare, which) = compared(median_of);
        let columns: Vec<String> =
            (0..positions.len()).map(|k| format!("AVG(CASE WHEN {position} {compare} ${} THEN m.objective END) AS a{k}", k + 3)).collect();
        let sql = format!(
            "SELECT {} FROM measurements m JOIN trials t ON t.study_id = m.study_id AND t.id = m.trial_id \
             WHERE m.study_id = $1 AND t.state = 'SUCCEEDED' {which} AND m.trial_id <> $2 AND m.objective IS NOT NULL GROUP BY m.trial_id",
            columns.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(study_id).bind(except);
        for p in positions {
            query = query.bind(*p);
        }
        let rows = query.fetch_all(&self.pool).await?;
        let mut out = vec![Vec::new(); positions.len()];
        for row in &rows {
            for (k, averages) in out.iter_mut().enumerate() {
                if let Some(a) = row.try_get::<Option<f64>, _>(format!("a{k}").as_str())? {
                    averages.push(a);
                }
            }
        }
        Ok(out)
    }

    /// The positions (steps, or elapsed seconds `by_elapsed`) past `after` at which a SUCCEEDED
    /// trial but `except` has a measurement of the objective, in order, at most `limit`: where
    /// the median rule's threshold can change.
    pub async fn measured_positions_after(
        &self,
        study_id: i64,
        except: i64,
        after: f64,
        limit: i64,
        by_elapsed: bool,
    ) -> Result<Vec<f64>, StoreError> {
        let position = if by_elapsed { "m.elapsed_secs" } else { "CAST(m.step_count AS DOUBLE PRECISION)" };
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT DISTINCT {position} AS p FROM measurements m JOIN trials t ON t.study_id = m.study_id AND t.id = m.trial_id \
             WHERE m.study_id = $1 AND t.state = 'SUCCEEDED' AND m.trial_id <> $2 AND m.objective IS NOT NULL AND {position} > $3 \
             ORDER BY p LIMIT $4"
        )))
        .bind(study_id)
        .bind(except)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|r| r.try_get::<f64, _>("p").map_err(StoreError::from)).collect()
    }

    /// Each trial's objective at `rung` — of its first measurement (by position, then arrival)
    /// at or past `rung` (steps, or elapsed seconds `by_elapsed`) — for every trial but `except`
    /// that reached it, whatever its state, with the trial's number, but those a later trial
    /// resumes (a chain counts once, by its newest trial): what successive halving ranks a
    /// trial among. One number per trial, chosen in SQL; a plain read outside any
    /// transaction.
    pub async fn values_at_rung(&self, study_id: i64, except: i64, rung: f64, by_elapsed: bool) -> Result<Vec<(i64, f64)>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        values_at_rung(&mut conn, study_id, except, rung, by_elapsed).await
    }

    /// Records an early-stopping check of a trial decided outside the lock (`should_stop`): a
    /// trial still ACTIVE that should stop becomes STOPPING and gets `last_measurement`, if the
    /// rule made one (the convex rule's prediction) and `limits` leave room for it; its client
    /// counts as seen. A trial completed meanwhile is not told to stop. Returns the operation's
    /// number and the decision as recorded.
    pub async fn record_early_stopping(
        &self,
        study_id: i64,
        trial_id: i64,
        now_ms: i64,
        decision: bo_core::stopping::StoppingDecision,
        limits: &Limits,
        api_version: &str,
    ) -> Result<(i64, bool), StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let locked = lock_study(&mut tx, study_id).await?;
        let load = if decision.last_measurement.is_some() { Load::Full } else { Load::NoMeasurements };
        let mut trial = one_trial(&mut tx, study_id, trial_id, load).await?;
        let should_stop = decision.should_stop && !trial.state.is_completed();
        touch(&mut tx, study_id, trial_id, now_ms).await?;
        if should_stop && trial.state == TrialState::Active {
            trial.state = TrialState::Stopping;
            trial.stop_time_ms.get_or_insert(now_ms);
            let before = trial.measurements.len();
            if let Some(m) = decision.last_measurement
                && let Err(e) = trial.add_measurement(m, limits)
            {
                tracing::info!(study = study_id, trial = trial_id, error = %e, "the predicted last measurement was not added");
            }
            write_trial(&mut tx, study_id, &trial, &locked.objective, now_ms).await?;
            insert_measurements(&mut tx, study_id, trial_id, before, &trial.measurements[before..], &locked.objective.metric).await?;
        }
        let kind = OperationKind::EarlyStopping { trial_id, should_stop };
        let id = insert_operation(&mut tx, study_id, &kind, api_version, now_ms).await?;
        tx.commit().await?;
        Ok((id, should_stop))
    }
}
