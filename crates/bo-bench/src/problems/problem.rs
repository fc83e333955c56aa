//! What a benchmark problem is: its space, its function, its optimum, and the structure it is
//! built on when it has one (for telling a designer the truth, or scoring what it learned).

use bo_core::structure::Graph;
use bo_core::{Assignment, SearchSpace};

/// A benchmark problem.
pub struct Problem {
    /// Its command-line name.
    pub name: &'static str,
    /// The number of parameters in its space (of the whole tree).
    pub dim: usize,
    /// The minimum value.
    pub optimum: f64,
    /// Builds the search space.
    pub space: fn() -> SearchSpace,
    /// Evaluates an assignment (noise-free).
    pub eval: fn(&Assignment) -> f64,
    /// The standard deviation of the noise each observation carries (regret is measured on the
    /// noise-free value).
    pub noise_sd: f64,
    /// For a function on a known dependency graph: it, to score a model's learned graph.
    pub graph: Option<fn() -> Graph>,
    /// For an additive function of disjoint groups: the groups' parameter indices (what
    /// `ADD_GP_UCB` is told for Kandasamy et al. 2015's "Add-*").
    pub groups: Option<fn() -> Vec<Vec<usize>>>,
}

impl Problem {
    /// The structure the function is built on, as the `algorithmConfig` that tells it to the
    /// designer: `groups` for `ADD_GP_UCB` (Kandasamy et al. 2015's "Add-*"), `edges` for `OVERLAP_ADD_GP`
    /// (Rolland et al. 2018's "Oracle"). `None` for a problem without one.
    pub fn true_structure(&self) -> Option<serde_json::Value> {
        let ids: Vec<String> = (self.space)().params().iter().map(|p| p.id.clone()).collect();
        let name = |i: usize| ids[i].clone();
        if let Some(groups) = self.groups {
            let groups: Vec<Vec<String>> = groups().into_iter().map(|g| g.into_iter().map(name).collect()).collect();
            return Some(serde_json::json!({ "groups": groups }));
        }
        let graph = self.graph?;
        let edges: Vec<[String; 2]> = graph().edges().into_iter().map(|(a, b)| [name(a), name(b)]).collect();
        Some(serde_json::json!({ "edges": edges }))
    }

    /// The dependency graph the function is built on — disjoint groups read as cliques — to
    /// score a model's learned structure against. `None` for a problem without one.
    pub fn true_graph(&self) -> Option<Graph> {
        if let Some(graph) = self.graph {
            return Some(graph());
        }
        let mut graph = Graph::empty(self.dim);
        for group in (self.groups?)() {
            for (k, &a) in group.iter().enumerate() {
                group[k + 1..].iter().for_each(|&b| graph.add_edge(a, b));
            }
        }
        Some(graph)
    }
}
