//! The one way the server takes a `std::sync::Mutex`: a lock poisoned by a panic on another
//! thread is taken as it is. The data these locks guard (caches, queues, counters, maps of
//! per-study slots) is whole between statements, and a designer's panic is caught on its own
//! thread, never under one of them; refusing every later request for a study because one thread
//! panicked would be worse than going on.
//!
//! Must not: be held across an `.await` (use `tokio::sync::Mutex` there).

use std::sync::{Mutex, MutexGuard, PoisonError};

/// `mutex`, locked, poisoned or not.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
