//! The database goes away under load and comes back. Sixteen workers suggest and complete
//! trials while the database disappears: a Postgres cluster this test owns (`initdb` and
//! `pg_ctl` from the machine's PostgreSQL server binaries, on a free loopback port, so the
//! machine's own Postgres is untouched) is stopped the way a crash stops it and started again;
//! an SQLite file's filesystem (a small tmpfs) fills up and is given room again. Meanwhile every
//! answer is a 200 or a 503 with `Retry-After` — never a hang, never a 500 — and `/readyz` says
//! the database is unreachable; afterwards the service recovers by itself within seconds, and
//! every completion it acknowledged is stored with its value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::conditional_study;
use crate::harness::{Database, Server, machine_to_myself, message};

/// Runs `program` with `args` as the `postgres` user when this process is root (PostgreSQL
/// refuses to run as root), as itself otherwise.
fn as_postgres(program: &Path, args: &[&str]) -> std::process::Output {
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.args(args).output().unwrap_or_else(|e| panic!("running {}: {e}", program.display()))
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The newest PostgreSQL server binaries the machine has (Debian's layout).
fn server_binaries() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    found.sort_by_key(|p| p.parent().and_then(|v| v.file_name()).and_then(|v| v.to_str()).and_then(|v| v.parse::<u32>().ok()));
    found.pop()
}

/// A Postgres cluster of this test's own.
struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl Cluster {
    /// `None`, saying why, where the machine has no PostgreSQL server binaries (outside CI).
    fn start() -> Option<Cluster> {
        let Some(bin) = server_binaries() else {
            assert!(!bo_store::testing::in_ci(), "CI needs the PostgreSQL server binaries (Debian's postgresql package)");
            println!("skipped: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin");
            return None;
        };
        let dir = std::env::temp_dir().join(bo_store::testing::unique_name("bo_pg_cluster"));
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            assert!(Command::new("chown").args(["-R", "postgres:postgres"]).arg(&dir).status().unwrap().success());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let data = dir.join("data");
        let out = as_postgres(&bin.join("initdb"), &["-D", data.to_str().unwrap(), "-U", "postgres", "-A", "trust", "--no-sync"]);
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let cluster = Cluster { bin, dir, port };
        cluster.up();
        Some(cluster)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn up(&self) {
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, self.dir.display());
        let out = as_postgres(
            &self.bin.join("pg_ctl"),
            &["-D", self.dir.join("data").to_str().unwrap(), "-o", &options, "-l", self.dir.join("log").to_str().unwrap(), "-w", "start"],
        );
        assert!(out.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Stops: `immediate` as a crash would (no checkpoint, every connection cut), `fast` as an
    /// operator's restart does (each session told "terminating connection due to administrator
    /// command", then a checkpoint).
    fn down(&self, mode: &str) {
        let out = as_postgres(&self.bin.join("pg_ctl"), &["-D", self.dir.join("data").to_str().unwrap(), "-m", mode, "-w", "stop"]);
        assert!(out.status.success(), "pg_ctl stop: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_postgres(&self.bin.join("pg_ctl"), &["-D", self.dir.join("data").to_str().unwrap(), "-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What the workers saw.
#[derive(Default)]
struct Seen {
    /// Acknowledged completions: trial id → value.
    acknowledged: BTreeMap<String, f64>,
    /// 503 answers, each with `Retry-After`.
    unavailable: usize,
    /// Anything else: a 500, a missing `Retry-After`, a hang.
    wrong: Vec<String>,
}

fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The workers, stopped and joined when dropped (also when the test fails, so the server they
/// share is stopped with it).
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Sixteen workers suggesting and completing trials until the [`Load`] is dropped.
fn workers(s: &Arc<Server>, study: &str, seen: &Arc<Mutex<Seen>>) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let threads = (0..16)
        .map(|k| {
            let (s, study, stop, seen) = (s.clone(), study.to_owned(), stop.clone(), seen.clone());
            std::thread::spawn(move || {
                // A hang is a request unanswered in 20 s (the server's database timeout is 1 s).
                let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
                let call = |path: &str, body: Value| -> Option<Value> {
                    match http.post(s.url(path)).json(&body).send() {
                        Ok(r) if r.status() == StatusCode::OK => r.json().ok(),
                        Ok(r) if r.status() == StatusCode::SERVICE_UNAVAILABLE => {
                            let retry = r.headers().contains_key("retry-after");
                            let text = r.text().unwrap_or_default();
                            let mut seen = lock(&seen);
                            seen.unavailable += 1;
                            if !retry {
                                seen.wrong.push(format!("503 without Retry-After on {path}: {text}"));
                            }
                            std::thread::sleep(Duration::from_millis(200));
                            None
                        }
                        Ok(r) => {
                            let status = r.status();
                            lock(&seen).wrong.push(format!("{status} on {path}: {}", r.text().unwrap_or_default()));
                            None
                        }
                        Err(e) => {
                            lock(&seen).wrong.push(format!("no answer on {path}: {e}"));
                            None
                        }
                    }
                };
                let mut held: Option<String> = None;
                let mut n = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    let id = match held.take() {
                        Some(id) => id,
                        None => {
                            let Some(op) = call(
                                &format!("/studies/{study}/trials:suggest"),
                                json!({"suggestionCount": 1, "clientId": format!("w{k}")}),
                            ) else {
                                continue;
                            };
                            match op["response"]["trials"][0]["id"].as_str() {
                                Some(id) => id.to_owned(),
                                None => continue,
                            }
                        }
                    };
                    n += 1;
                    let value = f64::from(k) * 1000.0 + f64::from(n);
                    let body = json!({"finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": value}]}});
                    match call(&format!("/studies/{study}/trials/{id}:complete"), body) {
                        Some(_) => {
                            lock(&seen).acknowledged.insert(id, value);
                        }
                        // Not acknowledged: the same client asks again, and a suggest gives its
                        // ACTIVE trial back (or the completion did land, and it gets a new one).
                        None => {}
                    }
                }
            })
        })
        .collect();
    Load { stop, threads }
}

/// Waits until `count` completions were acknowledged.
fn until_acknowledged(seen: &Arc<Mutex<Seen>>, count: usize, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let (done, wrong) = {
            let seen = lock(seen);
            (seen.acknowledged.len() >= count, seen.wrong.clone())
        };
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "fewer than {count} completions acknowledged in {within:?}: {wrong:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `/readyz` answers 503 (with `Retry-After`) within a few seconds.
fn readyz_says_unavailable(s: &Server) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r =
            reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).build().unwrap().get(format!("{}/readyz", s.base)).send();
        if let Ok(r) = r
            && r.status() == StatusCode::SERVICE_UNAVAILABLE
        {
            assert!(r.headers().contains_key("retry-after"));
            return;
        }
        assert!(Instant::now() < deadline, "/readyz did not report the database unreachable");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// After the database is back: the workers' completions are acknowledged again within
/// `within`; then every acknowledged completion is stored with its value, and nothing was wrong.
fn recovers_and_kept_everything(s: &Server, study: &str, seen: &Arc<Mutex<Seen>>, back: Instant, within: Duration) -> Duration {
    let before = lock(&seen).acknowledged.len();
    until_acknowledged(seen, before + 16, within);
    let recovered = back.elapsed();
    let seen = lock(&seen);
    assert!(seen.wrong.is_empty(), "{} wrong answers: {:#?}", seen.wrong.len(), &seen.wrong[..seen.wrong.len().min(10)]);
    let stored = s.ok_get(&format!("/studies/{study}/trials?pageSize=1000"));
    let stored: BTreeMap<&str, &Value> = stored["trials"].as_array().unwrap().iter().map(|t| (t["id"].as_str().unwrap(), t)).collect();
    for (id, value) in &seen.acknowledged {
        let t = stored.get(id.as_str()).unwrap_or_else(|| panic!("acknowledged trial {id} is gone"));
        assert_eq!(t["state"], "SUCCEEDED", "{t}");
        assert_eq!(t["finalMeasurement"]["metrics"][0]["value"].as_f64(), Some(*value), "{t}");
    }
    recovered
}

#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn postgres_restarted_under_load() {
    let _machine = machine_to_myself();
    let Some(cluster) = Cluster::start() else { return };
    let db = Database { name: "postgres (the test's own cluster)", url: cluster.url(), fresh: None };
    let s = Arc::new(Server::start_with(&db, &["--database-timeout", "1", "--rate-limit", "0"]));
    let study = s.create_study(conditional_study("restarted", "QUASI_RANDOM_SEARCH"));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let load = workers(&s, &study, &seen);
    until_acknowledged(&seen, 64, Duration::from_secs(60));

    let mut recovered = Vec::new();
    for mode in ["immediate", "fast"] {
        let unavailable = lock(&seen).unavailable;
        cluster.down(mode);
        readyz_says_unavailable(&s);
        std::thread::sleep(Duration::from_secs(2));
        assert!(lock(&seen).unavailable > unavailable, "{mode}: no request met the outage");
        cluster.up();
        let back = Instant::now();
        recovered.push((mode, recovers_and_kept_everything(&s, &study, &seen, back, Duration::from_secs(15))));
    }
    drop(load);
    report(&seen, &format!("postgres stopped and started, recovered after it was back: {recovered:?}"));
}

/// What the workers saw, for the test's output (docs/journal/benchmarks.md records it).
fn report(seen: &Mutex<Seen>, what: &str) {
    let seen = lock(seen);
    println!("{what}; under 16 workers: {} completions acknowledged, {} answers 503 meanwhile", seen.acknowledged.len(), seen.unavailable);
}

/// A small filesystem of this test's own (a 16 MB tmpfs, which needs root), unmounted when
/// dropped; `None`, saying why, where it cannot be mounted.
struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    fn mount() -> Option<SmallDisk> {
        let dir = std::env::temp_dir().join(bo_store::testing::unique_name("bo_small_disk"));
        std::fs::create_dir_all(&dir).unwrap();
        // Room for SQLite's write-ahead log, which grows to 4 MB between checkpoints.
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"]).arg(&dir).output();
        match out {
            Ok(o) if o.status.success() => Some(SmallDisk { dir }),
            other => {
                let why = other.map_or_else(|e| e.to_string(), |o| String::from_utf8_lossy(&o.stderr).trim().to_owned());
                println!("skipped: a full disk needs a small filesystem, and mounting a tmpfs failed here ({why}); run as root");
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// Fills the filesystem with one more file, leaving about `free` bytes.
    fn fill(&self, free: u64) {
        let out = Command::new("df").args(["--output=avail", "-B1"]).arg(&self.dir).output().unwrap();
        let avail: u64 = String::from_utf8_lossy(&out.stdout).lines().nth(1).unwrap().trim().parse().unwrap();
        let size = avail.saturating_sub(free);
        let n = std::fs::read_dir(&self.dir).unwrap().count();
        std::fs::write(self.dir.join(format!("filler-{n}")), vec![0u8; usize::try_from(size).unwrap()]).ok();
    }

    /// Removes every filler file.
    fn make_room(&self) {
        for entry in std::fs::read_dir(&self.dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("filler-")) {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn sqlite_disk_fills_under_load() {
    let _machine = machine_to_myself();
    let Some(disk) = SmallDisk::mount() else { return };
    let db = Database { name: "sqlite on a full disk", url: format!("sqlite://{}/bo.db", disk.dir.display()), fresh: None };
    let s = Arc::new(Server::start_with(&db, &["--database-timeout", "1", "--rate-limit", "0"]));
    let study = s.create_study(conditional_study("filled", "QUASI_RANDOM_SEARCH"));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let load = workers(&s, &study, &seen);
    until_acknowledged(&seen, 64, Duration::from_secs(60));

    // Nearly full, under readiness's margin, while writes still succeed: still ready.
    disk.fill(3 << 20);
    let ready = reqwest::blocking::get(format!("{}/readyz", s.base)).unwrap();
    assert_eq!(ready.status(), StatusCode::OK, "not ready while writes succeed: {}", ready.text().unwrap_or_default());
    disk.make_room();
    disk.fill(0);
    let deadline = Instant::now() + Duration::from_secs(30);
    while lock(&seen).unavailable == 0 {
        assert!(Instant::now() < deadline, "the disk filled and every write still succeeded");
        std::thread::sleep(Duration::from_millis(20));
    }
    readyz_says_unavailable(&s);
    // A write that fails says why. A few may still fit: in pages SQLite has free, in the
    // write-ahead log's room that a failed write left allocated, or in space a file gave back
    // (the disk is filled again every 20 writes); under CI's load 200 writes once all fitted.
    let mut answered = std::collections::BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let failed = (0..2000).take_while(|_| Instant::now() < deadline).find_map(|k| {
        if k % 20 == 19 {
            disk.fill(0);
        }
        let (status, v) = s.post("/studies", conditional_study(&format!("one more {k}"), "RANDOM_SEARCH"));
        *answered.entry(status.as_u16()).or_insert(0) += 1;
        (status == StatusCode::SERVICE_UNAVAILABLE).then_some(v)
    });
    let failed = failed.unwrap_or_else(|| panic!("no write failed on the full disk; statuses answered: {answered:?}"));
    assert!(message(&failed).contains("disk is full"), "{failed}");
    std::thread::sleep(Duration::from_secs(1));
    disk.make_room();
    let back = Instant::now();
    let recovered = recovers_and_kept_everything(&s, &study, &seen, back, Duration::from_secs(15));
    drop(load);
    report(&seen, &format!("sqlite's disk filled, recovered {recovered:?} after room was made"));
}
