//! What every handler shares.

use std::sync::Arc;

use bo_store::Store;

use super::access::Access;
use crate::engine::Engine;
use crate::metrics::Metrics;

/// Exports streaming at once, over every project; one more is a 429 to retry.
pub const MAX_EXPORTS: usize = 8;

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
    /// Turns at streaming an export ([`MAX_EXPORTS`]).
    pub exports: Arc<tokio::sync::Semaphore>,
}

impl AppState {
    /// The state of a service over `store` and `engine`.
    pub fn new(store: Store, engine: Engine, access: Arc<Access>, metrics: Arc<Metrics>) -> AppState {
        AppState { store, engine, access, metrics, exports: Arc::new(tokio::sync::Semaphore::new(MAX_EXPORTS)) }
    }
}
