//! Model features of an assignment for GP kernels: one coordinate per parameter of the tree in
//! pre-order. A numeric parameter (DOUBLE, INTEGER, DISCRETE) contributes its unit-cube
//! coordinate ([`SearchSpace::encode`]'s), a CATEGORICAL one its value's index (a category code
//! for the exchangeable kernel). An inactive parameter takes a fixed value — [`INACTIVE`] for
//! numeric, [`INACTIVE_CATEGORY`] for categorical — so two points of the same branch never
//! differ along a dimension that neither uses, and points of different branches are told apart
//! by their parents' values. (The tree kernels of Ma & Blaschko 2020 and Zhang, Hung, Lin & Liu will replace this
//! flattening for conditional spaces.)

use super::encode::INACTIVE;
use super::{Domain, ParamSpec, SearchSpace};
use crate::trial::{Assignment, ParamValue};

/// The category code of an inactive CATEGORICAL parameter.
pub const INACTIVE_CATEGORY: f64 = -1.0;

/// What one feature coordinate holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeatureKind {
    /// A unit-cube coordinate.
    Numeric,
    /// A category code among this many values.
    Categorical(usize),
}

/// The feature map of a search space.
#[derive(Clone, Debug)]
pub struct Features {
    space: SearchSpace,
    kinds: Vec<FeatureKind>,
    has_children: Vec<bool>,
}

impl Features {
    /// The feature map of `space`.
    pub fn new(space: &SearchSpace) -> Features {
        let params = space.params();
        Features {
            kinds: params
                .iter()
                .map(|p| match &p.domain {
                    Domain::Categorical { values } => FeatureKind::Categorical(values.len()),
                    _ => FeatureKind::Numeric,
                })
                .collect(),
            has_children: params.iter().map(|p| !p.children.is_empty()).collect(),
            space: space.clone(),
        }
    }

    /// The number of coordinates.
    pub fn dim(&self) -> usize {
        self.kinds.len()
    }

    /// What coordinate `i` holds.
    pub fn kind(&self, i: usize) -> FeatureKind {
        self.kinds[i]
    }

    /// The numeric coordinates.
    pub fn numeric_dims(&self) -> Vec<usize> {
        (0..self.dim()).filter(|&i| self.kinds[i] == FeatureKind::Numeric).collect()
    }

    /// The categorical coordinates.
    pub fn categorical_dims(&self) -> Vec<usize> {
        (0..self.dim()).filter(|&i| matches!(self.kinds[i], FeatureKind::Categorical(_))).collect()
    }

    /// The features of a feasible assignment.
    pub fn encode(&self, a: &Assignment) -> Vec<f64> {
        // One lookup per parameter: a fit encodes every trial of its subset, and a wide study's
        // ids and values are long.
        self.space
            .params()
            .iter()
            .map(|p| match (&p.domain, a.get(&p.id)) {
                (Domain::Categorical { values }, Some(ParamValue::Categorical(s))) => {
                    values.iter().position(|v| v.as_str() == &**s).map_or(INACTIVE_CATEGORY, |k| k as f64)
                }
                (Domain::Categorical { .. }, _) => INACTIVE_CATEGORY,
                // `SearchSpace::encode`'s coordinate.
                (_, Some(v)) => p.to_unit(v).unwrap_or(INACTIVE),
                (_, None) => INACTIVE,
            })
            .collect()
    }

    /// The features of the assignment at point `u` of the cube: `encode(&space.decode(u))`, equal
    /// to it bit for bit, without building the assignment (a candidate search scores hundreds
    /// of Sobol points and keeps a few).
    pub fn encode_unit(&self, u: &[f64]) -> Vec<f64> {
        assert_eq!(u.len(), self.dim(), "a point of the cube needs one coordinate per parameter");
        fn walk(p: &ParamSpec, u: &[f64], next: &mut usize, active: bool, out: &mut [f64]) {
            let i = *next;
            *next += 1;
            if !active {
                out[i] = if matches!(p.domain, Domain::Categorical { .. }) { INACTIVE_CATEGORY } else { INACTIVE };
                for c in &p.children {
                    walk(&c.spec, u, next, false, out);
                }
                return;
            }
            if let (Domain::Categorical { values }, Some(k)) = (&p.domain, p.category_at(u[i])) {
                // `encode` finds the value's first position.
                out[i] = values.iter().position(|v| *v == values[k]).map_or(INACTIVE_CATEGORY, |k| k as f64);
                if p.children.is_empty() {
                    return;
                }
            }
            let value = p.from_unit(u[i]);
            if !matches!(p.domain, Domain::Categorical { .. }) {
                out[i] = p.to_unit(&value).unwrap_or(INACTIVE);
            }
            for c in &p.children {
                walk(&c.spec, u, next, c.parent_values.matches(&value), out);
            }
        }
        let mut out = vec![0.0; self.dim()];
        let mut next = 0;
        for p in self.space.roots() {
            walk(p, u, &mut next, true, &mut out);
        }
        out
    }

    /// The assignment of features `x` (numeric coordinates rounded to their parameter's values,
    /// and only the parameters active under the decoded parents set).
    pub fn decode(&self, x: &[f64]) -> Assignment {
        let u: Vec<f64> = self
            .kinds
            .iter()
            .zip(x)
            .map(|(kind, v)| match kind {
                FeatureKind::Numeric => *v,
                FeatureKind::Categorical(n) => (v.round().clamp(0.0, (*n - 1) as f64) + 0.5) / *n as f64,
            })
            .collect();
        self.space.decode(&u)
    }

    /// The coordinates a continuous optimiser may move at `a` without changing which
    /// parameters are active: the active numeric parameters that have no children.
    pub fn free_dims(&self, a: &Assignment) -> Vec<usize> {
        self.space
            .params()
            .iter()
            .enumerate()
            .filter(|(i, p)| self.kinds[*i] == FeatureKind::Numeric && !self.has_children[*i] && a.get(&p.id).is_some())
            .map(|(i, _)| i)
            .collect()
    }

    /// The search space.
    pub fn space(&self) -> &SearchSpace {
        &self.space
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::testing::fixtures;

    /// `encode_unit` is `encode ∘ decode` bit for bit, on every type and scale, inactive
    /// branches and the cube's edges included.
    #[test]
    fn features_of_a_point_of_the_cube_are_those_of_its_assignment() {
        let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for space in [fixtures::all_types(), fixtures::optimizer_tree(), fixtures::conditional_three_levels()] {
            let f = Features::new(&space);
            for i in 0..300 {
                let u: Vec<f64> = (0..space.n_params())
                    .map(|k| match (i + k) % 7 {
                        0 => 0.0,
                        1 => 1.0,
                        _ => ((i * 37 + k * 11) % 101) as f64 / 101.0,
                    })
                    .collect();
                assert_eq!(bits(&f.encode_unit(&u)), bits(&f.encode(&space.decode(&u))), "at {u:?}");
            }
        }
    }

    #[test]
    fn features_round_trip_and_mark_inactive_parameters() {
        let space = fixtures::conditional_three_levels();
        let f = Features::new(&space);
        assert_eq!(f.dim(), space.n_params());
        assert_eq!(f.categorical_dims(), vec![0]);
        for i in 0..100 {
            let u: Vec<f64> = (0..space.n_params()).map(|k| ((i * 37 + k * 11) % 100) as f64 / 100.0).collect();
            let a = space.decode(&u);
            let x = f.encode(&a);
            assert_eq!(f.decode(&x), a);
            for (k, p) in space.params().iter().enumerate() {
                if a.get(&p.id).is_none() {
                    assert!(x[k] == INACTIVE || x[k] == INACTIVE_CATEGORY);
                }
            }
            for d in f.free_dims(&a) {
                assert!(!space.params()[d].id.is_empty() && a.get(&space.params()[d].id).is_some());
            }
        }
    }
}
