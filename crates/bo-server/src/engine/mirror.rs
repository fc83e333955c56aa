//! The trials of the studies being suggested for, as the engine last read them, brought up to
//! date by reading only the trials written since (the store's change cursor,
//! `Store::trial_changes`): a suggest or a refill of a study of 10,000 trials reads the few rows
//! that changed, not 10,000. A delete makes the next read start over (the store says so).
//!
//! Kept packed (`bo_core::PackedTrials`: each distinct string once, a value in eight bytes —
//! a trial of 300 categorical parameters of 128-character values adds about 2.4 KB packed,
//! where it takes up to 105 KB decoded) and unpacked for the reader; readers of an unchanged
//! study share one unpacked copy while any of them holds it. Bounded by bytes, not by count:
//! the mirrors hold at most their budget as `PackedTrials::memory_bytes` estimates it; the
//! least recently read studies' mirrors go first, and a study larger than the whole budget is
//! handed to its reader and not kept — but while any reader still holds it, the next reader of
//! the study catches up from it rather than reading it whole again, so suggests of a large
//! study that arrive together share one read. Changes are read a page of at most [`PAGE`]
//! trials and [`PAGE_BYTES`] at a time.
//!
//! A read of [`STORE_AFTER`] trials or more (a large study's first read, or one caught up from
//! far behind) leaves the study's packed trials stored in the database with their cursor
//! (`Store::save_trial_snapshot`, in the background, encoded off the runtime), and a study not
//! mirrored starts from them: after a restart a wide study of 6,000 trials loads one value of
//! 10 MB instead of 278 MB of parameters, then reads the trials changed since. A stored value
//! that cannot be loaded is passed over (logged) and the study read whole. Must not decide
//! anything about the trials: it only reads them, and stores what it read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bo_core::{PackedTrials, Trial};
use bo_store::{Basis, Cursor, Store, TrialSnapshot};

use super::EngineError;
use crate::sync::lock;

/// Changed trials read per round trip while catching up.
const PAGE: i64 = 10_000;

/// Stored bytes of changed trials read per round trip while catching up.
const PAGE_BYTES: usize = 32 << 20;

/// Trials read from the database in one catch-up from which the study's packed trials are
/// stored for the next cold reader (see the module docs).
const STORE_AFTER: usize = 1_000;

/// The largest stored form of a study's trials that is written (a study that large is read whole
/// after a restart).
const STORED_BYTES_MAX: usize = 256 << 20;

/// One study's mirror.
struct Mirror {
    cursor: Cursor,
    /// Its trials, packed.
    trials: PackedTrials,
    /// Them unpacked at `cursor`, while a reader still holds them.
    view: Weak<Vec<Trial>>,
    /// When it was last read, in [`Mirrors`]' ticks.
    used: u64,
}

/// Every study's mirror.
pub struct Mirrors {
    inner: Mutex<Inner>,
    budget_bytes: usize,
    /// [`STORE_AFTER`] (fewer in tests).
    store_after: usize,
}

/// A study's trials too large to keep even packed, as its last reader read them: the next
/// reader catches up from them while any reader still holds them.
struct Passing {
    cursor: Cursor,
    view: Weak<Vec<Trial>>,
}

/// What a reader starts from and catches up.
enum Held {
    /// The mirror's packed trials, with their unpacked copy if a reader still holds it.
    Packed(PackedTrials, Option<Arc<Vec<Trial>>>),
    /// Only a passing study's unpacked copy, packed again if anything changed.
    Unpacked(Arc<Vec<Trial>>),
}

#[derive(Default)]
struct Inner {
    studies: HashMap<i64, Mirror>,
    passing: HashMap<i64, Passing>,
    tick: u64,
}

impl Mirrors {
    /// Mirrors holding at most `budget_bytes` of packed trials in all.
    pub fn new(budget_bytes: usize) -> Mirrors {
        Mirrors { inner: Mutex::new(Inner::default()), budget_bytes, store_after: STORE_AFTER }
    }

    /// The study's basis and every trial (without intermediate measurements), as
    /// `Store::suggest_snapshot` reads them: the basis first (in the first page's read), so a
    /// change made while the trials are read moves the study past it. `reading` is the study's
    /// own lock (its slot's): one reader of a study at a time, so two never take its mirror apart
    /// at once. A study not mirrored is read whole, after `cold` (awaited then, and held
    /// through the read: the engine's turn at a large read). Readers of an unchanged study
    /// share one unpacked copy while any of them holds it.
    pub async fn snapshot<T, F: Future<Output = T>>(
        &self,
        store: &Store,
        study_id: i64,
        reading: &tokio::sync::Mutex<()>,
        cold: impl FnOnce() -> F,
    ) -> Result<(Basis, Arc<Vec<Trial>>), EngineError> {
        let _one_reader = reading.lock().await;
        let (held, passing) = {
            let mut inner = self.lock();
            (inner.studies.remove(&study_id), inner.passing.remove(&study_id))
        };
        let shared = passing.and_then(|p| Some((p.cursor, p.view.upgrade()?)));
        let (mut cursor, mut held, _turn) = match (held, shared) {
            (Some(m), _) => (m.cursor, Held::Packed(m.trials, m.view.upgrade()), None),
            (None, Some((cursor, view))) => (cursor, Held::Unpacked(view), None),
            (None, None) => {
                let turn = cold().await;
                let (cursor, trials) = stored(store, study_id).await.unwrap_or((Cursor::START, PackedTrials::default()));
                (cursor, Held::Packed(trials, None), Some(turn))
            }
        };
        let started = std::time::Instant::now();
        let (mut reading_s, mut packing_s, mut read) = (0.0, 0.0, 0);
        let mut changes = store.trial_changes(study_id, cursor, PAGE, PAGE_BYTES).await?;
        reading_s += started.elapsed().as_secs_f64();
        // The basis as the first page's read found it, before any trial was read.
        let basis = changes.basis();
        loop {
            let packing = std::time::Instant::now();
            if changes.reset || !changes.trials.is_empty() {
                let mut trials = match held {
                    Held::Packed(trials, _) => trials,
                    Held::Unpacked(view) => PackedTrials::from_trials(&view),
                };
                if changes.reset {
                    trials.clear();
                }
                for trial in &changes.trials {
                    trials.upsert(trial);
                }
                read += changes.trials.len();
                held = Held::Packed(trials, None);
            }
            cursor = changes.cursor;
            let more = changes.more;
            drop(changes);
            packing_s += packing.elapsed().as_secs_f64();
            if !more {
                break;
            }
            let page = std::time::Instant::now();
            changes = store.trial_changes(study_id, cursor, PAGE, PAGE_BYTES).await?;
            reading_s += page.elapsed().as_secs_f64();
        }
        let unpacking = std::time::Instant::now();
        let (view, packed) = match held {
            Held::Packed(trials, Some(view)) => (view, Some(trials)),
            Held::Packed(trials, None) => (Arc::new(trials.unpack()), Some(trials)),
            Held::Unpacked(view) => (view, None),
        };
        tracing::debug!(
            study = study_id,
            reading_s,
            packing_s,
            unpacking_s = unpacking.elapsed().as_secs_f64(),
            trials = view.len(),
            "mirror caught up"
        );
        // Stored whether or not the mirror keeps it (a study over the budget loads faster from its
        // stored trials too); copied before the mirrors' lock, which every study's reader takes.
        if read >= self.store_after
            && let Some(trials) = &packed
        {
            store_in_background(store, study_id, cursor, trials.clone());
        }
        let mut inner = self.lock();
        inner.tick += 1;
        let used = inner.tick;
        let bytes = packed.as_ref().map(PackedTrials::memory_bytes);
        let Some(trials) = packed.filter(|_| bytes.is_some_and(|b| b <= self.budget_bytes)) else {
            // Larger than every mirror together may be: the reader has it, nobody keeps it; a
            // reader that comes while it is held shares it.
            tracing::debug!(study = study_id, bytes, budget = self.budget_bytes, "a study's trials are larger than the mirror's budget");
            inner.passing.insert(study_id, Passing { cursor, view: Arc::downgrade(&view) });
            inner.passing.retain(|_, p| p.view.strong_count() > 0);
            return Ok((basis, view));
        };
        inner.studies.insert(study_id, Mirror { cursor, trials, view: Arc::downgrade(&view), used });
        // Over the budget: the least recently read go (never the one just read).
        let mut total: usize = inner.studies.values().map(|m| m.trials.memory_bytes()).sum();
        while total > self.budget_bytes {
            let Some((&victim, _)) = inner.studies.iter().filter(|(id, _)| **id != study_id).min_by_key(|(_, m)| m.used) else { break };
            if let Some(m) = inner.studies.remove(&victim) {
                total -= m.trials.memory_bytes();
            }
        }
        Ok((basis, view))
    }

    /// Forgets a deleted study's mirror.
    pub fn remove(&self, study_id: i64) {
        let mut inner = self.lock();
        inner.studies.remove(&study_id);
        inner.passing.remove(&study_id);
    }

    /// (studies mirrored, estimated bytes held), for metrics and tests.
    pub fn usage(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.studies.len(), inner.studies.values().map(|m| m.trials.memory_bytes()).sum())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }
}

/// The study's stored packed trials and their cursor, loaded off the runtime; `None` when there
/// are none or they cannot be loaded (logged: the study is read whole).
async fn stored(store: &Store, study_id: i64) -> Option<(Cursor, PackedTrials)> {
    let snapshot = match store.trial_snapshot(study_id).await {
        Ok(snapshot) => snapshot?,
        Err(e) => {
            tracing::warn!(study = study_id, error = %e, "could not read the study's stored trials; reading them whole");
            return None;
        }
    };
    let loading = std::time::Instant::now();
    let cursor = snapshot.cursor;
    match tokio::task::spawn_blocking(move || PackedTrials::from_stored(&snapshot.body)).await {
        Ok(Ok(trials)) => {
            tracing::debug!(study = study_id, trials = trials.len(), loading_s = loading.elapsed().as_secs_f64(), "stored trials loaded");
            Some((cursor, trials))
        }
        Ok(Err(e)) => {
            tracing::warn!(study = study_id, error = %e, "the study's stored trials were passed over; reading them whole");
            None
        }
        Err(e) => {
            tracing::warn!(study = study_id, error = %e, "loading the study's stored trials panicked; reading them whole");
            None
        }
    }
}

/// Stores `trials`, read up to `cursor`, for the study's next cold reader: encoded off the
/// runtime and written on a task of its own, so no reader waits for it. A failure is logged and
/// costs only the next cold read's time.
fn store_in_background(store: &Store, study_id: i64, cursor: Cursor, trials: PackedTrials) {
    let store = store.clone();
    tokio::spawn(async move {
        let body = match tokio::task::spawn_blocking(move || trials.to_stored()).await {
            Ok(body) => body,
            Err(e) => return tracing::warn!(study = study_id, error = %e, "encoding the study's trials for storing panicked"),
        };
        if body.len() > STORED_BYTES_MAX {
            return tracing::debug!(study = study_id, bytes = body.len(), "a study's packed trials are too large to store");
        }
        let bytes = body.len();
        match store.save_trial_snapshot(study_id, &TrialSnapshot { cursor, body }, crate::clock::now_ms()).await {
            Ok(saved) => tracing::debug!(study = study_id, bytes, saved, "stored the study's packed trials"),
            Err(e) => tracing::warn!(study = study_id, error = %e, "could not store the study's packed trials"),
        }
    });
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bo_core::{Assignment, Measurement, ParamValue, TrialState};
    use bo_store::NewTrial;

    use super::*;
    use crate::engine::testing;

    /// Adds a SUCCEEDED trial of about 1 KB even packed (a reason of its own, which no other
    /// trial shares).
    async fn large_trial(store: &Store, study: &bo_store::StudyRecord, x: f64) {
        let mut assignment = Assignment::default();
        assignment.insert("x", ParamValue::Float(x));
        let done = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("f".to_owned(), x)]) };
        let new = NewTrial {
            assignment,
            state: TrialState::Succeeded,
            measurements: vec![],
            final_measurement: Some(done),
            // 1,000 characters, the longest free text: the trials' bytes come from here.
            infeasible_reason: format!("{x:<1000}"),
            labels: BTreeMap::new(),
        };
        store.create_trial(study.id, new, 1).await.unwrap();
    }

    /// Mirrors that store a study's packed trials after a read of `store_after` trials.
    fn storing_after(store_after: usize) -> Mirrors {
        Mirrors { inner: Mutex::new(Inner::default()), budget_bytes: usize::MAX, store_after }
    }

    /// Waits for the study's stored trials to be read up to `cursor` (stored in the background).
    async fn stored_up_to(store: &Store, study_id: i64, cursor: Cursor) -> TrialSnapshot {
        for _ in 0..500 {
            if let Some(s) = store.trial_snapshot(study_id).await.unwrap().filter(|s| s.cursor >= cursor) {
                return s;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the study's trials were not stored");
    }

    /// A large read leaves the study's packed trials stored; a cold reader (a restarted server)
    /// starts from them and reads only the trials changed since; one from before a delete
    /// starts over, and a value that cannot be loaded is passed over.
    #[tokio::test]
    async fn a_cold_reader_starts_from_the_stored_trials() {
        let store = testing::store().await;
        let study = testing::study(&store, "stored", serde_json::json!({})).await;
        for k in 0..12 {
            testing::complete(&store, &study, k as f64 / 12.0).await;
        }
        let reading = tokio::sync::Mutex::new(());
        let cold = || async {};
        let first = storing_after(10);
        let (_, trials) = first.snapshot(&store, study.id, &reading, cold).await.unwrap();
        assert_eq!(trials.len(), 12);
        let cursor = first.lock().studies[&study.id].cursor;
        let saved = stored_up_to(&store, study.id, cursor).await;
        assert_eq!(PackedTrials::from_stored(&saved.body).unwrap().unpack(), *trials);

        // Stored trials stand for the study up to their cursor: one changed only there shows
        // that a new reader loaded them; the trial added since is read from the database.
        let mut doctored = (*trials).clone();
        doctored[0].infeasible_reason = "from the stored trials".into();
        let body = PackedTrials::from_trials(&doctored).to_stored();
        assert!(store.save_trial_snapshot(study.id, &TrialSnapshot { cursor, body }, 1).await.unwrap());
        testing::complete(&store, &study, 0.99).await;
        let restarted = storing_after(usize::MAX);
        let (_, trials) = restarted.snapshot(&store, study.id, &reading, cold).await.unwrap();
        assert_eq!(trials.len(), 13);
        assert_eq!(trials[0].infeasible_reason, "from the stored trials");
        assert_eq!(trials[1..], store.all_trials(study.id).await.unwrap()[1..]);

        // A delete since: the stored trials are from before it, and the reader starts over.
        store.delete_trial(study.id, trials[5].id).await.unwrap();
        let (_, trials) = storing_after(usize::MAX).snapshot(&store, study.id, &reading, cold).await.unwrap();
        assert_eq!(*trials, store.all_trials(study.id).await.unwrap());

        // A value that does not load is passed over.
        let cursor = restarted.lock().studies[&study.id].cursor;
        let body = "{\"format\":1,\"strings\":[],\"layouts\":[],\"trials\":[{\"id\":1}]}".to_owned();
        assert!(store.save_trial_snapshot(study.id, &TrialSnapshot { cursor, body }, 2).await.unwrap());
        let (_, trials) = storing_after(usize::MAX).snapshot(&store, study.id, &reading, cold).await.unwrap();
        assert_eq!(*trials, store.all_trials(study.id).await.unwrap());
    }

    /// The mirrors hold no more than their budget in bytes whatever the trials hold: the least
    /// recently read study goes first, and a study larger than the budget alone is read whole
    /// and not kept.
    #[tokio::test]
    async fn the_mirrors_hold_no_more_than_their_budget() {
        let store = testing::store().await;
        let mut studies = Vec::new();
        for name in ["a", "b", "c"] {
            let study = testing::study(&store, name, serde_json::json!({})).await;
            for k in 0..40 {
                large_trial(&store, &study, k as f64 / 40.0).await;
            }
            studies.push(study);
        }
        let reading = tokio::sync::Mutex::new(());
        let probe = Mirrors::new(usize::MAX);
        let cold = || async {};
        probe.snapshot(&store, studies[0].id, &reading, cold).await.unwrap();
        let one = probe.usage().1;
        assert!(one > 40 * 1000, "{one} bytes");
        // Room for two studies, not three.
        let mirrors = Mirrors::new(2 * one + one / 2);
        for s in &studies {
            let (_, trials) = mirrors.snapshot(&store, s.id, &reading, cold).await.unwrap();
            assert_eq!(trials.len(), 40);
            let (_, held) = mirrors.usage();
            assert!(held <= 2 * one + one / 2, "{held} bytes held");
        }
        assert_eq!(mirrors.usage(), (2, 2 * one), "the least recently read study went");
        // A study larger than the whole budget is read and not kept.
        let small = Mirrors::new(one / 2);
        let (_, trials) = small.snapshot(&store, studies[1].id, &reading, cold).await.unwrap();
        assert_eq!(trials.len(), 40);
        assert_eq!(small.usage(), (0, 0));
        // While its reader holds it, the next reader shares it (no second whole read), brought
        // up to date by the changes alone; once nobody holds it, it is read whole again.
        let read_whole = std::cell::Cell::new(0);
        let counted = || async { read_whole.set(read_whole.get() + 1) };
        large_trial(&store, &studies[1], 0.5).await;
        let (_, again) = small.snapshot(&store, studies[1].id, &reading, counted).await.unwrap();
        assert_eq!((again.len(), read_whole.get()), (41, 0), "caught up from the held read");
        let (_, shared) = small.snapshot(&store, studies[1].id, &reading, counted).await.unwrap();
        assert!(Arc::ptr_eq(&again, &shared), "one read shared");
        drop((trials, again, shared));
        small.snapshot(&store, studies[1].id, &reading, counted).await.unwrap();
        assert_eq!(read_whole.get(), 1, "nobody held it: read whole");
        // Kept mirrors are brought up to date by the changes alone, bytes included.
        large_trial(&store, &studies[2], 0.99).await;
        let (_, trials) = mirrors.snapshot(&store, studies[2].id, &reading, cold).await.unwrap();
        assert_eq!(trials.len(), 41);
        assert_eq!(mirrors.usage().1, one + PackedTrials::from_trials(&trials).memory_bytes());
        // Readers of an unchanged study share one unpacked copy while one holds it.
        let (_, again) = mirrors.snapshot(&store, studies[2].id, &reading, cold).await.unwrap();
        assert!(Arc::ptr_eq(&trials, &again), "one copy shared");
    }
}
