//! Helpers for tests that run against real databases: a fresh SQLite file or a fresh Postgres
//! schema per test ([`TestDatabase`]), so test runs never collide, removed when the test is done
//! so runs leave nothing behind.
//!
//! Postgres tests run when `BO_TEST_POSTGRES_URL` is set (e.g.
//! `postgres://postgres@127.0.0.1:5432/test`); otherwise they say they were skipped — except
//! under `CI=true`, where a missing or unreachable Postgres fails the test.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::Connection;

/// A name unique to this process and call: `{prefix}_{pid}_{nanos}_{n}`.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{prefix}_{}_{nanos}_{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Whether this run must not skip the Postgres tests.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A fresh database for one test: an SQLite file in the system's temporary folder, or a schema
/// of its own on the test Postgres. Dropping it removes the file (with its `-wal` and `-shm`) or
/// drops the schema; hold it for as long as anything uses [`url`](Self::url).
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
    cleanup: Cleanup,
}

#[derive(Debug)]
enum Cleanup {
    SqliteFile(PathBuf),
    PostgresSchema { base: String, schema: String },
}

impl TestDatabase {
    /// A new SQLite file (created by the first connection).
    pub fn sqlite() -> TestDatabase {
        let path = std::env::temp_dir().join(format!("{}.db", unique_name("bo_test")));
        TestDatabase { url: format!("sqlite://{}", path.display()), cleanup: Cleanup::SqliteFile(path) }
    }

    /// A new, empty schema on the test Postgres, or `None` (after saying so) when no Postgres is
    /// configured outside CI. Panics under CI when Postgres is missing or unreachable.
    pub async fn postgres(test: &str) -> Option<TestDatabase> {
        let Ok(base) = std::env::var("BO_TEST_POSTGRES_URL") else {
            assert!(!in_ci(), "CI=true but BO_TEST_POSTGRES_URL is not set: the Postgres tests must run in CI");
            eprintln!("skipped: {test} on Postgres (set BO_TEST_POSTGRES_URL to run it)");
            return None;
        };
        let schema = unique_name("bo_test");
        let mut conn = match sqlx::PgConnection::connect(&base).await {
            Ok(conn) => conn,
            Err(e) if !in_ci() => {
                eprintln!("skipped: {test} on Postgres ({base} unreachable: {e})");
                return None;
            }
            Err(e) => panic!("CI=true but Postgres at {base} is unreachable: {e}"),
        };
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&mut conn).await.expect("create a test schema");
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}options[search_path]={schema}");
        Some(TestDatabase { url, cleanup: Cleanup::PostgresSchema { base, schema } })
    }

    /// The URL to connect to (`--database-url`).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::SqliteFile(path) => {
                // A pool still open on the file keeps working on it (Unix unlinks); a file that
                // was never created is no error.
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let mut name = path.clone().into_os_string();
                    name.push(suffix);
                    let _ = std::fs::remove_file(name);
                }
            }
            Cleanup::PostgresSchema { base, schema } => {
                // On a thread of its own with a runtime of its own: a drop may happen inside a
                // test's runtime, which must not be blocked on. A lock held by a connection the
                // test left open makes the drop give up after two seconds (`.ci/run` clears the
                // schemas left at its start).
                let (base, sql) = (base.clone(), format!("SET lock_timeout = '2s'; DROP SCHEMA IF EXISTS {schema} CASCADE"));
                let dropped = std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
                    runtime.block_on(async {
                        let mut conn = sqlx::PgConnection::connect(&base).await.ok()?;
                        sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.ok()
                    })
                });
                let _ = dropped.join();
            }
        }
    }
}

/// Runs `sql` on `store`'s database: for tests that set up what no call of the store writes
/// (a delete a stopped server left part way).
pub async fn execute(store: &crate::Store, sql: &str) {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).execute(&store.pool).await.expect("the test's statement runs");
}
