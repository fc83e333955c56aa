//! Configuration: flags, each with an environment variable of the same meaning.

use std::net::SocketAddr;

use clap::Parser;

/// bo: a self-hosted Vertex AI Vizier service — Bayesian optimisation over REST.
#[derive(Clone, Parser)]
#[command(name = "bo-server", version, about)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "BO_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Database: `sqlite://FILE` (created if missing) or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, env = "BO_DATABASE_URL", default_value = "sqlite://bo.db")]
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

    /// Seconds a suggest waits for its trials before answering with a pending operation
    /// (`done: false`) that the client polls.
    #[arg(long, env = "BO_MAX_SUGGEST_WAIT", value_parser = seconds, default_value_t = 5.0)]
    pub max_suggest_wait: f64,

    /// Threads one model's linear algebra may use. 1 (the default) leaves parallelism to the
    /// worker pool; measured faster on every study size up to 2,000 trials (docs/benchmarks.md).
    #[arg(long, env = "BO_LINALG_THREADS", default_value_t = 1)]
    pub linalg_threads: usize,

    /// Memory budget of the per-study model cache, in MiB; least recently used models go first.
    #[arg(long, env = "BO_MODEL_CACHE_MB", default_value_t = 1024)]
    pub model_cache_mb: usize,

    /// Seconds a replica's lease on refitting a study lasts without renewal (it renews it while
    /// it fits): when a replica dies mid-fit, another takes over after this long.
    #[arg(long, env = "BO_REFIT_LEASE", value_parser = seconds, default_value_t = 30.0)]
    pub refit_lease: f64,

    /// Seconds an ACTIVE trial's client may go unseen — no suggest with its `clientId`, no
    /// measurement, no early-stopping check — before the trial goes back to REQUESTED and is
    /// handed to the next client (killed workers leave no zombie trials). 0, the default: never.
    #[arg(long, env = "BO_TRIAL_LEASE", value_parser = seconds, default_value_t = 0.0)]
    pub trial_lease: f64,

    /// Log filter, in `tracing_subscriber::EnvFilter` syntax (e.g. `info`, `bo_server=debug`).
    #[arg(long, env = "BO_LOG", default_value = "info")]
    pub log: String,
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
            .field("queue_staleness", &self.queue_staleness)
            .field("max_suggest_wait", &self.max_suggest_wait)
            .field("linalg_threads", &self.linalg_threads)
            .field("model_cache_mb", &self.model_cache_mb)
            .field("refit_lease", &self.refit_lease)
            .field("trial_lease", &self.trial_lease)
            .field("log", &self.log)
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
    fn passwords_are_redacted() {
        assert_eq!(super::redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(super::redact("sqlite://bo.db"), "sqlite://bo.db");
    }
}
