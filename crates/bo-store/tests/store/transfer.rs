//! A study dumped from one database and restored into another, whole.

use super::*;

/// A study dumped from one database and restored into the other (SQLite → Postgres → SQLite when
/// Postgres is configured; SQLite → SQLite otherwise) keeps every trial, measurement, state,
/// time and id, and its model state; restoring under a taken name writes nothing.
#[tokio::test]
async fn a_study_moves_between_databases_whole() {
    let source_db = Database::sqlite();
    let source = &source_db.store().await;
    let settings = StudySettings { trial_lease_secs: Some(90.0), reproducible: Some(true), seed: None };
    let (study, _) = source.create_study("p", "l", "moving", &spec(), settings, 1_000).await.unwrap();
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
    source
        .save_model_state(study.id, &bo_store::StoredModel { data_version: 3, space_revision: 0, state, fitted_at_ms: 3_000 })
        .await
        .unwrap();
    let dump = source.dump_study(study.id).await.unwrap();
    assert_eq!((dump.trials.len(), dump.next_trial_id), (4, 6));

    let target_db = match Database::postgres("a_study_moves_between_databases_whole").await {
        Some(db) => db,
        None => Database::sqlite(),
    };
    let target = &target_db.store().await;
    let moved = target.restore_study("other-project", "eu", "moved", &dump).await.unwrap();
    assert_eq!((moved.project.as_str(), moved.location.as_str(), moved.display_name.as_str()), ("other-project", "eu", "moved"));
    let again = target.dump_study(moved.id).await.unwrap();
    assert_eq!(again.trials, dump.trials);
    assert_eq!(again.model, dump.model);
    assert_eq!(again.next_trial_id, 6);
    assert_eq!(
        (again.study.spec.clone(), again.study.settings, again.study.state, again.study.create_time_ms, again.study.data_version),
        (dump.study.spec.clone(), settings, dump.study.state, dump.study.create_time_ms, dump.study.data_version)
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
