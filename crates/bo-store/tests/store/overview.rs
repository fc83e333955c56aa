//! What the dashboard reads: the overview of studies, the history in buckets, the best safe trial.

use super::*;

/// The overview counts each study's trials by state and finds its best final objective by the
/// study's goal and its last activity.
async fn the_overview_counts_trials_and_finds_the_best(store: Store) {
    let (maximise, _) = store.create_study("p", "l", "max", &spec(), StudySettings::default(), 1).await.unwrap();
    let mut min_spec = spec();
    min_spec.metrics[0].goal = Goal::Minimize;
    let (minimise, _) = store.create_study("p", "l", "min", &min_spec, StudySettings::default(), 1).await.unwrap();
    store.create_study("p", "l", "empty", &spec(), StudySettings::default(), 1).await.unwrap();
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

/// The history in buckets: each bucket's lowest and highest objective among its succeeded
/// trials and its counts; with fewer trials than buckets, one trial per bucket.
async fn the_history_is_aggregated_in_buckets(store: Store) {
    let (study, _) = store.create_study("p", "l", "history", &spec(), StudySettings::default(), 1).await.unwrap();
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

/// A trial on the wrong side of a safety threshold is never a study's best: not in the
/// overview, not in the history's safe extremes (it still counts as unsafe there), not for the
/// no-progress rule — also after it is completed through the write path, and after the study
/// moves between databases.
async fn unsafe_trials_are_never_the_best(store: Store) {
    let mut safe_spec = spec();
    safe_spec.metrics.push(MetricSpec {
        safety: Some(Safety { threshold: 1.0, desired_min_safe_fraction: 0.0 }),
        ..MetricSpec::objective("memory", Goal::Minimize)
    });
    let (study, _) = store.create_study("p", "l", "safe", &safe_spec, StudySettings::default(), 1).await.unwrap();
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

each_database! {
    the_overview_counts_trials_and_finds_the_best,
    the_history_is_aggregated_in_buckets,
    unsafe_trials_are_never_the_best,
}
