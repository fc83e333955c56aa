//! The per-study background job: after the data changes ([`Engine::notify_changed`]) a *refit*
//! (through the refit lease, `lease.rs`), then a *refill* of the queue with as many suggestions
//! as the study's demand wants (`Queue::wanted`: one while suggests come one per completion,
//! else `prefetch`), also after a suggest leaves the queue short. Beside the job, at once, the
//! next suggestion *ahead* — from the cached model conditioned on the new results — so a client
//! that completes a trial and asks for the next finds it computed or being computed (a
//! reproducible study skips it: its suggestions come from the refitted model only). Jobs are
//! coalesced — a change during a job runs it once more, not once per change (the slot's
//! outstanding work) — and each step runs on a blocking thread under the bounded pool of
//! `workers` permits. A refill stops early when the study changes under it, and takes a permit
//! per suggestion, so a study's background work holds the pool for one bounded step at a time.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bo_core::{Assignment, Trial};
use bo_store::{Basis, StudyRecord};
use tokio::time::Instant;

use super::hooks::Point;
use super::model::{FittedModel, RefitOutcome};
use super::permits::Class;
use super::slot::{AheadRunning, Job, Slot};
use super::{Engine, EngineError};
use crate::metrics::RefitResult;
use crate::sync::lock;

impl Engine {
    /// The study's data changed: refit it (and refill its queue) in the background. A designer
    /// that learns nothing is not refitted: its proposals take the trials it has not seen as
    /// pending.
    pub fn notify_changed(&self, study: &StudyRecord) {
        self.inner.slots.get(study.id).generation.fetch_add(1, Ordering::SeqCst);
        let refit = self.designer(study).map_or(true, |d| d.learns());
        if refit
            && !self.reproducible(study)
            && let Some(task) = self.background_task()
        {
            // At once, not behind a refit of older data the job may be busy with.
            let (engine, study) = (self.clone(), study.clone());
            let running = AheadRunning::start(self.inner.slots.get(study.id));
            tokio::spawn(async move {
                let (_running, _task) = (running, task);
                if let Err(e) = engine.refill(&study, true).await {
                    tracing::debug!(study = study.id, error = %e, "next suggestion not precomputed");
                }
            });
        }
        self.schedule(study, Job { refit, refill: true, importance: false });
    }

    /// Schedules the study's parameter importance in its background job.
    pub(super) fn schedule_importance(&self, study: &StudyRecord) {
        self.schedule(study, Job { importance: true, ..Job::default() });
    }

    /// Adds `work` to the study's background job, starting one if none runs.
    /// None starts once the engine is stopping, and a running one ends at its next step.
    pub(super) fn schedule(&self, study: &StudyRecord, work: Job) {
        let Some(task) = self.background_task() else { return };
        let slot = self.inner.slots.get(study.id);
        if !slot.add_work(work) {
            return;
        }
        self.inner.jobs_running.fetch_add(1, Ordering::SeqCst);
        let engine = self.clone();
        let study = study.clone();
        tokio::spawn(async move {
            let _task = task;
            while let Some(job) = slot.next_work() {
                if engine.stopping() {
                    break;
                }
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
                        Err(e) if engine.stopping() => {
                            tracing::debug!(study = study.id, error = %e, "background refit ended by the shutdown");
                            break;
                        }
                        Err(e) => {
                            tracing::warn!(study = study.id, error = %e, "background refit failed");
                            RefitResult::Failed
                        }
                    };
                    engine.inner.metrics.refit(result, started.elapsed().as_secs_f64());
                }
                if let Err(e) = engine.refill(&study, false).await {
                    tracing::debug!(study = study.id, error = %e, "refill skipped");
                }
                // Importance, once someone has asked for it: kept current after each refit.
                let asked = lock(&slot.importance).is_some();
                if (job.importance || (job.refit && asked))
                    && let Err(e) = engine.importance_in_background(&study).await
                {
                    tracing::warn!(study = study.id, error = %e, "importance not computed");
                }
            }
            engine.inner.jobs_running.fetch_sub(1, Ordering::SeqCst);
            let _ = engine.inner.hooks.reached(Point::JobEnded).await;
        });
    }

    /// Computes the study's importance at its current data version (once per version: a
    /// request may have computed it meanwhile).
    async fn importance_in_background(&self, study: &StudyRecord) -> Result<(), EngineError> {
        self.current_importance(study, Class::Background).await?;
        Ok(())
    }

    /// Precomputes suggestions for the study's queue from its cached model — for a reproducible
    /// study only the model of the current data version — one after another, each with the
    /// earlier ones pending, under the study's proposing lock (a suggest waiting for it takes
    /// the result); stops when the study changes. `ahead`: one, the next suggest's; else as many
    /// as the study's demand wants (`Queue::wanted`).
    async fn refill(&self, study: &StudyRecord, ahead: bool) -> Result<(), EngineError> {
        if self.inner.config.prefetch == 0 {
            return Ok(());
        }
        if !ahead {
            self.inner.hooks.reached(Point::Refill).await?;
        }
        if self
            .inner
            .cache
            .get(study.id, study.spec.space_revision)
            .is_some_and(|e| e.model.positional().is_some_and(|p| p.suggest_indexed(0, 0).is_some()))
        {
            return Ok(()); // answered by position inside the suggest: nothing to precompute
        }
        let slot = self.inner.slots.get(study.id);
        let started_at = slot.generation.load(Ordering::SeqCst);
        let started = Instant::now();
        let mut read: Option<Read> = None;
        let mut items: Vec<Assignment> = Vec::new();
        loop {
            // The proposing lock per item — from the read to the first item in one hold — so a
            // suggest waiting for it takes the item instead of computing the same; each item's
            // computation under a permit of its own, other studies' work taking turns between.
            let _turn = slot.proposing.lock().await;
            if slot.generation.load(Ordering::SeqCst) != started_at {
                break;
            }
            let Read { basis, trials, fitted, wanted, queued } = match &read {
                Some(r) => r,
                None => match self.read_for_refill(study, &slot, ahead).await? {
                    Some(r) => read.insert(r),
                    None => break,
                },
            };
            if queued.len() + items.len() >= *wanted {
                break;
            }
            let item_started = Instant::now();
            let extra: Vec<Assignment> = queued.iter().chain(&items).cloned().collect();
            let before = extra.len();
            let (owned, fitted, trials) = (study.clone(), fitted.clone(), trials.clone());
            // The next suggestion ahead is what a client waits for; a refill of the queue is not.
            let class = if ahead { Class::Waited } else { Class::Background };
            let proposals = self.compute(study, class, move || fitted.propose(&owned, &trials, &extra, 1)).await??;
            let Some(item) = proposals.points.into_iter().next().filter(|_| proposals.failed.is_none()) else {
                break; // nothing more to propose (an exhausted grid), or the designer failed: no stand-ins queued
            };
            if slot.generation.load(Ordering::SeqCst) != started_at || !slot.queue.push(*basis, before, item.clone()) {
                tracing::debug!(study = study.id, ahead, "refill stopped: the study changed, or a newer computation filled the queue");
                break;
            }
            items.push(item);
            tracing::debug!(study = study.id, ahead, item = before + 1, propose = ?item_started.elapsed(), since_start = ?started.elapsed(), "queued a suggestion");
            if queued.len() + items.len() >= *wanted {
                break; // done, without waiting for a permit and the lock again only to see it
            }
        }
        Ok(())
    }

    /// What a refill computes from — the study's trials, its usable model and how many items it
    /// wants — or `None` when the queue holds enough or no model is usable.
    async fn read_for_refill(&self, study: &StudyRecord, slot: &Slot, ahead: bool) -> Result<Option<Read>, EngineError> {
        // Whether the queue holds enough: one row read tells, before the trials are brought up
        // to date (the common answer after a refit in a sequential loop). Not for the suggestion
        // ahead, which follows a change the queue cannot have seen: the trials' read gives the
        // basis, and the one read fewer is a suggest's wait shorter.
        if !ahead {
            let basis = self.inner.store.study_basis(study.id).await?;
            if slot.queue.fresh_len(basis, 0) >= slot.queue.wanted(self.inner.config.prefetch, basis.data_version) {
                return Ok(None);
            }
        }
        let (basis, trials) = self.trials_now(study).await?;
        let wanted = if ahead { 1 } else { slot.queue.wanted(self.inner.config.prefetch, basis.data_version) };
        if slot.queue.fresh_len(basis, 0) >= wanted {
            return Ok(None);
        }
        let reproducible = self.reproducible(study);
        // Not from a model fallen behind (`FittedModel::keeps_up`): the refit catches up first.
        let usable = |e: &Arc<FittedModel>| {
            !e.fallback && if reproducible { e.data_version == basis.data_version } else { e.keeps_up(basis.data_version, &trials) }
        };
        let Some(fitted) = self.inner.cache.get(study.id, study.spec.space_revision).filter(usable) else { return Ok(None) };
        let queued = slot.queue.pending_at(basis);
        Ok(Some(Read { basis, trials, fitted, wanted, queued }))
    }
}

/// What a refill reads once and computes its items from.
struct Read {
    basis: Basis,
    trials: Arc<Vec<Trial>>,
    fitted: Arc<FittedModel>,
    /// Items the queue should hold.
    wanted: usize,
    /// Those it held at `basis` when read: pending for the items computed after them.
    queued: Vec<Assignment>,
}
