//! The per-study model cache: the last fitted model of each study, evicted least-recently-used
//! first when the models' estimated memory passes the budget, so ten thousand idle studies do
//! not hold ten thousand models. Readers clone the entry's `Arc` and let go of the lock before
//! any math.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use bo_core::{Model, ModelState};

use crate::sync::lock;

/// The fewest completed trials, and the fraction of those a model was fitted on, that a model
/// may not have been fitted on and still propose: it conditions on them (`cpu::up_to_date`),
/// but its hyperparameters, `AUTO`'s choice of model and the trust region are theirs to change.
/// A client that completes trials faster than the study is fitted (an objective of
/// milliseconds, many workers) otherwise proposes for long from a model fitted on a fraction of
/// its data: on the held-out suite's problems of low effective dimension in 25–100 dimensions,
/// whose objectives take microseconds, the last fit of 150 trials had seen 30–97 of them, and
/// `AUTO` ended far behind the same server paced to fit every trial (docs/journal/benchmarks.md, "The
/// held-out suite, second pass"). Past this lag a suggest waits a bounded time (the engine's
/// `lag_wait`) for the refit to catch up, and no suggestion is precomputed from the model.
const MODEL_LAG_MIN: usize = 4;
/// See [`MODEL_LAG_MIN`].
const MODEL_LAG_FRACTION: f64 = 0.25;

/// A fitted model and what it was fitted on.
pub struct Entry {
    /// The study's `data_version` at the fit.
    pub data_version: i64,
    /// The revision of the study's space it was fitted for: an open study's space grows, and a
    /// model of another revision is never used ([`ModelCache::get`]).
    pub space_revision: i64,
    /// The trials (ids) the model has seen as completed.
    pub trial_ids: HashSet<i64>,
    /// How many observations the designer was fitted on: all of them, or a large study's subset
    /// (`bo_core::designer::subset`); 0 for a designer that learns nothing, or the stand-in.
    pub fitted_on: usize,
    /// The model.
    pub model: Arc<dyn Model>,
    /// Its state, to warm-start the next fit.
    pub state: ModelState,
    /// The designer failed and this is the quasi-random stand-in: never stored, never a warm
    /// start, replaced by the next fit that succeeds.
    pub fallback: bool,
    /// Whether the designer learns from data (`Designer::learns`): a model of one that does not
    /// answers as well for newer data as for its own (false for the stand-in).
    pub learns: bool,
}

impl Entry {
    /// Whether the model may propose for data at `data_version` outside a reproducible study:
    /// fitted on it (or newer), or having seen all but a few of `trials`' completed ones
    /// ([`MODEL_LAG_MIN`], [`MODEL_LAG_FRACTION`]); a stand-in always may (a fit just failed).
    pub fn keeps_up(&self, data_version: i64, trials: &[bo_core::Trial]) -> bool {
        if self.fallback || self.data_version >= data_version {
            return true;
        }
        let allowed = MODEL_LAG_MIN.max((MODEL_LAG_FRACTION * self.trial_ids.len() as f64) as usize);
        let mut unseen = 0;
        for t in trials {
            if t.state.is_completed() && !self.trial_ids.contains(&t.id) {
                unseen += 1;
                if unseen > allowed {
                    return false;
                }
            }
        }
        true
    }

    /// An estimate of the memory the entry holds, in bytes: the model's own estimate (checked
    /// against a counting allocator for every designer in bo-core's `tests/memory.rs`), the ids
    /// of the trials it has seen, and its state (as JSON in memory, several times its text).
    pub fn memory_bytes(&self) -> usize {
        self.model.memory_bytes() + 16 * self.trial_ids.capacity() + 8 * self.state.0.to_string().len()
    }
}

/// The cache.
pub struct ModelCache {
    inner: Mutex<Inner>,
    budget_bytes: usize,
    /// Notified after every insert: a suggest waiting for a model to catch up re-reads its
    /// study's entry ([`ModelCache::wait_for`]).
    inserted: tokio::sync::Notify,
}

struct Inner {
    entries: HashMap<i64, (Arc<Entry>, u64, usize)>,
    tick: u64,
    bytes: usize,
}

impl ModelCache {
    /// A cache holding models up to `budget_bytes` of estimated memory (at least one model).
    pub fn new(budget_bytes: usize) -> ModelCache {
        ModelCache {
            inner: Mutex::new(Inner { entries: HashMap::new(), tick: 0, bytes: 0 }),
            budget_bytes,
            inserted: tokio::sync::Notify::new(),
        }
    }

    /// The entry of `study` at space revision `revision` once `ready` holds for it, or whatever
    /// is cached for that revision when `deadline` passes (`None` only if nothing is).
    pub async fn wait_for(
        &self,
        study: i64,
        revision: i64,
        deadline: tokio::time::Instant,
        ready: impl Fn(&Entry) -> bool,
    ) -> Option<Arc<Entry>> {
        loop {
            let inserted = self.inserted.notified();
            tokio::pin!(inserted);
            // Registered before the entry is read, so an insert in between is not missed.
            inserted.as_mut().enable();
            let entry = self.get(study, revision);
            if entry.as_deref().is_some_and(&ready) || tokio::time::timeout_at(deadline, inserted).await.is_err() {
                return entry.or_else(|| self.get(study, revision));
            }
        }
    }

    /// The entry of `study`, marked as just used, if it was fitted for space revision
    /// `revision` (the caller's record of the study: a model of an older space does not know
    /// its new parameters, and one of a newer space proposes points the caller's spec lacks).
    pub fn get(&self, study: i64, revision: i64) -> Option<Arc<Entry>> {
        let mut inner = lock(&self.inner);
        inner.tick += 1;
        let tick = inner.tick;
        inner.entries.get_mut(&study).filter(|(e, _, _)| e.space_revision == revision).map(|(e, t, _)| {
            *t = tick;
            e.clone()
        })
    }

    /// Stores `entry` for `study` unless a newer one is there; evicts to the budget.
    pub fn insert(&self, study: i64, entry: Arc<Entry>) {
        let size = entry.memory_bytes();
        let mut inner = lock(&self.inner);
        if inner.entries.get(&study).is_some_and(|(e, _, _)| e.data_version > entry.data_version) {
            return;
        }
        inner.tick += 1;
        let tick = inner.tick;
        if let Some((_, _, old)) = inner.entries.insert(study, (entry, tick, size)) {
            inner.bytes -= old;
        }
        inner.bytes += size;
        while inner.bytes > self.budget_bytes && inner.entries.len() > 1 {
            let Some((&victim, _)) = inner.entries.iter().filter(|(id, _)| **id != study).min_by_key(|(_, (_, t, _))| *t) else { break };
            if let Some((_, _, freed)) = inner.entries.remove(&victim) {
                inner.bytes -= freed;
            }
        }
        drop(inner);
        self.inserted.notify_waiters();
    }

    /// Drops the entry of a deleted study.
    pub fn remove(&self, study: i64) {
        let mut inner = lock(&self.inner);
        if let Some((_, _, freed)) = inner.entries.remove(&study) {
            inner.bytes -= freed;
        }
    }

    /// (entries, estimated bytes), for tests and metrics.
    pub fn usage(&self) -> (usize, usize) {
        let inner = lock(&self.inner);
        (inner.entries.len(), inner.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sized(usize);
    impl Model for Sized {
        fn suggest(
            &self,
            _: &[bo_core::Assignment],
            _: usize,
            _: &mut dyn rand::Rng,
        ) -> Result<Vec<bo_core::Assignment>, bo_core::FitError> {
            Ok(vec![])
        }
        fn memory_bytes(&self) -> usize {
            self.0
        }
    }

    fn entry(version: i64, bytes: usize) -> Arc<Entry> {
        Arc::new(Entry {
            data_version: version,
            space_revision: 0,
            trial_ids: HashSet::new(),
            fitted_on: 0,
            model: Arc::new(Sized(bytes)),
            state: ModelState::default(),
            fallback: false,
            learns: true,
        })
    }

    #[test]
    fn evicts_the_least_recently_used_past_the_budget() {
        let size = entry(0, 100).memory_bytes();
        let cache = ModelCache::new(2 * size + size / 2);
        cache.insert(1, entry(0, 100));
        cache.insert(2, entry(0, 100));
        assert!(cache.get(1, 0).is_some()); // 1 is now more recent than 2
        cache.insert(3, entry(0, 100));
        assert!(cache.get(2, 0).is_none(), "2 was the least recently used");
        assert!(cache.get(1, 0).is_some() && cache.get(3, 0).is_some());
        assert_eq!(cache.usage(), (2, 2 * size));
    }

    #[test]
    fn an_older_fit_never_replaces_a_newer_one() {
        let cache = ModelCache::new(1 << 20);
        cache.insert(1, entry(5, 10));
        cache.insert(1, entry(3, 10));
        assert_eq!(cache.get(1, 0).unwrap().data_version, 5);
        cache.remove(1);
        assert!(cache.get(1, 0).is_none());
        assert_eq!(cache.usage(), (0, 0));
    }
}
