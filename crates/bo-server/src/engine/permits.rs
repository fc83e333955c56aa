//! The engine's CPU, shared fairly: every model computation — fits, proposals, importance,
//! predictions, stopping models, fronts — runs under one of `workers` permits, and the permits
//! go round projects and studies rather than first come, first served.
//!
//! - **Granting.** A free permit goes to the waiting claim whose project holds the fewest
//!   permits; among those, a request's (someone waits for the answer) before background work,
//!   then the longest waiting.
//! - **Borrowing.** With no permit free, a claim of a project that holds none borrows one beyond
//!   the pool — one borrowed at a time — and the next permit given back repays it: a tenant
//!   never waits behind another's step that cannot pause (a factorisation, a prediction of a
//!   thousand points), and at most one computation more than `workers` runs — briefly: a holder
//!   whose project holds more permits than the borrower's gives its permit back at its next
//!   checkpoint, which repays the loan, and queues again (two tenants then share the cores
//!   evenly rather than three computations two cores).
//! - **Yielding.** A computation holding a permit reaches checkpoints between its steps
//!   (`bo_core::pace`: each likelihood evaluation, each L-BFGS iteration). There it hands its
//!   permit over and queues again when a waiting claim of another study has the better right:
//!   its project holds two or more permits fewer; or it is a request and the holder is
//!   background work of the same project or of one holding more; or the holder has run for a
//!   [`SLICE`] and the waiter's project holds no more than the holder's. A structure search of
//!   minutes thus runs in slices between other studies' fits, and a project that holds every
//!   permit gives one back within a checkpoint when another asks. Pausing never changes what a
//!   computation finds.
//!
//! [`Engine::compute`] runs the engine's CPU work under a permit: a request's on the runtime's
//! blocking pool, background work on a thread of its own at a lower CPU priority.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bo_core::FitError;
use bo_store::StudyRecord;

use super::{Engine, EngineError};
use crate::sync::lock;

/// How long a computation runs before it lets a waiting claim of a project no richer than its
/// own have the permit (at its next checkpoint).
pub const SLICE: Duration = Duration::from_millis(100);

/// Permits lent beyond the pool at once.
const MAX_BORROWED: usize = 1;

/// Who waits for a computation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// A request waits for the answer.
    Waited,
    /// Nobody waits (a refill of the suggestion queue, importance computed ahead).
    Background,
}

/// What a computation is for: its project, study and class.
#[derive(Clone, Debug)]
pub struct Claim {
    project: Arc<str>,
    study: i64,
    class: Class,
}

impl Claim {
    /// A claim of `study` in `project`.
    pub fn new(project: &str, study: i64, class: Class) -> Claim {
        Claim { project: project.into(), study, class }
    }
}

/// The pool of permits; cheap to clone (one pool).
#[derive(Clone)]
pub struct Permits {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Claims waiting: read without the lock at every checkpoint.
    waiting: AtomicUsize,
    /// Permits lent beyond the pool: read without the lock at every checkpoint.
    lent: Arc<AtomicUsize>,
    total: usize,
}

#[derive(Default)]
struct State {
    free: usize,
    /// The project that borrowed, while the loan stands.
    borrower: Option<Arc<str>>,
    /// Permits lent beyond the pool (at most one), repaid by the next given back: written only
    /// under the lock, read without it at the checkpoints.
    lent: Arc<AtomicUsize>,
    /// Permits held, by project.
    held: HashMap<Arc<str>, usize>,
    queue: Vec<Waiter>,
    next_seq: u64,
}

struct Waiter {
    seq: u64,
    claim: Claim,
    wake: Wake,
}

enum Wake {
    /// An async acquire.
    Task(tokio::sync::oneshot::Sender<()>),
    /// A computation that yielded at a checkpoint, blocked on its thread.
    Thread(std::sync::mpsc::SyncSender<()>),
}

impl State {
    fn held_by(&self, project: &str) -> usize {
        self.held.get(project).copied().unwrap_or(0)
    }

    /// The order in which waiters are granted: the poorest project first, then requests, then
    /// the longest waiting.
    fn rank(&self, w: &Waiter) -> (usize, Class, u64) {
        (self.held_by(&w.claim.project), w.claim.class, w.seq)
    }

    fn best_waiter(&self) -> Option<usize> {
        (0..self.queue.len()).min_by_key(|&i| self.rank(&self.queue[i]))
    }

    fn borrowed(&self) -> usize {
        self.lent.load(Ordering::SeqCst)
    }

    fn take(&mut self, project: &Arc<str>, borrow: bool) {
        if borrow {
            self.lent.fetch_add(1, Ordering::SeqCst);
            self.borrower = Some(project.clone());
        } else {
            self.free -= 1;
        }
        *self.held.entry(project.clone()).or_default() += 1;
    }

    fn give_back(&mut self, project: &str) {
        if self.borrowed() > 0 {
            if self.lent.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.borrower = None;
            }
        } else {
            self.free += 1;
        }
        if let Some(n) = self.held.get_mut(project) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(project);
            }
        }
    }

    /// Grants free permits to the best waiters, then lends one to a waiter whose project holds
    /// none (see the module docs); a waiter that went away meanwhile is skipped.
    fn dispatch(&mut self, waiting: &AtomicUsize) {
        loop {
            let Some(i) = self.best_waiter() else { break };
            let borrow = if self.free > 0 {
                false
            } else if self.borrowed() < MAX_BORROWED && self.held_by(&self.queue[i].claim.project) == 0 {
                true
            } else {
                break;
            };
            let w = self.queue.swap_remove(i);
            waiting.store(self.queue.len(), Ordering::SeqCst);
            self.take(&w.claim.project, borrow);
            let delivered = match w.wake {
                Wake::Task(tx) => tx.send(()).is_ok(),
                Wake::Thread(tx) => tx.send(()).is_ok(),
            };
            if !delivered {
                self.give_back(&w.claim.project);
            }
        }
    }

    fn enqueue(&mut self, claim: Claim, wake: Wake, waiting: &AtomicUsize) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.queue.push(Waiter { seq, claim, wake });
        waiting.store(self.queue.len(), Ordering::SeqCst);
        seq
    }
}

impl Permits {
    /// A pool of `total` permits (at least one).
    pub fn new(total: usize) -> Permits {
        let total = total.max(1);
        let lent = Arc::new(AtomicUsize::new(0));
        let state = State { free: total, lent: lent.clone(), ..State::default() };
        Permits { shared: Arc::new(Shared { state: Mutex::new(state), waiting: AtomicUsize::new(0), lent, total }) }
    }

    /// Permits in use (one lent beyond the pool included).
    pub fn busy(&self) -> usize {
        let state = self.shared.lock();
        self.shared.total - state.free + state.borrowed()
    }

    /// Claims waiting for a permit.
    pub fn waiting(&self) -> usize {
        self.shared.waiting.load(Ordering::SeqCst)
    }

    /// A permit for `claim`, when its turn comes (see the module docs). Dropping the future
    /// before then leaves the queue.
    pub async fn acquire(&self, claim: Claim) -> Permit {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let seq = {
            let mut state = self.shared.lock();
            let seq = state.enqueue(claim.clone(), Wake::Task(tx), &self.shared.waiting);
            state.dispatch(&self.shared.waiting);
            seq
        };
        let mut waiting = Waiting { shared: &self.shared, seq, project: claim.project.clone(), rx, granted: false };
        // The sender lives in the queue until it is used: an error means the pool is gone.
        let _ = (&mut waiting.rx).await;
        waiting.granted = true;
        Permit { shared: self.shared.clone(), claim, since: Mutex::new(Instant::now()) }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// An acquire in progress: if it is dropped before its permit arrives it leaves the queue, and
/// a permit granted in the meantime goes back.
struct Waiting<'a> {
    shared: &'a Shared,
    seq: u64,
    project: Arc<str>,
    rx: tokio::sync::oneshot::Receiver<()>,
    granted: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.granted {
            return;
        }
        let mut state = self.shared.lock();
        if let Some(i) = state.queue.iter().position(|w| w.seq == self.seq) {
            state.queue.swap_remove(i);
            self.shared.waiting.store(state.queue.len(), Ordering::SeqCst);
        } else if self.rx.try_recv().is_ok() {
            // Granted while the acquire was being dropped: give it to the next.
            state.give_back(&self.project);
            state.dispatch(&self.shared.waiting);
        }
    }
}

/// A permit: held while it lives, given back when dropped. Installed as the pace of the thread
/// that computes under it (`bo_core::pace`), it yields at checkpoints as the module docs say.
pub struct Permit {
    shared: Arc<Shared>,
    claim: Claim,
    /// When the permit was last granted.
    since: Mutex<Instant>,
}

impl Permit {
    /// Runs `work` with this permit as the thread's pace, then gives the permit back.
    pub fn run<T>(self, work: impl FnOnce() -> T) -> T {
        bo_core::pace::paced(Arc::new(self), work)
    }

    /// Whether, at a checkpoint, this permit should be given back: to repay a loan to a project
    /// holding fewer, or to go to the best waiting claim.
    fn should_yield(&self, state: &State) -> bool {
        let mine = state.held_by(&self.claim.project);
        if let Some(borrower) = &state.borrower
            && state.held_by(borrower) < mine
        {
            return true;
        }
        let Some(best) = state.best_waiter().map(|i| &state.queue[i]) else { return false };
        if best.claim.study == self.claim.study {
            return false;
        }
        let theirs = state.held_by(&best.claim.project);
        let same_project = best.claim.project == self.claim.project;
        let elapsed = lock(&self.since).elapsed();
        theirs + 1 < mine
            || (best.claim.class == Class::Waited && self.claim.class == Class::Background && (same_project || theirs < mine))
            || (elapsed >= SLICE && theirs <= mine)
    }
}

impl bo_core::pace::Pace for Permit {
    fn checkpoint(&self) {
        if self.shared.waiting.load(Ordering::SeqCst) == 0 && self.shared.lent.load(Ordering::SeqCst) == 0 {
            return;
        }
        let rx = {
            let mut state = self.shared.lock();
            if !self.should_yield(&state) {
                return;
            }
            state.give_back(&self.claim.project);
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            state.enqueue(self.claim.clone(), Wake::Thread(tx), &self.shared.waiting);
            state.dispatch(&self.shared.waiting);
            rx
        };
        // Blocked until the permit comes back; the sender lives in the queue until then.
        let _ = rx.recv();
        *lock(&self.since) = Instant::now();
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.give_back(&self.claim.project);
        state.dispatch(&self.shared.waiting);
    }
}

/// How much less CPU priority a background computation's thread takes (nice, 0–19).
const BACKGROUND_NICENESS: i32 = 10;

/// Lowers the calling thread's CPU priority by [`BACKGROUND_NICENESS`] (a thread may lower its
/// own without privileges, but not raise it again: so only on a thread of its own). Where it
/// cannot, the work runs at the usual priority.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        let me = Some(rustix::thread::gettid());
        if let Ok(now) = getpriority_process(me) {
            let _ = setpriority_process(me, (now + BACKGROUND_NICENESS).min(19));
        }
    }
}

/// A computation that panicked, as the designer failure it is.
pub(super) fn panicked(e: tokio::task::JoinError) -> EngineError {
    EngineError::Fit(FitError::Numerical(format!("the designer panicked: {e}")))
}

impl Engine {
    /// Runs `work` — the engine's CPU work: a fit, proposals, predictions, importance, a front —
    /// under a permit of the pool claimed for `study` as `class` (`permits.rs`: fair between
    /// projects and studies, yielding at the computation's checkpoints). A request's work runs
    /// on the runtime's blocking pool; background work on a thread of its own at a lower CPU
    /// priority (nice +10), so on a busy machine requests' computations go first. A panic in
    /// `work` is a designer failure, and gives the permit back.
    pub(crate) async fn compute<T: Send + 'static>(
        &self,
        study: &StudyRecord,
        class: Class,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, EngineError> {
        let permit = self.inner.permits.acquire(Claim::new(&study.project, study.id, class)).await;
        match class {
            Class::Waited => tokio::task::spawn_blocking(move || permit.run(work)).await.map_err(panicked),
            Class::Background => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                std::thread::Builder::new()
                    .name("bo-background".into())
                    .spawn(move || {
                        lower_priority();
                        let _ = tx.send(permit.run(work));
                    })
                    .map_err(|e| EngineError::Fit(FitError::Numerical(format!("no thread for a background computation: {e}"))))?;
                rx.await.map_err(|_| EngineError::Fit(FitError::Numerical("a background computation panicked".to_owned())))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    fn claim(project: &str, study: i64, class: Class) -> Claim {
        Claim::new(project, study, class)
    }

    /// A free permit goes to the poorest project's claim (here one holding none, which borrows
    /// at once), then to requests before background work, then to the longest waiting; the
    /// first permit given back repays the loan.
    #[tokio::test]
    async fn permits_go_to_the_poorest_project_then_requests_then_the_oldest() {
        let pool = Permits::new(2);
        let a1 = pool.acquire(claim("a", 1, Class::Background)).await;
        let a2 = pool.acquire(claim("a", 2, Class::Background)).await;
        assert_eq!(pool.busy(), 2);
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for (name, c) in [
            ("a3 background", claim("a", 3, Class::Background)),
            ("a4 request", claim("a", 4, Class::Waited)),
            ("b5 background", claim("b", 5, Class::Background)),
        ] {
            let (shared, seen) = (pool.clone(), order.clone());
            let queued = pool.waiting();
            waiters.push(tokio::spawn(async move {
                let permit = shared.acquire(c).await;
                seen.lock().unwrap().push(name);
                tokio::time::sleep(Duration::from_millis(20)).await;
                drop(permit);
            }));
            // Queued in this order (b5, whose project holds none, borrows at once).
            while pool.waiting() == queued && !order.lock().unwrap().contains(&name) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        assert_eq!((pool.waiting(), pool.busy()), (2, 3));
        drop(a1);
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(a2);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec!["b5 background", "a4 request", "a3 background"]);
        assert_eq!((pool.busy(), pool.waiting()), (0, 0));
    }

    /// An acquire dropped while it waits leaves the queue, and the permit goes to the next.
    #[tokio::test]
    async fn a_cancelled_acquire_leaves_the_queue() {
        let pool = Permits::new(1);
        let held = pool.acquire(claim("a", 1, Class::Waited)).await;
        let lent = pool.acquire(claim("d", 4, Class::Waited)).await;
        assert_eq!(pool.busy(), 2, "d borrowed");
        let gone = tokio::time::timeout(Duration::from_millis(20), pool.acquire(claim("b", 2, Class::Waited))).await;
        assert!(gone.is_err());
        assert_eq!(pool.waiting(), 0);
        drop(lent);
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(5), pool.acquire(claim("c", 3, Class::Waited))).await;
        assert!(again.is_ok(), "the permit was not lost");
    }

    /// Project a holds both permits with long computations that reach checkpoints; project b's
    /// claim borrows one at once and a repays the loan at its next checkpoint; project c's claim
    /// borrows in turn; a's waiting computation resumes after theirs end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_project_holding_every_permit_yields_at_a_checkpoint() {
        let pool = Arc::new(Permits::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        let mut long = Vec::new();
        for study in [1, 2] {
            let permit = pool.acquire(claim("a", study, Class::Background)).await;
            let stop = stop.clone();
            long.push(tokio::task::spawn_blocking(move || {
                permit.run(|| {
                    let mut steps = 0u64;
                    while !stop.load(Ordering::SeqCst) {
                        bo_core::pace::checkpoint();
                        std::thread::sleep(Duration::from_millis(1));
                        steps += 1;
                    }
                    steps
                })
            }));
        }
        assert_eq!(pool.busy(), 2);
        // b holds none: it borrows one beyond the pool at once; a, holding two, gives one back
        // at its next checkpoint, which repays the loan.
        let b = tokio::time::timeout(Duration::from_secs(1), pool.acquire(claim("b", 3, Class::Background))).await.expect("b borrowed");
        let started = Instant::now();
        while pool.busy() > 2 {
            assert!(started.elapsed() < Duration::from_secs(5), "a never repaid the loan");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(pool.waiting(), 1, "one of a's computations waits");
        // c holds none either: with no loan standing it borrows at once; nobody holds more
        // than c, so the loan stands until a permit is given back.
        let c = tokio::time::timeout(Duration::from_secs(1), pool.acquire(claim("c", 4, Class::Background))).await.expect("c borrowed");
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!((pool.busy(), pool.waiting()), (3, 1));
        drop((b, c));
        stop.store(true, Ordering::SeqCst);
        for l in long {
            assert!(l.await.unwrap() > 0);
        }
        assert_eq!((pool.busy(), pool.waiting()), (0, 0));
    }

    /// Within one project, a long computation gives a waiting claim of another study the permit
    /// once it has run for a slice; a claim of its own study never takes it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_computation_shares_its_permit_after_a_slice() {
        let pool = Arc::new(Permits::new(1));
        let stop = Arc::new(AtomicBool::new(false));
        let permit = pool.acquire(claim("a", 1, Class::Background)).await;
        let running = {
            let stop = stop.clone();
            tokio::task::spawn_blocking(move || {
                permit.run(|| {
                    while !stop.load(Ordering::SeqCst) {
                        bo_core::pace::checkpoint();
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
            })
        };
        let same_study = tokio::time::timeout(SLICE * 3, pool.acquire(claim("a", 1, Class::Background))).await;
        assert!(same_study.is_err(), "a claim of the running study waits for it to end");
        let started = Instant::now();
        let other = tokio::time::timeout(Duration::from_secs(5), pool.acquire(claim("a", 2, Class::Background))).await.expect("shared");
        assert!(started.elapsed() < SLICE * 5, "{:?}", started.elapsed());
        drop(other);
        stop.store(true, Ordering::SeqCst);
        running.await.unwrap();
        assert_eq!(pool.busy(), 0);
    }
}
