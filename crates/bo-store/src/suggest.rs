//! The suggest transaction, offered to the engine step by step: [`Store::open_suggest`] locks
//! the study (taking back abandoned trials under a trial lease) and answers a client that
//! already waits on a pending suggest; then, in order, [`SuggestTx::hand_back_held`],
//! [`SuggestTx::hand_out_requested`], [`SuggestTx::hand_out_resumed`] (successive halving
//! with resumption), [`SuggestTx::trials_since`] for checking older
//! proposals, [`SuggestTx::hand_out_new`], and [`SuggestTx::commit`], which records the
//! operation (or finishes the pending one). Dropping the transaction rolls it back: that is how
//! a caller with nothing to hand out for this [`Basis`] leaves, to compute proposals outside the
//! lock and open another.
//!
//! Owns the bookkeeping of one suggest; never decides what to propose (the engine does, from
//! what it computed before opening the transaction).

use std::collections::BTreeMap;

use bo_core::stopping::spec::SuccessiveHalving;
use bo_core::stopping::successive_halving::promotable;
use bo_core::study_stopping::{Best, Needs, Progress};
use bo_core::{Assignment, MetricSpec, Resumed, Trial, TrialState};
use sqlx::{Any, Row, Transaction};
use tokio::sync::OwnedMutexGuard;

use crate::Store;
use crate::error::StoreError;
use crate::lock::{Basis, Locked, lock_study};
use crate::operations::{Operation, OperationKind, finish_suggest, insert_operation, operation_in, pending_suggest};
use crate::stopping::values_at_rung;
use crate::studies::StudyState;
use crate::trials::{Load, SUPERSEDED, insert_trial, load_trials, touch, trials_in_state, write_trial};

/// A suggest call.
#[derive(Clone, Copy, Debug)]
pub struct SuggestRequest<'a> {
    /// The study.
    pub study_id: i64,
    /// The client asking.
    pub client_id: &'a str,
    /// Now, milliseconds since the epoch.
    pub now_ms: i64,
    /// Finish this pending operation instead of recording a new one.
    pub finishing: Option<i64>,
    /// The trial lease: an ACTIVE trial whose client has not been seen for this long goes back
    /// to REQUESTED first, to be handed out again. `None`: trials are never taken back.
    pub trial_lease_ms: Option<i64>,
    /// The API version the call came through, recorded on the operation (see
    /// [`crate::Operation::api_version`]).
    pub api_version: &'a str,
    /// Labels for the trials this call creates (held and REQUESTED trials keep theirs).
    pub labels: &'a BTreeMap<String, String>,
}

/// What a suggest handed out.
#[derive(Clone, Debug)]
pub struct SuggestOutcome {
    /// The trials, all ACTIVE and owned by the client.
    pub trials: Vec<Trial>,
    /// The operation recorded for this call.
    pub operation_id: i64,
    /// The designer had fewer new points than asked: the study is now COMPLETED.
    pub exhausted: bool,
}

/// What opening a suggest found.
pub enum Opened {
    /// The study is locked for this suggest.
    Open(SuggestTx),
    /// The client already waits on this suggest operation (when finishing one: it was finished
    /// elsewhere, or is not a pending suggest). Nothing changed.
    Waiting(Operation),
}

/// One suggest's transaction, holding the study's lock until it is committed or dropped.
pub struct SuggestTx {
    tx: Transaction<'static, Any>,
    _turn: Option<OwnedMutexGuard<()>>,
    study_id: i64,
    client_id: String,
    api_version: String,
    now_ms: i64,
    finishing: Option<i64>,
    locked: Locked,
    next_id: i64,
    handed: Vec<Trial>,
    exhausted: bool,
    /// Why the study completes in this transaction, when a stopping rule (not the space) ends it.
    stop_reason: Option<String>,
    /// Labels for the trials created.
    labels: BTreeMap<String, String>,
}

impl Store {
    /// Opens a suggest: locks the study, gives abandoned trials back to the queue (under a trial
    /// lease), and finds a client already waiting on a pending suggest (or the operation being
    /// finished done elsewhere).
    pub async fn open_suggest(&self, request: SuggestRequest<'_>) -> Result<Opened, StoreError> {
        let SuggestRequest { study_id, client_id, now_ms, finishing, trial_lease_ms, api_version, labels } = request;
        let turn = self.write_turn().await;
        let mut tx = self.pool.begin().await?;
        let locked = lock_study(&mut tx, study_id).await?;
        if let Some(lease) = trial_lease_ms {
            // Abandoned trials (their worker died or was preempted) go back to the queue.
            sqlx::query(
                "UPDATE trials SET state = 'REQUESTED', client_id = '', last_seen_ms = NULL, \
                 change_seq = (SELECT change_seq FROM studies WHERE id = $1) WHERE study_id = $1 AND state = 'ACTIVE' AND COALESCE(last_seen_ms, start_time_ms) < $2",
            )
            .bind(study_id)
            .bind(now_ms.saturating_sub(lease))
            .execute(&mut *tx)
            .await?;
        }
        match finishing {
            Some(id) => {
                let op = operation_in(&mut tx, study_id, id).await?;
                if op.done || !matches!(op.kind, OperationKind::Suggest { .. }) {
                    return Ok(Opened::Waiting(op));
                }
            }
            None => {
                if let Some(op) = pending_suggest(&mut tx, study_id, client_id).await? {
                    return Ok(Opened::Waiting(op));
                }
            }
        }
        let next_id = locked.basis.next_trial_id;
        Ok(Opened::Open(SuggestTx {
            tx,
            _turn: turn,
            study_id,
            client_id: client_id.to_owned(),
            api_version: api_version.to_owned(),
            now_ms,
            finishing,
            locked,
            next_id,
            handed: Vec::new(),
            exhausted: false,
            stop_reason: None,
            labels: labels.clone(),
        }))
    }
}

impl SuggestTx {
    /// Where the study stands.
    pub fn basis(&self) -> Basis {
        self.locked.basis
    }

    /// Whether the study is COMPLETED: it hands out nothing new.
    pub fn study_completed(&self) -> bool {
        self.locked.state == StudyState::Completed
    }

    /// Where the study stands for its stopping rules (bo-core's `study_stopping`), counted in
    /// SQL inside the transaction, only what `needs` asks (each suggest pays for its study's
    /// rules only): its trials and the COMPLETED ones, and the best SUCCEEDED trial by the
    /// objective (`maximize` says which way) with the trials completed after it.
    pub async fn progress(&mut self, created_ms: i64, maximize: bool, needs: Needs) -> Result<Progress, StoreError> {
        let mut progress = Progress { created_ms, now_ms: self.now_ms, ..Progress::default() };
        if needs.counts {
            (progress.trials, progress.completed) = self.counts().await?;
        }
        if needs.best {
            progress.best = self.best(maximize).await?;
        }
        Ok(progress)
    }

    async fn counts(&mut self) -> Result<(i64, i64), StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN state IN ('SUCCEEDED', 'INFEASIBLE') THEN 1 ELSE 0 END), 0) AS done \
             FROM trials WHERE study_id = $1",
        )
        .bind(self.study_id)
        .fetch_one(&mut *self.tx)
        .await?;
        Ok((row.try_get("n")?, row.try_get("done")?))
    }

    async fn best(&mut self, maximize: bool) -> Result<Option<Best>, StoreError> {
        let order = if maximize { "DESC" } else { "ASC" };
        let best = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id, end_time_ms FROM trials WHERE study_id = $1 AND state = 'SUCCEEDED' AND objective IS NOT NULL \
             AND is_unsafe = 0 ORDER BY CASE WHEN stopped_ms IS NULL THEN 0 ELSE 1 END, objective {order}, end_time_ms, id LIMIT 1"
        )))
        .bind(self.study_id)
        .fetch_optional(&mut *self.tx)
        .await?;
        Ok(match best {
            None => None,
            Some(row) => {
                let (id, end_ms): (i64, i64) = (row.try_get("id")?, row.try_get::<Option<i64>, _>("end_time_ms")?.unwrap_or(0));
                let since = sqlx::query(
                    "SELECT COUNT(*) AS n FROM trials WHERE study_id = $1 AND state IN ('SUCCEEDED', 'INFEASIBLE') \
                     AND (end_time_ms > $2 OR (end_time_ms = $2 AND id > $3))",
                )
                .bind(self.study_id)
                .bind(end_ms)
                .bind(id)
                .fetch_one(&mut *self.tx)
                .await?;
                Some(Best { end_ms, completed_since: since.try_get("n")? })
            }
        })
    }

    /// Completes the study in this transaction (a stopping rule decided it): it hands out
    /// nothing, and its `inactiveReason` is `reason`.
    pub fn stop_study(&mut self, reason: String) {
        self.exhausted = true;
        self.stop_reason = Some(reason);
    }

    /// Hands the client the ACTIVE trials it already holds, whole (a held trial may have
    /// measurements), so a retried request gets the same trials back; whether it held any.
    pub async fn hand_back_held(&mut self) -> Result<bool, StoreError> {
        if self.client_id.is_empty() {
            return Ok(false);
        }
        let held = trials_in_state(&mut self.tx, self.study_id, TrialState::Active, Some(&self.client_id), i64::MAX).await?;
        for t in &held {
            touch(&mut self.tx, self.study_id, t.id, self.now_ms).await?;
            self.handed.extend(load_trials(&mut self.tx, self.study_id, t.id - 1, t.id, 1, Load::Full).await?);
        }
        Ok(!held.is_empty())
    }

    /// Hands the client up to `count` REQUESTED trials, oldest first, as ACTIVE; returns how
    /// many of the `count` are still wanted.
    pub async fn hand_out_requested(&mut self, count: usize) -> Result<usize, StoreError> {
        let before = self.handed.len();
        for mut t in trials_in_state(&mut self.tx, self.study_id, TrialState::Requested, None, count as i64).await? {
            t.state = TrialState::Active;
            t.client_id.clone_from(&self.client_id);
            write_trial(&mut self.tx, self.study_id, &t, &self.locked.objective, self.now_ms).await?;
            self.handed.push(t);
        }
        Ok(count - (self.handed.len() - before))
    }

    /// Under successive halving with resumption (`rule.resume`), hands the client up to `count`
    /// new ACTIVE trials that resume paused ones, one at a time as ASHA promotes them
    /// ([`promotable`], Li et al. 2020, Algorithm 2): each with the paused trial's parameters
    /// and measurements (its final one too, where it is past them), naming it
    /// ([`Trial::resumed`]). The paused trial stays as it is;
    /// superseded, it no longer counts at a rung. Returns how many of the `count` are still
    /// wanted: new configurations. Reads the paused trials, then the values at each rung one of
    /// them reached, in SQL, a number per trial.
    pub async fn hand_out_resumed(&mut self, count: usize, objective: &MetricSpec, rule: &SuccessiveHalving) -> Result<usize, StoreError> {
        if count == 0 || !rule.resume {
            return Ok(count);
        }
        let position = if rule.use_elapsed_duration { "m.elapsed_secs" } else { "m.step_count" };
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT t.id, CAST(MAX({position}) AS DOUBLE PRECISION) AS at FROM trials t \
             JOIN measurements m ON m.study_id = t.study_id AND m.trial_id = t.id \
             WHERE t.study_id = $1 AND t.state = 'SUCCEEDED' AND t.stopped_ms IS NOT NULL AND t.id NOT IN {SUPERSEDED} GROUP BY t.id"
        )))
        .bind(self.study_id)
        .fetch_all(&mut *self.tx)
        .await?;
        let mut paused: BTreeMap<i64, f64> =
            rows.iter().map(|r| Ok((r.try_get::<i64, _>("id")?, r.try_get::<f64, _>("at")?))).collect::<Result<_, StoreError>>()?;
        // Only the rungs a paused trial has reached can promote one: with none paused (every
        // new study, and most suggests), no rung is read.
        let highest = paused.values().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut at_rungs = Vec::new();
        for rung in rule.rungs().into_iter().filter(|r| *r <= highest) {
            at_rungs.push((rung, values_at_rung(&mut self.tx, self.study_id, 0, rung, rule.use_elapsed_duration).await?));
        }
        let mut resumed = 0;
        while resumed < count
            && let Some(from) = promotable(objective, rule, &at_rungs, &paused)
        {
            let measured = paused.remove(&from).unwrap_or(0.0);
            let Some(old) = load_trials(&mut self.tx, self.study_id, from - 1, from, 1, Load::Full).await?.pop() else { continue };
            // A final measurement past the last intermediate one (a client that completes with
            // the result it stopped on) is where the trial's checkpoint is: it is taken over too.
            let position = |m: &bo_core::Measurement| if rule.use_elapsed_duration { m.elapsed_secs } else { m.step_count as f64 };
            let mut measurements = old.measurements;
            if let Some(last) = old.final_measurement.filter(|f| position(f) > measured) {
                measurements.push(last);
            }
            let at = measurements.last().map_or(measured, position);
            let trial = Trial {
                client_id: self.client_id.clone(),
                start_time_ms: self.now_ms,
                measurements,
                resumed: Some(Resumed { from, at }),
                space_revision: old.space_revision,
                labels: self.labels.clone(),
                ..Trial::new(self.next_id, old.assignment)
            };
            insert_trial(&mut self.tx, self.study_id, &trial, &self.locked.objective).await?;
            self.next_id = crate::trials::id_after(self.next_id)?;
            self.handed.push(trial);
            resumed += 1;
        }
        if resumed > 0 {
            self.save_next_id().await?;
        }
        Ok(count - resumed)
    }

    /// The trials created from id `first` on (without measurements): what proposals computed at
    /// an older basis must not repeat.
    pub async fn trials_since(&mut self, first: i64) -> Result<Vec<Trial>, StoreError> {
        load_trials(&mut self.tx, self.study_id, first - 1, i64::MAX, i64::MAX, Load::NoMeasurements).await
    }

    /// Hands the client new ACTIVE trials of `points` (at most `wanted`). When nothing at all is
    /// handed out (no held, requested or new trial), the designer's space is exhausted: the
    /// commit completes the study.
    pub async fn hand_out_new(&mut self, points: Vec<Assignment>, wanted: usize) -> Result<(), StoreError> {
        self.exhausted = points.is_empty() && self.handed.is_empty();
        for assignment in points.into_iter().take(wanted) {
            self.insert_new(assignment).await?;
        }
        self.save_next_id().await
    }

    /// One trial per context, in the contexts' order: the oldest REQUESTED trial within the
    /// context (one that takes every value it fixes) not handed out already, else a new ACTIVE
    /// trial of the proposal made for it.
    pub async fn hand_out_in_contexts(&mut self, wanted: Vec<(Assignment, Assignment)>) -> Result<(), StoreError> {
        let mut requested = trials_in_state(&mut self.tx, self.study_id, TrialState::Requested, None, i64::MAX).await?;
        for (context, proposal) in wanted {
            match requested.iter().position(|t| t.assignment.within(&context)) {
                Some(k) => {
                    let mut t = requested.remove(k);
                    t.state = TrialState::Active;
                    t.client_id.clone_from(&self.client_id);
                    write_trial(&mut self.tx, self.study_id, &t, &self.locked.objective, self.now_ms).await?;
                    self.handed.push(t);
                }
                None => self.insert_new(proposal).await?,
            }
        }
        self.save_next_id().await
    }

    async fn insert_new(&mut self, assignment: Assignment) -> Result<(), StoreError> {
        let trial = Trial {
            client_id: self.client_id.clone(),
            start_time_ms: self.now_ms,
            space_revision: self.locked.space_revision,
            labels: self.labels.clone(),
            ..Trial::new(self.next_id, assignment)
        };
        insert_trial(&mut self.tx, self.study_id, &trial, &self.locked.objective).await?;
        self.next_id = crate::trials::id_after(self.next_id)?;
        self.handed.push(trial);
        Ok(())
    }

    async fn save_next_id(&mut self) -> Result<(), StoreError> {
        sqlx::query("UPDATE studies SET next_trial_id = $1 WHERE id = $2")
            .bind(self.next_id)
            .bind(self.study_id)
            .execute(&mut *self.tx)
            .await?;
        Ok(())
    }

    /// Records the operation (or finishes the pending one), completes an exhausted study, and
    /// commits.
    pub async fn commit(mut self) -> Result<SuggestOutcome, StoreError> {
        let study_id = self.study_id;
        if self.exhausted {
            let reason = self.stop_reason.take();
            sqlx::query("UPDATE studies SET state = 'COMPLETED', inactive_reason = $1 WHERE id = $2")
                .bind(reason.as_deref().unwrap_or("the algorithm has no more points to suggest: its search space is exhausted"))
                .bind(study_id)
                .execute(&mut *self.tx)
                .await?;
        }
        let trial_ids: Vec<i64> = self.handed.iter().map(|t| t.id).collect();
        let study_completed = self.exhausted || self.study_completed();
        let operation_id = match self.finishing {
            Some(id) => {
                finish_suggest(&mut self.tx, study_id, id, &trial_ids, study_completed, self.now_ms).await?;
                id
            }
            None => {
                let kind = OperationKind::Suggest { client_id: self.client_id.clone(), trial_ids, study_completed };
                insert_operation(&mut self.tx, study_id, &kind, &self.api_version, self.now_ms).await?
            }
        };
        self.tx.commit().await?;
        Ok(SuggestOutcome { trials: self.handed, operation_id, exhausted: self.exhausted })
    }
}
