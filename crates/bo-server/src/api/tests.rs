//! Handler tests in process: the whole application (routes, guard, handlers, engine, a real
//! SQLite store) driven by `Router::oneshot`, without a socket. The end-to-end suite
//! (`tests/e2e`) runs the real binary; these check the HTTP layer's own rules fast.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use bo_store::testing::TestDatabase;
use bo_store::{Store, StoreOptions};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::access::Access;
use super::state::AppState;
use crate::engine::{Engine, EngineConfig};
use crate::metrics::Metrics;

/// The application over a fresh SQLite database.
struct TestApp {
    router: Router,
    _database: TestDatabase,
}

impl TestApp {
    async fn new(access: Access) -> TestApp {
        let options = StoreOptions { max_connections: 4, acquire_timeout: std::time::Duration::from_secs(10) };
        let database = TestDatabase::sqlite();
        let store = Store::connect(database.url(), &options).await.expect("a test database");
        let metrics = Arc::new(Metrics::new());
        let engine = Engine::new(store.clone(), &EngineConfig::default(), metrics.clone());
        let state = AppState::new(store, engine, Arc::new(access), metrics);
        TestApp { router: super::app(state, true), _database: database }
    }

    /// `method uri` with a JSON `body`: the status and the JSON answer (`Null` when not JSON).
    async fn call(&self, method: Method, uri: &str, body: Option<Value>) -> (StatusCode, Value) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .expect("a request");
        let response = self.router.clone().oneshot(request).await.expect("the router answers");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 24).await.expect("a body");
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

const STUDIES: &str = "/v1/projects/p/locations/l/studies";

fn study() -> Value {
    json!({
        "displayName": "s",
        "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
            "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}],
            "algorithm": "RANDOM_SEARCH"
        }
    })
}

/// The server's address opened in a browser leads to the dashboard.
#[tokio::test]
async fn the_root_leads_to_the_dashboard() {
    let app = TestApp::new(Access::default()).await;
    for (uri, status) in [("/", StatusCode::SEE_OTHER), ("/dashboard", StatusCode::PERMANENT_REDIRECT)] {
        let request = Request::builder().uri(uri).body(Body::empty()).expect("a request");
        let response = app.router.clone().oneshot(request).await.expect("the router answers");
        assert_eq!(response.status(), status, "{uri}");
        assert_eq!(response.headers()["location"], "/dashboard/", "{uri}");
    }
}

/// A method a resource does not take is a 405 whose `Allow` lists exactly the documented ones,
/// though verbs share their router entry with the resource (`…/{study}` and `…/{study}:export`).
#[tokio::test]
async fn a_wrong_method_is_told_the_right_ones() {
    let app = TestApp::new(Access::default()).await;
    for (method, uri, allow) in [
        (Method::OPTIONS, "/v1/projects/p/locations/l/studies/1", "GET,HEAD,DELETE"),
        (Method::OPTIONS, "/v1/projects/p/locations/l/studies/1:export", "GET,HEAD"),
        (Method::PUT, "/v1/projects/p/locations/l/studies/1:stop", "POST"),
        (Method::OPTIONS, "/v1/projects/p/locations/l/imports/abc", "GET,HEAD,DELETE"),
        (Method::GET, "/v1/projects/p/locations/l/studies:import", "POST"),
        (Method::PATCH, "/v1/projects/p/locations/l/imports/abc:commit", "POST"),
    ] {
        let request = Request::builder().method(method.clone()).uri(uri).body(Body::empty()).expect("a request");
        let response = app.router.clone().oneshot(request).await.expect("the router answers");
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}");
        assert_eq!(response.headers()["allow"], allow, "{method} {uri}");
    }
}

/// Every operation the OpenAPI document lists is served: routed to a handler, which answers
/// for itself (never the router's "no such resource" or a 405).
#[tokio::test]
async fn every_documented_operation_is_routed() {
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    let doc = super::document();
    let mut seen = 0;
    for (path, item) in &doc.paths.paths {
        let uri = path
            .replace("{project}", "p")
            .replace("{location}", "l")
            .replace("{study}", "1")
            .replace("{trial}", "1")
            .replace("{operation}", "1");
        for (method, present) in
            [(Method::GET, item.get.is_some()), (Method::POST, item.post.is_some()), (Method::DELETE, item.delete.is_some())]
        {
            if !present {
                continue;
            }
            seen += 1;
            let body = (method == Method::POST).then(|| json!({}));
            let (status, answer) = app.call(method.clone(), &uri, body).await;
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {uri}: {answer}");
            assert!(!message.starts_with("no such resource or method"), "{method} {uri} is documented but not routed: {answer}");
        }
    }
    assert!(seen >= 20, "only {seen} operations documented");
}

/// A trial is completed once: the second completion is FAILED_PRECONDITION with bo-core's
/// message, and changes nothing.
#[tokio::test]
async fn a_second_completion_is_refused_by_the_trial_rule() {
    let app = TestApp::new(Access::default()).await;
    app.call(Method::POST, STUDIES, Some(study())).await;
    let (status, op) =
        app.call(Method::POST, &format!("{STUDIES}/1/trials:suggest"), Some(json!({"suggestionCount": 1, "clientId": "w"}))).await;
    assert_eq!(status, StatusCode::OK, "{op}");
    assert_eq!(op["done"], true, "{op}");
    let trial = format!("{STUDIES}/1/trials/1");
    let done = json!({"finalMeasurement": {"metrics": [{"metricId": "loss", "value": 0.5}]}});
    let (status, t) = app.call(Method::POST, &format!("{trial}:complete"), Some(done.clone())).await;
    assert_eq!((status, t["state"].as_str()), (StatusCode::OK, Some("SUCCEEDED")), "{t}");
    let (status, e) = app.call(Method::POST, &format!("{trial}:complete"), Some(json!({"trialInfeasible": true}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    assert_eq!(e["error"]["status"], "FAILED_PRECONDITION", "{e}");
    assert_eq!(e["error"]["message"], "trial 1 is already SUCCEEDED; a trial is completed once", "{e}");
    let (_, t) = app.call(Method::GET, &trial, None).await;
    assert_eq!(t["state"], "SUCCEEDED", "unchanged: {t}");
}

/// A measurement past the server's limit is a 400 naming the field and the flag that sets the
/// limit; the trial keeps what it had.
#[tokio::test]
async fn a_measurement_past_the_limit_names_the_flag() {
    let access = Access { limits: bo_core::Limits { measurements: 1, ..bo_core::Limits::default() }, ..Access::default() };
    let app = TestApp::new(access).await;
    app.call(Method::POST, STUDIES, Some(study())).await;
    app.call(Method::POST, &format!("{STUDIES}/1/trials:suggest"), Some(json!({"suggestionCount": 1, "clientId": "w"}))).await;
    let add = format!("{STUDIES}/1/trials/1:addTrialMeasurement");
    let m = json!({"measurement": {"stepCount": "1", "metrics": [{"metricId": "loss", "value": 0.5}]}});
    assert_eq!(app.call(Method::POST, &add, Some(m.clone())).await.0, StatusCode::OK);
    let (status, e) = app.call(Method::POST, &add, Some(m)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    let message = e["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("measurement: ") && message.contains("--max-measurements"), "{message}");
    let (_, t) = app.call(Method::GET, &format!("{STUDIES}/1/trials/1"), None).await;
    assert_eq!(t["measurements"].as_array().map(Vec::len), Some(1), "{t}");
}

/// `trials:columns` reads the study as columns, then with its cursor only what changed; a bad
/// cursor or page size is a 400 naming the field.
#[tokio::test]
async fn trial_columns_read_changes_after_a_cursor() {
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    let trials = format!("{STUDIES}/1/trials");
    for x in [0.25, 0.5] {
        let body = json!({"parameters": [{"parameterId": "x", "value": x}], "finalMeasurement": {"metrics": [{"metricId": "loss", "value": x * 2.0}]}});
        assert_eq!(app.call(Method::POST, &trials, Some(body)).await.0, StatusCode::OK);
    }
    let (status, all) = app.call(Method::GET, &format!("{trials}:columns"), None).await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(all["ids"], json!([1, 2]));
    assert_eq!(all["states"], json!(["SUCCEEDED", "SUCCEEDED"]));
    assert_eq!(all["metrics"], json!([{"metricId": "loss", "values": [0.5, 1.0]}]));
    assert_eq!(all["parameters"], json!([{"parameterId": "x", "values": [0.25, 0.5]}]));
    assert_eq!((all["reset"].clone(), all["more"].clone()), (json!(false), json!(false)));

    let cursor = all["cursor"].as_str().unwrap();
    let (_, quiet) = app.call(Method::GET, &format!("{trials}:columns?after={cursor}"), None).await;
    assert_eq!(quiet["ids"], json!([]));
    let (_, suggested) = app.call(Method::POST, &format!("{trials}:suggest"), Some(json!({"suggestionCount": 1, "clientId": "w"}))).await;
    assert_eq!(suggested["done"], true, "{suggested}");
    let (_, changed) = app.call(Method::GET, &format!("{trials}:columns?after={cursor}"), None).await;
    assert_eq!(changed["ids"], json!([3]));
    assert_eq!(changed["states"], json!(["ACTIVE"]));
    assert_eq!(changed["endTimes"], json!([null]));
    assert_eq!(changed["stopTimes"], json!([null]));
    assert_eq!(app.call(Method::POST, &format!("{trials}/3:stop"), Some(json!({}))).await.0, StatusCode::OK);
    let (_, stopped) = app.call(Method::GET, &format!("{trials}:columns?after={}", changed["cursor"].as_str().unwrap()), None).await;
    assert_eq!((stopped["ids"].clone(), stopped["states"].clone()), (json!([3]), json!(["STOPPING"])));
    assert!(stopped["stopTimes"][0].as_i64().is_some(), "{stopped}");
    assert_eq!(changed["metrics"][0]["values"], json!([null]));

    for (query, field) in [("after=abc", "after"), ("pageSize=0", "pageSize"), ("pageSize=100001", "pageSize"), ("cursor=1", "cursor")] {
        let (status, error) = app.call(Method::GET, &format!("{trials}:columns?{query}"), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
        assert!(error["error"]["message"].as_str().unwrap().contains(field), "{query}: {error}");
    }
}

/// ListTrials without a page size answers every trial, as Vertex does (Google's high-level
/// SDK reads one page: it listed 100 of 120); with one, pages of that size go on by token.
#[tokio::test]
async fn list_trials_without_a_page_size_lists_them_all() {
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    let trials = format!("{STUDIES}/1/trials");
    for k in 0..120 {
        let body = json!({"parameters": [{"parameterId": "x", "value": k as f64 / 120.0}], "finalMeasurement": {"metrics": [{"metricId": "loss", "value": k}]}});
        assert_eq!(app.call(Method::POST, &trials, Some(body)).await.0, StatusCode::OK);
    }
    for query in ["", "?pageSize=0"] {
        let (status, all) = app.call(Method::GET, &format!("{trials}{query}"), None).await;
        assert_eq!(status, StatusCode::OK, "{all}");
        assert_eq!(all["trials"].as_array().unwrap().len(), 120, "{query}");
        assert_eq!(all["nextPageToken"].as_str().unwrap_or(""), "", "{query}");
    }
    let (_, first) = app.call(Method::GET, &format!("{trials}?pageSize=100"), None).await;
    assert_eq!(first["trials"].as_array().unwrap().len(), 100);
    let token = first["nextPageToken"].as_str().unwrap();
    let (_, rest) = app.call(Method::GET, &format!("{trials}?pageSize=100&pageToken={token}"), None).await;
    assert_eq!(rest["trials"].as_array().unwrap().len(), 20);
    // A page size past the most a page holds is refused, as before.
    let (status, error) = app.call(Method::GET, &format!("{trials}?pageSize=1001"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
}

/// `studies:overview` lists each study with its counts by state and its best value.
#[tokio::test]
async fn the_overview_counts_each_studys_trials() {
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    for x in [0.75, 0.25] {
        let body =
            json!({"parameters": [{"parameterId": "x", "value": x}], "finalMeasurement": {"metrics": [{"metricId": "loss", "value": x}]}});
        assert_eq!(app.call(Method::POST, &format!("{STUDIES}/1/trials"), Some(body)).await.0, StatusCode::OK);
    }
    let (status, overview) = app.call(Method::GET, &format!("{STUDIES}:overview"), None).await;
    assert_eq!(status, StatusCode::OK, "{overview}");
    let first = &overview["studies"][0];
    assert_eq!(first["study"]["displayName"], "s");
    assert_eq!(first["trialCounts"]["SUCCEEDED"], 2);
    assert_eq!(first["trialCounts"]["ACTIVE"], 0);
    assert_eq!(first["bestValue"], 0.25, "the study minimises");
    assert!(first["lastActivityTime"].as_str().is_some_and(|t| t.ends_with('Z')), "{first}");
}

/// `trials:curves` draws a metric's intermediate measurements per trial; an unknown metric is a
/// 400 naming it.
#[tokio::test]
async fn trial_curves_carry_intermediate_measurements() {
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    let body = json!({"parameters": [{"parameterId": "x", "value": 0.5}],
        "measurements": [{"stepCount": "1", "metrics": [{"metricId": "loss", "value": 0.9}]}, {"stepCount": "2", "metrics": [{"metricId": "loss", "value": 0.4}]}]});
    assert_eq!(app.call(Method::POST, &format!("{STUDIES}/1/trials"), Some(body)).await.0, StatusCode::OK);
    let (status, curves) = app.call(Method::GET, &format!("{STUDIES}/1/trials:curves"), None).await;
    assert_eq!(status, StatusCode::OK, "{curves}");
    assert_eq!(curves["metricId"], "loss");
    assert_eq!(curves["curves"][0]["trialId"], 1);
    assert_eq!(curves["curves"][0]["steps"], json!([1, 2]));
    assert_eq!(curves["curves"][0]["values"], json!([0.9, 0.4]));
    let (status, error) = app.call(Method::GET, &format!("{STUDIES}/1/trials:curves?metric=nope"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"]["message"].as_str().unwrap().starts_with("metric:"), "{error}");
}

/// `…/importance` finds the parameter the objective depends on, by PED-ANOVA and by the GP's
/// Sobol indices; a random-search study has PED-ANOVA only, and says why.
#[tokio::test]
async fn importance_finds_the_parameter_that_matters() {
    let app = TestApp::new(Access::default()).await;
    for (name, algorithm) in [("gp", "GP_BANDIT"), ("random", "RANDOM_SEARCH"), ("additive", "ADD_GP_UCB")] {
        let body = json!({"displayName": name, "studySpec": {
            "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "algorithm": algorithm,
            "parameters": [{"parameterId": "a", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}},
                           {"parameterId": "b", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}});
        let (status, created) = app.call(Method::POST, STUDIES, Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{created}");
        let study = created["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
        for i in 0..40 {
            let (a, b) = ((i as f64 * 0.618_034) % 1.0, (i as f64 * 0.414_214 + 0.1) % 1.0);
            let trial = json!({"parameters": [{"parameterId": "a", "value": a}, {"parameterId": "b", "value": b}],
                "finalMeasurement": {"metrics": [{"metricId": "loss", "value": 5.0 * (a - 0.3) * (a - 0.3) + 0.01 * b}]}});
            assert_eq!(app.call(Method::POST, &format!("{STUDIES}/{study}/trials"), Some(trial)).await.0, StatusCode::OK);
        }
        let (status, imp) = app.call(Method::GET, &format!("{STUDIES}/{study}/importance"), None).await;
        assert_eq!(status, StatusCode::OK, "{imp}");
        assert_eq!((imp["computing"].clone(), imp["trials"].clone()), (json!(false), json!(40)), "{imp}");
        let p = &imp["parameters"];
        assert!(p[0]["pedAnova"].as_f64().unwrap() > p[1]["pedAnova"].as_f64().unwrap(), "{imp}");
        if algorithm == "ADD_GP_UCB" {
            // Each group's share of the additive model's variation: the group holding `a` most.
            let terms = imp["terms"].as_array().expect("an additive model's terms");
            let total: f64 = terms.iter().map(|t| t["share"].as_f64().unwrap()).sum();
            assert!((total - 1.0).abs() < 1e-9, "{imp}");
            let of_a = terms.iter().find(|t| t["name"].as_str().unwrap().split(" + ").any(|p| p == "a")).unwrap();
            assert!(of_a["share"].as_f64().unwrap() > 0.5, "{imp}");
        } else if algorithm == "GP_BANDIT" {
            assert!(p[0]["sobolFirst"].as_f64().unwrap() > 0.8, "{imp}");
            assert!(p[1]["sobolTotal"].as_f64().unwrap() < 0.1, "{imp}");
            assert!(imp.get("terms").is_none(), "not additive: {imp}");
        } else {
            assert!(p[0].get("sobolFirst").is_none() && imp["sobolAbsent"].is_string(), "{imp}");
        }
    }
}

/// A client that takes gzip gets `trials:columns` gzipped, and it decodes to the same columns.
#[tokio::test]
async fn trial_columns_are_gzipped_for_clients_that_take_it() {
    use std::io::Read;
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    let body =
        json!({"parameters": [{"parameterId": "x", "value": 0.5}], "finalMeasurement": {"metrics": [{"metricId": "loss", "value": 1.0}]}});
    assert_eq!(app.call(Method::POST, &format!("{STUDIES}/1/trials"), Some(body)).await.0, StatusCode::OK);
    let (_, plain) = app.call(Method::GET, &format!("{STUDIES}/1/trials:columns"), None).await;
    let request = Request::builder()
        .uri(format!("{STUDIES}/1/trials:columns"))
        .header("accept-encoding", "br, gzip;q=0.9")
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 24).await.unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut text).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), plain);
}

/// `trials:history` answers in buckets no more numerous than asked.
#[tokio::test]
async fn trial_history_is_bucketed() {
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    for k in 0..5 {
        let body = json!({"parameters": [{"parameterId": "x", "value": k as f64 / 10.0}], "finalMeasurement": {"metrics": [{"metricId": "loss", "value": k as f64}]}});
        assert_eq!(app.call(Method::POST, &format!("{STUDIES}/1/trials"), Some(body)).await.0, StatusCode::OK);
    }
    let (status, h) = app.call(Method::GET, &format!("{STUDIES}/1/trials:history?maxPoints=2"), None).await;
    assert_eq!(status, StatusCode::OK, "{h}");
    assert_eq!(
        (h["bucketWidth"].clone(), h["firstIds"].clone(), h["min"].clone(), h["max"].clone()),
        (json!(3), json!([1, 4]), json!([0.0, 3.0]), json!([2.0, 4.0]))
    );
    let (status, error) = app.call(Method::GET, &format!("{STUDIES}/1/trials:history?maxPoints=0"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"]["message"].as_str().unwrap().starts_with("maxPoints"), "{error}");
}

/// `GET /v1/locations` lists the projects and locations that hold studies.
#[tokio::test]
async fn locations_list_where_studies_are() {
    let app = TestApp::new(Access::default()).await;
    assert_eq!(app.call(Method::POST, STUDIES, Some(study())).await.0, StatusCode::OK);
    assert_eq!(app.call(Method::POST, "/v1/projects/q/locations/m/studies", Some(study())).await.0, StatusCode::OK);
    let (status, listed) = app.call(Method::GET, "/v1/locations", None).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(
        listed["locations"],
        json!([{"project": "p", "location": "l", "studies": 1}, {"project": "q", "location": "m", "studies": 1}])
    );
}

/// A commit that outlasts its wait answers 202 with the upload's progress and runs on without
/// the request; the upload then says COMMITTED and names its study, a second `:commit` answers
/// that study, and a committed upload takes no more parts. (A zero wait on this single-threaded
/// runtime: the commit's task cannot have run when the request is answered.)
#[tokio::test]
async fn an_import_commit_outlasting_its_wait_answers_202_and_runs_on() {
    let app = TestApp::new(Access { commit_wait: std::time::Duration::ZERO, ..Access::default() }).await;
    app.call(Method::POST, STUDIES, Some(study())).await;
    for x in [0.1, 0.2, 0.3] {
        let trial =
            json!({"parameters": [{"parameterId": "x", "value": x}], "finalMeasurement": {"metrics": [{"metricId": "loss", "value": x}]}});
        app.call(Method::POST, &format!("{STUDIES}/1/trials"), Some(trial)).await;
    }
    let (status, doc) = app.call(Method::GET, &format!("{STUDIES}/1:export"), None).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    let (status, opened) = app.call(Method::POST, "/v1/projects/p/locations/l/studies:import?displayName=copy", Some(doc)).await;
    assert_eq!(status, StatusCode::OK, "{opened}");
    assert_eq!((opened["state"].as_str(), opened["trialCount"].as_str()), (Some("STAGING"), Some("3")), "{opened}");
    let upload = format!("/v1/{}", opened["name"].as_str().unwrap());

    let (status, progress) = app.call(Method::POST, &format!("{upload}:commit"), Some(json!({}))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{progress}");
    assert_eq!(progress["name"], opened["name"], "{progress}");
    assert_ne!(progress["state"], "COMMITTED", "{progress}");
    assert!(progress.get("study").is_none(), "{progress}");

    let mut now = progress;
    for _ in 0..500 {
        if now["state"] == "COMMITTED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        now = app.call(Method::GET, &upload, None).await.1;
    }
    assert_eq!((now["state"].as_str(), now["committedTrialCount"].as_str()), (Some("COMMITTED"), Some("3")), "{now}");
    assert_eq!(now["study"], "projects/p/locations/l/studies/2", "{now}");
    let (status, copy) = app.call(Method::POST, &format!("{upload}:commit"), Some(json!({}))).await;
    assert_eq!(
        (status, copy["name"].as_str(), copy["displayName"].as_str()),
        (StatusCode::OK, now["study"].as_str(), Some("copy")),
        "{copy}"
    );
    let (_, trials) = app.call(Method::GET, &format!("{STUDIES}/2/trials"), None).await;
    assert_eq!(trials["trials"].as_array().map(Vec::len), Some(3), "{trials}");

    let part = json!({"trials": [{"id": "9", "state": "ACTIVE", "startTime": "2026-01-01T00:00:00Z", "parameters": [{"parameterId": "x", "value": 0.5}]}]});
    let (status, e) = app.call(Method::POST, &format!("{upload}:append"), Some(part)).await;
    assert_eq!((status, e["error"]["status"].as_str()), (StatusCode::BAD_REQUEST, Some("FAILED_PRECONDITION")), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("commit has begun"), "{e}");
    // Deleting the committed upload leaves the study; then the upload is gone.
    assert_eq!(app.call(Method::DELETE, &upload, None).await.0, StatusCode::OK);
    assert_eq!(app.call(Method::GET, &format!("{STUDIES}/2"), None).await.0, StatusCode::OK);
    assert_eq!(app.call(Method::POST, &format!("{upload}:commit"), Some(json!({}))).await.0, StatusCode::NOT_FOUND);
}
