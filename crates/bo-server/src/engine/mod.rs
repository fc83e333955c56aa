//! The engine: answers suggestions from each study's designer, keeps fitted models in a
//! per-study cache, and refits studies and precomputes their suggestions in the background. It
//! knows designers and the store, never HTTP (no axum here).
//!
//! **Suggest** ([`Engine::suggest`]) is one short store transaction holding the study's lock:
//! a client's held trials, then REQUESTED trials, then new ones — from the study's queue of
//! precomputed suggestions when it is fresh (`queue`), else from proposals computed *outside*
//! the lock just before. On a miss the transaction is rolled back and the proposals are computed
//! (`propose`) from the cached model — completed trials it has not seen are conditioned on,
//! trials in flight are fantasies — on a blocking thread, one study at a time in this process;
//! then the transaction is tried again and takes them if no trial was created meanwhile. Only
//! when a study has no cached model does the request fit one (warm-started from the stored
//! state). When the proposals are not ready within the server's bound (`max_suggest_wait`), the
//! call answers with a pending operation (`done: false`) that a background task finishes; a
//! server that stopped first finishes it at start-up ([`Engine::resume_pending`]). No designer
//! runs inside a transaction: after a few misses a suggest takes proposals computed at an older
//! basis, less any that repeat a trial created since, so it always makes progress.
//!
//! **Failures** of a designer — an error, a NaN, a panic — are failures, never an exhausted
//! space: they are logged and counted (`bo_designer_fallbacks_total`), a study without a model
//! gets its initial design (quasi-random) until a fit succeeds, and a background refit that fails
//! leaves the last model in place.
//!
//! **Background jobs**, per study and coalesced (a change during a job runs it once more, not
//! once per change), each step on a blocking thread under a bounded pool of `workers` permits:
//! a *refit* after a trial completes, is added or deleted ([`Engine::notify_changed`]); then a
//! *refill* of the queue with `prefetch` suggestions, also after a suggest leaves it short. A
//! refill stops early when the study changes under it, and takes a permit per suggestion, so a
//! study's background work holds the pool for one bounded step at a time.
//!
//! **Replicas** share nothing but the database. Trials are handed out in the store's locked
//! transaction, so any number of replicas hand each out once. A refit needs the study's refit
//! lease (a row in the database, renewed while the fit runs, expiring when its holder dies): one
//! replica refits, the others keep serving from their cached models and adopt the stored fit
//! when it lands ([`Engine::refit`]). Each replica's queue of precomputed suggestions is its own
//! and is only taken while no trial was created since, by any replica.
//!
//! The study's seed comes from its number and name only, so the same study on a fresh database
//! proposes the same points (the README walk-through relies on it).

mod cache;
mod propose;
mod queue;
mod refit;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bo_core::designer::designer_for;
use bo_core::{Assignment, ConfigError, FitError, Limits, ModelState, StudySpec, Trial};
use bo_store::{Basis, Operation, Plan, Store, StoreError, StudyRecord, SuggestOutcome, SuggestRequest, Suggested};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use cache::{Entry, ModelCache};
use propose::propose;
use queue::Queues;
pub use refit::{RefitOutcome, refit_study};

use crate::metrics::{FailedStage, Metrics, RefitResult, SuggestPath};

/// Why no proposal could be made.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The study's algorithm settings are invalid (checked at creation, so only for studies
    /// stored by an older version).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The designer failed.
    #[error(transparent)]
    Fit(#[from] FitError),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The engine's settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Background jobs running at once.
    pub workers: usize,
    /// The model cache's memory budget.
    pub cache_bytes: usize,
    /// Suggestions precomputed per study (0: none).
    pub prefetch: usize,
    /// Completions a precomputed suggestion may not have seen (as real values; it treated those
    /// trials as pending) and still be handed out.
    pub queue_staleness: i64,
    /// How long a suggest waits for its proposals before answering with a pending operation.
    pub max_suggest_wait: Duration,
    /// How long a refit lease lasts unrenewed (see [`Engine::refit`]).
    pub refit_lease: Duration,
    /// How long an ACTIVE trial's client may go unseen before the trial is handed to another
    /// (`None`: never).
    pub trial_lease: Option<Duration>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            workers: 2,
            cache_bytes: 1 << 30,
            prefetch: 4,
            queue_staleness: 0,
            max_suggest_wait: Duration::from_secs(5),
            refit_lease: Duration::from_secs(30),
            trial_lease: None,
        }
    }
}

/// How a suggest call ended.
#[derive(Debug)]
pub enum SuggestReply {
    /// Trials handed out, recorded as a finished operation.
    Done(SuggestOutcome),
    /// The call's operation (or one the client was already waiting on) is pending.
    Pending(Operation),
}

/// Attempts a suggest makes with proposals computed at the study's current basis before it
/// takes them at an older one (see [`Engine::plan`]).
const FRESH_ATTEMPTS: usize = 3;

/// What a suggest transaction should load to check stale proposals: the trials created since
/// `computed`'s basis, once the fresh attempts are spent.
fn stale_check(attempt: usize, computed: Option<&Computed>) -> Option<i64> {
    computed.filter(|_| attempt > FRESH_ATTEMPTS).map(|c| c.basis.next_trial_id)
}

/// How often a replica waiting on another's refit looks again.
const LEASE_POLL: Duration = Duration::from_millis(200);

/// Proposals computed outside the lock, and the basis they fit.
struct Computed {
    basis: Basis,
    assignments: Vec<Assignment>,
    /// Whether a model had to be fitted for them (no cached one).
    fitted: bool,
}

/// Work a study's background job still has to do.
#[derive(Clone, Copy, Default)]
struct Job {
    refit: bool,
    refill: bool,
}

struct Inner {
    store: Store,
    config: EngineConfig,
    cache: ModelCache,
    queues: Queues,
    workers: Semaphore,
    /// Studies with a background job running, and what it must still do.
    jobs: Mutex<HashMap<i64, Job>>,
    /// Per-study lock for computing proposals, so concurrent suggests on one study compute one
    /// after another instead of racing (and all but one retrying).
    proposers: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
    /// Per-study change counter, bumped by `notify_changed`: a refill stops when it moves.
    generations: Mutex<HashMap<i64, Arc<AtomicU64>>>,
    /// This process's name on refit leases: random, so every replica (and every restart) has
    /// its own.
    replica: String,
    /// Where suggest and refit times are recorded.
    metrics: Arc<Metrics>,
}

/// What the engine holds now, for `/metrics`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// Studies with background work queued or running.
    pub background_jobs: usize,
    /// Worker permits in use.
    pub workers_busy: usize,
    /// Models cached.
    pub cached_models: usize,
    /// Their estimated memory.
    pub cached_model_bytes: usize,
}

/// The engine handle; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Checks that `spec` names a known algorithm whose settings are valid and ask for no more work
/// than `limits` allow.
pub fn check_algorithm(spec: &StudySpec, limits: &Limits) -> Result<(), ConfigError> {
    let designer = designer_for(spec)?;
    bo_core::designer::check_limits(designer.as_ref(), &spec.space, limits)
}

/// The study's seed: from its number (within its project and location) and display name only,
/// so nothing another tenant does changes what a study proposes.
pub(crate) fn study_seed(study: &StudyRecord) -> u64 {
    // FNV-1a over the name, mixed with the number.
    let name_hash = study.display_name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (study.number as u64).wrapping_mul(0xd1b5_4a32_d192_ed03) ^ name_hash
}

/// A duration as the store's milliseconds.
fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn panicked(e: tokio::task::JoinError) -> EngineError {
    EngineError::Fit(FitError::Numerical(format!("the designer panicked: {e}")))
}

impl Engine {
    /// An engine over `store`, recording suggest and refit times in `metrics`.
    pub fn new(store: Store, config: &EngineConfig, metrics: Arc<Metrics>) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                store,
                config: config.clone(),
                cache: ModelCache::new(config.cache_bytes),
                queues: Queues::default(),
                workers: Semaphore::new(config.workers.max(1)),
                jobs: Mutex::default(),
                proposers: Mutex::default(),
                generations: Mutex::default(),
                replica: format!("{:016x}", rand::random::<u64>()),
                metrics,
            }),
        }
    }

    /// This replica's name on refit leases.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// What the engine holds now.
    pub fn usage(&self) -> Usage {
        let (cached_models, cached_model_bytes) = self.inner.cache.usage();
        Usage {
            background_jobs: self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner()).len(),
            workers_busy: self.inner.config.workers.max(1).saturating_sub(self.inner.workers.available_permits()),
            cached_models,
            cached_model_bytes,
        }
    }

    /// The study's trial lease (its `algorithmConfig.trialLease`, 0 meaning never), else the
    /// server's.
    fn trial_lease_ms(&self, study: &StudyRecord) -> Option<i64> {
        match study.spec.trial_lease_secs {
            Some(secs) if secs > 0.0 => Some(millis(Duration::from_secs_f64(secs))),
            Some(_) => None,
            None => self.inner.config.trial_lease.map(millis),
        }
    }

    /// Hands `count` trials to `client_id` (see the module docs).
    pub async fn suggest(&self, study: &StudyRecord, client_id: &str, count: usize) -> Result<SuggestReply, EngineError> {
        let started = Instant::now();
        let deadline = started + self.inner.config.max_suggest_wait;
        let mut computed: Option<Computed> = None;
        let mut path = SuggestPath::Queue;
        let record = |path: SuggestPath| self.inner.metrics.suggest(path, started.elapsed().as_secs_f64());
        for attempt in 1.. {
            let request = SuggestRequest {
                study_id: study.id,
                client_id,
                count,
                now_ms: crate::now_ms(),
                newer_than: stale_check(attempt, computed.as_ref()),
                finishing: None,
                trial_lease_ms: self.trial_lease_ms(study),
            };
            let offered = computed.take();
            match self
                .inner
                .store
                .suggest(request, |basis, newer, wanted| Ok::<_, EngineError>(self.plan(study, basis, newer, wanted, offered)))
                .await?
            {
                Suggested::Done(outcome) => {
                    self.after_suggest(study);
                    record(path);
                    return Ok(SuggestReply::Done(outcome));
                }
                Suggested::Waiting(op) => {
                    record(SuggestPath::Pending);
                    return Ok(SuggestReply::Pending(op));
                }
                Suggested::Miss(_) => {}
            }
            let mut task = self.spawn_compute(study.clone(), count);
            match tokio::time::timeout_at(deadline, &mut task).await {
                Ok(joined) => {
                    let c = joined.map_err(panicked)??;
                    path = if c.fitted || path == SuggestPath::Fit { SuggestPath::Fit } else { SuggestPath::Cached };
                    computed = Some(c);
                }
                Err(_) => {
                    record(SuggestPath::Pending);
                    let op = self.inner.store.begin_pending_suggest(study.id, client_id, count, crate::now_ms()).await?;
                    tracing::info!(study = study.id, operation = op.id, "suggest answered as a pending operation");
                    self.spawn_finisher(study.clone(), op.clone(), Some(task));
                    return Ok(SuggestReply::Pending(op));
                }
            }
        }
        unreachable!("the attempts go on until the trials are handed out or the wait is over")
    }

    /// New assignments for a suggest transaction at `basis`, chosen among what was computed
    /// before — never computed here, inside the transaction: a model that answers by position
    /// (cheap arithmetic, bounded by the suggestion count and the parameters); the proposals
    /// `offered` if they were computed at this basis; the queue's; after several misses, the
    /// proposals offered at an older basis, less any that repeat a trial created since (`newer`).
    /// Otherwise a miss, and the caller computes again.
    fn plan(&self, study: &StudyRecord, basis: Basis, newer: Option<&[Trial]>, wanted: usize, offered: Option<Computed>) -> Plan {
        if let Some(entry) = self.inner.cache.get(study.id)
            && let Some(points) = entry.model.suggest_indexed(u64::try_from(basis.next_trial_id - 1).unwrap_or(0), wanted)
        {
            return Plan::Ready(points);
        }
        let offered = match offered {
            Some(c) if c.basis.next_trial_id == basis.next_trial_id => {
                return Plan::Ready(c.assignments.into_iter().take(wanted).collect());
            }
            other => other,
        };
        if let Some(items) = self.inner.queues.take(study.id, basis, wanted, self.inner.config.queue_staleness) {
            return Plan::Ready(items);
        }
        if let (Some(c), Some(newer)) = (offered, newer) {
            // Other clients keep taking trials before this one's proposals land: take them anyway,
            // so a suggest always makes progress, but never one that repeats a trial of theirs.
            let repeated: HashSet<String> = newer.iter().map(|t| t.assignment.key()).collect();
            let fresh: Vec<Assignment> = c.assignments.into_iter().filter(|a| !repeated.contains(&a.key())).take(wanted).collect();
            if !fresh.is_empty() {
                return Plan::Ready(fresh);
            }
        }
        Plan::Miss
    }

    /// Computes `count` proposals for `study` outside any transaction, on its own task (so a
    /// suggest that stops waiting can hand it to the finisher).
    fn spawn_compute(&self, study: StudyRecord, count: usize) -> JoinHandle<Result<Computed, EngineError>> {
        let engine = self.clone();
        tokio::spawn(async move {
            let lock = engine.proposer(study.id);
            let _one_at_a_time = lock.lock().await;
            let started = Instant::now();
            let (basis, trials) = engine.inner.store.suggest_snapshot(study.id).await?;
            let read = started.elapsed();
            let (entry, fitted) = engine.entry_for(&study, basis, &trials).await?;
            let model = started.elapsed() - read;
            let id = study.id;
            let proposals = tokio::task::spawn_blocking(move || propose(&study, &entry, &trials, &[], count)).await.map_err(panicked)??;
            if let Some(e) = &proposals.failed {
                tracing::warn!(study = id, error = %e, "the designer failed to propose; quasi-random proposals stand in");
                engine.inner.metrics.fallback(FailedStage::Suggest);
            }
            tracing::debug!(study = id, ?read, ?model, total = ?started.elapsed(), "computed proposals");
            Ok(Computed { basis, assignments: proposals.points, fitted })
        })
    }

    /// The study's cached model, else one fitted now on `trials` (warm-started) and kept; the
    /// flag says which. A fit that fails is logged and counted, and the study's initial design
    /// (quasi-random) stands in until a later fit succeeds.
    async fn entry_for(&self, study: &StudyRecord, basis: Basis, trials: &[Trial]) -> Result<(Arc<Entry>, bool), EngineError> {
        if let Some(entry) = self.inner.cache.get(study.id) {
            return Ok((entry, false));
        }
        let warm = self.warm_state(study.id).await?;
        let entry = match refit::fit_on_blocking_thread(study, basis.data_version, trials.to_vec(), warm).await {
            Ok(entry) => entry,
            Err(EngineError::Fit(e)) => {
                tracing::warn!(study = study.id, error = %e, "the designer failed to fit; quasi-random proposals stand in until a fit succeeds");
                self.inner.metrics.fallback(FailedStage::Fit);
                Arc::new(refit::fallback_entry(study, basis.data_version, trials))
            }
            Err(e) => return Err(e),
        };
        if let Err(e) = self.keep(study.id, entry.clone()).await {
            tracing::warn!(study = study.id, error = %e, "could not keep a fitted model");
        }
        Ok((entry, true))
    }

    /// Finishes a pending suggest operation in the background: awaits `task` (or computes
    /// anew), hands the trials out, and on failure marks the operation failed.
    fn spawn_finisher(&self, study: StudyRecord, op: Operation, task: Option<JoinHandle<Result<Computed, EngineError>>>) {
        let engine = self.clone();
        tokio::spawn(async move {
            if let Err(e) = engine.finish(&study, &op, task).await {
                tracing::warn!(study = study.id, operation = op.id, error = %e, "a pending suggest failed");
                if let Err(e) =
                    engine.inner.store.fail_operation(study.id, op.id, &format!("the designer failed: {e}"), crate::now_ms()).await
                {
                    tracing::warn!(study = study.id, operation = op.id, error = %e, "could not record the failure");
                }
            }
        });
    }

    async fn finish(
        &self,
        study: &StudyRecord,
        op: &Operation,
        mut task: Option<JoinHandle<Result<Computed, EngineError>>>,
    ) -> Result<(), EngineError> {
        let bo_store::OperationKind::Suggest { client_id, .. } = &op.kind else { return Ok(()) };
        let count = op.suggestion_count.max(1) as usize;
        for attempt in 1.. {
            let computed = match task.take() {
                Some(t) => t.await.map_err(panicked)??,
                None => self.spawn_compute(study.clone(), count).await.map_err(panicked)??,
            };
            let request = SuggestRequest {
                study_id: study.id,
                client_id,
                count,
                now_ms: crate::now_ms(),
                newer_than: stale_check(attempt, Some(&computed)),
                finishing: Some(op.id),
                trial_lease_ms: self.trial_lease_ms(study),
            };
            let offered = Some(computed);
            match self
                .inner
                .store
                .suggest(request, |basis, newer, wanted| Ok::<_, EngineError>(self.plan(study, basis, newer, wanted, offered)))
                .await?
            {
                Suggested::Done(_) => {
                    tracing::info!(study = study.id, operation = op.id, "pending suggest finished");
                    self.after_suggest(study);
                    return Ok(());
                }
                Suggested::Waiting(_) => return Ok(()), // finished elsewhere
                Suggested::Miss(_) => {}
            }
        }
        unreachable!("the attempts go on until the trials are handed out")
    }

    /// Finishes the suggest operations a stopped server left pending. Call once at start-up.
    pub async fn resume_pending(&self) -> Result<usize, EngineError> {
        let pending = self.inner.store.pending_operations().await?;
        let mut resumed = 0;
        for op in pending {
            match self.inner.store.study_by_id(op.study_id).await {
                Ok(study) => {
                    self.spawn_finisher(study, op, None);
                    resumed += 1;
                }
                Err(StoreError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(resumed)
    }

    /// After trials were handed out: top the queue up if it is short.
    fn after_suggest(&self, study: &StudyRecord) {
        if self.inner.config.prefetch > 0 {
            self.schedule(study, Job { refit: false, refill: true });
        }
    }

    /// The state to warm-start a fit: the cached model's, else the stored one.
    pub async fn warm_state(&self, study_id: i64) -> Result<Option<ModelState>, EngineError> {
        refit::warm_state(&self.inner.store, &self.inner.cache, study_id).await
    }

    /// Keeps a fitted model (database and cache).
    pub async fn keep(&self, study_id: i64, entry: Arc<Entry>) -> Result<(), EngineError> {
        refit::keep(&self.inner.store, &self.inner.cache, study_id, entry).await
    }

    /// The study's model: the cached one, else one fitted now (warm-started, on a blocking
    /// thread) and kept. Failing to keep it is logged: the model is still good for the caller.
    pub async fn model(&self, study: &StudyRecord) -> Result<Arc<Entry>, EngineError> {
        if let Some(entry) = self.inner.cache.get(study.id) {
            return Ok(entry);
        }
        let (basis, trials) = self.inner.store.suggest_snapshot(study.id).await?;
        Ok(self.entry_for(study, basis, &trials).await?.0)
    }

    /// How many precomputed suggestions the study's queue holds that a suggest could take now.
    pub async fn precomputed(&self, study_id: i64) -> Result<usize, EngineError> {
        let basis = self.inner.store.study_basis(study_id).await?;
        Ok(self.inner.queues.fresh_len(study_id, basis, self.inner.config.queue_staleness))
    }

    /// The study's data changed: refit it (and refill its queue) in the background. A designer
    /// that learns nothing is not refitted: its proposals take the trials it has not seen as
    /// pending.
    pub fn notify_changed(&self, study: &StudyRecord) {
        self.generation(study.id).fetch_add(1, Ordering::SeqCst);
        let refit = designer_for(&study.spec).map_or(true, |d| d.learns());
        self.schedule(study, Job { refit, refill: true });
    }

    /// Adds `work` to the study's background job, starting one if none runs.
    fn schedule(&self, study: &StudyRecord, work: Job) {
        {
            let mut jobs = self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(job) = jobs.get_mut(&study.id) {
                job.refit |= work.refit;
                job.refill |= work.refill;
                return;
            }
            jobs.insert(study.id, work);
        }
        let engine = self.clone();
        let study = study.clone();
        tokio::spawn(async move {
            loop {
                let job = {
                    let mut jobs = engine.inner.jobs.lock().unwrap_or_else(|e| e.into_inner());
                    let Some(job) = jobs.get_mut(&study.id) else { break };
                    let work = *job;
                    if !work.refit && !work.refill {
                        jobs.remove(&study.id);
                        break;
                    }
                    *job = Job::default();
                    work
                };
                if job.refit {
                    let started = Instant::now();
                    let result = match engine.refit(&study).await {
                        Ok(RefitOutcome::Fitted { data_version }) => {
                            tracing::debug!(study = study.id, data_version, "refitted");
                            RefitResult::Fitted
                        }
                        Ok(RefitOutcome::Adopted { data_version }) => {
                            tracing::debug!(study = study.id, data_version, "adopted another replica's fit");
                            RefitResult::Adopted
                        }
                        Ok(RefitOutcome::Gone) => {
                            engine.forget(study.id);
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(study = study.id, error = %e, "background refit failed");
                            RefitResult::Failed
                        }
                    };
                    engine.inner.metrics.refit(result, started.elapsed().as_secs_f64());
                }
                if (job.refill || job.refit)
                    && let Err(e) = engine.refill(&study).await
                {
                    tracing::debug!(study = study.id, error = %e, "refill skipped");
                }
            }
        });
    }

    /// Refits the study on this replica if it can take the study's refit lease (renewing it
    /// while it fits), so a refit runs on one replica at a time. Otherwise another replica is
    /// fitting: this one keeps serving from its cached model (conditioned on the trials it has
    /// not seen) and waits until either the stored model has caught up with the data — then
    /// adopts it, the designer's model rebuilt from the stored state without a search — or the
    /// lease is free. A holder that dies stops renewing, and its lease runs out after
    /// `refit_lease`.
    async fn refit(&self, study: &StudyRecord) -> Result<RefitOutcome, EngineError> {
        let store = &self.inner.store;
        let ttl = self.inner.config.refit_lease;
        let ttl_ms = millis(ttl);
        let me = self.inner.replica.as_str();
        loop {
            if store.take_refit_lease(study.id, me, crate::now_ms(), ttl_ms).await? {
                let renewer = {
                    let (store, me, id) = (store.clone(), me.to_owned(), study.id);
                    tokio::spawn(async move {
                        loop {
                            tokio::time::sleep(ttl / 3).await;
                            if let Err(e) = store.take_refit_lease(id, &me, crate::now_ms(), ttl_ms).await {
                                tracing::warn!(study = id, error = %e, "could not renew the refit lease");
                            }
                        }
                    })
                };
                let outcome = {
                    let _permit = self.inner.workers.acquire().await;
                    refit_study(store, &self.inner.cache, study.id).await
                };
                renewer.abort();
                if let Err(e) = store.release_refit_lease(study.id, me).await {
                    tracing::warn!(study = study.id, error = %e, "could not release the refit lease (it will expire)");
                }
                return outcome;
            }
            let basis = match store.study_basis(study.id).await {
                Ok(basis) => basis,
                Err(StoreError::NotFound(_)) => return Ok(RefitOutcome::Gone),
                Err(e) => return Err(e.into()),
            };
            let cached = self.inner.cache.get(study.id).map(|e| e.data_version);
            if cached.is_some_and(|v| v >= basis.data_version) {
                return Ok(RefitOutcome::Adopted { data_version: basis.data_version });
            }
            if let Some(stored) = store.model_state(study.id).await?
                && stored.data_version >= basis.data_version
            {
                let _permit = self.inner.workers.acquire().await;
                let (basis, trials) = store.suggest_snapshot(study.id).await?;
                let entry = refit::restore_on_blocking_thread(study, basis.data_version, trials, stored.state).await?;
                self.inner.cache.insert(study.id, entry);
                return Ok(RefitOutcome::Adopted { data_version: basis.data_version });
            }
            tokio::time::sleep(LEASE_POLL).await;
        }
    }

    /// Precomputes up to `prefetch` suggestions for the study's queue from its cached model,
    /// one after another, each with the earlier ones pending; stops when the study changes.
    async fn refill(&self, study: &StudyRecord) -> Result<(), EngineError> {
        let prefetch = self.inner.config.prefetch;
        if prefetch == 0 {
            return Ok(());
        }
        if self.inner.cache.get(study.id).is_some_and(|e| e.model.suggest_indexed(0, 0).is_some()) {
            return Ok(()); // answered by position inside the suggest: nothing to precompute
        }
        let generation = self.generation(study.id);
        let started_at = generation.load(Ordering::SeqCst);
        let (basis, trials) = self.inner.store.suggest_snapshot(study.id).await?;
        if self.inner.queues.fresh_len(study.id, basis, 0) >= prefetch {
            return Ok(());
        }
        let Some(entry) = self.inner.cache.get(study.id).filter(|e| !e.fallback) else { return Ok(()) };
        let trials = Arc::new(trials);
        let mut items: Vec<Assignment> = Vec::with_capacity(prefetch);
        while items.len() < prefetch && generation.load(Ordering::SeqCst) == started_at {
            // A worker permit per item, not per refill: other studies' fits take turns between.
            let _permit = self.inner.workers.acquire().await;
            let (study, entry, trials, extra) = (study.clone(), entry.clone(), trials.clone(), items.clone());
            let proposals = tokio::task::spawn_blocking(move || propose(&study, &entry, &trials, &extra, 1)).await.map_err(panicked)??;
            if proposals.failed.is_some() || proposals.points.is_empty() {
                break; // nothing more to propose (an exhausted grid), or the designer failed: no stand-ins queued
            }
            items.extend(proposals.points);
        }
        if self.generation(study.id).load(Ordering::SeqCst) == started_at && !items.is_empty() {
            self.inner.queues.put(study.id, basis, items);
        }
        Ok(())
    }

    fn proposer(&self, study_id: i64) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.inner.proposers.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, lock| Arc::strong_count(lock) > 1 || lock.try_lock().is_err());
        map.entry(study_id).or_default().clone()
    }

    fn generation(&self, study_id: i64) -> Arc<AtomicU64> {
        self.inner.generations.lock().unwrap_or_else(|e| e.into_inner()).entry(study_id).or_default().clone()
    }

    /// Forgets a deleted study's model and queue.
    pub fn forget(&self, study_id: i64) {
        self.inner.cache.remove(study_id);
        self.inner.queues.remove(study_id);
        self.inner.generations.lock().unwrap_or_else(|e| e.into_inner()).remove(&study_id);
    }

    /// Whether any background job is queued or running (for tests and shutdown).
    pub fn busy(&self) -> bool {
        !self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bo_core::{Goal, Measurement, MetricSpec, ParamValue, TrialState};
    use bo_store::{NewTrial, StoreOptions, StoredModel};

    use super::*;

    async fn study_with_a_completed_trial(store: &Store) -> StudyRecord {
        let spec = StudySpec {
            trial_lease_secs: None,
            metrics: vec![MetricSpec { id: "f".into(), goal: Goal::Minimize }],
            space: bo_core::SearchSpace::new(vec![bo_core::ParamSpec {
                id: "x".into(),
                domain: bo_core::Domain::Double { min: 0.0, max: 1.0 },
                scale: bo_core::Scale::Linear,
                default: None,
                children: vec![],
            }])
            .unwrap(),
            algorithm: "GP_BANDIT".into(),
            algorithm_config: serde_json::Value::Null,
            observation_noise: Default::default(),
            measurement_selection: Default::default(),
            stopping: None,
        };
        let (study, _) = store.create_study("p", "l", "leased", &spec, 1).await.unwrap();
        let mut assignment = Assignment::default();
        assignment.0.insert("x".into(), ParamValue::Float(0.5));
        let done = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("f".to_owned(), 1.0)]) };
        let new = NewTrial {
            assignment,
            state: TrialState::Succeeded,
            measurements: vec![],
            final_measurement: Some(done),
            infeasible_reason: String::new(),
        };
        store.create_trial(study.id, new, 1).await.unwrap();
        study
    }

    /// While another replica holds the refit lease, this one does not fit: it waits, adopts the
    /// other's stored fit when it lands (leaving it stored as it was), and once the lease is
    /// free it refits itself.
    #[tokio::test]
    async fn a_refit_waits_for_the_lease_holder_and_adopts_its_fit() {
        let options = StoreOptions { max_connections: 4, acquire_timeout: Duration::from_secs(10) };
        let store = Store::connect(&bo_store::testing::sqlite_url(), &options).await.unwrap();
        let study = study_with_a_completed_trial(&store).await;
        let engine = Engine::new(store.clone(), &EngineConfig::default(), Arc::default());
        assert!(store.take_refit_lease(study.id, "other", crate::now_ms(), 60_000).await.unwrap());
        let waiting = tokio::spawn({
            let (engine, study) = (engine.clone(), study.clone());
            async move { engine.refit(&study).await }
        });
        tokio::time::sleep(LEASE_POLL * 3).await;
        assert!(!waiting.is_finished(), "no fit while another replica holds the lease");
        assert!(store.model_state(study.id).await.unwrap().is_none());
        // The holder's fit lands (its state: the designer's own, as a warm start would store it).
        let basis = store.study_basis(study.id).await.unwrap();
        let (_, trials) = store.suggest_snapshot(study.id).await.unwrap();
        let theirs = refit::fit_entry(&study, basis.data_version, &trials, None).unwrap();
        let stored = StoredModel { data_version: basis.data_version, state: theirs.state.clone(), fitted_at_ms: 5 };
        assert!(store.save_model_state(study.id, &stored).await.unwrap());
        let outcome = tokio::time::timeout(Duration::from_secs(30), waiting).await.unwrap().unwrap().unwrap();
        assert_eq!(outcome, RefitOutcome::Adopted { data_version: basis.data_version });
        assert_eq!(engine.inner.cache.get(study.id).map(|e| e.data_version), Some(basis.data_version));
        assert_eq!(store.model_state(study.id).await.unwrap(), Some(stored), "the adopter stores nothing");
        // The lease given back: this replica refits, and gives it back in turn.
        store.release_refit_lease(study.id, "other").await.unwrap();
        assert_eq!(engine.refit(&study).await.unwrap(), RefitOutcome::Fitted { data_version: basis.data_version });
        assert!(store.take_refit_lease(study.id, "other", crate::now_ms(), 60_000).await.unwrap(), "released after the fit");
    }
}
