//! Starts the real `bo-server` binary on a free loopback port against a fresh database and talks
//! to it over HTTP. Waiting is polling with a deadline, never a bare sleep.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bo_store::testing::TestDatabase;
use reqwest::StatusCode;
use reqwest::blocking::Client;
use serde_json::Value;

/// Held by the tests that load the machine (many workers, replicas killed under load) and by
/// those that time the service's answers (`/healthz` within a second), so the two never run at
/// once: on two cores a 64-worker test beside a timing one measured the test machine, not the
/// server (a 1.04 s `/healthz` that passed alone, three times in a row).
static MACHINE: Mutex<()> = Mutex::new(());

/// The machine to this test alone among the loading and timing ones (see [`MACHINE`]).
pub fn machine_to_myself() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A database the server can be started on (kept across restarts).
#[derive(Clone, Debug)]
pub struct Database {
    pub name: &'static str,
    pub url: String,
    /// The fresh database behind `url`, removed when the last clone is dropped; `None` for a
    /// database the test made and removes itself.
    pub fresh: Option<Arc<TestDatabase>>,
}

impl Database {
    fn fresh(name: &'static str, database: TestDatabase) -> Database {
        Database { name, url: database.url().to_owned(), fresh: Some(Arc::new(database)) }
    }
}

/// The databases to run a test on: a fresh SQLite file always, a fresh Postgres schema when
/// `BO_TEST_POSTGRES_URL` is set (required under `CI=true`).
pub fn databases(test: &str) -> Vec<Database> {
    let mut out = vec![Database::fresh("sqlite", TestDatabase::sqlite())];
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    if let Some(database) = runtime.block_on(TestDatabase::postgres(test)) {
        out.push(Database::fresh("postgres", database));
    }
    // `BO_TEST_DATABASE=postgres` (or `sqlite`): one database only, for a long measurement.
    if let Ok(only) = std::env::var("BO_TEST_DATABASE") {
        out.retain(|db| db.name == only);
    }
    out
}

pub struct Server {
    child: Child,
    args: Vec<String>,
    pub base: String,
    pub db: Database,
    client: Client,
}

/// The server binary under test: this build's, or `BO_E2E_SERVER_BIN` (to run a suite against
/// another build, e.g. to see a test fail on the code before a fix).
pub fn server_binary() -> String {
    std::env::var("BO_E2E_SERVER_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_bo-server").to_owned())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().expect("address").port()
}

impl Server {
    pub fn start(db: &Database) -> Server {
        Server::start_with(db, &[])
    }

    /// Starts with extra command-line arguments.
    pub fn start_with(db: &Database, extra: &[&str]) -> Server {
        Server::start_limited(db, extra, None)
    }

    /// Starts with extra arguments and, when `open_files` is given, under that open-file limit
    /// (`ulimit -n`, set by the shell that then becomes the server).
    pub fn start_limited(db: &Database, extra: &[&str], open_files: Option<u32>) -> Server {
        let port = free_port();
        let args: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
        let mut command = match open_files {
            None => Command::new(server_binary()),
            Some(n) => {
                let mut c = Command::new("sh");
                c.args(["-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\""), &server_binary()]);
                c
            }
        };
        let child = command
            .args(["--listen", &format!("127.0.0.1:{port}"), "--database-url", &db.url, "--log", "warn"])
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start bo-server");
        let server = Server { child, args, base: format!("http://127.0.0.1:{port}"), db: db.clone(), client: Client::new() };
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut server = server;
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("bo-server exited at start-up on {}: {status}", db.name);
            }
            if let Ok(r) = server.client.get(format!("{}/readyz", server.base)).send()
                && r.status().is_success()
            {
                return server;
            }
            assert!(Instant::now() < deadline, "bo-server did not become ready on {}", db.name);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the process without warning (as a crash would) and starts it again on the same
    /// database.
    pub fn crash_and_restart(mut self) -> Server {
        self.child.kill().expect("kill bo-server");
        self.child.wait().expect("reap bo-server");
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        Server::start_with(&self.db, &args)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process's peak resident memory so far, in bytes (Linux: VmHWM).
    pub fn peak_rss(&self) -> u64 {
        self.memory("VmHWM:")
    }

    /// The process's resident memory now, in bytes (Linux: VmRSS).
    pub fn rss(&self) -> u64 {
        self.memory("VmRSS:")
    }

    /// A line of `/proc/PID/status` in kB, in bytes (0 when it cannot be read).
    fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().expect("send SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "bo-server did not stop after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `/v1/projects/demo/locations/local` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}/v1/projects/demo/locations/local{path}", self.base)
    }

    pub fn raw(&self, method: &str, url: &str, body: Option<String>) -> (StatusCode, Value) {
        let mut req = self.client.request(method.parse().expect("method"), url);
        if let Some(body) = body {
            req = req.header("content-type", "application/json").body(body);
        }
        let resp = req.send().expect("request reaches bo-server");
        let status = resp.status();
        let text = resp.text().expect("body");
        let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{method} {url} answered {status} with non-JSON {text:?}"));
        (status, value)
    }

    pub fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.raw("POST", &self.url(path), Some(body.to_string()))
    }

    pub fn get(&self, path: &str) -> (StatusCode, Value) {
        self.raw("GET", &self.url(path), None)
    }

    pub fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.raw("DELETE", &self.url(path), None)
    }

    /// POST that must succeed; returns the body.
    pub fn ok_post(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post(path, body);
        assert_eq!(status, StatusCode::OK, "POST {path} on {}: {v}", self.db.name);
        v
    }

    /// GET that must succeed; returns the body.
    pub fn ok_get(&self, path: &str) -> Value {
        let (status, v) = self.get(path);
        assert_eq!(status, StatusCode::OK, "GET {path} on {}: {v}", self.db.name);
        v
    }

    /// Polls the study's `GET …/model` until `ok` holds of it (within a minute, else the test
    /// fails naming `what`); returns that answer. The background refit runs on its own time, so
    /// a test that needs the model of every trial waits here for
    /// `fittedDataVersion == dataVersion`.
    pub fn wait_for_model(&self, study: &str, what: &str, ok: &dyn Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let m = self.ok_get(&format!("/studies/{study}/model"));
            if ok(&m) {
                return m;
            }
            assert!(std::time::Instant::now() < deadline, "never {what} on {}: {m}", self.db.name);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Creates a study and returns its number.
    pub fn create_study(&self, body: Value) -> String {
        let v = self.ok_post("/studies", body);
        v["name"].as_str().expect("name").rsplit('/').next().expect("id").to_owned()
    }

    /// Suggests and returns the trials of the done operation.
    pub fn suggest(&self, study: &str, count: i64, client: &str) -> Vec<Value> {
        let op =
            self.ok_post(&format!("/studies/{study}/trials:suggest"), serde_json::json!({"suggestionCount": count, "clientId": client}));
        assert_eq!(op["done"], true, "{op}");
        op["response"]["trials"].as_array().cloned().unwrap_or_default()
    }

    /// Adds a measurement of one metric at `step`.
    pub fn measure(&self, study: &str, trial: &str, metric: &str, step: i64, value: f64) {
        self.ok_post(
            &format!("/studies/{study}/trials/{trial}:addTrialMeasurement"),
            serde_json::json!({"measurement": {"stepCount": step, "metrics": [{"metricId": metric, "value": value}]}}),
        );
    }

    /// Whether the study's stopping rule stops the trial now.
    pub fn stops(&self, study: &str, trial: &str) -> bool {
        let op = self.ok_post(&format!("/studies/{study}/trials/{trial}:checkTrialEarlyStoppingState"), serde_json::json!({}));
        op["response"].get("shouldStop").is_some_and(|v| v == true)
    }

    /// Completes a trial with one metric value.
    pub fn complete(&self, study: &str, trial: &str, metric: &str, value: f64) -> Value {
        self.ok_post(
            &format!("/studies/{study}/trials/{trial}:complete"),
            serde_json::json!({"finalMeasurement": {"metrics": [{"metricId": metric, "value": value}]}}),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `/healthz` every 100 ms while a test runs, keeping the slowest answer (a failed or
/// missing answer counts as a minute).
pub struct HealthWatch {
    stop: Arc<AtomicBool>,
    slowest_ms: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
    /// No test that loads the machine runs while this one times the service.
    _machine: std::sync::MutexGuard<'static, ()>,
}

impl HealthWatch {
    pub fn start(server: &Server) -> HealthWatch {
        let machine = machine_to_myself();
        let url = format!("{}/healthz", server.base);
        let stop = Arc::new(AtomicBool::new(false));
        let slowest_ms = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, slowest_ms) = (stop.clone(), slowest_ms.clone());
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
                while !stop.load(Ordering::SeqCst) {
                    let started = Instant::now();
                    let ok = client.get(&url).send().is_ok_and(|r| r.status().is_success());
                    let ms = if ok { started.elapsed().as_millis() as u64 } else { 60_000 };
                    slowest_ms.fetch_max(ms, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        HealthWatch { stop, slowest_ms, thread: Some(thread), _machine: machine }
    }

    /// Stops watching; asserts every answer came within a second.
    pub fn finish(mut self, what: &str) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let slowest = self.slowest_ms.load(Ordering::SeqCst);
        assert!(slowest < 1000, "{what}: /healthz took {slowest} ms at its slowest");
    }
}

/// The error message of an error body.
pub fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}
