//! `RANDOM_SEARCH`: independent uniform points of the unit cube, decoded through the
//! conditional tree (so a child is drawn only when its parent's value activates it, and every
//! value of a CATEGORICAL, INTEGER or DISCRETE parameter is equally likely under a linear
//! scale). Nothing is learned. Takes no `algorithmConfig`.
//!
//! Points avoid repeating a trial where the space allows. In a space with a real parameter
//! that is always active two draws never coincide, so there the `n`-th trial's point is drawn
//! from a generator seeded by the study and `n` alone ([`Positional::suggest_indexed`](super::Positional::suggest_indexed)), without
//! looking at the other trials.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, RngExt, SeedableRng};

use super::unlearned::{Seen, Unlearned};
use super::{FitError, Model, Positional};
use crate::trial::Assignment;

/// The random-search designer.
#[derive(Default)]
pub struct RandomSearch;

impl Unlearned for RandomSearch {
    fn model(seen: Seen) -> Arc<dyn Model> {
        Arc::new(RandomModel(seen))
    }
}

struct RandomModel(Seen);

impl Model for RandomModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let space = &self.0.space;
        let d = space.n_params();
        Ok(self.0.draw_distinct(pending, count, |_| {
            let u: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
            space.decode(&u)
        }))
    }

    fn positional(&self) -> Option<&dyn Positional> {
        Some(self)
    }
}

impl Positional for RandomModel {
    fn suggest_indexed(&self, first: u64, count: usize) -> Option<Vec<Assignment>> {
        let Seen { space, seed, .. } = &self.0;
        if !space.is_continuous() {
            return None;
        }
        let d = space.n_params();
        let points = (first..first + count as u64)
            .map(|n| {
                let mut rng = StdRng::seed_from_u64(seed ^ n.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let u: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
                space.decode(&u)
            })
            .collect();
        Some(points)
    }
}
