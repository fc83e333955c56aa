//! Several `bo-server` replicas on one Postgres behave as one service (issue 6): many workers,
//! each request sent to whichever replica is next, never share a trial, and every completion
//! they were acknowledged is stored.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Database, Server, databases};

/// Replicas behind a round-robin "load balancer": each call goes to the next one.
struct Cluster {
    replicas: Vec<Server>,
    next: AtomicUsize,
}

impl Cluster {
    fn start(db: &Database, n: usize) -> Cluster {
        Cluster { replicas: (0..n).map(|_| Server::start(db)).collect(), next: AtomicUsize::new(0) }
    }

    fn any(&self) -> &Server {
        &self.replicas[self.next.fetch_add(1, Ordering::Relaxed) % self.replicas.len()]
    }

    /// Suggests one trial for `client`, following a pending operation to its end (on whichever
    /// replica is next each time it polls). `None` when the study is exhausted.
    fn suggest_one(&self, study: &str, client: &str) -> Option<Value> {
        let (status, mut op) =
            self.any().post(&format!("/studies/{study}/trials:suggest"), json!({"suggestionCount": 1, "clientId": client}));
        assert_eq!(status, StatusCode::OK, "suggest: {op}");
        let deadline = Instant::now() + Duration::from_secs(120);
        while op["done"] != true {
            assert!(Instant::now() < deadline, "a suggest operation stayed pending: {op}");
            std::thread::sleep(Duration::from_millis(20));
            let name = op["name"].as_str().expect("operation name").to_owned();
            let path = name.split_once("/locations/local").expect("operation under the location").1.to_owned();
            op = self.any().ok_get(&path);
        }
        assert!(op.get("error").is_none(), "suggest failed: {op}");
        op["response"]["trials"].as_array().and_then(|t| t.first()).cloned()
    }
}

fn study(name: &str, algorithm: &str) -> Value {
    json!({
        "displayName": name,
        "studySpec": {
            "algorithm": algorithm,
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [
                {"parameterId": "x", "doubleValueSpec": {"minValue": -5.0, "maxValue": 10.0}},
                {"parameterId": "y", "doubleValueSpec": {"minValue": 0.0, "maxValue": 15.0}},
                {"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", "sgd"]}}
            ]
        }
    })
}

/// The load: two replicas, 64 workers, 2,000 trials over four studies. Every trial is
/// handed out once, every completion is stored with the value sent, and the counts are exact.
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn two_replicas_hand_out_every_trial_once_under_64_workers() {
    let _machine = crate::harness::machine_to_myself();
    let Some(db) = databases("two_replicas").into_iter().find(|d| d.name == "postgres") else {
        eprintln!("skipped: replicas need Postgres (set BO_TEST_POSTGRES_URL)");
        return;
    };
    let cluster = Arc::new(Cluster::start(&db, 2));
    // A GP study as well: its refits run in the background of both replicas.
    let plan = [("rs", "RANDOM_SEARCH", 700), ("qrs", "QUASI_RANDOM_SEARCH", 700), ("rs2", "RANDOM_SEARCH", 400), ("gp", "GP_BANDIT", 200)];
    let studies: Vec<(String, usize)> = plan.iter().map(|(name, alg, n)| (cluster.any().create_study(study(name, alg)), *n)).collect();
    assert_eq!(studies.iter().map(|s| s.1).sum::<usize>(), 2000);
    let claimed: Arc<Vec<AtomicUsize>> = Arc::new(studies.iter().map(|_| AtomicUsize::new(0)).collect());
    // What each worker was handed and what it reported: (study index, trial id) → value.
    let reported: Arc<Mutex<BTreeMap<(usize, String), f64>>> = Arc::default();
    let workers = 64;
    let handles: Vec<_> = (0..workers)
        .map(|w| {
            let (cluster, studies, claimed, reported) = (cluster.clone(), studies.clone(), claimed.clone(), reported.clone());
            std::thread::spawn(move || {
                let client = format!("worker-{w}");
                // Each worker serves one study until it is full, then helps the others.
                for k in (0..studies.len()).map(|k| (k + w) % studies.len()) {
                    let (study, target) = &studies[k];
                    while claimed[k].fetch_add(1, Ordering::SeqCst) < *target {
                        let trial = cluster.suggest_one(study, &client).expect("the study is not exhausted");
                        let id = trial["id"].as_str().expect("trial id").to_owned();
                        let value = (w * 10_000) as f64 + id.parse::<f64>().expect("numeric id");
                        cluster.any().complete(study, &id, "loss", value);
                        let previous = reported.lock().unwrap().insert((k, id.clone()), value);
                        assert!(previous.is_none(), "trial {id} of study {study} was handed out twice");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a worker failed");
    }
    let reported = reported.lock().unwrap();
    assert_eq!(reported.len(), 2000);
    for (k, (study, target)) in studies.iter().enumerate() {
        let listed = cluster.any().ok_get(&format!("/studies/{study}/trials?pageSize=1000"));
        let trials = listed["trials"].as_array().expect("trials");
        assert_eq!(trials.len(), *target, "study {study} has exactly the trials handed out");
        let ids: HashSet<&str> = trials.iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), *target);
        for t in trials {
            let id = t["id"].as_str().unwrap().to_owned();
            assert_eq!(t["state"], "SUCCEEDED", "{t}");
            let stored = t["finalMeasurement"]["metrics"][0]["value"].as_f64().expect("a stored value");
            assert_eq!(Some(&stored), reported.get(&(k, id.clone())), "trial {id} of {study} stored what was reported");
        }
    }
}
