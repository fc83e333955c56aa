//! Export and import over REST between two real servers with API keys: a study streamed out
//! (`:export` in each format) and uploaded in parts into another server serves the same trials
//! and goes on suggesting; a bad part is refused naming its field and stores nothing; another
//! project's study or upload is a 404; a large study exports in bounded memory.

use reqwest::StatusCode;
use reqwest::blocking::Client;
use serde_json::{Value, json};

use super::harness::{Database, Server, databases};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-9876543210";

fn keys() -> String {
    let alice = bo_server::api::access::hash_key(ALICE);
    let bob = bo_server::api::access::hash_key(BOB);
    format!("alice {alice} team-a; bob {bob} team-b")
}

/// A client of one server under one key, in project `team-a` (or another, by path).
struct Api<'a> {
    server: &'a Server,
    key: &'a str,
    client: Client,
}

impl<'a> Api<'a> {
    fn new(server: &'a Server, key: &'a str) -> Api<'a> {
        Api { server, key, client: Client::builder().timeout(std::time::Duration::from_secs(300)).build().expect("client") }
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("/v1/") {
            format!("{}{path}", self.server.base)
        } else {
            format!("{}/v1/projects/team-a/locations/lab{path}", self.server.base)
        }
    }

    fn text(&self, method: &str, path: &str, body: Option<String>) -> (StatusCode, reqwest::header::HeaderMap, String) {
        let mut request = self.client.request(method.parse().expect("method"), self.url(path)).bearer_auth(self.key);
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body);
        }
        let response = request.send().expect("request reaches bo-server");
        let (status, headers) = (response.status(), response.headers().clone());
        (status, headers, response.text().expect("a whole body"))
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let (status, _, text) = self.text(method, path, body.map(|b| b.to_string()));
        (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {path} answered {status} with {text:?}")))
    }

    /// `POST …:commit` as a client makes it: an import's commit resumes where it stopped, and
    /// `UNAVAILABLE` (503) says to ask again — which a 30,000-trial commit on SQLite met in CI
    /// while the rest of the suite kept the machine's disk busy.
    fn commit(&self, import: &str) -> Value {
        for _ in 0..4 {
            let (status, value) = self.call("POST", &format!("/imports/{import}:commit"), None);
            if status != StatusCode::SERVICE_UNAVAILABLE {
                assert_eq!(status, StatusCode::OK, "POST /imports/{import}:commit on {}: {value}", self.server.db.name);
                return value;
            }
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        panic!("POST /imports/{import}:commit on {}: still unavailable after four tries", self.server.db.name)
    }

    fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, path, body);
        assert_eq!(status, StatusCode::OK, "{method} {path} on {}: {value}", self.server.db.name);
        value
    }
}

fn pairs(test: &str) -> Vec<(Database, Database)> {
    databases(&format!("{test}_from")).into_iter().zip(databases(&format!("{test}_to"))).collect()
}

fn last_segment(name: &Value) -> String {
    name.as_str().expect("a name").rsplit('/').next().expect("a segment").to_owned()
}

/// A study of `api`'s with every kind of trial: succeeded with intermediate measurements,
/// infeasible, active (handed out, unfinished), requested, and a deleted one (a gap in the ids).
fn populate(api: &Api, name: &str, completed: usize) -> String {
    let mut body = super::conditional_study(name, "RANDOM_SEARCH");
    // The service's settings travel with the study (kept beside its spec, not in it).
    body["studySpec"]["algorithmConfig"] = json!({"trialLease": "900s", "reproducible": true});
    let study = last_segment(&api.ok("POST", "/studies", Some(body))["name"]);
    let mut done = 0;
    while done < completed {
        let op = api.ok("POST", &format!("/studies/{study}/trials:suggest"), Some(json!({"suggestionCount": 4, "clientId": "w"})));
        for trial in op["response"]["trials"].as_array().expect("trials") {
            let id = last_segment(&trial["name"]);
            let at = format!("/studies/{study}/trials/{id}");
            let lr = trial["parameters"].as_array().unwrap().iter().find(|p| p["parameterId"] == "lr").unwrap()["value"].as_f64().unwrap();
            for step in 1..=3 {
                api.ok("POST", &format!("{at}:addTrialMeasurement"), Some(json!({"measurement": {"stepCount": step.to_string(), "metrics": [{"metricId": "accuracy", "value": lr * step as f64}]}})));
            }
            if done % 7 == 3 {
                api.ok(
                    "POST",
                    &format!("{at}:complete"),
                    Some(json!({"trialInfeasible": true, "infeasibleReason": "diverged, \"NaN\" loss"})),
                );
            } else {
                if done % 7 == 5 {
                    // Stopped early: a partial result, which keeps its stop time.
                    api.ok("POST", &format!("{at}:stop"), Some(json!({})));
                }
                api.ok(
                    "POST",
                    &format!("{at}:complete"),
                    Some(json!({"finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": lr}]}})),
                );
            }
            done += 1;
        }
    }
    api.ok("DELETE", &format!("/studies/{study}/trials/2"), None);
    api.ok("POST", &format!("/studies/{study}/trials:suggest"), Some(json!({"suggestionCount": 2, "clientId": "still-running"})));
    api.ok("POST", &format!("/studies/{study}/trials"), Some(json!({"parameters": [{"parameterId": "model", "value": "linear"}, {"parameterId": "lr", "value": 0.01}, {"parameterId": "beta", "value": 0.9}]})));
    study
}

/// Every trial of a study, as ListTrials answers, without the fields that name the study.
fn trials(api: &Api, study: &str) -> Vec<Value> {
    let listed = api.ok("GET", &format!("/studies/{study}/trials"), None);
    listed["trials"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut t| {
            t.as_object_mut().unwrap().remove("name");
            t
        })
        .collect()
}

/// Uploads a JSON export to `api`'s server in parts of `part` trials; returns the new study.
fn upload(api: &Api, document: &str, part: usize, display_name: &str) -> Value {
    let mut doc: Value = serde_json::from_str(document).expect("the export is JSON");
    let all = doc["trials"].take();
    let all = all.as_array().expect("trials");
    doc["trials"] = json!(all.iter().take(part).collect::<Vec<_>>());
    let opened = api.ok("POST", &format!("/studies:import?displayName={display_name}"), Some(doc));
    let import = last_segment(&opened["name"]);
    assert_eq!(opened["trialCount"], json!(all.len().min(part).to_string()));
    for chunk in all[all.len().min(part)..].chunks(part) {
        api.ok("POST", &format!("/imports/{import}:append"), Some(json!({"trials": chunk})));
    }
    let progress = api.ok("GET", &format!("/imports/{import}"), None);
    assert_eq!(progress["trialCount"], json!(all.len().to_string()), "{progress}");
    let study = api.ok("POST", &format!("/imports/{import}:commit"), Some(json!({})));
    let kept = api.ok("GET", &format!("/imports/{import}"), None);
    assert_eq!((&kept["state"], &kept["study"]), (&json!("COMMITTED"), &study["name"]), "a committed upload names its study: {kept}");
    assert_eq!(kept["committedTrialCount"], json!(all.len().to_string()), "{kept}");
    study
}

#[test]
fn a_study_exported_over_rest_imports_into_another_server_and_serves_the_same_trials() {
    for (from_db, to_db) in pairs("rest_transfer") {
        let source = Server::start_with(&from_db, &["--api-keys", &keys(), "--rate-limit", "0"]);
        let target = Server::start_with(&to_db, &["--api-keys", &keys(), "--rate-limit", "0"]);
        let (alice, alice_there, bob) = (Api::new(&source, ALICE), Api::new(&target, ALICE), Api::new(&source, BOB));
        let study = populate(&alice, "to move", 28);
        let before = trials(&alice, &study);
        assert_eq!(before.len(), 30, "28 finished, 2 running and 1 requested, less the deleted one");
        assert_eq!(before.iter().filter(|t| t.get("stopTime").is_some()).count(), 4, "four were stopped");

        let (status, headers, document) = alice.text("GET", &format!("/studies/{study}:export"), None);
        assert_eq!(status, StatusCode::OK, "{document}");
        assert_eq!(headers["content-type"], "application/json");
        assert_eq!(headers["content-disposition"], format!("attachment; filename=\"study-{study}.json\""));
        let doc: Value = serde_json::from_str(&document).expect("the streamed document is one JSON value");
        assert_eq!(doc["trials"].as_array().unwrap().len(), 30);
        assert_eq!(doc["boExportFormat"], json!(1));
        assert_eq!(doc["study"]["studySpec"]["algorithmConfig"], json!({"trialLease": "900s", "reproducible": true}));

        let imported = upload(&alice_there, &document, 7, "moved");
        assert_eq!(imported["displayName"], "moved");
        assert_eq!(imported["studySpec"], doc["study"]["studySpec"], "the spec is the source's");
        let copy = last_segment(&imported["name"]);
        let after = trials(&alice_there, &copy);
        assert_eq!(after, before, "every trial, its id, state, parameters, measurements and times, as it was");

        // It goes on: new trials get ids past every id the source ever gave.
        let created = alice_there.ok("POST", &format!("/studies/{copy}/trials"), Some(json!({"parameters": [{"parameterId": "model", "value": "mlp"}, {"parameterId": "hidden", "value": 64}, {"parameterId": "lr", "value": 0.1}, {"parameterId": "beta", "value": 0.9}]})));
        let new_id: i64 = created["id"].as_str().unwrap().parse().unwrap();
        let max_id: i64 = before.iter().map(|t| t["id"].as_str().unwrap().parse::<i64>().unwrap()).max().unwrap();
        assert!(new_id > max_id, "a new trial {new_id} reuses no id up to {max_id}");
        let op = alice_there.ok("POST", &format!("/studies/{copy}/trials:suggest"), Some(json!({"suggestionCount": 3, "clientId": "new"})));
        assert_eq!(op["response"]["trials"].as_array().map(Vec::len), Some(3), "the copy suggests: {op}");

        // The other formats, streamed the same way.
        let (status, headers, csv) = alice.text("GET", &format!("/studies/{study}:export?format=csv"), None);
        assert_eq!((status, headers["content-type"].to_str().unwrap()), (StatusCode::OK, "text/csv; charset=utf-8"));
        assert_eq!(csv.lines().count(), 31, "a header and a row per trial");
        assert!(csv.starts_with("trial,state,model,"), "{csv}");
        let (status, _, journal) = alice.text("GET", &format!("/studies/{study}:export?format=optuna-journal"), None);
        assert_eq!(status, StatusCode::OK);
        assert_eq!(journal.lines().count(), 4 + 30, "the study's four operations and a trial each");
        let states: Vec<i64> = journal
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("each journal line is JSON"))
            .filter(|op| op["op_code"] == 4)
            .map(|op| op["state"].as_i64().unwrap())
            .collect();
        assert_eq!(states.iter().filter(|s| **s == 2).count(), 4, "the stopped trials are Optuna's pruned ones: {states:?}");

        // Another project's study and upload are 404, as a path that exists nowhere.
        let foreign = bob.call("GET", &format!("/v1/projects/team-a/locations/lab/studies/{study}:export"), None);
        assert_eq!(foreign.0, StatusCode::NOT_FOUND, "{}", foreign.1);
        let (status, _) = bob.call("POST", "/v1/projects/team-a/locations/lab/studies:import", Some(doc.clone()));
        assert_eq!(status, StatusCode::NOT_FOUND);

        // The same name again is a conflict, before anything is staged.
        let (status, body) = alice_there.call("POST", "/studies:import?displayName=moved", Some(doc.clone()));
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("displayName"), "{body}");
    }
}

#[test]
fn a_bad_part_is_refused_naming_its_field_and_stores_nothing() {
    for db in databases("rest_import_hostile") {
        let server = Server::start_with(&db, &["--api-keys", &keys(), "--rate-limit", "0", "--max-body-bytes", "200000"]);
        let alice = Api::new(&server, ALICE);
        let study = populate(&alice, "source", 8);
        let (_, _, document) = alice.text("GET", &format!("/studies/{study}:export"), None);
        let mut doc: Value = serde_json::from_str(&document).unwrap();
        let all = doc["trials"].take();
        doc["trials"] = json!([]);

        for (query, field) in [("?format=xml", "format"), ("?fromat=csv", "fromat")] {
            let (status, body) = alice.call("GET", &format!("/studies/{study}:export{query}"), None);
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert!(body["error"]["message"].as_str().unwrap().trim_start_matches('"').starts_with(field), "{body}");
        }
        let (status, _) = alice.call("GET", &format!("/studies/{study}:exprot"), None);
        assert_eq!(status, StatusCode::NOT_FOUND);

        // A bad document head, and a first part with a bad trial: nothing opens.
        let mut bad = doc.clone();
        bad["boExportFormat"] = json!(2);
        let (status, body) = alice.call("POST", "/studies:import?displayName=x", Some(bad));
        assert_eq!(
            (status, body["error"]["message"].as_str().unwrap().starts_with("boExportFormat")),
            (StatusCode::BAD_REQUEST, true),
            "{body}"
        );
        let mut bad = doc.clone();
        bad["trials"] = json!([all[0].clone()]);
        bad["trials"][0]["parameters"][0]["value"] = json!("quantum");
        let (status, body) = alice.call("POST", "/studies:import?displayName=x", Some(bad));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().starts_with("trials[0].parameters"), "{body}");
        let (status, body) = alice.call("POST", "/studies:import?displayName=x", Some(json!({"boExportFormat": 1, "surprise": true})));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

        let opened = alice.ok("POST", "/studies:import?displayName=copy", Some(doc.clone()));
        let import = last_segment(&opened["name"]);
        assert_eq!(import.len(), 32, "an upload's id is random");
        let part = |trials: Value| alice.call("POST", &format!("/imports/{import}:append"), Some(json!({"trials": trials})));

        // Each bad part names its field, and the upload is as before.
        let mut infeasible_value = all[0].clone();
        infeasible_value["finalMeasurement"]["metrics"][0]["value"] = json!("NaN");
        let mut no_state = all[0].clone();
        no_state["state"] = json!("STATE_UNSPECIFIED");
        let mut unknown_metric = all[0].clone();
        unknown_metric["measurements"][0]["metrics"][0]["metricId"] = json!("loss");
        let out_of_order = json!([all[3].clone(), all[1].clone()]);
        let mut resumes_later = all[0].clone();
        (resumes_later["resumedFrom"], resumes_later["resumedAt"]) = (json!("projects/p/locations/l/studies/1/trials/9"), json!(3));
        let mut resumed_nowhere = all[0].clone();
        resumed_nowhere["resumedAt"] = json!(3);
        for (trials, field) in [
            (json!([resumes_later]), "trials[0].resumedFrom"),
            (json!([resumed_nowhere]), "trials[0].resumedFrom"),
            (json!([infeasible_value]), "trials[0].finalMeasurement"),
            (json!([no_state]), "trials[0].state"),
            (json!([unknown_metric]), "trials[0].measurements[0]"),
            (out_of_order, "trials[1].id"),
            (json!("not a list"), "trials"),
        ] {
            let (status, body) = part(trials);
            assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {body}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(field), "{field}: {message}");
            assert!(!message.contains("bo_") && !message.contains("Error"), "a message without Rust in it: {message}");
        }
        assert_eq!(alice.ok("GET", &format!("/imports/{import}"), None)["trialCount"], "0", "nothing of a refused part was kept");

        // Too large a part is refused by the body limit; parts must go on past the last id.
        let huge = json!({"trials": vec![all[0].clone(); 400]});
        let (status, _, _) = alice.text("POST", &format!("/imports/{import}:append"), Some(huge.to_string()));
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        // The next request goes on the same client: where the server had not read the whole
        // body, its answer said `Connection: close` and this one takes a new connection;
        // where it had (the last bytes arrived before the limit was found), the connection
        // stays good. Either way it must not meet a closed socket (api/unread.rs).
        alice.ok("POST", &format!("/imports/{import}:append"), Some(json!({"trials": [all[0].clone(), all[1].clone()]})));
        let (status, body) = part(json!([all[1].clone()]));
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body["error"]["message"].as_str().unwrap().contains("resume"), "{body}");

        // Other uploads' names, and another project's, are 404.
        for path in ["/imports/00000000000000000000000000000000", &format!("/v1/projects/team-b/locations/lab/imports/{import}")] {
            let (status, body) = alice.call("GET", path, None);
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        }
        let (status, body) = alice.call("POST", "/imports/x:append", Some(json!({"trials": []})));
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        let (status, body) = Api::new(&server, BOB).call("GET", &format!("/v1/projects/team-a/locations/lab/imports/{import}"), None);
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

        // A study of the upload's name made meanwhile: the commit is a conflict and the upload stays.
        let mut spec = super::conditional_study("copy", "RANDOM_SEARCH");
        spec["displayName"] = json!("copy");
        alice.ok("POST", "/studies", Some(spec));
        let (status, body) = alice.call("POST", &format!("/imports/{import}:commit"), None);
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(alice.ok("GET", &format!("/imports/{import}"), None)["trialCount"], "2");
        alice.ok("DELETE", &format!("/imports/{import}"), None);
        let (status, _) = alice.call("POST", &format!("/imports/{import}:commit"), None);
        assert_eq!(status, StatusCode::NOT_FOUND, "an abandoned upload is gone");

        // A location holds a bounded number of open uploads.
        let limit = bo_server::api::transfer::MAX_OPEN_IMPORTS;
        for i in 0..limit {
            alice.ok("POST", &format!("/studies:import?displayName=open-{i}"), Some(doc.clone()));
        }
        let (status, body) = alice.call("POST", "/studies:import?displayName=one-more", Some(doc.clone()));
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(&format!("at most {limit}")), "{body}");
        let listed = alice.ok("GET", "/studies", None);
        assert_eq!(listed["studies"].as_array().unwrap().len(), 2, "no upload shows as a study: {listed}");
    }
}

/// A study of `n` trials, exported while the server's memory is watched: the document is tens
/// of megabytes and the server's peak grows by a fraction of it. `BO_EXPORT_TRIALS` sets `n`
/// (docs/journal/benchmarks.md records 100,000).
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn a_large_study_exports_in_bounded_memory() {
    const WARM_UP_TRIALS: usize = 5000;
    let n: usize = std::env::var("BO_EXPORT_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(30_000);
    let db = databases("rest_export_large").remove(0);
    let server = Server::start_with(&db, &["--api-keys", &keys(), "--rate-limit", "0", "--max-body-bytes", "4000000"]);
    let alice = Api::new(&server, ALICE);
    let study = last_segment(&alice.ok("POST", "/studies", Some(super::conditional_study("large", "RANDOM_SEARCH")))["name"]);
    let (_, _, head) = alice.text("GET", &format!("/studies/{study}:export"), None);
    let mut doc: Value = serde_json::from_str(&head).unwrap();
    let trial = |id: usize| {
        json!({"id": id.to_string(), "state": "SUCCEEDED", "startTime": "2026-01-01T00:00:00Z", "endTime": "2026-01-01T00:01:00Z",
               "parameters": [{"parameterId": "model", "value": "mlp"}, {"parameterId": "hidden", "value": (8 + id % 500) as f64},
                              {"parameterId": "lr", "value": 1e-4 + (id as f64) * 1e-6}, {"parameterId": "beta", "value": 0.9}],
               "measurements": [{"stepCount": "1", "metrics": [{"metricId": "accuracy", "value": 0.5}]},
                                {"stepCount": "2", "metrics": [{"metricId": "accuracy", "value": 0.6}]}],
               "finalMeasurement": {"stepCount": "2", "metrics": [{"metricId": "accuracy", "value": (id % 1000) as f64 / 1000.0}]}})
    };
    doc["trials"] = json!([]);
    // A study of `count` trials uploaded in parts of 5,000.
    let upload = |name: &str, count: usize| {
        let import = last_segment(&alice.ok("POST", &format!("/studies:import?displayName={name}"), Some(doc.clone()))["name"]);
        for first in (1..=count).step_by(5000) {
            let part: Vec<Value> = (first..(first + 5000).min(count + 1)).map(trial).collect();
            alice.ok("POST", &format!("/imports/{import}:append"), Some(json!({"trials": part})));
        }
        import
    };
    let started = std::time::Instant::now();
    let import = upload("large-copy", n);
    let staged = started.elapsed();
    let copy = last_segment(&alice.commit(&import)["name"]);
    let committed = started.elapsed() - staged;
    let warm = upload("warm-up", WARM_UP_TRIALS);
    let warm = last_segment(&alice.commit(&warm)["name"]);
    // A fresh process, so its peak is the export's and not the upload's.
    assert!(server.terminate().success());
    let server = Server::start_with(&db, &["--api-keys", &keys(), "--rate-limit", "0"]);
    let alice = Api::new(&server, ALICE);
    // The working set an export fills whatever its length (the blocking threads that encode
    // pages, SQLite's page caches, the allocator's segments) is filled first by a study a sixth
    // the size, too small to hide a document held whole; without it, under a loaded machine the
    // filling spilled into the last quarter of the export watched.
    let (_, _, warm_doc) = alice.text("GET", &format!("/studies/{warm}:export"), None);
    assert_eq!(warm_doc.lines().count(), WARM_UP_TRIALS + 2);
    alice.ok("GET", &format!("/studies/{copy}"), None);
    let before = server.rss();
    let started = std::time::Instant::now();
    let mut response = alice.client.get(alice.url(&format!("/studies/{copy}:export"))).bearer_auth(ALICE).send().expect("export");
    assert_eq!(response.status(), StatusCode::OK);
    let (mut bytes, mut lines, mut buffer, mut samples) = (0usize, 0usize, [0u8; 1 << 16], Vec::new());
    loop {
        let read = std::io::Read::read(&mut response, &mut buffer).expect("the body streams to its end");
        if read == 0 {
            break;
        }
        bytes += read;
        // The server's resident memory, each megabyte of the document.
        if bytes / 1_000_000 != (bytes - read) / 1_000_000 {
            samples.push((bytes, server.rss()));
        }
        lines += buffer[..read].iter().filter(|b| **b == b'\n').count();
    }
    let exported = started.elapsed();
    let peak = server.peak_rss();
    // Memory that grew with the document would be larger in its last quarter than its first.
    let most = |part: &[(usize, u64)]| part.iter().map(|s| s.1).max().unwrap_or(0);
    let (early, late) = (most(&samples[..samples.len() / 4]), most(&samples[samples.len() * 3 / 4..]));
    eprintln!(
        "{n} trials on {}: staged in {staged:.1?}, committed in {committed:.1?}, exported {:.1} MB in {exported:.1?}; server RSS {:.1} MB \
         before, at most {:.1} MB in the first quarter of the export and {:.1} MB in the last, peak {:.1} MB",
        db.name,
        bytes as f64 / 1e6,
        before as f64 / 1e6,
        early as f64 / 1e6,
        late as f64 / 1e6,
        peak as f64 / 1e6
    );
    assert_eq!(lines, n + 2, "the head, a line per trial and the end");
    assert!(bytes > n * 400, "the document holds every trial ({bytes} bytes)");
    assert!(samples.len() >= 8, "sampled through the export");
    assert!(late < early + (16 << 20), "the server's memory does not grow with the document: {early} → {late} bytes over {bytes}");
}

/// Uploads are kept in the database: behind a proxy the parts of one upload may reach different
/// replicas of a Postgres service, and the commit another again.
#[test]
fn an_upload_goes_on_at_another_replica() {
    let Some(db) = databases("rest_import_replicas").into_iter().find(|d| d.name == "postgres") else {
        eprintln!("no Postgres (BO_TEST_POSTGRES_URL): replicas share only a Postgres database");
        return;
    };
    let one = Server::start_with(&db, &["--api-keys", &keys(), "--rate-limit", "0"]);
    let two = Server::start_with(&db, &["--api-keys", &keys(), "--rate-limit", "0"]);
    let (a, b) = (Api::new(&one, ALICE), Api::new(&two, ALICE));
    let study = populate(&a, "replicated", 8);
    let (_, _, document) = a.text("GET", &format!("/studies/{study}:export"), None);
    let mut doc: Value = serde_json::from_str(&document).unwrap();
    let all = doc["trials"].take();
    let all = all.as_array().unwrap();
    doc["trials"] = json!([]);
    let import = last_segment(&a.ok("POST", "/studies:import?displayName=copy", Some(doc))["name"]);
    for (k, part) in all.chunks(3).enumerate() {
        let api = if k % 2 == 0 { &b } else { &a };
        api.ok("POST", &format!("/imports/{import}:append"), Some(json!({"trials": part})));
    }
    assert_eq!(b.ok("GET", &format!("/imports/{import}"), None)["trialCount"], json!(all.len().to_string()));
    let copy = last_segment(&b.ok("POST", &format!("/imports/{import}:commit"), None)["name"]);
    assert_eq!(trials(&a, &copy), trials(&a, &study));
}

/// Uploads `doc` whole and commits it; the new study's number.
fn import_whole(api: &Api, doc: &Value, display_name: &str) -> String {
    let opened = api.ok("POST", &format!("/studies:import?displayName={display_name}"), Some(doc.clone()));
    let import = last_segment(&opened["name"]);
    last_segment(&api.ok("POST", &format!("/imports/{import}:commit"), Some(json!({})))["name"])
}

/// What a user does with an imported study: suggest and complete twice, create a trial, read
/// it, list the project's studies, export it, delete it. Every answer is a 200, and every id
/// handed out is positive, new and addressable.
fn use_imported(api: &Api, study: &str, case: &str) {
    let mut ids = Vec::new();
    for round in 0..2 {
        let op = api.ok(
            "POST",
            &format!("/studies/{study}/trials:suggest"),
            Some(json!({"suggestionCount": 1, "clientId": format!("w{round}")})),
        );
        let trial = &op["response"]["trials"][0];
        let id = trial["id"].as_str().unwrap_or_else(|| panic!("{case}: a trial: {op}")).to_owned();
        api.ok(
            "POST",
            &format!("/studies/{study}/trials/{id}:complete"),
            Some(json!({"finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.5}]}})),
        );
        ids.push(id);
    }
    let created = api.ok("POST", &format!("/studies/{study}/trials"), Some(json!({"parameters": [{"parameterId": "model", "value": "linear"}, {"parameterId": "lr", "value": 0.01}, {"parameterId": "beta", "value": 0.9}], "finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.1}]}})));
    ids.push(created["id"].as_str().unwrap().to_owned());
    let numbers: Vec<i64> = ids.iter().map(|id| id.parse().unwrap()).collect();
    assert!(numbers.windows(2).all(|w| 0 < w[0] && w[0] < w[1]), "{case}: ids {numbers:?} are positive and increasing");
    for id in &ids {
        api.ok("GET", &format!("/studies/{study}/trials/{id}"), None);
    }
    api.ok("GET", &format!("/studies/{study}"), None);
    api.ok("GET", "/studies", None);
    let (status, _, document) = api.text("GET", &format!("/studies/{study}:export"), None);
    assert_eq!(status, StatusCode::OK, "{case}: {document}");
    serde_json::from_str::<Value>(&document).unwrap_or_else(|e| panic!("{case}: the export is JSON: {e}"));
    api.ok("DELETE", &format!("/studies/{study}"), None);
}

/// Every counter and id of the document at its limits — 0, −1, the bound and one below it, and
/// `i64::MAX` — on both databases: out of range is a 400 naming the field before anything is
/// staged; at the bound the study suggests, completes, creates, lists, exports and deletes
/// (a data version of 2^63−1 once broke a study and its project's list for good, and staged ids
/// near 2^63 wrapped the next id).
#[test]
fn an_imports_counters_and_ids_are_bounded() {
    const MAX: i64 = bo_core::limits::MAX_COUNTER;
    for db in databases("rest_import_counters") {
        let server = Server::start_with(&db, &["--api-keys", &keys(), "--rate-limit", "0"]);
        let alice = Api::new(&server, ALICE);
        let study = populate(&alice, "source", 4);
        let (_, _, document) = alice.text("GET", &format!("/studies/{study}:export"), None);
        let doc: Value = serde_json::from_str(&document).unwrap();
        let first = doc["trials"][0].clone();
        assert_eq!(first["state"], "SUCCEEDED", "{first}");
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut d = doc.clone();
            d["trials"] = json!([first.clone()]);
            edit(&mut d);
            d
        };
        let model = |version: i64| json!({"dataVersion": version.to_string(), "fitTime": "2026-01-01T00:00:00Z", "state": null});

        let refused: Vec<(&str, Value)> = vec![
            ("nextTrialId", with(&|d| d["nextTrialId"] = json!("0"))),
            ("nextTrialId", with(&|d| d["nextTrialId"] = json!("-1"))),
            ("nextTrialId", with(&|d| d["nextTrialId"] = json!((MAX + 1).to_string()))),
            ("nextTrialId", with(&|d| d["nextTrialId"] = json!(i64::MAX.to_string()))),
            ("dataVersion", with(&|d| d["dataVersion"] = json!("-1"))),
            ("dataVersion", with(&|d| d["dataVersion"] = json!(i64::MAX.to_string()))),
            ("model.dataVersion", with(&|d| d["model"] = model(-1))),
            ("model.dataVersion", with(&|d| d["model"] = model(i64::MAX))),
            ("study.studySpec.searchSpaceRevision", with(&|d| d["study"]["studySpec"]["searchSpaceRevision"] = json!("-1"))),
            ("study.studySpec.searchSpaceRevision", with(&|d| d["study"]["studySpec"]["searchSpaceRevision"] = json!("3"))),
            ("trials[0].id", with(&|d| d["trials"][0]["id"] = json!("0"))),
            ("trials[0].id", with(&|d| d["trials"][0]["id"] = json!("-1"))),
            ("trials[0].id", with(&|d| d["trials"][0]["id"] = json!(MAX.to_string()))),
            ("trials[0].id", with(&|d| d["trials"][0]["id"] = json!(i64::MAX.to_string()))),
            ("trials[0].searchSpaceRevision", with(&|d| d["trials"][0]["searchSpaceRevision"] = json!("-1"))),
            ("trials[0].searchSpaceRevision", with(&|d| d["trials"][0]["searchSpaceRevision"] = json!("1"))),
            (
                "trials[1].resumedAt",
                with(&|d| {
                    d["trials"] = json!([first.clone(), first.clone()]);
                    d["trials"][1]["id"] = json!("5");
                    d["trials"][1]["resumedFrom"] = json!(format!("projects/team-a/locations/lab/studies/{study}/trials/1"));
                    d["trials"][1]["resumedAt"] = json!(1e308);
                }),
            ),
            (
                "trials[1].resumedFrom",
                with(&|d| {
                    d["trials"] = json!([first.clone(), first.clone()]);
                    d["trials"][1]["id"] = json!("5");
                    d["trials"][1]["resumedFrom"] = json!("projects/team-b/locations/lab/studies/1/trials/1");
                    d["trials"][1]["resumedAt"] = json!(3);
                }),
            ),
        ];
        for (i, (field, bad)) in refused.into_iter().enumerate() {
            let (status, body) = alice.call("POST", &format!("/studies:import?displayName=refused-{i}"), Some(bad));
            assert_eq!(status, StatusCode::BAD_REQUEST, "{field} (case {i}) on {}: {body}", db.name);
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(field), "case {i}: {message} names {field}");
        }
        let listed = alice.ok("GET", "/studies", None);
        assert_eq!(listed["studies"].as_array().unwrap().len(), 1, "nothing refused became a study: {listed}");

        let accepted: Vec<(&str, Value)> = vec![
            ("dataVersion 0", with(&|d| d["dataVersion"] = json!("0"))),
            ("dataVersion at the bound", with(&|d| d["dataVersion"] = json!(MAX.to_string()))),
            ("dataVersion below the bound", with(&|d| d["dataVersion"] = json!((MAX - 1).to_string()))),
            ("model at the bound", with(&|d| d["model"] = model(MAX))),
            ("nextTrialId 1", with(&|d| d["nextTrialId"] = json!("1"))),
            ("nextTrialId at the bound", with(&|d| d["nextTrialId"] = json!(MAX.to_string()))),
            ("the last trial id", with(&|d| d["trials"][0]["id"] = json!((MAX - 1).to_string()))),
            (
                "ids 21 and the last",
                with(&|d| {
                    d["trials"] = json!([first.clone(), first.clone()]);
                    d["trials"][0]["id"] = json!("21");
                    d["trials"][1]["id"] = json!((MAX - 1).to_string());
                }),
            ),
        ];
        for (i, (case, good)) in accepted.into_iter().enumerate() {
            let copy = import_whole(&alice, &good, &format!("accepted-{i}"));
            use_imported(&alice, &copy, case);
        }
        let listed = alice.ok("GET", "/studies", None);
        assert_eq!(listed["studies"].as_array().unwrap().len(), 1, "each accepted copy was used and deleted: {listed}");
    }
}

/// Opens `GET path` as `key` on a socket with a 4 KB receive buffer and reads only the status
/// line: a reader as slow as a client can be.
fn stalled_export(server: &Server, key: &str, path: &str) -> std::net::TcpStream {
    use std::io::{BufRead, Write};
    let address: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().expect("an address");
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small receive buffer");
    socket.connect(&address.into()).expect("connect");
    let mut stream: std::net::TcpStream = socket.into();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {key}\r\n\r\n").expect("send");
    let mut status = String::new();
    std::io::BufReader::new(stream.try_clone().expect("a clone")).read_line(&mut status).expect("a status line");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    stream
}

/// One key's slow readers hold at most their project's share of the export slots, and each
/// stays in flight for its key until its stream ends: another project exports whole meanwhile.
/// An export cut short (its study deleted part way) breaks the transfer rather than ending as
/// a shorter document that parses.
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn slow_exports_hold_only_their_projects_share() {
    for db in databases("rest_export_slots") {
        let server = Server::start_with(&db, &["--api-keys", &keys(), "--rate-limit", "0", "--max-in-flight-per-key", "2"]);
        let (alice, bob) = (Api::new(&server, ALICE), Api::new(&server, BOB));
        // About 12 MB as JSON, far beyond what the sockets' buffers hold.
        let long = |k: usize, v: usize| format!("{k:03}-{v}-{}", "x".repeat(120));
        let parameters: Vec<Value> = (0..60)
            .map(|k| json!({"parameterId": format!("p{k}"), "categoricalValueSpec": {"values": [long(k, 0), long(k, 1)]}}))
            .collect();
        let spec = json!({"displayName": "big", "studySpec": {"metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH", "parameters": parameters}});
        let study = last_segment(&alice.ok("POST", "/studies", Some(spec.clone()))["name"]);
        for t in 0..1200 {
            let values: Vec<Value> = (0..60).map(|k| json!({"parameterId": format!("p{k}"), "value": long(k, (t + k) % 2)})).collect();
            alice.ok(
                "POST",
                &format!("/studies/{study}/trials"),
                Some(json!({"parameters": values, "finalMeasurement": {"metrics": [{"metricId": "y", "value": t}]}})),
            );
        }
        let bobs = last_segment(&bob.ok("POST", "/v1/projects/team-b/locations/lab/studies", Some(spec))["name"]);
        let path = format!("/v1/projects/team-a/locations/lab/studies/{study}:export");
        let held = [stalled_export(&server, ALICE, &path), stalled_export(&server, ALICE, &path)];

        // Alice's two stalled exports are her key's two requests in flight, and her project's
        // two export slots.
        let (status, body) = alice.call("GET", &format!("/studies/{study}"), None);
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("in flight"), "{body}");
        let (status, body) = bob.call("GET", &path, None);
        assert_eq!(status, StatusCode::NOT_FOUND, "another project's study: {body}");
        // Bob's project exports whole.
        for _ in 0..3 {
            let (status, _, document) = bob.text("GET", &format!("/v1/projects/team-b/locations/lab/studies/{bobs}:export"), None);
            assert_eq!(status, StatusCode::OK, "{document}");
            serde_json::from_str::<Value>(&document).expect("bob's export is whole");
        }
        drop(held);
        // Her slots come back once her streams end.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let (status, _, document) = alice.text("GET", &format!("/studies/{study}:export?format=csv"), None);
            if status == StatusCode::OK {
                assert_eq!(document.lines().count(), 1201, "a header and every trial");
                break;
            }
            assert!(std::time::Instant::now() < deadline, "alice's slots never came back: {status} {document}");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }

        // Deleted part way: the transfer breaks.
        let stream = stalled_export(&server, ALICE, &path);
        alice.ok("DELETE", &format!("/studies/{study}"), None);
        let mut rest = Vec::new();
        let read = std::io::Read::read_to_end(&mut &stream, &mut rest);
        let text = String::from_utf8_lossy(&rest);
        assert!(
            read.is_err() || !text.ends_with("0\r\n\r\n"),
            "the body of an export whose study was deleted ended as if whole ({} bytes)",
            rest.len()
        );
    }
}
