//! `RANDOM_SEARCH`: independent uniform points of the unit cube, decoded through the
//! conditional tree (so a child is drawn only when its parent's value activates it, and every
//! value of a CATEGORICAL, INTEGER or DISCRETE parameter is equally likely under a linear
//! scale). Nothing is learned. Takes no `algorithmConfig`.

use std::sync::Arc;

use rand::{Rng, RngExt};

use super::{Designer, FitError, Fitted, Model, ModelState, Problem, draw_distinct};
use crate::space::SearchSpace;
use crate::trial::{Assignment, Observation};

/// The random-search designer.
pub struct RandomSearch;

struct RandomModel {
    space: SearchSpace,
    history: Vec<Assignment>,
}

impl Designer for RandomSearch {
    fn fit(&self, problem: &Problem, history: &[Observation], _warm: Option<&ModelState>, _rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let model = RandomModel { space: problem.spec.space.clone(), history: history.iter().map(|o| o.assignment.clone()).collect() };
        Ok(Fitted { model: Arc::new(model), state: ModelState::default() })
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
}
