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

use futures_util::TryStreamExt;
use sqlx::Row;

use crate::Store;
use crate::error::{Entity, StoreError};
use crate::studies::StudyState;
use crate::trials::{TRIAL_COLUMNS, trial_from_row};
use bo_core::Trial;

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
    /// The trials, whole but without intermediate measurements, in the order they were written.
    pub trials: Vec<Trial>,
    /// For each trial, when it was asked to stop (by its client or the early-stopping rule).
    pub stopped_ms: Vec<Option<i64>>,
    /// Whether the reader's cursor was from before a trial was deleted: these changes start
    /// from the beginning, and the reader drops what it held.
    pub reset: bool,
    /// Whether the page was cut short: more changes follow `cursor` now.
    pub more: bool,
    /// Where the next read starts.
    pub cursor: Cursor,
}

impl Store {
    /// The trials of a study written after `after` (all of them from [`Cursor::START`]), at most
    /// `limit` and, beyond the first, at most `max_bytes` of stored parameters and final
    /// measurements. A plain read: no lock.
    pub async fn trial_changes(&self, study_id: i64, after: Cursor, limit: i64, max_bytes: usize) -> Result<TrialChanges, StoreError> {
        let mut conn = self.pool.acquire().await?;
        // The study first: every transaction numbered up to its counter has committed, so the
        // rows read next hold all of them (and perhaps some later ones, which are read again).
        let head = sqlx::query("SELECT state, data_version, change_seq, reset_seq FROM studies WHERE id = $1")
            .bind(study_id)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(StoreError::NotFound(Entity::Study))?;
        let (seq, reset_seq): (i64, i64) = (head.try_get("change_seq")?, head.try_get("reset_seq")?);
        let state: String = head.try_get("state")?;
        let reset = after != Cursor::START && after.seq < reset_seq;
        let from = if reset { Cursor::START } else { after };
        // One statement, streamed: rows are taken until the count or the byte budget is spent
        // (the first always), so a page never holds more than its budget.
        let mut rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TRIAL_COLUMNS}, change_seq, stopped_ms, LENGTH(parameters) + COALESCE(LENGTH(final_measurement), 0) AS bytes \
             FROM trials WHERE study_id = $1 AND (change_seq > $2 OR (change_seq = $2 AND id > $3)) ORDER BY change_seq, id LIMIT $4"
        )))
        .bind(study_id)
        .bind(from.seq)
        .bind(from.trial_id)
        .bind(limit.saturating_add(1))
        .fetch(&mut *conn);
        let (mut total, mut more, mut last) = (0usize, false, None);
        let (mut trials, mut stopped_ms) = (Vec::new(), Vec::new());
        while let Some(row) = rows.try_next().await? {
            let bytes = usize::try_from(row.try_get::<i64, _>("bytes")?).unwrap_or(usize::MAX);
            if trials.len() as i64 >= limit || (!trials.is_empty() && total.saturating_add(bytes) > max_bytes) {
                more = true;
                break;
            }
            total = total.saturating_add(bytes);
            trials.push(trial_from_row(&row)?);
            stopped_ms.push(row.try_get::<Option<i64>, _>("stopped_ms")?);
            last = Some(Cursor { seq: row.try_get("change_seq")?, trial_id: row.try_get("id")? });
        }
        drop(rows);
        let Some(last) = last else {
            let cursor = Cursor { seq: seq.max(from.seq), trial_id: i64::MAX };
            return Ok(TrialChanges {
                state: StudyState::parse(&state)?,
                data_version: head.try_get("data_version")?,
                trials: vec![],
                stopped_ms: vec![],
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
            trials,
            stopped_ms,
            reset,
            more,
            cursor,
        })
    }
}
