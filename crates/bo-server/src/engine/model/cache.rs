//! The per-study model cache: the last fitted model of each study, evicted least-recently-used
//! first when the models' estimated memory passes the budget, so ten thousand idle studies do
//! not hold ten thousand models. Readers clone the model's `Arc` and let go of the lock before
//! any math.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::FittedModel;
use crate::sync::lock;

/// The cache.
pub struct ModelCache {
    inner: Mutex<Inner>,
    budget_bytes: usize,
    /// Notified after every insert: a suggest waiting for a model to catch up re-reads its
    /// study's model ([`ModelCache::wait_for`]).
    inserted: tokio::sync::Notify,
}

struct Inner {
    entries: HashMap<i64, (Arc<FittedModel>, u64, usize)>,
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

    /// The model of `study` at space revision `revision` once `ready` holds for it, or whatever
    /// is cached for that revision when `deadline` passes (`None` only if nothing is).
    pub async fn wait_for(
        &self,
        study: i64,
        revision: i64,
        deadline: tokio::time::Instant,
        ready: impl Fn(&FittedModel) -> bool,
    ) -> Option<Arc<FittedModel>> {
        loop {
            let inserted = self.inserted.notified();
            tokio::pin!(inserted);
            // Registered before the model is read, so an insert in between is not missed.
            inserted.as_mut().enable();
            let model = self.get(study, revision);
            if model.as_deref().is_some_and(&ready) || tokio::time::timeout_at(deadline, inserted).await.is_err() {
                return model.or_else(|| self.get(study, revision));
            }
        }
    }

    /// The model of `study`, marked as just used, if it was fitted for space revision
    /// `revision` (the caller's record of the study: a model of an older space does not know
    /// its new parameters, and one of a newer space proposes points the caller's spec lacks).
    pub fn get(&self, study: i64, revision: i64) -> Option<Arc<FittedModel>> {
        let mut inner = lock(&self.inner);
        inner.tick += 1;
        let tick = inner.tick;
        inner.entries.get_mut(&study).filter(|(e, _, _)| e.space_revision == revision).map(|(e, t, _)| {
            *t = tick;
            e.clone()
        })
    }

    /// Stores `model` for `study` unless a newer one is there; evicts to the budget.
    pub fn insert(&self, study: i64, model: Arc<FittedModel>) {
        let size = model.memory_bytes();
        let mut inner = lock(&self.inner);
        if inner.entries.get(&study).is_some_and(|(e, _, _)| e.data_version > model.data_version) {
            return;
        }
        inner.tick += 1;
        let tick = inner.tick;
        if let Some((_, _, old)) = inner.entries.insert(study, (model, tick, size)) {
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

    /// Drops the model of a deleted study.
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
    use std::collections::HashSet;

    use bo_core::{Model, ModelState};

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

    fn fitted(version: i64, bytes: usize) -> Arc<FittedModel> {
        Arc::new(FittedModel {
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
        let size = fitted(0, 100).memory_bytes();
        let cache = ModelCache::new(2 * size + size / 2);
        cache.insert(1, fitted(0, 100));
        cache.insert(2, fitted(0, 100));
        assert!(cache.get(1, 0).is_some()); // 1 is now more recent than 2
        cache.insert(3, fitted(0, 100));
        assert!(cache.get(2, 0).is_none(), "2 was the least recently used");
        assert!(cache.get(1, 0).is_some() && cache.get(3, 0).is_some());
        assert_eq!(cache.usage(), (2, 2 * size));
    }

    #[test]
    fn an_older_fit_never_replaces_a_newer_one() {
        let cache = ModelCache::new(1 << 20);
        cache.insert(1, fitted(5, 10));
        cache.insert(1, fitted(3, 10));
        assert_eq!(cache.get(1, 0).unwrap().data_version, 5);
        cache.remove(1);
        assert!(cache.get(1, 0).is_none());
        assert_eq!(cache.usage(), (0, 0));
    }
}
