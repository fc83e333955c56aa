//! `GRID_SEARCH`: every point of a grid over the conditional tree, in a fixed order, each once.
//!
//! The grid of a parameter: every value of a CATEGORICAL or DISCRETE parameter; every value of
//! an INTEGER parameter with at most `gridResolution` values, else `gridResolution` values evenly
//! spread in its scale; `gridResolution` values of a DOUBLE evenly spread in its scale, ends
//! included (one value when min = max). A parameter with children contributes, for each of its
//! grid values, the product of the grids of the children that value activates — so the grid
//! covers each branch of the tree and never sets an inactive parameter.
//!
//! Points are numbered in mixed radix (the first parameter varies fastest) and handed out
//! lowest number first, skipping any point that is already a trial of the study; when none is
//! left the model returns fewer suggestions than asked, which tells the service the grid is
//! exhausted.
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `gridResolution` | 10 | values per DOUBLE (and per large INTEGER) parameter | 1 – 1,000 |

use std::collections::HashSet;
use std::sync::Arc;

use rand::Rng;
use serde::Deserialize;

use super::config::FromConfig;
use super::{ConfigError, Designer, FitError, Fitted, Model, ModelState, Problem};
use crate::space::{Domain, ParamSpec, SearchSpace};
use crate::trial::{Assignment, AssignmentKey, Observation, ParamValue};

/// `algorithmConfig` of `GRID_SEARCH`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GridParams {
    /// Values per DOUBLE parameter.
    pub grid_resolution: u32,
}

impl Default for GridParams {
    fn default() -> Self {
        GridParams { grid_resolution: 10 }
    }
}

impl GridParams {
    /// Checks the ranges of the table above.
    pub fn check(self) -> Result<GridParams, ConfigError> {
        if !(1..=1000).contains(&self.grid_resolution) {
            return Err(ConfigError::Invalid {
                field: "gridResolution".into(),
                reason: format!("{} is outside 1 to 1000", self.grid_resolution),
            });
        }
        Ok(self)
    }
}

/// The grid-search designer.
pub struct GridSearch {
    params: GridParams,
}

impl FromConfig for GridSearch {
    type Params = GridParams;

    fn new(params: GridParams, _space: &SearchSpace) -> Result<GridSearch, ConfigError> {
        Ok(GridSearch { params: params.check()? })
    }
}

struct GridModel {
    grid: Grid,
    history: Vec<Assignment>,
}

impl Designer for GridSearch {
    fn fit(&self, problem: &Problem, history: &[Observation], _warm: Option<&ModelState>, _rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let model = GridModel {
            grid: Grid::new(&problem.spec.space, self.params.grid_resolution as usize),
            history: history.iter().map(|o| o.assignment.clone()).collect(),
        };
        Ok(Fitted { model: Arc::new(model), state: ModelState::default() })
    }

    fn learns(&self) -> bool {
        false
    }
}

impl Model for GridModel {
    fn suggest(&self, pending: &[Assignment], count: usize, _rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let taken: HashSet<AssignmentKey> = self.history.iter().chain(pending).map(Assignment::key).collect();
        let mut out = Vec::with_capacity(count);
        let mut index = 0u128;
        while out.len() < count && index < self.grid.size() {
            let point = self.grid.point(index);
            if !taken.contains(&point.key()) {
                out.push(point);
            }
            index += 1;
        }
        Ok(out)
    }

    fn runs_out(&self) -> bool {
        true
    }
}

/// The grid of a whole search space, with the number of points under every node.
pub struct Grid {
    roots: Vec<GridNode>,
}

struct GridNode {
    id: String,
    /// The grids of the parameter's conditional children, each built once (a child active under
    /// many values shares its grid, so a deep tree costs its size, not a product of its values).
    children: Vec<GridNode>,
    /// Each grid value with the children it activates (indices into `children`) and the number
    /// of points under it.
    values: Vec<(ParamValue, Vec<usize>, u128)>,
    size: u128,
}

impl Grid {
    /// The grid of `space` with `resolution` values per DOUBLE parameter.
    pub fn new(space: &SearchSpace, resolution: usize) -> Grid {
        Grid { roots: space.roots().iter().map(|p| GridNode::new(p, resolution)).collect() }
    }

    /// The number of points (saturating at `u128::MAX`).
    pub fn size(&self) -> u128 {
        self.roots.iter().fold(1u128, |acc, n| acc.saturating_mul(n.size))
    }

    /// Point `index < size()`.
    pub fn point(&self, index: u128) -> Assignment {
        let mut out = Assignment::default();
        decode(&mut self.roots.iter(), index, &mut out);
        out
    }
}

fn decode(nodes: &mut dyn Iterator<Item = &GridNode>, mut index: u128, out: &mut Assignment) {
    for node in nodes {
        let mut sub = index % node.size;
        index /= node.size;
        for (value, active, count) in &node.values {
            if sub < *count {
                out.insert(node.id.clone(), value.clone());
                decode(&mut active.iter().map(|&c| &node.children[c]), sub, out);
                break;
            }
            sub -= count;
        }
    }
}

impl GridNode {
    fn new(p: &ParamSpec, resolution: usize) -> GridNode {
        let children: Vec<GridNode> = p.children.iter().map(|c| GridNode::new(&c.spec, resolution)).collect();
        let values: Vec<(ParamValue, Vec<usize>, u128)> = grid_values(p, resolution)
            .into_iter()
            .map(|v| {
                let active: Vec<usize> = (0..p.children.len()).filter(|&c| p.children[c].parent_values.matches(&v)).collect();
                let count = active.iter().fold(1u128, |acc, &c| acc.saturating_mul(children[c].size));
                (v, active, count)
            })
            .collect();
        let size = values.iter().fold(0u128, |acc, (_, _, c)| acc.saturating_add(*c));
        GridNode { id: p.id.clone(), children, values, size }
    }
}

fn grid_values(p: &ParamSpec, resolution: usize) -> Vec<ParamValue> {
    match &p.domain {
        Domain::Categorical { values } => values.iter().map(|v| ParamValue::categorical(v)).collect(),
        Domain::Discrete { values } => values.iter().copied().map(ParamValue::Float).collect(),
        Domain::Integer { min, max } if (*max as i128 - *min as i128) < resolution as i128 => (*min..=*max).map(ParamValue::Int).collect(),
        Domain::Double { min, max } if min == max => vec![ParamValue::Float(*min)],
        Domain::Integer { .. } | Domain::Double { .. } => {
            let mut out: Vec<ParamValue> = Vec::with_capacity(resolution);
            for i in 0..resolution {
                let u = if resolution == 1 { 0.5 } else { i as f64 / (resolution - 1) as f64 };
                let v = end_exact(p, u);
                if !out.contains(&v) {
                    out.push(v);
                }
            }
            out
        }
    }
}

/// `from_unit`, except that the ends of an INTEGER grid are its exact bounds (a linear-scale
/// integer bucket of `u = 1` is already `max`, but a DOUBLE's `u = 1` may round below `max`).
fn end_exact(p: &ParamSpec, u: f64) -> ParamValue {
    match (&p.domain, u) {
        (Domain::Double { min, .. }, 0.0) => ParamValue::Float(*min),
        (Domain::Double { max, .. }, 1.0) => ParamValue::Float(*max),
        _ => p.from_unit(u),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::testing::fixtures;

    #[test]
    fn grid_counts_each_branch_of_the_tree() {
        // optimizer ∈ {sgd, adam}: sgd → momentum (3 values at resolution 3), adam → beta1 (3)
        // and a root layers ∈ 1..=2: (3 + 3) × 2 = 12 points.
        let space = fixtures::optimizer_tree();
        let grid = Grid::new(&space, 3);
        assert_eq!(grid.size(), 12);
        let points: HashSet<AssignmentKey> = (0..12).map(|i| grid.point(i).key()).collect();
        assert_eq!(points.len(), 12, "every grid point is different");
        for i in 0..12 {
            space.check(&grid.point(i)).unwrap();
        }
    }
}
