//! What every handler shares.

use std::sync::Arc;

use bo_store::Store;

use super::access::Access;
use crate::engine::Engine;
use crate::metrics::Metrics;

/// The application state: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// Designers, the model cache and the refit pool.
    pub engine: Engine,
    /// Keys, rate and size limits, the request timeout.
    pub access: Arc<Access>,
    /// What `/metrics` reports.
    pub metrics: Arc<Metrics>,
    /// Turns at streaming an export, shared fairly between projects.
    pub exports: Arc<super::in_progress::ExportSlots>,
    /// The import commits running on this replica.
    pub commits: Arc<super::in_progress::Commits>,
}

impl AppState {
    /// The state of a service over `store` and `engine`.
    pub fn new(store: Store, engine: Engine, access: Arc<Access>, metrics: Arc<Metrics>) -> AppState {
        AppState { store, engine, access, metrics, exports: Arc::new(super::in_progress::ExportSlots::default()), commits: Arc::default() }
    }
}
