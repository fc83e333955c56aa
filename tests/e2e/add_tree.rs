//! An ADD_TREE study over HTTP on Ma & Blaschko 2020's Jenatton function: four clients at once, each
//! one's in-flight trial a fantasy for the others' suggestions, none given a point another has.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::harness::{Server, databases};

fn jenatton_spec() -> Value {
    let double = |id: &str, min: f64, max: f64| json!({"parameterId": id, "doubleValueSpec": {"minValue": min, "maxValue": max}});
    let under = |value: &str, spec: Value| json!({"parentCategoricalValues": {"values": [value]}, "parameterSpec": spec});
    let binary = |id: &str, children: Vec<Value>| json!({"parameterId": id, "categoricalValueSpec": {"values": ["0", "1"]}, "conditionalParameterSpecs": children});
    json!({
        "metrics": [{"metricId": "f", "goal": "MINIMIZE"}],
        "algorithm": "ADD_TREE",
        "parameters": [binary("x1", vec![
            under("0", double("r8", 0.0, 1.0)),
            under("0", binary("x2", vec![under("0", double("x4", -1.0, 1.0)), under("1", double("x5", -1.0, 1.0))])),
            under("1", double("r9", 0.0, 1.0)),
            under("1", binary("x3", vec![under("0", double("x6", -1.0, 1.0)), under("1", double("x7", -1.0, 1.0))])),
        ])],
    })
}

/// The Jenatton et al. (2017) function, minimum 0.1.
fn jenatton(trial: &Value) -> f64 {
    let params = trial["parameters"].as_array().unwrap();
    let get = |id: &str| params.iter().find(|p| p["parameterId"] == id).map(|p| p["value"].clone());
    let num = |id: &str| get(id).unwrap_or_else(|| panic!("{id} missing from {trial}")).as_f64().unwrap();
    let cat = |id: &str| get(id).and_then(|v| v.as_str().map(str::to_owned));
    let active: Vec<&str> = params.iter().map(|p| p["parameterId"].as_str().unwrap()).collect();
    let (x1, x2, x3) = (cat("x1").unwrap(), cat("x2"), cat("x3"));
    let (value, expected) = match (x1.as_str(), x2.as_deref(), x3.as_deref()) {
        ("0", Some("0"), None) => (num("x4").powi(2) + 0.1 + num("r8"), ["x1", "r8", "x2", "x4"]),
        ("0", Some("1"), None) => (num("x5").powi(2) + 0.2 + num("r8"), ["x1", "r8", "x2", "x5"]),
        ("1", None, Some("0")) => (num("x6").powi(2) + 0.3 + num("r9"), ["x1", "r9", "x3", "x6"]),
        ("1", None, Some("1")) => (num("x7").powi(2) + 0.4 + num("r9"), ["x1", "r9", "x3", "x7"]),
        other => panic!("not a path of the tree: {other:?} in {trial}"),
    };
    let mut sorted = active.clone();
    sorted.sort_unstable();
    let mut expected = expected.to_vec();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "exactly the active parameters");
    value
}

#[test]
fn an_add_tree_study_finds_the_jenatton_optimum_with_four_clients() {
    let db = &databases("add_tree_jenatton")[0];
    let s = Arc::new(Server::start(db));
    let study = s.create_study(json!({"displayName": "jenatton", "studySpec": jenatton_spec()}));
    let results: Arc<Mutex<Vec<(String, String, f64)>>> = Arc::default();
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (s, study, results) = (s.clone(), study.clone(), results.clone());
            std::thread::spawn(move || {
                for _ in 0..15 {
                    let trial = s.suggest(&study, 1, &format!("worker-{c}")).remove(0);
                    let f = jenatton(&trial);
                    let id = trial["id"].as_str().unwrap().to_owned();
                    s.complete(&study, &id, "f", f);
                    results.lock().unwrap().push((id, trial["parameters"].to_string(), f));
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
    let results = results.lock().unwrap().clone();
    assert_eq!(results.len(), 60);
    let points: std::collections::HashSet<&String> = results.iter().map(|r| &r.1).collect();
    assert_eq!(points.len(), 60, "no two clients were given the same point");
    let best = results.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
    assert!(best - 0.1 < 1e-3, "ADD_TREE should reach the optimum 0.1 within 60 trials: best {best}");

    let model = s.ok_get(&format!("/studies/{study}/model"));
    assert_eq!(model["algorithm"], "ADD_TREE");
    let tree = model["model"]["tree"].as_array().unwrap_or_else(|| panic!("{model}"));
    let vertex = tree.iter().find(|v| v["vertex"] == "x2=0").unwrap_or_else(|| panic!("{model}"));
    assert_eq!(vertex["parameters"], json!(["x4"]));
    assert!(vertex["hyperparameters"]["log_bias"].is_number(), "{model}");
    assert_eq!(model["model"]["paths"], 4);
}
