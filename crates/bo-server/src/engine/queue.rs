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
//! Anything else is a miss, and the caller computes from the model.
//!
//! How many items are worth computing depends on how the study is asked ([`Queue::wanted`]):
//! when suggests come one per completion — suggest, evaluate, complete, suggest — every item
//! but the first goes stale at the next completion unused, so a refill computes one; when
//! suggests come without completions between them (a pool of workers starting, a burst), it
//! computes the server's `prefetch`. Must not compute anything: that is `propose` and the
//! engine's background jobs.

use std::collections::VecDeque;
use std::sync::Mutex;

use bo_core::Assignment;
use bo_store::Basis;

use crate::sync::lock;

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
    /// The data version of the last suggest that handed out new trials, and whether it came at
    /// the same data version as the one before it (a burst).
    demand: Mutex<Demand>,
}

#[derive(Default)]
struct Demand {
    last: Option<i64>,
    one_per_completion: bool,
}

impl Queue {
    /// `n` items for a transaction at `now`, if the queue is fresh and long enough; a stale
    /// queue is dropped.
    pub fn take(&self, now: Basis, n: usize, staleness: i64) -> Option<Vec<Assignment>> {
        let mut batch = lock(&self.batch);
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
        let batch = lock(&self.batch);
        batch.as_ref().filter(|q| q.fits(now, staleness)).map_or(0, |q| q.items.len())
    }

    /// Records a suggest that handed out new trials at `data_version`.
    pub fn suggested(&self, data_version: i64) {
        let mut demand = lock(&self.demand);
        demand.one_per_completion = demand.last.is_some_and(|last| last != data_version);
        demand.last = Some(data_version);
    }

    /// How many items a refill at `data_version` should hold, at most `prefetch`. While suggests
    /// come one per completion: one for the next suggest, none once a suggest came at this data
    /// version (the next comes after a completion, which makes any item stale). Else
    /// `prefetch`.
    pub fn wanted(&self, prefetch: usize, data_version: i64) -> usize {
        let demand = lock(&self.demand);
        match demand.one_per_completion {
            true if demand.last == Some(data_version) => 0,
            true => prefetch.min(1),
            false => prefetch,
        }
    }

    /// The items a refill at `now` computes after: the fresh queue's, in order (they are pending
    /// for what it computes); empty when the queue is not fresh at `now`.
    pub fn pending_at(&self, now: Basis) -> Vec<Assignment> {
        let batch = lock(&self.batch);
        batch.as_ref().filter(|q| q.fits(now, 0)).map_or_else(Vec::new, |q| q.items.iter().cloned().collect())
    }

    /// Appends `item`, computed at `now` after `before` items: those [`Queue::pending_at`] gave,
    /// then the ones this refill pushed. With `before` = 0 it starts a new queue unless the queue
    /// was computed at a later basis. False, and nothing kept, when the queue is no longer what
    /// the item was computed after (a suggest took an item, or another computation changed it).
    pub fn push(&self, now: Basis, before: usize, item: Assignment) -> bool {
        let mut batch = lock(&self.batch);
        match batch.as_mut() {
            Some(q) if q.fits(now, 0) && q.items.len() == before => q.items.push_back(item),
            Some(q) if q.basis.data_version > now.data_version || q.basis.next_trial_id + q.taken > now.next_trial_id => {
                return false;
            }
            Some(q) if q.fits(now, 0) && !q.items.is_empty() => return false,
            _ if before == 0 => *batch = Some(Batch { basis: now, taken: 0, items: VecDeque::from([item]) }),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bo_core::ParamValue;

    use super::*;

    fn item(i: i64) -> Assignment {
        Assignment::new(BTreeMap::from([("x".into(), ParamValue::Int(i))]))
    }

    fn at(data_version: i64, next_trial_id: i64) -> Basis {
        Basis { data_version, next_trial_id }
    }

    impl Queue {
        fn put(&self, basis: Basis, items: Vec<Assignment>) {
            for (k, item) in items.into_iter().enumerate() {
                self.push(basis, k, item);
            }
        }
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
    fn suggests_one_per_completion_want_one_item_and_a_burst_wants_them_all() {
        let q = Queue::default();
        assert_eq!(q.wanted(4, 7), 4, "nothing known yet");
        q.suggested(7);
        q.suggested(7);
        assert_eq!(q.wanted(4, 7), 4, "two suggests without a completion between them");
        q.suggested(8);
        assert_eq!(q.wanted(4, 8), 0, "a completion between two suggests, and this version was served");
        assert_eq!(q.wanted(4, 9), 1, "after the next completion: one, for the next suggest");
        q.suggested(9);
        assert_eq!(q.wanted(4, 10), 1);
        assert_eq!(q.wanted(0, 10), 0, "prefetching off stays off");
        q.suggested(9);
        assert_eq!(q.wanted(4, 9), 4, "a burst again");
    }

    #[test]
    fn an_older_computation_never_replaces_a_newer_queue() {
        let q = Queue::default();
        q.put(at(5, 10), vec![item(1)]);
        assert!(!q.push(at(4, 10), 0, item(2)));
        assert_eq!(q.take(at(5, 10), 1, 0), Some(vec![item(1)]));
        assert!(!q.push(at(5, 9), 1, item(3)), "computed before a trial the queue handed out");
        assert!(q.push(at(5, 11), 0, item(3)), "computed after the trial: it goes out next");
        assert_eq!(q.take(at(5, 11), 1, 0), Some(vec![item(3)]));
    }

    /// A refill computes after the items already queued, and appends only while the queue is
    /// still what it computed after.
    #[test]
    fn a_refill_appends_after_the_items_queued() {
        let q = Queue::default();
        assert!(q.push(at(5, 10), 0, item(1)), "an item computed ahead");
        assert_eq!(q.pending_at(at(5, 10)), vec![item(1)], "a refill at this basis computes after it");
        assert!(!q.push(at(5, 10), 0, item(2)), "computed as if first in line: refused");
        assert!(q.push(at(5, 10), 1, item(2)), "computed after it: appended");
        assert_eq!(q.take(at(5, 10), 1, 0), Some(vec![item(1)]));
        assert_eq!(q.pending_at(at(5, 11)), vec![item(2)], "after a suggest took one, the rest");
        assert!(!q.push(at(5, 10), 2, item(3)), "computed before the trial handed out: refused");
        assert!(q.push(at(5, 11), 1, item(3)));
        assert_eq!(q.fresh_len(at(5, 11), 0), 2);
        assert!(q.pending_at(at(6, 11)).is_empty(), "a completion makes it stale");
        assert!(q.push(at(6, 11), 0, item(4)), "a new queue on the new data");
    }
}
