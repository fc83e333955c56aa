//! Configuration: flags, each with an environment variable of the same meaning.

use std::net::SocketAddr;

use bo_core::{Limit, Limits};
use clap::Parser;

/// bo: a self-hosted Vertex AI Vizier service — Bayesian optimisation over REST.
#[derive(Clone, Parser)]
#[command(name = "bo-server", version = crate::VERSION, about)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "BO_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Database: `sqlite://FILE` (created if missing) or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, env = "BO_DATABASE_URL", default_value = "sqlite://bo.db", global = true)]
    pub database_url: String,

    /// Most database connections held at once.
    #[arg(long, env = "BO_MAX_CONNECTIONS", default_value_t = 16)]
    pub max_connections: u32,

    /// Seconds a request waits for a database connection before answering 503.
    #[arg(long, env = "BO_DATABASE_TIMEOUT", value_parser = seconds, default_value_t = 10.0)]
    pub database_timeout: f64,

    /// Background jobs (refits, precomputed suggestions) running at once (default: the number of
    /// cores).
    #[arg(long, env = "BO_WORKERS")]
    pub workers: Option<usize>,

    /// Suggestions precomputed per study after each refit or suggest, answered at once when still
    /// fresh (0: none).
    #[arg(long, env = "BO_PREFETCH", default_value_t = 4)]
    pub prefetch: usize,

    /// Completed trials a precomputed suggestion may not have seen (it treated them as pending)
    /// and still be handed out: 0 (the default) keeps every suggestion informed by every result;
    /// more answers faster when trials complete quickly.
    #[arg(long, env = "BO_QUEUE_STALENESS", default_value_t = 0)]
    pub queue_staleness: u32,

    /// Whether studies are reproducible unless they say otherwise (`algorithmConfig.reproducible`):
    /// a suggest then waits for the model fitted on exactly the data it answers, so the same
    /// calls in the same order give the same trials. Off (the default), a suggest answers from
    /// whatever model is ready — conditioned on the newest results — which is faster.
    #[arg(long, env = "BO_REPRODUCIBLE", default_value_t = false)]
    pub reproducible: bool,

    /// Seconds a suggest waits for its trials before answering with a pending operation
    /// (`done: false`) that the client polls.
    #[arg(long, env = "BO_MAX_SUGGEST_WAIT", value_parser = seconds, default_value_t = 5.0)]
    pub max_suggest_wait: f64,

    /// Seconds a suggest waits for the refit of a model that has fallen more than a quarter of
    /// its data (and 4 trials) behind the completed trials, before it proposes from that model:
    /// a loop faster than the fits then waits for them instead of proposing from a model fitted
    /// on a fraction of its data. 0 never waits.
    #[arg(long, env = "BO_MODEL_LAG_WAIT", value_parser = seconds, default_value_t = 0.5)]
    pub model_lag_wait: f64,

    /// Threads one model's linear algebra may use. 1 (the default) leaves parallelism to the
    /// worker pool; measured faster on every study size up to 2,000 trials (docs/journal/benchmarks.md).
    #[arg(long, env = "BO_LINALG_THREADS", default_value_t = 1)]
    pub linalg_threads: usize,

    /// Memory budget of the per-study model cache, in MiB; least recently used models go first.
    #[arg(long, env = "BO_MODEL_CACHE_MB", default_value_t = 1024)]
    pub model_cache_mb: usize,

    /// Memory budget, in MiB, of the trials kept in memory for the studies being suggested for
    /// (so a suggest reads only what changed); least recently read studies go first, and a study
    /// larger than the budget alone is read whole for each computation instead of kept.
    #[arg(long, env = "BO_TRIAL_MIRROR_MB", default_value_t = 512)]
    pub trial_mirror_mb: usize,

    /// Seconds a replica's lease on refitting a study lasts without renewal (it renews it while
    /// it fits): when a replica dies mid-fit, another takes over after this long.
    #[arg(long, env = "BO_REFIT_LEASE", value_parser = seconds, default_value_t = 30.0)]
    pub refit_lease: f64,

    /// Seconds an ACTIVE trial's client may go unseen — no suggest with its `clientId`, no
    /// measurement, no early-stopping check — before the trial goes back to REQUESTED and is
    /// handed to the next client (killed workers leave no zombie trials). 0, the default: never.
    #[arg(long, env = "BO_TRIAL_LEASE", value_parser = seconds, default_value_t = 0.0)]
    pub trial_lease: f64,

    /// Seconds a finished operation (a suggest's or an early-stopping check's) is kept before it
    /// is deleted; GET on it answers 404 after. Pending operations are kept until finished.
    /// 0: keep every operation forever.
    #[arg(long, env = "BO_OPERATION_RETENTION", value_parser = seconds, default_value_t = 7.0 * 86_400.0)]
    pub operation_retention: f64,

    /// A file of API keys, one per line: `NAME SHA256 PROJECT[,PROJECT…]` — a name for logs,
    /// the hex SHA-256 of the key (`printf %s KEY | sha256sum`), the projects it grants (`*`: all).
    /// With keys, every API request needs `Authorization: Bearer KEY` and sees only its projects.
    #[arg(long, env = "BO_API_KEYS_FILE")]
    pub api_keys_file: Option<std::path::PathBuf>,

    /// API keys in the file's format, `;` between entries (added to the file's).
    #[arg(long, env = "BO_API_KEYS", hide_env_values = true)]
    pub api_keys: Option<String>,

    /// Listen on the address given even though no API keys are configured (behind a proxy that
    /// authenticates). Without keys and without this, the server listens on loopback only.
    #[arg(long, env = "BO_ALLOW_UNAUTHENTICATED")]
    pub allow_unauthenticated: bool,

    /// Requests a second each API key may make, in bursts of up to two seconds' worth; over it
    /// answers 429 with `Retry-After` (0: unlimited).
    #[arg(long, env = "BO_RATE_LIMIT", value_parser = seconds, default_value_t = 100.0)]
    pub rate_limit: f64,

    /// Requests each API key may have in flight at once; beyond it answers 429 with
    /// `Retry-After` (0: unlimited). Keeps one key from holding every connection slot.
    #[arg(long, env = "BO_MAX_IN_FLIGHT_PER_KEY", default_value_t = 64)]
    pub max_in_flight_per_key: usize,

    /// The largest request body, in bytes (413 beyond it).
    #[arg(long, env = "BO_MAX_BODY_BYTES", default_value_t = 1 << 20)]
    pub max_body_bytes: usize,

    /// Seconds a request's body may take to arrive after its head (408 beyond it): a body sent
    /// a byte at a time holds its connection no longer than this (0: no limit but
    /// --request-timeout).
    #[arg(long, env = "BO_BODY_TIMEOUT", value_parser = seconds, default_value_t = 10.0)]
    pub body_timeout: f64,

    /// The most bytes of header names and values a request may carry (431 beyond it).
    #[arg(long, env = "BO_MAX_HEADER_BYTES", default_value_t = 16 << 10)]
    pub max_header_bytes: usize,

    /// Connections open at once. At the cap the connection idle the longest is closed for each
    /// new one; the cap is also kept below the open-file limit.
    #[arg(long, env = "BO_MAX_OPEN_CONNECTIONS", default_value_t = 4096, value_parser = at_least_one)]
    pub max_open_connections: usize,

    /// Seconds a connection may go without sending a complete request head — a new connection,
    /// a kept-alive one between requests, a header sent slowly — before it is closed.
    #[arg(long, env = "BO_IDLE_TIMEOUT", value_parser = seconds, default_value_t = 20.0)]
    pub idle_timeout: f64,

    /// Seconds shutdown (SIGTERM, Ctrl-C) waits for requests in flight, and then for background
    /// fits, before it closes their connections and gives the fits' refit leases back anyway.
    #[arg(long, env = "BO_SHUTDOWN_GRACE", value_parser = seconds, default_value_t = 10.0)]
    pub shutdown_grace: f64,

    /// Serve `/metrics` on this address only (and not on --listen), to keep service-wide
    /// counters away from API clients.
    #[arg(long, env = "BO_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Seconds a request may take before it is answered 504 (0: no limit). Must exceed
    /// --max-suggest-wait.
    #[arg(long, env = "BO_REQUEST_TIMEOUT", value_parser = seconds, default_value_t = 60.0)]
    pub request_timeout: f64,

    /// The sizes a request may have (docs/settings.md, "Limits").
    #[command(flatten)]
    pub limits: LimitFlags,

    /// Log filter, in `tracing_subscriber::EnvFilter` syntax (e.g. `info`, `bo_server=debug`).
    #[arg(long, env = "BO_LOG", default_value = "info")]
    pub log: String,

    /// Log format: `text` for people, `json` (one object per line) for log collectors.
    #[arg(long, env = "BO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// The limits of `bo_core::Limits`, one flag each (docs/settings.md, "Limits"). Every refusal names its
/// flag ([`limit_flag`]).
#[derive(Clone, Debug, clap::Args)]
pub struct LimitFlags {
    /// Characters of an id or a name: parameter, metric and client ids, categorical values,
    /// display names, projects and locations.
    #[arg(long, env = "BO_MAX_ID_LENGTH", default_value_t = Limits::default().id_length, value_parser = at_least_one)]
    pub max_id_length: usize,
    /// Characters of a free text (a trial's infeasibleReason).
    #[arg(long, env = "BO_MAX_TEXT_LENGTH", default_value_t = Limits::default().text_length, value_parser = at_least_one)]
    pub max_text_length: usize,
    /// Parameters in a study's tree, active or not.
    #[arg(long, env = "BO_MAX_PARAMETERS", default_value_t = Limits::default().parameters, value_parser = at_least_one)]
    pub max_parameters: usize,
    /// Values of one CATEGORICAL or DISCRETE parameter (and of one parent-value condition).
    #[arg(long, env = "BO_MAX_VALUES", default_value_t = Limits::default().values, value_parser = at_least_one)]
    pub max_values: usize,
    /// Levels of a conditional tree (a root alone is 1).
    #[arg(long, env = "BO_MAX_TREE_DEPTH", default_value_t = Limits::default().tree_depth, value_parser = at_least_one)]
    pub max_tree_depth: usize,
    /// Metrics of a study.
    #[arg(long, env = "BO_MAX_METRICS", default_value_t = Limits::default().metrics, value_parser = at_least_one)]
    pub max_metrics: usize,
    /// Trials one suggest may ask for (`suggestionCount`).
    #[arg(long, env = "BO_MAX_SUGGESTION_COUNT", default_value_t = Limits::default().suggestion_count, value_parser = at_least_one)]
    pub max_suggestion_count: usize,
    /// Intermediate measurements of one trial.
    #[arg(long, env = "BO_MAX_MEASUREMENTS", default_value_t = Limits::default().measurements, value_parser = at_least_one)]
    pub max_measurements: usize,
    /// Candidate coordinates one suggestion may score: `numCandidates` × the study's parameters.
    #[arg(long, env = "BO_MAX_CANDIDATE_COORDINATES", default_value_t = Limits::default().candidate_coordinates, value_parser = at_least_one)]
    pub max_candidate_coordinates: usize,
    /// Likelihood evaluations one structure search may make (`gibbsBudget`; `numPartitions` +
    /// `swapsPerParameter` × parameters).
    #[arg(long, env = "BO_MAX_STRUCTURE_EVALUATIONS", default_value_t = Limits::default().structure_evaluations, value_parser = at_least_one)]
    pub max_structure_evaluations: usize,
}

impl LimitFlags {
    /// The limits these flags set.
    pub fn limits(&self) -> Limits {
        Limits {
            id_length: self.max_id_length,
            text_length: self.max_text_length,
            parameters: self.max_parameters,
            values: self.max_values,
            tree_depth: self.max_tree_depth,
            metrics: self.max_metrics,
            suggestion_count: self.max_suggestion_count,
            measurements: self.max_measurements,
            candidate_coordinates: self.max_candidate_coordinates,
            structure_evaluations: self.max_structure_evaluations,
        }
    }
}

/// The flag that sets `limit`, for the messages that name it.
pub fn limit_flag(limit: Limit) -> &'static str {
    match limit {
        Limit::IdLength => "--max-id-length",
        Limit::TextLength => "--max-text-length",
        Limit::Parameters => "--max-parameters",
        Limit::Values => "--max-values",
        Limit::TreeDepth => "--max-tree-depth",
        Limit::Metrics => "--max-metrics",
        Limit::SuggestionCount => "--max-suggestion-count",
        Limit::Measurements => "--max-measurements",
        Limit::CandidateCoordinates => "--max-candidate-coordinates",
        Limit::StructureEvaluations => "--max-structure-evaluations",
    }
}

fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// What each part of the service needs of the settings ([`Config::split`]); the access rules
/// read theirs in `Access::from_config`.
pub struct Parts {
    /// The database pool's.
    pub store: bo_store::StoreOptions,
    /// The engine's.
    pub engine: crate::engine::EngineConfig,
    /// Every connection's bounds.
    pub connections: crate::listener::ConnectionLimits,
}

impl Config {
    /// The settings split into what each part of the service needs, out-of-range values
    /// clamped to what each part can take.
    pub fn split(&self) -> Parts {
        Parts {
            store: bo_store::StoreOptions {
                max_connections: self.max_connections,
                acquire_timeout: std::time::Duration::from_secs_f64(self.database_timeout.clamp(0.1, 3600.0)),
            },
            engine: crate::engine::EngineConfig {
                workers: self.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
                cache_bytes: self.model_cache_mb.saturating_mul(1 << 20),
                mirror_bytes: self.trial_mirror_mb.saturating_mul(1 << 20),
                prefetch: self.prefetch,
                queue_staleness: i64::from(self.queue_staleness),
                reproducible: self.reproducible,
                max_suggest_wait: std::time::Duration::from_secs_f64(self.max_suggest_wait.clamp(0.0, 3600.0)),
                lag_wait: std::time::Duration::from_secs_f64(self.model_lag_wait.clamp(0.0, 3600.0)),
                refit_lease: std::time::Duration::from_secs_f64(self.refit_lease.clamp(1.0, 86_400.0)),
                trial_lease: (self.trial_lease > 0.0).then(|| std::time::Duration::from_secs_f64(self.trial_lease.min(365.0 * 86_400.0))),
            },
            connections: self.connection_limits(),
        }
    }

    /// The bounds of every connection, the cap kept below the open-file limit (with room for
    /// the database pool and a margin).
    fn connection_limits(&self) -> crate::listener::ConnectionLimits {
        let reserved = self.max_connections as usize + 64;
        crate::listener::ConnectionLimits {
            max_connections: crate::listener::effective_cap(self.max_open_connections, reserved),
            idle_timeout: std::time::Duration::from_secs_f64(self.idle_timeout.clamp(0.1, 86_400.0)),
            shutdown_grace: std::time::Duration::from_secs_f64(self.shutdown_grace.min(86_400.0)),
        }
    }
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl Config {
    /// Where to listen: `--listen`, except that without API keys (and without
    /// `--allow-unauthenticated`) a non-loopback address becomes the loopback address of the same
    /// family and port. The second value says whether it was changed.
    pub fn listen_address(&self, keys_configured: bool) -> (SocketAddr, bool) {
        if keys_configured || self.allow_unauthenticated || self.listen.ip().is_loopback() {
            return (self.listen, false);
        }
        let loopback: std::net::IpAddr = match self.listen {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        };
        (SocketAddr::new(loopback, self.listen.port()), true)
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("database_url", &redact(&self.database_url))
            .field("max_connections", &self.max_connections)
            .field("database_timeout", &self.database_timeout)
            .field("workers", &self.workers)
            .field("prefetch", &self.prefetch)
            .field("reproducible", &self.reproducible)
            .field("queue_staleness", &self.queue_staleness)
            .field("max_suggest_wait", &self.max_suggest_wait)
            .field("model_lag_wait", &self.model_lag_wait)
            .field("linalg_threads", &self.linalg_threads)
            .field("model_cache_mb", &self.model_cache_mb)
            .field("trial_mirror_mb", &self.trial_mirror_mb)
            .field("refit_lease", &self.refit_lease)
            .field("trial_lease", &self.trial_lease)
            .field("operation_retention", &self.operation_retention)
            .field("api_keys_file", &self.api_keys_file)
            .field("api_keys", &self.api_keys.as_ref().map(|_| "***"))
            .field("allow_unauthenticated", &self.allow_unauthenticated)
            .field("rate_limit", &self.rate_limit)
            .field("max_in_flight_per_key", &self.max_in_flight_per_key)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("body_timeout", &self.body_timeout)
            .field("max_header_bytes", &self.max_header_bytes)
            .field("request_timeout", &self.request_timeout)
            .field("max_open_connections", &self.max_open_connections)
            .field("idle_timeout", &self.idle_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("metrics_listen", &self.metrics_listen)
            .field("limits", &self.limits)
            .field("log", &self.log)
            .field("log_format", &self.log_format)
            .finish()
    }
}

/// A number of seconds: finite and not negative (a NaN or an infinity is refused at start-up,
/// not turned into a duration).
fn seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("{v} is not a number of seconds (finite, 0 or more)")),
        Err(e) => Err(e.to_string()),
    }
}

/// The URL with any password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((userinfo, host)) = rest.split_once('@') else { return url.to_owned() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn seconds_are_finite_and_not_negative() {
        assert_eq!(super::seconds("2.5"), Ok(2.5));
        assert_eq!(super::seconds("0"), Ok(0.0));
        for bad in ["nan", "inf", "-1", "soon"] {
            assert!(super::seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn without_keys_the_server_listens_on_loopback_only() {
        use clap::Parser;
        let open = super::Config::parse_from(["bo-server", "--listen", "0.0.0.0:9000"]);
        assert_eq!(open.listen_address(false), ("127.0.0.1:9000".parse().unwrap(), true));
        assert_eq!(open.listen_address(true), ("0.0.0.0:9000".parse().unwrap(), false));
        let v6 = super::Config::parse_from(["bo-server", "--listen", "[::]:9000"]);
        assert_eq!(v6.listen_address(false), ("[::1]:9000".parse().unwrap(), true));
        let allowed = super::Config::parse_from(["bo-server", "--listen", "0.0.0.0:9000", "--allow-unauthenticated"]);
        assert_eq!(allowed.listen_address(false), ("0.0.0.0:9000".parse().unwrap(), false));
        let local = super::Config::parse_from(["bo-server"]);
        assert_eq!(local.listen_address(false), ("127.0.0.1:8080".parse().unwrap(), false));
    }

    #[test]
    fn every_limit_has_its_flag() {
        use clap::CommandFactory;
        let command = super::Config::command();
        for limit in bo_core::Limit::ALL {
            let flag = super::limit_flag(limit).trim_start_matches("--");
            assert!(command.get_arguments().any(|a| a.get_long() == Some(flag)), "{flag}");
        }
        use clap::Parser;
        let config = super::Config::parse_from(["bo-server", "--max-parameters", "7"]);
        assert_eq!(config.limits.limits(), bo_core::Limits { parameters: 7, ..bo_core::Limits::default() });
        assert!(super::Config::try_parse_from(["bo-server", "--max-values", "0"]).is_err());
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(super::redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(super::redact("sqlite://bo.db"), "sqlite://bo.db");
    }
}
