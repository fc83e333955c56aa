//! A GP_BANDIT study over HTTP improves on its quasi-random start while several clients work
//! at once (their in-flight trials are fantasies for each other's suggestions).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

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
    let model = s.wait_for_model(&study, "caught up", &|m| m["fittedDataVersion"] == m["dataVersion"]);
    // What the model learned, and what it predicts.
    assert_eq!(model["algorithm"], "GP_BANDIT");
    assert!(model["model"]["hyperparameters"]["matern52.log_length_scale[0]"].is_number(), "{model}");
    assert_eq!(model["trials"], 24, "refitted on every completed trial");
    let point = |a: f64, b: f64| json!({"parameters": [{"parameterId": "a", "value": a}, {"parameterId": "b", "value": b}]});
    let p = s.ok_post(&format!("/studies/{study}:predict"), json!({"trials": [point(0.3, 0.7), point(1.0, 0.0)]}));
    let (center, corner) = (&p["predictions"][0], &p["predictions"][1]);
    let at = |q: &serde_json::Value, key: &str| q[key].as_f64().unwrap_or_else(|| panic!("{key} in {p}"));
    assert!(at(center, "median") < 0.05, "{p}");
    assert!(at(corner, "median") > at(center, "median") + 0.3, "{p}");
    for q in [center, corner] {
        // The central 90 % interval holds the median, and the mean where it is given.
        assert!(at(q, "lower") <= at(q, "median") && at(q, "median") <= at(q, "upper"), "{p}");
        if q.get("mean").is_some() {
            assert!(at(q, "lower") <= at(q, "mean") && at(q, "mean") <= at(q, "upper") && at(q, "stddev") >= 0.0, "{p}");
        }
    }
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

/// A GP_BANDIT study of `loss` over the unit square.
fn bowl_study(name: &str) -> serde_json::Value {
    json!({"displayName": name, "studySpec": {
        "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
        "algorithm": "GP_BANDIT",
        "parameters": [
            {"parameterId": "a", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}},
            {"parameterId": "b", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}})
}

/// Adds `n` trials evaluated elsewhere (CreateTrial with a final measurement).
fn add_completed_trials(s: &Server, study: &str, n: usize) {
    for i in 0..n {
        let (a, b) = ((i as f64 * 0.618_034) % 1.0, (i as f64 * 0.414_214 + 0.1) % 1.0);
        let trial = json!({"parameters": [{"parameterId": "a", "value": a}, {"parameterId": "b", "value": b}]});
        let loss = bowl(&trial);
        let mut body = trial;
        body["finalMeasurement"] = json!({"metrics": [{"metricId": "loss", "value": loss}]});
        s.ok_post(&format!("/studies/{study}/trials"), body);
    }
}

/// Polls an operation until it is done.
fn wait_done(s: &Server, name: &str) -> serde_json::Value {
    let path = name.split("/locations/local").nth(1).expect("an operation of this location");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let op = s.ok_get(path);
        if op["done"] == true {
            return op;
        }
        assert!(std::time::Instant::now() < deadline, "the operation never finished: {op}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_suggest_that_cannot_answer_in_time_is_a_pending_operation_finished_in_the_background() {
    for db in databases("pending_suggest") {
        // No wait at all: every suggest the queue cannot answer becomes a pending operation.
        let s = Server::start_with(&db, &["--max-suggest-wait", "0", "--prefetch", "0"]);
        let study = s.create_study(bowl_study("slow"));
        add_completed_trials(&s, &study, 12);
        let op = s.ok_post(&format!("/studies/{study}/trials:suggest"), json!({"suggestionCount": 2, "clientId": "w"}));
        assert_eq!(op["done"], false, "{op}");
        assert!(op.get("response").is_none() && op.get("error").is_none(), "{op}");
        assert_eq!(op["metadata"]["clientId"], "w");
        let name = op["name"].as_str().unwrap().to_owned();
        // The same client asking again waits on the same operation — or, if it has finished
        // meanwhile, gets the same trials back.
        let again = s.ok_post(&format!("/studies/{study}/trials:suggest"), json!({"suggestionCount": 2, "clientId": "w"}));
        let done = wait_done(&s, &name);
        if again["done"] == false {
            assert_eq!(again["name"], name.as_str());
        } else {
            assert_eq!(again["response"]["trials"], done["response"]["trials"]);
        }
        let trials = done["response"]["trials"].as_array().expect("trials").clone();
        assert_eq!(trials.len(), 2, "{done}");
        for t in &trials {
            assert_eq!(t["state"], "ACTIVE");
            assert_eq!(t["clientId"], "w");
        }
        assert_ne!(trials[0]["parameters"], trials[1]["parameters"]);
        // Once finished, the client holds those trials: asking again returns them at once.
        let held = s.ok_post(&format!("/studies/{study}/trials:suggest"), json!({"suggestionCount": 2, "clientId": "w"}));
        assert_eq!(held["done"], true, "{held}");
        assert_eq!(held["response"]["trials"].as_array().unwrap().len(), 2);
        assert_eq!(held["response"]["trials"][0]["id"], trials[0]["id"]);
    }
}

#[test]
fn pending_suggests_left_by_a_stopped_server_are_finished_when_it_starts() {
    for db in databases("pending_after_restart") {
        let s = Server::start(&db);
        let study = s.create_study(bowl_study("left"));
        add_completed_trials(&s, &study, 12);
        assert!(s.terminate().success());
        // As if a server had stopped after answering `done: false` but before finishing.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let op = runtime.block_on(async {
            let options = bo_store::StoreOptions { max_connections: 2, acquire_timeout: std::time::Duration::from_secs(10) };
            let store = bo_store::Store::connect(&db.url, &options).await.unwrap();
            let op = store.begin_pending_suggest(study.parse().unwrap(), "w", 3, "v1", &Default::default(), 1).await.unwrap();
            store.close().await;
            op
        });
        let s = Server::start(&db);
        let done = wait_done(&s, &format!("projects/demo/locations/local/studies/{study}/operations/{}", op.id));
        assert_eq!(done["response"]["trials"].as_array().map(Vec::len), Some(3), "{done}");
        assert_eq!(s.suggest(&study, 3, "w").len(), 3, "the client holds them");
    }
}

#[test]
fn precomputed_suggestions_are_handed_out_and_refilled() {
    let db = &databases("precomputed")[0];
    let s = Arc::new(Server::start_with(db, &["--prefetch", "3"]));
    let study = s.create_study(bowl_study("prefetched"));
    add_completed_trials(&s, &study, 16);
    let wait_for = |what: &str, ok: &dyn Fn(&serde_json::Value) -> bool| s.wait_for_model(&study, what, ok);
    wait_for("fitted and prefetched", &|m| m["fittedDataVersion"] == m["dataVersion"] && m["precomputedSuggestions"] == 3);
    // Three clients at once: distinct, feasible trials.
    let handles: Vec<_> = (0..3)
        .map(|c| {
            let (s, study) = (s.clone(), study.clone());
            std::thread::spawn(move || s.suggest(&study, 1, &format!("c{c}")).remove(0))
        })
        .collect();
    let trials: Vec<serde_json::Value> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut ids: Vec<&str> = trials.iter().map(|t| t["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    for t in &trials {
        crate::assert_feasible(&s, &study, t);
    }
    assert!(trials[0]["parameters"] != trials[1]["parameters"] && trials[1]["parameters"] != trials[2]["parameters"]);
    // The queue is topped up again in the background; a completion makes it stale and the
    // refit refills it on the new data.
    wait_for("refilled", &|m| m["precomputedSuggestions"] == 3);
    let id = trials[0]["id"].as_str().unwrap();
    s.complete(&study, id, "loss", bowl(&trials[0]));
    wait_for("refitted and refilled", &|m| m["fittedDataVersion"] == m["dataVersion"] && m["precomputedSuggestions"] == 3);
}

/// `observationNoise: HIGH`: the optimal trial is the one the model predicts best, not the
/// luckiest observation. Four trials at x = 0.05 measured -0.9 and one 1.0 (noise); a smooth
/// bowl peaks at 0 at x = 0.5. Without HIGH the lucky 1.0 is optimal.
#[test]
fn high_observation_noise_ranks_the_optimal_trial_by_the_model() {
    for db in databases("high_noise_optimal") {
        let s = Server::start(&db);
        for (name, noise) in [("noisy", "HIGH"), ("plain", "OBSERVATION_NOISE_UNSPECIFIED")] {
            let study = s.create_study(json!({"displayName": name, "studySpec": {
                "metrics": [{"metricId": "m", "goal": "MAXIMIZE"}], "algorithm": "GP_BANDIT", "observationNoise": noise,
                "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}}));
            let mut points: Vec<(f64, f64)> = (0..15).map(|k| k as f64 / 14.0).map(|x| (x, -4.0 * (x - 0.5) * (x - 0.5))).collect();
            points.extend([(0.05, -0.9), (0.05, -0.9), (0.05, 1.0), (0.05, -0.9), (0.05, -0.9)]);
            for (x, v) in points {
                s.ok_post(
                    &format!("/studies/{study}/trials"),
                    json!({"parameters": [{"parameterId": "x", "value": x}], "finalMeasurement": {"metrics": [{"metricId": "m", "value": v}]}}),
                );
            }
            // Ranked by the model once it has caught up with every trial: under load the cached
            // model may still be one of the design's (which predicts nothing, so the observed
            // best would stand) when the lag wait ends.
            s.wait_for_model(&study, "caught up", &|m| m["fittedDataVersion"] == m["dataVersion"]);
            let optimal = s.ok_post(&format!("/studies/{study}/trials:listOptimalTrials"), json!({}));
            let [best] = optimal["optimalTrials"].as_array().unwrap().as_slice() else { panic!("{optimal}") };
            let x = best["parameters"][0]["value"].as_f64().unwrap();
            let value = best["finalMeasurement"]["metrics"][0]["value"].as_f64().unwrap();
            if noise == "HIGH" {
                assert!((x - 0.5).abs() < 0.2 && value > -0.2, "{name} on {}: {best}", db.name);
            } else {
                assert_eq!((x, value), (0.05, 1.0), "{name} on {}", db.name);
            }
        }
    }
}

/// A study of two metrics models both: its suggestions come from one GP per metric and an
/// acquisition over them (not the first metric alone), `:predict` answers every metric, and the
/// model's description names each objective's GP.
#[test]
fn two_metric_studies_model_every_metric() {
    for db in databases("two_metrics") {
        let s = Server::start(&db);
        let study = s.create_study(json!({"displayName": "trade-off", "studySpec": {
            "metrics": [{"metricId": "error", "goal": "MINIMIZE"}, {"metricId": "cost", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
            "parameters": [{"parameterId": "x0", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}},
                           {"parameterId": "x1", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}}));
        let measure =
            |x0: f64, x1: f64| json!({"metrics": [{"metricId": "error", "value": x0}, {"metricId": "cost", "value": 1.0 - x0 + x1 * x1}]});
        square_loop(&s, &study, 12, 3, 2, measure);
        let model = s.ok_get(&format!("/studies/{study}/model"));
        let objectives = model["model"]["objectives"].as_object().unwrap_or_else(|| panic!("{model}"));
        assert!(objectives.contains_key("error") && objectives.contains_key("cost"), "{model}");
        let predicted = s.ok_post(
            &format!("/studies/{study}:predict"),
            json!({"trials": [{"parameters": [
            {"parameterId": "x0", "value": 0.5}, {"parameterId": "x1", "value": 0.0}]}]}),
        );
        let p = &predicted["predictions"][0];
        let (error, cost) = (p["metrics"]["error"]["median"].as_f64().unwrap(), p["metrics"]["cost"]["median"].as_f64().unwrap());
        assert!((error - 0.5).abs() < 0.15 && (cost - 0.5).abs() < 0.15, "{} on {}: {predicted}", "trade-off", db.name);
        for key in ["median", "lower", "upper", "mean", "stddev"] {
            assert_eq!(p[key], p["metrics"]["error"][key], "the first metric is the top-level answer ({key})");
        }
        let optimal = s.ok_post(&format!("/studies/{study}/trials:listOptimalTrials"), json!({}));
        let front = optimal["optimalTrials"].as_array().unwrap();
        assert!(front.len() >= 3, "a front, not one best trial: {optimal}");
        // Best first by the first objective (then the second): the first is the study's best
        // trial, the one the model page and the clients name.
        let value = |t: &serde_json::Value, id: &str| {
            t["finalMeasurement"]["metrics"].as_array().unwrap().iter().find(|m| m["metricId"] == id).unwrap()["value"].as_f64().unwrap()
        };
        let errors: Vec<f64> = front.iter().map(|t| value(t, "error")).collect();
        assert!(errors.windows(2).all(|w| w[0] <= w[1]), "ordered by the first objective: {errors:?}");
    }
}

/// A safety metric is a constraint (Vertex's `safetyConfig`): echoed back as given, checked
/// (a fraction above 1 or a study of safety metrics alone is a 400 naming the field), modelled
/// beside the objective — the model names its safety GP and the constraint's state — and never
/// optimal when unsafe.
#[test]
fn safety_metrics_constrain_the_study() {
    let parameters = json!([{"parameterId": "x0", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}},
                            {"parameterId": "x1", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]);
    for db in databases("safety") {
        let s = Server::start(&db);
        for (metrics, field) in [
            (
                json!([{"metricId": "f", "goal": "MAXIMIZE"}, {"metricId": "g", "goal": "MINIMIZE", "safetyConfig": {"desiredMinSafeTrialsFraction": 1.5}}]),
                "studySpec.metrics[1].safetyConfig.desiredMinSafeTrialsFraction",
            ),
            (json!([{"metricId": "g", "goal": "MINIMIZE", "safetyConfig": {"safetyThreshold": 0.5}}]), "studySpec.metrics"),
            (json!([{"metricId": "f", "goal": "MAXIMIZE"}, {"metricId": "g", "safetyConfig": {"threshold": 0.5}}]), "threshold"),
        ] {
            let (status, body) =
                s.post("/studies", json!({"displayName": "bad", "studySpec": {"metrics": metrics, "parameters": parameters}}));
            assert_eq!(status, 400, "{metrics} on {}: {body}", db.name);
            assert!(body.to_string().contains(field), "{metrics}: the error names {field}: {body}");
        }
        // How infeasible trials are modelled is checked too: a 400 names the setting and its values.
        let (status, body) = s.post(
            "/studies",
            json!({"displayName": "bad", "studySpec": {"metrics": [{"metricId": "f"}],
            "algorithm": "GP_BANDIT", "algorithmConfig": {"infeasibleTrials": "IGNORE"}, "parameters": parameters}}),
        );
        assert!(status == 400 && body.to_string().contains("infeasibleTrials") && body.to_string().contains("CLASSIFIER"), "{body}");
        let classified = s.create_study(json!({"displayName": "classified", "studySpec": {"metrics": [{"metricId": "f"}],
            "algorithm": "GP_BANDIT", "algorithmConfig": {"infeasibleTrials": "CLASSIFIER"}, "parameters": parameters}}));
        assert_eq!(s.ok_get(&format!("/studies/{classified}"))["studySpec"]["algorithmConfig"]["infeasibleTrials"], "CLASSIFIER");
        let metrics = json!([{"metricId": "f", "goal": "MAXIMIZE"},
                             {"metricId": "g", "goal": "MINIMIZE", "safetyConfig": {"safetyThreshold": 0.5, "desiredMinSafeTrialsFraction": 0.9}}]);
        let study = s.create_study(
            json!({"displayName": "safe", "studySpec": {"metrics": metrics, "algorithm": "GP_BANDIT", "parameters": parameters}}),
        );
        let got = s.ok_get(&format!("/studies/{study}"));
        assert_eq!(got["studySpec"]["metrics"], metrics, "the safety config is echoed as given: {got}");
        let measure =
            |x0: f64, x1: f64| json!({"metrics": [{"metricId": "f", "value": x0 + x1}, {"metricId": "g", "value": x0 * x0 + x1 * x1}]});
        square_loop(&s, &study, 10, 8, 1, measure);
        let model = s.ok_get(&format!("/studies/{study}/model"));
        assert!(model["model"]["safety"]["g"].is_object(), "the safety metric's GP is described: {model}");
        assert_eq!(model["model"]["constraints"][0]["metricId"], "g", "{model}");
        assert!(model["model"]["constraints"][0]["judgedTrials"].as_u64().unwrap() >= 10, "{model}");
        let optimal = s.ok_post(&format!("/studies/{study}/trials:listOptimalTrials"), json!({}));
        let optimal = optimal["optimalTrials"].as_array().unwrap();
        assert_eq!(optimal.len(), 1, "one objective: one best trial");
        let g = optimal[0]["finalMeasurement"]["metrics"].as_array().unwrap().iter().find(|m| m["metricId"] == "g").unwrap()["value"]
            .as_f64()
            .unwrap();
        let f = optimal[0]["finalMeasurement"]["metrics"].as_array().unwrap().iter().find(|m| m["metricId"] == "f").unwrap()["value"]
            .as_f64()
            .unwrap();
        assert!(g <= 0.5, "the best trial is a safe one: {optimal:?}");
        assert!(f > 0.9, "and close to the safe optimum f = 1 after 18 trials: {optimal:?}");
        // The history's best so far may only be safe: its safe maximum is the optimal trial's.
        let history = s.ok_get(&format!("/studies/{study}/trials:history"));
        let safe_max = history["safeMax"].as_array().unwrap().iter().filter_map(|v| v.as_f64()).fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(safe_max, f, "{history}");
        let unsafe_trials: i64 = history["unsafeTrials"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).sum();
        let measured_unsafe = (1..=18)
            .filter(|id| {
                let t = s.ok_get(&format!("/studies/{study}/trials/{id}"));
                t["finalMeasurement"]["metrics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["metricId"] == "g" && m["value"].as_f64().unwrap() > 0.5)
            })
            .count() as i64;
        assert_eq!(unsafe_trials, measured_unsafe, "{history}");
    }
}

/// A study of `x0`, `x1` in the unit square: `seeded` trials added at golden-ratio points, then
/// `rounds` suggests of `batch` trials, every trial completed with `measure(x0, x1)`.
fn square_loop(s: &Server, study: &str, seeded: usize, rounds: usize, batch: i64, measure: impl Fn(f64, f64) -> Value) {
    for k in 0..seeded {
        let (x0, x1) = ((k as f64 * 0.618).fract(), (k as f64 * 0.382).fract());
        s.ok_post(
            &format!("/studies/{study}/trials"),
            json!({"parameters": [{"parameterId": "x0", "value": x0}, {"parameterId": "x1", "value": x1}], "finalMeasurement": measure(x0, x1)}),
        );
    }
    for _ in 0..rounds {
        for t in s.suggest(study, batch, "w") {
            let value =
                |id: &str| t["parameters"].as_array().unwrap().iter().find(|p| p["parameterId"] == id).unwrap()["value"].as_f64().unwrap();
            let id = t["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
            s.ok_post(&format!("/studies/{study}/trials/{id}:complete"), json!({"finalMeasurement": measure(value("x0"), value("x1"))}));
        }
    }
}
