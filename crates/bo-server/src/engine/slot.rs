//! The engine's per-study slot: everything it keeps for a study besides its cached model (which
//! lives in the memory-budgeted [`ModelCache`](super::ModelCache)) — the background job's
//! outstanding work, the locks that make a study's proposals and fits one at a time, the change counter a
//! refill watches, the queue of precomputed suggestions, the last importance report and the
//! decay-curve stopping model. One map, one lock, taken only to
//! find a slot; each slot's parts lock on their own and never while another is held.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use bo_core::gp::Hyperparameters;
use bo_core::stopping::decay_curve::DecayCurveModel;

use super::importance::Report;
use super::queue::Queue;

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
    /// Precomputed suggestions.
    pub queue: Queue,
    /// The last parameter-importance report.
    pub importance: Mutex<Option<Arc<Report>>>,
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
        let mut job = self.job.lock().unwrap_or_else(|e| e.into_inner());
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
        let mut job = self.job.lock().unwrap_or_else(|e| e.into_inner());
        let work = (*job)?;
        if work.is_empty() {
            *job = None;
            return None;
        }
        *job = Some(Job::default());
        Some(work)
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
        self.map.lock().unwrap_or_else(|e| e.into_inner()).entry(study_id).or_default().clone()
    }

    /// Forgets a study's slot (a job still running keeps its own handle to the end).
    pub fn remove(&self, study_id: i64) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).remove(&study_id);
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
}
