//! Trials: kept with their measurements, listed in bounded pages, written with NULLs and values
//! on one connection.

use super::*;

async fn trials_keep_measurements_and_deleting_a_study_removes_everything(store: Store) {
    let (study, _) = store.create_study("p", "l", "m", &spec(), StudySettings::default(), 1).await.unwrap();
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

/// A page of trials stops early when their stored size passes the budget, always holding one.
async fn pages_are_bounded_by_size(store: Store) {
    let (study, _) = store.create_study("p", "l", "pages", &spec(), StudySettings::default(), 1).await.unwrap();
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
    let found = store.trials_by_id(study.id, &[4, 2, 99], Load::NoMeasurements).await.unwrap();
    assert_eq!(found.iter().map(|t| t.id).collect::<Vec<_>>(), vec![4, 2], "those that exist, in the order asked");
    // With their measurements, each trial's own, in order, as `get_trial` reads them.
    let m = |step: i64| Measurement { step_count: step, elapsed_secs: 0.5, metrics: BTreeMap::from([("acc".into(), step as f64)]) };
    for (trial, steps) in [(2, 1..=2), (3, 1..=1), (4, 3..=5)] {
        for step in steps {
            store.add_measurement(study.id, trial, m(step), &Limits::default(), 2).await.unwrap();
        }
    }
    let bare = store.trials_by_id(study.id, &[2, 4], Load::NoMeasurements).await.unwrap();
    assert!(bare.iter().all(|t| t.measurements.is_empty()));
    let full = store.trials_by_id(study.id, &[4, 2, 99], Load::Full).await.unwrap();
    let one_by_one = vec![store.get_trial(study.id, 4).await.unwrap(), store.get_trial(study.id, 2).await.unwrap()];
    assert_eq!(full, one_by_one);
    assert_eq!(full.iter().map(|t| t.measurements.len()).collect::<Vec<_>>(), vec![3, 2]);
}

/// The same statements bound first with NULLs, then with values, on one connection (a prepared
/// statement's parameter types must not come from the first call's NULLs).
async fn nulls_then_values_on_one_connection(db: Database) {
    let url = db.url;
    let store =
        Store::connect(&url, &StoreOptions { max_connections: 1, acquire_timeout: std::time::Duration::from_secs(10) }).await.unwrap();
    let (study, _) = store.create_study("p", "l", "nulls", &spec(), StudySettings::default(), 1).await.unwrap();
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
    // A study's settings, created and restored: NULLs first (the study above), then values.
    let settings = StudySettings { trial_lease_secs: Some(600.0), reproducible: Some(true), seed: Some(42) };
    let (leased, _) = store.create_study("p", "l", "leased", &spec(), settings, 2).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    assert_eq!(leased.settings, settings, "{url}");
    for (from, name) in [(study.id, "nulls again"), (leased.id, "leased again")] {
        let dump = store.dump_study(from).await.unwrap();
        let restored = store.restore_study("p", "l", name, &dump).await.unwrap_or_else(|e| panic!("{url}: {name}: {e}"));
        assert_eq!(restored.settings, dump.study.settings, "{url}: {name}");
    }
}

/// An open study grows by compare-and-set: of two growths from one revision the second is
/// refused and nothing of it is written; a running trial takes the new parameter's value once
/// (asking again keeps the first), records the revision, keeps its labels, and a completed
/// trial takes none.
async fn an_open_space_grows_once_per_revision_and_trials_take_new_values(store: Store) {
    use bo_core::space::grow::Asked;
    let open = StudySpec { open_space: true, ..spec() };
    let (study, _) = store.create_study("p", "l", "open", &open, StudySettings::default(), 1).await.unwrap();
    let labels = BTreeMap::from([("optuna.trial_number".to_owned(), "0".to_owned())]);
    let t =
        store.create_trial(study.id, NewTrial { state: TrialState::Requested, labels: labels.clone(), ..new_trial(1) }, 2).await.unwrap();
    assert_eq!((t.space_revision, &t.labels), (0, &labels));
    let asked = Asked { spec: fixtures::unit_double("extra"), parent: None, value: None };
    let grown = open.space.grown(&t.assignment, &[asked], &Limits::default()).unwrap().expect("a new parameter");
    let next = StudySpec { space: grown, space_revision: 1, ..open.clone() };
    assert!(store.grow_space(study.id, 0, &next).await.unwrap());
    assert!(!store.grow_space(study.id, 0, &StudySpec { space_revision: 1, ..open.clone() }).await.unwrap(), "revision 0 is gone");
    let read = store.get_study("p", "l", study.number).await.unwrap();
    assert_eq!(read.spec, next, "the first growth stands");
    assert_eq!(read.data_version, 1, "growing moves the data version on");
    let value = |x: f64| Assignment::new(BTreeMap::from([("extra".into(), ParamValue::Float(x))]));
    let t = store.add_trial_parameters(study.id, 1, &value(0.25), 3).await.unwrap();
    assert_eq!((t.assignment.get("extra"), t.space_revision), (Some(&ParamValue::Float(0.25)), 1));
    let again = store.add_trial_parameters(study.id, 1, &value(0.75), 4).await.unwrap();
    assert_eq!(again.assignment.get("extra"), Some(&ParamValue::Float(0.25)), "a value once given stays");
    assert_eq!(store.get_trial(study.id, 1).await.unwrap(), again);
    assert_eq!(store.all_trials(study.id).await.unwrap()[0].labels, labels);
    store.complete_trial(study.id, 1, &next, Completion::Infeasible("x".into()), 5).await.unwrap();
    let closed = store.add_trial_parameters(study.id, 1, &value(0.5), 6).await;
    assert!(matches!(closed, Err(StoreError::Trial(bo_core::TrialError::ParametersClosed { .. }))), "{closed:?}");
    assert!(matches!(store.grow_space(study.id + 1000, 1, &StudySpec { space_revision: 2, ..next }).await, Err(StoreError::NotFound(_))));
}

/// SQLite copies its write-ahead log into the database file when asked ([`Store::checkpoint`],
/// which the server calls beside serving), not inside the commit that grows the log past
/// SQLite's default of 1,000 pages, where it would hold every other writer; once copied the
/// log is reused from its start. Postgres checkpoints itself.
async fn the_log_is_checkpointed_beside_the_writes(store: Store) {
    let (study, _) = store.create_study("p", "l", "log", &spec(), StudySettings::default(), 1).await.unwrap();
    for i in 0..1_200 {
        store.create_trial(study.id, new_trial(i), 2).await.unwrap();
    }
    let Some((log, copied)) = store.checkpoint().await.unwrap() else {
        assert_eq!(store.backend(), bo_store::Backend::Postgres);
        return;
    };
    assert!(log > 1_000, "the log grew past SQLite's default without a checkpoint in a commit: {log} pages");
    assert_eq!(copied, log, "a passive checkpoint with nobody reading copies the whole log");
    store.create_trial(study.id, new_trial(0), 3).await.unwrap();
    let (log, copied) = store.checkpoint().await.unwrap().unwrap();
    assert!(log < 100 && copied == log, "the next write starts the log again: {log} pages, {copied} copied");
}

each_database! {
    the_log_is_checkpointed_beside_the_writes,
    an_open_space_grows_once_per_revision_and_trials_take_new_values,
    trials_keep_measurements_and_deleting_a_study_removes_everything,
    pages_are_bounded_by_size,
    nulls_then_values_on_one_connection,
}
