//! Hardening II, against the real binary: the read surfaces the dashboard polls are bounded by
//! bytes and by work, and one tenant cannot starve another. Two keys, two projects: `alice`
//! pounds a surface at the sizes that used to abort or pin the server while `bob` runs a GP
//! study's suggest–complete loop, whose 99th percentile must stay under a second; the server's
//! peak memory is read from /proc and bounded. On SQLite and Postgres.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::Client;
use serde_json::{Value, json};

use crate::harness::{Database, Server, databases};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-9876543210";

fn keys() -> String {
    format!("alice {} project-a; bob {} project-b", bo_server::api::access::hash_key(ALICE), bo_server::api::access::hash_key(BOB))
}

/// A server with alice's and bob's keys, no rate limit (the tests pound on purpose).
fn start(db: &Database, extra: &[&str]) -> Server {
    let keys = keys();
    let mut args = vec!["--api-keys", &keys, "--rate-limit", "0"];
    args.extend_from_slice(extra);
    Server::start_with(db, &args)
}

/// One key's calls into its project.
#[derive(Clone)]
struct Tenant {
    base: String,
    key: &'static str,
    client: Client,
}

impl Tenant {
    fn new(server: &Server, key: &'static str, project: &str) -> Tenant {
        let client = Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
        Tenant { base: format!("{}/v1/projects/{project}/locations/l", server.base), key, client }
    }

    /// The answer's status and raw body.
    fn text(&self, method: &str, path: &str, body: Option<&Value>) -> (StatusCode, String) {
        let mut request = self.client.request(method.parse().unwrap(), format!("{}{path}", self.base)).bearer_auth(self.key);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status();
        (status, response.text().unwrap())
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let (status, text) = self.text(method, path, body);
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(status, StatusCode::OK, "{method} {path}: {}", text.chars().take(300).collect::<String>());
        value
    }

    fn create(&self, body: &Value) -> String {
        let v = self.call("POST", "/studies", Some(body));
        v["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()
    }

    /// Adds a trial evaluated elsewhere.
    fn add(&self, study: &str, trial: &Value) {
        self.call("POST", &format!("/studies/{study}/trials"), Some(trial));
    }
}

/// Bob's GP study, suggested and completed in a loop on its own thread for as long as the watch
/// lives: the slowest and the 99th percentile of its calls.
struct SuggestWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Duration>>>,
}

impl SuggestWatch {
    fn start(bob: &Tenant, name: &str) -> SuggestWatch {
        let study = bob.create(&json!({"displayName": name, "studySpec": {
            "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
            "parameters": (0..4).map(|k| json!({"parameterId": format!("x{k}"), "doubleValueSpec": {"minValue": 0, "maxValue": 1}})).collect::<Vec<_>>()}}));
        let stop = Arc::new(AtomicBool::new(false));
        let (bob, flag) = (bob.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut times = Vec::new();
            let mut k = 0;
            while !flag.load(Ordering::SeqCst) || times.len() < 20 {
                let started = Instant::now();
                let op =
                    bob.call("POST", &format!("/studies/{study}/trials:suggest"), Some(&json!({"suggestionCount": 1, "clientId": "bob"})));
                assert_eq!(op["done"], true, "bob's suggest was answered pending: {op}");
                let trial = &op["response"]["trials"][0];
                let y: f64 = trial["parameters"].as_array().unwrap().iter().map(|p| (p["value"].as_f64().unwrap() - 0.3).powi(2)).sum();
                let id = trial["id"].as_str().unwrap();
                bob.call(
                    "POST",
                    &format!("/studies/{study}/trials/{id}:complete"),
                    Some(&json!({"finalMeasurement": {"metrics": [{"metricId": "y", "value": y}]}})),
                );
                times.push(started.elapsed());
                k += 1;
                if k > 2000 {
                    break;
                }
            }
            times
        });
        SuggestWatch { stop, thread: Some(thread) }
    }

    /// Stops the loop; asserts bob's suggest-and-complete took under a second at the 99th
    /// percentile (the issue's measure; the slowest is printed, and bounded at two seconds).
    fn finish(mut self, what: &str) {
        self.stop.store(true, Ordering::SeqCst);
        let mut times = self.thread.take().unwrap().join().unwrap();
        times.sort();
        let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
        let slowest = *times.last().unwrap();
        println!("{what}: bob's {} suggest+complete calls, p99 {p99:?}, slowest {slowest:?}", times.len());
        assert!(p99 < Duration::from_secs(1), "{what}: bob's suggest+complete took {p99:?} at the 99th percentile (slowest {slowest:?})");
        assert!(slowest < Duration::from_secs(2), "{what}: bob's slowest suggest+complete took {slowest:?} (p99 {p99:?})");
    }
}

/// `n` threads calling `work` in a loop until `stop`.
fn pound(n: usize, stop: &Arc<AtomicBool>, work: impl Fn() + Send + Sync + 'static) -> Vec<JoinHandle<usize>> {
    let work = Arc::new(work);
    (0..n)
        .map(|_| {
            let (stop, work) = (stop.clone(), work.clone());
            std::thread::spawn(move || {
                let mut calls = 0;
                while !stop.load(Ordering::SeqCst) {
                    work();
                    calls += 1;
                }
                calls
            })
        })
        .collect()
}

fn join(threads: Vec<JoinHandle<usize>>) -> usize {
    threads.into_iter().map(|t| t.join().unwrap()).sum()
}

fn megabytes(bytes: u64) -> u64 {
    bytes >> 20
}

/// Specs near the body limit (a megabyte each): ListStudies stops a page at 4 MiB of specs
/// with a token that reaches every study once; the overview answers a few hundred bytes a
/// study, never the spec; and bob's loop stays fast while alice reads them over and over.
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn large_specs_are_paged_by_bytes_and_the_overview_stays_small() {
    // The machine to this test alone, data made included: what is timed is the server.
    let _machine = crate::harness::machine_to_myself();
    for db in databases("tenants_large_specs") {
        let server = start(&db, &[]);
        let (alice, bob) = (Tenant::new(&server, ALICE, "project-a"), Tenant::new(&server, BOB, "project-b"));
        // Eight categoricals of 1,000 values of 118 characters: about 0.97 MB of spec.
        let parameters: Vec<Value> = (0..8)
            .map(|p| {
                let values: Vec<String> = (0..1000).map(|v| format!("{p}{v:0>117}")).collect();
                json!({"parameterId": format!("c{p}"), "categoricalValueSpec": {"values": values}})
            })
            .collect();
        let count = 10;
        for k in 0..count {
            let spec = json!({"displayName": format!("wide-{k}"), "studySpec": {
                "metrics": [{"metricId": "m", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH", "parameters": parameters}});
            alice.create(&spec);
        }
        let watch = SuggestWatch::start(&bob, "bob-large-specs");
        let before = server.peak_rss();
        let (mut token, mut seen) = (String::new(), Vec::new());
        loop {
            let (status, text) = alice.text("GET", &format!("/studies?pageSize=200&pageToken={token}"), None);
            assert_eq!(status, StatusCode::OK);
            assert!(text.len() < 6 << 20, "a page of {} bytes on {}", text.len(), db.name);
            let page: Value = serde_json::from_str(&text).unwrap();
            seen.extend(page["studies"].as_array().unwrap().iter().map(|s| s["displayName"].as_str().unwrap().to_owned()));
            match page["nextPageToken"].as_str() {
                Some(t) => token = t.to_owned(),
                None => break,
            }
        }
        let expected: Vec<String> = (0..count).map(|k| format!("wide-{k}")).collect();
        assert_eq!(seen, expected, "every study once, in order, on {}", db.name);
        let (status, text) = alice.text("GET", "/studies:overview?pageSize=1000", None);
        assert_eq!(status, StatusCode::OK);
        assert!(text.len() < 20_000, "the overview of {count} studies is {} bytes on {}", text.len(), db.name);
        let overview: Value = serde_json::from_str(&text).unwrap();
        let first = &overview["studies"][0];
        assert_eq!(
            (first["study"]["algorithm"].as_str(), first["study"]["metrics"][0]["metricId"].as_str()),
            (Some("RANDOM_SEARCH"), Some("m"))
        );
        assert!(first["study"].get("studySpec").is_none(), "the overview carries no spec");
        // Alice reads the overview and the pages again and again, from four threads.
        let stop = Arc::new(AtomicBool::new(false));
        let reader = alice.clone();
        let threads = pound(4, &stop, move || {
            assert_eq!(reader.text("GET", "/studies:overview?pageSize=1000", None).0, StatusCode::OK);
            assert_eq!(reader.text("GET", "/studies?pageSize=200", None).0, StatusCode::OK);
        });
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::SeqCst);
        assert!(join(threads) > 0);
        watch.finish(&format!("large specs on {}", db.name));
        let grown = megabytes(server.peak_rss().saturating_sub(before));
        println!("large specs on {}: peak RSS {} MB (+{grown} MB)", db.name, megabytes(server.peak_rss()));
        assert!(grown < 400, "peak RSS grew by {grown} MB on {}", db.name);
    }
}

/// Learning curves of 120 trials of 1,000 measurements of five metrics (600,000 values): a
/// read of 500 curves stops at 100,000 points and says how many it left out, for the objective
/// (read from its column) and for another metric (taken out of each measurement's JSON by the
/// database); the history and the columns stay small; bob's loop stays fast meanwhile.
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn curves_are_bounded_by_points() {
    // The machine to this test alone, data made included: what is timed is the server.
    let _machine = crate::harness::machine_to_myself();
    for db in databases("tenants_curves") {
        let server = start(&db, &[]);
        let (alice, bob) = (Tenant::new(&server, ALICE, "project-a"), Tenant::new(&server, BOB, "project-b"));
        let metrics: Vec<Value> = (0..5).map(|k| json!({"metricId": format!("m{k}"), "goal": "MINIMIZE"})).collect();
        let study = alice.create(&json!({"displayName": "curves", "studySpec": {"metrics": metrics, "algorithm": "RANDOM_SEARCH",
            "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}}));
        for t in 0..120 {
            let measurements: Vec<Value> = (0..1000)
                .map(|s| json!({"stepCount": (s + 1).to_string(), "metrics": (0..5).map(|k| json!({"metricId": format!("m{k}"), "value": (s * (k + 1)) as f64})).collect::<Vec<_>>()}))
                .collect();
            alice.add(&study, &json!({"parameters": [{"parameterId": "x", "value": t as f64 / 120.0}], "measurements": measurements}));
        }
        let watch = SuggestWatch::start(&bob, "bob-curves");
        let before = server.peak_rss();
        for metric in ["m0", "m3"] {
            let (status, text) = alice.text("GET", &format!("/studies/{study}/trials:curves?limit=500&metric={metric}"), None);
            assert_eq!(status, StatusCode::OK);
            assert!(text.len() < 8 << 20, "{metric}: {} bytes on {}", text.len(), db.name);
            let read: Value = serde_json::from_str(&text).unwrap();
            let curves = read["curves"].as_array().unwrap();
            let points: usize = curves.iter().map(|c| c["steps"].as_array().unwrap().len()).sum();
            assert_eq!((curves.len(), read["omitted"].as_u64(), points), (100, Some(20), 100_000), "{metric} on {}", db.name);
            let k: f64 = metric[1..].parse::<f64>().unwrap() + 1.0;
            assert_eq!(curves[0]["values"][10].as_f64(), Some(10.0 * k), "{metric}: the metric's own values");
        }
        let history = alice.call("GET", &format!("/studies/{study}/trials:history?maxPoints=20000"), None);
        assert_eq!(history["firstIds"].as_array().unwrap().len(), 120);
        // Alice pounds the curves from four threads.
        let stop = Arc::new(AtomicBool::new(false));
        let reader = alice.clone();
        let path = format!("/studies/{study}/trials:curves?limit=500&metric=m3");
        let threads = pound(4, &stop, move || {
            assert_eq!(reader.text("GET", &path, None).0, StatusCode::OK);
        });
        std::thread::sleep(Duration::from_secs(5));
        stop.store(true, Ordering::SeqCst);
        assert!(join(threads) > 0);
        watch.finish(&format!("curves on {}", db.name));
        let grown = megabytes(server.peak_rss().saturating_sub(before));
        println!("curves on {}: peak RSS {} MB (+{grown} MB)", db.name, megabytes(server.peak_rss()));
        assert!(grown < 400, "peak RSS grew by {grown} MB on {}", db.name);
    }
}

/// Trials on the positive part of a sphere in `m` objectives: every one on the front.
fn sphere_trials(alice: &Tenant, study: &str, n: usize, m: usize) {
    let mut state = 12345u64;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64) + 0.01
    };
    for _ in 0..n {
        let v: Vec<f64> = (0..m).map(|_| next()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let metrics: Vec<Value> = v.iter().enumerate().map(|(k, x)| json!({"metricId": format!("o{k}"), "value": x / norm})).collect();
        alice.add(study, &json!({"parameters": [{"parameterId": "x", "value": 0.5}], "finalMeasurement": {"metrics": metrics}}));
    }
}

/// A front of 1,100 trials of 4 and of 20 objectives — minutes of exact hypervolume
/// contributions before — is cut to 1,000 trials within seconds, the same trials each time,
/// kept per data version (the second call takes a fraction of the first); six callers at once
/// and bob's loop meanwhile stay fast.
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn fronts_of_many_objectives_are_bounded_and_kept() {
    // The machine to this test alone, data made included: what is timed is the server.
    let _machine = crate::harness::machine_to_myself();
    for db in databases("tenants_fronts") {
        let server = start(&db, &[]);
        let (alice, bob) = (Tenant::new(&server, ALICE, "project-a"), Tenant::new(&server, BOB, "project-b"));
        for m in [4, 20] {
            let metrics: Vec<Value> = (0..m).map(|k| json!({"metricId": format!("o{k}"), "goal": "MAXIMIZE"})).collect();
            let study = alice
                .create(&json!({"displayName": format!("front-{m}"), "studySpec": {"metrics": metrics, "algorithm": "RANDOM_SEARCH",
                "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}}));
            sphere_trials(&alice, &study, 1100, m);
            let path = format!("/studies/{study}/trials:listOptimalTrials");
            let started = Instant::now();
            let first = alice.call("POST", &path, Some(&json!({})));
            let cold = started.elapsed();
            let ids =
                |v: &Value| v["optimalTrials"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
            assert_eq!(ids(&first).len(), 1000, "{m} objectives on {}", db.name);
            assert!(cold < Duration::from_secs(30), "{m} objectives: {cold:?} on {}", db.name);
            let started = Instant::now();
            let again = alice.call("POST", &path, Some(&json!({})));
            let warm = started.elapsed();
            assert_eq!(ids(&again), ids(&first), "the same trials");
            println!("{m} objectives on {}: {cold:?} the first time, {warm:?} the second", db.name);
            // A new trial (a new data version) and six callers at once: one computation.
            sphere_trials(&alice, &study, 1, m);
            let watch = SuggestWatch::start(&bob, &format!("bob-front-{m}"));
            let callers: Vec<_> = (0..6)
                .map(|_| {
                    let (alice, path) = (alice.clone(), path.clone());
                    std::thread::spawn(move || alice.call("POST", &path, Some(&json!({})))["optimalTrials"].as_array().unwrap().len())
                })
                .collect();
            for c in callers {
                assert_eq!(c.join().unwrap(), 1000);
            }
            watch.finish(&format!("fronts of {m} objectives on {}", db.name));
        }
    }
}

/// Two structure searches of minutes in alice's project (OVERLAP_ADD_GP, 30 parameters, 400
/// trials, `gibbsBudget` 10,000) used to hold every fit permit, and bob's GP study stayed on its
/// initial design for 40 trials. Now they yield at their checkpoints: bob's model follows his
/// data within seconds, and his loop stays fast.
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn a_structure_search_does_not_starve_another_project() {
    // The machine to this test alone, data made included: what is timed is the server.
    let _machine = crate::harness::machine_to_myself();
    let db = &databases("tenants_structure")[0];
    let server = start(db, &["--workers", "2", "--shutdown-grace", "3"]);
    let (alice, bob) = (Tenant::new(&server, ALICE, "project-a"), Tenant::new(&server, BOB, "project-b"));
    let parameters: Vec<Value> =
        (0..30).map(|k| json!({"parameterId": format!("x{k}"), "doubleValueSpec": {"minValue": 0, "maxValue": 1}})).collect();
    let mut state = 7u64;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for s in 0..2 {
        let study = alice.create(&json!({"displayName": format!("search-{s}"), "studySpec": {
            "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "OVERLAP_ADD_GP",
            "algorithmConfig": {"gibbsBudget": 10000}, "parameters": parameters}}));
        for _ in 0..400 {
            let x: Vec<f64> = (0..30).map(|_| next()).collect();
            let y: f64 = x.windows(2).map(|w| (w[0] - 0.3) * (w[1] - 0.6)).sum();
            let params: Vec<Value> = x.iter().enumerate().map(|(k, v)| json!({"parameterId": format!("x{k}"), "value": v})).collect();
            alice.add(&study, &json!({"parameters": params, "finalMeasurement": {"metrics": [{"metricId": "y", "value": y}]}}));
        }
        // The trials' arrival started the refit: a structure search of minutes, in the background.
        alice.call("POST", &format!("/studies/{study}/trials:suggest"), Some(&json!({"suggestionCount": 1, "clientId": "alice"})));
    }
    // Both searches hold a permit (of two) before bob starts.
    let busy = || {
        let metrics = reqwest::blocking::get(format!("{}/metrics", server.base)).unwrap().text().unwrap();
        metrics.lines().find_map(|l| l.strip_prefix("bo_workers_busy ")).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while busy() < 2 {
        assert!(Instant::now() < deadline, "alice's two structure searches never ran at once");
        std::thread::sleep(Duration::from_millis(100));
    }
    let watch = SuggestWatch::start(&bob, "bob-structure");
    std::thread::sleep(Duration::from_secs(10));
    watch.finish("beside two structure searches");
    // Bob's model has followed his data: fitted on (nearly) his latest version.
    let bob_study = bob.call("GET", "/studies", None)["studies"][0]["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let model = bob.call("GET", &format!("/studies/{bob_study}/model"), None);
        let (fitted, data) = (model["fittedDataVersion"].as_i64().unwrap(), model["dataVersion"].as_i64().unwrap());
        if fitted >= data.min(20) && fitted > 0 {
            println!("bob's model fitted at version {fitted} of {data}");
            break;
        }
        assert!(Instant::now() < deadline, "bob's model stayed at version {fitted} of {data} beside alice's structure searches");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(busy() >= 1, "alice's searches still run");
    // SIGTERM with the searches running: the process ends within its grace and two seconds (it
    // once logged "stopped" and ran on for minutes, the runtime waiting for the searches).
    let signalled = Instant::now();
    let status = server.terminate();
    let took = signalled.elapsed();
    println!("stopped {took:?} after SIGTERM with two structure searches running");
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(5), "the process ended {took:?} after SIGTERM (grace 3 s)");
}

/// Alice opens 150 connections and sends each a request head and then a byte of body now and
/// then: at most her in-flight limit of them are served (the others answered 429 at once), each
/// gives up at the body timeout (408), and bob's requests are answered within a second
/// throughout, although the server holds at most 100 connections.
#[test]
fn one_key_cannot_take_every_connection() {
    // The machine to this test alone, data made included: what is timed is the server.
    let _machine = crate::harness::machine_to_myself();
    let db = &databases("tenants_connections")[0];
    let server = start(db, &["--max-open-connections", "100", "--max-in-flight-per-key", "16", "--body-timeout", "3"]);
    let bob = Tenant::new(&server, BOB, "project-b");
    let address = server.base.trim_start_matches("http://").to_owned();
    let head = format!(
        "POST /v1/projects/project-a/locations/l/studies HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {ALICE}\r\n\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{"
    );
    let mut sockets: Vec<TcpStream> = (0..150)
        .filter_map(|_| {
            let mut s = TcpStream::connect(&address).ok()?;
            s.write_all(head.as_bytes()).ok()?;
            Some(s)
        })
        .collect();
    assert!(sockets.len() >= 100, "{} connections opened", sockets.len());
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    while started.elapsed() < Duration::from_secs(6) {
        for s in &mut sockets {
            let _ = s.write_all(b" ");
        }
        let asked = Instant::now();
        let (status, text) = bob.text("GET", "/studies", None);
        assert_eq!(status, StatusCode::OK, "bob was answered {status}: {text}");
        slowest = slowest.max(asked.elapsed());
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("beside 150 slow bodies: bob's slowest answer {slowest:?}");
    assert!(slowest < Duration::from_secs(1), "bob's slowest answer took {slowest:?}");
    // What alice's connections were answered: 429 for those beyond her limit, 408 for the rest
    // (those still waiting in the listen queue have nothing yet).
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for s in &mut sockets {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 512];
        let status = match std::io::Read::read(s, &mut buf) {
            Ok(n) if n > 12 => String::from_utf8_lossy(&buf[9..12]).into_owned(),
            Ok(_) => "closed".to_owned(),
            Err(_) => "nothing".to_owned(),
        };
        *answers.entry(status).or_default() += 1;
    }
    println!("alice's slow bodies were answered {answers:?}");
    assert!(answers.get("200").is_none(), "{answers:?}");
    assert!(answers.get("408").copied().unwrap_or(0) <= 16, "at most her in-flight limit waited for a body: {answers:?}");
    assert!(answers.get("429").copied().unwrap_or(0) > 0, "{answers:?}");
    let health = reqwest::blocking::get(format!("{}/healthz", server.base)).unwrap();
    assert_eq!(health.status(), StatusCode::OK);
}

/// Every other read the dashboard makes, pounded at once by alice on her GP study of 2,000
/// trials — its columns (all of them, gzipped and not), its history, its importance (a GP fit
/// of 2,000 trials, computed once per data version however many ask), its model, predictions
/// at 1,000 points, the locations — while a completion now and then gives each a new data
/// version: bob's loop stays under a second throughout and the server's memory bounded.
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn every_dashboard_read_at_once() {
    // The machine to this test alone, data made included: what is timed is the server.
    let _machine = crate::harness::machine_to_myself();
    for db in databases("tenants_every_read") {
        let server = start(&db, &[]);
        let (alice, bob) = (Tenant::new(&server, ALICE, "project-a"), Tenant::new(&server, BOB, "project-b"));
        let parameters: Vec<Value> =
            (0..6).map(|k| json!({"parameterId": format!("x{k}"), "doubleValueSpec": {"minValue": 0, "maxValue": 1}})).collect();
        let study = alice.create(&json!({"displayName": "dashboard", "studySpec": {
            "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT", "parameters": parameters}}));
        let mut state = 99u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut point = move || -> (Vec<Value>, f64) {
            let x: Vec<f64> = (0..6).map(|_| next()).collect();
            let y = x.iter().enumerate().map(|(k, v)| (v - 0.3).powi(2) * (k + 1) as f64).sum::<f64>();
            (x.iter().enumerate().map(|(k, v)| json!({"parameterId": format!("x{k}"), "value": v})).collect(), y)
        };
        for _ in 0..2000 {
            let (params, y) = point();
            alice.add(&study, &json!({"parameters": params, "finalMeasurement": {"metrics": [{"metricId": "y", "value": y}]}}));
        }
        let predict = json!({"trials": (0..1000).map(|_| json!({"parameters": point().0})).collect::<Vec<_>>()});
        let watch = SuggestWatch::start(&bob, "bob-every-read");
        let before = server.peak_rss();
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for path in [
            format!("/studies/{study}/trials:columns"),
            format!("/studies/{study}/trials:history"),
            format!("/studies/{study}/importance"),
            format!("/studies/{study}/model"),
            "/studies:overview".to_owned(),
        ] {
            let reader = alice.clone();
            threads.extend(pound(2, &stop, move || {
                let (status, text) = reader.text("GET", &path, None);
                assert!(status == StatusCode::OK, "{path}: {status} {}", text.chars().take(200).collect::<String>());
            }));
        }
        {
            let (reader, path) = (alice.clone(), format!("/studies/{study}:predict"));
            threads.extend(pound(2, &stop, move || {
                let (status, text) = reader.text("POST", &path, Some(&predict));
                assert!(
                    status == StatusCode::OK || status == StatusCode::BAD_REQUEST,
                    "{status} {}",
                    text.chars().take(200).collect::<String>()
                );
            }));
        }
        {
            // The columns gzipped, as the dashboard's browser takes them.
            let (reader, url) = (alice.clone(), format!("{}/studies/{study}/trials:columns", alice.base));
            threads.extend(pound(1, &stop, move || {
                let response = reader.client.get(&url).bearer_auth(ALICE).header("accept-encoding", "gzip").send().unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                assert_eq!(response.headers()["content-encoding"], "gzip");
                assert!(!response.bytes().unwrap().is_empty());
            }));
        }
        {
            let (reader, base) = (alice.clone(), server.base.clone());
            threads.extend(pound(1, &stop, move || {
                let response = reader.client.get(format!("{base}/v1/locations")).bearer_auth(ALICE).send().unwrap();
                assert_eq!(response.status(), StatusCode::OK);
            }));
        }
        // A completion every second: every read's data version moves on.
        let writer = alice.clone();
        let started = Instant::now();
        let mut k = 0;
        while started.elapsed() < Duration::from_secs(12) {
            let x: Vec<Value> =
                (0..6).map(|j| json!({"parameterId": format!("x{j}"), "value": ((k * 7 + j) % 10) as f64 / 10.0})).collect();
            writer.add(&study, &json!({"parameters": x, "finalMeasurement": {"metrics": [{"metricId": "y", "value": 1.0}]}}));
            k += 1;
            std::thread::sleep(Duration::from_secs(1));
        }
        stop.store(true, Ordering::SeqCst);
        let calls = join(threads);
        watch.finish(&format!("every dashboard read on {}", db.name));
        let grown = megabytes(server.peak_rss().saturating_sub(before));
        println!(
            "every dashboard read on {}: {calls} of alice's calls, peak RSS {} MB (+{grown} MB)",
            db.name,
            megabytes(server.peak_rss())
        );
        assert!(grown < 600, "peak RSS grew by {grown} MB on {}", db.name);
        let importance = alice.call("GET", &format!("/studies/{study}/importance"), None);
        assert!(importance["parameters"].as_array().is_some_and(|p| !p.is_empty()), "{importance}");
    }
}

/// The smaller findings of hardening II, over HTTP: the Bearer scheme in any case; a gzip weight
/// of 0 honoured; a study's name in its canonical form only; contradicting or inapplicable
/// stopping rules and durations beyond proto3's range refused, naming the field, quoting once.
#[test]
fn the_smaller_findings_of_hardening_ii() {
    // A server starting beside the write-latency test below would share its disk's syncs.
    let _machine = crate::harness::machine_to_myself();
    let db = &databases("tenants_smaller")[0];
    let server = start(db, &[]);
    let alice = Tenant::new(&server, ALICE, "project-a");
    for scheme in ["BEARER", "bearer", "Bearer"] {
        let response =
            alice.client.get(format!("{}/studies", alice.base)).header("authorization", format!("{scheme} {ALICE}")).send().unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{scheme}");
    }
    let study = alice.create(
        &json!({"displayName": "s", "studySpec": {"metrics": [{"metricId": "m", "goal": "MAXIMIZE"}], "algorithm": "RANDOM_SEARCH",
        "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}}),
    );
    for (encoding, gzipped) in [("gzip;q=0", false), ("gzip", true), ("br, gzip;q=0.5", true), ("identity", false)] {
        let response = Client::builder()
            .no_gzip()
            .build()
            .unwrap()
            .get(format!("{}/studies/{study}/trials:columns", alice.base))
            .bearer_auth(ALICE)
            .header("accept-encoding", encoding)
            .send()
            .unwrap();
        assert_eq!(response.headers().get("content-encoding").is_some(), gzipped, "{encoding}");
    }
    let refused = |spec: Value, needles: &[&str]| {
        let (status, text) = alice.text("POST", "/studies", Some(&json!({"displayName": "r", "studySpec": spec})));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
        let message = serde_json::from_str::<Value>(&text).unwrap()["error"]["message"].as_str().unwrap().to_owned();
        for needle in needles {
            assert!(message.contains(needle), "{needle:?} not in {message}");
        }
        assert!(!message.contains(r#"\""#), "quoted twice: {message}");
    };
    let spec = |metrics: Value, extra: Value| {
        let mut s = json!({"metrics": metrics, "algorithm": "GP_BANDIT", "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]});
        s.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        s
    };
    let one = json!([{"metricId": "m", "goal": "MAXIMIZE"}]);
    let two = json!([{"metricId": "m", "goal": "MAXIMIZE"}, {"metricId": "c", "goal": "MINIMIZE"}]);
    refused(
        spec(one.clone(), json!({"algorithmConfig": {"priorStudies": [format!("projects/project-a/locations/l/studies/+{study}")]}})),
        &["priorStudies[0]", "not a study name"],
    );
    refused(
        spec(one.clone(), json!({"studyStoppingConfig": {"minNumTrials": 10, "maxNumTrials": 5}})),
        &["studyStoppingConfig.minNumTrials", "maxNumTrials (5)"],
    );
    refused(spec(two, json!({"studyStoppingConfig": {"maxNumTrialsNoProgress": 5}})), &["maxNumTrialsNoProgress", "one objective"]);
    refused(
        spec(one.clone(), json!({"studyStoppingConfig": {"maxDurationNoProgress": "1000000000000000013.287555072s"}})),
        &["maxDurationNoProgress", "315576000000s"],
    );
    refused(spec(one, json!({"algorithmConfig": {"trialLease": "0.5s"}})), &["trialLease", r#""0.5s""#]);
}

/// Bob's writes (a trial added to his study, one request each) in a loop on their own thread
/// for as long as the watch lives.
struct WriteWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Duration>>>,
}

impl WriteWatch {
    fn start(bob: &Tenant, study: &str) -> WriteWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let (bob, study, flag) = (bob.clone(), study.to_owned(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut times = Vec::new();
            while !flag.load(Ordering::SeqCst) || times.len() < 20 {
                let started = Instant::now();
                bob.add(&study, &json!({"parameters": [{"parameterId": "x", "value": 0.5}], "finalMeasurement": {"metrics": [{"metricId": "y", "value": 1.0}]}}));
                times.push(started.elapsed());
            }
            times
        });
        WriteWatch { stop, thread: Some(thread) }
    }

    /// Stops the loop; the 99th percentile and the slowest of bob's writes meanwhile.
    fn finish(mut self) -> (usize, Duration, Duration) {
        self.stop.store(true, Ordering::SeqCst);
        let mut times = self.thread.take().unwrap().join().unwrap();
        times.sort();
        (times.len(), times[(times.len() * 99 / 100).min(times.len() - 1)], *times.last().unwrap())
    }
}

/// An import of 12,000 trials (six steps of a commit) committed and then deleted while bob writes in his project: both
/// go in steps that give the write gate back, so bob's p99 stays under 250 ms (the issue's
/// bound; a commit of 100,000 trials in one transaction once held his writes for 2.5 s).
/// `BO_IMPORT_TRIALS` sets the upload's size (docs/journal/benchmarks.md records the cap, 2,000,000).
#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn an_import_commit_and_a_delete_leave_other_projects_writing() {
    let _machine = crate::harness::machine_to_myself();
    let n: usize = std::env::var("BO_IMPORT_TRIALS").ok().and_then(|v| v.parse().ok()).unwrap_or(12_000);
    for db in databases("tenants_import") {
        let server = start(&db, &[]);
        let (alice, bob) = (Tenant::new(&server, ALICE, "project-a"), Tenant::new(&server, BOB, "project-b"));
        let spec = json!({"displayName": "source", "studySpec": {"metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH",
            "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}});
        let source = alice.create(&spec);
        let mut doc = alice.call("GET", &format!("/studies/{source}:export"), None);
        doc["trials"] = json!([]);
        let import = alice.call("POST", "/studies:import?displayName=big", Some(&doc))["name"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        let staging = Instant::now();
        for first in (1..=n).step_by(2000) {
            let part: Vec<Value> = (first..(first + 2000).min(n + 1))
                .map(|i| json!({"id": i.to_string(), "state": "SUCCEEDED", "startTime": "2026-01-01T00:00:00Z", "endTime": "2026-01-01T00:00:01Z",
                    "parameters": [{"parameterId": "x", "value": (i % 1000) as f64 / 1000.0}],
                    "measurements": [{"stepCount": "1", "metrics": [{"metricId": "y", "value": i as f64}]}],
                    "finalMeasurement": {"stepCount": "1", "metrics": [{"metricId": "y", "value": i as f64}]}}))
                .collect();
            alice.call("POST", &format!("/imports/{import}:append"), Some(&json!({"trials": part})));
        }
        let staged = staging.elapsed();
        let bobs = bob.create(
            &json!({"displayName": "bob", "studySpec": {"metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH",
            "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}}),
        );

        let watch = WriteWatch::start(&bob, &bobs);
        let started = Instant::now();
        // A commit longer than the server's wait answers 202 with its progress; asked again,
        // it answers the study once the commit (which ran on meanwhile) has ended.
        let (mut asked, mut progress) = (1, Vec::new());
        let study = loop {
            let (status, text) = alice.text("POST", &format!("/imports/{import}:commit"), Some(&json!({})));
            let answer: Value = serde_json::from_str(&text).unwrap();
            match status {
                StatusCode::OK => break answer,
                StatusCode::ACCEPTED => {
                    progress.push(answer["committedTrialCount"].as_str().unwrap().parse::<usize>().unwrap());
                    asked += 1;
                }
                _ => panic!("{}: the commit answered {status}: {text}", db.name),
            }
        };
        let committed = started.elapsed();
        assert!(progress.windows(2).all(|w| w[0] <= w[1]) && progress.iter().all(|&p| p <= n), "{}: progress {progress:?}", db.name);
        let (writes, commit_p99, commit_slowest) = watch.finish();
        let big = study["name"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
        let listed = alice.call("GET", &format!("/studies/{big}/trials?pageSize=1"), None);
        assert!(listed["nextPageToken"].is_string(), "the study holds its trials");

        let watch = WriteWatch::start(&bob, &bobs);
        let started = Instant::now();
        alice.call("DELETE", &format!("/studies/{big}"), None);
        let deleted = started.elapsed();
        let (writes_d, delete_p99, delete_slowest) = watch.finish();
        println!(
            "{} trials on {}: staged in {staged:?}; committed in {committed:?} ({asked} requests), bob's {writes} writes meanwhile p99 {commit_p99:?} (slowest {commit_slowest:?}); \
             deleted in {deleted:?}, bob's {writes_d} writes p99 {delete_p99:?} (slowest {delete_slowest:?})",
            n, db.name
        );
        assert!(commit_p99 <= Duration::from_millis(250), "{}: bob's writes took {commit_p99:?} at p99 while an import committed", db.name);
        assert!(delete_p99 <= Duration::from_millis(250), "{}: bob's writes took {delete_p99:?} at p99 while a study was deleted", db.name);
    }
}
