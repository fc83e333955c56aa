//! The change cursor: trials read since a cursor, in order, in packs cut by a byte budget.

use super::*;

/// A reader polling with its cursor sees each change once it is made, in the order made: new
/// trials, trials handed out, completed and taken back by the lease; a page cut by its limit
/// goes on where it stopped; a delete makes a reader from before it start over.
async fn changes_since_a_cursor_are_read_in_order_and_a_delete_resets_the_reader(store: Store) {
    use bo_store::Cursor;
    let (study, _) = store.create_study("p", "l", "changes", &spec(), StudySettings::default(), 1).await.unwrap();
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

/// Changes are read in packs of rows: across packs every trial comes back exactly as a plain
/// read gives it (floats to the last bit, text with quotes and newlines, empty and absent
/// fields), and the byte budget cuts a page after its first trial with `more`.
async fn changes_read_in_packs_are_exact_and_cut_by_their_byte_budget(store: Store) {
    use bo_store::Cursor;
    let (study, _) = store.create_study("p", "l", "packs", &spec(), StudySettings::default(), 1).await.unwrap();
    let awkward = [0.1 + 0.2, 5e-324, 1.7976931348623157e308, -0.0, 1.0 / 3.0, 123_456_789.123_456_79];
    for i in 0..1_100i64 {
        let mut assignment = point(i);
        assignment.insert("momentum", ParamValue::Float(awkward[i as usize % awkward.len()] / (i + 1) as f64));
        let (state, final_measurement, infeasible_reason) = match i % 3 {
            0 => {
                let value = awkward[(i as usize + 1) % awkward.len()];
                let m = Measurement { step_count: i, elapsed_secs: 0.25, metrics: BTreeMap::from([("acc".into(), value)]) };
                (TrialState::Succeeded, Some(m), String::new())
            }
            1 => (TrialState::Infeasible, None, format!("line \"{i}\"\nand a second")),
            _ => (TrialState::Requested, None, String::new()),
        };
        let new = NewTrial { assignment, state, measurements: vec![], final_measurement, infeasible_reason, labels: Default::default() };
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

/// Trials of several kilobytes each are read a row at a time: exactly as a plain read gives
/// them, in order, cut by the byte budget like packs.
async fn changes_of_large_trials_are_read_a_row_at_a_time_exactly(store: Store) {
    use bo_store::Cursor;
    let (study, _) = store.create_study("p", "l", "large", &spec(), StudySettings::default(), 1).await.unwrap();
    for i in 0..40i64 {
        let mut assignment = point(i);
        // 6 KB of parameters, with a quote and a newline.
        assignment.insert("note", ParamValue::categorical(&format!("\"{i}\"\n{}", "v".repeat(6_000))));
        let m = Measurement { step_count: 1, elapsed_secs: 0.5, metrics: BTreeMap::from([("acc".into(), 1.0 / (i + 3) as f64)]) };
        let new = NewTrial {
            assignment,
            state: TrialState::Succeeded,
            measurements: vec![],
            final_measurement: Some(m),
            infeasible_reason: String::new(),
            labels: Default::default(),
        };
        store.create_trial(study.id, new, 1_000 + i).await.unwrap();
    }
    let plain = store.all_trials(study.id).await.unwrap();
    let all = store.trial_changes(study.id, Cursor::START, 100_000, 1 << 30).await.unwrap();
    assert!(!all.more);
    assert_eq!(all.trials, plain, "every trial as the plain read has it");
    let (mut cursor, mut seen, mut pages) = (Cursor::START, vec![], 0);
    loop {
        let page = store.trial_changes(study.id, cursor, 100_000, 10 * 6_000).await.unwrap();
        assert!((1..=10).contains(&page.trials.len()), "{} trials in a page", page.trials.len());
        seen.extend(page.trials);
        cursor = page.cursor;
        pages += 1;
        if !page.more {
            break;
        }
    }
    assert_eq!(seen, plain);
    assert!(pages >= 4, "{pages} pages");
}

/// A study's stored trials: read back as saved, replaced only by trials read further, not saved
/// for a study that is gone, and deleted with their study.
async fn stored_trials_keep_the_furthest_read_and_go_with_their_study(store: Store) {
    use bo_store::{Cursor, TrialSnapshot};
    let (study, _) = store.create_study("p", "l", "kept", &spec(), StudySettings::default(), 1).await.unwrap();
    assert_eq!(store.trial_snapshot(study.id).await.unwrap(), None);
    let at = |seq, trial_id, body: &str| TrialSnapshot { cursor: Cursor { seq, trial_id }, body: body.to_owned() };
    assert!(store.save_trial_snapshot(study.id, &at(5, i64::MAX, "five"), 1).await.unwrap());
    assert_eq!(store.trial_snapshot(study.id).await.unwrap(), Some(at(5, i64::MAX, "five")));
    assert!(!store.save_trial_snapshot(study.id, &at(4, i64::MAX, "four"), 2).await.unwrap(), "read less far");
    assert!(store.save_trial_snapshot(study.id, &at(5, i64::MAX, "again"), 2).await.unwrap(), "read as far: replaced");
    assert_eq!(store.trial_snapshot(study.id).await.unwrap(), Some(at(5, i64::MAX, "again")));
    assert!(store.save_trial_snapshot(study.id, &at(6, 3, "six"), 3).await.unwrap());
    assert_eq!(store.trial_snapshot(study.id).await.unwrap(), Some(at(6, 3, "six")));
    assert!(!store.save_trial_snapshot(study.id + 1000, &at(1, 1, "none"), 4).await.unwrap(), "no such study");
    store.delete_study(study.id).await.unwrap();
    assert_eq!(store.trial_snapshot(study.id).await.unwrap(), None);
}

each_database! {
    stored_trials_keep_the_furthest_read_and_go_with_their_study,
    changes_since_a_cursor_are_read_in_order_and_a_delete_resets_the_reader,
    changes_read_in_packs_are_exact_and_cut_by_their_byte_budget,
    changes_of_large_trials_are_read_a_row_at_a_time_exactly,
}
