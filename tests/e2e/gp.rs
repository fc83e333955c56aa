//! A GP_BANDIT study over HTTP improves on its quasi-random start while several clients work
//! at once (their in-flight trials are fantasies for each other's suggestions).

use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::harness::{Server, databases};

/// A smooth bowl with its minimum 0 at (0.3, 0.7) on [0, 1]².
fn bowl(trial: &serde_json::Value) -> f64 {
    let value =
        |id: &str| trial["parameters"].as_array().unwrap().iter().find(|p| p["parameterId"] == id).unwrap()["value"].as_f64().unwrap();
    (value("a") - 0.3).powi(2) + (value("b") - 0.7).powi(2)
}

#[test]
fn a_gp_bandit_study_improves_with_several_clients() {
    let db = &databases("gp_bandit_improves")[0];
    let s = Arc::new(Server::start(db));
    let study = s.create_study(json!({"displayName": "bowl", "studySpec": {
        "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
        "algorithm": "GP_BANDIT",
        "parameters": [
            {"parameterId": "a", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}},
            {"parameterId": "b", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}}));
    let results: Arc<Mutex<Vec<(String, f64)>>> = Arc::default();
    let clients: Vec<_> = (0..3)
        .map(|c| {
            let (s, study, results) = (s.clone(), study.clone(), results.clone());
            std::thread::spawn(move || {
                for _ in 0..8 {
                    let trial = s.suggest(&study, 1, &format!("worker-{c}")).remove(0);
                    let loss = bowl(&trial);
                    let id = trial["id"].as_str().unwrap().to_owned();
                    s.complete(&study, &id, "loss", loss);
                    results.lock().unwrap().push((id, loss));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    let mut results = results.lock().unwrap().clone();
    assert_eq!(results.len(), 24);
    results.sort_by_key(|(id, _)| id.parse::<i64>().unwrap());
    let first = results[..4].iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let best = results.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    assert!(best < 0.01, "GP_BANDIT should get close to the bowl's minimum in 24 trials: best {best}, quasi-random start {first}");
    assert!(best < first, "the GP phase improves on the initial design");
}
