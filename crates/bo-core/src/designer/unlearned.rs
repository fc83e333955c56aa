//! What the designers that learn nothing share (`RANDOM_SEARCH`, `QUASI_RANDOM_SEARCH`): no
//! settings, no fit — a model that is only the space, the study's seed and the trials seen —
//! and new points drawn so that none repeats a trial while the space has others. An
//! [`Unlearned`] designer names its model; the rest is written here once.
//!
//! Must not: learn from values, or take `algorithmConfig`.

use std::collections::HashSet;
use std::sync::Arc;

use rand::Rng;

use super::config::{FromConfig, no_config};
use super::{ConfigError, Designer, FitError, Fitted, Model, ModelState, Problem};
use crate::space::SearchSpace;
use crate::trial::{Assignment, AssignmentKey, Observation};

/// A designer that learns nothing and takes no settings: its model over the trials seen.
pub(crate) trait Unlearned: Default + Send + Sync + 'static {
    /// The model proposing points after the trials of `seen`.
    fn model(seen: Seen) -> Arc<dyn Model>;
}

impl<T: Unlearned> Designer for T {
    fn fit(&self, problem: &Problem, history: &[Observation], _warm: Option<&ModelState>, _rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let seen =
            Seen { space: problem.spec.space.clone(), seed: problem.seed, history: history.iter().map(|o| o.assignment.clone()).collect() };
        Ok(Fitted { model: T::model(seen), state: ModelState::default() })
    }

    fn learns(&self) -> bool {
        false
    }
}

impl<T: Unlearned> FromConfig for T {
    type Params = ();

    fn parse(config: &serde_json::Value) -> Result<(), ConfigError> {
        no_config(config)
    }

    fn new((): (), _space: &SearchSpace) -> Result<T, ConfigError> {
        Ok(T::default())
    }
}

/// What an unlearned model knows: the space, the study's seed and the trials seen.
pub(crate) struct Seen {
    pub space: SearchSpace,
    pub seed: u64,
    pub history: Vec<Assignment>,
}

impl Seen {
    /// `count` new points drawn by `draw` (given how many trials are seen or pending), none
    /// repeating a trial seen, a pending one or another drawn while the space allows: after
    /// `MAX_TRIES` misses a repeat is accepted, as a small discrete space may have no unseen
    /// point left.
    pub fn draw_distinct(&self, pending: &[Assignment], count: usize, mut draw: impl FnMut(u64) -> Assignment) -> Vec<Assignment> {
        const MAX_TRIES: usize = 64;
        let mut keys: HashSet<AssignmentKey> = self.history.iter().chain(pending).map(Assignment::key).collect();
        let mut index = (self.history.len() + pending.len()) as u64;
        let mut next = || {
            let point = draw(index);
            index += 1;
            point
        };
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let mut candidate = next();
            for _ in 1..MAX_TRIES {
                if !keys.contains(&candidate.key()) {
                    break;
                }
                candidate = next();
            }
            keys.insert(candidate.key());
            out.push(candidate);
        }
        out
    }
}
