//! Cooperative pauses in long computations. A caller that runs a fit or a search on a thread
//! may install a [`Pace`] for that thread ([`paced`]); the computation calls [`checkpoint`]
//! between its steps — each likelihood evaluation of a fit or a structure search, each L-BFGS
//! iteration — where the pace may hold the thread for a while (the service lets another
//! tenant's computation have the CPU there) before it goes on.
//!
//! A pause never changes a result: a pace learns nothing of the computation and cannot alter
//! it, so a computation gives the same answer paced or not. Without a pace a checkpoint does
//! nothing. This is bo-core's one piece of thread-local state; threads a computation spawns
//! itself (scoped threads) have none, and run within their caller's turn.

use std::cell::RefCell;
use std::sync::Arc;

/// What a checkpoint calls: it may block the calling thread, and must return.
pub trait Pace: Send + Sync {
    /// Called between steps of a computation on the thread it was installed for.
    fn checkpoint(&self);
}

thread_local! {
    static PACE: RefCell<Option<Arc<dyn Pace>>> = const { RefCell::new(None) };
}

/// Runs `work` with `pace` installed on this thread (the one installed before comes back after,
/// also when `work` panics).
pub fn paced<R>(pace: Arc<dyn Pace>, work: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<dyn Pace>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            PACE.with(|p| *p.borrow_mut() = before);
        }
    }
    let _restore = Restore(PACE.with(|p| p.borrow_mut().replace(pace)));
    work()
}

/// A point between two steps of a computation: the installed pace, if any, may pause here.
#[inline]
pub fn checkpoint() {
    // Cloned out first, so a pace that itself computes never finds the cell borrowed.
    let pace = PACE.with(|p| p.borrow().clone());
    if let Some(pace) = pace {
        pace.checkpoint();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Count(AtomicUsize);
    impl Pace for Count {
        fn checkpoint(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A fit reaches its checkpoints under a pace, and gives the same answer as without one.
    #[test]
    fn a_paced_fit_reaches_checkpoints_and_is_unchanged() {
        use rand::SeedableRng;
        let x: Vec<Vec<f64>> = (0..30).map(|i| vec![i as f64 / 30.0, (i * 7 % 30) as f64 / 30.0]).collect();
        let y: Vec<f64> = x.iter().map(|p| (3.0 * p[0]).sin() + p[1] * p[1]).collect();
        let fit = || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(4);
            let kernel = crate::kernel::matern52(vec![0, 1], 0.5, (0.01, 10.0));
            crate::gp::fit(Box::new(kernel), x.clone(), &y, &crate::gp::FitConfig::default(), None, &mut rng).unwrap().hyperparameters()
        };
        let plain = fit();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let paced_result = paced(count.clone(), fit);
        assert_eq!(plain, paced_result);
        assert!(count.0.load(Ordering::SeqCst) > 10, "{} checkpoints", count.0.load(Ordering::SeqCst));
        checkpoint(); // none installed now: nothing happens
        assert!(count.0.load(Ordering::SeqCst) > 10);
    }
}
