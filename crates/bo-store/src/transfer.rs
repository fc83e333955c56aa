//! A whole study out of one database and into another: its record, every trial (ids, states,
//! times, measurements) and its model's fitted state. Reading is one consistent snapshot;
//! writing is one transaction that creates a new study (the next number of its project and
//! location) or nothing. The file format around it belongs to the server's CLI; this module only
//! moves the rows.

use bo_core::Trial;
use sqlx::Row;

use crate::Store;
use crate::error::{Entity, StoreError, is_unique_violation};
use crate::models::StoredModel;
use crate::studies::StudyRecord;
use crate::trials::{Load, insert_trial, load_trials};

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
    /// Reads the study `study_id` whole, in one snapshot.
    pub async fn dump_study(&self, study_id: i64) -> Result<StudyDump, StoreError> {
        let mut tx = self.pool.begin().await?;
        let row =
            sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {}, next_trial_id FROM studies WHERE id = $1", crate::studies::STUDY_COLUMNS)))
                .bind(study_id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound(Entity::Study))?;
        let study = crate::studies::study_from_row(&row)?;
        let next_trial_id: i64 = row.try_get("next_trial_id")?;
        let trials = load_trials(&mut tx, study_id, 0, i64::MAX, i64::MAX, Load::Full).await?;
        let model = sqlx::query("SELECT data_version, state, fitted_at_ms FROM models WHERE study_id = $1")
            .bind(study_id)
            .fetch_optional(&mut *tx)
            .await?
            .map(|row| -> Result<StoredModel, StoreError> {
                let state: String = row.try_get("state")?;
                Ok(StoredModel {
                    data_version: row.try_get("data_version")?,
                    state: serde_json::from_str(&state)?,
                    fitted_at_ms: row.try_get("fitted_at_ms")?,
                })
            })
            .transpose()?;
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
        let spec = &dump.study.spec;
        let apart = crate::trials::Apart::of(spec);
        let spec_json = serde_json::to_string(spec)?;
        let next_trial_id = dump.trials.iter().map(|t| t.id + 1).max().unwrap_or(1).max(dump.next_trial_id);
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let number = crate::studies::take_study_number(&mut tx, project, location).await?;
        let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO studies (project, location, display_name, spec, state, inactive_reason, create_time_ms, number, objective_metric, \
             next_trial_id, data_version, safety_metrics, spec_bytes, algorithm, metrics) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING {}",
            crate::studies::STUDY_COLUMNS
        )))
        .bind(project)
        .bind(location)
        .bind(display_name)
        .bind(&spec_json)
        .bind(dump.study.state.as_str())
        .bind(&dump.study.inactive_reason)
        .bind(dump.study.create_time_ms)
        .bind(number)
        .bind(&apart.metric)
        .bind(next_trial_id)
        .bind(dump.study.data_version)
        .bind(crate::trials::Apart::safety_json(spec)?)
        .bind(spec_json.len() as i64)
        .bind(&spec.algorithm)
        .bind(serde_json::to_string(&spec.metrics)?)
        .fetch_one(&mut *tx)
        .await;
        let row = match inserted {
            Ok(row) => row,
            Err(e) if is_unique_violation(&e) => {
                return Err(StoreError::AlreadyExists(format!(
                    "{project}/{location} already has a study named {display_name:?}; import it under another name"
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let study = crate::studies::study_from_row(&row)?;
        for trial in &dump.trials {
            insert_trial(&mut tx, study.id, trial, &apart).await?;
        }
        if let Some(model) = &dump.model {
            sqlx::query("INSERT INTO models (study_id, data_version, state, fitted_at_ms) VALUES ($1, $2, $3, $4)")
                .bind(study.id)
                .bind(model.data_version)
                .bind(serde_json::to_string(&model.state)?)
                .bind(model.fitted_at_ms)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(StudyRecord { state: dump.study.state, ..study })
    }
}
