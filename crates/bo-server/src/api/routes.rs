//! The one list of the API's routes: each row names a handler once, and both the router and
//! the OpenAPI document's paths are made from it (the document's path for a handler is its own
//! `#[utoipa::path]`, which a test holds to the route it is served at).
//!
//! Rows are `method handler` under the path they are routed at; a handler in `[brackets]` is
//! routed but not documented (a dispatcher), and the `verbs` are documented but served through
//! a dispatcher — axum cannot route a suffix after a parameter in one segment (`…/{trial}:stop`).

use axum::Router;
use axum::routing::MethodRouter;

use super::state::AppState;
use super::{columns, dashboard, health, model, operations, studies, transfer, trials};

/// Studies, trials and operations of one project and location.
const LOCATION: &str = "/v1/projects/{project}/locations/{location}";

/// The same under Vertex's `v1beta1`, an alias: the handlers are v1's, and an Operation names
/// the version it was asked through (see `wire::operation::ApiVersion`).
const BETA_LOCATION: &str = "/v1beta1/projects/{project}/locations/{location}";

/// Where Google's long-running-operations client polls: its REST transport takes the first of
/// Vertex's HTTP rules for `GetOperation`, which is under `/ui/`, not `/v1/`.
const UI_LOCATION: &str = "/ui/projects/{project}/locations/{location}";

macro_rules! api {
    (
        verbs: [ $( $verb:path ),+ ];
        $( $scope:ident { $( $path:literal => { $( $method:ident $( $handler:path )? $( [$dispatcher:path] )? ),+ } )+ } )+
    ) => {
        /// The documented operations, collected from the list.
        #[derive(utoipa::OpenApi)]
        #[openapi(paths( $( $( $( $( $handler, )? )+ )+ )+ $( $verb ),+ ))]
        pub struct Documented;

        /// The routes of each scope (`v1`, `ui`, `root`), from the list.
        fn scoped(scope: &str) -> Router<AppState> {
            let mut router = Router::new();
            $(
                if scope == stringify!($scope) {
                    $(
                        let mut methods: MethodRouter<AppState> = MethodRouter::new();
                        $( methods = methods.$method( $( $handler )? $( $dispatcher )? ); )+
                        router = router.route($path, methods);
                    )+
                }
            )+
            router
        }
    };
}

api! {
    verbs: [
        trials::complete_trial, trials::add_trial_measurement, trials::add_trial_parameters, trials::stop_trial,
        trials::check_trial_early_stopping_state, model::predict, studies::stop_study, studies::add_parameters, studies::get_study, transfer::export_study, transfer::append_import,
        transfer::commit_import
    ];
    v1 {
        "/studies" => { get studies::list_studies, post studies::create_study }
        "/studies:lookup" => { post studies::lookup_study }
        "/studies:overview" => { get studies::study_overview }
        "/studies:import" => { post transfer::import_study }
        "/imports/{import}" => { get transfer::get_import, delete transfer::delete_import, post [transfer::post_import_verb] }
        "/studies/{study}" => { get [transfer::get_study_or_verb], delete studies::delete_study, post [studies::post_study_verb] }
        "/studies/{study}/model" => { get model::get_model }
        "/studies/{study}/importance" => { get model::get_importance }
        "/studies/{study}/trials" => { get trials::list_trials, post trials::create_trial }
        "/studies/{study}/trials:suggest" => { post trials::suggest_trials }
        "/studies/{study}/trials:columns" => { get columns::trial_columns }
        "/studies/{study}/trials:curves" => { get columns::trial_curves }
        "/studies/{study}/trials:history" => { get columns::trial_history }
        "/studies/{study}/trials:listOptimalTrials" => { post trials::list_optimal_trials }
        "/studies/{study}/trials/{trial}" => { get trials::get_trial, delete trials::delete_trial, post [trials::post_trial_verb] }
        "/studies/{study}/operations/{operation}" => { get operations::get_operation }
        "/studies/{study}/trials/{trial}/operations/{operation}" => { get operations::get_trial_operation }
    }
    ui {
        "/studies/{study}/operations/{operation}" => { get [operations::get_operation] }
        "/studies/{study}/trials/{trial}/operations/{operation}" => { get [operations::get_trial_operation] }
    }
    root {
        "/healthz" => { get health::healthz }
        "/readyz" => { get health::readyz }
        "/v1/locations" => { get studies::list_locations }
        "/" => { get [dashboard::to_dashboard] }
        "/dashboard" => { get [dashboard::redirect] }
        "/dashboard/" => { get [dashboard::index] }
        "/dashboard/assets/{version}/{*file}" => { get [dashboard::asset] }
    }
}

/// Every route of the list, each scope at its prefix.
pub fn routes() -> Router<AppState> {
    Router::new()
        .nest(LOCATION, scoped("v1"))
        .nest(BETA_LOCATION, scoped("v1"))
        .nest(UI_LOCATION, scoped("ui"))
        .merge(scoped("root"))
        .route("/v1beta1/locations", axum::routing::get(studies::list_locations))
}
