//! Who may call, and what every request is held to: API keys and the projects they grant, the
//! per-key rate limit, the header limit and the request timeout.
//!
//! Keys are configured as lines `NAME SHA256 PROJECT[,PROJECT…]` (the key's name for logs, the
//! hex SHA-256 of the key, the projects it grants, `*` for all of them), from a file
//! (`--api-keys-file`) or from `--api-keys`/`BO_API_KEYS` (lines or `;`-separated). The server
//! never sees a key in the clear except in the request that presents it. With keys configured
//! every request under `/v1/`, `/v1beta1/` and `/ui/` needs `Authorization: Bearer KEY`, and a project the key
//! does not grant answers exactly what a path that exists nowhere answers — a 404 that does not
//! depend on what the project holds, so names do not leak. Health, metrics and the API document
//! stay open. Without keys every request is allowed and `run` listens on loopback only.
//!
//! This module must not touch the database or know the routes beyond their `/v1/projects/{p}`
//! prefix.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bo_core::Limits;
use bo_core::limits::Text;
use sha2::{Digest, Sha256};

use super::error::{ApiError, Code};
use crate::config::Config;
use crate::sync::lock;

/// A mistake in the key configuration, refused at start-up.
#[derive(Debug, thiserror::Error)]
#[error("API key line {line}: {message}")]
pub struct KeyConfigError {
    line: usize,
    message: String,
}

/// The projects a key grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Projects {
    /// `*`: every project.
    All,
    /// These, by name.
    Only(Vec<String>),
}

impl Projects {
    /// Whether `project` is granted.
    pub fn allows(&self, project: &str) -> bool {
        match self {
            Projects::All => true,
            Projects::Only(names) => names.iter().any(|p| p == project),
        }
    }
}

/// The caller a request was made by: put in the request's extensions when keys are configured.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The key's name from the configuration (never the key).
    pub name: Arc<str>,
    /// What it grants.
    pub projects: Projects,
}

/// The configured keys, by the hex SHA-256 of the key.
#[derive(Clone, Default)]
pub struct ApiKeys {
    by_hash: HashMap<String, Caller>,
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.by_hash.values().map(|c| &*c.name).collect();
        names.sort_unstable();
        f.debug_struct("ApiKeys").field("names", &names).finish()
    }
}

impl ApiKeys {
    /// Parses key lines; blank lines and `#` comments are skipped, `;` separates entries as a
    /// newline does.
    pub fn parse(text: &str) -> Result<ApiKeys, KeyConfigError> {
        let mut keys = ApiKeys::default();
        let mut names = std::collections::HashSet::new();
        for (i, raw) in text.split(['\n', ';']).enumerate() {
            let line = i + 1;
            let err = |message: String| KeyConfigError { line, message };
            let entry = raw.split('#').next().unwrap_or("").trim();
            if entry.is_empty() {
                continue;
            }
            let fields: Vec<&str> = entry.split_whitespace().collect();
            let [name, hash, projects] = fields[..] else {
                return Err(err(format!("expected `NAME SHA256 PROJECT[,PROJECT…]`, found {} fields", fields.len())));
            };
            let hash = hash.strip_prefix("sha256:").unwrap_or(hash).to_ascii_lowercase();
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err(format!("key {name:?}: the hash must be 64 hex digits (the SHA-256 of the key), not {hash:?}")));
            }
            let projects = if projects == "*" {
                Projects::All
            } else {
                let list: Vec<String> = projects.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect();
                if list.is_empty() || list.iter().any(|p| p == "*" || p.contains('/')) {
                    return Err(err(format!("key {name:?}: projects are `*` or a comma-separated list of names, not {projects:?}")));
                }
                Projects::Only(list)
            };
            if !names.insert(name.to_owned()) {
                return Err(err(format!("the name {name:?} is used twice")));
            }
            if keys.by_hash.insert(hash, Caller { name: name.into(), projects }).is_some() {
                return Err(err(format!("key {name:?} has the same hash as an earlier key")));
            }
        }
        Ok(keys)
    }

    /// No keys: the server is open.
    pub fn is_empty(&self) -> bool {
        self.by_hash.is_empty()
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.by_hash.len()
    }

    /// The caller holding `key`, if it is one of ours.
    pub fn caller(&self, key: &str) -> Option<&Caller> {
        self.by_hash.get(&hash_key(key))
    }
}

/// The hex SHA-256 of a key: what the key configuration stores.
pub fn hash_key(key: &str) -> String {
    Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A token bucket: `rate` requests a second, bursts up to `burst`.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Requests a second each key may make.
#[derive(Debug)]
pub struct RateLimit {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<Arc<str>, Bucket>>,
}

impl RateLimit {
    /// `rate` requests a second with bursts of two seconds' worth (at least one request).
    pub fn new(rate: f64) -> RateLimit {
        RateLimit { rate, burst: (2.0 * rate).max(1.0), buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one request from `key`'s bucket at `now`: `Err(wait)` when it is empty.
    fn take(&self, key: &Arc<str>, now: Instant) -> Result<(), Duration> {
        let mut buckets = lock(&self.buckets);
        let bucket = buckets.entry(key.clone()).or_insert(Bucket { tokens: self.burst, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.rate).min(self.burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / self.rate))
        }
    }
}

/// Requests in flight per key, at most `limit` each.
#[derive(Debug)]
pub struct InFlight {
    limit: usize,
    by_key: Mutex<HashMap<Arc<str>, usize>>,
}

impl InFlight {
    /// At most `limit` requests in flight per key.
    pub fn new(limit: usize) -> InFlight {
        InFlight { limit, by_key: Mutex::new(HashMap::new()) }
    }

    /// Counts a request of `key` in flight until the returned guard drops; `None` when the key
    /// has its limit in flight already.
    fn enter(self: &Arc<Self>, key: &Arc<str>) -> Option<InFlightGuard> {
        let mut by_key = lock(&self.by_key);
        let n = by_key.entry(key.clone()).or_default();
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(InFlightGuard { counts: self.clone(), key: key.clone() })
    }
}

/// A request counted in flight.
struct InFlightGuard {
    counts: Arc<InFlight>,
    key: Arc<str>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut by_key = lock(&self.counts.by_key);
        if let Some(n) = by_key.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                by_key.remove(&self.key);
            }
        }
    }
}

/// What the access middleware holds requests to.
#[derive(Debug)]
pub struct Access {
    /// The keys; empty: no authentication.
    pub keys: ApiKeys,
    /// Per key; `None`: unlimited.
    pub rate_limit: Option<RateLimit>,
    /// Requests each key may have in flight at once; `None`: unlimited.
    pub in_flight: Option<Arc<InFlight>>,
    /// How long a request's body may take to arrive after its head; `None`: no bound of its own.
    pub body_timeout: Option<Duration>,
    /// The most bytes of header names and values a request may carry.
    pub max_header_bytes: usize,
    /// The largest request body.
    pub max_body_bytes: usize,
    /// How long a request may take before it is answered 504; `None`: no bound.
    pub request_timeout: Option<Duration>,
    /// How long a `:commit` waits for its import before answering 202 with the progress
    /// (`in_progress::COMMIT_WAIT`, at most half the request timeout).
    pub commit_wait: Duration,
    /// The sizes a request may have.
    pub limits: Limits,
}

impl Default for Access {
    fn default() -> Access {
        Access {
            keys: ApiKeys::default(),
            rate_limit: None,
            in_flight: None,
            body_timeout: None,
            max_header_bytes: 16 << 10,
            max_body_bytes: super::DEFAULT_BODY_LIMIT,
            request_timeout: None,
            commit_wait: super::in_progress::COMMIT_WAIT,
            limits: Limits::default(),
        }
    }
}

impl Access {
    /// The access rules `config` describes: the keys from the file and the flag, the rate,
    /// size and time limits. Errors name the setting that is wrong.
    pub fn from_config(config: &Config) -> anyhow::Result<Access> {
        use anyhow::Context;
        let mut text = String::new();
        if let Some(path) = &config.api_keys_file {
            text = std::fs::read_to_string(path).with_context(|| format!("reading --api-keys-file {}", path.display()))?;
            text.push('\n');
        }
        if let Some(inline) = &config.api_keys {
            text.push_str(inline);
        }
        let keys = ApiKeys::parse(&text).context("in the API keys (--api-keys-file, --api-keys)")?;
        if config.request_timeout > 0.0 && config.request_timeout <= config.max_suggest_wait {
            anyhow::bail!(
                "--request-timeout ({} s) must be longer than --max-suggest-wait ({} s), or 0 for no limit",
                config.request_timeout,
                config.max_suggest_wait
            );
        }
        let request_timeout = (config.request_timeout > 0.0).then(|| Duration::from_secs_f64(config.request_timeout.min(86_400.0)));
        Ok(Access {
            keys,
            rate_limit: (config.rate_limit > 0.0).then(|| RateLimit::new(config.rate_limit)),
            in_flight: (config.max_in_flight_per_key > 0).then(|| Arc::new(InFlight::new(config.max_in_flight_per_key))),
            body_timeout: (config.body_timeout > 0.0).then(|| Duration::from_secs_f64(config.body_timeout.min(86_400.0))),
            max_header_bytes: config.max_header_bytes,
            max_body_bytes: config.max_body_bytes,
            request_timeout,
            commit_wait: request_timeout.map_or(super::in_progress::COMMIT_WAIT, |limit| super::in_progress::COMMIT_WAIT.min(limit / 2)),
            limits: config.limits.limits(),
        })
    }
}

/// The project a path names, percent-decoded: `Some("p")` for `/v1/projects/p/…`,
/// `/v1beta1/projects/p/…` or `/ui/projects/p/…`; `None` for paths outside a project (health,
/// metrics, docs).
pub fn project_of(path: &str) -> Option<String> {
    let mut parts = path.trim_start_matches('/').split('/');
    let (Some("v1" | "v1beta1" | "ui"), Some("projects"), Some(project)) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    Some(percent_decode(project))
}

/// The location a path names, percent-decoded: `Some("l")` for `/v1/projects/p/locations/l/…`.
pub fn location_of(path: &str) -> Option<String> {
    let mut parts = path.trim_start_matches('/').split('/').skip(3);
    let (Some("locations"), Some(location)) = (parts.next(), parts.next()) else { return None };
    Some(percent_decode(location))
}

/// A project or location that cannot name anything: empty, too long, or holding control
/// characters (a NUL would be refused by Postgres and stored by SQLite). Answered 400 before
/// anything else, the same on every database.
fn bad_segment(path: &str, limits: &Limits) -> Option<ApiError> {
    for (field, value) in [("project", project_of(path)), ("location", location_of(path))] {
        let Some(value) = value else { continue };
        if value.is_empty() {
            return Some(ApiError::invalid(format!("{field}: must not be empty")));
        }
        if let Err(e) = limits.check_text(&value, Text::Id) {
            return Some(super::error::text_error(field, &e));
        }
    }
    None
}

/// Whether a path is one of the API's (and so needs a key when keys are configured).
fn is_api_path(path: &str) -> bool {
    path.starts_with("/v1/") || path.starts_with("/v1beta1/") || path.starts_with("/ui/")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The body limit a request is held to, put in its extensions by the access guard (for the
/// message that names it).
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

/// How long a request's body may take to arrive, put in its extensions by the access guard.
#[derive(Clone, Copy, Debug)]
pub struct BodyTimeout(pub Duration);

/// The middleware: header limit, then (with keys) the key, its rate and its project, then the
/// handler under the request timeout.
pub async fn guard(State(access): State<Arc<Access>>, mut request: Request, next: Next) -> Response {
    let header_bytes: usize = request.headers().iter().map(|(k, v)| k.as_str().len() + v.len()).sum();
    if header_bytes > access.max_header_bytes {
        return ApiError::invalid(format!("the request headers are larger than the limit of {} bytes", access.max_header_bytes))
            .with_status(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE)
            .into_response();
    }
    request.extensions_mut().insert(BodyLimit(access.max_body_bytes));
    if let Some(limit) = access.body_timeout {
        request.extensions_mut().insert(BodyTimeout(limit));
    }
    let path = request.uri().path().to_owned();
    if is_api_path(&path)
        && let Some(error) = bad_segment(&path, &access.limits)
    {
        return error.into_response();
    }
    let mut in_flight = None;
    if !access.keys.is_empty() && is_api_path(&path) {
        let presented = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer_token);
        let Some(presented) = presented else {
            return unauthenticated("this server needs an API key: send `Authorization: Bearer KEY`");
        };
        let Some(caller) = access.keys.caller(presented).cloned() else {
            return unauthenticated("the API key is not valid");
        };
        if let Some(limit) = &access.rate_limit
            && let Err(wait) = limit.take(&caller.name, Instant::now())
        {
            let mut response = ApiError::new(Code::ResourceExhausted, format!("key {:?} is over its rate limit; retry later", caller.name))
                .into_response();
            let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            return response;
        }
        if let Some(project) = project_of(&path)
            && !caller.projects.allows(&project)
        {
            return ApiError::not_found(format!("no such resource or method: {path}")).into_response();
        }
        if let Some(counts) = &access.in_flight {
            match counts.enter(&caller.name) {
                Some(guard) => in_flight = Some(guard),
                None => {
                    let mut response = ApiError::new(
                        Code::ResourceExhausted,
                        format!(
                            "key {:?} has {} requests in flight, its limit (--max-in-flight-per-key); retry when one has been answered",
                            caller.name, counts.limit
                        ),
                    )
                    .into_response();
                    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(1));
                    return response;
                }
            }
        }
        tracing::Span::current().record("key", &*caller.name);
        request.extensions_mut().insert(caller);
    }
    let response = match access.request_timeout {
        None => next.run(request).await,
        Some(limit) => match tokio::time::timeout(limit, next.run(request)).await {
            Ok(response) => response,
            Err(_) => ApiError::new(
                Code::DeadlineExceeded,
                format!("the request took longer than the server's limit of {} s", limit.as_secs_f64()),
            )
            .into_response(),
        },
    };
    match in_flight {
        Some(guard) => in_flight_until_sent(response, guard),
        None => response,
    }
}

/// A streamed answer (an export) stays in flight for its key until its body ends: the guard
/// goes with the body. An answer of known length is whole already and is left as it is.
fn in_flight_until_sent(response: Response, guard: InFlightGuard) -> Response {
    use axum::body::HttpBody;
    if response.body().size_hint().exact().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = futures_util::StreamExt::map(body.into_data_stream(), move |part| {
        let _held = &guard;
        part
    });
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}

/// The token of an `Authorization: Bearer TOKEN` header; the scheme's name is
/// case-insensitive (RFC 9110, 11.1), so `BEARER` and `bearer` are read as `Bearer`.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

fn unauthenticated(message: &str) -> Response {
    let mut response = ApiError::new(Code::Unauthenticated, message).into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_timeout_must_outlast_the_suggest_wait() {
        use clap::Parser;
        let e = Access::from_config(&Config::parse_from(["bo-server", "--request-timeout", "2"])).unwrap_err();
        assert!(e.to_string().contains("--max-suggest-wait"), "{e}");
        assert!(Access::from_config(&Config::parse_from(["bo-server", "--request-timeout", "0"])).unwrap().request_timeout.is_none());
        let e = Access::from_config(&Config::parse_from(["bo-server", "--api-keys", "alice nothex demo"])).unwrap_err();
        assert!(format!("{e:#}").contains("64 hex digits"), "{e:#}");
    }

    const SECRET: &str = "s3cret-key";

    #[test]
    fn requests_in_flight_are_counted_per_key_until_answered() {
        let counts = Arc::new(InFlight::new(2));
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let first = counts.enter(&a).expect("one");
        let second = counts.enter(&a).expect("two");
        assert!(counts.enter(&a).is_none(), "a third of the same key waits");
        let other = counts.enter(&b).expect("another key has its own");
        drop(first);
        let third = counts.enter(&a).expect("room again once one is answered");
        drop((second, third, other));
        assert!(counts.by_key.lock().unwrap().is_empty(), "nothing left counted");
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for header in ["Bearer k", "bearer k", "BEARER k", "BeArEr   k ", " Bearer k"] {
            assert_eq!(bearer_token(header), Some("k"), "{header:?}");
        }
        for header in ["Basic k", "Bearer", "Bearer ", "Bearerk", "Token k"] {
            assert_eq!(bearer_token(header), None, "{header:?}");
        }
    }

    #[test]
    fn key_lines_parse_and_hash() {
        let h = hash_key(SECRET);
        assert_eq!(h.len(), 64);
        let text = format!("# team keys\nalice {h} a,b\n\nrobot sha256:{} *   # every project\n", hash_key("other"));
        let keys = ApiKeys::parse(&text).unwrap();
        assert_eq!(keys.len(), 2);
        let alice = keys.caller(SECRET).unwrap();
        assert_eq!(&*alice.name, "alice");
        assert!(alice.projects.allows("a") && alice.projects.allows("b") && !alice.projects.allows("c"));
        assert!(keys.caller("other").unwrap().projects.allows("anything"));
        assert!(keys.caller("wrong").is_none());
        assert_eq!(ApiKeys::parse(&format!("alice {h} a; bob {} b", hash_key("x"))).unwrap().len(), 2);
    }

    #[test]
    fn the_sha256_of_a_known_string() {
        // printf %s abc | sha256sum
        assert_eq!(hash_key("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn bad_key_lines_are_refused_with_their_line() {
        let h = hash_key(SECRET);
        for (text, needle) in [
            (format!("alice {h}"), "line 1"),
            (format!("\nalice {SECRET} a"), "line 2"),
            (format!("alice {h} a\nalice {} b", hash_key("x")), "twice"),
            (format!("alice {h} a\nbob {h} b"), "same hash"),
            (format!("alice {h} a,*"), "projects"),
            (format!("alice {h} ,"), "projects"),
        ] {
            let e = ApiKeys::parse(&text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn projects_come_from_the_path() {
        assert_eq!(project_of("/v1/projects/demo/locations/l/studies").as_deref(), Some("demo"));
        assert_eq!(project_of("/ui/projects/a%20b/locations/l/studies/1/operations/2").as_deref(), Some("a b"));
        assert_eq!(project_of("/healthz"), None);
        assert_eq!(project_of("/v1beta1/projects/demo/locations/l/studies").as_deref(), Some("demo"));
        assert_eq!(project_of("/v1/other"), None);
        assert_eq!(location_of("/v1/projects/demo/locations/l%00/studies").as_deref(), Some("l\0"));
        assert_eq!(location_of("/v1/projects/demo"), None);
        let limits = Limits::default();
        assert!(bad_segment("/v1/projects/demo/locations/l%00/studies", &limits).is_some());
        assert!(bad_segment(&format!("/v1/projects/{}/locations/l/studies", "p".repeat(129)), &limits).is_some());
        assert!(bad_segment("/v1/projects/demo/locations/local/studies", &limits).is_none());
    }

    /// A handler slower than the request timeout is answered 504 in Google's shape.
    #[tokio::test]
    async fn a_slow_request_is_answered_504() {
        use tower::ServiceExt;
        let access = Arc::new(Access { request_timeout: Some(Duration::from_millis(50)), ..Access::default() });
        let app = axum::Router::new()
            .route("/slow", axum::routing::get(|| async { tokio::time::sleep(Duration::from_secs(5)).await }))
            .route("/fast", axum::routing::get(|| async {}))
            .layer(axum::middleware::from_fn_with_state(access, guard));
        let get = |path: &str| axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
        let slow = app.clone().oneshot(get("/slow")).await.unwrap();
        assert_eq!(slow.status(), StatusCode::GATEWAY_TIMEOUT);
        let body = axum::body::to_bytes(slow.into_body(), 1 << 16).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["status"], "DEADLINE_EXCEEDED");
        assert!(body["error"]["message"].as_str().unwrap().contains("0.05 s"), "{body}");
        assert_eq!(app.oneshot(get("/fast")).await.unwrap().status(), StatusCode::OK);
    }

    #[test]
    fn the_bucket_refills_at_its_rate() {
        let limit = RateLimit::new(10.0);
        let key: Arc<str> = "k".into();
        let t0 = Instant::now();
        for _ in 0..20 {
            limit.take(&key, t0).unwrap();
        }
        let wait = limit.take(&key, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
        limit.take(&key, t0 + Duration::from_millis(100)).unwrap();
        assert!(limit.take(&key, t0 + Duration::from_millis(100)).is_err());
        // Another key has its own bucket.
        limit.take(&"other".into(), t0).unwrap();
    }
}
