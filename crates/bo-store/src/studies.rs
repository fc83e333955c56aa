//! Studies: create (idempotent by display name), read, look up, list, delete, change state.

use bo_core::{MetricSpec, StudySpec};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Store;
use crate::error::{Entity, StoreError, is_unique_violation};

/// A study's life state (Vertex `Study.State`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StudyState {
    /// Taking suggestions.
    Active,
    /// Paused.
    Inactive,
    /// Done: its search space is exhausted.
    Completed,
}

impl StudyState {
    /// The stored (and Vertex) name.
    pub fn as_str(self) -> &'static str {
        match self {
            StudyState::Active => "ACTIVE",
            StudyState::Inactive => "INACTIVE",
            StudyState::Completed => "COMPLETED",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<StudyState, StoreError> {
        match s {
            "ACTIVE" => Ok(StudyState::Active),
            "INACTIVE" => Ok(StudyState::Inactive),
            "COMPLETED" => Ok(StudyState::Completed),
            other => Err(StoreError::Internal(format!("unknown stored study state {other:?}"))),
        }
    }
}

/// How the service runs a study, kept beside its spec: the service's settings, not the domain's
/// (no designer sees them). On the wire they are keys of `algorithmConfig` (`trialLease`,
/// `reproducible`); each `None` means the server's own setting.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StudySettings {
    /// Seconds an ACTIVE trial's client may go unseen before the trial is handed to another
    /// client; 0: never.
    pub trial_lease_secs: Option<f64>,
    /// Whether suggestions must depend only on the study's data, its seed and the order of calls
    /// — never on timing.
    pub reproducible: Option<bool>,
    /// The seed of its random choices; `None`: one from its number and display name.
    pub seed: Option<i64>,
}

/// A stored study.
#[derive(Clone, Debug, PartialEq)]
pub struct StudyRecord {
    /// Its key in the database (what trials, operations and models refer to): never shown.
    pub id: i64,
    /// Its number within its project and location: what its name shows.
    pub number: i64,
    /// The project (tenant) that owns it.
    pub project: String,
    /// Its location, free text.
    pub location: String,
    /// Unique within the project and location.
    pub display_name: String,
    /// Its configuration.
    pub spec: StudySpec,
    /// How the service runs it.
    pub settings: StudySettings,
    /// Its state.
    pub state: StudyState,
    /// Why it is not active, if it is not.
    pub inactive_reason: String,
    /// Creation time, milliseconds since the epoch.
    pub create_time_ms: i64,
    /// Bumped whenever one of its trials completes.
    pub data_version: i64,
}

/// Rows of a study deleted per transaction ([`Store::delete_study`]).
pub const DELETE_CHUNK: i64 = 1000;

pub(crate) const STUDY_COLUMNS: &str = "id, number, project, location, display_name, spec, trial_lease_secs, reproducible, seed, state, inactive_reason, create_time_ms, data_version";

/// A new study's row: the one place that knows what a study's columns hold — its spec as JSON,
/// what a page of studies reads beside it (the objective, the safety metrics, the spec's size,
/// the algorithm and the metrics), its settings, state, times and next trial id.
pub(crate) struct NewStudyRow<'a> {
    pub project: &'a str,
    pub location: &'a str,
    pub display_name: &'a str,
    pub spec: &'a StudySpec,
    pub settings: StudySettings,
    pub state: StudyState,
    pub inactive_reason: &'a str,
    pub create_time_ms: i64,
    pub data_version: i64,
    pub next_trial_id: i64,
}

impl NewStudyRow<'_> {
    /// Inserts the row numbered `number` in `conn`'s transaction and reads it back; `None` when
    /// the project and location already have a study of this display name (the transaction is
    /// then spoilt on Postgres: roll it back).
    pub(crate) async fn insert(&self, conn: &mut sqlx::AnyConnection, number: i64) -> Result<Option<AnyRow>, StoreError> {
        let spec = self.spec;
        let spec_json = serde_json::to_string(spec)?;
        let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO studies (project, location, display_name, spec, state, inactive_reason, create_time_ms, number, objective_metric, \
             next_trial_id, data_version, safety_metrics, spec_bytes, algorithm, metrics, trial_lease_secs, reproducible, space_revision, seed) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, CASE WHEN $17 = 1 THEN $16 END, $18, $19, \
             CASE WHEN $21 = 1 THEN $20 END) \
             RETURNING {STUDY_COLUMNS}"
        )))
        .bind(self.project)
        .bind(self.location)
        .bind(self.display_name)
        .bind(&spec_json)
        .bind(self.state.as_str())
        .bind(self.inactive_reason)
        .bind(self.create_time_ms)
        .bind(number)
        .bind(&spec.objective().id)
        .bind(self.next_trial_id)
        .bind(self.data_version)
        .bind(crate::apart::Apart::safety_json(spec)?)
        .bind(spec_json.len() as i64)
        .bind(&spec.algorithm)
        .bind(serde_json::to_string(&spec.metrics)?)
        // A nullable float as a value and a flag (see `trials.rs`: a NULL would fix the prepared
        // statement's parameter type as an integer on Postgres).
        .bind(self.settings.trial_lease_secs.unwrap_or(0.0))
        .bind(i64::from(self.settings.trial_lease_secs.is_some()))
        .bind(self.settings.reproducible.map(i64::from))
        .bind(spec.space_revision)
        .bind(self.settings.seed.unwrap_or(0))
        .bind(i64::from(self.settings.seed.is_some()))
        .fetch_one(&mut *conn)
        .await;
        match inserted {
            Ok(row) => Ok(Some(row)),
            Err(e) if is_unique_violation(&e) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// Takes the next study number of `project`/`location` in `conn`'s transaction (rolled back with
/// it, the number is not used up).
pub(crate) async fn take_study_number(conn: &mut sqlx::AnyConnection, project: &str, location: &str) -> Result<i64, sqlx::Error> {
    let row = sqlx::query(
        "INSERT INTO locations (project, location, next_study) VALUES ($1, $2, 2) \
         ON CONFLICT (project, location) DO UPDATE SET next_study = locations.next_study + 1 RETURNING next_study - 1 AS n",
    )
    .bind(project)
    .bind(location)
    .fetch_one(&mut *conn)
    .await?;
    row.try_get("n")
}

pub(crate) fn study_from_row(row: &AnyRow) -> Result<StudyRecord, StoreError> {
    RawStudy::from_row(row)?.decode()
}

/// The study of `row`, if there is one, its spec parsed off the runtime when it is large (a
/// spec may be a megabyte, read on every request that names the study).
async fn one_study(row: Option<AnyRow>) -> Result<StudyRecord, StoreError> {
    let raw = row.as_ref().map(RawStudy::from_row).transpose()?.ok_or(StoreError::NotFound(Entity::Study))?;
    decode_off_runtime(raw.spec.len() as i64, move || raw.decode()).await
}

/// A study row as read, its spec not yet parsed: a page of studies may hold megabytes of specs,
/// which are parsed off the runtime.
struct RawStudy {
    id: i64,
    number: i64,
    project: String,
    location: String,
    display_name: String,
    spec: String,
    settings: StudySettings,
    state: String,
    inactive_reason: String,
    create_time_ms: i64,
    data_version: i64,
}

/// The study's settings of `row` (`reproducible` is stored as 0 or 1: SQLite has no boolean).
fn settings_from_row(row: &AnyRow) -> Result<StudySettings, StoreError> {
    let reproducible: Option<i64> = row.try_get("reproducible")?;
    Ok(StudySettings {
        trial_lease_secs: row.try_get("trial_lease_secs")?,
        reproducible: reproducible.map(|r| r != 0),
        seed: row.try_get("seed")?,
    })
}

impl RawStudy {
    fn from_row(row: &AnyRow) -> Result<RawStudy, StoreError> {
        Ok(RawStudy {
            id: row.try_get("id")?,
            number: row.try_get("number")?,
            project: row.try_get("project")?,
            location: row.try_get("location")?,
            display_name: row.try_get("display_name")?,
            spec: row.try_get("spec")?,
            settings: settings_from_row(row)?,
            state: row.try_get("state")?,
            inactive_reason: row.try_get("inactive_reason")?,
            create_time_ms: row.try_get("create_time_ms")?,
            data_version: row.try_get("data_version")?,
        })
    }

    fn decode(self) -> Result<StudyRecord, StoreError> {
        Ok(StudyRecord {
            id: self.id,
            number: self.number,
            project: self.project,
            location: self.location,
            display_name: self.display_name,
            spec: serde_json::from_str(&self.spec)?,
            settings: self.settings,
            state: StudyState::parse(&self.state)?,
            inactive_reason: self.inactive_reason,
            create_time_ms: self.create_time_ms,
            data_version: self.data_version,
        })
    }
}

/// What a list of studies shows of each: everything of its record but the search space and the
/// algorithm's settings — kept in the study's row beside its spec when it is written — so a page
/// of it is small whatever its studies' specs hold.
#[derive(Clone, Debug, PartialEq)]
pub struct StudySummary {
    /// Its key in the database.
    pub id: i64,
    /// Its number within its project and location.
    pub number: i64,
    /// Its project.
    pub project: String,
    /// Its location.
    pub location: String,
    /// Its display name.
    pub display_name: String,
    /// Its algorithm.
    pub algorithm: String,
    /// Its metrics, in the spec's order.
    pub metrics: Vec<MetricSpec>,
    /// Its state.
    pub state: StudyState,
    /// Why it is not active, if it is not.
    pub inactive_reason: String,
    /// Creation time, milliseconds since the epoch.
    pub create_time_ms: i64,
}

impl StudySummary {
    /// Its objective: the first metric without a safety constraint (as [`StudySpec::objective`]).
    pub fn objective(&self) -> Option<&MetricSpec> {
        self.metrics.iter().find(|m| m.safety.is_none()).or(self.metrics.first())
    }
}

/// Specs of a page up to this many bytes in all are parsed on the runtime; beyond it on a
/// blocking thread.
const DECODE_INLINE_BYTES: i64 = 64 << 10;

/// Runs `work` (decoding `bytes` of stored text) where it belongs: inline when small, else on a
/// blocking thread.
pub(crate) async fn decode_off_runtime<T: Send + 'static>(
    bytes: i64,
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    if bytes <= DECODE_INLINE_BYTES {
        return work();
    }
    tokio::task::spawn_blocking(work).await.map_err(|e| StoreError::Internal(format!("decoding stored rows panicked: {e}")))?
}

impl Store {
    /// Creates a study, or returns the existing one with the same display name if its spec and
    /// settings are the same (`created == false`); a different request under that name is
    /// `AlreadyExists`. A new study takes the next number of its project and location.
    pub async fn create_study(
        &self,
        project: &str,
        location: &str,
        display_name: &str,
        spec: &StudySpec,
        settings: StudySettings,
        now_ms: i64,
    ) -> Result<(StudyRecord, bool), StoreError> {
        let inserted = {
            let _turn = self.write_turn().await;
            let mut tx = self.pool.begin().await?;
            let number = take_study_number(&mut tx, project, location).await?;
            let new = NewStudyRow {
                project,
                location,
                display_name,
                spec,
                settings,
                state: StudyState::Active,
                inactive_reason: "",
                create_time_ms: now_ms,
                data_version: 0,
                next_trial_id: 1,
            };
            let inserted = new.insert(&mut tx, number).await?;
            if inserted.is_some() {
                tx.commit().await?;
            } // else rolled back as `tx` drops: the number is not used up
            inserted
        };
        match inserted {
            Some(row) => Ok((study_from_row(&row)?, true)),
            None => {
                let existing = self.lookup_study(project, location, display_name).await?;
                if existing.spec.same_request(spec) && existing.settings == settings {
                    Ok((existing, false))
                } else {
                    Err(StoreError::AlreadyExists(format!(
                        "a study named {display_name:?} already exists with a different studySpec (study {})",
                        existing.number
                    )))
                }
            }
        }
    }

    /// The study numbered `number` in `project`/`location`.
    pub async fn get_study(&self, project: &str, location: &str, number: i64) -> Result<StudyRecord, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {STUDY_COLUMNS} FROM studies WHERE number = $1 AND project = $2 AND location = $3"
        )))
        .bind(number)
        .bind(project)
        .bind(location)
        .fetch_optional(&self.pool)
        .await?;
        one_study(row).await
    }

    /// The study `id`, whatever its project (for the server's own bookkeeping, never a request);
    /// one being deleted is `NotFound`.
    pub async fn study_by_id(&self, id: i64) -> Result<StudyRecord, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {STUDY_COLUMNS} FROM studies WHERE id = $1 AND project <> ''")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        one_study(row).await
    }

    /// The study named `display_name`.
    pub async fn lookup_study(&self, project: &str, location: &str, display_name: &str) -> Result<StudyRecord, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {STUDY_COLUMNS} FROM studies WHERE project = $1 AND location = $2 AND display_name = $3"
        )))
        .bind(project)
        .bind(location)
        .bind(display_name)
        .fetch_optional(&self.pool)
        .await?;
        one_study(row).await
    }

    /// Up to `limit` studies numbered above `after`, in number order, whole — fewer when their
    /// stored specs pass `max_bytes`: the first always, then each that keeps the page within the
    /// budget. The sizes are read before any spec, so a page never costs more than its budget;
    /// the flag says whether the budget cut the page short (more studies follow).
    pub async fn list_studies(
        &self,
        project: &str,
        location: &str,
        after: i64,
        limit: i64,
        max_bytes: usize,
    ) -> Result<(Vec<StudyRecord>, bool), StoreError> {
        let (raw, bytes, cut) = self.study_page(project, location, after, limit, max_bytes).await?;
        let studies = decode_off_runtime(bytes, move || raw.into_iter().map(RawStudy::decode).collect()).await?;
        Ok((studies, cut))
    }

    /// Up to `limit` studies numbered above `after`, in number order, each summarised
    /// ([`StudySummary`]) from what its row keeps beside its spec: no spec is read, so a page
    /// costs a few KB a study whatever the specs hold.
    pub async fn list_study_summaries(
        &self,
        project: &str,
        location: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StudySummary>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, number, project, location, display_name, algorithm, metrics, state, inactive_reason, create_time_ms \
             FROM studies WHERE project = $1 AND location = $2 AND number > $3 ORDER BY number LIMIT $4",
        )
        .bind(project)
        .bind(location)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let metrics: String = row.try_get("metrics")?;
                let state: String = row.try_get("state")?;
                Ok(StudySummary {
                    id: row.try_get("id")?,
                    number: row.try_get("number")?,
                    project: row.try_get("project")?,
                    location: row.try_get("location")?,
                    display_name: row.try_get("display_name")?,
                    algorithm: row.try_get("algorithm")?,
                    metrics: serde_json::from_str(&metrics)?,
                    state: StudyState::parse(&state)?,
                    inactive_reason: row.try_get("inactive_reason")?,
                    create_time_ms: row.try_get("create_time_ms")?,
                })
            })
            .collect()
    }

    /// The rows of a page of studies (see [`Store::list_studies`]), the bytes of their specs and
    /// whether the budget cut the page. Numbers are taken in the transaction that writes the
    /// study (one writer of a location at a time), so no study numbered at most the page's last
    /// can appear between the two reads.
    async fn study_page(
        &self,
        project: &str,
        location: &str,
        after: i64,
        limit: i64,
        max_bytes: usize,
    ) -> Result<(Vec<RawStudy>, i64, bool), StoreError> {
        let mut conn = self.pool.acquire().await?;
        let sizes = sqlx::query(
            "SELECT number, spec_bytes FROM studies WHERE project = $1 AND location = $2 AND number > $3 ORDER BY number LIMIT $4",
        )
        .bind(project)
        .bind(location)
        .bind(after)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
        let budget = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        let (mut total, mut last, mut kept) = (0i64, None, 0usize);
        for row in &sizes {
            let bytes: i64 = row.try_get("spec_bytes")?;
            if last.is_some() && total.saturating_add(bytes) > budget {
                break;
            }
            total = total.saturating_add(bytes);
            last = Some(row.try_get::<i64, _>("number")?);
            kept += 1;
        }
        let Some(last) = last else { return Ok((vec![], 0, false)) };
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {STUDY_COLUMNS} FROM studies WHERE project = $1 AND location = $2 AND number > $3 AND number <= $4 ORDER BY number"
        )))
        .bind(project)
        .bind(location)
        .bind(after)
        .bind(last)
        .fetch_all(&mut *conn)
        .await?;
        let raw = rows.iter().map(RawStudy::from_row).collect::<Result<Vec<_>, _>>()?;
        Ok((raw, total, kept < sizes.len()))
    }

    /// The projects and locations that hold studies, with how many, in name order, at most
    /// `limit`; only `projects` when given.
    pub async fn locations(&self, projects: Option<&[String]>, limit: i64) -> Result<Vec<(String, String, i64)>, StoreError> {
        // A study being deleted has an empty project: it is in no location.
        let filter = match projects {
            Some([]) => return Ok(vec![]),
            Some(names) => format!("WHERE project IN ({})", (0..names.len()).map(|k| format!("${}", k + 2)).collect::<Vec<_>>().join(", ")),
            None => "WHERE project <> ''".to_owned(),
        };
        let sql = format!(
            "SELECT project, location, COUNT(*) AS n FROM studies {filter} GROUP BY project, location ORDER BY project, location LIMIT $1"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(limit);
        for name in projects.unwrap_or_default() {
            query = query.bind(name);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(|r| Ok((r.try_get("project")?, r.try_get("location")?, r.try_get("n")?))).collect()
    }

    /// Deletes the study `id` (its key) with its trials, measurements and operations.
    ///
    /// A study of millions of trials takes seconds to delete, so it is done in steps that give
    /// the write gate back between them: one statement hides the study (its project becomes
    /// empty, which no request names, and its name is free again), then its operations and
    /// trials go [`DELETE_CHUNK`] rows per transaction, then the study row. A delete a stopped
    /// server left part way is finished by [`Store::finish_deletes`].
    pub async fn delete_study(&self, id: i64) -> Result<(), StoreError> {
        let hidden = {
            let _turn = self.write_turn().await;
            sqlx::query(
                "UPDATE studies SET project = '', location = 'deleted', display_name = $2, number = -id WHERE id = $1 AND project <> ''",
            )
            .bind(id)
            .bind(format!("deleted-{id}"))
            .execute(&self.pool)
            .await?
        };
        if hidden.rows_affected() == 0 {
            return Err(StoreError::NotFound(Entity::Study));
        }
        self.finish_delete(id).await
    }

    /// Deletes a hidden study's rows a chunk per transaction, then the study.
    async fn finish_delete(&self, id: i64) -> Result<(), StoreError> {
        for table in ["operations", "trials"] {
            // Each step starts past the last one's rows: an index scan from the study's first id
            // would wade through every row deleted so far (on Postgres, dead until a vacuum).
            let mut after = i64::MIN;
            loop {
                let _turn = self.write_turn().await;
                let gone: Vec<i64> = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DELETE FROM {table} WHERE study_id = $1 AND id IN \
                     (SELECT id FROM {table} WHERE study_id = $1 AND id > $3 ORDER BY id LIMIT $2) RETURNING id"
                )))
                .bind(id)
                .bind(DELETE_CHUNK)
                .bind(after)
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| row.try_get("id"))
                .collect::<Result<_, _>>()?;
                after = gone.iter().copied().max().unwrap_or(after);
                if gone.len() < DELETE_CHUNK as usize {
                    break;
                }
            }
        }
        let _turn = self.write_turn().await;
        sqlx::query("DELETE FROM studies WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(())
    }

    /// Finishes the deletes a stopped server left part way (studies hidden, rows left); how
    /// many. Run at startup.
    pub async fn finish_deletes(&self) -> Result<usize, StoreError> {
        let ids: Vec<i64> = sqlx::query("SELECT id FROM studies WHERE project = '' AND location = 'deleted'")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| row.try_get("id"))
            .collect::<Result<_, _>>()?;
        for &id in &ids {
            self.finish_delete(id).await?;
        }
        Ok(ids.len())
    }

    /// Replaces an open study's spec by `grown`, one revision past `from_revision`, if the study
    /// is still at that revision: one statement compares and sets the stored revision, so of two
    /// workers growing the same revision one succeeds and the other reads the study again
    /// (`false`). Moves the data version on: what the model learns from changed, and every
    /// fitted state and queued proposal of the old space is out of date.
    pub async fn grow_space(&self, id: i64, from_revision: i64, grown: &StudySpec) -> Result<bool, StoreError> {
        debug_assert_eq!(grown.space_revision, from_revision + 1);
        let spec_json = serde_json::to_string(grown)?;
        let _turn = self.write_turn().await;
        let done = sqlx::query(
            "UPDATE studies SET spec = $1, spec_bytes = $2, space_revision = $3, data_version = data_version + 1 \
             WHERE id = $4 AND space_revision = $5",
        )
        .bind(&spec_json)
        .bind(spec_json.len() as i64)
        .bind(grown.space_revision)
        .bind(id)
        .bind(from_revision)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(true);
        }
        // Gone, or grown by another worker first.
        self.study_by_id(id).await.map(|_| false)
    }

    /// Completes the study `id` with `reason`, unless it is COMPLETED already (it keeps its first
    /// reason then). A suggest in flight finishes first (it holds the study's row) and the next
    /// one hands out nothing.
    pub async fn complete_study(&self, id: i64, reason: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE studies SET state = 'COMPLETED', inactive_reason = $1 WHERE id = $2 AND state <> 'COMPLETED'")
            .bind(reason)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
