//! What changed in a study since a reader last looked: the trials written after a [`Cursor`],
//! in the order they were written, for a live view that polls (the dashboard).
//!
//! Every transaction that locks a study moves its change counter on (`lock_study`), and each
//! trial written in it records the value. Writers to one study take turns on its row, so once a
//! reader sees the counter at `c`, every transaction numbered up to `c` has committed: the
//! trials changed after `c` are exactly those with a larger number. A delete cannot be listed;
//! the counter at the last delete (`reset_seq`) tells a reader from before it to start over.
//!
//! Owns the reading of changes only; never writes.

use sqlx::Row;

use crate::error::{Entity, StoreError};
use crate::studies::StudyState;
use crate::{Backend, Basis, Store};
use bo_core::{Assignment, Measurement, Trial, TrialState};

/// Trials packed into one row of a changes read.
const PACK: i64 = 512;

/// Stored bytes per trial, on average over a page, from which its trials are read one to a row
/// rather than packed: handing over a row costs microseconds, while the packing's grouping
/// copies every line through a temporary table — a page of a study of 300 long categorical
/// values a trial (46 KB each) took 1.5 s packed and 0.5 s a row at a time on SQLite.
const ROW_BYTES: i64 = 4096;

/// Changed trials decoded on the runtime rather than on a blocking thread.
const DECODE_INLINE: i64 = 64;

/// A position in a study's changes: the change counter and, within a transaction that wrote
/// several trials, the last trial id read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    /// The study's change counter.
    pub seq: i64,
    /// The last trial id read at that counter (`i64::MAX`: all of them).
    pub trial_id: i64,
}

impl Cursor {
    /// Before anything: a reader with this cursor loads the whole study.
    pub const START: Cursor = Cursor { seq: -1, trial_id: 0 };
}

/// The trials changed after a cursor, at most a page of them.
#[derive(Debug)]
pub struct TrialChanges {
    /// The study's state now.
    pub state: StudyState,
    /// The study's data version now.
    pub data_version: i64,
    /// The id its next trial will have now (with `data_version`, the study's [`Basis`] as read
    /// before the trials).
    pub next_trial_id: i64,
    /// The trials, whole (their stop times too) but without intermediate measurements, in the
    /// order they were written.
    pub trials: Vec<Trial>,
    /// Whether the reader's cursor was from before a trial was deleted: these changes start
    /// from the beginning, and the reader drops what it held.
    pub reset: bool,
    /// Whether the page was cut short: more changes follow `cursor` now.
    pub more: bool,
    /// Where the next read starts.
    pub cursor: Cursor,
}

impl TrialChanges {
    /// The study's basis, read before its trials.
    pub fn basis(&self) -> Basis {
        Basis { data_version: self.data_version, next_trial_id: self.next_trial_id }
    }
}

impl Store {
    /// The trials of a study written after `after` (all of them from [`Cursor::START`]), at most
    /// `limit` and, beyond the first, at most `max_bytes` of stored parameters and final
    /// measurements (`usize::MAX`: no byte budget, and one statement fewer). A plain read: no
    /// lock.
    pub async fn trial_changes(&self, study_id: i64, after: Cursor, limit: i64, max_bytes: usize) -> Result<TrialChanges, StoreError> {
        let mut conn = self.pool.acquire().await?;
        // The study first: every transaction numbered up to its counter has committed, so the
        // rows read next hold all of them (and perhaps some later ones, which are read again).
        let head = sqlx::query("SELECT state, data_version, next_trial_id, change_seq, reset_seq FROM studies WHERE id = $1")
            .bind(study_id)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(StoreError::NotFound(Entity::Study))?;
        let (seq, reset_seq): (i64, i64) = (head.try_get("change_seq")?, head.try_get("reset_seq")?);
        let state: String = head.try_get("state")?;
        let reset = after != Cursor::START && after.seq < reset_seq;
        let from = if reset { Cursor::START } else { after };
        // At most three statements, none of which hands over a row per trial (100,000 rows
        // handed over one at a time from SQLite's worker thread cost more than all the SQL and
        // JSON): under a byte budget the page's size and where the budget cuts it, then its
        // trials packed PACK to a row. Without a budget one trial more than the page is read
        // instead, which tells whether more follow.
        let (cut, found_more, over, per_row) = if max_bytes == usize::MAX {
            (None, false, 1, false)
        } else {
            let size = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*) AS found, COALESCE(SUM(bytes), 0) AS bytes FROM \
                 (SELECT {BYTES} AS bytes FROM trials WHERE {AFTER_CURSOR} ORDER BY change_seq, id LIMIT $4) AS page"
            )))
            .bind(study_id)
            .bind(from.seq)
            .bind(from.trial_id)
            .bind(limit.saturating_add(1))
            .fetch_one(&mut *conn)
            .await?;
            let (found, bytes): (i64, i64) = (size.try_get("found")?, size.try_get("bytes")?);
            let budget = i64::try_from(max_bytes).unwrap_or(i64::MAX);
            // Within the budget, the page ends after `limit` trials; beyond it, before the first
            // trial (after the first) that passes it.
            let cut = if bytes > budget {
                let cut = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT change_seq, id FROM (SELECT change_seq, id, ROW_NUMBER() OVER w AS rn, SUM(bytes) OVER w AS upto FROM \
                     (SELECT change_seq, id, {BYTES} AS bytes FROM trials WHERE {AFTER_CURSOR} ORDER BY change_seq, id LIMIT $4) AS page \
                     WINDOW w AS (ORDER BY change_seq, id ROWS UNBOUNDED PRECEDING)) AS running \
                     WHERE rn > 1 AND upto > $5 ORDER BY change_seq, id LIMIT 1"
                )))
                .bind(study_id)
                .bind(from.seq)
                .bind(from.trial_id)
                .bind(limit)
                .bind(budget)
                .fetch_optional(&mut *conn)
                .await?;
                cut.map(|row| Ok::<_, StoreError>(Cursor { seq: row.try_get("change_seq")?, trial_id: row.try_get("id")? })).transpose()?
            } else {
                None
            };
            (cut, found > limit, 0, bytes >= ROW_BYTES.saturating_mul(found))
        };
        let before = Cursor { seq: i64::MAX, trial_id: i64::MAX };
        let packs = sqlx::query(sqlx::AssertSqlSafe(packed_changes_sql(self.backend, per_row)))
            .bind(study_id)
            .bind(from.seq)
            .bind(from.trial_id)
            .bind(limit.saturating_add(over))
            .bind(cut.unwrap_or(before).seq)
            .bind(cut.unwrap_or(before).trial_id)
            .fetch_all(&mut *conn)
            .await?;
        let mut packed = Vec::with_capacity(packs.len());
        for pack in &packs {
            packed.push((pack.try_get::<i64, _>("n")?, pack.try_get::<String, _>("lines")?));
        }
        // Decoding 100,000 trials is tens of milliseconds: off the runtime; a few (a live view's
        // or a mirror's usual read) cost less than the hop to a blocking thread.
        let read: i64 = packed.iter().map(|(n, _)| *n).sum();
        let keep = usize::try_from(limit).unwrap_or(usize::MAX);
        let (trials, last) = if read <= DECODE_INLINE {
            decode(&packed, keep)?
        } else {
            tokio::task::spawn_blocking(move || decode(&packed, keep))
                .await
                .map_err(|e| StoreError::Internal(format!("decoding changes panicked: {e}")))??
        };
        // The trial read past the page: more follow.
        let read_past = read > limit;
        let more = cut.is_some() || found_more || read_past;
        let Some(last) = last else {
            let cursor = Cursor { seq: seq.max(from.seq), trial_id: i64::MAX };
            return Ok(TrialChanges {
                state: StudyState::parse(&state)?,
                data_version: head.try_get("data_version")?,
                next_trial_id: head.try_get("next_trial_id")?,
                trials: vec![],
                reset,
                more,
                cursor,
            });
        };
        // Read through everything up to the study's counter: the next read starts after it.
        let cursor = if more { last } else { Cursor { seq: seq.max(last.seq), trial_id: i64::MAX } };
        Ok(TrialChanges {
            state: StudyState::parse(&state)?,
            data_version: head.try_get("data_version")?,
            next_trial_id: head.try_get("next_trial_id")?,
            trials,
            reset,
            more,
            cursor,
        })
    }
}

/// A study's (`$1`) trials written after the cursor `($2, $3)`. A row-value comparison, which
/// both databases turn into a range of the `(study_id, change_seq, id)` index: the same
/// condition spelled with `OR` was a filter over every row of the cursor's `change_seq` — an
/// import's trials all share one, and each page of a 2,000,000-trial study took 3.7 s on
/// Postgres.
const AFTER_CURSOR: &str = "study_id = $1 AND (change_seq, id) > ($2, $3)";

/// A trial's stored bytes, as the byte budget counts them: `OCTET_LENGTH`, which both databases
/// take from the value's header (SQLite's `LENGTH` of text counts its characters, and a wide
/// study's pages spent more time counting than reading).
const BYTES: &str = "OCTET_LENGTH(parameters) + COALESCE(OCTET_LENGTH(final_measurement), 0)";

/// The packed changes: the trials after the cursor `($2, $3)` and before `($5, $6)`, at most
/// `$4`, as lines of JSON arrays in [`Line`]'s order, [`PACK`] lines to a row by id (so in no
/// particular order: [`decode`] sorts them), or one to a row (`per_row`, for large trials: see
/// [`ROW_BYTES`]). Built by concatenation: the stored parameters and measurements are JSON
/// already, and parsing them in SQL cost more than the whole read.
fn packed_changes_sql(backend: Backend, per_row: bool) -> String {
    let (quote, pack) = match backend {
        Backend::Sqlite => ("json_quote", "group_concat"),
        Backend::Postgres => ("to_json", "string_agg"),
    };
    let text = |column: &str| format!("COALESCE(CAST({column} AS TEXT), 'null')");
    let line = format!(
        "'[' || id || ',' || change_seq || ',\"' || state || '\",' || parameters || ',' || {} || ',' || CAST({quote}(client_id) AS TEXT) \
         || ',' || CAST({quote}(infeasible_reason) AS TEXT) || ',' || start_time_ms || ',' || {} || ',' || {} || ',' || {} || ',' || {} \
         || ',' || space_revision || ',' || {} || ']'",
        text("final_measurement"),
        text("end_time_ms"),
        text("stopped_ms"),
        text("resumed_from"),
        text("resumed_at"),
        text("labels"),
    );
    let page =
        format!("(SELECT * FROM trials WHERE {AFTER_CURSOR} AND (change_seq, id) < ($5, $6) ORDER BY change_seq, id LIMIT $4) AS page");
    if per_row {
        format!("SELECT CAST(1 AS BIGINT) AS n, {line} AS lines FROM {page}")
    } else {
        format!("SELECT COUNT(*) AS n, {pack}({line}, '\n') AS lines FROM {page} GROUP BY id / {PACK}")
    }
}

/// One packed trial: id, change counter, state, parameters, final measurement, client id,
/// infeasible reason, start, end and stop times, the trial it resumes with where, the space's
/// revision and the labels.
type Line = (
    i64,
    i64,
    String,
    Assignment,
    Option<Measurement>,
    String,
    String,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<f64>,
    i64,
    Option<std::collections::BTreeMap<String, String>>,
);

/// Trials as read back from the packs: in the order they were written, and the cursor after the
/// last.
type Decoded = (Vec<Trial>, Option<Cursor>);

/// The first `keep` trials, in the order they were written, of the packed rows (each with how
/// many trials it holds).
fn decode(packs: &[(i64, String)], keep: usize) -> Result<Decoded, StoreError> {
    let mut read = Vec::with_capacity(packs.iter().map(|(n, _)| usize::try_from(*n).unwrap_or(0)).sum());
    for (n, pack) in packs {
        let before = read.len();
        for line in serde_json::Deserializer::from_str(pack).into_iter::<Line>() {
            let (
                id,
                seq,
                state,
                assignment,
                final_measurement,
                client_id,
                infeasible_reason,
                start_time_ms,
                end_time_ms,
                stopped,
                from,
                at,
                space_revision,
                labels,
            ) = line?;
            let trial = Trial {
                id,
                state: TrialState::parse(&state).ok_or_else(|| StoreError::Internal(format!("unknown stored trial state {state:?}")))?,
                assignment,
                measurements: Vec::new(),
                final_measurement,
                client_id,
                infeasible_reason,
                start_time_ms,
                end_time_ms,
                stop_time_ms: stopped,
                resumed: crate::trials::resumed(from, at),
                space_revision,
                labels: labels.unwrap_or_default(),
            };
            read.push((Cursor { seq, trial_id: id }, trial));
        }
        // A NULL anywhere in a line would have dropped it from its pack without a word.
        if (read.len() - before) as i64 != *n {
            return Err(StoreError::Internal(format!("a pack of {n} changed trials decoded to {}", read.len() - before)));
        }
    }
    read.sort_unstable_by_key(|(at, _)| *at);
    read.truncate(keep);
    let last = read.last().map(|(at, _)| *at);
    Ok((read.into_iter().map(|(_, trial)| trial).collect(), last))
}
