//! What every handler shares.

use bo_store::Store;

/// The application state: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
}
