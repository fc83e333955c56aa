//! A study's fitted model, in one room: what it is ([`FittedModel`]), how one is made and how it
//! proposes — the CPU work, plain functions a blocking thread runs — and its lifecycle in the
//! engine: read, fitted or taken up, kept, and let go.
//!
//! - `fit.rs` — a fit: partial trials observed at their predicted final values, the designer
//!   fitted or a stored fit restored, seeded by the study ([`study_seed`]); the quasi-random
//!   stand-in when a designer fails; a designer's panic a failure like any other ([`guarded`]).
//! - `propose.rs` — proposals from a fitted model brought up to the study's trials.
//! - `lifecycle.rs` — the engine's side: which model a suggest uses (`Engine::model_for`), the
//!   warm start (cache, else database), another replica's fit taken up, a fit under a permit,
//!   the result kept (database and cache), and `Engine::refit_study`, which chains them.
//! - `cache.rs` — the memory-budgeted map of each study's last fitted model.
//!
//! Must not: hold a lock another request waits on while it computes, or compute inside a
//! store transaction; only `lifecycle.rs` reads or writes the store.

mod cache;
mod fit;
mod lifecycle;
mod propose;

use std::collections::HashSet;
use std::sync::Arc;

use bo_core::{Model, ModelState};

pub use cache::ModelCache;
pub(super) use fit::{guarded, study_seed};
pub use lifecycle::RefitOutcome;
pub(super) use lifecycle::{keep, warm_state};

/// The fewest completed trials, and the fraction of those a model was fitted on, that a model
/// may not have been fitted on and still propose: it conditions on them ([`FittedModel::up_to_date`]),
/// but its hyperparameters, `AUTO`'s choice of model and the trust region are theirs to change.
/// A client that completes trials faster than the study is fitted (an objective of
/// milliseconds, many workers) otherwise proposes for long from a model fitted on a fraction of
/// its data: on the held-out suite's problems of low effective dimension in 25–100 dimensions,
/// whose objectives take microseconds, the last fit of 150 trials had seen 30–97 of them, and
/// `AUTO` ended far behind the same server paced to fit every trial (docs/journal/benchmarks.md, "The
/// held-out suite, second pass"). Past this lag a suggest waits a bounded time (the engine's
/// `lag_wait`) for the refit to catch up, and no suggestion is precomputed from the model.
const MODEL_LAG_MIN: usize = 4;
/// See [`MODEL_LAG_MIN`].
const MODEL_LAG_FRACTION: f64 = 0.25;

/// A study's fitted model: a designer's model and what it was fitted on. What the cache
/// holds, the store keeps the state of, and proposals come from.
pub struct FittedModel {
    /// The study's `data_version` at the fit.
    pub data_version: i64,
    /// The revision of the study's space it was fitted for: an open study's space grows, and a
    /// model of another revision is never used ([`ModelCache::get`]).
    pub space_revision: i64,
    /// The trials (ids) the model has seen as completed.
    pub trial_ids: HashSet<i64>,
    /// How many observations the designer was fitted on: all of them, or a large study's subset
    /// (`bo_core::designer::subset`); 0 for a designer that learns nothing, or the stand-in.
    pub fitted_on: usize,
    /// The model.
    pub model: Arc<dyn Model>,
    /// Its state, to warm-start the next fit.
    pub state: ModelState,
    /// The designer failed and this is the quasi-random stand-in: never stored, never a warm
    /// start, replaced by the next fit that succeeds.
    pub fallback: bool,
    /// Whether the designer learns from data (`Designer::learns`): a model of one that does not
    /// answers as well for newer data as for its own (false for the stand-in).
    pub learns: bool,
}

impl FittedModel {
    /// Whether the model may propose for data at `data_version` outside a reproducible study:
    /// fitted on it (or newer), or having seen all but a few of `trials`' completed ones
    /// ([`MODEL_LAG_MIN`], [`MODEL_LAG_FRACTION`]); a stand-in always may (a fit just failed).
    pub fn keeps_up(&self, data_version: i64, trials: &[bo_core::Trial]) -> bool {
        if self.fallback || self.data_version >= data_version {
            return true;
        }
        let allowed = MODEL_LAG_MIN.max((MODEL_LAG_FRACTION * self.trial_ids.len() as f64) as usize);
        let mut unseen = 0;
        for t in trials {
            if t.state.is_completed() && !self.trial_ids.contains(&t.id) {
                unseen += 1;
                if unseen > allowed {
                    return false;
                }
            }
        }
        true
    }

    /// An estimate of the memory it holds, in bytes: the model's own estimate (checked
    /// against a counting allocator for every designer in bo-core's `tests/memory.rs`), the ids
    /// of the trials it has seen, and its state (as JSON in memory, several times its text).
    pub fn memory_bytes(&self) -> usize {
        self.model.memory_bytes() + 16 * self.trial_ids.capacity() + 8 * self.state.0.to_string().len()
    }
}
