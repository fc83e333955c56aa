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
//! When a parameter has a `defaultValue` the study's first point is its starting point (each
//! parameter at its default, or the centre of its range), then the sequence from point 1; every
//! GP designer's initial design is this one, so they all start there.
//!
//! In a space with an always-active real parameter points never repeat, so there trial `n`
//! (in creation order) takes point `n` directly ([`Positional::suggest_indexed`](super::Positional::suggest_indexed)), without looking
//! at the other trials; elsewhere point `n` skips points that would repeat a trial.

use std::sync::Arc;

use rand::Rng;

use super::unlearned::{Seen, Unlearned};
use super::{FitError, Model, Positional};
use crate::optimize::sobol::sobol_point;
use crate::trial::Assignment;

/// The quasi-random designer.
#[derive(Default)]
pub struct QuasiRandomSearch;

impl Unlearned for QuasiRandomSearch {
    fn model(seen: Seen) -> Arc<dyn Model> {
        Arc::new(QuasiRandomModel(seen))
    }
}

struct QuasiRandomModel(Seen);

impl Model for QuasiRandomModel {
    fn suggest(&self, pending: &[Assignment], count: usize, _rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let d = self.0.space.n_params();
        Ok(self.0.draw_distinct(pending, count, |n| self.point(n, d)))
    }

    fn positional(&self) -> Option<&dyn Positional> {
        Some(self)
    }
}

impl Positional for QuasiRandomModel {
    fn suggest_indexed(&self, first: u64, count: usize) -> Option<Vec<Assignment>> {
        if !self.0.space.is_continuous() {
            return None;
        }
        let d = self.0.space.n_params();
        Some((first..first + count as u64).map(|n| self.point(n, d)).collect())
    }
}

impl QuasiRandomModel {
    /// The study's `n`-th point: its starting point first when the space has defaults
    /// (`defaultValue` is "a relatively good starting point", Vertex's proto), then the sequence.
    fn point(&self, n: u64, d: usize) -> Assignment {
        let Seen { space, seed, .. } = &self.0;
        if n == 0 && space.has_defaults() {
            return space.starting_point();
        }
        space.decode(&sobol_point(n, d, *seed))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::designer::testing::fixtures;
    use crate::designer::{Designer, Problem};
    use crate::space::{Scale, SearchSpace};
    use crate::study::{Goal, StudySpec};
    use crate::trial::ParamValue;

    fn first_two(space: SearchSpace) -> (Vec<Assignment>, Option<Vec<Assignment>>) {
        let problem = Problem { spec: StudySpec::new("m", Goal::Maximize, space, "QUASI_RANDOM_SEARCH"), seed: 7, priors: Vec::new() };
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let fitted = QuasiRandomSearch.fit(&problem, &[], None, &mut rng).unwrap();
        (fitted.model.suggest(&[], 2, &mut rng).unwrap(), fitted.model.positional().unwrap().suggest_indexed(0, 2))
    }

    #[test]
    fn a_space_with_defaults_starts_at_them_and_the_centre() {
        let mut roots = fixtures::optimizer_tree().roots().to_vec();
        // optimizer defaults to adam, whose child beta1 has none (its centre); layers has none.
        roots[0].default = Some(ParamValue::Categorical("adam".into()));
        let (points, _) = first_two(SearchSpace::new(roots.clone()).unwrap());
        let start = &points[0];
        assert_eq!(start.get("optimizer"), Some(&ParamValue::Categorical("adam".into())));
        assert_eq!(start.get("beta1"), Some(&ParamValue::Float((0.8 + 0.999) / 2.0)));
        assert_eq!(start.get("momentum"), None);
        assert!(start.get("layers").is_some());
        assert_ne!(&points[1], start, "then the sequence");
        // A log-scaled default-free double starts at its geometric centre.
        roots[1] = crate::space::ParamSpec {
            id: "lr".into(),
            domain: crate::space::Domain::Double { min: 1e-4, max: 1.0 },
            scale: Scale::Log,
            default: Some(ParamValue::Float(0.003)),
            children: vec![],
        };
        let (points, indexed) = first_two(SearchSpace::new(roots).unwrap());
        assert_eq!(points[0].get("lr"), Some(&ParamValue::Float(0.003)));
        assert_eq!(indexed.as_ref(), Some(&points), "indexed by position, the same points");
    }

    #[test]
    fn a_space_without_defaults_is_the_sequence_from_its_first_point() {
        let space = fixtures::optimizer_tree();
        let (points, _) = first_two(space.clone());
        assert_eq!(points[0], space.decode(&sobol_point(0, space.n_params(), 7)));
    }
}
