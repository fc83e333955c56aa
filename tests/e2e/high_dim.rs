//! The high-dimensional designers over HTTP: an ADD_GP_UCB study shows the groups it learned, an
//! AUTO study which model it chose and the scores why, an OVERLAP_ADD_GP study its graph, a REMBO
//! study its embeddings, and settings they cannot honour are refused with a 400 naming
//! what is wrong, creating nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Server, databases, message};

fn box_study(name: &str, algorithm: &str, d: usize, config: Value) -> Value {
    let params: Vec<Value> =
        (0..d).map(|i| json!({"parameterId": format!("x{i}"), "doubleValueSpec": {"minValue": -1.0, "maxValue": 1.0}})).collect();
    json!({
        "displayName": name,
        "studySpec": {
            "metrics": [{"metricId": "f", "goal": "MINIMIZE"}],
            "algorithm": algorithm,
            "algorithmConfig": config,
            "parameters": params,
        },
    })
}

/// Σ of squares of the trial's values (minimum 0 at the centre).
fn bowl(trial: &Value) -> f64 {
    trial["parameters"].as_array().unwrap().iter().map(|p| p["value"].as_f64().unwrap().powi(2)).sum()
}

fn run(s: &Server, study: &str, n: usize) {
    for _ in 0..n {
        let trial = s.suggest(study, 1, "worker").remove(0);
        let id = trial["id"].as_str().unwrap().to_owned();
        s.complete(study, &id, "f", bowl(&trial));
    }
}

/// The study's model once it is fitted on all its data (refits run in the background).
fn fitted_model(s: &Server, study: &str) -> Value {
    s.wait_for_model(study, "fitted on all its data", &|m| m["fittedDataVersion"] == m["dataVersion"])
}

#[test]
fn high_dimensional_designers_show_what_they_learned_and_refuse_what_they_cannot_do() {
    for db in databases("high_dim") {
        let s = Server::start(&db);

        let study = s.create_study(box_study("additive", "ADD_GP_UCB", 6, json!({"groupSize": 2})));
        run(&s, &study, 14);
        let model = fitted_model(&s, &study);
        assert_eq!(model["algorithm"], "ADD_GP_UCB", "{model}");
        let groups: Vec<Vec<String>> = serde_json::from_value(model["model"]["groups"].clone()).unwrap_or_else(|e| panic!("{e}: {model}"));
        let mut ids: Vec<String> = groups.iter().flatten().cloned().collect();
        ids.sort();
        assert_eq!(ids, (0..6).map(|i| format!("x{i}")).collect::<Vec<_>>(), "a partition of the parameters: {model}");
        assert!(groups.iter().all(|g| g.len() <= 2), "{model}");

        // AUTO (named by Vertex's synonym, and with a short design) compares the flat and the
        // additive model and says which it chose and why.
        let study = s.create_study(box_study("auto", "ALGORITHM_UNSPECIFIED", 6, json!({"initialDesignSize": 8})));
        run(&s, &study, 12);
        let model = fitted_model(&s, &study);
        let auto = &model["model"]["auto"];
        let chosen = auto["chosen"].as_str().unwrap_or_else(|| panic!("{model}"));
        assert!(["GP_BANDIT", "ADD_GP_UCB"].contains(&chosen), "{model}");
        let scores = auto["scores"].as_object().unwrap_or_else(|| panic!("{model}"));
        assert_eq!(scores.keys().collect::<Vec<_>>(), ["GP_BANDIT", "ADD_GP_UCB"], "the default first: {model}");
        assert!(scores.values().all(|v| v["mean"].as_f64().is_some_and(f64::is_finite)), "{model}");
        assert!(auto["examinedAt"].as_u64().is_some_and(|n| (8..=12).contains(&n)), "{model}");

        let study = s.create_study(box_study("embedded", "REMBO", 10, json!({"d": 2, "k": 2})));
        run(&s, &study, 10);
        let model = fitted_model(&s, &study);
        assert_eq!(model["algorithm"], "REMBO", "{model}");
        assert_eq!((model["model"]["d"].clone(), model["model"]["k"].clone()), (json!(2), json!(2)), "{model}");
        let embeddings = model["model"]["embeddings"].as_array().unwrap_or_else(|| panic!("{model}"));
        assert_eq!(embeddings.len(), 2);
        assert!(embeddings.iter().all(|e| e["seed"].as_str().is_some_and(|s| s.parse::<u64>().is_ok())), "{model}");
        assert_eq!(model["model"]["unmatchedTrials"], 0, "REMBO recovers its own trials: {model}");
        // Along an embedding's own coordinates: through its best point and across the box.
        let best_y = embeddings[0]["bestY"].clone();
        assert_eq!(best_y.as_array().map(Vec::len), Some(2), "{model}");
        let predicted = s.ok_post(
            &format!("/studies/{study}:predict"),
            json!({"embedded": {"embedding": 0, "points": [best_y, [-1.0, 0.0], [1.0, 1.0]]}}),
        );
        let answers = predicted["predictions"].as_array().unwrap_or_else(|| panic!("{predicted}"));
        assert_eq!(answers.len(), 3, "{predicted}");
        for p in answers {
            let (lower, median, upper) = (p["lower"].as_f64().unwrap(), p["median"].as_f64().unwrap(), p["upper"].as_f64().unwrap());
            assert!(lower <= median && median <= upper && (upper - lower).is_finite(), "{predicted}");
        }
        for (body, field) in [
            (json!({"embedded": {"embedding": 2, "points": [[0.0, 0.0]]}}), "embedded.embedding"),
            (json!({"embedded": {"embedding": 0, "points": [[0.0, 0.0, 0.0]]}}), "embedded.points[0]"),
            (json!({"embedded": {"embedding": 0, "points": [[0.0, 1.5]]}}), "embedded.points[0]"),
            (json!({"embedded": {"embedding": 0, "points": []}}), "embedded.points"),
            (json!({"embedded": {"embedding": 0, "points": vec![[0.0, 0.0]; 1001]}}), "embedded.points: 1001 points; 1 to 1000"),
            (json!({"embedded": {"embedding": 1e20, "points": [[0.0, 0.0]]}}), ""),
            (json!({"embedded": {"embedding": 0, "points": [[0.0, 0.0]]}, "trials": [{"parameters": []}]}), "trials"),
        ] {
            let (status, answer) = s.post(&format!("/studies/{study}:predict"), body.clone());
            assert_eq!(status, 400, "{body}: {answer}");
            assert!(answer["error"]["message"].as_str().is_some_and(|m| m.starts_with(field)), "{body}: {answer}");
        }

        let study = s.create_study(box_study("graph", "OVERLAP_ADD_GP", 5, json!({"gibbsBudget": 60, "relearnEvery": 5})));
        run(&s, &study, 12);
        let model = fitted_model(&s, &study);
        assert_eq!(model["algorithm"], "OVERLAP_ADD_GP", "{model}");
        assert!(model["model"]["edges"].is_array(), "{model}");
        let mut covered: Vec<String> = serde_json::from_value::<Vec<Vec<String>>>(model["model"]["cliques"].clone())
            .unwrap_or_else(|e| panic!("{e}: {model}"))
            .concat();
        covered.sort();
        covered.dedup();
        assert_eq!(covered.len(), 5, "every parameter is in a clique: {model}");
        // A model without embeddings says so, naming the field.
        let (status, answer) = s.post(&format!("/studies/{study}:predict"), json!({"embedded": {"embedding": 0, "points": [[0.0]]}}));
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"]["message"].as_str().is_some_and(|m| m.starts_with("embedded: the study's model has no random embeddings")),
            "{answer}"
        );

        for (body, field) in [
            (box_study("too deep", "REMBO", 10, json!({"d": 20})), "d"),
            (box_study("overlap", "ADD_GP_UCB", 4, json!({"groups": [["x0", "x1"], ["x1", "x2"]]})), "groups"),
            (box_study("narrow auto", "AUTO", 3, json!({"models": ["ADD_GP_UCB"]})), "models"),
        ] {
            let (status, v) = s.post("/studies", body);
            assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
            assert!(message(&v).contains(&format!("algorithmConfig.{field}")), "{v}");
        }
        let (_, list) = s.get("/studies");
        assert_eq!(list["studies"].as_array().map(Vec::len), Some(4), "the refused studies were not created: {list}");
    }
}
