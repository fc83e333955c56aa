//! Test hooks: named points of the engine's background work where a test learns that the work
//! got there, and may hold it there or make it fail (as meilisearch's scheduler breakpoints do),
//! so background behaviour is tested in order, with no sleeps. Outside tests every hook is an
//! empty inline function.

use super::EngineError;

/// A named point of the background work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Point {
    /// A refit found another replica holding the study's refit lease, and will look again.
    LeaseBusy,
    /// A refit holds the lease and is about to fit.
    Refit,
    /// A refill of the study's queue starts.
    Refill,
    /// A suggest's proposals are about to be computed, outside the transaction.
    Propose,
    /// A study's background job has no work left and ends.
    JobEnded,
    /// A model is about to be fitted (or restored), by any path.
    Fit,
    /// An importance report is about to be computed.
    Importance,
}

#[cfg(not(test))]
pub struct Hooks;

#[cfg(not(test))]
impl Hooks {
    /// No hooks.
    pub fn new() -> Hooks {
        Hooks
    }

    /// The work reached `point`.
    #[inline(always)]
    pub async fn reached(&self, _point: Point) -> Result<(), EngineError> {
        Ok(())
    }
}

#[cfg(test)]
pub use testing::Hooks;

#[cfg(test)]
mod testing {
    use std::collections::{HashMap, HashSet};
    use std::sync::Mutex;

    use tokio::sync::{Semaphore, mpsc};

    use super::{EngineError, Point};

    /// What a test set up: points reported to it, points that wait for a release, points that
    /// fail.
    #[derive(Default)]
    pub struct Hooks {
        seen: Mutex<Option<mpsc::UnboundedSender<Point>>>,
        held: Mutex<HashMap<Point, std::sync::Arc<Semaphore>>>,
        failing: Mutex<HashSet<Point>>,
    }

    impl Hooks {
        /// No point reported, held or failing yet.
        pub fn new() -> Hooks {
            Hooks::default()
        }

        /// The work reached `point`: tell the test, wait while the point is held, fail if the
        /// test asked it to.
        pub async fn reached(&self, point: Point) -> Result<(), EngineError> {
            if let Some(tx) = self.seen.lock().unwrap().as_ref() {
                let _ = tx.send(point);
            }
            let gate = self.held.lock().unwrap().get(&point).cloned();
            if let Some(gate) = gate {
                gate.acquire().await.expect("the gate stays open").forget();
            }
            if self.failing.lock().unwrap().contains(&point) {
                return Err(EngineError::Fit(bo_core::FitError::Numerical(format!("failure injected at {point:?}"))));
            }
            Ok(())
        }

        /// From now on, every point reached is sent to the returned receiver.
        pub fn watch(&self) -> mpsc::UnboundedReceiver<Point> {
            let (tx, rx) = mpsc::unbounded_channel();
            *self.seen.lock().unwrap() = Some(tx);
            rx
        }

        /// Work reaching `point` waits there until [`Hooks::release`] lets one pass.
        pub fn hold(&self, point: Point) {
            self.held.lock().unwrap().insert(point, std::sync::Arc::new(Semaphore::new(0)));
        }

        /// Lets `n` waits at `point` pass.
        pub fn release(&self, point: Point, n: usize) {
            if let Some(gate) = self.held.lock().unwrap().get(&point) {
                gate.add_permits(n);
            }
        }

        /// Work reaching `point` fails there.
        pub fn fail(&self, point: Point) {
            self.failing.lock().unwrap().insert(point);
        }
    }
}
