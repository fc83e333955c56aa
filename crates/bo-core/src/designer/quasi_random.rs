//! `QUASI_RANDOM_SEARCH`: the points of an Owen-scrambled Sobol sequence (Burley 2020, through
//! the `sobol_burley` crate), one dimension per parameter of the tree in pre-order, decoded
//! through the conditional tree — so the sequence respects the tree: a child takes its value from
//! its own dimension, only when active, and the active parameters of each branch stay evenly
//! spread.
//!
//! The study's `n`-th suggestion is the sequence's point `n` (counting completed and in-flight
//! trials), scrambled by the study's seed. The crate gives 2^16 points and 256 dimensions; beyond
//! either, a further block is drawn with its own scramble seed (the crate's documented way to
//! extend it), which keeps each block low-discrepancy and the blocks independent. Values have
//! f32 resolution (2^-24 of the unit interval), ample for a space-filling design. Takes no
//! `algorithmConfig`.
//!
//! In a space with an always-active real parameter points never repeat, so there trial `n`
//! (in creation order) takes point `n` directly ([`Model::suggest_indexed`]), without looking
//! at the other trials; elsewhere point `n` skips points that would repeat a trial.

use std::sync::Arc;

use rand::Rng;

use super::config::{FromConfig, no_config};
use super::{ConfigError, Designer, FitError, Fitted, Model, ModelState, Problem, draw_distinct};
use crate::optimize::sobol::sobol_point;
use crate::space::SearchSpace;
use crate::trial::{Assignment, Observation};

/// The quasi-random designer.
pub struct QuasiRandomSearch;

struct QuasiRandomModel {
    space: SearchSpace,
    seed: u64,
    history: Vec<Assignment>,
}

impl FromConfig for QuasiRandomSearch {
    type Params = ();

    fn parse(config: &serde_json::Value) -> Result<(), ConfigError> {
        no_config(config)
    }

    fn new((): (), _space: &SearchSpace) -> Result<QuasiRandomSearch, ConfigError> {
        Ok(QuasiRandomSearch)
    }
}

impl Designer for QuasiRandomSearch {
    fn fit(&self, problem: &Problem, history: &[Observation], _warm: Option<&ModelState>, _rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let model = QuasiRandomModel {
            space: problem.spec.space.clone(),
            seed: problem.seed,
            history: history.iter().map(|o| o.assignment.clone()).collect(),
        };
        Ok(Fitted { model: Arc::new(model), state: ModelState::default() })
    }

    fn learns(&self) -> bool {
        false
    }
}

impl Model for QuasiRandomModel {
    fn suggest(&self, pending: &[Assignment], count: usize, _rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let taken: Vec<Assignment> = self.history.iter().chain(pending).cloned().collect();
        let d = self.space.n_params();
        let mut index = taken.len() as u64;
        Ok(draw_distinct(&taken, count, || {
            let u = sobol_point(index, d, self.seed);
            index += 1;
            self.space.decode(&u)
        }))
    }

    fn suggest_indexed(&self, first: u64, count: usize) -> Option<Vec<Assignment>> {
        if !self.space.is_continuous() {
            return None;
        }
        let d = self.space.n_params();
        Some((first..first + count as u64).map(|n| self.space.decode(&sobol_point(n, d, self.seed))).collect())
    }
}
