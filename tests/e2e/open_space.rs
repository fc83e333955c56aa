//! Studies whose search space grows (`openSearchSpace`, a bo extension): a define-by-run
//! objective's parameters added as trials ask for them, placed under the parent value they were
//! asked under, by many workers at once; what is refused and why.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::harness::{Server, databases, message};

fn open_study(name: &str, algorithm: &str) -> Value {
    json!({
        "displayName": name,
        "studySpec": {
            "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
            "algorithm": algorithm,
            "openSearchSpace": true,
            "parameters": []
        }
    })
}

fn categorical(id: &str, values: &[&str]) -> Value {
    json!({"parameterId": id, "categoricalValueSpec": {"values": values}})
}

fn log_double(id: &str, min: f64, max: f64) -> Value {
    json!({"parameterId": id, "doubleValueSpec": {"minValue": min, "maxValue": max}, "scaleType": "UNIT_LOG_SCALE"})
}

fn integer(id: &str, min: i64, max: i64) -> Value {
    json!({"parameterId": id, "integerValueSpec": {"minValue": min.to_string(), "maxValue": max.to_string()}})
}

/// Asks trial `trial` for one parameter under `parent` (or at the root) and returns its value.
fn ask(s: &Server, study: &str, trial: &str, spec: Value, parent: Option<&str>) -> Value {
    let mut entry = json!({"parameterSpec": spec.clone()});
    if let Some(parent) = parent {
        entry["parentParameterId"] = json!(parent);
    }
    let t = s.ok_post(&format!("/studies/{study}/trials/{trial}:addTrialParameters"), json!({"parameters": [entry]}));
    let id = spec["parameterId"].as_str().unwrap();
    t["parameters"].as_array().unwrap().iter().find(|p| p["parameterId"] == id).unwrap_or_else(|| panic!("{id} in {t}"))["value"].clone()
}

/// Optuna's `sklearn_simple.py` as bo sees it: a branch, then a parameter of that branch only;
/// the first trial on the small (integer) branch. Every trial completes, the spec ends with each
/// branch's parameter under its value, and each trial holds exactly its branch's parameters.
#[test]
fn a_define_by_run_tree_grows_under_its_branches() {
    for db in databases("a_define_by_run_tree_grows_under_its_branches") {
        let s = Server::start(&db);
        let study = s.create_study(open_study("sklearn-simple", "AUTO"));
        let created = s.ok_get(&format!("/studies/{study}"));
        assert_eq!(created["studySpec"]["openSearchSpace"], true);
        assert!(created["studySpec"].get("searchSpaceRevision").is_none(), "revision 0 is not shown: {created}");
        for i in 0..30 {
            let t = s.suggest(&study, 1, &format!("w{i}")).remove(0);
            let id = t["id"].as_str().unwrap().to_owned();
            // The first trial takes the small branch, as the crash needed.
            let classifier = if i == 0 {
                let body = json!({"parameters": [{"parameterSpec": categorical("classifier", &["SVC", "RandomForest"]), "value": "RandomForest"}]});
                s.ok_post(&format!("/studies/{study}/trials/{id}:addTrialParameters"), body);
                json!("RandomForest")
            } else {
                ask(&s, &study, &id, categorical("classifier", &["SVC", "RandomForest"]), None)
            };
            let value = if classifier == "SVC" {
                let c = ask(&s, &study, &id, log_double("svc_c", 1e-10, 1e10), Some("classifier")).as_f64().unwrap();
                1.0 - (c.log10() - 1.0).abs() / 20.0
            } else {
                let depth = ask(&s, &study, &id, integer("rf_max_depth", 2, 32), Some("classifier")).as_i64().unwrap();
                0.9 - (depth as f64 - 5.0).abs() / 100.0
            };
            let done = s.complete(&study, &id, "accuracy", value);
            assert_eq!(done["state"], "SUCCEEDED", "{done}");
            let names: Vec<&str> = done["parameters"].as_array().unwrap().iter().map(|p| p["parameterId"].as_str().unwrap()).collect();
            let want = if classifier == "SVC" { "svc_c" } else { "rf_max_depth" };
            assert_eq!(names, ["classifier", want], "{} trial {id}: {done}", db.name);
            assert!(done["searchSpaceRevision"].as_str().unwrap_or("0").parse::<i64>().unwrap() >= 1, "{done}");
        }
        let spec = &s.ok_get(&format!("/studies/{study}"))["studySpec"];
        let root = &spec["parameters"];
        assert_eq!(root.as_array().unwrap().len(), 1, "one root: {spec}");
        let children: Vec<(String, String)> = root[0]["conditionalParameterSpecs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["parameterSpec"]["parameterId"].as_str().unwrap().to_owned(),
                    c["parentCategoricalValues"]["values"][0].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(children, [("rf_max_depth".to_owned(), "RandomForest".to_owned()), ("svc_c".to_owned(), "SVC".to_owned())], "{spec}");
        assert_eq!(spec["searchSpaceRevision"], "3", "three parameters, three revisions: {spec}");
        // A later trial gets its branch's parameter from the suggest itself.
        let t = s.suggest(&study, 1, "late").remove(0);
        assert_eq!(t["parameters"].as_array().unwrap().len(), 2, "{t}");
        // Asking again for what the study knows, as a second worker of the script does, is the
        // same study.
        let again = s.ok_post("/studies", open_study("sklearn-simple", "AUTO"));
        assert!(again["name"].as_str().unwrap().ends_with(&format!("/studies/{study}")), "{again}");
    }
}

/// Many workers ask for the same new parameters at once: one space, each parameter once, every
/// trial with a value of the parameters it asked for.
#[test]
fn racing_workers_grow_one_space() {
    for db in databases("racing_workers_grow_one_space") {
        let s = std::sync::Arc::new(Server::start(&db));
        let study = s.create_study(open_study("race", "RANDOM_SEARCH"));
        let handles: Vec<_> = (0..8)
            .map(|w| {
                let (s, study) = (s.clone(), study.clone());
                std::thread::spawn(move || {
                    let t = s.suggest(&study, 1, &format!("w{w}")).remove(0);
                    let id = t["id"].as_str().unwrap().to_owned();
                    let opt = ask(&s, &study, &id, categorical("opt", &["adam", "sgd"]), None);
                    let lr = ask(&s, &study, &id, log_double("lr", 1e-5, 1.0), Some("opt"));
                    let x = ask(&s, &study, &id, json!({"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}), None);
                    s.complete(&study, &id, "accuracy", lr.as_f64().unwrap() + x.as_f64().unwrap());
                    opt
                })
            })
            .collect();
        let opts: Vec<Value> = handles.into_iter().map(|h| h.join().expect("a worker")).collect();
        let spec = &s.ok_get(&format!("/studies/{study}"))["studySpec"];
        let ids = |v: &Value| -> Vec<String> {
            let mut out = Vec::new();
            fn walk(p: &Value, out: &mut Vec<String>) {
                out.push(p["parameterId"].as_str().unwrap().to_owned());
                for c in p["conditionalParameterSpecs"].as_array().into_iter().flatten() {
                    walk(&c["parameterSpec"], out);
                }
            }
            for p in v.as_array().unwrap() {
                walk(p, &mut out);
            }
            out.sort();
            out
        };
        assert_eq!(ids(&spec["parameters"]), ["lr", "opt", "x"], "each parameter once: {spec}");
        if opts.iter().any(|o| o == "adam") && opts.iter().any(|o| o == "sgd") {
            // lr was asked under both values of opt: a root parameter.
            assert!(spec["parameters"].as_array().unwrap().iter().any(|p| p["parameterId"] == "lr"), "{spec}");
        }
        let trials = s.ok_get(&format!("/studies/{study}/trials"));
        for t in trials["trials"].as_array().unwrap() {
            assert_eq!(t["state"], "SUCCEEDED", "{t}");
            assert_eq!(t["parameters"].as_array().unwrap().len(), 3, "{t}");
        }
    }
}

/// What a growth refuses, naming the field; nothing of a refused request is kept.
#[test]
fn growth_refuses_what_it_cannot_take() {
    for db in databases("growth_refuses_what_it_cannot_take") {
        let s = Server::start(&db);
        let study = s.create_study(open_study("refusals", "AUTO"));
        let t = s.suggest(&study, 1, "w").remove(0);
        let id = t["id"].as_str().unwrap().to_owned();
        ask(&s, &study, &id, log_double("lr", 1e-5, 1.0), None);
        let verb = format!("/studies/{study}/trials/{id}:addTrialParameters");
        let (status, body) = s.post(&verb, json!({"parameters": [{"parameterSpec": log_double("lr", 1e-4, 1.0)}]}));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(message(&body).starts_with("parameters[0].parameterSpec:") && message(&body).contains("fixed at first use"), "{body}");
        let (status, body) = s.post(&verb, json!({"parameters": [{"parameterSpec": integer("n", 1, 3), "parentParameterId": "lr"}]}));
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&body).contains("parentParameterId") && message(&body).contains("DOUBLE"), "{body}");
        let (status, body) = s.post(&verb, json!({"parameters": [{"parameterSpec": integer("n", 1, 3), "value": 7}]}));
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&body).starts_with("parameters[0].value:"), "{body}");
        let (status, body) = s.post(&verb, json!({"parameters": []}));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let with_children = json!({"parameterId": "c", "categoricalValueSpec": {"values": ["a"]},
            "conditionalParameterSpecs": [{"parentCategoricalValues": {"values": ["a"]}, "parameterSpec": integer("k", 1, 2)}]});
        let (status, body) = s.post(&verb, json!({"parameters": [{"parameterSpec": with_children}]}));
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&body).contains("conditionalParameterSpecs"), "{body}");
        let spec = &s.ok_get(&format!("/studies/{study}"))["studySpec"];
        assert_eq!(spec["parameters"].as_array().unwrap().len(), 1, "nothing refused was kept: {spec}");
        // A completed trial takes no parameter; a fixed study grows not at all.
        s.complete(&study, &id, "accuracy", 0.5);
        let (status, body) = s.post(&verb, json!({"parameters": [{"parameterSpec": integer("n", 1, 3)}]}));
        assert_eq!((status, body["error"]["status"].as_str()), (StatusCode::BAD_REQUEST, Some("FAILED_PRECONDITION")), "{body}");
        let fixed = s.create_study(crate::conditional_study("fixed", "RANDOM_SEARCH"));
        let t = s.suggest(&fixed, 1, "w").remove(0);
        let (status, body) = s.post(
            &format!("/studies/{fixed}/trials/{}:addTrialParameters", t["id"].as_str().unwrap()),
            json!({"parameters": [{"parameterSpec": integer("n", 1, 3)}]}),
        );
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&body).contains("openSearchSpace"), "{body}");
        let (status, body) = s.post("/studies", open_study("grid", "GRID_SEARCH"));
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&body).starts_with("studySpec.openSearchSpace:"), "{body}");
        let (status, body) =
            s.post("/studies", json!({"displayName": "empty", "studySpec": {"metrics": [{"metricId": "m"}], "parameters": []}}));
        assert_eq!(status, StatusCode::BAD_REQUEST, "a fixed study still needs a parameter: {body}");
    }
}

/// A trial evaluated elsewhere (an enqueued Optuna trial): the study grows with its parameters
/// (`:addParameters`, in the order asked, each under an earlier value), and the trial is added
/// with them; labels are kept on created and suggested trials.
#[test]
fn parameters_asked_outside_a_trial_and_labels() {
    for db in databases("parameters_asked_outside_a_trial_and_labels") {
        let s = Server::start(&db);
        let study = s.create_study(open_study("enqueued", "AUTO"));
        let grown = s.ok_post(
            &format!("/studies/{study}:addParameters"),
            json!({"parameters": [
                {"parameterSpec": categorical("booster", &["gbtree", "gblinear"]), "value": "gbtree"},
                {"parameterSpec": integer("max_depth", 1, 9), "parentParameterId": "booster", "value": 3}]}),
        );
        let tree = &grown["studySpec"]["parameters"][0];
        assert_eq!(tree["conditionalParameterSpecs"][0]["parameterSpec"]["parameterId"], "max_depth", "{grown}");
        let added = s.ok_post(
            &format!("/studies/{study}/trials"),
            json!({"parameters": [{"parameterId": "booster", "value": "gbtree"}, {"parameterId": "max_depth", "value": 3}],
                   "finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.8}]},
                   "labels": {"optuna.trial_number": "0"}}),
        );
        assert_eq!(added["labels"]["optuna.trial_number"], "0", "{added}");
        // A trial of an older revision may lack what was added since; a parameter it holds must
        // still be active.
        let partial = s.ok_post(
            &format!("/studies/{study}/trials"),
            json!({"parameters": [{"parameterId": "booster", "value": "gbtree"}], "finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.7}]}}),
        );
        assert_eq!(partial["state"], "SUCCEEDED");
        let (status, body) = s.post(
            &format!("/studies/{study}/trials"),
            json!({"parameters": [{"parameterId": "booster", "value": "gblinear"}, {"parameterId": "max_depth", "value": 3}]}),
        );
        assert_eq!(status, StatusCode::BAD_REQUEST, "max_depth is not active under gblinear: {body}");
        let op = s.ok_post(
            &format!("/studies/{study}/trials:suggest"),
            json!({"suggestionCount": 1, "clientId": "optuna-7", "labels": {"optuna.trial_number": "7"}}),
        );
        let t = &op["response"]["trials"][0];
        assert_eq!(t["labels"]["optuna.trial_number"], "7", "{op}");
        let read = s.ok_get(&format!("/studies/{study}/trials/{}", t["id"].as_str().unwrap()));
        assert_eq!(read["labels"], t["labels"]);
        let many: serde_json::Map<String, Value> = (0..17).map(|k| (format!("k{k}"), json!("v"))).collect();
        let (status, body) =
            s.post(&format!("/studies/{study}/trials:suggest"), json!({"suggestionCount": 1, "clientId": "x", "labels": many}));
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&body).starts_with("labels:"), "{body}");
        let (status, body) =
            s.post(&format!("/studies/{study}/trials:suggest"), json!({"suggestionCount": 1, "clientId": "x", "labels": {"a b": "v"}}));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
}

/// Every algorithm but the grid takes an open study, before its first parameter too (the
/// designers that size themselves on the space are checked once it has one); prior studies
/// are refused, as their spaces are fixed.
#[test]
fn every_algorithm_takes_an_open_study() {
    for db in databases("every_algorithm_takes_an_open_study") {
        let s = Server::start(&db);
        for algorithm in [
            "AUTO",
            "RANDOM_SEARCH",
            "QUASI_RANDOM_SEARCH",
            "GP_BANDIT",
            "ADD_TREE",
            "BRANCHING_NESTED",
            "ADD_GP_UCB",
            "OVERLAP_ADD_GP",
            "REMBO",
        ] {
            let study = s.create_study(open_study(&format!("open-{algorithm}"), algorithm));
            for i in 0..6 {
                let t = s.suggest(&study, 1, &format!("w{i}")).remove(0);
                let id = t["id"].as_str().unwrap().to_owned();
                let x = ask(&s, &study, &id, json!({"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}), None);
                let y = ask(&s, &study, &id, json!({"parameterId": "y", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}), None);
                s.complete(&study, &id, "accuracy", x.as_f64().unwrap() - y.as_f64().unwrap());
            }
            let t = s.suggest(&study, 1, "last").remove(0);
            assert_eq!(t["parameters"].as_array().map(Vec::len), Some(2), "{algorithm}: {t}");
        }
        let mut named = open_study("with-priors", "GP_BANDIT");
        named["studySpec"]["algorithmConfig"] = json!({"priorStudies": ["projects/demo/locations/local/studies/1"]});
        let (status, body) = s.post("/studies", named);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(message(&body).contains("prior studies"), "{body}");
    }
}
