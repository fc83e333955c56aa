//! `bo-bench load`: the service under load, over HTTP. Worker threads each loop "suggest one
//! trial, complete it" against one or more replicas (round robin, as a load balancer would), and
//! the run reports trials per second and the latency percentiles of each request. With
//! `--prefill`, the study is first filled with completed trials (created by `POST …/trials`, as
//! a warm start would) to each size in turn, and the loop is timed at each: the bookkeeping cost
//! per request as a study grows.
//!
//! It measures the service, never asserts: numbers go to docs/journal/benchmarks.md with the command.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use reqwest::blocking::Client;
use serde::Serialize;
use serde_json::{Value, json};

/// What to run.
pub struct LoadConfig {
    /// Replica base URLs.
    pub urls: Vec<String>,
    /// Concurrent workers.
    pub workers: usize,
    /// Suggest-and-complete cycles per measurement.
    pub trials: usize,
    /// Study sizes to fill to before each measurement (empty: one measurement, no prefill).
    pub prefill: Vec<usize>,
    /// The study's algorithm.
    pub algorithm: String,
    /// An API key, if the server needs one.
    pub key: Option<String>,
    /// The project the study goes in.
    pub project: String,
    /// Studies the workers spread over (worker `w` uses study `w mod studies`); the prefill goes
    /// to each.
    pub studies: usize,
}

/// Latency percentiles of one kind of request, in milliseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    /// Requests timed.
    pub count: usize,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

impl Latency {
    fn of(mut samples: Vec<f64>) -> Latency {
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples.get(((samples.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
        let mean = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
        Latency { count: samples.len(), p50_ms: at(0.5), p99_ms: at(0.99), mean_ms: mean }
    }
}

/// One measurement.
#[derive(Clone, Debug, Serialize)]
pub struct LoadRow {
    /// Completed trials in the study when the measurement began.
    pub study_trials: usize,
    /// Replicas the load went to.
    pub replicas: usize,
    /// Studies the workers spread over.
    pub studies: usize,
    /// Concurrent workers.
    pub workers: usize,
    /// Suggest-and-complete cycles timed.
    pub cycles: usize,
    /// Cycles per second, wall clock.
    pub trials_per_s: f64,
    /// Requests per second (two per cycle).
    pub requests_per_s: f64,
    /// `:suggest` latency.
    pub suggest: Latency,
    /// `:complete` latency.
    pub complete: Latency,
}

struct Api {
    urls: Vec<String>,
    next: AtomicUsize,
    client: Client,
    key: Option<String>,
    prefix: String,
}

impl Api {
    fn send(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value> {
        let url = &self.urls[self.next.fetch_add(1, Ordering::Relaxed) % self.urls.len()];
        let mut request = self.client.request(method.clone(), format!("{url}{}{path}", self.prefix));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().with_context(|| format!("{method} {path}"))?;
        let status = response.status();
        let value: Value = response.json().with_context(|| format!("{method} {path}: the answer is not JSON"))?;
        if !status.is_success() {
            bail!("{method} {path}: {status} {value}");
        }
        Ok(value)
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        self.send(reqwest::Method::POST, path, Some(body))
    }
}

fn space() -> Value {
    json!([
        {"parameterId": "x", "doubleValueSpec": {"minValue": -5.0, "maxValue": 10.0}},
        {"parameterId": "y", "doubleValueSpec": {"minValue": 0.0, "maxValue": 15.0}},
        {"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", "sgd"]}}
    ])
}

fn objective(trial: &Value) -> f64 {
    let get = |id: &str| {
        trial["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["parameterId"] == id)
            .and_then(|p| p["value"].as_f64())
            .unwrap_or(0.0)
    };
    (get("x") - 2.0).powi(2) + (get("y") - 3.0).powi(2)
}

/// Runs `work(worker, item)` for every item in 0..n on `workers` threads; each thread is one
/// worker (so a worker's clientId is never used by two threads). Stops at the first error.
fn parallel(workers: usize, n: usize, work: impl Fn(usize, usize) -> Result<()> + Sync) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for worker in 0..workers.max(1) {
            let (next, failure, work) = (&next, &failure, &work);
            scope.spawn(move || {
                loop {
                    let item = next.fetch_add(1, Ordering::SeqCst);
                    if item >= n || failure.lock().unwrap().is_some() {
                        break;
                    }
                    if let Err(e) = work(worker, item) {
                        *failure.lock().unwrap() = Some(e);
                        break;
                    }
                }
            });
        }
    });
    match failure.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runs the load; one row per measurement.
pub fn run(config: &LoadConfig) -> Result<Vec<LoadRow>> {
    let api = Arc::new(Api {
        urls: config.urls.iter().map(|u| u.trim_end_matches('/').to_owned()).collect(),
        next: AtomicUsize::new(0),
        client: Client::builder().timeout(Duration::from_secs(120)).pool_max_idle_per_host(config.workers.max(1)).build()?,
        key: config.key.clone(),
        prefix: format!("/v1/projects/{}/locations/load", config.project),
    });
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
    let studies = (0..config.studies.max(1))
        .map(|k| {
            let study = api.post(
                "/studies",
                &json!({"displayName": format!("load-{stamp}-{k}"), "studySpec": {"algorithm": config.algorithm,
                    "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "parameters": space()}}),
            )?;
            Ok(study["name"].as_str().context("a study name")?.rsplit('/').next().context("a study id")?.to_owned())
        })
        .collect::<Result<Vec<String>>>()?;
    let steps: Vec<usize> = if config.prefill.is_empty() { vec![0] } else { config.prefill.clone() };
    let mut filled = 0;
    let mut rows = vec![];
    for size in steps {
        if size > filled {
            let started = Instant::now();
            let wanted = size - filled;
            parallel(config.workers, wanted * studies.len(), |_, i| {
                let study = &studies[i % studies.len()];
                let v = ((filled + i) % 1000) as f64 / 100.0;
                api.post(
                    &format!("/studies/{study}/trials"),
                    &json!({"parameters": [
                        {"parameterId": "x", "value": v - 5.0}, {"parameterId": "y", "value": v},
                        {"parameterId": "opt", "value": if i % 2 == 0 { "adam" } else { "sgd" }}],
                        "finalMeasurement": {"metrics": [{"metricId": "loss", "value": v}]}}),
                )
                .map(|_| ())
            })?;
            eprintln!("prefilled {wanted} trials in each of {} studies in {:.1} s", studies.len(), started.elapsed().as_secs_f64());
            filled = size;
        }
        let suggests = Mutex::new(Vec::with_capacity(config.trials));
        let completes = Mutex::new(Vec::with_capacity(config.trials));
        let started = Instant::now();
        // The worker running the cycle picks its study and its clientId.
        let cycle = |worker: usize, _: usize| -> Result<()> {
            let study = &studies[worker % studies.len()];
            let client = format!("worker-{worker}");
            let t0 = Instant::now();
            let op = api.post(&format!("/studies/{study}/trials:suggest"), &json!({"suggestionCount": 1, "clientId": client}))?;
            let t1 = Instant::now();
            if op["done"] != true {
                bail!("a suggest answered a pending operation; raise --max-suggest-wait for load runs: {op}");
            }
            let trial = &op["response"]["trials"][0];
            let id = trial["id"].as_str().context("a trial id")?;
            let body = json!({"finalMeasurement": {"metrics": [{"metricId": "loss", "value": objective(trial)}]}});
            api.post(&format!("/studies/{study}/trials/{id}:complete"), &body)?;
            let t2 = Instant::now();
            suggests.lock().unwrap().push((t1 - t0).as_secs_f64() * 1e3);
            completes.lock().unwrap().push((t2 - t1).as_secs_f64() * 1e3);
            Ok(())
        };
        parallel(config.workers, config.trials, cycle)?;
        let wall = started.elapsed().as_secs_f64();
        let row = LoadRow {
            study_trials: filled,
            replicas: config.urls.len(),
            studies: studies.len(),
            workers: config.workers,
            cycles: config.trials,
            trials_per_s: config.trials as f64 / wall,
            requests_per_s: 2.0 * config.trials as f64 / wall,
            suggest: Latency::of(suggests.into_inner().unwrap()),
            complete: Latency::of(completes.into_inner().unwrap()),
        };
        filled += config.trials.div_ceil(studies.len());
        eprintln!(
            "{} trials in each of {} studies, {} replicas, {} workers: {:.0} trials/s; suggest p50 {:.2} ms p99 {:.2} ms; complete p50 {:.2} ms p99 {:.2} ms",
            row.study_trials,
            row.studies,
            row.replicas,
            row.workers,
            row.trials_per_s,
            row.suggest.p50_ms,
            row.suggest.p99_ms,
            row.complete.p50_ms,
            row.complete.p99_ms
        );
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentiles_of_known_samples() {
        let l = super::Latency::of((1..=100).map(f64::from).collect());
        assert_eq!(l.count, 100);
        assert_eq!(l.p50_ms, 51.0);
        assert_eq!(l.p99_ms, 99.0);
        assert!((l.mean_ms - 50.5).abs() < 1e-12);
    }
}
