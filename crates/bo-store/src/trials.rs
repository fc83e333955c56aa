//! Trials and their measurements: create, read, list, delete and change under bo-core's trial
//! rules, each a single transaction that starts by locking the study (`lock.rs`). Handing trials out to a
//! client is the suggest transaction's (`suggest.rs`), which uses the helpers here.

use std::collections::BTreeMap;

use bo_core::{Assignment, Completion, Limits, Measurement, StudySpec, Trial, TrialError, TrialState};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::apart::Apart;
use crate::error::{Entity, StoreError};
use crate::lock::{Basis, basis, lock_study};
use crate::operations::{Operation, insert_pending_suggest, operation_in, pending_suggest};
use crate::{Backend, Store};

/// A trial to create.
#[derive(Clone, Debug)]
pub struct NewTrial {
    /// Its parameters, already checked against the space.
    pub assignment: Assignment,
    /// `Requested` to be handed out by a later suggest; `Succeeded` or `Infeasible` when it was
    /// evaluated elsewhere.
    pub state: TrialState,
    /// Intermediate measurements.
    pub measurements: Vec<Measurement>,
    /// The final measurement of a succeeded trial.
    pub final_measurement: Option<Measurement>,
    /// Why it is infeasible.
    pub infeasible_reason: String,
    /// The client's labels for it.
    pub labels: BTreeMap<String, String>,
}

pub(crate) const TRIAL_COLUMNS: &str = "id, state, parameters, final_measurement, client_id, infeasible_reason, start_time_ms, end_time_ms, stopped_ms, resumed_from, resumed_at, space_revision, labels";

pub(crate) fn trial_from_row(row: &AnyRow) -> Result<Trial, StoreError> {
    RawTrial::from_row(row)?.decode()
}

/// A trial row as read, its JSON not yet parsed (a page of trials may hold tens of megabytes,
/// parsed off the runtime).
struct RawTrial {
    id: i64,
    state: String,
    parameters: String,
    final_measurement: Option<String>,
    client_id: String,
    infeasible_reason: String,
    start_time_ms: i64,
    end_time_ms: Option<i64>,
    stopped_ms: Option<i64>,
    resumed_from: Option<i64>,
    resumed_at: Option<f64>,
    space_revision: i64,
    labels: Option<String>,
}

impl RawTrial {
    fn from_row(row: &AnyRow) -> Result<RawTrial, StoreError> {
        Ok(RawTrial {
            id: row.try_get("id")?,
            state: row.try_get("state")?,
            parameters: row.try_get("parameters")?,
            final_measurement: row.try_get("final_measurement")?,
            client_id: row.try_get("client_id")?,
            infeasible_reason: row.try_get("infeasible_reason")?,
            start_time_ms: row.try_get("start_time_ms")?,
            end_time_ms: row.try_get("end_time_ms")?,
            stopped_ms: row.try_get("stopped_ms")?,
            resumed_from: row.try_get("resumed_from")?,
            resumed_at: row.try_get("resumed_at")?,
            space_revision: row.try_get("space_revision")?,
            labels: row.try_get("labels")?,
        })
    }

    /// Bytes of JSON to parse.
    fn json_bytes(&self) -> usize {
        self.parameters.len() + self.final_measurement.as_ref().map_or(0, String::len) + self.labels.as_ref().map_or(0, String::len)
    }

    fn decode(self) -> Result<Trial, StoreError> {
        let state = self.state;
        Ok(Trial {
            id: self.id,
            state: TrialState::parse(&state).ok_or_else(|| StoreError::Internal(format!("unknown stored trial state {state:?}")))?,
            assignment: serde_json::from_str(&self.parameters)?,
            measurements: Vec::new(),
            final_measurement: self.final_measurement.as_deref().map(serde_json::from_str).transpose()?,
            client_id: self.client_id,
            infeasible_reason: self.infeasible_reason,
            start_time_ms: self.start_time_ms,
            end_time_ms: self.end_time_ms,
            stop_time_ms: self.stopped_ms,
            resumed: resumed(self.resumed_from, self.resumed_at),
            space_revision: self.space_revision,
            labels: self.labels.as_deref().map(serde_json::from_str).transpose()?.unwrap_or_default(),
        })
    }
}

/// A trial's labels as stored: a JSON object, or NULL when it has none.
pub(crate) fn labels_json(trial: &Trial) -> Result<Option<String>, StoreError> {
    Ok(if trial.labels.is_empty() { None } else { Some(serde_json::to_string(&trial.labels)?) })
}

/// Trial `trial_id` of `study_id` (`NotFound` when there is none), read in `conn`'s transaction.
pub(crate) async fn one_trial(conn: &mut AnyConnection, study_id: i64, trial_id: i64, load: Load) -> Result<Trial, StoreError> {
    load_trials(conn, study_id, trial_id - 1, trial_id, 1, load).await?.pop().ok_or(StoreError::NotFound(Entity::Trial))
}

/// Which parts of a trial to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Everything.
    Full,
    /// Without intermediate measurements (all a designer needs; they can be most of the data).
    NoMeasurements,
}

/// Trials of `study_id` with ids in `(after_id, up_to]`, at most `limit`.
pub(crate) async fn load_trials(
    conn: &mut AnyConnection,
    study_id: i64,
    after_id: i64,
    up_to: i64,
    limit: i64,
    load: Load,
) -> Result<Vec<Trial>, StoreError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {TRIAL_COLUMNS} FROM trials WHERE study_id = $1 AND id > $2 AND id <= $3 ORDER BY id LIMIT $4"
    )))
    .bind(study_id)
    .bind(after_id)
    .bind(up_to)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    let raw: Vec<RawTrial> = rows.iter().map(RawTrial::from_row).collect::<Result<_, _>>()?;
    drop(rows);
    let measured = match (load, raw.first(), raw.last()) {
        (Load::Full, Some(first), Some(last)) => {
            let query = sqlx::query(
                "SELECT trial_id, step_count, elapsed_secs, metrics FROM measurements \
                 WHERE study_id = $1 AND trial_id >= $2 AND trial_id <= $3 ORDER BY trial_id, seq",
            );
            read_measurements(conn, query.bind(study_id).bind(first.id).bind(last.id)).await?
        }
        _ => Vec::new(),
    };
    decode_trials(raw, measured).await
}

/// One measurement row as read: the trial's number, step, elapsed seconds and metrics' JSON.
type MeasurementRow = (i64, i64, f64, String);

/// The measurement rows `query` selects (`trial_id, step_count, elapsed_secs, metrics`).
async fn read_measurements<'q>(
    conn: &mut AnyConnection,
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
) -> Result<Vec<MeasurementRow>, StoreError> {
    let rows = query.fetch_all(&mut *conn).await?;
    rows.iter()
        .map(|row| Ok((row.try_get("trial_id")?, row.try_get("step_count")?, row.try_get("elapsed_secs")?, row.try_get("metrics")?)))
        .collect()
}

/// The trials of `raw`, each with its rows of `measured` (in their order).
async fn decode_trials(raw: Vec<RawTrial>, measured: Vec<MeasurementRow>) -> Result<Vec<Trial>, StoreError> {
    // Parsing a page of trials (up to tens of megabytes of JSON) is CPU work: off the runtime
    // unless it is small.
    let bytes = raw.iter().map(RawTrial::json_bytes).chain(measured.iter().map(|m| m.3.len())).sum::<usize>();
    crate::studies::decode_off_runtime(i64::try_from(bytes).unwrap_or(i64::MAX), move || {
        let mut trials: Vec<Trial> = raw.into_iter().map(RawTrial::decode).collect::<Result<_, _>>()?;
        let mut by_trial: BTreeMap<i64, Vec<Measurement>> = BTreeMap::new();
        for (trial_id, step_count, elapsed_secs, metrics) in measured {
            by_trial.entry(trial_id).or_default().push(Measurement { step_count, elapsed_secs, metrics: serde_json::from_str(&metrics)? });
        }
        for t in &mut trials {
            t.measurements = by_trial.remove(&t.id).unwrap_or_default();
        }
        Ok(trials)
    })
    .await
}

/// Trials of a study in `state`, owned by `client_id` when given, in id order, at most `limit`.
pub(crate) async fn trials_in_state(
    conn: &mut AnyConnection,
    study_id: i64,
    state: TrialState,
    client_id: Option<&str>,
    limit: i64,
) -> Result<Vec<Trial>, StoreError> {
    let rows = match client_id {
        Some(client) => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {TRIAL_COLUMNS} FROM trials WHERE study_id = $1 AND client_id = $2 AND state = $3 ORDER BY id LIMIT $4"
            )))
            .bind(study_id)
            .bind(client)
            .bind(state.as_str())
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?
        }
        None => {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {TRIAL_COLUMNS} FROM trials WHERE study_id = $1 AND state = $2 ORDER BY id LIMIT $3"
            )))
            .bind(study_id)
            .bind(state.as_str())
            .bind(limit)
            .fetch_all(&mut *conn)
            .await?
        }
    };
    rows.iter().map(trial_from_row).collect()
}

/// Appends `ms` to a trial's measurements from `first_seq` on, each with its value of the
/// study's `objective` in a column of its own.
pub(crate) async fn insert_measurements(
    conn: &mut AnyConnection,
    study_id: i64,
    trial_id: i64,
    first_seq: usize,
    ms: &[Measurement],
    objective: &str,
) -> Result<(), StoreError> {
    for (k, m) in ms.iter().enumerate() {
        sqlx::query(
            "INSERT INTO measurements (study_id, trial_id, seq, step_count, elapsed_secs, metrics, objective) \
             VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $8 = 1 THEN $7 END)",
        )
        .bind(study_id)
        .bind(trial_id)
        .bind((first_seq + k) as i64)
        .bind(m.step_count)
        .bind(m.elapsed_secs)
        .bind(serde_json::to_string(&m.metrics)?)
        .bind(m.metrics.get(objective).copied().unwrap_or(0.0))
        .bind(i64::from(m.metrics.contains_key(objective)))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

pub(crate) async fn insert_trial(conn: &mut AnyConnection, study_id: i64, trial: &Trial, apart: &Apart) -> Result<(), StoreError> {
    let objective = apart.metric.as_str();
    sqlx::query(
        "INSERT INTO trials (study_id, id, state, parameters, final_measurement, client_id, infeasible_reason, start_time_ms, end_time_ms, \
         objective, is_unsafe, stopped_ms, resumed_from, resumed_at, space_revision, labels, change_seq) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
         CASE WHEN $11 = 1 THEN $10 END, $12, $13, $14, CASE WHEN $16 = 1 THEN $15 END, $17, $18, (SELECT change_seq FROM studies WHERE id = $1))",
    )
    .bind(study_id)
    .bind(trial.id)
    .bind(trial.state.as_str())
    .bind(serde_json::to_string(&trial.assignment)?)
    .bind(trial.final_measurement.as_ref().map(serde_json::to_string).transpose()?)
    .bind(&trial.client_id)
    .bind(&trial.infeasible_reason)
    .bind(trial.start_time_ms)
    .bind(trial.end_time_ms)
    .bind(final_objective(trial, objective).unwrap_or(0.0))
    .bind(i64::from(final_objective(trial, objective).is_some()))
    .bind(i64::from(apart.is_unsafe(trial)))
    .bind(trial.stop_time_ms)
    .bind(trial.resumed.map(|r| r.from))
    .bind(trial.resumed.map_or(0.0, |r| r.at))
    .bind(i64::from(trial.resumed.is_some()))
    .bind(trial.space_revision)
    .bind(labels_json(trial)?)
    .execute(&mut *conn)
    .await?;
    insert_measurements(conn, study_id, trial.id, 0, &trial.measurements, objective).await
}

/// A trial's resumption as stored: both columns, or neither.
pub(crate) fn resumed(from: Option<i64>, at: Option<f64>) -> Option<bo_core::Resumed> {
    Some(bo_core::Resumed { from: from?, at: at? })
}

/// The numbers of `$1`'s trials that a later trial resumes, as a SQL subquery: what successive
/// halving and the designers leave out (`bo_core::Trial::superseded`).
pub(crate) const SUPERSEDED: &str = "(SELECT resumed_from FROM trials WHERE study_id = $1 AND resumed_from IS NOT NULL)";

// A nullable float is bound as a value and a flag (`CASE WHEN flag = 1 THEN value END`): sqlx's
// `Any` driver declares a NULL's parameter type on Postgres as an integer, and a statement first
// prepared with a NULL there then refuses a float ("incorrect binary data format").

/// The trial's final value of the study's `objective` metric, which the trial row also stores
/// apart (for the studies' overview).
fn final_objective(trial: &Trial, objective: &str) -> Option<f64> {
    trial.final_measurement.as_ref().and_then(|m| m.metrics.get(objective).copied())
}

/// Writes the trial's changed fields; a change is a sign of its client, so `now_ms` is when it
/// was last seen (the trial lease).
pub(crate) async fn write_trial(
    conn: &mut AnyConnection,
    study_id: i64,
    trial: &Trial,
    apart: &Apart,
    now_ms: i64,
) -> Result<(), StoreError> {
    let objective = apart.metric.as_str();
    sqlx::query(
        "UPDATE trials SET state = $1, final_measurement = $2, client_id = $3, infeasible_reason = $4, end_time_ms = $5, \
         last_seen_ms = $8, objective = CASE WHEN $10 = 1 THEN $9 END, is_unsafe = $11, stopped_ms = CASE WHEN $1 = 'STOPPING' THEN COALESCE(stopped_ms, $8) ELSE stopped_ms END, change_seq = (SELECT change_seq FROM studies WHERE id = $6) WHERE study_id = $6 AND id = $7",
    )
    .bind(trial.state.as_str())
    .bind(trial.final_measurement.as_ref().map(serde_json::to_string).transpose()?)
    .bind(&trial.client_id)
    .bind(&trial.infeasible_reason)
    .bind(trial.end_time_ms)
    .bind(study_id)
    .bind(trial.id)
    .bind(now_ms)
    .bind(final_objective(trial, objective).unwrap_or(0.0))
    .bind(i64::from(final_objective(trial, objective).is_some()))
    .bind(i64::from(apart.is_unsafe(trial)))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Records that the trial's client was seen at `now_ms` (see the trial lease).
pub(crate) async fn touch(conn: &mut AnyConnection, study_id: i64, trial_id: i64, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE trials SET last_seen_ms = $1 WHERE study_id = $2 AND id = $3")
        .bind(now_ms)
        .bind(study_id)
        .bind(trial_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

pub(crate) async fn bump_data_version(conn: &mut AnyConnection, study_id: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE studies SET data_version = data_version + 1 WHERE id = $1").bind(study_id).execute(&mut *conn).await?;
    Ok(())
}

impl Store {
    /// Up to `limit` trials of a study with ids above `after_id`, in id order, whole — fewer when
    /// their stored size passes `max_bytes` (parameters, final and intermediate measurements, as
    /// stored): the first trial always, then each that keeps the page within the budget. Sizes
    /// are summed in SQL before anything is loaded, so a page never costs more than its budget.
    /// The flag says whether the budget cut the page short (more trials follow).
    pub async fn list_trials(&self, study_id: i64, after_id: i64, limit: i64, max_bytes: usize) -> Result<(Vec<Trial>, bool), StoreError> {
        let mut conn = self.pool.acquire().await?;
        let sizes = sqlx::query(
            "SELECT t.id, LENGTH(t.parameters) + COALESCE(LENGTH(t.final_measurement), 0) \
             + COALESCE((SELECT SUM(LENGTH(m.metrics) + 32) FROM measurements m WHERE m.study_id = t.study_id AND m.trial_id = t.id), 0) AS bytes \
             FROM trials t WHERE t.study_id = $1 AND t.id > $2 ORDER BY t.id LIMIT $3",
        )
        .bind(study_id)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
        let (mut total, mut last, mut kept) = (0usize, None, 0);
        for row in &sizes {
            let bytes = usize::try_from(row.try_get::<i64, _>("bytes")?).unwrap_or(usize::MAX);
            if last.is_some() && total.saturating_add(bytes) > max_bytes {
                break;
            }
            total = total.saturating_add(bytes);
            last = Some(row.try_get::<i64, _>("id")?);
            kept += 1;
        }
        let Some(last) = last else { return Ok((vec![], false)) };
        Ok((load_trials(&mut conn, study_id, after_id, last, limit, Load::Full).await?, kept < sizes.len()))
    }

    /// Every trial of a study, whole (for tests and tools; the API pages).
    pub async fn all_trials(&self, study_id: i64) -> Result<Vec<Trial>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        load_trials(&mut conn, study_id, 0, i64::MAX, i64::MAX, Load::Full).await
    }

    /// What the optimal trials are chosen from: for every safe SUCCEEDED trial with a final
    /// measurement, in id order, its id and its final values of `metrics` (`None` where it lacks
    /// one), taken out of the stored measurement by the database — eight bytes a value read,
    /// whatever else the measurement holds. Unsafe trials (a safety metric on the wrong side of
    /// its threshold, as marked when they completed) are left out, and so are partial ones
    /// (asked to stop: `bo_core::Trial::is_partial`) while any trial was trained in full.
    pub async fn final_values(&self, study_id: i64, metrics: &[String]) -> Result<Vec<(i64, Vec<Option<f64>>)>, StoreError> {
        let value = |k: usize| match self.backend {
            Backend::Sqlite => {
                format!(
                    "CAST((SELECT j.value FROM json_each(final_measurement, '$.metrics') AS j WHERE j.key = ${}) AS DOUBLE PRECISION)",
                    k + 2
                )
            }
            Backend::Postgres => format!("CAST(CAST(final_measurement AS JSON) -> 'metrics' ->> ${} AS DOUBLE PRECISION)", k + 2),
        };
        let columns: Vec<String> = (0..metrics.len()).map(|k| format!("{} AS v{k}", value(k))).collect();
        const FULL: &str = "study_id = $1 AND state = 'SUCCEEDED' AND final_measurement IS NOT NULL AND is_unsafe = 0";
        let sql = format!(
            "SELECT id{}{} FROM trials WHERE {FULL} AND (stopped_ms IS NULL OR NOT EXISTS (SELECT 1 FROM trials WHERE {FULL} \
             AND stopped_ms IS NULL)) ORDER BY id",
            if columns.is_empty() { "" } else { ", " },
            columns.join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(study_id);
        for id in metrics {
            query = query.bind(id.as_str());
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| {
                let values =
                    (0..metrics.len()).map(|k| row.try_get::<Option<f64>, _>(format!("v{k}").as_str())).collect::<Result<_, _>>()?;
                Ok((row.try_get("id")?, values))
            })
            .collect()
    }

    /// The trials `ids` of a study (those that exist), in the order of `ids` (a front best
    /// first, a suggest's trials as handed out), with their intermediate measurements when `load`
    /// says so: one query, two with the measurements.
    pub async fn trials_by_id(&self, study_id: i64, ids: &[i64], load: Load) -> Result<Vec<Trial>, StoreError> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        // `$2, $3, …`: the one placeholder style both databases read (sqlx's builder for `Any`
        // writes SQLite's `?`).
        let placeholders: Vec<String> = (0..ids.len()).map(|k| format!("${}", k + 2)).collect();
        let sql = format!("SELECT {TRIAL_COLUMNS} FROM trials WHERE study_id = $1 AND id IN ({}) ORDER BY id", placeholders.join(", "));
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(study_id);
        for id in ids {
            query = query.bind(*id);
        }
        let mut conn = self.pool.acquire().await?;
        let rows = query.fetch_all(&mut *conn).await?;
        let raw: Vec<RawTrial> = rows.iter().map(RawTrial::from_row).collect::<Result<_, _>>()?;
        drop(rows);
        let measured = if load == Load::Full && !raw.is_empty() {
            let sql = format!(
                "SELECT trial_id, step_count, elapsed_secs, metrics FROM measurements \
                 WHERE study_id = $1 AND trial_id IN ({}) ORDER BY trial_id, seq",
                placeholders.join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(study_id);
            for id in ids {
                query = query.bind(*id);
            }
            read_measurements(&mut conn, query).await?
        } else {
            Vec::new()
        };
        // A front of 1,000 trials is megabytes of JSON to parse: off the runtime unless small.
        let mut trials = decode_trials(raw, measured).await?;
        let rank: std::collections::HashMap<i64, usize> = ids.iter().enumerate().rev().map(|(k, id)| (*id, k)).collect();
        trials.sort_by_key(|t| rank.get(&t.id).copied().unwrap_or(usize::MAX));
        Ok(trials)
    }

    /// One trial.
    pub async fn get_trial(&self, study_id: i64, trial_id: i64) -> Result<Trial, StoreError> {
        let mut conn = self.pool.acquire().await?;
        load_trials(&mut conn, study_id, trial_id - 1, trial_id, 1, Load::Full).await?.pop().ok_or(StoreError::NotFound(Entity::Trial))
    }

    /// Deletes a trial and its measurements.
    pub async fn delete_trial(&self, study_id: i64, trial_id: i64) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        lock_study(&mut tx, study_id).await?;
        let done =
            sqlx::query("DELETE FROM trials WHERE study_id = $1 AND id = $2").bind(study_id).bind(trial_id).execute(&mut *tx).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(Entity::Trial));
        }
        sqlx::query("UPDATE studies SET reset_seq = change_seq WHERE id = $1").bind(study_id).execute(&mut *tx).await?;
        bump_data_version(&mut tx, study_id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Adds a trial with the next free id; a COMPLETED study takes none (as it suggests none).
    pub async fn create_trial(&self, study_id: i64, new: NewTrial, now_ms: i64) -> Result<Trial, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let locked = lock_study(&mut tx, study_id).await?;
        if locked.state == crate::StudyState::Completed {
            return Err(bo_core::TrialError::StudyCompleted.into());
        }
        let id = locked.basis.next_trial_id;
        let trial = Trial {
            id,
            state: new.state,
            assignment: new.assignment,
            measurements: new.measurements,
            final_measurement: new.final_measurement,
            client_id: String::new(),
            infeasible_reason: new.infeasible_reason,
            start_time_ms: now_ms,
            end_time_ms: new.state.is_completed().then_some(now_ms),
            stop_time_ms: None,
            resumed: None,
            space_revision: locked.space_revision,
            labels: new.labels,
        };
        insert_trial(&mut tx, study_id, &trial, &locked.objective).await?;
        sqlx::query("UPDATE studies SET next_trial_id = $1 WHERE id = $2").bind(id_after(id)?).bind(study_id).execute(&mut *tx).await?;
        if trial.state.is_completed() {
            bump_data_version(&mut tx, study_id).await?;
        }
        tx.commit().await?;
        Ok(trial)
    }

    /// Completes a trial as `completion` asks (bo-core's [`Trial::complete`]: once, with the
    /// measurement `spec` selects when none is given).
    pub async fn complete_trial(
        &self,
        study_id: i64,
        trial_id: i64,
        spec: &StudySpec,
        completion: Completion,
        now_ms: i64,
    ) -> Result<Trial, StoreError> {
        self.change_trial(study_id, trial_id, now_ms, |t| t.complete(spec, completion, now_ms)).await
    }

    /// Asks a trial to stop early ([`Trial::stop`]).
    pub async fn stop_trial(&self, study_id: i64, trial_id: i64, now_ms: i64) -> Result<Trial, StoreError> {
        self.change_trial(study_id, trial_id, now_ms, |t| t.stop(now_ms)).await
    }

    /// Appends an intermediate measurement to a trial ([`Trial::add_measurement`], within
    /// `limits`).
    pub async fn add_measurement(
        &self,
        study_id: i64,
        trial_id: i64,
        m: Measurement,
        limits: &Limits,
        now_ms: i64,
    ) -> Result<Trial, StoreError> {
        self.change_trial(study_id, trial_id, now_ms, |t| t.add_measurement(m, limits)).await
    }

    /// Appends intermediate measurements to a trial in order, all or none (a client that sends
    /// the steps it has queued in one request).
    pub async fn add_measurements(
        &self,
        study_id: i64,
        trial_id: i64,
        ms: Vec<Measurement>,
        limits: &Limits,
        now_ms: i64,
    ) -> Result<Trial, StoreError> {
        self.change_trial(study_id, trial_id, now_ms, |t| ms.into_iter().try_for_each(|m| t.add_measurement(m, limits))).await
    }

    /// Gives a running trial of an open study the `values` of parameters it did not hold
    /// ([`Trial::add_parameters`]: those it holds keep theirs), in one transaction. The values
    /// were checked against a revision of the space at which they are active under the trial;
    /// the space only widens, so they still are.
    pub async fn add_trial_parameters(&self, study_id: i64, trial_id: i64, values: &Assignment, now_ms: i64) -> Result<Trial, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let locked = lock_study(&mut tx, study_id).await?;
        let mut trial = one_trial(&mut tx, study_id, trial_id, Load::Full).await?;
        if trial.add_parameters(values, locked.space_revision)? {
            sqlx::query(
                "UPDATE trials SET parameters = $1, space_revision = $2, last_seen_ms = $3, \
                 change_seq = (SELECT change_seq FROM studies WHERE id = $4) WHERE study_id = $4 AND id = $5",
            )
            .bind(serde_json::to_string(&trial.assignment)?)
            .bind(trial.space_revision)
            .bind(now_ms)
            .bind(study_id)
            .bind(trial_id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        }
        Ok(trial)
    }

    /// Changes a trial by one of bo-core's rules, in one transaction: a refused change leaves
    /// everything as it was. A rule only appends measurements.
    async fn change_trial(
        &self,
        study_id: i64,
        trial_id: i64,
        now_ms: i64,
        change: impl FnOnce(&mut Trial) -> Result<(), TrialError>,
    ) -> Result<Trial, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let locked = lock_study(&mut tx, study_id).await?;
        let mut trial = one_trial(&mut tx, study_id, trial_id, Load::Full).await?;
        let (was_completed, n_measurements) = (trial.state.is_completed(), trial.measurements.len());
        change(&mut trial)?;
        write_trial(&mut tx, study_id, &trial, &locked.objective, now_ms).await?;
        insert_measurements(&mut tx, study_id, trial_id, n_measurements, &trial.measurements[n_measurements..], &locked.objective.metric)
            .await?;
        if trial.state.is_completed() && !was_completed {
            bump_data_version(&mut tx, study_id).await?;
        }
        tx.commit().await?;
        Ok(trial)
    }

    /// The study's basis and every trial (without measurements), for computing proposals
    /// outside the suggest transaction. The basis is read first, so any change made while the
    /// trials are read moves the study past it and the proposals will not fit.
    pub async fn suggest_snapshot(&self, study_id: i64) -> Result<(Basis, Vec<Trial>), StoreError> {
        let mut conn = self.pool.acquire().await?;
        let basis = basis(&mut conn, study_id).await?;
        let trials = load_trials(&mut conn, study_id, 0, i64::MAX, i64::MAX, Load::NoMeasurements).await?;
        Ok((basis, trials))
    }

    /// The study's basis now.
    pub async fn study_basis(&self, study_id: i64) -> Result<Basis, StoreError> {
        let mut conn = self.pool.acquire().await?;
        basis(&mut conn, study_id).await
    }

    /// Records a suggest of `count` trials for `client_id` that will be finished later (see
    /// [`SuggestRequest::finishing`]); a client already waiting gets its pending operation back.
    pub async fn begin_pending_suggest(
        &self,
        study_id: i64,
        client_id: &str,
        count: usize,
        api_version: &str,
        labels: &BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<Operation, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        lock_study(&mut tx, study_id).await?;
        if let Some(op) = pending_suggest(&mut tx, study_id, client_id).await? {
            return Ok(op);
        }
        let id = insert_pending_suggest(&mut tx, study_id, client_id, count, api_version, labels, now_ms).await?;
        let op = operation_in(&mut tx, study_id, id).await?;
        tx.commit().await?;
        Ok(op)
    }
}

/// The trial id after `id`. Imports keep ids below bo-core's `MAX_COUNTER`, so this fails only
/// on a database written by hand.
pub(crate) fn id_after(id: i64) -> Result<i64, StoreError> {
    id.checked_add(1).ok_or_else(|| StoreError::Internal(format!("trial id {id} is the last a study can have")))
}
