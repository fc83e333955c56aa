//! Migrations: a newer database refused, both dialects alike, an older database brought up to
//! date with its data.

use sqlx::Row;

use super::*;

/// A database a newer bo-server migrated further than this one knows is refused at connect,
/// with a message saying so, and nothing is written to it.
async fn a_database_from_a_newer_schema_is_refused(db: Database) {
    let url = db.url;
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

/// A database of `dialect` at `url` migrated by the migrations before `first_left_out` only, as
/// an older bo-server left it, and the folder of those migrations (to remove at the end).
async fn migrated_before(dialect: &str, url: &str, first_left_out: &str) -> (sqlx::AnyPool, std::path::PathBuf) {
    sqlx::any::install_default_drivers();
    let old = std::env::temp_dir().join(testing::unique_name("bo_old_migrations"));
    std::fs::create_dir_all(&old).unwrap();
    let all = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(dialect);
    for entry in std::fs::read_dir(&all).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().as_ref() < first_left_out {
            std::fs::copy(entry.path(), old.join(entry.file_name())).unwrap();
        }
    }
    let connect_url = if dialect == "sqlite" { format!("{url}?mode=rwc") } else { url.to_owned() };
    let pool = sqlx::any::AnyPoolOptions::new().max_connections(1).connect(&connect_url).await.unwrap();
    sqlx::migrate::Migrator::new(old.as_path()).await.unwrap().run(&pool).await.unwrap();
    (pool, old)
}

/// A database made by the previous release (migrations up to 0005, with studies, measurements
/// and operations in it) is brought up to date in place: every study numbered as its id was,
/// operations likewise, each measurement's objective filled in from its metrics.
async fn an_older_database_migrates_with_its_data(db: Database) {
    let Database { dialect, url, _database: _kept } = db;
    let (pool, old) = migrated_before(dialect, &url, "0006").await;
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
    sqlx::query(
        "INSERT INTO measurements (study_id, trial_id, seq, step_count, elapsed_secs, metrics) VALUES (3, 1, 0, 5, 0, '{\"acc\": 0.25}')",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO operations (id, study_id, kind, create_time_ms) VALUES (11, 3, 'SUGGEST', 1)").execute(&pool).await.unwrap();
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
    assert_eq!(
        store.running_averages(3, 99, 10.0, false, bo_core::stopping::spec::MedianOf::RunningAverage).await.unwrap().len(),
        0,
        "{dialect}: trial 1 is not SUCCEEDED"
    );
    store.complete_trial(3, 1, &spec(), Completion::Measured(Measurement::default()), 2).await.unwrap();
    assert_eq!(
        store.running_averages(3, 99, 10.0, false, bo_core::stopping::spec::MedianOf::RunningAverage).await.unwrap(),
        vec![0.25],
        "{dialect}: the objective was filled in"
    );
    // New studies and operations number on from the old ids, never reusing one.
    let (next, _) = store.create_study("p", "l", "new", &spec(), StudySettings::default(), 5).await.unwrap();
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

/// A database from before migration 0014 kept a study's trial lease and `reproducible` inside
/// its spec's JSON: brought up to date, they are the study's settings, the spec no longer holds
/// them (nor counts their bytes), and a study that set neither keeps its spec as it was.
async fn settings_move_out_of_the_stored_spec(db: Database) {
    let Database { dialect, url, _database: _kept } = db;
    let (pool, old) = migrated_before(dialect, &url, "0014").await;
    let plain = serde_json::to_value(spec()).unwrap();
    let mut with_settings = plain.clone();
    with_settings["trial_lease_secs"] = serde_json::json!(600.0);
    with_settings["reproducible"] = serde_json::json!(true);
    let mut reproducible_only = plain.clone();
    reproducible_only["reproducible"] = serde_json::json!(false);
    for (number, spec_json) in [(1i64, &with_settings), (2, &reproducible_only), (3, &plain)] {
        let text = spec_json.to_string();
        sqlx::query(
            "INSERT INTO studies (id, number, project, location, display_name, spec, state, create_time_ms, spec_bytes, algorithm, metrics) \
             VALUES ($1, $1, 'p', 'l', $2, $3, 'ACTIVE', 1, $4, 'RANDOM_SEARCH', '[]')",
        )
        .bind(number)
        .bind(format!("s{number}"))
        .bind(&text)
        .bind(text.len() as i64)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    let store = Store::connect(&url, &options()).await.unwrap();
    let one = store.get_study("p", "l", 1).await.unwrap();
    let two = store.get_study("p", "l", 2).await.unwrap();
    let three = store.get_study("p", "l", 3).await.unwrap();
    assert_eq!(one.settings, StudySettings { trial_lease_secs: Some(600.0), reproducible: Some(true), seed: None }, "{dialect}");
    assert_eq!(two.settings, StudySettings { trial_lease_secs: None, reproducible: Some(false), seed: None }, "{dialect}");
    assert_eq!(three.settings, StudySettings::default(), "{dialect}");
    for study in [&one, &two, &three] {
        assert_eq!(study.spec, spec(), "{dialect}: the spec is the domain's alone");
    }
    // What the spec holds is what is stored, and its stored size is that of what is stored.
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    for row in sqlx::query("SELECT number, spec, spec_bytes FROM studies").fetch_all(&pool).await.unwrap() {
        let (number, raw, bytes): (i64, String, i64) =
            (row.try_get("number").unwrap(), row.try_get("spec").unwrap(), row.try_get("spec_bytes").unwrap());
        assert!(!raw.contains("trial_lease_secs") && !raw.contains("reproducible"), "{dialect}: study {number}: {raw}");
        assert_eq!(bytes, raw.len() as i64, "{dialect}: study {number}'s size");
    }
    pool.close().await;
    std::fs::remove_dir_all(&old).ok();
}

each_database! {
    a_database_from_a_newer_schema_is_refused,
    an_older_database_migrates_with_its_data,
    settings_move_out_of_the_stored_spec,
}
