//! The suggest transaction as the engine drives it: held, requested and new trials, the trial
//! lease, concurrent callers, misses, shared pending suggests, and operations' retention.

use super::*;

async fn suggest_returns_held_trials_then_requested_then_new_and_records_an_operation(store: Store) {
    let (study, _) = store.create_study("p", "l", "sg", &spec(), StudySettings::default(), 1).await.unwrap();
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

async fn a_trial_whose_client_goes_unseen_past_the_lease_goes_to_the_next_client(store: Store) {
    let (study, _) = store.create_study("p", "l", "lease", &spec(), StudySettings::default(), 1).await.unwrap();
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

async fn concurrent_suggests_never_share_a_trial(store: Store) {
    let (study, _) = store.create_study("p", "l", "cc", &spec(), StudySettings::default(), 1).await.unwrap();
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

async fn a_miss_changes_nothing_and_reports_the_basis_proposals_must_fit(store: Store) {
    let (study, _) = store.create_study("p", "l", "miss", &spec(), StudySettings::default(), 1).await.unwrap();
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

async fn a_pending_suggest_is_shared_by_its_client_and_finished_once(store: Store) {
    let (study, _) = store.create_study("p", "l", "pending", &spec(), StudySettings::default(), 1).await.unwrap();
    let op = store.begin_pending_suggest(study.id, "w", 2, "v1", &NO_LABELS, 10).await.unwrap();
    assert!(!op.done && op.suggestion_count == 2);
    assert_eq!(
        store.begin_pending_suggest(study.id, "w", 5, "v1", &NO_LABELS, 11).await.unwrap().id,
        op.id,
        "one pending suggest per client"
    );
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
    let other = store.begin_pending_suggest(study.id, "v", 1, "v1", &NO_LABELS, 20).await.unwrap();
    assert!(store.fail_operation(study.id, other.id, "the designer failed", 21).await.unwrap());
    assert!(!store.fail_operation(study.id, other.id, "again", 22).await.unwrap());
    let failed = store.get_operation(study.id, other.id).await.unwrap();
    assert_eq!((failed.done, failed.error.as_deref()), (true, Some("the designer failed")));
    assert!(store.pending_operations().await.unwrap().is_empty());
}

/// Finished operations older than the retention go, a batch at a time; pending ones stay.
async fn finished_operations_expire(store: Store) {
    let (study, _) = store.create_study("p", "l", "ops", &spec(), StudySettings::default(), 1).await.unwrap();
    let mut counter = 0;
    for t in 0..3 {
        done(suggest(&store, request(study.id, &format!("w{t}"), 1, 100 + t), new_points(&mut counter)).await.unwrap());
    }
    let pending = store.begin_pending_suggest(study.id, "slow", 1, "v1", &NO_LABELS, 50).await.unwrap();
    assert_eq!(store.delete_finished_operations(102, 10).await.unwrap(), 2, "the two before 102");
    assert!(store.get_operation(study.id, 1).await.is_err() && store.get_operation(study.id, 3).await.is_ok());
    assert_eq!(store.delete_finished_operations(1_000, 10).await.unwrap(), 1);
    assert!(!store.get_operation(study.id, pending.id).await.unwrap().done, "pending operations are kept");
}

each_database! {
    suggest_returns_held_trials_then_requested_then_new_and_records_an_operation,
    a_trial_whose_client_goes_unseen_past_the_lease_goes_to_the_next_client,
    concurrent_suggests_never_share_a_trial: multi_thread,
    a_miss_changes_nothing_and_reports_the_basis_proposals_must_fit,
    a_pending_suggest_is_shared_by_its_client_and_finished_once,
    finished_operations_expire,
}
