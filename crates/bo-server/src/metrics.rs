//! What `/metrics` reports: requests by route and status, suggest latency by how the suggest
//! was answered, refits, background work, the model cache and the database pool — in the
//! OpenMetrics text format for a scraper that asks for it (Prometheus does), in Prometheus's
//! classic text format (0.0.4) for every other (`promtool check metrics`, older agents, curl).
//!
//! This is the recorder: counters and histograms are recorded where things happen (the request
//! middleware in `api::metrics`, the engine for suggests and refits); gauges are read when
//! scraped, from the snapshot the `/metrics` handler (`api::metrics`) passes in. Route labels
//! are the route templates (`/v1/projects/{project}/…`), never the path itself, so no project or
//! study name reaches a label and the number of series stays bounded. No HTTP and no database
//! here.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// How a suggest was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuggestPath {
    /// From held or REQUESTED trials or the queue of precomputed suggestions: no computing.
    Queue,
    /// Computed from the cached model.
    Cached,
    /// A model had to be fitted first.
    Fit,
    /// Not ready in time: answered with a pending operation.
    Pending,
    /// Searched within the request's contexts.
    Contexts,
}

/// How a refit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefitResult {
    /// Fitted here.
    Fitted,
    /// Took up another replica's fit.
    Adopted,
    /// Failed (logged).
    Failed,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SuggestLabels {
    path: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefitLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FallbackLabels {
    stage: &'static str,
}

/// Where a designer failed, so that quasi-random proposals stood in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedStage {
    /// Fitting a study that had no model.
    Fit,
    /// Proposing from a fitted model.
    Suggest,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    state: &'static str,
}

fn latency_histogram() -> Histogram {
    // 0.5 ms … ~33 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 17))
}

/// The service's metrics: cheap to share.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<RequestLabels, Histogram, fn() -> Histogram>,
    suggest_seconds: Family<SuggestLabels, Histogram, fn() -> Histogram>,
    refit_seconds: Family<RefitLabels, Histogram, fn() -> Histogram>,
    fallbacks: Family<FallbackLabels, Counter>,
    background_jobs: Gauge,
    workers_busy: Gauge,
    workers_waiting: Gauge,
    cached_models: Gauge,
    cached_model_bytes: Gauge,
    mirrored_trial_bytes: Gauge,
    pool_connections: Family<PoolLabels, Gauge>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// What the engine holds now, for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Studies with background work queued or running.
    pub background_jobs: usize,
    /// Worker permits in use (model computations running).
    pub workers_busy: usize,
    /// Model computations waiting for a permit.
    pub workers_waiting: usize,
    /// Models in this replica's cache.
    pub cached_models: usize,
    /// Their estimated memory.
    pub cached_model_bytes: usize,
    /// The estimated memory of the trials mirrored (`mirror.rs`).
    pub mirrored_trial_bytes: usize,
}

/// What the gauges read at a scrape.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    /// What the engine holds.
    pub engine: Usage,
    /// Database connections open and idle.
    pub pool_idle: usize,
    /// Database connections open and in use.
    pub pool_in_use: usize,
    /// The pool's limit.
    pub pool_max: usize,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty metrics, registered under the `bo_` prefix.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("bo");
        let requests = Family::<RequestLabels, Counter>::default();
        let request_seconds = Family::<RequestLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let suggest_seconds = Family::<SuggestLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let refit_seconds = Family::<RefitLabels, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        let pool_connections = Family::<PoolLabels, Gauge>::default();
        let fallbacks = Family::<FallbackLabels, Counter>::default();
        let (background_jobs, workers_busy, workers_waiting, cached_models, cached_model_bytes) =
            (Gauge::default(), Gauge::default(), Gauge::default(), Gauge::default(), Gauge::default());
        registry.register("http_requests", "HTTP requests answered, by method, route template and status", requests.clone());
        registry.register("http_request_duration_seconds", "Time to answer an HTTP request", request_seconds.clone());
        registry.register(
            "suggest_duration_seconds",
            "Time to answer a suggest, by how: queue (held, requested or precomputed trials), cached (computed from the cached model), fit (a model fitted first), pending (answered with a pending operation)",
            suggest_seconds.clone(),
        );
        registry.register("refit_duration_seconds", "Time of a background refit, by result", refit_seconds.clone());
        registry.register(
            "designer_fallbacks",
            "Times a designer failed (fit, or suggest from a fitted model) and quasi-random proposals stood in; the failure is logged",
            fallbacks.clone(),
        );
        registry.register("background_jobs", "Studies with background refits or refills queued or running", background_jobs.clone());
        registry.register(
            "workers_busy",
            "Worker permits in use by model computations (fits, proposals, importance, predictions, fronts)",
            workers_busy.clone(),
        );
        registry.register("workers_waiting", "Model computations waiting for a worker permit", workers_waiting.clone());
        registry.register("cached_models", "Models in this replica's cache", cached_models.clone());
        registry.register("cached_model_bytes", "Estimated memory of the cached models", cached_model_bytes.clone());
        let mirrored_trial_bytes = Gauge::default();
        registry.register(
            "mirrored_trial_bytes",
            "Estimated memory of the trials kept for the studies being suggested for (--trial-mirror-mb)",
            mirrored_trial_bytes.clone(),
        );
        registry.register("db_pool_connections", "Database connections, by state (idle, in_use, max)", pool_connections.clone());
        // Every series an alert reads exists from the start at zero: a counter that appears
        // with its first event at 1 has no earlier sample, so `increase()` misses that event.
        for stage in ["fit", "suggest"] {
            drop(fallbacks.get_or_create(&FallbackLabels { stage }));
        }
        for result in ["fitted", "adopted", "failed"] {
            drop(refit_seconds.get_or_create(&RefitLabels { result }));
        }
        for path in ["queue", "cached", "fit", "pending", "contexts"] {
            drop(suggest_seconds.get_or_create(&SuggestLabels { path }));
        }
        Metrics {
            registry,
            requests,
            request_seconds,
            suggest_seconds,
            refit_seconds,
            fallbacks,
            background_jobs,
            workers_busy,
            workers_waiting,
            cached_models,
            cached_model_bytes,
            mirrored_trial_bytes,
            pool_connections,
        }
    }

    /// A suggest answered by `path` in `seconds`.
    pub fn suggest(&self, path: SuggestPath, seconds: f64) {
        let path = match path {
            SuggestPath::Queue => "queue",
            SuggestPath::Cached => "cached",
            SuggestPath::Fit => "fit",
            SuggestPath::Pending => "pending",
            SuggestPath::Contexts => "contexts",
        };
        self.suggest_seconds.get_or_create(&SuggestLabels { path }).observe(seconds);
    }

    /// A refit ended with `result` after `seconds`.
    pub fn refit(&self, result: RefitResult, seconds: f64) {
        let result = match result {
            RefitResult::Fitted => "fitted",
            RefitResult::Adopted => "adopted",
            RefitResult::Failed => "failed",
        };
        self.refit_seconds.get_or_create(&RefitLabels { result }).observe(seconds);
    }

    /// A designer failed at `stage`; quasi-random proposals stood in.
    pub fn fallback(&self, stage: FailedStage) {
        let stage = match stage {
            FailedStage::Fit => "fit",
            FailedStage::Suggest => "suggest",
        };
        self.fallbacks.get_or_create(&FallbackLabels { stage }).inc();
    }

    pub fn request(&self, method: &'static str, route: &str, status: u16, seconds: f64) {
        let labels = RequestLabels { method, route: route.to_owned(), status };
        self.requests.get_or_create(&labels).inc();
        self.request_seconds.get_or_create(&labels).observe(seconds);
    }

    /// The text exposition, with the gauges set from `snapshot`.
    pub fn render(&self, snapshot: Snapshot) -> String {
        let gauge = |g: &Gauge, v: usize| {
            g.set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        let engine = snapshot.engine;
        gauge(&self.background_jobs, engine.background_jobs);
        gauge(&self.workers_busy, engine.workers_busy);
        gauge(&self.workers_waiting, engine.workers_waiting);
        gauge(&self.cached_models, engine.cached_models);
        gauge(&self.cached_model_bytes, engine.cached_model_bytes);
        gauge(&self.mirrored_trial_bytes, engine.mirrored_trial_bytes);
        for (state, v) in [("idle", snapshot.pool_idle), ("in_use", snapshot.pool_in_use), ("max", snapshot.pool_max)] {
            gauge(&self.pool_connections.get_or_create(&PoolLabels { state }), v);
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

/// Prometheus's classic text format (0.0.4) of an OpenMetrics exposition as [`Metrics::render`]
/// writes it. The two differ, for what bo exposes, only in a counter family's name (OpenMetrics
/// names the family `x` and its sample `x_total`; the classic format names both `x_total`) and
/// in the lines the classic format has not (`# UNIT`, `# EOF`).
pub fn classic(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> =
        openmetrics.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.strip_suffix(" counter")).collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ')?;
            counters.contains(name).then(|| format!("{prefix}{name}_total {tail}"))
        });
        match renamed {
            Some(line) => out.push_str(&line),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_family() {
        let metrics = Metrics::new();
        metrics.request("POST", "/v1/projects/{project}/locations/{location}/studies", 200, 0.003);
        metrics.suggest(SuggestPath::Cached, 0.01);
        metrics.refit(RefitResult::Fitted, 0.2);
        metrics.fallback(FailedStage::Suggest);
        let fresh = Metrics::new().render(Snapshot::default());
        for needle in ["bo_designer_fallbacks_total{stage=\"fit\"} 0", "bo_refit_duration_seconds_count{result=\"failed\"} 0"] {
            assert!(fresh.contains(needle), "a fresh exposition lacks {needle}:\n{fresh}");
        }
        let text = metrics.render(Snapshot {
            engine: Usage { cached_models: 3, ..Usage::default() },
            pool_in_use: 2,
            pool_max: 16,
            ..Snapshot::default()
        });
        for needle in [
            "bo_http_requests_total{method=\"POST\",route=\"/v1/projects/{project}/locations/{location}/studies\",status=\"200\"} 1",
            "bo_http_request_duration_seconds_count{",
            "bo_suggest_duration_seconds_count{path=\"cached\"} 1",
            "bo_refit_duration_seconds_count{result=\"fitted\"} 1",
            "bo_designer_fallbacks_total{stage=\"suggest\"} 1",
            "bo_cached_models 3",
            "bo_db_pool_connections{state=\"in_use\"} 2",
            "bo_db_pool_connections{state=\"max\"} 16",
            "# EOF",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
        // The classic format names a counter's family as its samples, and has no EOF.
        let old = classic(&text);
        assert!(old.contains("# TYPE bo_http_requests_total counter\n"), "{old}");
        assert!(old.contains("# HELP bo_designer_fallbacks_total Times a designer failed"), "{old}");
        assert!(old.contains("# TYPE bo_suggest_duration_seconds histogram\n"), "{old}");
        assert!(old.contains("bo_designer_fallbacks_total{stage=\"suggest\"} 1\n"), "{old}");
        assert!(!old.contains("# EOF"), "{old}");
        assert_eq!(old.lines().filter(|l| !l.starts_with('#')).count(), text.lines().filter(|l| !l.starts_with('#')).count());
    }
}
