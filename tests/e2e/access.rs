//! API keys, projects and request limits, against the real server: a key sees only its
//! projects (another project's resources are 404 whether or not they exist, and nothing in them
//! changes); no key or a wrong one is 401; a key over its rate is 429; oversized headers and
//! bodies are refused; every response carries a request id; `/metrics` counts it all.

use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};

use super::harness::{Server, databases};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-9876543210";

struct Caller<'a> {
    server: &'a Server,
    key: Option<&'a str>,
    client: Client,
}

impl Caller<'_> {
    fn send(&self, method: &str, path: &str, body: Option<Value>) -> Response {
        let mut request = self.client.request(method.parse().unwrap(), format!("{}{path}", self.server.base));
        if let Some(key) = self.key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().expect("request reaches bo-server")
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let response = self.send(method, path, body);
        let status = response.status();
        (status, response.json().unwrap_or(Value::Null))
    }
}

fn study(name: &str) -> Value {
    json!({"displayName": name, "studySpec": {
        "metrics": [{"metricId": "m", "goal": "MAXIMIZE"}], "algorithm": "RANDOM_SEARCH",
        "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}})
}

fn keys() -> String {
    let alice = bo_server::api::access::hash_key(ALICE);
    let bob = bo_server::api::access::hash_key(BOB);
    format!("alice {alice} team-a,shared; bob {bob} team-b")
}

#[test]
fn a_key_sees_only_its_projects() {
    let db = &databases("access_projects")[0];
    let server = Server::start_with(db, &["--api-keys", &keys(), "--rate-limit", "0"]);
    let alice = Caller { server: &server, key: Some(ALICE), client: Client::new() };
    let bob = Caller { server: &server, key: Some(BOB), client: Client::new() };
    let a = "/v1/projects/team-a/locations/l";
    let b = "/v1/projects/team-b/locations/l";

    // Each creates a study with a trial in its own project.
    let (status, created) = bob.call("POST", &format!("{b}/studies"), Some(study("secret-plan")));
    assert_eq!(status, StatusCode::OK, "{created}");
    let (status, op) = bob.call("POST", &format!("{b}/studies/1/trials:suggest"), Some(json!({"suggestionCount": 1, "clientId": "w"})));
    assert_eq!(status, StatusCode::OK, "{op}");
    let (status, _) = alice.call("POST", &format!("{a}/studies"), Some(study("mine")));
    assert_eq!(status, StatusCode::OK);
    // Numbered within its own project: Bob's study says nothing of Alice's.
    assert_eq!(alice.call("GET", &format!("{a}/studies/1"), None).0, StatusCode::OK);

    // Alice in team-b: reading, listing, looking up, suggesting, completing, creating, deleting
    // and polling are all 404, and the answer is the same whether the resource exists or not.
    let attempts: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", format!("{b}/studies/1"), None),
        ("GET", format!("{b}/studies"), None),
        ("POST", format!("{b}/studies:lookup"), Some(json!({"displayName": "secret-plan"}))),
        ("POST", format!("{b}/studies/1/trials:suggest"), Some(json!({"suggestionCount": 1, "clientId": "x"}))),
        ("GET", format!("{b}/studies/1/trials"), None),
        ("GET", format!("{b}/studies/1/trials/1"), None),
        (
            "POST",
            format!("{b}/studies/1/trials/1:complete"),
            Some(json!({"finalMeasurement": {"metrics": [{"metricId": "m", "value": 1}]}})),
        ),
        (
            "POST",
            format!("{b}/studies/1/trials/1:addTrialMeasurement"),
            Some(json!({"measurement": {"metrics": [{"metricId": "m", "value": 1}]}})),
        ),
        ("POST", format!("{b}/studies/1/trials:listOptimalTrials"), Some(json!({}))),
        ("GET", format!("{b}/studies/1/operations/1"), None),
        ("GET", "/ui/projects/team-b/locations/l/studies/1/operations/1".to_owned(), None),
        ("GET", format!("{b}/studies/1/model"), None),
        ("POST", format!("{b}/studies/1:stop"), Some(json!({}))),
        ("POST", format!("{b}/studies"), Some(study("intruder"))),
        ("DELETE", format!("{b}/studies/1/trials/1"), None),
        ("DELETE", format!("{b}/studies/1"), None),
    ];
    for (method, path, body) in attempts {
        let (status, answer) = alice.call(method, &path, body.clone());
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
        let missing = path.replace("/studies/1", "/studies/999").replace("team-b", "no-such-project");
        let (status, other) = alice.call(method, &missing, body);
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {missing}");
        assert_eq!(answer["error"]["status"], other["error"]["status"]);
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(!message.contains("secret-plan"), "{message}");
        assert_eq!(
            message.replace("team-b", "P").replace("/999", "/1"),
            other["error"]["message"].as_str().unwrap().replace("no-such-project", "P").replace("/999", "/1")
        );
    }

    // Bob's study is as it was: one ACTIVE trial, nothing measured, nothing added.
    let (status, trials) = bob.call("GET", &format!("{b}/studies/1/trials"), None);
    assert_eq!(status, StatusCode::OK);
    let trials = trials["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 1);
    assert_eq!(trials[0]["state"], "ACTIVE");
    assert!(trials[0].get("measurements").is_none(), "{}", trials[0]);
    let (_, listed) = bob.call("GET", &format!("{b}/studies"), None);
    assert_eq!(listed["studies"].as_array().unwrap().len(), 1);
    assert_eq!(listed["studies"][0]["state"], "ACTIVE", "Alice's :stop changed nothing");
    // And Bob cannot see Alice's.
    assert_eq!(bob.call("GET", &format!("{a}/studies/2"), None).0, StatusCode::NOT_FOUND);
    // Alice's second project is hers.
    assert_eq!(alice.call("GET", "/v1/projects/shared/locations/l/studies", None).0, StatusCode::OK);

    // No key, a wrong key: 401 with a challenge; health, metrics and the spec stay open.
    let anonymous = Caller { server: &server, key: None, client: Client::new() };
    let response = anonymous.send("GET", &format!("{a}/studies"), None);
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    let body: Value = response.json().unwrap();
    assert_eq!(body["error"]["status"], "UNAUTHENTICATED");
    let forger = Caller { server: &server, key: Some("alice-key-0123456788"), client: Client::new() };
    assert_eq!(forger.call("GET", &format!("{a}/studies"), None).0, StatusCode::UNAUTHORIZED);
    for open in ["/healthz", "/readyz", "/openapi.json"] {
        assert_eq!(anonymous.send("GET", open, None).status(), StatusCode::OK, "{open}");
    }

    // Metrics: counted by route template, never by project.
    let text = anonymous.send("GET", "/metrics", None).text().unwrap();
    assert!(text.contains(r#"route="/v1/projects/{project}/locations/{location}/studies/{study}",status="404""#), "{text}");
    assert!(text.contains(r#"status="401""#), "{text}");
    assert!(!text.contains("team-b"), "{text}");
    assert!(text.contains("bo_suggest_duration_seconds_count{path="), "{text}");
}

#[test]
fn limits_answer_429_431_413_and_every_response_has_a_request_id() {
    let db = &databases("access_limits")[0];
    let server =
        Server::start_with(db, &["--api-keys", &keys(), "--rate-limit", "1", "--max-header-bytes", "2048", "--max-body-bytes", "2000"]);
    let alice = Caller { server: &server, key: Some(ALICE), client: Client::new() };
    let bob = Caller { server: &server, key: Some(BOB), client: Client::new() };
    let list = "/v1/projects/team-a/locations/l/studies";

    // A burst of two seconds' worth (2 requests), then 429 with Retry-After; Bob is unaffected.
    let statuses: Vec<StatusCode> = (0..3).map(|_| alice.send("GET", list, None).status()).collect();
    assert_eq!(statuses[..2], [StatusCode::OK, StatusCode::OK]);
    let limited = alice.send("GET", list, None);
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("retry-after"));
    let body: Value = limited.json().unwrap();
    assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(bob.send("GET", "/v1/projects/team-b/locations/l/studies", None).status(), StatusCode::OK);

    // Oversized headers and bodies (no key needed to be refused).
    let anonymous = Client::new();
    let big = anonymous.get(format!("{}/healthz", server.base)).header("x-padding", "p".repeat(4096)).send().unwrap();
    assert_eq!(big.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let mut spec = study("big");
    spec["description"] = json!("d".repeat(4000));
    let response = bob.send("POST", "/v1/projects/team-b/locations/l/studies", Some(spec));
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(response.text().unwrap().contains("2000 bytes"));

    // Request ids: ours when none is sent, the caller's when it is sane.
    let own = anonymous.get(format!("{}/healthz", server.base)).send().unwrap();
    let id = own.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(id.contains('-'), "{id}");
    let next = anonymous.get(format!("{}/healthz", server.base)).send().unwrap();
    assert_ne!(next.headers()["x-request-id"].to_str().unwrap(), id);
    let theirs = anonymous.get(format!("{}/healthz", server.base)).header("x-request-id", "trace-42").send().unwrap();
    assert_eq!(theirs.headers()["x-request-id"], "trace-42");
}
