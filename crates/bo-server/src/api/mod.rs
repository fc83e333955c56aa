//! The HTTP API: Vertex AI Vizier v1 REST routes under
//! `/v1/projects/{project}/locations/{location}`, health checks, and the OpenAPI document with
//! an offline docs page. Handlers translate wire JSON to domain types, call the store (and the
//! engine for proposals) and translate back; they never run a designer themselves.

pub mod error;
pub mod extract;
pub mod health;
pub mod model;
pub mod operations;
pub mod page;
pub mod studies;
pub mod trials;
pub mod wire;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use utoipa::OpenApi;
use utoipa_swagger_ui::SwaggerUi;

use crate::state::AppState;
use error::ApiError;

/// The largest request body accepted unless configured otherwise: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

const LOCATION: &str = "/v1/projects/{project}/locations/{location}";

/// Where Google's long-running-operations client polls: its REST transport takes the first of
/// Vertex's HTTP rules for `GetOperation`, which is under `/ui/`, not `/v1/`.
const UI_LOCATION: &str = "/ui/projects/{project}/locations/{location}";

/// The OpenAPI document of the API.
#[derive(OpenApi)]
#[openapi(
    info(title = "bo", description = "A self-hosted Vertex AI Vizier v1 REST API: black-box optimisation by Gaussian-process Bayesian optimisation."),
    paths(
        studies::create_study, studies::list_studies, studies::get_study, studies::delete_study, studies::lookup_study,
        trials::suggest_trials, trials::create_trial, trials::list_trials, trials::get_trial, trials::delete_trial,
        trials::list_optimal_trials, trials::complete_trial, trials::add_trial_measurement, trials::stop_trial,
        trials::check_trial_early_stopping_state,
        operations::get_operation, operations::get_trial_operation,
        model::get_model, model::predict,
        health::healthz, health::readyz,
    ),
    // The parameter tree is recursive; utoipa stops collecting at the recursion, so its parts
    // are registered here.
    components(schemas(
        wire::study::ParameterSpecW, wire::study::ConditionalParameterSpec, wire::study::CategoricalValueCondition,
        wire::study::IntValueCondition, wire::study::DiscreteValueCondition,
    )),
    modifiers(&BearerKeys, &CommonErrors),
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

/// The OpenAPI document as pretty JSON with a final newline: what `openapi/openapi.json` holds.
pub fn openapi_json() -> String {
    let mut text = ApiDoc::openapi().to_pretty_json().expect("the OpenAPI document serialises");
    text.push('\n');
    text
}

/// All routes (`/metrics` among them when `with_metrics`).
pub fn router(state: AppState, with_metrics: bool) -> Router {
    let v1 = Router::new()
        .route("/studies", get(studies::list_studies).post(studies::create_study))
        .route("/studies:lookup", post(studies::lookup_study))
        .route("/studies/{study}", get(studies::get_study).delete(studies::delete_study).post(model::post_study_verb))
        .route("/studies/{study}/model", get(model::get_model))
        .route("/studies/{study}/trials", get(trials::list_trials).post(trials::create_trial))
        .route("/studies/{study}/trials:suggest", post(trials::suggest_trials))
        .route("/studies/{study}/trials:listOptimalTrials", post(trials::list_optimal_trials))
        .route("/studies/{study}/trials/{trial}", get(trials::get_trial).delete(trials::delete_trial).post(trials::post_trial_verb))
        .route("/studies/{study}/operations/{operation}", get(operations::get_operation))
        .route("/studies/{study}/trials/{trial}/operations/{operation}", get(operations::get_trial_operation));
    let ui = Router::new()
        .route("/studies/{study}/operations/{operation}", get(operations::get_operation))
        .route("/studies/{study}/trials/{trial}/operations/{operation}", get(operations::get_trial_operation));
    let docs = SwaggerUi::new("/docs")
        .url("/openapi.json", ApiDoc::openapi())
        .config(utoipa_swagger_ui::Config::from("/openapi.json").validator_url("none"));
    let mut router = Router::new()
        .nest(LOCATION, v1)
        .nest(UI_LOCATION, ui)
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz));
    if with_metrics {
        router = router.route("/metrics", get(crate::metrics::serve));
    }
    router
        .merge(docs)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.access.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(state.access.clone(), crate::access::guard))
        .with_state(state)
}

async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no such resource or method: {}", uri.path()))
}

/// 405, with `Allow` naming the methods of the resource asked for. A custom verb
/// (`…/trials/1:complete`) shares its router entry with the resource (`…/trials/{trial}`), so
/// the router's own list would mix the two: verbs take POST only, resources GET and DELETE.
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse;
    let path = uri.path();
    let last = path.rsplit('/').next().unwrap_or_default();
    let parent = path.rsplit('/').nth(1).unwrap_or_default();
    let allow = if last.contains(':') {
        Some("POST")
    } else if matches!(parent, "studies" | "trials") && path.starts_with("/v1/") {
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
mod tests {
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

    #[test]
    fn every_documented_path_is_under_v1_or_health() {
        let doc = <super::ApiDoc as utoipa::OpenApi>::openapi();
        for path in doc.paths.paths.keys() {
            assert!(path.starts_with("/v1/projects/{project}/locations/{location}/") || path.ends_with("z"), "{path}");
        }
    }
}
