//! The store's behaviour on both databases: one suite, run on a fresh SQLite file and on a fresh
//! Postgres schema (skipped, saying so, when no Postgres is configured outside CI).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bo_core::designer::testing::fixtures;
use bo_core::stopping::StoppingDecision;
use bo_core::stopping::curves::{CURVE_POINTS, Finished, MAX_CURVES};
use bo_core::{Assignment, Completion, Goal, Limits, Measurement, MetricSpec, ParamValue, Safety, StudySpec, TrialState};
use bo_store::{
    Basis, CurveMetric, Entity, NewTrial, Opened, Operation, Store, StoreError, StoreOptions, StudyState, SuggestOutcome, SuggestRequest,
    testing,
};

fn spec() -> StudySpec {
    StudySpec::new("acc", Goal::Maximize, fixtures::optimizer_tree(), "RANDOM_SEARCH")
}

fn point(i: i64) -> Assignment {
    let mut a = Assignment::default();
    a.0.insert("optimizer".into(), ParamValue::Categorical("sgd".into()));
    a.0.insert("momentum".into(), ParamValue::Float(i as f64 / 1000.0));
    a.0.insert("layers".into(), ParamValue::Int(1));
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

fn request(study_id: i64, client_id: &str, count: usize, now_ms: i64) -> Call<'_> {
    Call {
        request: SuggestRequest { study_id, client_id, now_ms, finishing: None, trial_lease_ms: None, api_version: "v1" },
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

async fn stores(test: &str) -> Vec<Store> {
    let mut out = vec![Store::connect(&testing::sqlite_url(), &options()).await.expect("sqlite")];
    if let Some(url) = testing::postgres_url(test).await {
        out.push(Store::connect(&url, &options()).await.expect("postgres"));
    }
    out
}

#[tokio::test]
async fn create_is_idempotent_by_name_and_conflicts_on_a_different_spec() {
    for store in stores("create_is_idempotent").await {
        let (a, created) = store.create_study("p", "l", "s", &spec(), 1).await.unwrap();
        assert!(created);
        let (b, created) = store.create_study("p", "l", "s", &spec(), 2).await.unwrap();
        assert!(!created);
        assert_eq!(a, b);
        let mut other = spec();
        other.metrics[0].goal = Goal::Minimize;
        assert!(matches!(store.create_study("p", "l", "s", &other, 3).await, Err(StoreError::AlreadyExists(_))));
        // Another project may use the name.
        let (c, created) = store.create_study("q", "l", "s", &other, 4).await.unwrap();
        assert!(created && c.id != a.id);
        assert_eq!(store.lookup_study("p", "l", "s").await.unwrap().id, a.id);
        // Numbers are per project: q's study 1 is its own.
        assert_eq!(store.get_study("q", "l", a.number).await.unwrap().id, c.id);
        assert!(matches!(store.get_study("q", "l", 2).await, Err(StoreError::NotFound(Entity::Study))));
    }
}

#[tokio::test]
async fn trials_keep_measurements_and_deleting_a_study_removes_everything() {
    for store in stores("trials_keep_measurements").await {
        let (study, _) = store.create_study("p", "l", "m", &spec(), 1).await.unwrap();
        let m = |step: i64, v: f64| Measurement { step_count: step, elapsed_secs: 1.5, metrics: BTreeMap::from([("acc".into(), v)]) };
        let t = store.create_trial(study.id, NewTrial { measurements: vec![m(1, 0.1)], ..new_trial(1) }, 5).await.unwrap();
        assert_eq!(t.id, 1);
        store.add_measurement(study.id, t.id, m(2, 0.2), &Limits::default(), 3).await.unwrap();
        let t = store.complete_trial(study.id, t.id, &spec(), Completion::Measured(m(2, 0.2)), 9).await.unwrap();
        let back = store.get_trial(study.id, t.id).await.unwrap();
        assert_eq!(back, t);
        assert_eq!(back.measurements.len(), 2);
        assert_eq!(store.get_study("p", "l", study.number).await.unwrap().data_version, 1);
        // A refused change (bo-core's rule: completed once) leaves the trial as it was.
        let refused = store.complete_trial(study.id, t.id, &spec(), Completion::Infeasible("late".into()), 5).await;
        assert!(matches!(refused, Err(StoreError::Trial(bo_core::TrialError::AlreadyCompleted { .. }))), "{refused:?}");
        assert_eq!(store.get_trial(study.id, t.id).await.unwrap().state, TrialState::Succeeded);
        store.delete_study(study.id).await.unwrap();
        assert!(matches!(store.get_trial(study.id, t.id).await, Err(StoreError::NotFound(Entity::Trial))));
        assert!(matches!(store.delete_study(study.id).await, Err(StoreError::NotFound(Entity::Study))));
    }
}

#[tokio::test]
async fn suggest_returns_held_trials_then_requested_then_new_and_records_an_operation() {
    for store in stores("suggest_semantics").await {
        let (study, _) = store.create_study("p", "l", "sg", &spec(), 1).await.unwrap();
        let requested = new_trial(7);
        store.create_trial(study.id, requested, 1).await.unwrap();
        let mut counter = 100;
        let mut gen_ = new_points(&mut counter);
        let first = done(suggest(&store, request(study.id, "w1", 3, 2), &mut gen_).await.unwrap());
        let ids: Vec<i64> = first.trials.iter().map(|t| t.id).collect();
        assert_eq!(ids, vec![1, 2, 3], "the requested trial first, then two new ones");
        assert!(first.trials.iter().all(|t| t.state == TrialState::Active && t.client_id == "w1"));
        let m = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("acc".into(), 0.5)]) };
        store.add_measurement(study.id, 2, m.clone(), &Limits::default(), 2).await.unwrap();
        let again = done(suggest(&store, request(study.id, "w1", 3, 3), &mut gen_).await.unwrap());
        assert_eq!(again.trials.iter().map(|t| t.id).collect::<Vec<_>>(), ids, "the same client gets its active trials back");
        assert_eq!(again.trials[1].measurements, vec![m], "whole, with their measurements");
        assert_ne!(again.operation_id, first.operation_id);
        let op = store.get_operation(study.id, first.operation_id).await.unwrap();
        assert_eq!(op.kind, bo_store::OperationKind::Suggest { client_id: "w1".into(), trial_ids: ids, study_completed: false });
        // An exhausted designer completes the study.
        let none = done(suggest(&store, request(study.id, "w2", 1, 4), |_, _, _| Ok::<_, StoreError>(Plan::Ready(vec![]))).await.unwrap());
        assert!(none.exhausted && none.trials.is_empty());
        assert_eq!(store.get_study("p", "l", study.number).await.unwrap().state, StudyState::Completed);
    }
}

#[tokio::test]
async fn a_trial_whose_client_goes_unseen_past_the_lease_goes_to_the_next_client() {
    for store in stores("trial_lease").await {
        let (study, _) = store.create_study("p", "l", "lease", &spec(), 1).await.unwrap();
        let mut counter = 0;
        let mut gen_ = new_points(&mut counter);
        let leased = |client, now| {
            let mut c = request(study.id, client, 1, now);
            c.request.trial_lease_ms = Some(100);
            c
        };
        // Two workers start a trial each at t = 1000.
        let dead = done(suggest(&store, leased("dead", 1_000), &mut gen_).await.unwrap()).trials[0].id;
        let alive = done(suggest(&store, leased("alive", 1_000), &mut gen_).await.unwrap()).trials[0].id;
        // Only "alive" reports (a measurement at 1080 is a heartbeat).
        let m = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("acc".into(), 0.5)]) };
        store.add_measurement(study.id, alive, m.clone(), &Limits::default(), 1_080).await.unwrap();
        // Without a lease nothing is taken back, however long.
        let plain = done(suggest(&store, request(study.id, "new", 1, 50_000), &mut gen_).await.unwrap());
        assert_ne!(plain.trials[0].id, dead);
        // At 1150 the dead worker's trial (last seen 1000) is past the lease; the live one
        // (1080) is not. The next client gets the abandoned trial, not a new one.
        let next = done(suggest(&store, leased("next", 1_150), &mut gen_).await.unwrap());
        assert_eq!(next.trials.iter().map(|t| t.id).collect::<Vec<_>>(), vec![dead], "the abandoned trial is handed out again");
        assert_eq!(next.trials[0].client_id, "next");
        let alive_now = store.get_trial(study.id, alive).await.unwrap();
        assert_eq!((alive_now.state, alive_now.client_id.as_str()), (TrialState::Active, "alive"), "a live worker keeps its trial");
        // The dead worker, back after all, no longer holds it: it gets a trial of its own.
        let back = done(suggest(&store, leased("dead", 1_160), &mut gen_).await.unwrap());
        assert_ne!(back.trials[0].id, dead);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_suggests_never_share_a_trial() {
    for store in stores("concurrent_suggests").await {
        let (study, _) = store.create_study("p", "l", "cc", &spec(), 1).await.unwrap();
        for i in 0..10 {
            let new = new_trial(i);
            store.create_trial(study.id, new, 1).await.unwrap();
        }
        let store = Arc::new(store);
        let mut tasks = Vec::new();
        for c in 0..16 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let client = format!("client-{c}");
                done(
                    suggest(&store, request(study.id, &client, 2, 5), |_, _, n| {
                        Ok::<_, StoreError>(Plan::Ready((0..n as i64).map(|k| point(1000 + c * 10 + k)).collect()))
                    })
                    .await
                    .unwrap(),
                )
            }));
        }
        let mut seen = HashSet::new();
        for task in tasks {
            for t in task.await.unwrap().trials {
                assert!(seen.insert(t.id), "trial {} handed out twice", t.id);
            }
        }
        assert_eq!(seen.len(), 32);
        let all = store.all_trials(study.id).await.unwrap();
        assert_eq!(all.len(), 32);
        assert!(all.iter().all(|t| t.state == TrialState::Active));
    }
}

#[tokio::test]
async fn a_miss_changes_nothing_and_reports_the_basis_proposals_must_fit() {
    for store in stores("suggest_miss").await {
        let (study, _) = store.create_study("p", "l", "miss", &spec(), 1).await.unwrap();
        let requested = new_trial(1);
        store.create_trial(study.id, requested, 1).await.unwrap();
        let (basis, trials) = store.suggest_snapshot(study.id).await.unwrap();
        assert_eq!((basis, trials.len()), (Basis { data_version: 0, next_trial_id: 2 }, 1));
        let cheap = request(study.id, "w", 2, 2);
        let outcome = suggest(&store, cheap, |b, trials, n| {
            assert!(trials.is_none(), "no trials loaded unless asked");
            assert_eq!((b, n), (basis, 1), "one wanted beside the REQUESTED trial");
            Ok::<_, StoreError>(Plan::Miss)
        })
        .await
        .unwrap();
        assert!(matches!(outcome, Suggested::Miss(b) if b == basis));
        let after = store.all_trials(study.id).await.unwrap();
        assert_eq!(after[0].state, TrialState::Requested, "the REQUESTED trial was not taken");
        assert_eq!(store.suggest_snapshot(study.id).await.unwrap().0, basis);
        // A completion moves the data version; a new trial the next id.
        store.complete_trial(study.id, 1, &spec(), Completion::Infeasible(String::new()), 3).await.unwrap();
        assert_eq!(store.suggest_snapshot(study.id).await.unwrap().0, Basis { data_version: 1, next_trial_id: 2 });
        // Asked for, the planner sees exactly the trials created since a given id.
        let mut counter = 10;
        done(suggest(&store, request(study.id, "other", 2, 4), new_points(&mut counter)).await.unwrap());
        let since = Call { newer_than: Some(2), ..request(study.id, "w", 1, 5) };
        let outcome = suggest(&store, since, |_, trials, _| {
            let ids: Vec<i64> = trials.expect("loaded when asked").iter().map(|t| t.id).collect();
            assert_eq!(ids, vec![2, 3]);
            Ok::<_, StoreError>(Plan::Miss)
        })
        .await
        .unwrap();
        assert!(matches!(outcome, Suggested::Miss(_)));
    }
}

#[tokio::test]
async fn a_pending_suggest_is_shared_by_its_client_and_finished_once() {
    for store in stores("pending_suggest").await {
        let (study, _) = store.create_study("p", "l", "pending", &spec(), 1).await.unwrap();
        let op = store.begin_pending_suggest(study.id, "w", 2, "v1", 10).await.unwrap();
        assert!(!op.done && op.suggestion_count == 2);
        assert_eq!(store.begin_pending_suggest(study.id, "w", 5, "v1", 11).await.unwrap().id, op.id, "one pending suggest per client");
        let waiting =
            suggest(&store, request(study.id, "w", 1, 12), |_, _, _| -> Result<Plan, StoreError> { panic!("not planned") }).await.unwrap();
        assert!(matches!(waiting, Suggested::Waiting(ref o) if o.id == op.id), "{waiting:?}");
        assert_eq!(store.pending_operations().await.unwrap().iter().map(|o| o.id).collect::<Vec<_>>(), vec![op.id]);
        let finishing = {
            let mut c = request(study.id, "w", 2, 13);
            c.request.finishing = Some(op.id);
            c
        };
        let finished =
            done(suggest(&store, finishing, |_, _, n| Ok::<_, StoreError>(Plan::Ready((0..n as i64).map(point).collect()))).await.unwrap());
        assert_eq!((finished.operation_id, finished.trials.len()), (op.id, 2));
        let stored = store.get_operation(study.id, op.id).await.unwrap();
        assert!(stored.done && stored.error.is_none() && stored.update_time_ms == 13);
        assert!(matches!(stored.kind, bo_store::OperationKind::Suggest { ref trial_ids, .. } if trial_ids == &vec![1, 2]));
        let again = suggest(&store, finishing, |_, _, _| -> Result<Plan, StoreError> { panic!("finished already") }).await.unwrap();
        assert!(matches!(again, Suggested::Waiting(o) if o.done), "finishing twice changes nothing");
        // A failed one reports its error.
        let other = store.begin_pending_suggest(study.id, "v", 1, "v1", 20).await.unwrap();
        assert!(store.fail_operation(study.id, other.id, "the designer failed", 21).await.unwrap());
        assert!(!store.fail_operation(study.id, other.id, "again", 22).await.unwrap());
        let failed = store.get_operation(study.id, other.id).await.unwrap();
        assert_eq!((failed.done, failed.error.as_deref()), (true, Some("the designer failed")));
        assert!(store.pending_operations().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn model_state_is_kept_and_never_overwritten_by_older_data() {
    for store in stores("model_state").await {
        let (study, _) = store.create_study("p", "l", "models", &spec(), 1).await.unwrap();
        assert_eq!(store.model_state(study.id).await.unwrap(), None);
        let m = |version: i64, tag: &str| bo_store::StoredModel {
            data_version: version,
            state: bo_core::ModelState(serde_json::json!({"tag": tag})),
            fitted_at_ms: 7,
        };
        assert!(store.save_model_state(study.id, &m(3, "three")).await.unwrap());
        assert!(!store.save_model_state(study.id, &m(2, "two")).await.unwrap(), "older data never wins");
        assert_eq!(store.model_state(study.id).await.unwrap(), Some(m(3, "three")));
        assert!(store.save_model_state(study.id, &m(5, "five")).await.unwrap());
        assert_eq!(store.model_state(study.id).await.unwrap().unwrap().data_version, 5);
        store.delete_study(study.id).await.unwrap();
        assert_eq!(store.model_state(study.id).await.unwrap(), None);
        assert!(!store.save_model_state(study.id, &m(6, "gone")).await.unwrap(), "a deleted study gets no model");
    }
}

#[tokio::test]
async fn a_refit_lease_has_one_holder_until_it_is_released_or_expires() {
    for store in stores("refit_lease").await {
        let (study, _) = store.create_study("p", "l", "leases", &spec(), 1).await.unwrap();
        let id = study.id;
        assert!(store.take_refit_lease(id, "a", 1_000, 100).await.unwrap());
        assert!(!store.take_refit_lease(id, "b", 1_050, 100).await.unwrap(), "held by a until 1100");
        assert!(store.take_refit_lease(id, "a", 1_050, 100).await.unwrap(), "its holder renews it");
        assert!(!store.take_refit_lease(id, "b", 1_149, 100).await.unwrap());
        assert!(store.take_refit_lease(id, "b", 1_150, 100).await.unwrap(), "expired: a died");
        store.release_refit_lease(id, "a").await.unwrap();
        assert!(!store.take_refit_lease(id, "a", 1_160, 100).await.unwrap(), "only the holder releases it");
        store.release_refit_lease(id, "b").await.unwrap();
        assert!(store.take_refit_lease(id, "a", 1_170, 100).await.unwrap(), "released");
        // Many replicas asking at once: exactly one gets it.
        store.release_refit_lease(id, "a").await.unwrap();
        let store = Arc::new(store);
        let asks: Vec<_> = (0..16)
            .map(|r| {
                let store = store.clone();
                tokio::spawn(async move { store.take_refit_lease(id, &format!("r{r}"), 2_000, 100).await.unwrap() })
            })
            .collect();
        let mut granted = 0;
        for ask in asks {
            granted += usize::from(ask.await.unwrap());
        }
        assert_eq!(granted, 1);
        store.delete_study(id).await.unwrap();
        assert!(!store.take_refit_lease(id, "a", 9_000, 100).await.unwrap(), "a deleted study is not leased");
    }
}

/// A database a newer bo-server migrated further than this one knows is refused at connect,
/// with a message saying so, and nothing is written to it.
#[tokio::test]
async fn a_database_from_a_newer_schema_is_refused() {
    let mut urls = vec![testing::sqlite_url()];
    urls.extend(testing::postgres_url("newer_schema").await);
    for url in urls {
        let store = Store::connect(&url, &options()).await.expect("connects");
        store.close().await;
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&url).await.expect("raw connection");
        let insert = if url.starts_with("sqlite:") {
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (99990101, 'from the future', 1, X'00', 0)"
        } else {
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (99990101, 'from the future', true, '\\x00'::bytea, 0)"
        };
        sqlx::query(insert).execute(&pool).await.expect("a future migration recorded");
        pool.close().await;
        let refused = Store::connect(&url, &options()).await.expect_err("refused");
        let message = refused.to_string();
        assert!(
            message.contains("written by a newer bo-server") && message.contains("99990101") && message.contains("knows migrations up to"),
            "{message}"
        );
    }
}

#[test]
fn both_dialects_have_the_same_migrations() {
    let names = |dialect: &str| -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(dialect);
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        v.sort();
        v
    };
    assert_eq!(names("sqlite"), names("postgres"));
}

/// Studies are numbered within their project and location, operations within their study, and
/// neither number is ever given twice: a tenant's ids tell nothing of another's activity.
#[tokio::test]
async fn numbers_are_per_tenant_and_never_reused() {
    for store in stores("tenant_numbers").await {
        let (a1, _) = store.create_study("a", "l", "one", &spec(), 1).await.unwrap();
        let (b1, _) = store.create_study("b", "l", "one", &spec(), 1).await.unwrap();
        let (a2, _) = store.create_study("a", "l", "two", &spec(), 1).await.unwrap();
        assert_eq!((a1.number, b1.number, a2.number), (1, 1, 2));
        assert_ne!(a1.id, b1.id, "the keys stay distinct");
        // Creating an existing study again uses up no number; a deleted one's is not reused.
        assert_eq!(store.create_study("a", "l", "two", &spec(), 2).await.unwrap().0.number, 2);
        store.delete_study(a2.id).await.unwrap();
        assert_eq!(store.create_study("a", "l", "three", &spec(), 3).await.unwrap().0.number, 3);
        assert!(matches!(store.get_study("a", "l", 2).await, Err(StoreError::NotFound(Entity::Study))));
        assert_eq!(store.get_study("b", "l", 1).await.unwrap().id, b1.id);
        // Operations count from 1 in each study.
        let mut counter = 0;
        let first = done(suggest(&store, request(a1.id, "w", 1, 5), new_points(&mut counter)).await.unwrap());
        let other = done(suggest(&store, request(b1.id, "w", 1, 5), new_points(&mut counter)).await.unwrap());
        let second = store.record_early_stopping(a1.id, 1, 6, decided(false), &Limits::default(), "v1").await.unwrap().0;
        assert_eq!((first.operation_id, other.operation_id, second), (1, 1, 2));
        assert_eq!(store.get_operation(a1.id, 2).await.unwrap().id, 2);
    }
}

/// Finished operations older than the retention go, a batch at a time; pending ones stay.
#[tokio::test]
async fn finished_operations_expire() {
    for store in stores("operation_retention").await {
        let (study, _) = store.create_study("p", "l", "ops", &spec(), 1).await.unwrap();
        let mut counter = 0;
        for t in 0..3 {
            done(suggest(&store, request(study.id, &format!("w{t}"), 1, 100 + t), new_points(&mut counter)).await.unwrap());
        }
        let pending = store.begin_pending_suggest(study.id, "slow", 1, "v1", 50).await.unwrap();
        assert_eq!(store.delete_finished_operations(102, 10).await.unwrap(), 2, "the two before 102");
        assert!(store.get_operation(study.id, 1).await.is_err() && store.get_operation(study.id, 3).await.is_ok());
        assert_eq!(store.delete_finished_operations(1_000, 10).await.unwrap(), 1);
        assert!(!store.get_operation(study.id, pending.id).await.unwrap().done, "pending operations are kept");
    }
}

/// The early-stopping rule's inputs come from SQL: one running average per SUCCEEDED trial over
/// its objective up to a position; a recorded check stops an ACTIVE trial.
#[tokio::test]
async fn running_averages_are_aggregated_in_sql() {
    for store in stores("running_averages").await {
        let (study, _) = store.create_study("p", "l", "curves", &spec(), 1).await.unwrap();
        let at = |step: i64, acc: f64| Measurement {
            step_count: step,
            elapsed_secs: step as f64 / 10.0,
            metrics: BTreeMap::from([("acc".to_owned(), acc)]),
        };
        let curve = |values: &[f64]| values.iter().enumerate().map(|(k, v)| at(k as i64 + 1, *v)).collect::<Vec<_>>();
        let add = |state: TrialState, measurements: Vec<Measurement>, i: i64| NewTrial {
            state,
            final_measurement: (state == TrialState::Succeeded).then(|| at(9, 0.0)),
            measurements,
            ..new_trial(i)
        };
        store.create_trial(study.id, add(TrialState::Succeeded, curve(&[0.2, 0.4, 0.9]), 1), 1).await.unwrap();
        store.create_trial(study.id, add(TrialState::Succeeded, curve(&[0.6, 0.8]), 2), 1).await.unwrap();
        store.create_trial(study.id, add(TrialState::Infeasible, curve(&[5.0]), 3), 1).await.unwrap();
        let running = store.create_trial(study.id, add(TrialState::Requested, curve(&[0.1]), 4), 1).await.unwrap();
        let mut averages = store.running_averages(study.id, running.id, 2.0, false).await.unwrap();
        averages.sort_by(f64::total_cmp);
        assert_eq!(averages.len(), 2, "succeeded trials only: {averages:?}");
        assert!((averages[0] - 0.3).abs() < 1e-12 && (averages[1] - 0.7).abs() < 1e-12, "{averages:?}");
        let by_time = store.running_averages(study.id, running.id, 0.15, true).await.unwrap();
        assert_eq!(by_time.len(), 2);
        let (op, stop) = store.record_early_stopping(study.id, running.id, 2, decided(true), &Limits::default(), "v1beta1").await.unwrap();
        assert!(stop && op == 1);
        assert_eq!(store.get_operation(study.id, op).await.unwrap().api_version, "v1beta1", "the version it was asked through is kept");
        assert_eq!(
            store.get_trial(study.id, running.id).await.unwrap().state,
            TrialState::Requested,
            "only an ACTIVE trial becomes STOPPING"
        );
    }
}

/// Successive halving's and the partial trials' reads come from SQL: each trial's value at a
/// rung is its first measurement at or past it, whatever its state; a trial asked to stop is
/// partial — its stop time is kept, its thinned curve read for the designer, and the optimal
/// trials leave it out while a trial trained in full is there.
#[tokio::test]
async fn rung_values_partial_curves_and_the_best_trained_in_full() {
    for store in stores("rung_values").await {
        let (study, _) = store.create_study("p", "l", "rungs", &spec(), 1).await.unwrap();
        let at = |step: i64, acc: f64| Measurement {
            step_count: step,
            elapsed_secs: step as f64,
            metrics: BTreeMap::from([("acc".to_owned(), acc)]),
        };
        let add = |state: TrialState, measurements: Vec<Measurement>, i: i64| NewTrial { state, measurements, ..new_trial(i) };
        let full = store.create_trial(study.id, add(TrialState::Requested, vec![at(1, 0.1), at(4, 0.5), at(9, 0.6)], 1), 1).await.unwrap();
        let cut = store.create_trial(study.id, add(TrialState::Requested, vec![at(1, 0.2), at(2, 0.9), at(3, 0.95)], 2), 1).await.unwrap();
        let judged = store.create_trial(study.id, add(TrialState::Requested, vec![at(3, 0.3)], 3), 1).await.unwrap();
        let mut values = store.values_at_rung(study.id, judged.id, 3.0, false).await.unwrap();
        values.sort_by_key(|(id, _)| *id);
        assert_eq!(values, vec![(full.id, 0.5), (cut.id, 0.95)], "the first measurement at or past the rung, the judged trial left out");
        assert_eq!(store.values_at_rung(study.id, 0, 10.0, false).await.unwrap(), Vec::<(i64, f64)>::new());
        let stopped = store.stop_trial(study.id, cut.id, 7).await.unwrap();
        assert_eq!(stopped.stop_time_ms, Some(7));
        let mut spec = spec();
        spec.measurement_selection = bo_core::MeasurementSelection::Last;
        for id in [full.id, cut.id] {
            store.complete_trial(study.id, id, &spec, Completion::Selected, 9).await.unwrap();
        }
        assert_eq!(store.get_trial(study.id, cut.id).await.unwrap().stop_time_ms, Some(7), "the stop time is kept");
        let curves = store.partial_curves(study.id, false).await.unwrap();
        assert_eq!(curves.keys().copied().collect::<Vec<_>>(), vec![cut.id]);
        assert_eq!(curves[&cut.id], vec![(1.0, 0.2), (2.0, 0.9), (3.0, 0.95)]);
        let best = store.final_values(study.id, &["acc".to_owned()]).await.unwrap();
        assert_eq!(best, vec![(full.id, vec![Some(0.6)])], "the partial trial's 0.95 is left out");
        store.delete_trial(study.id, full.id).await.unwrap();
        let best = store.final_values(study.id, &["acc".to_owned()]).await.unwrap();
        assert_eq!(best, vec![(cut.id, vec![Some(0.95)])], "with none trained in full, the partial one counts");
    }
}

/// A page of trials stops early when their stored size passes the budget, always holding one.
#[tokio::test]
async fn pages_are_bounded_by_size() {
    for store in stores("page_budget").await {
        let (study, _) = store.create_study("p", "l", "pages", &spec(), 1).await.unwrap();
        let mut counter = 0;
        done(suggest(&store, request(study.id, "w", 5, 1), new_points(&mut counter)).await.unwrap());
        let (one, cut) = store.list_trials(study.id, 0, 10, 1).await.unwrap();
        assert_eq!(one.len(), 1, "one trial whatever the budget");
        assert!(cut, "the budget cut the page: more trials follow");
        let (all, cut) = store.list_trials(study.id, 0, 10, 1 << 20).await.unwrap();
        assert_eq!(all.len(), 5);
        assert!(!cut, "the whole study fits: nothing follows");
        let bytes = serde_json::to_string(&all[0].assignment).unwrap().len();
        let (two, cut) = store.list_trials(study.id, 0, 10, 2 * bytes + 10).await.unwrap();
        assert_eq!(two.len(), 2);
        assert!(cut);
        let (last, cut) = store.list_trials(study.id, 4, 10, 1).await.unwrap();
        assert!(last.len() == 1 && !cut, "the last trial alone is not cut short");
        let found = store.trials_by_id(study.id, &[4, 2, 99]).await.unwrap();
        assert_eq!(found.iter().map(|t| t.id).collect::<Vec<_>>(), vec![2, 4], "those that exist, in id order");
    }
}

/// A page of studies stops early when their specs' stored size passes the budget (read before
/// any spec), always holding one; the overview's summary carries the algorithm and metrics
/// without reading the spec.
#[tokio::test]
async fn study_pages_are_bounded_by_size() {
    for store in stores("study_page_budget").await {
        let mut specs = Vec::new();
        for k in 0..4 {
            let mut spec = spec();
            spec.algorithm = if k == 2 { "GP_BANDIT".into() } else { "RANDOM_SEARCH".into() };
            spec.metrics.push(MetricSpec::objective(&format!("m{k}"), Goal::Minimize));
            store.create_study("p", "l", &format!("s{k}"), &spec, 1).await.unwrap();
            specs.push(spec);
        }
        let bytes = serde_json::to_string(&specs[0]).unwrap().len();
        let (one, cut) = store.list_studies("p", "l", 0, 10, 1).await.unwrap();
        assert!(one.len() == 1 && cut, "one study whatever the budget, and more follow");
        let (two, cut) = store.list_studies("p", "l", 0, 10, 2 * bytes + 2).await.unwrap();
        assert_eq!((two.len(), cut), (2, true));
        assert_eq!(two[1].spec, specs[1], "whole");
        let (all, cut) = store.list_studies("p", "l", 0, 10, 1 << 20).await.unwrap();
        assert_eq!((all.len(), cut), (4, false));
        let (rest, cut) = store.list_studies("p", "l", two[1].number, 10, 1).await.unwrap();
        assert_eq!((rest.len(), cut, rest[0].display_name.as_str()), (1, true, "s2"));
        // The overview reads no spec: every study, summarised from its row.
        let overview = store.study_overview("p", "l", 0, 10).await.unwrap();
        assert_eq!(overview.len(), 4);
        let s2 = &overview[2].study;
        assert_eq!((s2.display_name.as_str(), s2.algorithm.as_str()), ("s2", "GP_BANDIT"));
        assert_eq!(s2.metrics, specs[2].metrics);
        assert_eq!(s2.objective().map(|m| m.id.as_str()), Some("acc"));
    }
}

/// A database made by the previous release (migrations up to 0005, with studies, measurements
/// and operations in it) is brought up to date in place: every study numbered as its id was,
/// operations likewise, each measurement's objective filled in from its metrics.
#[tokio::test]
async fn an_older_database_migrates_with_its_data() {
    let mut urls = vec![("sqlite", testing::sqlite_url())];
    if let Some(url) = testing::postgres_url("migrate_older").await {
        urls.push(("postgres", url));
    }
    for (dialect, url) in urls {
        sqlx::any::install_default_drivers();
        let old = std::env::temp_dir().join(testing::unique_name("bo_old_migrations"));
        std::fs::create_dir_all(&old).unwrap();
        let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(dialect);
        for entry in std::fs::read_dir(&all).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name().to_string_lossy().as_ref() < "0006" {
                std::fs::copy(entry.path(), old.join(entry.file_name())).unwrap();
            }
        }
        let connect_url = if dialect == "sqlite" { format!("{url}?mode=rwc") } else { url.clone() };
        let pool = sqlx::any::AnyPoolOptions::new().max_connections(1).connect(&connect_url).await.unwrap();
        sqlx::migrate::Migrator::new(old.as_path()).await.unwrap().run(&pool).await.unwrap();
        let spec_json = serde_json::to_string(&spec()).unwrap();
        for (id, project) in [(3i64, "p"), (7, "q")] {
            sqlx::query(
                "INSERT INTO studies (id, project, location, display_name, spec, state, create_time_ms, next_trial_id) VALUES ($1, $2, 'l', 'old', $3, 'ACTIVE', 1, 3)",
            )
                .bind(id)
                .bind(project)
                .bind(&spec_json)
                .execute(&pool)
                .await
                .unwrap();
        }
        sqlx::query("INSERT INTO trials (study_id, id, state, parameters, start_time_ms) VALUES (3, 1, 'ACTIVE', $1, 1)")
            .bind(serde_json::to_string(&point(1)).unwrap())
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO trials (study_id, id, state, parameters, final_measurement, start_time_ms, end_time_ms) VALUES (3, 2, 'SUCCEEDED', $1, $2, 1, 4)",
        )
        .bind(serde_json::to_string(&point(2)).unwrap())
        .bind(r#"{"step_count":1,"elapsed_secs":0.0,"metrics":{"acc":0.75}}"#)
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query("INSERT INTO measurements (study_id, trial_id, seq, step_count, elapsed_secs, metrics) VALUES (3, 1, 0, 5, 0, '{\"acc\": 0.25}')")
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query("INSERT INTO operations (id, study_id, kind, create_time_ms) VALUES (11, 3, 'SUGGEST', 1)")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;

        let store = Store::connect(&url, &options()).await.unwrap();
        let study = store.get_study("p", "l", 3).await.unwrap();
        assert_eq!((study.id, study.number), (3, 3), "{dialect}");
        assert_eq!(store.get_operation(3, 11).await.unwrap().id, 11, "{dialect}");
        let overview = store.study_overview("p", "l", 0, 10).await.unwrap();
        assert_eq!((overview[0].counts, overview[0].best), ([0, 1, 0, 1, 0], Some(0.75)), "{dialect}: the final objective was filled in");
        assert_eq!(
            (overview[0].study.algorithm.as_str(), overview[0].study.metrics.clone()),
            (study.spec.algorithm.as_str(), study.spec.metrics.clone()),
            "{dialect}: the summary's columns were filled in from the spec"
        );
        assert_eq!(store.running_averages(3, 99, 10.0, false).await.unwrap().len(), 0, "{dialect}: trial 1 is not SUCCEEDED");
        store.complete_trial(3, 1, &spec(), Completion::Measured(Measurement::default()), 2).await.unwrap();
        assert_eq!(store.running_averages(3, 99, 10.0, false).await.unwrap(), vec![0.25], "{dialect}: the objective was filled in");
        // New studies and operations number on from the old ids, never reusing one.
        let (next, _) = store.create_study("p", "l", "new", &spec(), 5).await.unwrap();
        assert!(next.number > 7, "{dialect}: {}", next.number);
        // The old study's spec size was filled in: a budget of the new one's size holds the
        // old one alone (with its size at 0 it would hold both).
        let new_bytes = serde_json::to_string(&spec()).unwrap().len();
        let (first, cut) = store.list_studies("p", "l", 0, 10, new_bytes).await.unwrap();
        assert_eq!((first.len(), cut), (1, true), "{dialect}");
        let mut counter = 0;
        let outcome = done(suggest(&store, request(3, "w", 1, 6), new_points(&mut counter)).await.unwrap());
        assert!(outcome.operation_id > 11, "{dialect}");
        std::fs::remove_dir_all(&old).ok();
    }
}

/// A reader polling with its cursor sees each change once it is made, in the order made: new
/// trials, trials handed out, completed and taken back by the lease; a page cut by its limit
/// goes on where it stopped; a delete makes a reader from before it start over.
#[tokio::test]
async fn changes_since_a_cursor_are_read_in_order_and_a_delete_resets_the_reader() {
    use bo_store::Cursor;
    for store in stores("trial_changes").await {
        let (study, _) = store.create_study("p", "l", "changes", &spec(), 1).await.unwrap();
        let requested = new_trial;
        for i in 1..=3 {
            store.create_trial(study.id, requested(i), 10).await.unwrap();
        }
        let ids = |c: &bo_store::TrialChanges| c.trials.iter().map(|t| t.id).collect::<Vec<_>>();
        let all = store.trial_changes(study.id, Cursor::START, 100, 1 << 20).await.unwrap();
        assert_eq!((ids(&all), all.reset, all.more), (vec![1, 2, 3], false, false));
        let quiet = store.trial_changes(study.id, all.cursor, 100, 1 << 20).await.unwrap();
        assert!(quiet.trials.is_empty() && !quiet.more, "{quiet:?}");

        // Trial 2 completed, then a suggest hands out 1 and 3: the order of the changes.
        let m = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("acc".into(), 0.5)]) };
        store.complete_trial(study.id, 2, &spec(), Completion::Measured(m), 20).await.unwrap();
        let mut counter = 100;
        done(suggest(&store, request(study.id, "w", 2, 30), new_points(&mut counter)).await.unwrap());
        let changed = store.trial_changes(study.id, quiet.cursor, 100, 1 << 20).await.unwrap();
        assert_eq!(ids(&changed), vec![2, 1, 3]);
        assert_eq!(changed.trials[0].state, TrialState::Succeeded);
        assert!(changed.trials[1..].iter().all(|t| t.state == TrialState::Active && t.client_id == "w"));

        // Pages of one and of two: the same changes, a page at a time, with a byte budget (the
        // page's size read first) and without one (a trial read past the page tells of more).
        let mut cursor = quiet.cursor;
        for (limit, budget) in [(1, 1 << 20), (1, usize::MAX), (2, usize::MAX)] {
            let (mut at, mut seen, mut pages) = (quiet.cursor, vec![], 0);
            loop {
                let page = store.trial_changes(study.id, at, limit, budget).await.unwrap();
                assert!(page.trials.len() <= limit as usize);
                seen.extend(ids(&page));
                at = page.cursor;
                pages += 1;
                if !page.more {
                    break;
                }
            }
            assert_eq!((seen, pages), (vec![2, 1, 3], 3usize.div_ceil(limit as usize)), "pages of {limit} under a budget of {budget}");
            cursor = at;
        }

        // Taken back by the trial lease: a change too.
        let mut call = request(study.id, "x", 1, 10_000);
        call.request.trial_lease_ms = Some(100);
        done(suggest(&store, call, new_points(&mut counter)).await.unwrap());
        let back = store.trial_changes(study.id, cursor, 100, 1 << 20).await.unwrap();
        assert_eq!(ids(&back), vec![1, 3], "both went back to REQUESTED, then 1 to x");
        assert_eq!(back.trials[0].client_id, "x");

        store.delete_trial(study.id, 3).await.unwrap();
        let reset = store.trial_changes(study.id, back.cursor, 100, 1 << 20).await.unwrap();
        assert!(reset.reset);
        assert_eq!(ids(&reset), vec![2, 1], "from the start, without the deleted trial");
        let after = store.trial_changes(study.id, reset.cursor, 100, 1 << 20).await.unwrap();
        assert!(!after.reset && after.trials.is_empty());
    }
}

/// Changes are read in packs of rows: across packs every trial comes back exactly as a plain
/// read gives it (floats to the last bit, text with quotes and newlines, empty and absent
/// fields), and the byte budget cuts a page after its first trial with `more`.
#[tokio::test]
async fn changes_read_in_packs_are_exact_and_cut_by_their_byte_budget() {
    use bo_store::Cursor;
    for store in stores("trial_changes_packs").await {
        let (study, _) = store.create_study("p", "l", "packs", &spec(), 1).await.unwrap();
        let awkward = [0.1 + 0.2, 5e-324, 1.7976931348623157e308, -0.0, 1.0 / 3.0, 123_456_789.123_456_79];
        for i in 0..1_100i64 {
            let mut assignment = point(i);
            assignment.0.insert("momentum".into(), ParamValue::Float(awkward[i as usize % awkward.len()] / (i + 1) as f64));
            let (state, final_measurement, infeasible_reason) = match i % 3 {
                0 => {
                    let value = awkward[(i as usize + 1) % awkward.len()];
                    let m = Measurement { step_count: i, elapsed_secs: 0.25, metrics: BTreeMap::from([("acc".into(), value)]) };
                    (TrialState::Succeeded, Some(m), String::new())
                }
                1 => (TrialState::Infeasible, None, format!("line \"{i}\"\nand a second")),
                _ => (TrialState::Requested, None, String::new()),
            };
            let new = NewTrial { assignment, state, measurements: vec![], final_measurement, infeasible_reason };
            store.create_trial(study.id, new, 1_000 + i).await.unwrap();
        }
        let plain = store.all_trials(study.id).await.unwrap();
        let all = store.trial_changes(study.id, Cursor::START, 100_000, 1 << 30).await.unwrap();
        assert!(!all.more && !all.reset);
        assert_eq!(all.trials, plain, "every trial as the plain read has it");
        assert!(all.trials.iter().all(|t| t.stop_time_ms.is_none()));

        // A budget of one byte: the first trial always, then a cut.
        let (mut cursor, mut pages) = (Cursor::START, 0);
        let first = store.trial_changes(study.id, cursor, 100_000, 1).await.unwrap();
        assert_eq!((first.trials.len(), first.more), (1, true));
        // A budget that holds about 300 trials: pages of it until the end, and nothing lost.
        let per_trial = serde_json::to_string(&plain[1].assignment).unwrap().len();
        let mut seen = vec![];
        loop {
            let page = store.trial_changes(study.id, cursor, 100_000, 300 * per_trial).await.unwrap();
            assert!(page.trials.len() <= 310, "{}", page.trials.len());
            seen.extend(page.trials.iter().map(|t| t.id));
            cursor = page.cursor;
            pages += 1;
            if !page.more {
                break;
            }
        }
        assert_eq!(seen, plain.iter().map(|t| t.id).collect::<Vec<_>>());
        assert!(pages >= 4, "{pages} pages");
    }
}

/// The overview counts each study's trials by state and finds its best final objective by the
/// study's goal and its last activity.
#[tokio::test]
async fn the_overview_counts_trials_and_finds_the_best() {
    for store in stores("overview").await {
        let (maximise, _) = store.create_study("p", "l", "max", &spec(), 1).await.unwrap();
        let mut min_spec = spec();
        min_spec.metrics[0].goal = Goal::Minimize;
        let (minimise, _) = store.create_study("p", "l", "min", &min_spec, 1).await.unwrap();
        store.create_study("p", "l", "empty", &spec(), 1).await.unwrap();
        for study in [&maximise, &minimise] {
            for (i, v) in [(1, 0.2), (2, 0.9), (3, 0.5)] {
                let m = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("acc".into(), v)]) };
                let new = NewTrial { state: TrialState::Succeeded, final_measurement: Some(m), ..new_trial(i) };
                store.create_trial(study.id, new, 100 + i).await.unwrap();
            }
            let waiting = new_trial(9);
            store.create_trial(study.id, waiting, 50).await.unwrap();
        }
        let overview = store.study_overview("p", "l", 0, 10).await.unwrap();
        assert_eq!(overview.iter().map(|o| o.study.display_name.as_str()).collect::<Vec<_>>(), ["max", "min", "empty"]);
        assert_eq!((overview[0].counts, overview[0].best, overview[0].last_activity_ms), ([1, 0, 0, 3, 0], Some(0.9), Some(103)));
        assert_eq!(overview[1].best, Some(0.2));
        assert_eq!((overview[2].counts, overview[2].best, overview[2].last_activity_ms), ([0; 5], None, None));
        assert_eq!(store.study_overview("p", "l", overview[1].study.number, 10).await.unwrap().len(), 1, "paged by number");
    }
}

/// Curves come running trials first, then the newest others, each in arrival order; a trial
/// asked to stop keeps when it was asked after it completes.
#[tokio::test]
async fn curves_put_running_trials_first_and_remember_a_stop() {
    for store in stores("curves").await {
        let (study, _) = store.create_study("p", "l", "curves", &spec(), 1).await.unwrap();
        let m =
            |step: i64, v: f64| Measurement { step_count: step, elapsed_secs: step as f64, metrics: BTreeMap::from([("acc".into(), v)]) };
        let new = |i, ms: Vec<Measurement>| NewTrial { measurements: ms, ..new_trial(i) };
        for i in 1..=4 {
            store.create_trial(study.id, new(i, if i == 3 { vec![] } else { vec![m(1, 0.1), m(2, 0.2)] }), 10).await.unwrap();
        }
        // Trial 1 done, trial 2 handed out (ACTIVE), trial 4 asked to stop at 40, then done.
        store.complete_trial(study.id, 1, &spec(), Completion::Measured(m(3, 0.3)), 20).await.unwrap();
        let mut counter = 0;
        done(suggest(&store, request(study.id, "w", 1, 30), new_points(&mut counter)).await.unwrap());
        store.stop_trial(study.id, 4, 40).await.unwrap();
        store.complete_trial(study.id, 4, &spec(), Completion::Measured(m(3, 0.4)), 50).await.unwrap();
        let read = store.curves(study.id, CurveMetric::Objective, 10, usize::MAX).await.unwrap();
        let curves = &read.curves;
        let order: Vec<(i64, TrialState)> = curves.iter().map(|c| (c.trial_id, c.state)).collect();
        assert_eq!(order, vec![(2, TrialState::Active), (4, TrialState::Succeeded), (1, TrialState::Succeeded)], "trial 3 has no curve");
        assert_eq!(curves[1].stopped_ms, Some(40));
        assert_eq!(curves[2].stopped_ms, None);
        assert_eq!(curves[0].points.iter().map(|p| (p.step_count, p.value)).collect::<Vec<_>>(), vec![(1, Some(0.1)), (2, Some(0.2))]);
        assert_eq!(store.curves(study.id, CurveMetric::Objective, 1, usize::MAX).await.unwrap().curves.len(), 1);
        // A budget of points: the first curve always, then those that fit; the rest counted.
        let cut = store.curves(study.id, CurveMetric::Objective, 10, 3).await.unwrap();
        assert_eq!((cut.curves.len(), cut.omitted), (1, 2));
        let two = store.curves(study.id, CurveMetric::Objective, 10, 4).await.unwrap();
        assert_eq!((two.curves.len(), two.omitted), (2, 1));
    }
}

/// A curve of another metric is taken out of each measurement by the database (null where a
/// measurement lacks it), and a curve longer than `CURVE_POINTS_EACH` is thinned evenly, its
/// first and last points kept.
#[tokio::test]
async fn curves_read_any_metric_and_thin_long_ones() {
    for store in stores("curves_metric").await {
        let mut two = spec();
        two.metrics.push(MetricSpec::objective("loss \"quoted\"", Goal::Minimize));
        let (study, _) = store.create_study("p", "l", "curves", &two, 1).await.unwrap();
        let n = bo_store::CURVE_POINTS_EACH + 500;
        let measurements: Vec<Measurement> = (1..=n)
            .map(|k| {
                let mut metrics = BTreeMap::from([("acc".to_owned(), k as f64)]);
                if k % 2 == 0 {
                    metrics.insert("loss \"quoted\"".to_owned(), -(k as f64));
                }
                Measurement { step_count: k, elapsed_secs: 0.5 * k as f64, metrics }
            })
            .collect();
        let new = NewTrial { measurements, ..new_trial(1) };
        store.create_trial(study.id, new, 10).await.unwrap();
        for (metric, value) in
            [(CurveMetric::Objective, None), (CurveMetric::Named("loss \"quoted\""), Some(-1.0)), (CurveMetric::Named("acc"), None)]
        {
            let read = store.curves(study.id, metric, 10, usize::MAX).await.unwrap();
            let points = &read.curves[0].points;
            assert_eq!(points.len() as i64, bo_store::CURVE_POINTS_EACH, "{metric:?}");
            assert_eq!((points[0].step_count, points.last().unwrap().step_count), (1, n), "{metric:?}: the ends kept");
            assert!(points.windows(2).all(|w| w[0].step_count < w[1].step_count && w[1].step_count - w[0].step_count <= 2));
            for p in points {
                let want = match metric {
                    CurveMetric::Named("acc") | CurveMetric::Objective => Some(p.step_count as f64),
                    _ => (p.step_count % 2 == 0).then(|| -(p.step_count as f64)),
                };
                assert_eq!(p.value, want, "{metric:?} at {}", p.step_count);
            }
            assert!(value.is_none() || points.iter().any(|p| p.value.is_none()));
        }
        let missing = store.curves(study.id, CurveMetric::Named("nothing"), 10, usize::MAX).await.unwrap();
        assert!(missing.curves[0].points.iter().all(|p| p.value.is_none()));
    }
}

/// The curve rules read from SQL what `Finished::from_trials` reads from trials in memory: the
/// most recent finished curves thinned alike, their count, the best safe final value; a stop
/// with a predicted last measurement appends it to the trial.
#[tokio::test]
async fn finished_curves_are_thinned_in_sql_as_in_memory() {
    for store in stores("finished_curves").await {
        let (study, _) = store.create_study("p", "l", "finished", &spec(), 1).await.unwrap();
        let m = |step: i64, v: f64| Measurement {
            step_count: step,
            elapsed_secs: 0.5 * step as f64,
            metrics: BTreeMap::from([("acc".into(), v)]),
        };
        let total = MAX_CURVES as i64 + 3;
        for i in 1..=total {
            // Curves of 1 to 30 points, arriving out of order once (step 2 after step 3).
            let mut ms: Vec<Measurement> = (1..=(i % 30) + 1).map(|s| m(s, (i * 7 + s) as f64 / 1000.0)).collect();
            if ms.len() >= 3 {
                ms.swap(1, 2);
            }
            let new = NewTrial { measurements: ms, ..new_trial(i) };
            store.create_trial(study.id, new, 10).await.unwrap();
            if i != total {
                store.complete_trial(study.id, i, &spec(), Completion::Measured(m(99, i as f64 / 100.0)), 20).await.unwrap();
            }
        }
        for by_elapsed in [false, true] {
            let from_sql = store.finished_curves(study.id, 0, by_elapsed, true).await.unwrap();
            let trials = store.all_trials(study.id).await.unwrap();
            let in_memory = Finished::from_trials(&spec(), &trials, 0, by_elapsed);
            assert_eq!(from_sql, in_memory, "by_elapsed {by_elapsed}");
            assert_eq!(from_sql.curves.len(), MAX_CURVES);
            assert_eq!(from_sql.count, total as usize - 1);
            assert!(from_sql.curves.iter().all(|c| c.points.len() <= CURVE_POINTS));
            assert_eq!(from_sql.best, Some((total - 1) as f64 / 100.0));
        }
        let minimum = store.finished_curves(study.id, 0, false, false).await.unwrap();
        assert_eq!(minimum.best, Some(0.01));
        // The running trial stops with the rule's predicted last measurement.
        suggest(&store, request(study.id, "w", 1, 30), |_, _, _| Ok::<_, StoreError>(Plan::Miss)).await.unwrap();
        let decision = StoppingDecision { last_measurement: Some(m(50, 0.123)), ..decided(true) };
        let (_, stop) = store.record_early_stopping(study.id, total, 40, decision, &Limits::default(), "v1").await.unwrap();
        let trial = store.get_trial(study.id, total).await.unwrap();
        assert!(stop && trial.state == TrialState::Stopping, "{:?}", trial.state);
        assert_eq!(trial.measurements.last(), Some(&m(50, 0.123)));
    }
}

/// The same statement bound first with NULLs, then with values, on one connection (a prepared
/// statement's parameter types must not come from the first call's NULLs).
#[tokio::test]
async fn nulls_then_values_on_one_connection() {
    let mut urls = vec![testing::sqlite_url()];
    if let Some(url) = testing::postgres_url("nulls_then_values").await {
        urls.push(url);
    }
    for url in urls {
        let store =
            Store::connect(&url, &StoreOptions { max_connections: 1, acquire_timeout: std::time::Duration::from_secs(10) }).await.unwrap();
        let (study, _) = store.create_study("p", "l", "nulls", &spec(), 1).await.unwrap();
        let m = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("acc".into(), 0.5)]) };
        for (i, done) in [(1, false), (2, true), (3, false), (4, true)] {
            let new = NewTrial {
                state: if done { TrialState::Succeeded } else { TrialState::Requested },
                final_measurement: done.then(|| m.clone()),
                ..new_trial(i)
            };
            store.create_trial(study.id, new, 10).await.unwrap_or_else(|e| panic!("{url}: trial {i}: {e}"));
        }
        // A measurement without the objective, then one with it.
        let other = Measurement { metrics: BTreeMap::from([("other".into(), 1.0)]), ..m.clone() };
        store.add_measurement(study.id, 1, other, &Limits::default(), 11).await.unwrap();
        store.add_measurement(study.id, 1, m.clone(), &Limits::default(), 11).await.unwrap();
        store.complete_trial(study.id, 1, &spec(), Completion::Measured(m.clone()), 12).await.unwrap();
        store.add_measurement(study.id, 3, m.clone(), &Limits::default(), 13).await.unwrap();
        let overview = store.study_overview("p", "l", 0, 10).await.unwrap();
        assert_eq!(overview[0].best, Some(0.5), "{url}");
    }
}

/// The history in buckets: each bucket's lowest and highest objective among its succeeded
/// trials and its counts; with fewer trials than buckets, one trial per bucket.
#[tokio::test]
async fn the_history_is_aggregated_in_buckets() {
    for store in stores("history").await {
        let (study, _) = store.create_study("p", "l", "history", &spec(), 1).await.unwrap();
        for i in 1..=10 {
            let m = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("acc".into(), i as f64 / 10.0)]) };
            let (state, final_measurement) = if i == 4 { (TrialState::Infeasible, None) } else { (TrialState::Succeeded, Some(m)) };
            let new = NewTrial { state, final_measurement, ..new_trial(i) };
            store.create_trial(study.id, new, 10).await.unwrap();
        }
        let (width, buckets) = store.history(study.id, 4).await.unwrap();
        assert_eq!(width, 3);
        assert_eq!(buckets.iter().map(|b| (b.first_id, b.last_id)).collect::<Vec<_>>(), vec![(1, 3), (4, 6), (7, 9), (10, 10)]);
        assert_eq!((buckets[1].min, buckets[1].max, buckets[1].succeeded, buckets[1].infeasible), (Some(0.5), Some(0.6), 2, 1));
        let (width, exact) = store.history(study.id, 1000).await.unwrap();
        assert_eq!((width, exact.len()), (1, 10));
        assert_eq!(exact[0].min, Some(0.1));
    }
}

/// A trial on the wrong side of a safety threshold is never a study's best: not in the
/// overview, not in the history's safe extremes (it still counts as unsafe there), not for the
/// no-progress rule — also after it is completed through the write path, and after the study
/// moves between databases.
#[tokio::test]
async fn unsafe_trials_are_never_the_best() {
    for store in stores("unsafe").await {
        let mut safe_spec = spec();
        safe_spec.metrics.push(MetricSpec {
            safety: Some(Safety { threshold: 1.0, desired_min_safe_fraction: 0.0 }),
            ..MetricSpec::objective("memory", Goal::Minimize)
        });
        let (study, _) = store.create_study("p", "l", "safe", &safe_spec, 1).await.unwrap();
        let m = |acc: f64, memory: f64| Measurement {
            step_count: 1,
            elapsed_secs: 0.0,
            metrics: BTreeMap::from([("acc".into(), acc), ("memory".into(), memory)]),
        };
        for (i, acc, memory) in [(1, 0.5, 0.5), (2, 0.9, 2.0), (3, 0.7, 1.0)] {
            let new = NewTrial { state: TrialState::Succeeded, final_measurement: Some(m(acc, memory)), ..new_trial(i) };
            store.create_trial(study.id, new, 10 + i).await.unwrap();
        }
        // One more through completion: the best accuracy, and unsafe.
        let running = new_trial(4);
        store.create_trial(study.id, running, 20).await.unwrap();
        store.complete_trial(study.id, 4, &safe_spec, Completion::Measured(m(0.95, 3.0)), 21).await.unwrap();
        let overview = store.study_overview("p", "l", 0, 10).await.unwrap();
        assert_eq!(overview[0].best, Some(0.7), "the best safe accuracy");
        let (_, buckets) = store.history(study.id, 1).await.unwrap();
        assert_eq!((buckets[0].max, buckets[0].safe_max, buckets[0].unsafe_trials), (Some(0.95), Some(0.7), 2));
        let dump = store.dump_study(study.id).await.unwrap();
        let moved = store.restore_study("p", "l", "moved", &dump).await.unwrap();
        let (_, buckets) = store.history(moved.id, 1).await.unwrap();
        assert_eq!((buckets[0].safe_max, buckets[0].unsafe_trials), (Some(0.7), 2), "restored trials are marked too");
        // What the optimal trials are chosen from: the safe trials' values, taken out by SQL.
        let values = store.final_values(study.id, &["acc".into(), "memory".into(), "absent \"x\"".into()]).await.unwrap();
        assert_eq!(values, vec![(1, vec![Some(0.5), Some(0.5), None]), (3, vec![Some(0.7), Some(1.0), None])]);
        assert_eq!(store.final_values(study.id, &[]).await.unwrap().iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![1, 3]);
    }
}

/// A study dumped from one database and restored into the other (SQLite → Postgres → SQLite when
/// Postgres is configured; SQLite → SQLite otherwise) keeps every trial, measurement, state,
/// time and id, and its model state; restoring under a taken name writes nothing.
#[tokio::test]
async fn a_study_moves_between_databases_whole() {
    let stores = stores("a_study_moves_between_databases_whole").await;
    let source = &stores[0];
    let (study, _) = source.create_study("p", "l", "moving", &spec(), 1_000).await.unwrap();
    let measured = |step: i64, v: f64| Measurement {
        step_count: step,
        elapsed_secs: step as f64 * 0.5,
        metrics: BTreeMap::from([("acc".to_owned(), v)]),
    };
    for i in 0..5 {
        let (state, final_measurement, reason) = match i {
            0 | 1 => (TrialState::Succeeded, Some(measured(10, 0.25 + 0.1 * i as f64)), String::new()),
            2 => (TrialState::Infeasible, None, "out of memory\nwith a line break and \"quotes\"".to_owned()),
            _ => (TrialState::Requested, None, String::new()),
        };
        let new = NewTrial {
            state,
            measurements: vec![measured(1, 0.1), measured(2, 5e-324)],
            final_measurement,
            infeasible_reason: reason,
            ..new_trial(i)
        };
        source.create_trial(study.id, new, 2_000 + i).await.unwrap();
    }
    source.delete_trial(study.id, 5).await.unwrap(); // the next id stays 6
    let state = bo_core::ModelState(serde_json::json!({"hyper": [0.1, 0.2], "seed": "17635634587443417947"}));
    source.save_model_state(study.id, &bo_store::StoredModel { data_version: 3, state, fitted_at_ms: 3_000 }).await.unwrap();
    let dump = source.dump_study(study.id).await.unwrap();
    assert_eq!((dump.trials.len(), dump.next_trial_id), (4, 6));

    let target = stores.last().unwrap();
    let moved = target.restore_study("other-project", "eu", "moved", &dump).await.unwrap();
    assert_eq!((moved.project.as_str(), moved.location.as_str(), moved.display_name.as_str()), ("other-project", "eu", "moved"));
    let again = target.dump_study(moved.id).await.unwrap();
    assert_eq!(again.trials, dump.trials);
    assert_eq!(again.model, dump.model);
    assert_eq!(again.next_trial_id, 6);
    assert_eq!(
        (again.study.spec.clone(), again.study.state, again.study.create_time_ms, again.study.data_version),
        (dump.study.spec.clone(), dump.study.state, dump.study.create_time_ms, dump.study.data_version)
    );
    // The restored study goes on where it was: the next trial is number 6.
    let added = target.create_trial(moved.id, new_trial(9), 9_000);
    assert_eq!(added.await.unwrap().id, 6);

    // Back into the first database, beside the original: a taken name is refused whole.
    match source.restore_study("p", "l", "moving", &again).await {
        Err(StoreError::AlreadyExists(m)) => assert!(m.contains("moving"), "{m}"),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(source.list_studies("p", "l", 0, 100, usize::MAX).await.unwrap().0.len(), 1);
    let back = source.restore_study("p", "l", "moving-back", &again).await.unwrap();
    assert_eq!(source.dump_study(back.id).await.unwrap().trials, again.trials);
}
