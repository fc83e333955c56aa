//! Helpers for tests that run against real databases: a fresh SQLite file or a fresh Postgres
//! schema per test, so test runs never collide.
//!
//! Postgres tests run when `BO_TEST_POSTGRES_URL` is set (e.g.
//! `postgres://postgres@127.0.0.1:5432/test`); otherwise they say they were skipped — except
//! under `CI=true`, where a missing or unreachable Postgres fails the test.

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

/// A URL for a new, empty schema on the test Postgres, or `None` (after saying so) when no
/// Postgres is configured outside CI. Panics under CI when Postgres is missing or unreachable.
pub async fn postgres_url(test: &str) -> Option<String> {
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
    Some(format!("{base}{sep}options[search_path]={schema}"))
}

/// A URL for a new SQLite file in the system's temporary folder.
pub fn sqlite_url() -> String {
    let path = std::env::temp_dir().join(format!("{}.db", unique_name("bo_test")));
    format!("sqlite://{}", path.display())
}

/// Runs `sql` on `store`'s database: for tests that set up what no call of the store writes
/// (a delete a stopped server left part way).
pub async fn execute(store: &crate::Store, sql: &str) {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).execute(&store.pool).await.expect("the test's statement runs");
}
