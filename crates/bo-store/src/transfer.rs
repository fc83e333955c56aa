//! A whole study out of one database and into another: its record, every trial (ids, states,
//! times, measurements) and its model's fitted state. Reading is one consistent snapshot;
//! writing is one transaction that creates a new study (the next number of its project and
//! location) or nothing. The file format around it belongs to the server's CLI; this module only
//! moves the rows.

use bo_core::Trial;
use sqlx::{AnyConnection, Row};

use crate::Store;
use crate::error::{Entity, StoreError};
use crate::models::StoredModel;
use crate::studies::{NewStudyRow, StudyRecord};
use crate::trials::{Load, insert_trial, load_trials};

/// A study without its trials: what an export writes before them and an import creates.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyHead {
    /// The study (its `id`, `number`, `project` and `location` are the source's).
    pub study: StudyRecord,
    /// The next trial id it would give (ids of deleted trials are never reused).
    pub next_trial_id: i64,
    /// Its model's fitted state, if any.
    pub model: Option<StoredModel>,
}

/// Everything a study is, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyDump {
    /// The study (its `id`, `number`, `project` and `location` are the source's).
    pub study: StudyRecord,
    /// Its trials in id order, each with its measurements.
    pub trials: Vec<Trial>,
    /// The next trial id it would give (ids of deleted trials are never reused).
    pub next_trial_id: i64,
    /// Its model's fitted state, if any.
    pub model: Option<StoredModel>,
}

impl Store {
    /// Reads the study `study_id` without its trials, in one short transaction; an export then
    /// reads the trials with ids below its `next_trial_id` a page at a time
    /// ([`Store::list_trials`]).
    pub async fn study_head(&self, study_id: i64) -> Result<StudyHead, StoreError> {
        let mut tx = self.pool.begin().await?;
        let head = read_head(&mut tx, study_id).await?;
        tx.commit().await?;
        Ok(head)
    }

    /// Reads the study `study_id` whole, in one snapshot.
    pub async fn dump_study(&self, study_id: i64) -> Result<StudyDump, StoreError> {
        let mut tx = self.pool.begin().await?;
        let StudyHead { study, next_trial_id, model } = read_head(&mut tx, study_id).await?;
        let trials = load_trials(&mut tx, study_id, 0, i64::MAX, i64::MAX, Load::Full).await?;
        tx.commit().await?;
        Ok(StudyDump { study, trials, next_trial_id, model })
    }

    /// Creates `dump` as a new study of `project`/`location` named `display_name`, with its
    /// trials, times and model state, in one transaction. A study of that name already there is
    /// `AlreadyExists` (nothing is written).
    pub async fn restore_study(
        &self,
        project: &str,
        location: &str,
        display_name: &str,
        dump: &StudyDump,
    ) -> Result<StudyRecord, StoreError> {
        let apart = crate::apart::Apart::of(&dump.study.spec);
        let next_trial_id = dump.trials.iter().map(|t| t.id.saturating_add(1)).max().unwrap_or(1).max(dump.next_trial_id);
        let head = StudyHead { study: dump.study.clone(), next_trial_id, model: None };
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let study = insert_study(&mut tx, project, location, display_name, &head).await?;
        for trial in &dump.trials {
            insert_trial(&mut tx, study.id, trial, &apart).await?;
        }
        insert_model(&mut tx, study.id, dump.model.as_ref()).await?;
        tx.commit().await?;
        Ok(study)
    }
}

async fn read_head(conn: &mut AnyConnection, study_id: i64) -> Result<StudyHead, StoreError> {
    let row =
        sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {}, next_trial_id FROM studies WHERE id = $1", crate::studies::STUDY_COLUMNS)))
            .bind(study_id)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(StoreError::NotFound(Entity::Study))?;
    let study = crate::studies::study_from_row(&row)?;
    let next_trial_id: i64 = row.try_get("next_trial_id")?;
    let model = sqlx::query("SELECT data_version, space_revision, state, fitted_at_ms FROM models WHERE study_id = $1")
        .bind(study_id)
        .fetch_optional(&mut *conn)
        .await?
        .map(|row| -> Result<StoredModel, StoreError> {
            let state: String = row.try_get("state")?;
            Ok(StoredModel {
                data_version: row.try_get("data_version")?,
                space_revision: row.try_get("space_revision")?,
                state: serde_json::from_str(&state)?,
                fitted_at_ms: row.try_get("fitted_at_ms")?,
            })
        })
        .transpose()?;
    Ok(StudyHead { study, next_trial_id, model })
}

/// Creates `head`'s study as the next study of `project`/`location` named `display_name`, in
/// `conn`'s transaction; its model is not written ([`insert_model`]). A study of that name
/// already there is `AlreadyExists`.
pub(crate) async fn insert_study(
    conn: &mut AnyConnection,
    project: &str,
    location: &str,
    display_name: &str,
    head: &StudyHead,
) -> Result<StudyRecord, StoreError> {
    let study = &head.study;
    let number = crate::studies::take_study_number(&mut *conn, project, location).await?;
    let new = NewStudyRow {
        project,
        location,
        display_name,
        spec: &study.spec,
        settings: study.settings,
        state: study.state,
        inactive_reason: &study.inactive_reason,
        create_time_ms: study.create_time_ms,
        data_version: study.data_version,
        next_trial_id: head.next_trial_id,
    };
    match new.insert(conn, number).await? {
        Some(row) => crate::studies::study_from_row(&row),
        None => Err(StoreError::AlreadyExists(format!(
            "{project}/{location} already has a study named {display_name:?}; import it under another name"
        ))),
    }
}

/// Writes a study's model state, if it has one, in `conn`'s transaction.
pub(crate) async fn insert_model(conn: &mut AnyConnection, study_id: i64, model: Option<&StoredModel>) -> Result<(), StoreError> {
    if let Some(model) = model {
        sqlx::query("INSERT INTO models (study_id, data_version, state, fitted_at_ms, space_revision) VALUES ($1, $2, $3, $4, $5)")
            .bind(study_id)
            .bind(model.data_version)
            .bind(serde_json::to_string(&model.state)?)
            .bind(model.fitted_at_ms)
            .bind(model.space_revision)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}
