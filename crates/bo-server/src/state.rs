//! What every handler shares.

use bo_store::Store;

use crate::engine::Engine;

/// The application state: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// Designers, the model cache and the refit pool.
    pub engine: Engine,
}
