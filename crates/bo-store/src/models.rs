//! The fitted state of each study's designer, kept so fits warm-start across restarts and
//! replicas. One row per study: the newest state wins, an older one never overwrites it. And the
//! refit lease: which replica may refit a study now, so a refit runs on one replica at a time.
//! On SQLite these writes take their turn at the write gate like every other: outside it, a
//! lease or model write lost every race for the lock to four clients' suggests and completions
//! (SQLite's busy handler backs off), and a study went 60 trials without a refit landing.

use bo_core::ModelState;
use sqlx::Row;

use crate::Store;
use crate::error::StoreError;

/// A stored model state.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredModel {
    /// The study's `data_version` it was fitted on.
    pub data_version: i64,
    /// The revision of the study's space it was fitted for (an open study's space grows): a
    /// state of another revision is neither adopted nor warm-started.
    pub space_revision: i64,
    /// The designer's state.
    pub state: ModelState,
    /// When it was fitted, milliseconds since the epoch.
    pub fitted_at_ms: i64,
}

impl Store {
    /// The stored state of a study's model, if any.
    pub async fn model_state(&self, study_id: i64) -> Result<Option<StoredModel>, StoreError> {
        let row = sqlx::query("SELECT data_version, space_revision, state, fitted_at_ms FROM models WHERE study_id = $1")
            .bind(study_id)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|row| {
            let state: String = row.try_get("state")?;
            Ok(StoredModel {
                data_version: row.try_get("data_version")?,
                space_revision: row.try_get("space_revision")?,
                state: serde_json::from_str(&state)?,
                fitted_at_ms: row.try_get("fitted_at_ms")?,
            })
        })
        .transpose()
    }

    /// Stores a study's model state unless a state fitted on newer data is already there.
    /// Returns whether it was stored. A study deleted meanwhile is not an error: nothing is
    /// stored.
    pub async fn save_model_state(&self, study_id: i64, model: &StoredModel) -> Result<bool, StoreError> {
        let state = serde_json::to_string(&model.state)?;
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "INSERT INTO models (study_id, data_version, state, fitted_at_ms, space_revision) \
             SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM studies WHERE id = $1) \
             ON CONFLICT (study_id) DO UPDATE SET data_version = excluded.data_version, state = excluded.state, fitted_at_ms = excluded.fitted_at_ms, \
             space_revision = excluded.space_revision WHERE models.data_version <= excluded.data_version",
        )
        .bind(study_id)
        .bind(model.data_version)
        .bind(state)
        .bind(model.fitted_at_ms)
        .bind(model.space_revision)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Takes (or renews) the study's refit lease for `holder` until `now_ms + ttl_ms`: granted
    /// when no one holds it, its holder's time ran out, or `holder` holds it already. Atomic on
    /// both databases (one upsert whose condition reads the row it replaces). A study deleted
    /// meanwhile is never leased.
    pub async fn take_refit_lease(&self, study_id: i64, holder: &str, now_ms: i64, ttl_ms: i64) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "INSERT INTO refit_leases (study_id, holder, expires_ms) \
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM studies WHERE id = $1) \
             ON CONFLICT (study_id) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms \
             WHERE refit_leases.holder = excluded.holder OR refit_leases.expires_ms <= $4",
        )
        .bind(study_id)
        .bind(holder)
        .bind(now_ms.saturating_add(ttl_ms))
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Gives the study's refit lease back, if `holder` has it.
    pub async fn release_refit_lease(&self, study_id: i64, holder: &str) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        sqlx::query("DELETE FROM refit_leases WHERE study_id = $1 AND holder = $2").bind(study_id).bind(holder).execute(&self.pool).await?;
        Ok(())
    }
}
