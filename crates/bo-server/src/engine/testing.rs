//! What the engine's unit tests share: a SQLite store, a study over one real parameter `x`
//! minimising `f`, and completed trials added to it as another client would.

use std::collections::BTreeMap;
use std::time::Duration;

use bo_core::{Assignment, Domain, Goal, Measurement, ParamSpec, ParamValue, Scale, SearchSpace, StudySpec, TrialState};
use bo_store::testing::TestDatabase;
use bo_store::{NewTrial, Store, StoreOptions, StudyRecord, StudySettings};

/// A store on a fresh SQLite file, removed when the test drops it; it reads as a [`Store`].
pub struct TestStore {
    store: Store,
    _database: TestDatabase,
}

impl std::ops::Deref for TestStore {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

/// A fresh SQLite store.
pub async fn store() -> TestStore {
    let options = StoreOptions { max_connections: 4, acquire_timeout: Duration::from_secs(10) };
    let database = TestDatabase::sqlite();
    TestStore { store: Store::connect(database.url(), &options).await.unwrap(), _database: database }
}

/// A GP_BANDIT study (with `config` as its `algorithmConfig`) over `x` in [0, 1], minimising `f`.
pub async fn study(store: &Store, name: &str, config: serde_json::Value) -> StudyRecord {
    let space = SearchSpace::new(vec![ParamSpec {
        id: "x".into(),
        domain: Domain::Double { min: 0.0, max: 1.0 },
        scale: Scale::Linear,
        default: None,
        children: vec![],
    }])
    .unwrap();
    let spec = StudySpec::new("f", Goal::Minimize, space, "GP_BANDIT").with_config(config);
    store.create_study("p", "l", name, &spec, StudySettings::default(), 1).await.unwrap().0
}

/// Adds a trial at `x` completed with `f = (x - 0.3)²`.
pub async fn complete(store: &Store, study: &StudyRecord, x: f64) {
    let mut assignment = Assignment::default();
    assignment.insert("x", ParamValue::Float(x));
    let done = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("f".to_owned(), (x - 0.3).powi(2))]) };
    let new = NewTrial {
        assignment,
        state: TrialState::Succeeded,
        measurements: vec![],
        final_measurement: Some(done),
        infeasible_reason: String::new(),
        labels: BTreeMap::new(),
    };
    store.create_trial(study.id, new, 1).await.unwrap();
}
