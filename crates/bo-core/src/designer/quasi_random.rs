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

use super::{Designer, FitError, Fitted, Model, ModelState, Problem, draw_distinct};
use crate::space::SearchSpace;
use crate::trial::{Assignment, Observation};

/// The quasi-random designer.
pub struct QuasiRandomSearch;

struct QuasiRandomModel {
    space: SearchSpace,
    seed: u64,
    history: Vec<Assignment>,
}

/// Point `index` of the scrambled Sobol sequence in `d` dimensions.
pub fn sobol_point(index: u64, d: usize, seed: u64) -> Vec<f64> {
    const MAX_POINTS: u64 = 1 << 16;
    const MAX_DIMS: usize = sobol_burley::NUM_DIMENSIONS as usize;
    let epoch = index / MAX_POINTS;
    (0..d)
        .map(|dim| {
            let block = (dim / MAX_DIMS) as u64;
            let block_seed = splitmix(seed ^ splitmix(block.wrapping_mul(0x9e37_79b9) ^ epoch.rotate_left(32)));
            let x = sobol_burley::sample((index % MAX_POINTS) as u32, (dim % MAX_DIMS) as u32, block_seed as u32);
            f64::from(x)
        })
        .collect()
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A scrambled Sobol sequence stratifies: of its first 2^k points, exactly one falls in each
    /// of the 2^k equal intervals of any one dimension.
    #[test]
    fn first_points_stratify_each_dimension() {
        for seed in [0, 7, 12345] {
            let points: Vec<Vec<f64>> = (0..64).map(|i| sobol_point(i, 300, seed)).collect();
            for dim in [0, 1, 17, 255, 256, 299] {
                let mut cells: Vec<usize> = points.iter().map(|p| (p[dim] * 64.0) as usize).collect();
                cells.sort_unstable();
                assert_eq!(cells, (0..64).collect::<Vec<_>>(), "dimension {dim}, seed {seed}");
            }
        }
    }
}
