//! The store's behaviour on both databases. Each test is written once, as a function of a
//! store (or of a database, when it must reach under the store), and `each_database!` makes of
//! it one test per database: `<concern>::sqlite::<name>` on a fresh SQLite file and
//! `<concern>::postgres::<name>` on a fresh Postgres schema (skipped, saying so, when no Postgres
//! is configured outside CI). The files are cut by concern; the fixtures below are shared.

mod changes;
mod migrations;
mod overview;
mod stopping;
mod studies;
mod suggest;
mod transfer;
mod trials;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bo_core::designer::testing::fixtures;
use bo_core::stopping::StoppingDecision;
use bo_core::stopping::curves::{CURVE_POINTS, Finished, MAX_CURVES};
use bo_core::{Assignment, Completion, Goal, Limits, Measurement, MetricSpec, ParamValue, Safety, StudySpec, TrialState};
use bo_store::{
    Basis, CurveMetric, Entity, ImportError, Load, NewTrial, Opened, Operation, Store, StoreError, StoreOptions, StudySettings, StudyState,
    SuggestOutcome, SuggestRequest, testing,
};

fn spec() -> StudySpec {
    StudySpec::new("acc", Goal::Maximize, fixtures::optimizer_tree(), "RANDOM_SEARCH")
}

fn point(i: i64) -> Assignment {
    let mut a = Assignment::default();
    a.insert("optimizer", ParamValue::Categorical("sgd".into()));
    a.insert("momentum", ParamValue::Float(i as f64 / 1000.0));
    a.insert("layers", ParamValue::Int(1));
    a
}

/// A planner proposing new points numbered on from `counter`.
/// A trial to create at [`point`]`(i)`: REQUESTED, with no measurements; a test changes the
/// fields it is about (`NewTrial { state, ..new_trial(i) }`).
fn new_trial(i: i64) -> NewTrial {
    NewTrial {
        assignment: point(i),
        state: TrialState::Requested,
        measurements: vec![],
        final_measurement: None,
        infeasible_reason: String::new(),
        labels: Default::default(),
    }
}

fn new_points(counter: &mut i64) -> impl FnMut(Basis, Option<&[bo_core::Trial]>, usize) -> Result<Plan, StoreError> + '_ {
    move |_, _, n| {
        Ok(Plan::Ready(
            (0..n)
                .map(|_| {
                    *counter += 1;
                    point(*counter)
                })
                .collect(),
        ))
    }
}

fn decided(should_stop: bool) -> StoppingDecision {
    StoppingDecision { should_stop, reason: String::new(), last_measurement: None }
}

fn options() -> StoreOptions {
    StoreOptions { max_connections: 8, acquire_timeout: std::time::Duration::from_secs(10) }
}

/// A suggest call as the engine makes one: the request, how many trials, and (for proposals
/// from an older basis) the first trial id they must not repeat.
#[derive(Clone, Copy)]
struct Call<'a> {
    request: SuggestRequest<'a>,
    count: usize,
    newer_than: Option<i64>,
}

static NO_LABELS: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();

fn request(study_id: i64, client_id: &str, count: usize, now_ms: i64) -> Call<'_> {
    Call {
        request: SuggestRequest {
            study_id,
            client_id,
            now_ms,
            finishing: None,
            trial_lease_ms: None,
            api_version: "v1",
            labels: &NO_LABELS,
        },
        count,
        newer_than: None,
    }
}

/// A planner's answer, as the engine's.
enum Plan {
    Ready(Vec<Assignment>),
    Miss,
}

/// How a suggest call ended.
#[derive(Debug)]
enum Suggested {
    Done(SuggestOutcome),
    Waiting(Operation),
    Miss(Basis),
}

/// The engine's order over the store's study transaction (`engine/suggest.rs`): held trials,
/// REQUESTED trials, then new ones from `plan`; a miss rolls back.
async fn suggest<E: From<StoreError>>(
    store: &Store,
    call: Call<'_>,
    plan: impl FnOnce(Basis, Option<&[bo_core::Trial]>, usize) -> Result<Plan, E>,
) -> Result<Suggested, E> {
    let mut tx = match store.open_suggest(call.request).await? {
        Opened::Waiting(op) => return Ok(Suggested::Waiting(op)),
        Opened::Open(tx) => tx,
    };
    if !tx.hand_back_held().await? && !tx.study_completed() {
        let wanted = tx.hand_out_requested(call.count).await?;
        if wanted > 0 {
            let newer = match call.newer_than {
                Some(first) => Some(tx.trials_since(first).await?),
                None => None,
            };
            match plan(tx.basis(), newer.as_deref(), wanted)? {
                Plan::Ready(points) => tx.hand_out_new(points, wanted).await?,
                Plan::Miss => return Ok(Suggested::Miss(tx.basis())),
            }
        }
    }
    Ok(Suggested::Done(tx.commit().await?))
}

fn done(s: Suggested) -> SuggestOutcome {
    match s {
        Suggested::Done(o) => o,
        other => panic!("expected trials, got {other:?}"),
    }
}

/// One fresh database of one dialect, removed when the test is done with it.
struct Database {
    dialect: &'static str,
    url: String,
    _database: testing::TestDatabase,
}

impl Database {
    fn sqlite() -> Database {
        let database = testing::TestDatabase::sqlite();
        Database { dialect: "sqlite", url: database.url().to_owned(), _database: database }
    }

    /// A fresh Postgres schema, or `None` (said on stderr) when none is configured outside CI.
    async fn postgres(test: &str) -> Option<Database> {
        let database = testing::TestDatabase::postgres(test).await?;
        Some(Database { dialect: "postgres", url: database.url().to_owned(), _database: database })
    }

    async fn store(&self) -> Store {
        Store::connect(&self.url, &options()).await.unwrap_or_else(|e| panic!("{}: {e}", self.dialect))
    }
}

/// What a test is given: a connected store, or the database itself; and, when the test does
/// not own the database, the database and the store to close before it is removed.
trait Given: Sized {
    async fn given(db: Database) -> (Self, Option<(Database, Store)>);
}

impl Given for Store {
    async fn given(db: Database) -> (Store, Option<(Database, Store)>) {
        let store = db.store().await;
        (store.clone(), Some((db, store)))
    }
}

impl Given for Database {
    async fn given(db: Database) -> (Database, Option<(Database, Store)>) {
        (db, None)
    }
}

/// Runs `test` with what it takes from `db`, then removes the database (its connections closed
/// first: one a test left in a transaction would hold the locks a schema's drop waits for).
async fn given_to<T: Given, F: std::future::Future<Output = ()>>(db: Database, test: impl FnOnce(T) -> F) {
    let (given, kept) = T::given(db).await;
    test(given).await;
    if let Some((db, store)) = kept {
        store.close().await;
        drop(db);
    }
}

/// One test per database for each function named: `each_database! { a, b: multi_thread }`
/// makes `sqlite::a`, `postgres::a`, … each calling `a` with what it takes ([`Given`]).
macro_rules! each_database {
    ($($test:ident $(: $flavor:ident)?),* $(,)?) => {
        mod sqlite {
            $( crate::each_database!(@test $test, Some(crate::Database::sqlite()) $(, $flavor)?); )*
        }
        mod postgres {
            $( crate::each_database!(@test $test, crate::Database::postgres(stringify!($test)).await $(, $flavor)?); )*
        }
    };
    (@test $test:ident, $db:expr) => {
        #[tokio::test]
        async fn $test() {
            crate::each_database!(@body $test, $db);
        }
    };
    (@test $test:ident, $db:expr, multi_thread) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $test() {
            crate::each_database!(@body $test, $db);
        }
    };
    (@body $test:ident, $db:expr) => {
        if let Some(db) = $db {
            crate::given_to(db, super::$test).await
        }
    };
}
use each_database;
