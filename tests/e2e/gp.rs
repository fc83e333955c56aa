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

    // The background refit catches up with every completed trial.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let model = loop {
        let m = s.ok_get(&format!("/studies/{study}/model"));
        if m["fittedDataVersion"] == m["dataVersion"] {
            break m;
        }
        assert!(std::time::Instant::now() < deadline, "the model never caught up: {m}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // What the model learned, and what it predicts.
    assert_eq!(model["algorithm"], "GP_BANDIT");
    assert!(model["model"]["hyperparameters"]["matern52.log_length_scale[0]"].is_number(), "{model}");
    assert_eq!(model["trials"], 24, "refitted on every completed trial");
    let point = |a: f64, b: f64| json!({"parameters": [{"parameterId": "a", "value": a}, {"parameterId": "b", "value": b}]});
    let p = s.ok_post(&format!("/studies/{study}:predict"), json!({"trials": [point(0.3, 0.7), point(1.0, 0.0)]}));
    let (center, corner) = (&p["predictions"][0], &p["predictions"][1]);
    assert!(center["mean"].as_f64().unwrap() < 0.05, "{p}");
    assert!(corner["mean"].as_f64().unwrap() > center["mean"].as_f64().unwrap() + 0.3, "{p}");
    assert!(center["stddev"].as_f64().unwrap() >= 0.0);
    let (status, body) =
        s.post(&format!("/studies/{study}:predict"), json!({"trials": [{"parameters": [{"parameterId": "a", "value": 0.3}]}]}));
    assert_eq!(status.as_u16(), 400, "a point missing an active parameter: {body}");
}

#[test]
fn studies_without_a_predictive_model_say_so() {
    let db = &databases("no_predictive_model")[0];
    let s = Server::start(db);
    let study = s.create_study(crate::conditional_study("random", "RANDOM_SEARCH"));
    let (status, body) = s.post(&format!("/studies/{study}:predict"), json!({"trials": [{"parameters": [{"parameterId": "model", "value": "linear"}, {"parameterId": "lr", "value": 0.1}, {"parameterId": "beta", "value": 0.9}]}]}));
    assert_eq!(status.as_u16(), 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("does not predict"), "{body}");
    assert_eq!(s.post(&format!("/studies/{study}:forecast"), json!({})).0.as_u16(), 404);
}
