//! Studies: created once by name, numbered per tenant, listed in bounded pages; the model state
//! and the refit lease kept with them.

use super::*;

async fn create_is_idempotent_by_name_and_conflicts_on_a_different_spec(store: Store) {
    let (a, created) = store.create_study("p", "l", "s", &spec(), StudySettings::default(), 1).await.unwrap();
    assert!(created);
    let (b, created) = store.create_study("p", "l", "s", &spec(), StudySettings::default(), 2).await.unwrap();
    assert!(!created);
    assert_eq!(a, b);
    // A script run again expecting more trials takes the study up as it was made.
    let expecting = StudySpec { expected_trials: Some(100), ..spec() };
    let (again, created) = store.create_study("p", "l", "s", &expecting, StudySettings::default(), 2).await.unwrap();
    assert!(!created);
    assert_eq!((again.id, again.spec.expected_trials), (a.id, None));
    let mut other = spec();
    other.metrics[0].goal = Goal::Minimize;
    assert!(matches!(store.create_study("p", "l", "s", &other, StudySettings::default(), 3).await, Err(StoreError::AlreadyExists(_))));
    // Another project may use the name.
    let (c, created) = store.create_study("q", "l", "s", &other, StudySettings::default(), 4).await.unwrap();
    assert!(created && c.id != a.id);
    assert_eq!(store.lookup_study("p", "l", "s").await.unwrap().id, a.id);
    // Numbers are per project: q's study 1 is its own.
    assert_eq!(store.get_study("q", "l", a.number).await.unwrap().id, c.id);
    assert!(matches!(store.get_study("q", "l", 2).await, Err(StoreError::NotFound(Entity::Study))));
}

/// A study's settings are kept beside its spec, read back with it, and part of what a create by
/// the same name must repeat.
async fn settings_are_kept_and_part_of_the_request(store: Store) {
    let settings = StudySettings { trial_lease_secs: Some(600.0), reproducible: Some(true), seed: Some(42) };
    let (a, _) = store.create_study("p", "l", "s", &spec(), settings, 1).await.unwrap();
    assert_eq!(a.settings, settings);
    assert_eq!(store.get_study("p", "l", a.number).await.unwrap().settings, settings);
    assert_eq!(store.create_study("p", "l", "s", &spec(), settings, 2).await.unwrap(), (a.clone(), false));
    for other in [
        StudySettings::default(),
        StudySettings { reproducible: Some(false), ..settings },
        StudySettings { trial_lease_secs: Some(0.0), ..settings },
    ] {
        let again = store.create_study("p", "l", "s", &spec(), other, 3).await;
        assert!(matches!(again, Err(StoreError::AlreadyExists(_))), "{other:?}: {again:?}");
    }
    let (b, _) = store.create_study("p", "l", "unset", &spec(), StudySettings::default(), 4).await.unwrap();
    assert_eq!(store.get_study("p", "l", b.number).await.unwrap().settings, StudySettings::default(), "NULL stays None");
}

/// Studies are numbered within their project and location, operations within their study, and
/// neither number is ever given twice: a tenant's ids tell nothing of another's activity.
async fn numbers_are_per_tenant_and_never_reused(store: Store) {
    let (a1, _) = store.create_study("a", "l", "one", &spec(), StudySettings::default(), 1).await.unwrap();
    let (b1, _) = store.create_study("b", "l", "one", &spec(), StudySettings::default(), 1).await.unwrap();
    let (a2, _) = store.create_study("a", "l", "two", &spec(), StudySettings::default(), 1).await.unwrap();
    assert_eq!((a1.number, b1.number, a2.number), (1, 1, 2));
    assert_ne!(a1.id, b1.id, "the keys stay distinct");
    // Creating an existing study again uses up no number; a deleted one's is not reused.
    assert_eq!(store.create_study("a", "l", "two", &spec(), StudySettings::default(), 2).await.unwrap().0.number, 2);
    store.delete_study(a2.id).await.unwrap();
    assert_eq!(store.create_study("a", "l", "three", &spec(), StudySettings::default(), 3).await.unwrap().0.number, 3);
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

/// A page of studies stops early when their specs' stored size passes the budget (read before
/// any spec), always holding one; the overview's summary carries the algorithm and metrics
/// without reading the spec.
async fn study_pages_are_bounded_by_size(store: Store) {
    let mut specs = Vec::new();
    for k in 0..4 {
        let mut spec = spec();
        spec.algorithm = if k == 2 { "GP_BANDIT".into() } else { "RANDOM_SEARCH".into() };
        spec.metrics.push(MetricSpec::objective(&format!("m{k}"), Goal::Minimize));
        store.create_study("p", "l", &format!("s{k}"), &spec, StudySettings::default(), 1).await.unwrap();
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

async fn model_state_is_kept_and_never_overwritten_by_older_data(store: Store) {
    let (study, _) = store.create_study("p", "l", "models", &spec(), StudySettings::default(), 1).await.unwrap();
    assert_eq!(store.model_state(study.id).await.unwrap(), None);
    let m = |version: i64, tag: &str| bo_store::StoredModel {
        data_version: version,
        space_revision: 0,
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

async fn a_refit_lease_has_one_holder_until_it_is_released_or_expires(store: Store) {
    let (study, _) = store.create_study("p", "l", "leases", &spec(), StudySettings::default(), 1).await.unwrap();
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

/// A study larger than a chunk is deleted in steps, hidden from the first: another study's
/// writes go on between them, and a delete left part way (a server stopped) is invisible and
/// finished at the next start.
async fn a_large_study_is_deleted_in_steps_and_a_half_delete_is_finished(store: Store) {
    let (study, _) = store.create_study("p", "l", "large", &spec(), StudySettings::default(), 1).await.unwrap();
    let mut dump = store.dump_study(study.id).await.unwrap();
    let n = bo_store::DELETE_CHUNK * 2 + 7;
    dump.trials = (1..=n).map(|i| bo_core::Trial { start_time_ms: i, ..bo_core::Trial::new(i, point(i)) }).collect();
    let large = store.restore_study("p", "l", "copy", &dump).await.unwrap();
    assert_eq!(store.list_trials(large.id, 0, n + 1, usize::MAX).await.unwrap().0.len() as i64, n);
    store.delete_study(large.id).await.unwrap();
    assert!(matches!(store.lookup_study("p", "l", "copy").await, Err(StoreError::NotFound(Entity::Study))));
    assert!(store.list_trials(large.id, 0, 10, usize::MAX).await.unwrap().0.is_empty(), "every trial went");
    assert!(matches!(store.delete_study(large.id).await, Err(StoreError::NotFound(Entity::Study))));

    // Left part way: hidden at once, its rows still there until the next start finishes it.
    let half = store.restore_study("p", "l", "half", &dump).await.unwrap();
    testing::execute(
        &store,
        &format!(
            "UPDATE studies SET project = '', location = 'deleted', display_name = 'deleted-{0}', number = -id WHERE id = {0}",
            half.id
        ),
    )
    .await;
    assert!(matches!(store.lookup_study("p", "l", "half").await, Err(StoreError::NotFound(Entity::Study))));
    assert!(matches!(store.get_study("p", "l", half.number).await, Err(StoreError::NotFound(Entity::Study))));
    assert!(matches!(store.study_by_id(half.id).await, Err(StoreError::NotFound(Entity::Study))), "background work sees it gone");
    assert_eq!(store.locations(None, 10).await.unwrap(), vec![("p".to_owned(), "l".to_owned(), 1)], "in no location");
    assert_eq!(store.finish_deletes().await.unwrap(), 1);
    assert!(store.list_trials(half.id, 0, 10, usize::MAX).await.unwrap().0.is_empty());
    assert_eq!(store.finish_deletes().await.unwrap(), 0);
    assert_eq!(store.lookup_study("p", "l", "large").await.unwrap().id, study.id, "the others stay");
}

each_database! {
    a_large_study_is_deleted_in_steps_and_a_half_delete_is_finished,
    an_upload_commits_in_steps_and_is_seen_whole_or_not_at_all,
    create_is_idempotent_by_name_and_conflicts_on_a_different_spec,
    settings_are_kept_and_part_of_the_request,
    numbers_are_per_tenant_and_never_reused,
    study_pages_are_bounded_by_size,
    model_state_is_kept_and_never_overwritten_by_older_data,
    a_refit_lease_has_one_holder_until_it_is_released_or_expires,
}

/// An upload larger than a commit's step moves into its study in steps, the study hidden until
/// the last: a commit refused for its name leaves nothing visible and resumes when retried; an
/// upload abandoned after its commit began leaves nothing behind.
async fn an_upload_commits_in_steps_and_is_seen_whole_or_not_at_all(store: Store) {
    let (source, _) = store.create_study("p", "l", "source", &spec(), StudySettings::default(), 1).await.unwrap();
    let head = store.study_head(source.id).await.unwrap();
    let n = bo_store::COMMIT_CHUNK * 2 + 5;
    let measured = |i: i64| Measurement { step_count: 1, elapsed_secs: 1.0, metrics: BTreeMap::from([("acc".to_owned(), i as f64)]) };
    let trials: Vec<bo_core::Trial> =
        (1..=n).map(|i| bo_core::Trial { start_time_ms: i, measurements: vec![measured(i)], ..bo_core::Trial::new(i, point(i)) }).collect();
    let far = i64::MAX / 2;
    let open =
        |id: &str, name: &str| bo_store::ImportRecord::opening(id.to_owned(), "p".into(), "l".into(), name.to_owned(), "{}".into(), 1, far);
    store.open_import(&open("u1", "source"), 16).await.unwrap();
    let upload = store.stage_import_trials("p", "l", "u1", &spec(), &trials, 2, far, 10_000_000).await.unwrap();
    // Its name is taken: refused after the trials moved, and nothing of it is seen.
    assert!(matches!(store.commit_import(&upload, &head, 3, 0).await, Err(StoreError::AlreadyExists(_))));
    assert_eq!(store.locations(None, 10).await.unwrap(), vec![("p".to_owned(), "l".to_owned(), 1)]);
    assert_eq!(store.lookup_study("p", "l", "source").await.unwrap().id, source.id);
    // Retried once the name is free: it goes on from where it stopped.
    store.delete_study(source.id).await.unwrap();
    let begun = store.get_import("p", "l", "u1", 4).await.unwrap();
    assert_eq!((begun.committed_trials, begun.committed_ms), (n, None), "every trial moved, the study not shown yet");
    assert!(
        matches!(store.stage_import_trials("p", "l", "u1", &spec(), &trials[..1], 4, far, 10_000_000).await, Err(ImportError::Committing)),
        "an upload whose commit began takes no more trials"
    );
    let study = store.commit_import(&upload, &head, 4, 0).await.unwrap();
    assert_eq!((study.project.as_str(), study.location.as_str(), study.display_name.as_str()), ("p", "l", "source"));
    assert_eq!(study.number, 2, "numbered in its location at the last step");
    let (moved, _) = store.list_trials(study.id, 0, n + 1, usize::MAX).await.unwrap();
    assert_eq!(moved.len() as i64, n);
    assert!(moved.iter().all(|t| t.measurements == vec![measured(t.id)]), "each with its measurements");
    // Kept, committed, until it expires: a second commit (a client that lost the answer, or
    // another replica) answers the same study; once the study is deleted, nothing.
    let kept = store.get_import("p", "l", "u1", 5).await.unwrap();
    assert_eq!((kept.study_id, kept.committed_trials, kept.committed_ms), (Some(study.id), n, Some(4)));
    assert_eq!(store.commit_import(&upload, &head, 5, 0).await.unwrap().id, study.id);
    assert_eq!(store.list_trials(study.id, 0, n + 1, usize::MAX).await.unwrap().0.len() as i64, n, "nothing moved twice");

    // Abandoned after its commit began: its hidden study goes with it.
    store.open_import(&open("u2", "source"), 16).await.unwrap();
    let upload = store.stage_import_trials("p", "l", "u2", &spec(), &trials[..10], 6, far, 10_000_000).await.unwrap();
    assert!(matches!(store.commit_import(&upload, &head, 7, 0).await, Err(StoreError::AlreadyExists(_))));
    store.delete_import("p", "l", "u2", 8).await.unwrap();
    assert_eq!(store.finish_deletes().await.unwrap(), 0, "nothing left to delete");
    assert_eq!(store.locations(None, 10).await.unwrap(), vec![("p".to_owned(), "l".to_owned(), 1)]);

    // A committed upload does not count against the project's open uploads, and deleting it
    // leaves its study.
    store.open_import(&open("u3", "third"), 2).await.unwrap();
    store.open_import(&open("u4", "fourth"), 2).await.expect("u1 is committed, so u3 is the only one open");
    store.delete_import("p", "l", "u1", 9).await.unwrap();
    store.finish_deletes().await.unwrap();
    assert_eq!(store.study_by_id(study.id).await.unwrap().display_name, "source");
    assert!(matches!(store.commit_import(&upload, &head, 10, 0).await, Err(StoreError::NotFound(_))), "deleted: gone");
}
