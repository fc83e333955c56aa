//! The engine's per-study slot: everything it keeps for a study besides its cached model (which
//! lives in the memory-budgeted [`ModelCache`](super::ModelCache)) — the background job's
//! outstanding work, the locks that make a study's proposals and fits one at a time, the change counter a
//! refill watches, the queue of precomputed suggestions, the last importance report and the
//! decay-curve stopping model. One map, one lock, taken only to
//! find a slot; each slot's parts lock on their own and never while another is held.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bo_core::Designer;
use bo_core::gp::Hyperparameters;
use bo_core::stopping::decay_curve::DecayCurveModel;

use super::importance::Report;
use super::queue::Queue;
use crate::sync::lock;

/// Work a study's background job still has to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Job {
    /// Fit the study's model again.
    pub refit: bool,
    /// Precompute suggestions for its queue.
    pub refill: bool,
    /// Compute its parameter importance (also done after every refit).
    pub importance: bool,
}

impl Job {
    fn is_empty(self) -> bool {
        !self.refit && !self.refill && !self.importance
    }
}

/// One study's slot.
#[derive(Default)]
pub struct Slot {
    /// The running job's outstanding work; `None` while no job runs.
    job: Mutex<Option<Job>>,
    /// Held while computing proposals, so concurrent suggests on one study compute one after
    /// another instead of racing (and all but one retrying).
    pub proposing: tokio::sync::Mutex<()>,
    /// Held while the study's model is fitted by the background refit or by a suggest that needs
    /// the model of its data version (a reproducible study's), so one data version is fitted
    /// once and in order.
    pub fitting: tokio::sync::Mutex<()>,
    /// Held while the study's trials are read into its mirror (`mirror.rs`).
    pub reading: tokio::sync::Mutex<()>,
    /// Bumped by every change of the study's data: a refill stops when it moves.
    pub generation: AtomicU64,
    /// Refills computing the next suggestion ahead (after a completion) still running, and the
    /// signal that one ended: a suggest arriving meanwhile waits for it before its first
    /// transaction, which would only miss.
    pub ahead_running: AtomicUsize,
    /// Notified whenever an ahead refill ends.
    pub ahead_ended: tokio::sync::Notify,
    /// Precomputed suggestions.
    pub queue: Queue,
    /// The last parameter-importance report.
    pub importance: Mutex<Option<Arc<Report>>>,
    /// Held while the importance report is computed, so concurrent requests compute it once.
    pub importance_computing: tokio::sync::Mutex<()>,
    /// The optimal trials as last chosen; held while they are chosen, so concurrent requests
    /// choose them once.
    pub optimal: tokio::sync::Mutex<Option<super::optimal::Optimal>>,
    /// The study's designer and the revision of its space it was built for, built from its spec
    /// on first use ([`Engine::designer`]).
    ///
    /// [`Engine::designer`]: super::Engine::designer
    pub designer: Mutex<Option<(i64, Arc<dyn Designer>)>>,
    /// The decay-curve stopping rule's model of the finished trials; held while it is fitted,
    /// so concurrent checks of one study fit it once.
    pub decay_curve: tokio::sync::Mutex<Option<CurveFit>>,
}

/// The decay-curve model fitted at a data version (`None` while too few trials finished), and
/// the last θ fitted, to warm-start the next fit.
pub struct CurveFit {
    /// The study's data version when its curves were read.
    pub data_version: i64,
    /// The model; `None` with too few finished curves (`reason` says so).
    pub model: Option<Arc<DecayCurveModel>>,
    /// Why there is no model.
    pub reason: String,
    /// The last θ fitted.
    pub warm: Option<Hyperparameters>,
}

impl Slot {
    /// Adds `work` to the study's job; true when no job runs and the caller must start one.
    pub fn add_work(&self, work: Job) -> bool {
        let mut job = lock(&self.job);
        match job.as_mut() {
            Some(running) => {
                running.refit |= work.refit;
                running.refill |= work.refill;
                running.importance |= work.importance;
                false
            }
            None => {
                *job = Some(work);
                true
            }
        }
    }

    /// The work the running job does next (what was added since it last asked, coalesced), or
    /// `None`, which ends the job.
    pub fn next_work(&self) -> Option<Job> {
        let mut job = lock(&self.job);
        let work = (*job)?;
        if work.is_empty() {
            *job = None;
            return None;
        }
        *job = Some(Job::default());
        Some(work)
    }
}

/// An ahead refill counted in its slot's `ahead_running` while it lives (see there).
pub struct AheadRunning(Arc<Slot>);

impl AheadRunning {
    /// Counts an ahead refill of `slot` until the value is dropped.
    pub fn start(slot: Arc<Slot>) -> AheadRunning {
        slot.ahead_running.fetch_add(1, Ordering::SeqCst);
        AheadRunning(slot)
    }
}

impl Drop for AheadRunning {
    fn drop(&mut self) {
        self.0.ahead_running.fetch_sub(1, Ordering::SeqCst);
        self.0.ahead_ended.notify_waiters();
    }
}

/// Every study's slot.
#[derive(Default)]
pub struct Slots {
    map: Mutex<HashMap<i64, Arc<Slot>>>,
}

impl Slots {
    /// The study's slot, made on first use.
    pub fn get(&self, study_id: i64) -> Arc<Slot> {
        lock(&self.map).entry(study_id).or_default().clone()
    }

    /// Forgets a study's slot (a job still running keeps its own handle to the end).
    pub fn remove(&self, study_id: i64) {
        lock(&self.map).remove(&study_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_added_while_a_job_runs_is_coalesced_into_one_more_round() {
        let slot = Slot::default();
        assert!(slot.add_work(Job { refit: true, ..Job::default() }), "no job ran: start one");
        assert_eq!(slot.next_work(), Some(Job { refit: true, ..Job::default() }));
        assert!(!slot.add_work(Job { refit: true, ..Job::default() }), "a job runs: it takes the work");
        assert!(!slot.add_work(Job { refill: true, ..Job::default() }));
        assert_eq!(slot.next_work(), Some(Job { refit: true, refill: true, ..Job::default() }), "three changes, one round");
        assert_eq!(slot.next_work(), None, "nothing left: the job ends");
        assert!(slot.add_work(Job { refill: true, ..Job::default() }), "a new job after the end");
    }

    #[tokio::test]
    async fn an_ahead_refill_is_counted_while_it_lives_and_its_end_wakes_a_waiter() {
        let slot = Arc::new(Slot::default());
        let running = AheadRunning::start(slot.clone());
        assert_eq!(slot.ahead_running.load(Ordering::SeqCst), 1);
        let watching = slot.clone();
        let (registered, ready) = tokio::sync::oneshot::channel();
        let waiter = tokio::spawn(async move {
            let ended = watching.ahead_ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            registered.send(()).unwrap();
            ended.await;
        });
        ready.await.unwrap();
        drop(running);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.expect("the end woke the waiter").unwrap();
        assert_eq!(slot.ahead_running.load(Ordering::SeqCst), 0);
    }
}
