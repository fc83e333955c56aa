//! A suggest, written once and in order ([`Engine::suggest`], and the same loop for finishing a
//! pending operation):
//!
//! 1. open the store's study transaction (the study locked); a client already waiting on a
//!    pending suggest gets it back;
//! 2. hand back the client's held trials, else REQUESTED trials, else new ones *planned* from
//!    what was computed before ([`Engine::plan`]: a model that answers by position, proposals
//!    computed at this basis, the study's queue, or — after a few misses — proposals from an
//!    older basis less any that repeat a trial created since);
//! 3. commit; or, with nothing planned, roll back, compute proposals outside the lock
//!    (`FittedModel::propose`, on a blocking thread, one study at a time in this process), and go to 1.
//!
//! When the proposals are not ready within the server's bound (`max_suggest_wait`), the call
//! answers with a pending operation (`done: false`) that a background task finishes
//! (`operations.rs`). No designer runs inside a transaction.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use bo_core::{Assignment, StoppingSpec, Trial};
use bo_store::{Basis, Opened, Operation, StudyRecord, SuggestOutcome, SuggestRequest};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::hooks::Point;
use super::permits::{Class, panicked};
use super::slot::Job;
use super::{Engine, EngineError, millis};
use crate::metrics::{FailedStage, SuggestPath};

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

/// One suggest's question: the study, the client asking, how many trials, the API version it
/// asks through (what its operation records), the labels of the trials it creates and, when
/// finishing a pending operation, its number.
#[derive(Clone, Copy)]
pub(super) struct Ask<'a> {
    pub study: &'a StudyRecord,
    pub client_id: &'a str,
    pub count: usize,
    pub api_version: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub finishing: Option<i64>,
}

/// Proposals computed outside the lock, and the basis they fit.
pub(super) struct Computed {
    basis: Basis,
    /// The proposals; empty when `queued`.
    assignments: Vec<Assignment>,
    /// Whether a model had to be fitted for them (no cached one).
    fitted: bool,
    /// Nothing computed: the queue holds what the study needs at `basis` (a refill landed while
    /// this computation waited its turn), and the next attempt takes it.
    queued: bool,
}

/// A task computing proposals (see [`Engine::spawn_compute`]).
pub(super) type Compute = JoinHandle<Result<Computed, EngineError>>;

/// A planner's answer inside the study transaction.
enum Plan {
    /// The new assignments (fewer than asked means the space is exhausted).
    Ready(Vec<Assignment>),
    /// Nothing for this basis: roll back and compute.
    Miss,
}

/// How one attempt at the study transaction ended.
enum Attempt {
    Done(SuggestOutcome),
    Waiting(Operation),
    Miss,
}

/// How the suggest loop ended.
pub(super) enum Ended {
    /// Trials handed out; whether proposals were computed, and whether a model was fitted.
    Done { outcome: SuggestOutcome, computed: bool, fitted: bool },
    /// The client waits on this operation (or the operation was finished elsewhere).
    Waiting(Operation),
    /// The wait ran out while this computation went on.
    TimedOut(Compute),
}

/// The study's stopping rules, read before anything new is handed out: whether they stopped it
/// (in `tx`, which the caller commits).
async fn stopped_by_its_rules(study: &StudyRecord, tx: &mut bo_store::SuggestTx) -> Result<bool, EngineError> {
    let Some(rules) = &study.spec.study_stopping else { return Ok(false) };
    let maximize = study.spec.objective().goal == bo_core::Goal::Maximize;
    let single = study.spec.objectives().count() == 1;
    let progress = tx.progress(study.create_time_ms, maximize, rules.needs(single)).await?;
    match bo_core::study_stopping::decide(rules, &progress, single) {
        Some(reason) => {
            tx.stop_study(reason);
            Ok(true)
        }
        None => Ok(false),
    }
}

impl Engine {
    /// Hands `client_id` one trial within each of `contexts` (partial assignments the caller
    /// has checked), in their order: a REQUESTED trial within the context first, else one the
    /// study's model proposes within it (`bo_core::designer::context`). Computed before the
    /// study's transaction, from the model as it stands; never queued or answered pending. A
    /// client holding ACTIVE trials gets them back, as any suggest does.
    pub async fn suggest_in_contexts(
        &self,
        study: &StudyRecord,
        client_id: &str,
        contexts: Vec<Assignment>,
        api_version: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<SuggestReply, EngineError> {
        let started = Instant::now();
        let (basis, trials) = self.trials_now(study).await?;
        let (fitted, _) = self.model_for(study, basis, &trials).await?;
        let (owned_study, owned_contexts) = (study.clone(), contexts.clone());
        let proposals =
            self.compute(study, Class::Waited, move || fitted.propose_in_contexts(&owned_study, &trials, &owned_contexts)).await??;
        let request = SuggestRequest {
            study_id: study.id,
            client_id,
            now_ms: crate::clock::now_ms(),
            finishing: None,
            trial_lease_ms: self.trial_lease_ms(study),
            api_version,
            labels,
        };
        let mut tx = match self.inner.store.open_suggest(request).await? {
            Opened::Waiting(op) => return Ok(SuggestReply::Pending(op)),
            Opened::Open(tx) => tx,
        };
        if !tx.hand_back_held().await? && !tx.study_completed() && !stopped_by_its_rules(study, &mut tx).await? {
            tx.hand_out_in_contexts(contexts.into_iter().zip(proposals).collect()).await?;
        }
        let outcome = tx.commit().await?;
        self.inner.metrics.suggest(SuggestPath::Contexts, started.elapsed().as_secs_f64());
        Ok(SuggestReply::Done(outcome))
    }

    /// Hands `count` trials to `client_id`, asking through API version `api_version` (what its
    /// operation records; see the module docs); the trials it creates take `labels`.
    pub async fn suggest(
        &self,
        study: &StudyRecord,
        client_id: &str,
        count: usize,
        api_version: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<SuggestReply, EngineError> {
        let started = Instant::now();
        let deadline = started + self.inner.config.max_suggest_wait;
        let record = |path: SuggestPath| self.inner.metrics.suggest(path, started.elapsed().as_secs_f64());
        let ask = Ask { study, client_id, count, api_version, labels, finishing: None };
        match self.suggest_loop(ask, None, Some(deadline)).await? {
            Ended::Done { outcome, computed, fitted } => {
                record(match (computed, fitted) {
                    (_, true) => SuggestPath::Fit,
                    (true, false) => SuggestPath::Cached,
                    (false, false) => SuggestPath::Queue,
                });
                Ok(SuggestReply::Done(outcome))
            }
            Ended::Waiting(op) => {
                record(SuggestPath::Pending);
                Ok(SuggestReply::Pending(op))
            }
            Ended::TimedOut(task) => {
                record(SuggestPath::Pending);
                let op =
                    self.inner.store.begin_pending_suggest(study.id, client_id, count, api_version, labels, crate::clock::now_ms()).await?;
                tracing::info!(study = study.id, operation = op.id, "suggest answered as a pending operation");
                self.spawn_finisher(study.clone(), op.clone(), Some(task));
                Ok(SuggestReply::Pending(op))
            }
        }
    }

    /// The suggest protocol: attempts at the study transaction, with proposals computed between
    /// them. A new suggest tries first; finishing the pending operation `finishing` computes
    /// first (from `task` if one runs). Without a `deadline` it waits for the proposals as long
    /// as they take.
    pub(super) async fn suggest_loop(
        &self,
        ask: Ask<'_>,
        mut task: Option<Compute>,
        deadline: Option<Instant>,
    ) -> Result<Ended, EngineError> {
        let Ask { study, count, finishing, .. } = ask;
        let mut computed: Option<Computed> = None;
        let (mut any_computed, mut fitted) = (false, false);
        let (started, mut waited) = (Instant::now(), Duration::ZERO);
        if finishing.is_none() {
            self.wait_for_ahead(study, deadline).await;
            waited = started.elapsed();
        }
        for attempt in 1.. {
            if finishing.is_some() || attempt > 1 {
                let mut running = task.take().unwrap_or_else(|| self.spawn_compute(study.clone(), count));
                let wait_started = Instant::now();
                let joined = match deadline {
                    None => (&mut running).await,
                    Some(deadline) => match tokio::time::timeout_at(deadline, &mut running).await {
                        Ok(joined) => joined,
                        Err(_) => return Ok(Ended::TimedOut(running)),
                    },
                };
                let c = joined.map_err(panicked)??;
                waited += wait_started.elapsed();
                any_computed = true;
                fitted |= c.fitted;
                computed = Some(c);
            }
            match self.attempt(ask, attempt, computed.take()).await? {
                Attempt::Done(outcome) => {
                    tracing::debug!(study = study.id, attempts = attempt, ?waited, total = ?started.elapsed(), "suggest answered");
                    if self.inner.config.prefetch > 0 {
                        // Top the queue up if it is short.
                        self.schedule(study, Job { refill: true, ..Job::default() });
                    }
                    return Ok(Ended::Done { outcome, computed: any_computed, fitted });
                }
                Attempt::Waiting(op) => return Ok(Ended::Waiting(op)),
                Attempt::Miss => {}
            }
        }
        unreachable!("the attempts go on until the trials are handed out or the wait is over")
    }

    /// Waits (until `deadline`) for a refill computing the next suggestion ahead, when one runs
    /// and the queue takes only suggestions that saw every completion: until it ends, the
    /// study's first transaction could only miss and roll back — in the loop of a training job
    /// (complete, then suggest at once) one transaction instead of two. For one end only: where
    /// completions keep coming (many workers), new ahead refills keep starting, and a suggest
    /// waiting for none to run could wait for ever.
    async fn wait_for_ahead(&self, study: &StudyRecord, deadline: Option<Instant>) {
        if self.staleness(study) > 0 {
            return;
        }
        let slot = self.inner.slots.get(study.id);
        let ended = slot.ahead_ended.notified();
        tokio::pin!(ended);
        // Registered before the count is read, so an end in between is not missed.
        ended.as_mut().enable();
        if slot.ahead_running.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            return;
        }
        match deadline {
            Some(deadline) => {
                let _ = tokio::time::timeout_at(deadline, ended).await;
            }
            None => ended.await,
        }
    }

    /// One attempt at the study transaction, in order: held trials, REQUESTED trials, paused
    /// trials to resume (successive halving with resumption), then new ones from the plan; a
    /// miss rolls back.
    async fn attempt(&self, ask: Ask<'_>, attempt: usize, offered: Option<Computed>) -> Result<Attempt, EngineError> {
        let Ask { study, client_id, count, api_version, labels, finishing } = ask;
        // Past the fresh attempts, proposals from an older basis are checked against the trials
        // created since it.
        let newer_than = offered.as_ref().filter(|_| attempt > FRESH_ATTEMPTS).map(|c| c.basis.next_trial_id);
        let request = SuggestRequest {
            study_id: study.id,
            client_id,
            now_ms: crate::clock::now_ms(),
            finishing,
            trial_lease_ms: self.trial_lease_ms(study),
            api_version,
            labels,
        };
        let mut tx = match self.inner.store.open_suggest(request).await? {
            Opened::Waiting(op) => return Ok(Attempt::Waiting(op)),
            Opened::Open(tx) => tx,
        };
        if !tx.hand_back_held().await? && !tx.study_completed() {
            if stopped_by_its_rules(study, &mut tx).await? {
                return Ok(Attempt::Done(tx.commit().await?));
            }
            let mut wanted = tx.hand_out_requested(count).await?;
            if let Some(StoppingSpec::SuccessiveHalving(rule)) = &study.spec.stopping {
                wanted = tx.hand_out_resumed(wanted, study.spec.objective(), rule).await?;
            }
            if wanted > 0 {
                let newer = match newer_than {
                    Some(first) => Some(tx.trials_since(first).await?),
                    None => None,
                };
                match self.plan(study, tx.basis(), newer.as_deref(), wanted, offered) {
                    Plan::Ready(points) => {
                        tx.hand_out_new(points, wanted).await?;
                        self.inner.slots.get(study.id).queue.suggested(tx.basis().data_version);
                    }
                    Plan::Miss => return Ok(Attempt::Miss), // dropped: rolled back
                }
            }
        }
        Ok(Attempt::Done(tx.commit().await?))
    }

    /// New assignments for a suggest transaction at `basis`, chosen among what was computed
    /// before — never computed here, inside the transaction: a model of this basis that answers
    /// by position (cheap arithmetic, bounded by the suggestion count and the parameters); the
    /// queue's; the proposals `offered` if they were computed at this basis; after several
    /// misses, the proposals offered at an older basis, less any that repeat a trial created
    /// since (`newer`). Otherwise a miss, and the caller computes again. A reproducible study
    /// takes queued items one at a time only (each is what a suggest of one would compute; a
    /// batch is searched together, not as items in a row).
    fn plan(&self, study: &StudyRecord, basis: Basis, newer: Option<&[Trial]>, wanted: usize, offered: Option<Computed>) -> Plan {
        // By position only from the model of this basis (or one that learns nothing, or a
        // stand-in): a learning designer's older model may still be its initial design while
        // the data now asks for the fitted model.
        if let Some(fitted) = self.inner.cache.get(study.id, study.spec.space_revision)
            && (fitted.data_version == basis.data_version || fitted.fallback || !fitted.learns)
            && let Some(positional) = fitted.model.positional()
            && let Some(points) = positional.suggest_indexed(u64::try_from(basis.next_trial_id - 1).unwrap_or(0), wanted)
        {
            return Plan::Ready(points);
        }
        if (wanted == 1 || !self.reproducible(study))
            && let Some(items) = self.inner.slots.get(study.id).queue.take(basis, wanted, self.staleness(study))
        {
            return Plan::Ready(items);
        }
        let offered = match offered.filter(|c| !c.queued) {
            Some(c) if c.basis.next_trial_id == basis.next_trial_id => {
                return Plan::Ready(c.assignments.into_iter().take(wanted).collect());
            }
            other => other,
        };
        if let (Some(c), Some(newer)) = (offered, newer) {
            // Other clients keep taking trials before this one's proposals land: take them anyway,
            // so a suggest always makes progress, but never one that repeats a trial of theirs.
            let repeated: HashSet<bo_core::AssignmentKey> = newer.iter().map(|t| t.assignment.key()).collect();
            let fresh: Vec<Assignment> = c.assignments.into_iter().filter(|a| !repeated.contains(&a.key())).take(wanted).collect();
            if !fresh.is_empty() {
                return Plan::Ready(fresh);
            }
        }
        Plan::Miss
    }

    /// Computes `count` proposals for `study` outside any transaction, on its own task (so a
    /// suggest that stops waiting can hand it to the finisher).
    pub(super) fn spawn_compute(&self, study: StudyRecord, count: usize) -> Compute {
        let engine = self.clone();
        tokio::spawn(async move {
            let slot = engine.inner.slots.get(study.id);
            let _one_at_a_time = slot.proposing.lock().await;
            engine.inner.hooks.reached(Point::Propose).await?;
            let started = Instant::now();
            // A refill that held the lock may have computed what this suggest needs: one row read
            // tells, before the trials are brought up to date.
            let now = engine.inner.store.study_basis(study.id).await?;
            if (count == 1 || !engine.reproducible(&study)) && slot.queue.fresh_len(now, engine.staleness(&study)) >= count {
                return Ok(Computed { basis: now, assignments: Vec::new(), fitted: false, queued: true });
            }
            let (basis, trials) = engine.trials_now(&study).await?;
            let read = started.elapsed();
            let (fitted_model, fitted) = engine.model_for(&study, basis, &trials).await?;
            let model = started.elapsed() - read;
            let id = study.id;
            let owned = study.clone();
            let proposals = engine.compute(&study, Class::Waited, move || fitted_model.propose(&owned, &trials, &[], count)).await??;
            if let Some(e) = &proposals.failed {
                tracing::warn!(study = id, error = %e, "the designer failed to propose; quasi-random proposals stand in");
                engine.inner.metrics.fallback(FailedStage::Suggest);
            }
            tracing::debug!(study = id, ?read, ?model, total = ?started.elapsed(), "computed proposals");
            Ok(Computed { basis, assignments: proposals.points, fitted, queued: false })
        })
    }

    /// The study's trial lease (its `algorithmConfig.trialLease`, 0 meaning never), else the
    /// server's.
    fn trial_lease_ms(&self, study: &StudyRecord) -> Option<i64> {
        match study.settings.trial_lease_secs {
            Some(secs) if secs > 0.0 => Some(millis(Duration::from_secs_f64(secs))),
            Some(_) => None,
            None => self.inner.config.trial_lease.map(millis),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::{EngineConfig, testing};

    /// A study of 8 completed trials, an engine waiting `lag_wait` for a model to catch up, and
    /// the data version of the model it fitted on them.
    async fn fitted_on_eight(name: &str, lag_wait: Duration) -> (testing::TestStore, StudyRecord, Engine, i64) {
        let store = testing::store().await;
        let study = testing::study(&store, name, serde_json::json!({"initialDesignSize": 3})).await;
        for i in 0..8 {
            testing::complete(&store, &study, f64::from(i) / 8.0).await;
        }
        let config = EngineConfig { prefetch: 0, lag_wait, ..EngineConfig::default() };
        let engine = Engine::new(store.clone(), &config, Arc::default());
        let fitted = engine.model(&study).await.unwrap().data_version;
        (store, study, engine, fitted)
    }

    /// A model a few completions behind proposes (it conditions on them); past the lag allowed,
    /// the suggest waits for the refit that catches up.
    #[tokio::test]
    async fn a_suggest_waits_for_a_model_fallen_behind_the_data_to_catch_up() {
        // Long enough for any machine: the test is of order, not of time.
        let (store, study, engine, fitted) = fitted_on_eight("lag", Duration::from_secs(120)).await;
        let version = |engine: &Engine| engine.inner.cache.get(study.id, 0).unwrap().data_version;

        for x in [0.11, 0.22, 0.33, 0.44] {
            testing::complete(&store, &study, x).await;
        }
        assert!(matches!(engine.suggest(&study, "w", 1, "v1", &BTreeMap::new()).await.unwrap(), SuggestReply::Done(_)));
        assert_eq!(version(&engine), fitted, "4 completions behind (the least lag allowed): the model of 8 trials proposes");

        testing::complete(&store, &study, 0.55).await;
        let behind = store.study_basis(study.id).await.unwrap().data_version;
        assert!(matches!(engine.suggest(&study, "w2", 1, "v1", &BTreeMap::new()).await.unwrap(), SuggestReply::Done(_)));
        assert!(version(&engine) >= behind, "5 behind: the suggest waited for the refit of the data it answers");
    }

    /// The wait is bounded: a refit that does not come leaves the suggest to the model it has.
    #[tokio::test]
    async fn the_wait_for_a_model_to_catch_up_is_bounded() {
        let (store, study, engine, fitted) = fitted_on_eight("lag bound", Duration::from_millis(50)).await;
        engine.inner.hooks.hold(Point::Refit);
        for i in 0..10 {
            testing::complete(&store, &study, 0.05 + f64::from(i) / 10.0).await;
        }
        assert!(matches!(engine.suggest(&study, "w", 1, "v1", &BTreeMap::new()).await.unwrap(), SuggestReply::Done(_)));
        assert_eq!(engine.inner.cache.get(study.id, 0).unwrap().data_version, fitted, "the refit is held: the older model proposed");
        engine.inner.hooks.release(Point::Refit, 1);
    }

    /// The initial design's model answers by position; once the data asks for the GP, that older
    /// model does not answer while the refit is under way: with no time to wait, the suggest is a
    /// pending operation (it used to hand out the initial design's next point).
    #[tokio::test]
    async fn an_older_model_does_not_answer_by_position_for_newer_data() {
        let store = testing::store().await;
        let study = testing::study(&store, "design", serde_json::json!({"initialDesignSize": 3})).await;
        for x in [0.1, 0.9] {
            testing::complete(&store, &study, x).await;
        }
        let config = EngineConfig { max_suggest_wait: Duration::ZERO, prefetch: 0, ..EngineConfig::default() };
        let engine = Engine::new(store.clone(), &config, Arc::default());
        let design = engine.model(&study).await.unwrap();
        assert!(design.model.positional().is_some_and(|p| p.suggest_indexed(0, 1).is_some()), "two trials: still the initial design");

        let mut reached = engine.inner.hooks.watch();
        engine.inner.hooks.hold(Point::Refit);
        // Proposals computed from the older model must not hand out a trial either: the
        // computation waits, so a suggest with no time to wait is a pending operation whatever
        // the machine's speed.
        engine.inner.hooks.hold(Point::Propose);
        for x in [0.5, 0.7] {
            testing::complete(&store, &study, x).await;
        }
        engine.notify_changed(&study);
        assert_eq!(reached.recv().await, Some(Point::Refit));
        match engine.suggest(&study, "w", 1, "v1", &BTreeMap::new()).await.unwrap() {
            SuggestReply::Pending(op) => assert!(!op.done, "{op:?}"),
            SuggestReply::Done(outcome) => panic!("answered from the initial design's model: {outcome:?}"),
        }
        engine.inner.hooks.release(Point::Refit, 1);
        engine.inner.hooks.release(Point::Propose, 2);
    }
}
