//! The trials of the studies being suggested for, as the engine last read them, brought up to
//! date by reading only the trials written since (the store's change cursor,
//! `Store::trial_changes`): a suggest or a refill of a study of 10,000 trials reads the few rows
//! that changed, not 10,000. A delete makes the next read start over (the store says so).
//!
//! Bounded: mirrors hold at most [`MAX_MIRRORED_TRIALS`] trials in all; the least recently read
//! studies' mirrors go first. Must not decide anything about the trials: it only reads them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bo_core::Trial;
use bo_store::{Basis, Cursor, Store};

use super::EngineError;

/// Trials kept in all mirrors at once (about a kilobyte each).
pub const MAX_MIRRORED_TRIALS: usize = 400_000;

/// Changed trials read per round trip while catching up.
const PAGE: i64 = 10_000;

/// One study's mirror.
struct Mirror {
    cursor: Cursor,
    /// In id order.
    trials: Arc<Vec<Trial>>,
    /// When it was last read, in [`Mirrors`]' ticks.
    used: u64,
}

/// Every study's mirror.
#[derive(Default)]
pub struct Mirrors {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    studies: HashMap<i64, Mirror>,
    tick: u64,
}

impl Mirrors {
    /// The study's basis and every trial (without intermediate measurements), as
    /// `Store::suggest_snapshot` reads them: the basis first (in the first page's read), so a
    /// change made while the trials are read moves the study past it. `reading` is the study's
    /// own lock (its slot's): one reader of a study at a time, so two never take its mirror apart
    /// at once.
    pub async fn snapshot(
        &self,
        store: &Store,
        study_id: i64,
        reading: &tokio::sync::Mutex<()>,
    ) -> Result<(Basis, Arc<Vec<Trial>>), EngineError> {
        let _one_reader = reading.lock().await;
        let (mut cursor, mut trials) = {
            let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            match inner.studies.remove(&study_id) {
                Some(m) => (m.cursor, m.trials),
                None => (Cursor::START, Arc::new(Vec::new())),
            }
        };
        let mut changes = store.trial_changes(study_id, cursor, PAGE, usize::MAX).await?;
        // The basis as the first page's read found it, before any trial was read.
        let basis = changes.basis();
        loop {
            if changes.reset {
                trials = Arc::new(Vec::new());
            }
            if !changes.trials.is_empty() {
                let held = Arc::make_mut(&mut trials);
                for trial in changes.trials {
                    match held.binary_search_by_key(&trial.id, |t| t.id) {
                        Ok(i) => held[i] = trial,
                        Err(i) => held.insert(i, trial),
                    }
                }
            }
            cursor = changes.cursor;
            if !changes.more {
                break;
            }
            changes = store.trial_changes(study_id, cursor, PAGE, usize::MAX).await?;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.tick += 1;
        let used = inner.tick;
        inner.studies.insert(study_id, Mirror { cursor, trials: trials.clone(), used });
        // Over the budget: the least recently read go (never the one just read).
        let mut total: usize = inner.studies.values().map(|m| m.trials.len()).sum();
        while total > MAX_MIRRORED_TRIALS {
            let Some((&victim, _)) = inner.studies.iter().filter(|(id, _)| **id != study_id).min_by_key(|(_, m)| m.used) else { break };
            if let Some(m) = inner.studies.remove(&victim) {
                total -= m.trials.len();
            }
        }
        Ok((basis, trials))
    }

    /// Forgets a deleted study's mirror.
    pub fn remove(&self, study_id: i64) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).studies.remove(&study_id);
    }
}
