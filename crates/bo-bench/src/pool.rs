//! A pool of learning curves: configurations with their whole curves, drawn from the synthetic
//! family or read from real training ([`RealCurves`]). `bo-bench stopping-pool` draws from a
//! pool at random; `bo-bench curves --pools` lets a designer choose anywhere, each suggestion
//! training the blend of the pooled curves nearest to it ([`Pool::blend`]) — a surrogate
//! benchmark, as HPOBench and LCBench serve theirs from tables, so bo's designers and rules run
//! on real curves in seconds, with any number of workers.
//!
//! Must not do: train anything; the curves come from `bench/peers/real_curves.py export` or from
//! [`crate::curves`]' family.

use bo_core::{Assignment, Domain, ParamValue, SearchSpace};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::curves::{CurveProblem, CurveSource, EPOCHS, space};
use crate::predictions::{self, RealCurves, Sample};

/// A pool of curves (values to maximise), each of `steps` steps.
pub struct Pool {
    /// Its name.
    pub name: String,
    pub(crate) steps: usize,
    pub(crate) space: SearchSpace,
    pub(crate) samples: Vec<Sample>,
    /// Each sample's coordinates for [`Pool::blend`].
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

    /// The curve a configuration between the pooled ones would train: Shepard's
    /// inverse-distance weighting of the `k` nearest pooled curves (weights `1/d²`, normalised),
    /// each step's value the weighted mean — a pooled configuration's own curve where `a` is one.
    /// Returns the pooled curves' indices with their weights.
    pub fn blend(&self, a: &Assignment, k: usize) -> Vec<(usize, f64)> {
        let distances = self.distances(a);
        let mut order: Vec<usize> = (0..distances.len()).collect();
        order.sort_by(|&x, &y| distances[x].total_cmp(&distances[y]));
        order.truncate(k.max(1));
        if distances[order[0]] == 0.0 {
            return vec![(order[0], 1.0)];
        }
        let weights: Vec<f64> = order.iter().map(|&i| 1.0 / distances[i]).collect();
        let total: f64 = weights.iter().sum();
        order.into_iter().zip(weights).map(|(i, w)| (i, w / total)).collect()
    }

    /// A blend's value after step `step` (from 1): the weighted mean of its curves' values there.
    pub fn blended(&self, blend: &[(usize, f64)], step: usize) -> f64 {
        blend.iter().map(|&(k, w)| w * self.samples[k].curve[step - 1]).sum()
    }

    /// The squared distance from `a` to each pooled configuration: over the numeric parameters
    /// in the unit cube, and 1 for each categorical parameter whose value differs or parameter
    /// active in one and not the other.
    fn distances(&self, a: &Assignment) -> Vec<f64> {
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
        self.coordinates.iter().map(|c| distance(c)).collect()
    }

    /// The best final value in the pool.
    pub fn best_final(&self) -> f64 {
        self.samples.iter().map(|s| s.curve[self.steps - 1]).fold(f64::NEG_INFINITY, f64::max)
    }
}

/// How many pooled curves a suggestion's curve blends ([`Pool::blend`]).
pub const BLENDED: usize = 3;

/// A pool of curves: a trial trains the blend of the pooled curves nearest to its suggestion
/// ([`Pool::blend`]), and is scored by the blend's final value (real training has no noiseless
/// one).
impl CurveSource for Pool {
    type Training = Vec<(usize, f64)>;

    fn name(&self) -> &str {
        &self.name
    }

    fn space(&self) -> SearchSpace {
        self.space.clone()
    }

    fn steps(&self) -> usize {
        self.steps
    }

    fn begin(&self, a: &Assignment, _: &mut StdRng) -> Vec<(usize, f64)> {
        self.blend(a, BLENDED)
    }

    fn value(&self, blend: &Vec<(usize, f64)>, step: usize, _: &mut StdRng) -> f64 {
        self.blended(blend, step)
    }

    fn truth(&self, blend: &Vec<(usize, f64)>) -> f64 {
        self.blended(blend, self.steps)
    }

    fn optimum(&self) -> f64 {
        self.best_final()
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

    /// A pooled configuration trains its own curve; a point near one leans on it most.
    #[test]
    fn a_pooled_configuration_is_its_own_blend() {
        let problem = crate::curves::problems().into_iter().next().unwrap();
        let pool = Pool::synthetic(&problem, 40, 5);
        for (k, s) in pool.samples.iter().enumerate() {
            assert_eq!(pool.blend(&s.assignment, 3), vec![(k, 1.0)]);
        }
        let (a, b) = (pool.space.encode(&pool.samples[0].assignment), pool.space.encode(&pool.samples[1].assignment));
        let near_a: Vec<f64> = a.iter().zip(&b).map(|(x, y)| 0.95 * x + 0.05 * y).collect();
        let blend = pool.blend(&pool.space.decode(&near_a), 3);
        assert_eq!(blend.len(), 3);
        assert!((blend.iter().map(|(_, w)| w).sum::<f64>() - 1.0).abs() < 1e-12);
        let weight = |k: usize| blend.iter().find(|(i, _)| *i == k).map_or(0.0, |(_, w)| *w);
        assert!(weight(0) > 0.5 && weight(0) > weight(1), "{blend:?}");
    }

    /// A pool of curves serves a run as the family does: a trial trains the blend of the pooled
    /// curves nearest its suggestion, the budget is spent to the step, and the incumbent is
    /// never above the pool's best final value.
    #[test]
    fn a_run_over_a_pool_trains_pooled_curves() {
        let pool = Pool::synthetic(&crate::curves::problems()[1], 80, 9);
        let setup = |rule| crate::curves::Setup {
            algorithm: "GP_BANDIT".into(),
            config: serde_json::Value::Null,
            rule,
            partials: crate::curves::Partials::Model,
            budget: 6 * EPOCHS,
            workers: 2,
        };
        for rule in [crate::curves::Rule::None, crate::curves::Rule::parse("asha").unwrap()] {
            let trace = crate::curves::run(&pool, &setup(rule), 4).unwrap();
            assert_eq!(trace.spent.last(), Some(&(6 * EPOCHS)), "{rule:?}");
            assert!(trace.full >= 1, "{rule:?}");
            let worst = pool.samples.iter().map(|s| s.curve[EPOCHS - 1]).fold(f64::INFINITY, f64::min);
            let best = trace.incumbent.iter().flatten().last().copied().unwrap();
            assert!(best >= worst && best <= pool.best_final() + 1e-12, "{rule:?}: {best}");
        }
    }
}
