//! The engine: answers suggestions from each study's designer, keeps fitted models in a
//! per-study cache, and refits studies and precomputes their suggestions in the background. It
//! knows designers and the store, never HTTP (no axum here). One file per protocol:
//!
//! - `suggest.rs` — a suggest, written once in order: the store's study transaction hands out
//!   held, REQUESTED and then new trials planned from proposals computed *outside* it (never
//!   inside); on a miss the proposals are computed and the transaction opened again; past the
//!   server's wait the call answers with a pending operation.
//! - `operations.rs` — pending suggest operations, finished in the background (or at start-up).
//! - `jobs.rs` — the per-study background job: a refit after the data changes, then a refill of
//!   the queue, coalesced, each step under a bounded pool of worker permits; beside it, the next
//!   suggestion computed ahead as soon as a trial completes.
//! - `lease.rs` — the refit lease that lets one replica refit while the others adopt its fit.
//! - `model/` — a study's [`FittedModel`] in one room: a fit, the quasi-random stand-in when a
//!   designer fails, and proposals, as plain CPU functions; which model a suggest uses, the
//!   warm start, the fit under a permit, the result kept; the memory-budgeted cache.
//! - `importance.rs` — parameter importance, kept per study by data version.
//! - `priors.rs` — a new study's prior studies (transfer learning), chosen or checked at
//!   creation, and their trials loaded for each fit.
//! - `permits.rs` — the pool's permits, fair between projects, and `Engine::compute`, which runs
//!   CPU work under one; `slot.rs` — everything else the engine keeps
//!   per study (job, proposal and fit locks, change counter, `queue.rs`'s precomputed suggestions);
//!   `hooks.rs` — named points where tests hold or fail the background work.
//!
//! **Failures** of a designer — an error, a NaN, a panic, fewer proposals than asked while the
//! space has points left (`model/propose.rs`) — are failures, never an exhausted space: they are
//! logged and counted (`bo_designer_fallbacks_total`), a study without a model gets its initial
//! design (quasi-random) until a fit succeeds, and a background refit that fails leaves the last
//! model in place.
//!
//! **Replicas** share nothing but the database. Trials are handed out in the store's locked
//! transaction, so any number of replicas hand each out once; each replica's queue is its own
//! and is only taken while no trial was created since, by any replica.
//!
//! The study's seed comes from its number and name only, so the same study on a fresh database
//! proposes the same points (the curl walk-through of docs/api.md relies on it) — for every call when the
//! study is *reproducible* ([`Engine::reproducible`]: a suggest then waits for the model of its
//! data version), else until a suggest races a refit.

mod grow;
mod hooks;
mod importance;
mod jobs;
mod lease;
mod mirror;
mod model;
mod operations;
mod optimal;
mod permits;
pub mod priors;
mod queue;
mod shutdown;
mod slot;
mod stopping;
mod suggest;
#[cfg(test)]
mod testing;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bo_core::designer::designer_for;
use bo_core::{ConfigError, Designer, FitError, Limits, StudySpec};
use bo_store::{Store, StoreError, StudyRecord};

pub use grow::GrowError;
pub use importance::{Answer as ImportanceAnswer, Report as ImportanceReport};
pub use model::{FittedModel, ModelCache, RefitOutcome};
pub use shutdown::Stopped;
pub use stopping::{THRESHOLD_POSITIONS, Thresholds};
pub use suggest::SuggestReply;

use crate::metrics::Metrics;
use hooks::Hooks;
use permits::{Claim, Class, Permits};
use slot::Slots;

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

/// [`EngineConfig::lag_wait`]'s default (the server's `--model-lag-wait`): long enough for a refit of a few hundred trials, short
/// enough that a suggest under load stays within a second. A loop whose objective takes
/// milliseconds, faster than the fits, then completes a few trials a second while a refit runs,
/// rather than hundreds from a model fitted on a fraction of its data (docs/journal/benchmarks.md, "The
/// held-out suite, second pass").
pub const DEFAULT_LAG_WAIT: Duration = Duration::from_millis(500);

/// The engine's settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Background jobs running at once.
    pub workers: usize,
    /// The model cache's memory budget.
    pub cache_bytes: usize,
    /// The trial mirrors' memory budget.
    pub mirror_bytes: usize,
    /// Suggestions precomputed per study (0: none).
    pub prefetch: usize,
    /// Completions a precomputed suggestion may not have seen (as real values; it treated those
    /// trials as pending) and still be handed out.
    pub queue_staleness: i64,
    /// Whether a study that does not say (`StudySettings::reproducible`) is reproducible: its
    /// suggestions come from the model fitted on exactly the data they answer, never from an
    /// older one conditioned on newer results or from timing (see [`Engine::reproducible`]).
    pub reproducible: bool,
    /// How long a suggest waits for its proposals before answering with a pending operation.
    pub max_suggest_wait: Duration,
    /// How long a suggest waits for a model fallen behind the data (`FittedModel::keeps_up`) to be
    /// refitted before it proposes from the model it has.
    pub lag_wait: Duration,
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
            mirror_bytes: 512 << 20,
            prefetch: 4,
            queue_staleness: 0,
            reproducible: false,
            max_suggest_wait: Duration::from_secs(5),
            lag_wait: DEFAULT_LAG_WAIT,
            refit_lease: Duration::from_secs(30),
            trial_lease: None,
        }
    }
}

struct Inner {
    store: Store,
    config: EngineConfig,
    cache: ModelCache,
    slots: Slots,
    /// The trials of the studies being suggested for, kept up to date by their changes.
    mirrors: mirror::Mirrors,
    /// Background jobs queued or running.
    jobs_running: AtomicUsize,
    /// Every background task, and whether the engine is stopping (`shutdown.rs`).
    background: shutdown::Background,
    /// The CPU: every model computation runs under one of these (`compute`).
    permits: Permits,
    /// Turns at the large reads (`read_turn`): half the workers, at least one.
    reads: Permits,
    /// This process's name on refit leases: random, so every replica (and every restart) has
    /// its own.
    replica: String,
    /// Where suggest and refit times are recorded.
    metrics: Arc<Metrics>,
    hooks: Hooks,
}

/// A turn at a large read ([`Engine::read_turn`]), given back when dropped.
pub struct ReadTurn(#[allow(dead_code, reason = "held for its drop")] permits::Permit);

/// A model's predictions at some points.
pub struct Predicted {
    /// The objective's, one per point.
    pub objective: Vec<bo_core::Prediction>,
    /// For a study of several metrics, each metric's, by metric id.
    pub metrics: Option<Vec<(String, Vec<bo_core::Prediction>)>>,
}

/// Why [`Engine::predict_embedded`] did not predict.
#[derive(Debug)]
pub enum EmbeddedRefusal {
    /// The study's model has no random embeddings.
    NoEmbeddings,
    /// The embedding or a point does not fit them: what is wrong, naming the field.
    Invalid(String),
}

/// The engine handle; cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

/// Checks that `spec` names a known algorithm whose settings are valid and ask for no more work
/// than `limits` allow. An open study before its first parameter is checked once it has one (a
/// designer's settings may depend on the space's size).
pub fn check_algorithm(spec: &StudySpec, limits: &Limits) -> Result<(), ConfigError> {
    if spec.space.n_params() == 0 {
        return bo_core::designer::check_name(&spec.algorithm);
    }
    let designer = designer_for(spec)?;
    bo_core::designer::check_limits(designer.as_ref(), &spec.space, limits)
}

impl Engine {
    /// The study's designer, built from its spec once per revision of its space and kept in its
    /// slot: a study's spec changes only when an open study's space grows, and its id is never
    /// reused, so no suggest, refit or job builds (parses, checks) it again, and none does
    /// inside a store transaction. A spec whose settings no longer parse (stored by an older
    /// version) is refused each time it is asked for. An open study before its first parameter
    /// has only the initial design to give (trials with no parameters).
    pub(crate) fn designer(&self, study: &StudyRecord) -> Result<Arc<dyn Designer>, ConfigError> {
        let slot = self.inner.slots.get(study.id);
        let revision = study.spec.space_revision;
        if let Some((built_for, designer)) = crate::sync::lock(&slot.designer).as_ref()
            && *built_for == revision
        {
            return Ok(designer.clone());
        }
        let built: Arc<dyn Designer> = if study.spec.space.n_params() == 0 {
            Arc::new(bo_core::designer::QuasiRandomSearch)
        } else {
            Arc::from(designer_for(&study.spec)?)
        };
        let mut kept = crate::sync::lock(&slot.designer);
        // A caller holding an older record of the study builds its own and keeps the newer.
        if kept.as_ref().is_none_or(|(built_for, _)| *built_for <= revision) {
            *kept = Some((revision, built.clone()));
        }
        Ok(built)
    }
}

/// A duration as the store's milliseconds.
fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Engine {
    /// An engine over `store`, recording suggest and refit times in `metrics`.
    pub fn new(store: Store, config: &EngineConfig, metrics: Arc<Metrics>) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                store,
                config: config.clone(),
                cache: ModelCache::new(config.cache_bytes),
                slots: Slots::default(),
                mirrors: mirror::Mirrors::new(config.mirror_bytes),
                jobs_running: AtomicUsize::new(0),
                background: shutdown::Background::default(),
                permits: Permits::new(config.workers),
                reads: Permits::new(config.workers.div_ceil(2)),
                replica: format!("{:016x}", rand::random::<u64>()),
                metrics,
                hooks: Hooks::new(),
            }),
        }
    }

    /// A turn at a large read of `project` — a page of trials, studies or columns, learning
    /// curves, the values the optimal trials are chosen from — held until its answer is built:
    /// such a read costs the database and the server up to hundreds of milliseconds of CPU, and
    /// turns are granted as permits are (the poorest project first), so one tenant's many reads
    /// at once take at most half the machine and another's get their turn.
    pub async fn read_turn(&self, project: &str, study: Option<i64>) -> ReadTurn {
        ReadTurn(self.inner.reads.acquire(Claim::new(project, study.unwrap_or(0), Class::Waited)).await)
    }

    /// This replica's name on refit leases.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// What the engine holds now.
    pub fn usage(&self) -> crate::metrics::Usage {
        let (cached_models, cached_model_bytes) = self.inner.cache.usage();
        let (_, mirrored_trial_bytes) = self.inner.mirrors.usage();
        crate::metrics::Usage {
            background_jobs: self.inner.jobs_running.load(Ordering::SeqCst),
            workers_busy: self.inner.permits.busy(),
            workers_waiting: self.inner.permits.waiting(),
            cached_models,
            cached_model_bytes,
            mirrored_trial_bytes,
        }
    }

    /// The study's model: the cached one, else one fitted now (warm-started, on a blocking
    /// thread) and kept. Failing to keep it is logged: the model is still good for the caller.
    pub async fn model(&self, study: &StudyRecord) -> Result<Arc<FittedModel>, EngineError> {
        if let Some(fitted) = self.inner.cache.get(study.id, study.spec.space_revision) {
            return Ok(fitted);
        }
        let (basis, trials) = self.trials_now(study).await?;
        Ok(self.model_for(study, basis, &trials).await?.0)
    }

    /// The study's model ([`Engine::model`]) and its description, computed under a permit of
    /// the pool: describing may compute (a GP's calibration, a subset's widening, on first use).
    pub async fn described(&self, study: &StudyRecord) -> Result<(Arc<FittedModel>, serde_json::Value), EngineError> {
        let fitted = self.model(study).await?;
        let model = fitted.model.clone();
        let described = self.compute(study, Class::Waited, move || model.describe()).await?;
        Ok((fitted, described))
    }

    /// Predictions at `points` of the study's model brought up to its data — [`Engine::model`]
    /// conditioned on the completed trials it was not fitted on (those a designer cannot observe
    /// are left out), so they reflect every result: the objective's and, for several metrics,
    /// each metric's. `Err` with what the model predicts only, if it says, when it does not
    /// predict at these points. Under a permit of the pool, as every model computation.
    pub async fn predict(
        &self,
        study: &StudyRecord,
        points: Vec<bo_core::Assignment>,
    ) -> Result<Result<Predicted, Option<&'static str>>, EngineError> {
        let (basis, trials) = self.trials_now(study).await?;
        let (fitted, _) = self.model_for(study, basis, &trials).await?;
        self.compute(study, Class::Waited, move || {
            let model = fitted.up_to_date(&trials).0;
            let predictor = model.predictor();
            match predictor.and_then(|p| p.predict(&points)) {
                Some(objective) => Ok(Predicted { objective, metrics: predictor.and_then(|p| p.predict_metrics(&points)) }),
                None => Err(predictor.and_then(|p| p.predicts_only())),
            }
        })
        .await
    }

    /// Predictions along embedding `embedding` of the study's model at points `ys` of its box,
    /// as [`Engine::predict`] makes them at parameters. `Err` with why not: the model has no
    /// embeddings, or the embedding or a point does not fit them.
    pub async fn predict_embedded(
        &self,
        study: &StudyRecord,
        embedding: usize,
        ys: Vec<Vec<f64>>,
    ) -> Result<Result<Vec<bo_core::Prediction>, EmbeddedRefusal>, EngineError> {
        let (basis, trials) = self.trials_now(study).await?;
        let (fitted, _) = self.model_for(study, basis, &trials).await?;
        self.compute(study, Class::Waited, move || {
            let model = fitted.up_to_date(&trials).0;
            let Some(embedded) = model.embedded() else { return Err(EmbeddedRefusal::NoEmbeddings) };
            let e = embedded.embeddings();
            if embedding >= e.count {
                return Err(EmbeddedRefusal::Invalid(format!(
                    "embedded.embedding: {embedding} is not one of the model's embeddings, 0 to {}",
                    e.count - 1
                )));
            }
            let h = e.half_width;
            for (i, y) in ys.iter().enumerate() {
                if y.len() != e.dimension {
                    return Err(EmbeddedRefusal::Invalid(format!(
                        "embedded.points[{i}]: {} numbers; the embeddings have dimension {}",
                        y.len(),
                        e.dimension
                    )));
                }
                if let Some(v) = y.iter().find(|v| !(v.is_finite() && v.abs() <= h)) {
                    return Err(EmbeddedRefusal::Invalid(format!("embedded.points[{i}]: {v} is outside the box [-{h}, {h}]")));
                }
            }
            match embedded.predictive_embedded(embedding, &ys) {
                Some(p) => Ok(p.iter().map(bo_core::designer::Predictive::summary).collect()),
                None => Err(EmbeddedRefusal::Invalid(format!(
                    "embedded.embedding: embedding {embedding} has no model yet (it is still in its initial design)"
                ))),
            }
        })
        .await
    }

    /// How many precomputed suggestions the study's queue holds that a suggest could take now.
    pub async fn precomputed(&self, study: &StudyRecord) -> Result<usize, EngineError> {
        let basis = self.inner.store.study_basis(study.id).await?;
        Ok(self.inner.slots.get(study.id).queue.fresh_len(basis, self.staleness(study)))
    }

    /// Whether `study` is reproducible — its own setting, else the server's: its suggestions
    /// come from the model fitted on exactly the data they answer (a suggest waits for it),
    /// queued ones only where they equal what a suggest would compute, so the same calls in the
    /// same order give the same trials whatever the timing.
    pub(crate) fn reproducible(&self, study: &StudyRecord) -> bool {
        study.settings.reproducible.unwrap_or(self.inner.config.reproducible)
    }

    /// Completions a queued suggestion of `study` may not have seen: none for a reproducible
    /// study, else the server's setting.
    fn staleness(&self, study: &StudyRecord) -> i64 {
        if self.reproducible(study) { 0 } else { self.inner.config.queue_staleness }
    }

    /// The study's basis and every trial, from its mirror brought up to date (see `mirror.rs`):
    /// what `Store::suggest_snapshot` reads, reading only the trials changed since the last time.
    /// A study the mirrors do not hold is read whole, as a large read: under a turn
    /// ([`Engine::read_turn`]), so few such reads hold their trials in memory at once.
    pub(crate) async fn trials_now(&self, study: &StudyRecord) -> Result<(bo_store::Basis, Arc<Vec<bo_core::Trial>>), EngineError> {
        let slot = self.inner.slots.get(study.id);
        let cold = || self.read_turn(&study.project, Some(study.id));
        self.inner.mirrors.snapshot(&self.inner.store, study.id, &slot.reading, cold).await
    }

    /// Forgets a deleted study's model, queue, trials and slot.
    pub fn forget(&self, study_id: i64) {
        self.inner.cache.remove(study_id);
        self.inner.mirrors.remove(study_id);
        self.inner.slots.remove(study_id);
    }

    /// Whether any background job is queued or running (for tests and shutdown).
    pub fn busy(&self) -> bool {
        self.inner.jobs_running.load(Ordering::SeqCst) > 0
    }
}
