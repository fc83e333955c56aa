//! Uploads of a study in parts (`studies:import`): an upload is opened with the study's head,
//! takes its trials a part at a time (staged in tables shaped as `trials` and `measurements`),
//! and is committed in steps that move the staged rows a chunk per transaction into a study
//! hidden until the last step — or abandoned, or left to expire. Nothing of an upload is visible
//! as a study before its commit ends; a committed upload is kept (empty) until it expires, so
//! asking to commit it again answers its study. The head is kept as the text the server gives (this module does
//! not read it); the server decodes it again at the commit and hands over the [`StudyHead`].

use bo_core::{StudySpec, Trial};
use sqlx::{AnyConnection, Row};

use crate::Store;
use crate::apart::Apart;
use crate::error::{Entity, StoreError};
use crate::transfer::{StudyHead, insert_model, insert_study};

/// Staged trials moved into the study per transaction of a commit.
pub const COMMIT_CHUNK: i64 = 2000;

/// Trials an import moves at the least for Postgres's statistics to be brought up to date after it.
const ANALYZE_AFTER: i64 = 10_000;

/// The location of a study an import's commit has begun (its project is `''`: hidden).
const IMPORTING: &str = "importing";

/// An upload in progress.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportRecord {
    /// Its name within its project and location (the server makes it: random, unguessable).
    pub id: String,
    /// The project it imports into.
    pub project: String,
    /// The location it imports into.
    pub location: String,
    /// The study's display name once committed.
    pub display_name: String,
    /// The document's head, as the server wrote it at the opening.
    pub head: String,
    /// Trials staged so far.
    pub trials: i64,
    /// The largest staged trial id (0 before the first): the next part starts above it.
    pub last_trial_id: i64,
    /// When it was opened, milliseconds since the epoch.
    pub create_time_ms: i64,
    /// When it is dropped unless used again, milliseconds since the epoch.
    pub expire_time_ms: i64,
    /// The study its commit has begun (hidden until the commit's last step), if one has.
    pub study_id: Option<i64>,
    /// Staged trials moved into that study so far.
    pub committed_trials: i64,
    /// When the commit's last step showed the study, milliseconds since the epoch.
    pub committed_ms: Option<i64>,
}

impl ImportRecord {
    /// An upload about to be opened (nothing staged, no commit begun).
    pub fn opening(
        id: String,
        project: String,
        location: String,
        display_name: String,
        head: String,
        now_ms: i64,
        expire_time_ms: i64,
    ) -> ImportRecord {
        ImportRecord {
            id,
            project,
            location,
            display_name,
            head,
            trials: 0,
            last_trial_id: 0,
            create_time_ms: now_ms,
            expire_time_ms,
            study_id: None,
            committed_trials: 0,
            committed_ms: None,
        }
    }
}

/// Why an upload cannot open or take a part.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The project already has this many uploads open (in any of its locations).
    #[error(
        "project {project} already has {open} imports in progress (at most {limit}, over all its locations); commit or delete one, or wait for it to expire"
    )]
    TooMany {
        /// The project.
        project: String,
        /// How many are open.
        open: i64,
        /// The most allowed.
        limit: i64,
    },
    /// A part's first trial id is not above the last one staged.
    #[error(
        "trials[{index}].id: {id} is not above the last trial id already staged, {last}; ids must increase across parts (to resume, send the trials after {last})"
    )]
    OutOfOrder {
        /// The trial's index in the part.
        index: usize,
        /// Its id.
        id: i64,
        /// The last staged.
        last: i64,
    },
    /// The upload's commit has begun: it takes no more trials.
    #[error("the import's commit has begun, so it takes no more trials; to change them, delete it and import again")]
    Committing,
    /// The upload would pass its trial limit.
    #[error("an import holds at most {limit} trials; this part would make {would}")]
    TooLarge {
        /// The limit.
        limit: i64,
        /// What it would hold.
        would: i64,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<sqlx::Error> for ImportError {
    fn from(e: sqlx::Error) -> Self {
        ImportError::Store(e.into())
    }
}

const IMPORT_COLUMNS: &str = "id, project, location, display_name, head, trials, last_trial_id, create_time_ms, expire_time_ms, study_id, committed_trials, committed_ms";

fn import_from_row(row: &sqlx::any::AnyRow) -> Result<ImportRecord, StoreError> {
    Ok(ImportRecord {
        id: row.try_get("id")?,
        project: row.try_get("project")?,
        location: row.try_get("location")?,
        display_name: row.try_get("display_name")?,
        head: row.try_get("head")?,
        trials: row.try_get("trials")?,
        last_trial_id: row.try_get("last_trial_id")?,
        create_time_ms: row.try_get("create_time_ms")?,
        expire_time_ms: row.try_get("expire_time_ms")?,
        study_id: row.try_get("study_id")?,
        committed_trials: row.try_get("committed_trials")?,
        committed_ms: row.try_get("committed_ms")?,
    })
}

impl Store {
    /// Opens an upload (dropping every expired one first). At most `max_open` are open per
    /// project, whatever their locations (a location is any name a caller invents); committed
    /// ones do not count.
    pub async fn open_import(&self, record: &ImportRecord, max_open: i64) -> Result<ImportRecord, ImportError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        drop_expired(&mut tx, record.create_time_ms).await?;
        let open: i64 = sqlx::query("SELECT COUNT(*) AS n FROM imports WHERE project = $1 AND committed_ms IS NULL")
            .bind(&record.project)
            .fetch_one(&mut *tx)
            .await?
            .try_get("n")?;
        if open >= max_open {
            return Err(ImportError::TooMany { project: record.project.clone(), open, limit: max_open });
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO imports (id, project, location, display_name, head, trials, last_trial_id, create_time_ms, expire_time_ms) \
             VALUES ($1, $2, $3, $4, $5, 0, 0, $6, $7) RETURNING {IMPORT_COLUMNS}"
        )))
        .bind(&record.id)
        .bind(&record.project)
        .bind(&record.location)
        .bind(&record.display_name)
        .bind(&record.head)
        .bind(record.create_time_ms)
        .bind(record.expire_time_ms)
        .fetch_one(&mut *tx)
        .await?;
        let opened = import_from_row(&row)?;
        tx.commit().await?;
        // The hidden studies of expired uploads' begun commits.
        self.finish_deletes().await?;
        Ok(opened)
    }

    /// The upload `id` of `project`/`location`, unless it has expired by `now_ms`.
    pub async fn get_import(&self, project: &str, location: &str, id: &str, now_ms: i64) -> Result<ImportRecord, StoreError> {
        let mut conn = self.pool.acquire().await?;
        find(&mut conn, project, location, id, now_ms).await
    }

    /// Stages `trials` (checked by the server against `spec`) in the upload, which then
    /// expires at `expire_time_ms`; all of them or none. Their ids must increase, from above
    /// the last staged; the upload holds at most `max_trials`.
    #[allow(clippy::too_many_arguments)]
    pub async fn stage_import_trials(
        &self,
        project: &str,
        location: &str,
        id: &str,
        spec: &StudySpec,
        trials: &[Trial],
        now_ms: i64,
        expire_time_ms: i64,
        max_trials: i64,
    ) -> Result<ImportRecord, ImportError> {
        let apart = Apart::of(spec);
        let objective = apart.metric.as_str();
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let upload = find(&mut tx, project, location, id, now_ms).await?;
        if upload.study_id.is_some() {
            return Err(ImportError::Committing);
        }
        let mut last = upload.last_trial_id;
        let would = upload.trials.saturating_add(trials.len() as i64);
        if would > max_trials {
            return Err(ImportError::TooLarge { limit: max_trials, would });
        }
        for (index, trial) in trials.iter().enumerate() {
            if trial.id <= last {
                return Err(ImportError::OutOfOrder { index, id: trial.id, last });
            }
            last = trial.id;
            let final_objective = trial.final_measurement.as_ref().and_then(|m| m.metrics.get(objective).copied());
            sqlx::query(
                "INSERT INTO import_trials (import_id, id, state, parameters, final_measurement, client_id, infeasible_reason, \
                 start_time_ms, end_time_ms, objective, is_unsafe, stopped_ms, resumed_from, resumed_at, space_revision, labels) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $11 = 1 THEN $10 END, $12, $13, $14, CASE WHEN $16 = 1 THEN $15 END, $17, $18)",
            )
            .bind(id)
            .bind(trial.id)
            .bind(trial.state.as_str())
            .bind(serde_json::to_string(&trial.assignment).map_err(StoreError::from)?)
            .bind(trial.final_measurement.as_ref().map(serde_json::to_string).transpose().map_err(StoreError::from)?)
            .bind(&trial.client_id)
            .bind(&trial.infeasible_reason)
            .bind(trial.start_time_ms)
            .bind(trial.end_time_ms)
            .bind(final_objective.unwrap_or(0.0))
            .bind(i64::from(final_objective.is_some()))
            .bind(i64::from(apart.is_unsafe(trial)))
            .bind(trial.stop_time_ms)
            .bind(trial.resumed.map(|r| r.from))
            .bind(trial.resumed.map_or(0.0, |r| r.at))
            .bind(i64::from(trial.resumed.is_some()))
            .bind(trial.space_revision)
            .bind(crate::trials::labels_json(trial)?)
            .execute(&mut *tx)
            .await?;
            for (seq, m) in trial.measurements.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO import_measurements (import_id, trial_id, seq, step_count, elapsed_secs, metrics, objective) \
                     VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $8 = 1 THEN $7 END)",
                )
                .bind(id)
                .bind(trial.id)
                .bind(seq as i64)
                .bind(m.step_count)
                .bind(m.elapsed_secs)
                .bind(serde_json::to_string(&m.metrics).map_err(StoreError::from)?)
                .bind(m.metrics.get(objective).copied().unwrap_or(0.0))
                .bind(i64::from(m.metrics.contains_key(objective)))
                .execute(&mut *tx)
                .await?;
            }
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE imports SET trials = $1, last_trial_id = $2, expire_time_ms = $3 WHERE id = $4 RETURNING {IMPORT_COLUMNS}"
        )))
        .bind(would)
        .bind(last)
        .bind(expire_time_ms)
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        let staged = import_from_row(&row)?;
        tx.commit().await?;
        Ok(staged)
    }

    /// Creates the upload's study from `head` (decoded by the server from the upload's head) as
    /// the next study of its project and location, moves its staged trials in, and marks the
    /// upload committed, kept until `keep_until_ms` at least. Done in steps, so no other write
    /// waits for all of it: the study is created hidden (project `''`, which no request names),
    /// the staged trials move into it [`COMMIT_CHUNK`] per transaction (each step takes them out
    /// of the upload, so a commit cut short resumes where it stopped), and the last step names
    /// and numbers it in its location — the study is seen whole or not at all. A study of its
    /// name already there is `AlreadyExists` and the upload stays. An upload already committed
    /// answers its study (`NotFound` once that is deleted).
    pub async fn commit_import(
        &self,
        upload: &ImportRecord,
        head: &StudyHead,
        now_ms: i64,
        keep_until_ms: i64,
    ) -> Result<crate::StudyRecord, StoreError> {
        let study_id = self.hidden_import_study(upload, head, now_ms).await?;
        while self.move_import_chunk(&upload.id, study_id, now_ms).await? == COMMIT_CHUNK {}
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let found = find(&mut tx, &upload.project, &upload.location, &upload.id, now_ms).await?;
        if found.committed_ms.is_some() {
            // Another request's commit (on this replica or another) ended first.
            drop(tx);
            return self.study_by_id(study_id).await;
        }
        let number = crate::studies::take_study_number(&mut tx, &found.project, &found.location).await?;
        let next_trial_id = head.next_trial_id.max(found.last_trial_id.saturating_add(1));
        let shown =
            sqlx::query("UPDATE studies SET project = $1, location = $2, display_name = $3, number = $4, next_trial_id = $5 WHERE id = $6")
                .bind(&found.project)
                .bind(&found.location)
                .bind(&found.display_name)
                .bind(number)
                .bind(next_trial_id)
                .bind(study_id)
                .execute(&mut *tx)
                .await;
        match shown {
            Err(e) if crate::error::is_unique_violation(&e) => {
                return Err(StoreError::AlreadyExists(format!(
                    "{}/{} already has a study named {:?}; import it under another name",
                    found.project, found.location, found.display_name
                )));
            }
            other => other?,
        };
        insert_model(&mut tx, study_id, head.model.as_ref()).await?;
        sqlx::query("UPDATE imports SET committed_ms = $1, expire_time_ms = $2 WHERE id = $3")
            .bind(now_ms)
            .bind(found.expire_time_ms.max(keep_until_ms))
            .bind(&found.id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        if self.backend == crate::Backend::Postgres && found.trials >= ANALYZE_AFTER {
            // Postgres plans by statistics that do not know of the rows just moved until
            // autovacuum gets to them; until then a page of the new study's trials was read
            // through a bitmap of all of them (half a second a page at 2,000,000).
            for table in ["trials", "measurements"] {
                sqlx::query(sqlx::AssertSqlSafe(format!("ANALYZE {table}"))).execute(&self.pool).await?;
            }
        }
        self.study_by_id(study_id).await
    }

    /// The upload's hidden study: the one an earlier commit began, or a new one.
    async fn hidden_import_study(&self, upload: &ImportRecord, head: &StudyHead, now_ms: i64) -> Result<i64, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        // The upload's row locked first: two commits of one upload take their steps in turn.
        let begun: Option<i64> =
            sqlx::query("UPDATE imports SET expire_time_ms = expire_time_ms WHERE id = $1 AND expire_time_ms > $2 RETURNING study_id")
                .bind(&upload.id)
                .bind(now_ms)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound(Entity::Import))?
                .try_get("study_id")?;
        if let Some(id) = begun {
            return Ok(id);
        }
        let study = insert_study(&mut tx, "", IMPORTING, &format!("importing-{}", upload.id), head).await?;
        sqlx::query("UPDATE imports SET study_id = $1 WHERE id = $2").bind(study.id).bind(&upload.id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(study.id)
    }

    /// Moves the upload's next [`COMMIT_CHUNK`] staged trials (by id) and their measurements
    /// into its hidden study, in one transaction; how many moved.
    async fn move_import_chunk(&self, import_id: &str, study_id: i64, now_ms: i64) -> Result<i64, StoreError> {
        let _turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE imports SET expire_time_ms = expire_time_ms WHERE id = $1 AND expire_time_ms > $2 RETURNING id")
            .bind(import_id)
            .bind(now_ms)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound(Entity::Import))?;
        // Where the last step stopped: the range below it is all dead rows, which an index scan
        // from the start would wade through again at every step (on Postgres, until a vacuum).
        let after: i64 = sqlx::query("SELECT COALESCE(MAX(id), $2) AS after FROM trials WHERE study_id = $1")
            .bind(study_id)
            .bind(i64::MIN)
            .fetch_one(&mut *tx)
            .await?
            .try_get("after")?;
        let through: Option<i64> = sqlx::query(
            "SELECT MAX(id) AS through FROM (SELECT id FROM import_trials WHERE import_id = $1 AND id > $2 ORDER BY id LIMIT $3) AS chunk",
        )
        .bind(import_id)
        .bind(after)
        .bind(COMMIT_CHUNK)
        .fetch_one(&mut *tx)
        .await?
        .try_get("through")?;
        let Some(through) = through else {
            return Ok(0);
        };
        let moved = sqlx::query(
            "INSERT INTO trials (study_id, id, state, parameters, final_measurement, client_id, infeasible_reason, start_time_ms, \
             end_time_ms, objective, is_unsafe, stopped_ms, resumed_from, resumed_at, space_revision, labels, change_seq) \
             SELECT $1, id, state, parameters, final_measurement, client_id, infeasible_reason, start_time_ms, end_time_ms, objective, \
             is_unsafe, stopped_ms, resumed_from, resumed_at, space_revision, labels, (SELECT change_seq FROM studies WHERE id = $1) FROM import_trials \
             WHERE import_id = $2 AND id > $4 AND id <= $3",
        )
        .bind(study_id)
        .bind(import_id)
        .bind(through)
        .bind(after)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query(
            "INSERT INTO measurements (study_id, trial_id, seq, step_count, elapsed_secs, metrics, objective) \
             SELECT $1, trial_id, seq, step_count, elapsed_secs, metrics, objective FROM import_measurements \
             WHERE import_id = $2 AND trial_id > $4 AND trial_id <= $3",
        )
        .bind(study_id)
        .bind(import_id)
        .bind(through)
        .bind(after)
        .execute(&mut *tx)
        .await?;
        for table in [
            "import_measurements WHERE import_id = $1 AND trial_id > $3 AND trial_id <= $2",
            "import_trials WHERE import_id = $1 AND id > $3 AND id <= $2",
        ] {
            sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table}")))
                .bind(import_id)
                .bind(through)
                .bind(after)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("UPDATE imports SET committed_trials = committed_trials + $1 WHERE id = $2")
            .bind(moved as i64)
            .bind(import_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(moved as i64)
    }

    /// Abandons the upload `id`, its staged trials with it (a committed one's study stays).
    pub async fn delete_import(&self, project: &str, location: &str, id: &str, now_ms: i64) -> Result<(), StoreError> {
        {
            let _turn = self.write_turn().await;
            let mut tx = self.pool.begin().await?;
            find(&mut tx, project, location, id, now_ms).await?;
            drop_one(&mut tx, id).await?;
            tx.commit().await?;
        }
        self.finish_deletes().await.map(|_| ())
    }
}

async fn find(conn: &mut AnyConnection, project: &str, location: &str, id: &str, now_ms: i64) -> Result<ImportRecord, StoreError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {IMPORT_COLUMNS} FROM imports WHERE id = $1 AND project = $2 AND location = $3 AND expire_time_ms > $4"
    )))
    .bind(id)
    .bind(project)
    .bind(location)
    .bind(now_ms)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound(Entity::Import))?;
    import_from_row(&row)
}

/// Drops one upload's rows (children first: SQLite enforces foreign keys only when asked); a
/// hidden study a commit had begun is marked deleted ([`Store::finish_deletes`] removes it).
async fn drop_one(conn: &mut AnyConnection, id: &str) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE studies SET location = 'deleted', display_name = 'deleted-' || id, number = -id \
         WHERE project = '' AND location = $2 AND id = (SELECT study_id FROM imports WHERE id = $1)",
    )
    .bind(id)
    .bind(IMPORTING)
    .execute(&mut *conn)
    .await?;
    for table in ["import_measurements", "import_trials"] {
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table} WHERE import_id = $1"))).bind(id).execute(&mut *conn).await?;
    }
    sqlx::query("DELETE FROM imports WHERE id = $1").bind(id).execute(&mut *conn).await?;
    Ok(())
}

async fn drop_expired(conn: &mut AnyConnection, now_ms: i64) -> Result<(), StoreError> {
    let expired: Vec<String> = sqlx::query("SELECT id FROM imports WHERE expire_time_ms <= $1")
        .bind(now_ms)
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|row| row.try_get("id"))
        .collect::<Result<_, _>>()?;
    for id in expired {
        drop_one(conn, &id).await?;
    }
    Ok(())
}
