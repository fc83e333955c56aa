//! Precomputed suggestions of one study: a short queue filled in the background and handed out by
//! `suggest` inside its transaction, when it is fresh.
//!
//! A queue is computed at a [`Basis`] (the study's data version and next trial id) from the
//! trials of that basis: completed ones as observations, the others — and the queue's earlier
//! items — as pending. Its items are handed out in order, so the k-th item goes out as the k-th
//! trial created after the basis. A transaction at basis `now` may take `n` items when
//!
//! - `now.next_trial_id` is the basis's plus the items taken so far: no trial was created that
//!   the queue does not know (so it can never propose a point in flight twice), and
//! - `now.data_version` is at most `staleness` past the basis's: by default none, so a queued
//!   suggestion has seen every completed trial; a server may allow a few completions to have
//!   been fantasies (faster, a little less informed).
//!
//! Anything else is a miss, and the caller computes from the model. Must not compute anything:
//! that is `propose` and the engine's background jobs.

use std::collections::VecDeque;
use std::sync::Mutex;

use bo_core::Assignment;
use bo_store::Basis;

/// What a refill computed: items at a basis, and how many were taken since.
struct Batch {
    basis: Basis,
    taken: i64,
    items: VecDeque<Assignment>,
}

impl Batch {
    fn fits(&self, now: Basis, staleness: i64) -> bool {
        now.next_trial_id == self.basis.next_trial_id + self.taken
            && now.data_version >= self.basis.data_version
            && now.data_version - self.basis.data_version <= staleness
    }
}

/// One study's queue (it lives in the study's slot).
#[derive(Default)]
pub struct Queue {
    batch: Mutex<Option<Batch>>,
}

impl Queue {
    /// `n` items for a transaction at `now`, if the queue is fresh and long enough; a stale
    /// queue is dropped.
    pub fn take(&self, now: Basis, n: usize, staleness: i64) -> Option<Vec<Assignment>> {
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        let queue = batch.as_mut()?;
        if !queue.fits(now, staleness) {
            *batch = None;
            return None;
        }
        if queue.items.len() < n {
            return None;
        }
        queue.taken += n as i64;
        Some(queue.items.drain(..n).collect())
    }

    /// How many fresh items the queue holds for a study at `now`.
    pub fn fresh_len(&self, now: Basis, staleness: i64) -> usize {
        let batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        batch.as_ref().filter(|q| q.fits(now, staleness)).map_or(0, |q| q.items.len())
    }

    /// Replaces the queue with `items` computed at `basis`, unless the queue was computed at a
    /// later basis.
    pub fn put(&self, basis: Basis, items: Vec<Assignment>) {
        let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(q) = batch.as_ref()
            && (q.basis.data_version > basis.data_version || q.basis.next_trial_id + q.taken > basis.next_trial_id)
        {
            return;
        }
        *batch = Some(Batch { basis, taken: 0, items: items.into() });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bo_core::ParamValue;

    use super::*;

    fn item(i: i64) -> Assignment {
        Assignment(BTreeMap::from([("x".to_owned(), ParamValue::Int(i))]))
    }

    fn at(data_version: i64, next_trial_id: i64) -> Basis {
        Basis { data_version, next_trial_id }
    }

    #[test]
    fn items_go_out_in_order_while_no_unknown_trial_appears() {
        let q = Queue::default();
        q.put(at(4, 10), (0..3).map(item).collect());
        assert_eq!(q.fresh_len(at(4, 10), 0), 3);
        assert_eq!(q.take(at(4, 10), 2, 0), Some(vec![item(0), item(1)]));
        assert_eq!(q.take(at(4, 12), 2, 0), None, "only one left");
        assert_eq!(q.take(at(4, 12), 1, 0), Some(vec![item(2)]));
    }

    #[test]
    fn a_trial_the_queue_does_not_know_or_a_completion_makes_it_stale() {
        let q = Queue::default();
        q.put(at(4, 10), (0..3).map(item).collect());
        assert_eq!(q.take(at(4, 11), 1, 0), None, "trial 10 was created elsewhere");
        assert_eq!(q.fresh_len(at(4, 11), 0), 0, "and the stale queue is gone");
        q.put(at(4, 10), (0..3).map(item).collect());
        assert_eq!(q.take(at(5, 10), 1, 0), None, "a completion it has not seen");
        q.put(at(4, 10), (0..3).map(item).collect());
        assert_eq!(q.take(at(5, 10), 1, 1), Some(vec![item(0)]), "allowed with a staleness of one");
    }

    #[test]
    fn an_older_computation_never_replaces_a_newer_queue() {
        let q = Queue::default();
        q.put(at(5, 10), vec![item(1)]);
        q.put(at(4, 10), vec![item(2)]);
        assert_eq!(q.take(at(5, 10), 1, 0), Some(vec![item(1)]));
        q.put(at(5, 10), vec![item(3)]);
        assert_eq!(q.fresh_len(at(5, 11), 0), 0, "computed before the item taken: not put");
    }
}
