//! Stopping in order: on shutdown the engine takes no new background work, lets what runs
//! finish within the grace period, and gives back the refit leases of fits still running after
//! it, all before the database pool closes — so a stopping server neither fails its own
//! background work against a closed pool nor leaves another replica waiting out a lease.
//! Background work here: a study's job (refit, refill, importance), the suggestion computed
//! ahead, a pending suggest's finisher. Must not: cancel a fit (it runs on a blocking thread and
//! simply ends with the process), or hold up the HTTP server's own drain.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::Engine;
use crate::sync::lock;

/// The engine's background tasks and whether it is stopping.
#[derive(Default)]
pub(super) struct Background {
    running: AtomicUsize,
    ended: Notify,
    stopping: AtomicBool,
    /// Studies whose refit lease this replica holds now.
    leases: Mutex<HashSet<i64>>,
}

/// One background task, counted until dropped.
pub(super) struct Task(Engine);

impl Drop for Task {
    fn drop(&mut self) {
        let background = &self.0.inner.background;
        background.running.fetch_sub(1, Ordering::SeqCst);
        background.ended.notify_waiters();
    }
}

/// What [`Engine::shutdown`] found.
#[derive(Debug, PartialEq, Eq)]
pub struct Stopped {
    /// Background tasks still running when the grace period ended.
    pub unfinished: usize,
    /// Refit leases given back for fits still running then.
    pub leases_released: usize,
}

impl Engine {
    /// A background task starting, counted until the value is dropped; `None` when the engine is
    /// stopping (the task should not start).
    pub(super) fn background_task(&self) -> Option<Task> {
        let background = &self.inner.background;
        background.running.fetch_add(1, Ordering::SeqCst);
        let task = Task(self.clone());
        (!background.stopping.load(Ordering::SeqCst)).then_some(task)
    }

    /// Whether the engine is stopping: background work ends at its next step, and its failures
    /// (a closed pool) are expected, not errors.
    pub(super) fn stopping(&self) -> bool {
        self.inner.background.stopping.load(Ordering::SeqCst)
    }

    /// This replica holds (`true`) or gave back (`false`) the study's refit lease.
    pub(super) fn lease_held(&self, study_id: i64, held: bool) {
        let mut leases = lock(&self.inner.background.leases);
        if held {
            leases.insert(study_id);
        } else {
            leases.remove(&study_id);
        }
    }

    /// Stops the background work: none starts from now on; what runs is waited for up to
    /// `grace`; the refit leases of fits still running then are given back, so another replica
    /// can take the study at once. Call before closing the store.
    pub async fn shutdown(&self, grace: Duration) -> Stopped {
        let background = &self.inner.background;
        background.stopping.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let ended = background.ended.notified();
            if background.running.load(Ordering::SeqCst) == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                break;
            }
        }
        let unfinished = background.running.load(Ordering::SeqCst);
        let held: Vec<i64> = lock(&background.leases).drain().collect();
        let mut leases_released = 0;
        for study in held {
            match self.inner.store.release_refit_lease(study, &self.inner.replica).await {
                Ok(()) => leases_released += 1,
                Err(e) => tracing::warn!(study, error = %e, "could not release the refit lease at shutdown (it will expire)"),
            }
        }
        if unfinished > 0 {
            tracing::info!(
                unfinished,
                leases_released,
                grace = ?grace,
                "background work still running at shutdown is left to end with the process; its studies are refitted by the next replica to need them"
            );
        }
        Stopped { unfinished, leases_released }
    }
}
