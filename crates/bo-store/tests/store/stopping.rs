//! What the stopping rules read: running averages, rung values, partial curves and the best
//! trial trained in full, aggregated in SQL.

use bo_core::stopping::spec::MedianOf;

use super::*;

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

/// The early-stopping rule's inputs come from SQL: one running average per SUCCEEDED trial over
/// its objective up to a position, or its value at the position; a recorded check stops an
/// ACTIVE trial.
async fn running_averages_are_aggregated_in_sql(store: Store) {
    let (study, _) = store.create_study("p", "l", "curves", &spec(), StudySettings::default(), 1).await.unwrap();
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
    let mut averages = store.running_averages(study.id, running.id, 2.0, false, MedianOf::RunningAverage).await.unwrap();
    averages.sort_by(f64::total_cmp);
    assert_eq!(averages.len(), 2, "succeeded trials only: {averages:?}");
    assert!((averages[0] - 0.3).abs() < 1e-12 && (averages[1] - 0.7).abs() < 1e-12, "{averages:?}");
    let by_time = store.running_averages(study.id, running.id, 0.15, true, MedianOf::RunningAverage).await.unwrap();
    assert_eq!(by_time.len(), 2);
    // Optuna's way: the value at the step itself, of the trials measured there and trained in
    // full (a trial stopped early takes no part).
    let at_step = store.running_averages(study.id, running.id, 2.0, false, MedianOf::ValueAtPosition).await.unwrap();
    assert_eq!(sorted(at_step), [0.4, 0.8]);
    let stopped = store.create_trial(study.id, add(TrialState::Active, curve(&[0.1, 0.2]), 5), 1).await.unwrap();
    store.stop_trial(study.id, stopped.id, 2).await.unwrap();
    store.complete_trial(study.id, stopped.id, &spec(), Completion::Selected, 3).await.unwrap();
    let all = store.running_averages_at(study.id, running.id, &[2.0, 3.0], false, MedianOf::RunningAverage).await.unwrap();
    assert_eq!(all.iter().map(|v| v.len()).collect::<Vec<_>>(), [3, 3], "the stopped trial counts in Vizier's rule");
    let full = store.running_averages_at(study.id, running.id, &[2.0, 3.0], false, MedianOf::ValueAtPosition).await.unwrap();
    assert_eq!(full.into_iter().map(sorted).collect::<Vec<_>>(), [vec![0.4, 0.8], vec![0.9]], "nor at 3, where only trial 1 was");
    let (op, stop) = store.record_early_stopping(study.id, running.id, 2, decided(true), &Limits::default(), "v1beta1").await.unwrap();
    assert!(stop && op == 1);
    assert_eq!(store.get_operation(study.id, op).await.unwrap().api_version, "v1beta1", "the version it was asked through is kept");
    assert_eq!(store.get_trial(study.id, running.id).await.unwrap().state, TrialState::Requested, "only an ACTIVE trial becomes STOPPING");
}

/// Successive halving's and the partial trials' reads come from SQL: each trial's value at a
/// rung is its first measurement at or past it, whatever its state; a trial asked to stop is
/// partial — its stop time is kept, its thinned curve read for the designer, and the optimal
/// trials leave it out while a trial trained in full is there.
async fn rung_values_partial_curves_and_the_best_trained_in_full(store: Store) {
    let (study, _) = store.create_study("p", "l", "rungs", &spec(), StudySettings::default(), 1).await.unwrap();
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

/// Curves come running trials first, then the newest others, each in arrival order; a trial
/// asked to stop keeps when it was asked after it completes.
async fn curves_put_running_trials_first_and_remember_a_stop(store: Store) {
    let (study, _) = store.create_study("p", "l", "curves", &spec(), StudySettings::default(), 1).await.unwrap();
    let m = |step: i64, v: f64| Measurement { step_count: step, elapsed_secs: step as f64, metrics: BTreeMap::from([("acc".into(), v)]) };
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

/// A curve of another metric is taken out of each measurement by the database (null where a
/// measurement lacks it), and a curve longer than `CURVE_POINTS_EACH` is thinned evenly, its
/// first and last points kept.
async fn curves_read_any_metric_and_thin_long_ones(store: Store) {
    let mut two = spec();
    two.metrics.push(MetricSpec::objective("loss \"quoted\"", Goal::Minimize));
    let (study, _) = store.create_study("p", "l", "curves", &two, StudySettings::default(), 1).await.unwrap();
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

/// The curve rules read from SQL what `Finished::from_trials` reads from trials in memory: the
/// most recent finished curves thinned alike, their count, the best safe final value; a stop
/// with a predicted last measurement appends it to the trial.
async fn finished_curves_are_thinned_in_sql_as_in_memory(store: Store) {
    let (study, _) = store.create_study("p", "l", "finished", &spec(), StudySettings::default(), 1).await.unwrap();
    let m =
        |step: i64, v: f64| Measurement { step_count: step, elapsed_secs: 0.5 * step as f64, metrics: BTreeMap::from([("acc".into(), v)]) };
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

each_database! {
    running_averages_are_aggregated_in_sql,
    rung_values_partial_curves_and_the_best_trained_in_full,
    curves_put_running_trials_first_and_remember_a_stop,
    curves_read_any_metric_and_thin_long_ones,
    finished_curves_are_thinned_in_sql_as_in_memory,
}
