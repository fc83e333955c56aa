//! The HTTP API: Vertex AI Vizier v1 REST routes under
//! `/v1/projects/{project}/locations/{location}`, health checks, and the OpenAPI document with
//! an offline docs page. Handlers translate wire JSON to domain types, call the store (and the
//! engine for proposals) and translate back; they never run a designer themselves.

pub mod access;
pub mod columns;
pub mod dashboard;
pub mod error;
pub mod extract;
pub mod health;
pub mod in_progress;
pub mod metrics;
pub mod model;
pub mod offload;
pub mod operations;
pub mod page;
pub mod request_id;
mod routes;
pub mod state;
pub mod studies;
pub mod transfer;
pub mod trials;
pub mod unread;

#[cfg(test)]
mod tests;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_swagger_ui::SwaggerUi;

use error::ApiError;
use state::AppState;

use crate::wire;

/// The largest request body accepted unless configured otherwise: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// The OpenAPI document's frame: what it says besides the paths, which come from the route list
/// (`routes.rs`); [`document`] puts them together.
#[derive(OpenApi)]
#[openapi(
    info(title = "bo", description = "A self-hosted Vertex AI Vizier v1 REST API: black-box optimisation by Gaussian-process Bayesian optimisation."),
    // The parameter tree is recursive; utoipa stops collecting at the recursion, so its parts
    // are registered here.
    components(schemas(
        wire::parameter::ParameterSpecW, wire::parameter::ConditionalParameterSpecW, wire::parameter::CategoricalValueConditionW,
        wire::parameter::IntValueConditionW, wire::parameter::DiscreteValueConditionW,
    )),
    // With keys configured (`--api-keys-file`), every `/v1/` route needs one; without, none.
    security((), ("bearer" = [])),
    tags(
        (name = "studies", description = "Studies: a search space, metrics and an algorithm"),
        (name = "trials", description = "Trials: suggested points and what was measured of them"),
        (name = "operations", description = "Long-running operations: a suggest is done when returned unless its trials took longer than the server's bound to compute; poll it then (also served under /ui/, where Google's client polls)"),
        (name = "model", description = "bo's extensions: what a study's model learned, and its predictions"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
pub struct ApiDoc;

/// Documents on every operation the errors any request can meet, whatever its route: a
/// malformed request, no key or a wrong one, a resource or project not found, a body or headers
/// over the limits, the key's rate, the database down, the request timeout.
struct CommonErrors;

impl utoipa::Modify for CommonErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{RefOr, ResponseBuilder, content::ContentBuilder};
        let errors: [(&str, &str); 8] = [
            ("400", "invalid request (the message names the field)"),
            ("401", "an API key is needed (the server has keys configured), or the key is not valid"),
            ("404", "no such resource, or a project the key does not grant"),
            ("413", "the request body is over the server's limit"),
            ("429", "the key is over its rate limit; retry after `Retry-After` seconds"),
            ("431", "the request headers are over the server's limit"),
            ("503", "the database is unavailable; retry after `Retry-After` seconds"),
            ("504", "the request took longer than the server's limit"),
        ];
        for item in openapi.paths.paths.values_mut() {
            for operation in [&mut item.get, &mut item.post, &mut item.delete, &mut item.put, &mut item.patch].into_iter().flatten() {
                for (status, description) in errors {
                    let content =
                        ContentBuilder::new().schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name("ErrorBody")))).build();
                    operation.responses.responses.entry(status.to_owned()).or_insert_with(|| {
                        RefOr::T(ResponseBuilder::new().description(description).content("application/json", content).build())
                    });
                }
            }
        }
    }
}

/// Declares the API-key scheme: `Authorization: Bearer KEY`.
struct BearerKeys;

impl utoipa::Modify for BearerKeys {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some("An API key from the server's key file; needed when the server has keys configured"))
            .build();
        components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

/// The OpenAPI document of the API: the frame, the paths of the route list, the key scheme and
/// the errors every operation can meet.
pub fn document() -> utoipa::openapi::OpenApi {
    use utoipa::Modify;
    let mut doc = ApiDoc::openapi();
    doc.merge(routes::Documented::openapi());
    BearerKeys.modify(&mut doc);
    CommonErrors.modify(&mut doc);
    without_optional_defaults(doc)
}

/// The document without a `default` on any property a schema does not require. The defaults
/// are what the server assumes for an absent field (the descriptions say so), but generators
/// read a `default` as "always present": openapi-typescript 7 made 77 optional request fields
/// (`safetyConfig`, `contexts`, `elapsedDuration`, …) required in its request types, and a
/// client written against them did not compile under `strict`.
fn without_optional_defaults(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::Schema;
    let Some(components) = doc.components.as_mut() else { return doc };
    for schema in components.schemas.values_mut() {
        let RefOr::T(Schema::Object(object)) = schema else { continue };
        let required = object.required.clone();
        for (name, property) in object.properties.iter_mut() {
            if required.contains(name) {
                continue;
            }
            match property {
                RefOr::T(Schema::Object(p)) => p.default = None,
                RefOr::T(Schema::Array(p)) => p.default = None,
                RefOr::T(Schema::OneOf(p)) => p.default = None,
                RefOr::T(Schema::AllOf(p)) => p.default = None,
                RefOr::T(Schema::AnyOf(p)) => p.default = None,
                RefOr::Ref(r) => r.default = None,
                _ => {}
            }
        }
    }
    doc
}

/// The OpenAPI document as pretty JSON with a final newline: what `openapi/openapi.json` holds.
pub fn openapi_json() -> String {
    let mut text = document().to_pretty_json().expect("the OpenAPI document serialises");
    text.push('\n');
    text
}

/// The whole application for `state` (with `/metrics` unless it has its own listener): routes;
/// `Connection: close` when a request's body was left unread; a panic guard that answers 500 in Google's error
/// shape instead of dropping the connection; request metrics; a tracing span per request naming
/// its id (and, with keys, the key's name); the request id outermost.
pub fn app(state: AppState, with_metrics: bool) -> Router {
    let metrics = state.metrics.clone();
    router(state, with_metrics)
        .layer(axum::middleware::from_fn(unread::close_when_unread))
        .layer(CatchPanicLayer::custom(|_| {
            axum::response::IntoResponse::into_response(ApiError::new(error::Code::Internal, "a handler panicked"))
        }))
        .layer(axum::middleware::from_fn_with_state(metrics, metrics::record))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &axum::extract::Request| {
            let id = request.extensions().get::<request_id::RequestId>().map_or("", |r| r.0.as_str());
            tracing::info_span!("request", id = %id, method = %request.method(), path = %request.uri().path(), key = tracing::field::Empty)
        }))
        .layer(axum::middleware::from_fn(request_id::assign))
}

/// All routes (`/metrics` among them when `with_metrics`).
pub fn router(state: AppState, with_metrics: bool) -> Router {
    let docs = SwaggerUi::new("/docs")
        .url("/openapi.json", document())
        .config(utoipa_swagger_ui::Config::from("/openapi.json").validator_url("none"));
    let mut router = routes::routes();
    if with_metrics {
        router = router.route("/metrics", get(metrics::serve));
    }
    router
        .merge(docs)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.access.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(state.access.clone(), access::guard))
        .with_state(state)
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no such resource or method: {}", uri.path()))
}

/// 405, with `Allow` naming the methods of the resource asked for. A custom verb
/// (`…/trials/1:complete`) shares its router entry with the resource (`…/trials/{trial}`), so
/// the router's own list would mix the two: Vertex's verbs take POST only, bo's read-only verbs
/// (`trials:columns`, `studies:overview`, `studies/{s}:export`, …) GET, resources GET and DELETE.
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse;
    let path = uri.path();
    let last = path.rsplit('/').next().unwrap_or_default();
    let parent = path.rsplit('/').nth(1).unwrap_or_default();
    // bo's read-only verbs take GET; Vertex's verbs take POST.
    const GET_VERBS: [&str; 5] = [":columns", ":curves", ":history", ":overview", ":export"];
    let allow = if GET_VERBS.iter().any(|v| last.ends_with(v)) {
        Some("GET,HEAD")
    } else if last.contains(':') {
        Some("POST")
    } else if matches!(parent, "studies" | "trials" | "imports") && path.starts_with("/v1/") {
        Some("GET,HEAD,DELETE")
    } else {
        None
    };
    let mut response = ApiError::new(error::Code::InvalidArgument, format!("{method} is not a method of {path}"))
        .with_status(StatusCode::METHOD_NOT_ALLOWED)
        .into_response();
    if let Some(allow) = allow {
        response.headers_mut().insert(axum::http::header::ALLOW, axum::http::HeaderValue::from_static(allow));
    }
    response
}

#[cfg(test)]
mod document_tests {
    /// `openapi/openapi.json` is generated from the code and committed. When they differ the
    /// test rewrites the file and fails, so the next run (and the commit) has the current spec.
    #[test]
    fn checked_in_openapi_matches_the_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi/openapi.json");
        let current = super::openapi_json();
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != current {
            std::fs::write(&path, &current).expect("write openapi/openapi.json");
            panic!("openapi/openapi.json was out of date and has been rewritten; review and commit it");
        }
    }

    /// The wire's description of `algorithm` names every algorithm the registry has, and no
    /// other: the one list is `bo_core::ALGORITHMS`.
    #[test]
    fn the_documented_algorithms_are_the_registered_ones() {
        let doc = serde_json::to_value(super::document()).unwrap();
        let text = doc["components"]["schemas"]["StudySpec"]["properties"]["algorithm"]["description"].as_str().unwrap().to_owned();
        let named: std::collections::BTreeSet<&str> =
            text.split('`').skip(1).step_by(2).map(|name| name.trim()).filter(|name| !name.is_empty()).collect();
        let registered: std::collections::BTreeSet<&str> = bo_core::ALGORITHMS.iter().copied().collect();
        assert_eq!(named, registered, "{text}");
    }

    #[test]
    fn every_documented_path_is_under_v1_or_health() {
        let doc = super::document();
        for path in doc.paths.paths.keys() {
            assert!(
                path.starts_with("/v1/projects/{project}/locations/{location}/") || path.ends_with("z") || path == "/v1/locations",
                "{path}"
            );
        }
    }
}
