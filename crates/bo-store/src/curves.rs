//! Learning curves: the intermediate measurements of a study's trials, for a view that draws
//! them — the running trials first, then the most recent others, at most a given number and
//! within a budget of points counted before they are read, one metric's values taken out by the
//! database — and, thinned in SQL, for the curve-based early-stopping rules. Plain reads: no
//! lock.

use std::collections::BTreeMap;

use bo_core::TrialState;
use bo_core::stopping::curves::{CURVE_POINTS, Curve as FinishedCurve, Finished, MAX_CURVES};
use sqlx::Row;

use crate::error::StoreError;
use crate::{Backend, Store};

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
    /// Its intermediate measurements of the metric read, in the order they arrived (thinned
    /// evenly to [`CURVE_POINTS_EACH`] when it has more).
    pub points: Vec<CurvePoint>,
}

/// One intermediate measurement of one metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    /// Its step count.
    pub step_count: i64,
    /// Its elapsed seconds.
    pub elapsed_secs: f64,
    /// The metric's value; `None` where the measurement lacks the metric.
    pub value: Option<f64>,
}

/// Which metric a curves read takes from each measurement.
#[derive(Clone, Copy, Debug)]
pub enum CurveMetric<'a> {
    /// The study's objective, stored beside each measurement's JSON: no JSON is read.
    Objective,
    /// Another metric, taken out of each measurement's JSON by the database.
    Named(&'a str),
}

/// The curves of a read, and how many were left out to keep it within its points.
#[derive(Clone, Debug, PartialEq)]
pub struct Curves {
    /// The curves, in the read's order.
    pub curves: Vec<Curve>,
    /// Trials with curves that the read's trial limit took in but its point budget left out
    /// (the oldest of them).
    pub omitted: usize,
}

/// The most points one curve gives: longer curves are thinned evenly (the first, the last and
/// an even spread between), as the stopping rules thin theirs. As many as a trial may have
/// measurements by default (`--max-measurements`), so only a server that allows more thins.
pub const CURVE_POINTS_EACH: i64 = 1000;

impl Store {
    /// The curves of `metric` of at most `limit` trials of a study that have intermediate
    /// measurements: ACTIVE and STOPPING trials first, then the others, newest first; each curve
    /// in arrival order. The points are counted in SQL before any is read, and curves are taken
    /// while they fit within `max_points` (the first always): a read costs what its budget
    /// allows whatever the trials hold. Only the metric's values are read, never the
    /// measurements' other metrics.
    pub async fn curves(&self, study_id: i64, metric: CurveMetric<'_>, limit: i64, max_points: usize) -> Result<Curves, StoreError> {
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
                points: Vec::new(),
            });
        }
        if curves.is_empty() {
            return Ok(Curves { curves, omitted: 0 });
        }
        let in_list = |first: usize, n: usize| (0..n).map(|k| format!("${}", k + first)).collect::<Vec<_>>().join(", ");
        // How many points each curve gives, before any is read.
        let sql = format!(
            "SELECT trial_id, COUNT(*) AS n FROM measurements WHERE study_id = $1 AND trial_id IN ({}) GROUP BY trial_id",
            in_list(2, curves.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(study_id);
        for c in &curves {
            query = query.bind(c.trial_id);
        }
        let mut counts = BTreeMap::new();
        for row in query.fetch_all(&mut *conn).await? {
            counts.insert(row.try_get::<i64, _>("trial_id")?, row.try_get::<i64, _>("n")?);
        }
        let budget = i64::try_from(max_points).unwrap_or(i64::MAX);
        let (mut total, mut kept) = (0i64, 0usize);
        for c in &curves {
            let n = counts.get(&c.trial_id).copied().unwrap_or(0).min(CURVE_POINTS_EACH);
            if kept > 0 && total.saturating_add(n) > budget {
                break;
            }
            total = total.saturating_add(n);
            kept += 1;
        }
        let omitted = curves.len() - kept;
        curves.truncate(kept);
        let value = match (metric, self.backend) {
            (CurveMetric::Objective, _) => "m.objective".to_owned(),
            (CurveMetric::Named(_), Backend::Sqlite) => {
                "CAST((SELECT j.value FROM json_each(m.metrics) AS j WHERE j.key = $3) AS DOUBLE PRECISION)".to_owned()
            }
            (CurveMetric::Named(_), Backend::Postgres) => "CAST(CAST(m.metrics AS JSON) ->> $3 AS DOUBLE PRECISION)".to_owned(),
        };
        // The first of n points (in arrival order), and the k-th when ⌊k·(max−1)/n⌋ >
        // ⌊(k−1)·(max−1)/n⌋: max points, the last among them; all of them when n ≤ max.
        let sql = format!(
            "SELECT trial_id, step_count, elapsed_secs, v FROM (SELECT m.trial_id, m.step_count, m.elapsed_secs, m.seq, {value} AS v, \
             ROW_NUMBER() OVER (PARTITION BY m.trial_id ORDER BY m.seq) AS k, COUNT(*) OVER (PARTITION BY m.trial_id) AS n \
             FROM measurements m WHERE m.study_id = $1 AND m.trial_id IN ({})) s \
             WHERE k = 1 OR (k * ($2 - 1)) / n > ((k - 1) * ($2 - 1)) / n ORDER BY trial_id, seq",
            in_list(4, curves.len())
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(study_id).bind(CURVE_POINTS_EACH).bind(match metric {
            CurveMetric::Objective => "",
            CurveMetric::Named(name) => name,
        });
        for c in &curves {
            query = query.bind(c.trial_id);
        }
        let mut by_trial: BTreeMap<i64, Vec<CurvePoint>> = BTreeMap::new();
        for row in query.fetch_all(&mut *conn).await? {
            by_trial.entry(row.try_get("trial_id")?).or_default().push(CurvePoint {
                step_count: row.try_get("step_count")?,
                elapsed_secs: row.try_get("elapsed_secs")?,
                value: row.try_get("v")?,
            });
        }
        for c in &mut curves {
            c.points = by_trial.remove(&c.trial_id).unwrap_or_default();
        }
        Ok(Curves { curves, omitted })
    }
}

impl Store {
    /// What the curve-based stopping rules read of a study's finished trials but `except`
    /// ([`Finished`]): the curves of the [`MAX_CURVES`] most recent SUCCEEDED trials with
    /// measurements of the objective, each thinned in SQL to [`CURVE_POINTS`] points as
    /// [`bo_core::stopping::curves::thin`] thins, positions in steps or elapsed seconds
    /// (`by_elapsed`); how many such trials there are; and the best safe final value of the
    /// SUCCEEDED trials trained in full, or of all while none is (`maximize` says which is
    /// best). Plain reads, no lock.
    pub async fn finished_curves(&self, study_id: i64, except: i64, by_elapsed: bool, maximize: bool) -> Result<Finished, StoreError> {
        let mut conn = self.pool.acquire().await?;
        // The best trained in full; a partial one only while there is none.
        let best = if maximize { "MAX" } else { "MIN" };
        let best: Option<f64> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COALESCE({best}(CASE WHEN stopped_ms IS NULL THEN objective END), {best}(objective)) AS best FROM trials WHERE study_id = $1 AND id <> $2 AND state = 'SUCCEEDED' AND is_unsafe = 0"
        )))
        .bind(study_id)
        .bind(except)
        .fetch_one(&mut *conn)
        .await?
        .try_get("best")?;
        let with_curve = "FROM trials t WHERE t.study_id = $1 AND t.id <> $2 AND t.state = 'SUCCEEDED' AND t.objective IS NOT NULL \
             AND EXISTS (SELECT 1 FROM measurements m WHERE m.study_id = t.study_id AND m.trial_id = t.id AND m.objective IS NOT NULL)";
        let count: i64 = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) AS n {with_curve}")))
            .bind(study_id)
            .bind(except)
            .fetch_one(&mut *conn)
            .await?
            .try_get("n")?;
        let rows =
            sqlx::query(sqlx::AssertSqlSafe(format!("SELECT t.id, t.parameters, t.objective {with_curve} ORDER BY t.id DESC LIMIT $3")))
                .bind(study_id)
                .bind(except)
                .bind(MAX_CURVES as i64)
                .fetch_all(&mut *conn)
                .await?;
        let mut curves = Vec::with_capacity(rows.len());
        let mut ids = Vec::with_capacity(rows.len());
        for row in &rows {
            let parameters: String = row.try_get("parameters")?;
            ids.push(row.try_get::<i64, _>("id")?);
            curves.push(FinishedCurve {
                assignment: serde_json::from_str(&parameters)?,
                points: Vec::new(),
                final_value: row.try_get("objective")?,
            });
        }
        if !ids.is_empty() {
            let chosen = format!("SELECT t.id {with_curve} ORDER BY t.id DESC LIMIT $3");
            let mut by_trial = thinned_points(&mut conn, &chosen, study_id, except, MAX_CURVES, by_elapsed).await?;
            for (curve, id) in curves.iter_mut().zip(&ids) {
                curve.points = by_trial.remove(id).unwrap_or_default();
            }
            // A trial deleted, or pushed out of the newest by one finishing, between the reads.
            curves.retain(|c| !c.points.is_empty());
        }
        Ok(Finished { curves, count: usize::try_from(count).unwrap_or(0), best })
    }

    /// The curves of the partial trials — SUCCEEDED after being asked to stop, with
    /// measurements of the objective — the most recent [`MAX_PARTIAL_CURVES`], each thinned as
    /// [`Store::finished_curves`] thins, by trial id: what a designer models a partial trial's
    /// final value from (`bo_core::stopping::partial`). A plain read, no lock.
    pub async fn partial_curves(&self, study_id: i64, by_elapsed: bool) -> Result<BTreeMap<i64, Vec<(f64, f64)>>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let chosen = "SELECT t.id FROM trials t WHERE t.study_id = $1 AND t.id <> $2 AND t.state = 'SUCCEEDED' \
             AND t.stopped_ms IS NOT NULL AND t.objective IS NOT NULL ORDER BY t.id DESC LIMIT $3";
        thinned_points(&mut conn, chosen, study_id, 0, MAX_PARTIAL_CURVES, by_elapsed).await
    }
}

/// Partial trials whose curves a refit reads: beyond them, the oldest keep their last value.
pub const MAX_PARTIAL_CURVES: usize = 10_000;

/// The objective's points of the trials `chosen` selects (a query of their ids over `$1` the
/// study, `$2` a trial left out and `$3` a limit), by position then arrival, each curve thinned
/// to [`CURVE_POINTS`] in SQL: the k-th of n is kept when ⌊k·max/n⌋ > ⌊(k−1)·max/n⌋.
async fn thinned_points(
    conn: &mut sqlx::AnyConnection,
    chosen: &str,
    study_id: i64,
    except: i64,
    limit: usize,
    by_elapsed: bool,
) -> Result<BTreeMap<i64, Vec<(f64, f64)>>, StoreError> {
    let position = if by_elapsed { "m.elapsed_secs" } else { "m.step_count" };
    let sql = format!(
        "SELECT trial_id, pos, objective FROM (SELECT m.trial_id, CAST({position} AS DOUBLE PRECISION) AS pos, m.objective, \
         ROW_NUMBER() OVER (PARTITION BY m.trial_id ORDER BY {position}, m.seq) AS k, \
         COUNT(*) OVER (PARTITION BY m.trial_id) AS n \
         FROM measurements m WHERE m.study_id = $1 AND m.objective IS NOT NULL AND m.trial_id IN ({chosen})) s \
         WHERE (k * $4) / n > ((k - 1) * $4) / n ORDER BY trial_id, k"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(study_id)
        .bind(except)
        .bind(limit as i64)
        .bind(CURVE_POINTS as i64)
        .fetch_all(&mut *conn)
        .await?;
    let mut by_trial: BTreeMap<i64, Vec<(f64, f64)>> = BTreeMap::new();
    for row in rows {
        by_trial.entry(row.try_get("trial_id")?).or_default().push((row.try_get("pos")?, row.try_get("objective")?));
    }
    Ok(by_trial)
}
