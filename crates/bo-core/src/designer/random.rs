//! `RANDOM_SEARCH`: independent uniform points of the unit cube, decoded through the
//! conditional tree (so a child is drawn only when its parent's value activates it, and every
//! value of a CATEGORICAL, INTEGER or DISCRETE parameter is equally likely under a linear
//! scale). Nothing is learned. Takes no `algorithmConfig`.
//!
//! Points avoid repeating a trial where the space allows. In a space with a real parameter
//! that is always active two draws never coincide, so there the `n`-th trial's point is drawn
//! from a generator seeded by the study and `n` alone ([`Model::suggest_indexed`]), without
//! looking at the other trials.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

use super::config::{FromConfig, no_config};
use super::{ConfigError, Designer, FitError, Fitted, Model, ModelState, Problem, draw_distinct};
use crate::space::SearchSpace;
use crate::trial::{Assignment, Observation};

/// The random-search designer.
pub struct RandomSearch;

struct RandomModel {
    space: SearchSpace,
    seed: u64,
    history: Vec<Assignment>,
}

impl FromConfig for RandomSearch {
    type Params = ();

    fn parse(config: &serde_json::Value) -> Result<(), ConfigError> {
        no_config(config)
    }

    fn new((): (), _space: &SearchSpace) -> Result<RandomSearch, ConfigError> {
        Ok(RandomSearch)
    }
}

impl Designer for RandomSearch {
    fn fit(&self, problem: &Problem, history: &[Observation], _warm: Option<&ModelState>, _rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let model = RandomModel {
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

impl Model for RandomModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let taken: Vec<Assignment> = self.history.iter().chain(pending).cloned().collect();
        let d = self.space.n_params();
        Ok(draw_distinct(&taken, count, || {
            let u: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
            self.space.decode(&u)
        }))
    }

    fn suggest_indexed(&self, first: u64, count: usize) -> Option<Vec<Assignment>> {
        if !self.space.is_continuous() {
            return None;
        }
        let d = self.space.n_params();
        let points = (first..first + count as u64)
            .map(|n| {
                let mut rng = StdRng::seed_from_u64(self.seed ^ n.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let u: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
                self.space.decode(&u)
            })
            .collect();
        Some(points)
    }
}
