//! A pool of learning curves: configurations with their whole curves, drawn from the synthetic
//! family or read from real training ([`RealCurves`]). `bo-bench stopping-pool` draws from a
//! pool at random; `bo-bench curves --pools` lets a designer choose from it, each suggestion
//! answered by the pooled configuration nearest to it ([`Pool::nearest`]) — a tabular
//! benchmark, as HPOBench and LCBench serve theirs, so bo's designers and rules run on real
//! curves in seconds, with any number of workers.
//!
//! Must not do: train anything; the curves come from `bench/peers/real_curves.py export` or from
//! [`crate::curves`]' family.

use bo_core::{Assignment, Domain, ParamValue, SearchSpace};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::curves::{CurveProblem, EPOCHS, space};
use crate::predictions::{self, RealCurves, Sample};

/// A pool of curves (values to maximise), each of `steps` steps.
pub struct Pool {
    /// Its name.
    pub name: String,
    pub(crate) steps: usize,
    pub(crate) space: SearchSpace,
    pub(crate) samples: Vec<Sample>,
    /// Each sample's coordinates for [`Pool::nearest`].
    coordinates: Vec<Vec<Coordinate>>,
}

/// One parameter's place in the distance: a unit-cube coordinate, a categorical value, or
/// inactive (a conditional parameter whose parent's value leaves it out).
#[derive(Clone, Debug, PartialEq)]
enum Coordinate {
    Unit(f64),
    Category(String),
    Inactive,
}

impl Pool {
    /// `real`'s curves.
    pub fn real(real: RealCurves) -> Pool {
        Pool::new(real.problem, real.steps, real.space, real.samples)
    }

    /// `size` random configurations of the synthetic `problem`, with its noise.
    pub fn synthetic(problem: &CurveProblem, size: usize, seed: u64) -> Pool {
        let mut rng = StdRng::seed_from_u64(seed);
        let samples = (0..size).map(|_| predictions::train(problem, &mut rng)).collect();
        Pool::new(problem.name.into(), EPOCHS, space(), samples)
    }

    fn new(name: String, steps: usize, space: SearchSpace, samples: Vec<Sample>) -> Pool {
        let coordinates = samples.iter().map(|s| coordinates(&space, &s.assignment)).collect();
        Pool { name, steps, space, samples, coordinates }
    }

    /// The pooled configuration nearest to `a`: squared distance in the unit cube over the
    /// numeric parameters, and 1 for each categorical parameter whose value differs or parameter
    /// active in one and not the other. Ties go to the first pooled.
    pub fn nearest(&self, a: &Assignment) -> usize {
        let target = coordinates(&self.space, a);
        let distance = |c: &[Coordinate]| -> f64 {
            c.iter()
                .zip(&target)
                .map(|pair| match pair {
                    (Coordinate::Unit(x), Coordinate::Unit(y)) => (x - y).powi(2),
                    (x, y) if x == y => 0.0,
                    _ => 1.0,
                })
                .sum()
        };
        let mut best = (0, f64::INFINITY);
        for (k, c) in self.coordinates.iter().enumerate() {
            let d = distance(c);
            if d < best.1 {
                best = (k, d);
            }
        }
        best.0
    }

    /// The best final value in the pool.
    pub fn best_final(&self) -> f64 {
        self.samples.iter().map(|s| s.curve[self.steps - 1]).fold(f64::NEG_INFINITY, f64::max)
    }
}

fn coordinates(space: &SearchSpace, a: &Assignment) -> Vec<Coordinate> {
    space
        .params()
        .into_iter()
        .map(|p| match (a.get(&p.id), &p.domain) {
            (None, _) => Coordinate::Inactive,
            (Some(ParamValue::Categorical(c)), Domain::Categorical { .. }) => Coordinate::Category(c.to_string()),
            (Some(v), _) => p.to_unit(v).map_or(Coordinate::Inactive, Coordinate::Unit),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pooled configuration is its own nearest, and a point between two is answered by
    /// the closer.
    #[test]
    fn a_pooled_configuration_is_its_own_nearest() {
        let problem = crate::curves::problems().into_iter().next().unwrap();
        let pool = Pool::synthetic(&problem, 40, 5);
        for (k, s) in pool.samples.iter().enumerate() {
            assert_eq!(pool.nearest(&s.assignment), k);
        }
        let (a, b) = (pool.space.encode(&pool.samples[0].assignment), pool.space.encode(&pool.samples[1].assignment));
        let near_a: Vec<f64> = a.iter().zip(&b).map(|(x, y)| 0.9 * x + 0.1 * y).collect();
        let nearest = pool.nearest(&pool.space.decode(&near_a));
        assert_ne!(nearest, 1, "a point a tenth of the way from 0 to 1 is not answered by 1");
    }
}
