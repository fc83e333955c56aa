//! bo-store: persistence of studies, trials, measurements and operations, on SQLite (a file, the
//! embedded default) or Postgres, through one code path.
//!
//! Invariants: no HTTP and no Vertex JSON here; only `bo-core`'s data types (`StudySpec`,
//! `Trial`, `Assignment`, `Measurement`) cross the boundary. Every change that reads before it
//! writes runs in one transaction whose first statement writes the study row, which takes the
//! study's write lock on both databases — so two suggests never hand out the same trial and
//! trial ids are never given twice. Time comes in as milliseconds from the caller.
//!
//! The schema is relational (a row per study, trial, measurement and operation), with JSON text
//! only for values whose shape belongs to bo-core (a spec, an assignment, a measurement's
//! metrics). Only integer, float and text columns are used, which is what lets one `sqlx::Any`
//! pool serve both databases; the dialects differ only in their migration folders.

mod apart;
mod changes;
mod curves;
mod error;
mod history;
mod imports;
mod lock;
mod models;
mod operations;
mod overview;
mod priors;
mod snapshots;
mod stopping;
mod studies;
mod suggest;
pub mod testing;
mod transfer;
mod trials;

use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor, Row};

pub use changes::{Cursor, TrialChanges};
pub use curves::{CURVE_POINTS_EACH, Curve, CurveMetric, CurvePoint, Curves};
pub use error::{Entity, StoreError};
pub use history::HistoryBucket;
pub use imports::{COMMIT_CHUNK, ImportError, ImportRecord};
pub use lock::Basis;
pub use models::StoredModel;
pub use operations::{Operation, OperationKind};
pub use overview::StudyOverview;
pub use snapshots::TrialSnapshot;
pub use studies::{DELETE_CHUNK, StudyRecord, StudySettings, StudyState, StudySummary};
pub use suggest::{Opened, SuggestOutcome, SuggestRequest, SuggestTx};
pub use transfer::{StudyDump, StudyHead};
pub use trials::{Load, NewTrial};

/// Which database a store talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file.
    Sqlite,
    /// A Postgres server.
    Postgres,
}

/// How long an SQLite writer waits for another's lock before giving up.
const SQLITE_BUSY_TIMEOUT_MS: u64 = 10_000;

/// SQLite's own checkpoint runs inside the commit that grows the write-ahead log past this many
/// pages (32 MiB of 4 KiB pages), that is under the write gate, where it stalls every writer
/// for as long as the copy and its `fsync` take. [`Store::checkpoint`], called beside serving,
/// does the work long before that; this is only the bound on the log should it fall behind.
/// (SQLite's default is 1,000 pages: a commit of a large import or a step of a large delete then
/// checkpointed under the gate, and another project's write waited 400 ms behind it.)
const SQLITE_AUTOCHECKPOINT_PAGES: u32 = 8192;

/// How to use the database.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Most connections held at once.
    pub max_connections: u32,
    /// How long a request waits for a connection before the database counts as unavailable.
    pub acquire_timeout: Duration,
}

/// The handle to the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// SQLite only: write transactions of this process take turns here instead of in SQLite's
    /// busy handler, whose growing sleeps (up to 100 ms each) made the slowest requests under
    /// concurrent writers hundreds of times slower than the median. SQLite's own lock still
    /// keeps the data right; this only orders the waiting.
    write_gate: Option<Arc<tokio::sync::Mutex<()>>>,
    /// SQLite: the database file (for the free space on its filesystem).
    file: Option<std::path::PathBuf>,
}

/// Below this much free space on an SQLite file's filesystem the store is not ready
/// ([`Store::low_on_disk`]): SQLite's write-ahead log alone grows by up to 4 MB between
/// checkpoints, and a write that finds no room fails.
pub const MIN_FREE_BYTES: u64 = 4 << 20;

/// How long a write that failed on a full disk keeps a nearly full disk not ready
/// ([`Store::low_on_disk`]).
pub const DISK_FULL_MEMORY: std::time::Duration = std::time::Duration::from_secs(60);

/// The file of an `sqlite://PATH[?…]` (or `sqlite:PATH`) URL; `None` for another database or
/// SQLite in memory.
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && path != ":memory:").then(|| std::path::PathBuf::from(path))
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

impl Store {
    /// Connects to `url` (`sqlite://path` — the file is created if missing — or
    /// `postgres://…`) and brings its schema up to date.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let (backend, url) = if url.starts_with("sqlite:") {
            let url =
                if url.contains("mode=") { url.to_owned() } else { format!("{url}{}mode=rwc", if url.contains('?') { '&' } else { '?' }) };
            (Backend::Sqlite, url)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            (Backend::Postgres, url.to_owned())
        } else {
            return Err(StoreError::Internal(format!(
                "database URL must start with sqlite:// or postgres://, got {:?}",
                url.split(':').next().unwrap_or_default()
            )));
        };
        let connect_options = url.parse::<AnyConnectOptions>().map_err(|e| StoreError::Internal(format!("bad database URL: {e}")))?;
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // WAL lets readers run beside the writer; the busy timeout makes a second
                        // writer wait instead of failing; foreign keys give ON DELETE CASCADE.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute(sqlx::AssertSqlSafe(format!("PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"))).await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                        conn.execute("PRAGMA synchronous = FULL").await?;
                        conn.execute(sqlx::AssertSqlSafe(format!("PRAGMA wal_autocheckpoint = {SQLITE_AUTOCHECKPOINT_PAGES}"))).await?;
                    }
                    Ok(())
                })
            })
            .after_release(move |conn, _meta| {
                Box::pin(async move {
                    if backend != Backend::Sqlite || !error::SQLITE_DISK_FAILED.load(std::sync::atomic::Ordering::Relaxed) {
                        return Ok(true);
                    }
                    // A failed write (a full disk, an I/O error) can leave an SQLite connection
                    // inside a transaction — holding the write lock, or a read snapshot that no
                    // longer moves — which would refuse every other writer and answer reads
                    // from the past. Such a connection cannot begin a transaction: it is
                    // closed instead of pooled. (A deferred BEGIN and its ROLLBACK touch no file;
                    // checked only once a disk error has happened, off the common path.)
                    match conn.execute("BEGIN").await {
                        Ok(_) => Ok(conn.execute("ROLLBACK").await.is_ok()),
                        Err(_) => Ok(false),
                    }
                })
            })
            .connect_with(connect_options)
            .await?;
        let migrator = match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator.run(&pool).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(e) => StoreError::from(e),
            // A migration this binary does not have was applied: a newer bo wrote the database,
            // and an older one must not write to a schema it does not know.
            sqlx::migrate::MigrateError::VersionMissing(version) => StoreError::Internal(format!(
                "the database was written by a newer bo-server: it has schema migration {version}, and this bo-server knows migrations up to {}; run the newer bo-server (or restore a backup taken before the upgrade)",
                migrator.iter().map(|m| m.version).max().unwrap_or(0)
            )),
            other => StoreError::Internal(format!("migration failed: {other}")),
        })?;
        let write_gate = (backend == Backend::Sqlite).then(|| Arc::new(tokio::sync::Mutex::new(())));
        let file = (backend == Backend::Sqlite).then(|| sqlite_file(&url)).flatten();
        Ok(Store { pool, backend, write_gate, file })
    }

    /// Waits for this process's turn to write (SQLite; nothing to wait for on Postgres, whose
    /// row locks queue writers themselves). Hold the guard until the transaction ends.
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        match &self.write_gate {
            Some(gate) => Some(gate.clone().lock_owned().await),
            None => None,
        }
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The connection pool now: (idle, open, most allowed).
    pub fn pool_usage(&self) -> (usize, usize, usize) {
        (self.pool.num_idle(), self.pool.size() as usize, self.pool.options().get_max_connections() as usize)
    }

    /// SQLite: the bytes free on the database file's filesystem when fewer than
    /// [`MIN_FREE_BYTES`] and a write failed on a full disk within [`DISK_FULL_MEMORY`] (writes
    /// fail until room is made); `None` while there is room or writes still succeed, and for
    /// Postgres (which reports a full disk on the write itself).
    pub fn low_on_disk(&self) -> Option<u64> {
        let dir = self.file.as_ref()?.parent()?;
        let dir = if dir.as_os_str().is_empty() { std::path::Path::new(".") } else { dir };
        let stat = rustix::fs::statvfs(dir).ok()?;
        let free = stat.f_bavail.saturating_mul(stat.f_frsize);
        let failed_at = error::DISK_FULL_AT_MS.load(std::sync::atomic::Ordering::Relaxed);
        let recently = failed_at > 0 && error::now_ms().saturating_sub(failed_at) < DISK_FULL_MEMORY.as_millis() as i64;
        (free < MIN_FREE_BYTES && recently).then_some(free)
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// SQLite: writes a consistent copy of the whole database to `path` while it serves
    /// (`VACUUM INTO`, one read transaction: writers go on, and the copy holds every transaction
    /// committed before it began and none after). The copy is made beside `path` and renamed
    /// onto it, so `path` is never a half-written database; an existing `path` is refused.
    /// Postgres has its own tools (`pg_dump`): refused with a message saying so.
    pub async fn backup_to(&self, path: &std::path::Path) -> Result<(), StoreError> {
        if self.backend != Backend::Sqlite {
            return Err(StoreError::Internal("a Postgres database is backed up with pg_dump (see docs/deploy.md, Backups)".into()));
        }
        if path.exists() {
            return Err(StoreError::Internal(format!("{} exists; the backup does not overwrite a file", path.display())));
        }
        let name = path.file_name().ok_or_else(|| StoreError::Internal(format!("{} names no file", path.display())))?;
        let partial = path.with_file_name(format!(".{}.partial", name.to_string_lossy()));
        let _ = std::fs::remove_file(&partial);
        let target = partial.to_str().ok_or_else(|| StoreError::Internal(format!("{} is not valid UTF-8", partial.display())))?;
        let copied = sqlx::query("VACUUM INTO ?").bind(target).execute(&self.pool).await;
        if let Err(e) = copied {
            let _ = std::fs::remove_file(&partial);
            return Err(e.into());
        }
        std::fs::rename(&partial, path).map_err(|e| StoreError::Internal(format!("renaming the copy to {}: {e}", path.display())))
    }

    /// SQLite: copies what the write-ahead log holds into the database file without waiting for
    /// readers or writers (a passive checkpoint) and without the write gate, so writes go on
    /// meanwhile; the log's pages and how many of them are now in the database file. Call it
    /// every second or so beside serving (see [`SQLITE_AUTOCHECKPOINT_PAGES`]). `None` on
    /// Postgres, which checkpoints itself.
    pub async fn checkpoint(&self) -> Result<Option<(i64, i64)>, StoreError> {
        if self.backend != Backend::Sqlite {
            return Ok(None);
        }
        let row = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").fetch_one(&self.pool).await?;
        Ok(Some((row.try_get(1)?, row.try_get(2)?)))
    }

    /// Closes every connection; waits for those in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
