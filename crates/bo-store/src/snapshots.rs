//! A large study's trials as the trial mirror last packed them, kept so a server that restarts
//! loads them in one value and reads only the trials changed since (bo-server's
//! `engine/mirror.rs` writes and reads them). The store keeps the value as given and never
//! reads inside it: one row per study, the one read furthest (the latest of those) wins, and it
//! is deleted with its study.

use sqlx::Row;

use crate::Store;
use crate::changes::Cursor;
use crate::error::StoreError;

/// A study's stored trials and the change cursor they were read up to.
#[derive(Clone, Debug, PartialEq)]
pub struct TrialSnapshot {
    /// Where a reader that loads them goes on reading changes from.
    pub cursor: Cursor,
    /// The trials' stored form (`bo_core::PackedTrials::to_stored`).
    pub body: String,
}

impl Store {
    /// The study's stored trials, if any.
    pub async fn trial_snapshot(&self, study_id: i64) -> Result<Option<TrialSnapshot>, StoreError> {
        let row = sqlx::query("SELECT cursor_seq, cursor_trial_id, body FROM trial_snapshots WHERE study_id = $1")
            .bind(study_id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|row| {
            Ok(TrialSnapshot {
                cursor: Cursor { seq: row.try_get("cursor_seq")?, trial_id: row.try_get("cursor_trial_id")? },
                body: row.try_get("body")?,
            })
        })
        .transpose()
    }

    /// Stores the study's trials as read up to `snapshot.cursor`, unless trials read further are
    /// stored already (trials read as far are replaced: they are the same trials). Returns
    /// whether it was stored; a study deleted meanwhile stores nothing.
    pub async fn save_trial_snapshot(&self, study_id: i64, snapshot: &TrialSnapshot, now_ms: i64) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "INSERT INTO trial_snapshots (study_id, cursor_seq, cursor_trial_id, body, saved_ms) \
             SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM studies WHERE id = $1) \
             ON CONFLICT (study_id) DO UPDATE SET cursor_seq = excluded.cursor_seq, cursor_trial_id = excluded.cursor_trial_id, \
             body = excluded.body, saved_ms = excluded.saved_ms \
             WHERE (trial_snapshots.cursor_seq, trial_snapshots.cursor_trial_id) <= (excluded.cursor_seq, excluded.cursor_trial_id)",
        )
        .bind(study_id)
        .bind(snapshot.cursor.seq)
        .bind(snapshot.cursor.trial_id)
        .bind(&snapshot.body)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }
}
