//! Benchmark problems, all minimised, each with its search space and known optimum.
//!
//! Constants: Branin, Hartmann-3/-6, Ackley, Levy, Rosenbrock and Styblinski–Tang as in Surjanovic
//! & Bingham's Virtual Library of Simulation Experiments (the usual BoTorch/Optuna definitions);
//! Jenatton et al. (2017) as in ../shared/algorithms/conditional.md §A5.2 (seed 000's benchmark,
//! a conditional space; optimum 0.1).

use crate::{graphs, high_dim, trees};
use bo_core::{Assignment, Conditional, Domain, ParamSpec, ParamValue, ParentValues, Scale, SearchSpace};

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
    pub graph: Option<fn() -> &'static graphs::GraphFunction>,
    /// For an additive function of disjoint groups: the groups' parameter indices (what
    /// `ADD_GP_UCB` is told for seed 004's "Add-*").
    pub groups: Option<fn() -> Vec<Vec<usize>>>,
}

pub(crate) fn box_space(bounds: &[(f64, f64)]) -> SearchSpace {
    SearchSpace::new(
        bounds
            .iter()
            .enumerate()
            .map(|(i, (lo, hi))| ParamSpec {
                id: format!("x{i}"),
                domain: Domain::Double { min: *lo, max: *hi },
                scale: Scale::Linear,
                default: None,
                children: vec![],
            })
            .collect(),
    )
    .expect("benchmark spaces are valid")
}

/// The unit box `[0, 1]^d` with parameters `x0 … x{d−1}`.
pub fn unit_box(d: usize) -> SearchSpace {
    box_space(&vec![(0.0, 1.0); d])
}

pub(crate) fn coords(a: &Assignment, d: usize) -> Vec<f64> {
    (0..d)
        .map(|i| match a.get(&format!("x{i}")) {
            Some(ParamValue::Float(x)) => *x,
            other => panic!("x{i} is {other:?}"),
        })
        .collect()
}

fn branin(a: &Assignment) -> f64 {
    branin_of(&coords(a, 2))
}

/// Branin at `(u, v) ∈ [−5, 10] × [0, 15]`.
pub(crate) fn branin_of(x: &[f64]) -> f64 {
    let pi = std::f64::consts::PI;
    let (b, c, r, s, t) = (5.1 / (4.0 * pi * pi), 5.0 / pi, 6.0, 10.0, 1.0 / (8.0 * pi));
    (x[1] - b * x[0] * x[0] + c * x[0] - r).powi(2) + s * (1.0 - t) * x[0].cos() + s
}

const HARTMANN_ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];

fn hartmann(x: &[f64], a: &[&[f64]], p: &[&[f64]]) -> f64 {
    -(0..4)
        .map(|i| {
            let inner: f64 = x.iter().enumerate().map(|(j, xj)| a[i][j] * (xj - p[i][j]).powi(2)).sum();
            HARTMANN_ALPHA[i] * (-inner).exp()
        })
        .sum::<f64>()
}

fn hartmann3(a: &Assignment) -> f64 {
    hartmann3_of(&coords(a, 3))
}

/// Hartmann-3 at `x ∈ [0, 1]³`.
pub(crate) fn hartmann3_of(x: &[f64]) -> f64 {
    let am: [&[f64]; 4] = [&[3.0, 10.0, 30.0], &[0.1, 10.0, 35.0], &[3.0, 10.0, 30.0], &[0.1, 10.0, 35.0]];
    let pm: [&[f64]; 4] = [&[0.3689, 0.1170, 0.2673], &[0.4699, 0.4387, 0.7470], &[0.1091, 0.8732, 0.5547], &[0.03815, 0.5743, 0.8828]];
    hartmann(x, &am, &pm)
}

fn hartmann6(a: &Assignment) -> f64 {
    hartmann6_of(&coords(a, 6))
}

/// Hartmann-6 at `x ∈ [0, 1]⁶`.
pub(crate) fn hartmann6_of(x: &[f64]) -> f64 {
    let am: [&[f64]; 4] = [
        &[10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        &[0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        &[3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        &[17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ];
    let pm: [&[f64]; 4] = [
        &[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        &[0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        &[0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        &[0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ];
    hartmann(x, &am, &pm)
}

fn ackley(x: &[f64]) -> f64 {
    let d = x.len() as f64;
    let tau = std::f64::consts::TAU;
    let s1 = x.iter().map(|v| v * v).sum::<f64>() / d;
    let s2 = x.iter().map(|v| (tau * v).cos()).sum::<f64>() / d;
    -20.0 * (-0.2 * s1.sqrt()).exp() - s2.exp() + 20.0 + std::f64::consts::E
}

fn levy(x: &[f64]) -> f64 {
    let pi = std::f64::consts::PI;
    let w: Vec<f64> = x.iter().map(|v| 1.0 + (v - 1.0) / 4.0).collect();
    let d = w.len();
    let mut f = (pi * w[0]).sin().powi(2);
    for wi in &w[..d - 1] {
        f += (wi - 1.0).powi(2) * (1.0 + 10.0 * (pi * wi + 1.0).sin().powi(2));
    }
    f + (w[d - 1] - 1.0).powi(2) * (1.0 + (2.0 * pi * w[d - 1]).sin().powi(2))
}

fn rosenbrock(x: &[f64]) -> f64 {
    x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum()
}

fn styblinski_tang(x: &[f64]) -> f64 {
    0.5 * x.iter().map(|v| v.powi(4) - 16.0 * v * v + 5.0 * v).sum::<f64>()
}

fn jenatton_space() -> SearchSpace {
    let double = |id: &str, min: f64, max: f64| ParamSpec {
        id: id.into(),
        domain: Domain::Double { min, max },
        scale: Scale::Linear,
        default: None,
        children: vec![],
    };
    let binary = |id: &str, children: Vec<Conditional>| ParamSpec {
        id: id.into(),
        domain: Domain::Categorical { values: vec!["0".into(), "1".into()] },
        scale: Scale::Linear,
        default: None,
        children,
    };
    let under = |value: &str, spec: ParamSpec| Conditional { parent_values: ParentValues::Categorical(vec![value.into()]), spec };
    SearchSpace::new(vec![binary(
        "x1",
        vec![
            under("0", double("r8", 0.0, 1.0)),
            under("0", binary("x2", vec![under("0", double("x4", -1.0, 1.0)), under("1", double("x5", -1.0, 1.0))])),
            under("1", double("r9", 0.0, 1.0)),
            under("1", binary("x3", vec![under("0", double("x6", -1.0, 1.0)), under("1", double("x7", -1.0, 1.0))])),
        ],
    )])
    .expect("the Jenatton space is valid")
}

fn jenatton(a: &Assignment) -> f64 {
    let cat = |id: &str| matches!(a.get(id), Some(ParamValue::Categorical(s)) if s == "1");
    let num = |id: &str| match a.get(id) {
        Some(ParamValue::Float(x)) => *x,
        other => panic!("{id} is {other:?}"),
    };
    match (cat("x1"), cat("x2"), cat("x3")) {
        (false, false, _) => num("x4").powi(2) + 0.1 + num("r8"),
        (false, true, _) => num("x5").powi(2) + 0.2 + num("r8"),
        (true, _, false) => num("x6").powi(2) + 0.3 + num("r9"),
        (true, _, true) => num("x7").powi(2) + 0.4 + num("r9"),
    }
}

/// Every problem.
pub fn all() -> Vec<Problem> {
    vec![
        Problem {
            name: "branin",
            dim: 2,
            optimum: 0.397887,
            space: || box_space(&[(-5.0, 10.0), (0.0, 15.0)]),
            eval: branin,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "hartmann3",
            dim: 3,
            optimum: -3.86278,
            space: || box_space(&[(0.0, 1.0); 3]),
            eval: hartmann3,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "hartmann6",
            dim: 6,
            optimum: -3.32237,
            space: || box_space(&[(0.0, 1.0); 6]),
            eval: hartmann6,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "ackley5",
            dim: 5,
            optimum: 0.0,
            space: || box_space(&[(-32.768, 32.768); 5]),
            eval: |a| ackley(&coords(a, 5)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "levy10",
            dim: 10,
            optimum: 0.0,
            space: || box_space(&[(-10.0, 10.0); 10]),
            eval: |a| levy(&coords(a, 10)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "rosenbrock4",
            dim: 4,
            optimum: 0.0,
            space: || box_space(&[(-5.0, 10.0); 4]),
            eval: |a| rosenbrock(&coords(a, 4)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "styblinski_tang8",
            dim: 8,
            optimum: -39.16616570377142 * 8.0,
            space: || box_space(&[(-5.0, 5.0); 8]),
            eval: |a| styblinski_tang(&coords(a, 8)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem { name: "jenatton", dim: 9, optimum: 0.1, space: jenatton_space, eval: jenatton, noise_sd: 0.0, graph: None, groups: None },
        Problem {
            name: "jenatton_small",
            dim: 9,
            optimum: 0.1,
            space: trees::jenatton_small_space,
            eval: trees::jenatton_small,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "addtree_toy",
            dim: 8,
            optimum: 0.0,
            space: trees::toy_space,
            eval: trees::toy,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "jenatton3",
            dim: 21,
            optimum: 0.05,
            space: trees::jenatton3_space,
            eval: trees::jenatton3,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "branching_nested_synthetic",
            dim: 5,
            optimum: -5.0,
            space: trees::branching_nested_space,
            eval: trees::branching_nested,
            noise_sd: trees::BRANCHING_NESTED_NOISE,
            graph: None,
            groups: None,
        },
        Problem {
            name: "vgg16_tree",
            dim: 49,
            optimum: 0.0,
            space: trees::vgg16_tree_space,
            eval: trees::vgg16_tree,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "branin_d25",
            dim: 25,
            optimum: 0.397887,
            space: || high_dim::centred_box(25),
            eval: high_dim::branin_d25,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "branin_d100",
            dim: 100,
            optimum: 0.397887,
            space: || high_dim::centred_box(100),
            eval: high_dim::branin_d100,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "hartmann6_d100",
            dim: 100,
            optimum: -3.32237,
            space: || high_dim::centred_box(100),
            eval: high_dim::hartmann6_d100,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "additive_hartmann3x8_d24",
            dim: 24,
            optimum: -3.86278 * 8.0,
            space: || unit_box(24),
            eval: high_dim::additive_hartmann3x8_d24,
            noise_sd: 0.0,
            graph: None,
            groups: Some(high_dim::additive_hartmann_groups),
        },
        Problem {
            name: "kandasamy_10_3_3",
            dim: 10,
            optimum: -11.289013,
            space: || high_dim::centred_box(10),
            eval: high_dim::kandasamy_10_3_3,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| high_dim::kandasamy_groups(10, 3, 3)),
        },
        Problem {
            name: "kandasamy_24_11_2",
            dim: 24,
            optimum: -27.356252,
            space: || high_dim::centred_box(24),
            eval: high_dim::kandasamy_24_11_2,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| high_dim::kandasamy_groups(24, 11, 2)),
        },
        Problem {
            name: "kandasamy_40_18_2",
            dim: 40,
            optimum: -44.162320,
            space: || high_dim::centred_box(40),
            eval: high_dim::kandasamy_40_18_2,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| high_dim::kandasamy_groups(40, 18, 2)),
        },
        Problem {
            name: "branin_d25_rotated",
            dim: 25,
            optimum: 0.397887,
            space: || high_dim::centred_box(25),
            eval: high_dim::branin_d25_rotated,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "rolland_star_d10",
            dim: 10,
            optimum: -graphs::star().max,
            space: || graphs::space(10),
            eval: |a| graphs::eval(graphs::star(), a),
            noise_sd: 0.0,
            graph: Some(graphs::star),
            groups: None,
        },
        Problem {
            name: "rolland_grid_d9",
            dim: 9,
            optimum: -graphs::grid().max,
            space: || graphs::space(9),
            eval: |a| graphs::eval(graphs::grid(), a),
            noise_sd: 0.0,
            graph: Some(graphs::grid),
            groups: None,
        },
        Problem {
            name: "kandasamy_96_5_19",
            dim: 96,
            optimum: -119.561866,
            space: || high_dim::centred_box(96),
            eval: high_dim::kandasamy_96_5_19,
            noise_sd: 0.0,
            graph: None,
            groups: Some(|| high_dim::kandasamy_groups(96, 5, 19)),
        },
    ]
}

impl Problem {
    /// The structure the function is built on, as the `algorithmConfig` that tells it to the
    /// designer: `groups` for `ADD_GP_UCB` (seed 004's "Add-*"), `edges` for `OVERLAP_ADD_GP`
    /// (seed 002's "Oracle"). `None` for a problem without one.
    pub fn true_structure(&self) -> Option<serde_json::Value> {
        let ids: Vec<String> = (self.space)().params().iter().map(|p| p.id.clone()).collect();
        let name = |i: usize| ids[i].clone();
        if let Some(groups) = self.groups {
            let groups: Vec<Vec<String>> = groups().into_iter().map(|g| g.into_iter().map(name).collect()).collect();
            return Some(serde_json::json!({ "groups": groups }));
        }
        let graph = self.graph?;
        let edges: Vec<[String; 2]> = graph().graph.edges().into_iter().map(|(a, b)| [name(a), name(b)]).collect();
        Some(serde_json::json!({ "edges": edges }))
    }

    /// The dependency graph the function is built on — disjoint groups read as cliques — to
    /// score a model's learned structure against. `None` for a problem without one.
    pub fn true_graph(&self) -> Option<bo_core::structure::Graph> {
        if let Some(graph) = self.graph {
            return Some(graph().graph.clone());
        }
        let mut graph = bo_core::structure::Graph::empty(self.dim);
        for group in (self.groups?)() {
            for (k, &a) in group.iter().enumerate() {
                group[k + 1..].iter().for_each(|&b| graph.add_edge(a, b));
            }
        }
        Some(graph)
    }
}

/// The problem named `name`.
pub fn by_name(name: &str) -> Option<Problem> {
    all().into_iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(values: &[(&str, ParamValue)]) -> Assignment {
        Assignment(values.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect())
    }

    fn box_point(x: &[f64]) -> Assignment {
        Assignment(x.iter().enumerate().map(|(i, v)| (format!("x{i}"), ParamValue::Float(*v))).collect())
    }

    /// Each problem's value at its known minimiser equals its stated optimum.
    #[test]
    fn paper_optima_are_attained_at_the_known_minimisers() {
        let check = |name: &str, point: Assignment, tol: f64| {
            let p = by_name(name).unwrap();
            (p.space)().check(&point).unwrap();
            let v = (p.eval)(&point);
            assert!((v - p.optimum).abs() < tol, "{name}: f = {v}, optimum {}", p.optimum);
        };
        for x in [[-std::f64::consts::PI, 12.275], [std::f64::consts::PI, 2.275], [9.42478, 2.475]] {
            check("branin", box_point(&x), 1e-5);
        }
        check("hartmann3", box_point(&[0.114614, 0.555649, 0.852547]), 1e-5);
        check("hartmann6", box_point(&[0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]), 1e-5);
        check("ackley5", box_point(&[0.0; 5]), 1e-12);
        check("levy10", box_point(&[1.0; 10]), 1e-12);
        check("rosenbrock4", box_point(&[1.0; 4]), 1e-12);
        check("styblinski_tang8", box_point(&[-2.903534; 8]), 1e-6);
        let c = |s: &str| ParamValue::Categorical(s.into());
        check("jenatton", at(&[("x1", c("0")), ("x2", c("0")), ("r8", ParamValue::Float(0.0)), ("x4", ParamValue::Float(0.0))]), 1e-15);
        let f = ParamValue::Float;
        check(
            "addtree_toy",
            at(&[("r0", f(0.0)), ("r1", f(0.0)), ("t", c("2")), ("p2_0", f(0.0)), ("p2_1", f(0.0)), ("p2_2", f(0.0))]),
            1e-15,
        );
        check("jenatton3", at(&[("c", c("A")), ("vA", f(0.3)), ("cA", c("1")), ("vA1", f(0.3)), ("cA1", c("a")), ("vA1a", f(0.3))]), 1e-15);
        check("branching_nested_synthetic", at(&[("x1", f(6.0)), ("x2", f(0.0)), ("z", c("2")), ("v2", c("1"))]), 1e-3);
        let mut vgg = vec![("b2", c("L2")), ("b3L2", c("L1")), ("b4L2L1", c("L2"))];
        let names: Vec<String> = ["L2", "L2L1", "L2L1L2"].iter().flat_map(|p| (0..3).map(move |j| format!("a{p}_{j}"))).collect();
        for (k, name) in names.iter().enumerate() {
            vgg.push((name.as_str(), f(trees::vgg_centre(&names[k][1..names[k].len() - 2], k % 3))));
        }
        check("vgg16_tree", at(&vgg), 1e-15);
        // Embedded and additive: the optimiser placed on the coordinates the permutation chose.
        let embedded = |d: usize, seed: u64, values: &[f64], rest: f64| {
            let p = high_dim::permutation(d, seed);
            let mut x = vec![rest; d];
            for (k, v) in values.iter().enumerate() {
                x[p[k]] = *v;
            }
            box_point(&x)
        };
        check("branin_d25", embedded(25, 1, &[-0.752212, 0.636667], 0.3), 1e-5);
        check("branin_d100", embedded(100, 1, &[0.085546, -0.696667], -0.9), 1e-5);
        let h6 = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573].map(|v| 2.0 * v - 1.0);
        check("hartmann6_d100", embedded(100, 2, &h6, 0.0), 1e-5);
        check("additive_hartmann3x8_d24", embedded(24, 3, &[0.114614, 0.555649, 0.852547].repeat(8), 0.0), 1e-4);
        let c2 =
            |dp: usize, m: usize| (0..m).flat_map(|_| (0..dp).map(|i| [0.18, 0.58].get(i).copied().unwrap_or(-0.19))).collect::<Vec<f64>>();
        check("kandasamy_10_3_3", embedded(10, 4, &c2(3, 3), 0.0), 1e-5);
        check("kandasamy_24_11_2", embedded(24, 4, &c2(11, 2), 0.0), 1e-5);
        check("kandasamy_40_18_2", embedded(40, 4, &c2(18, 2), 0.0), 1e-5);
        check("kandasamy_96_5_19", embedded(96, 4, &c2(5, 19), 0.0), 1e-4);
    }

    #[test]
    fn the_tree_problems_have_the_reading_s_shapes() {
        let c = |s: &str| ParamValue::Categorical(s.into());
        let f = ParamValue::Float;
        let vgg = (by_name("vgg16_tree").unwrap().space)();
        let continuous = vgg.params().iter().filter(|p| matches!(p.domain, Domain::Double { .. })).count();
        assert_eq!((continuous, vgg.n_params()), (42, 49), "14 vertices of 3 amounts, 7 choices");
        // Seed 003's per-cell maxima (the reading's §B5.1): cell (z, v) = (1, 1) peaks at 4.1996.
        let bn = by_name("branching_nested_synthetic").unwrap();
        let best_11 = (0..20001)
            .map(|i| -(bn.eval)(&at(&[("x1", f(-10.0 + i as f64 * 1e-3)), ("x2", f(0.0)), ("z", c("1")), ("v1", c("1"))])))
            .fold(f64::NEG_INFINITY, f64::max);
        assert!((best_11 - 4.1996).abs() < 1e-3, "{best_11}");
        assert_eq!(bn.noise_sd, 0.2);
        // jenatton3: the wrong choice at every level costs 0.45 more.
        let j3 = by_name("jenatton3").unwrap();
        let worst_path = at(&[("c", c("B")), ("vB", f(0.3)), ("cB", c("2")), ("vB2", f(0.3)), ("cB2", c("b")), ("vB2b", f(0.3))]);
        assert!(((j3.eval)(&worst_path) - 0.5).abs() < 1e-12);
        let toy = by_name("addtree_toy").unwrap();
        assert_eq!((toy.eval)(&at(&[("r0", f(1.0)), ("r1", f(0.0)), ("t", c("1")), ("p1_0", f(0.5)), ("p1_1", f(0.0))])), 1.25);
    }

    #[test]
    fn a_grouped_problem_s_true_graph_has_its_groups_as_cliques() {
        let graph = by_name("additive_hartmann3x8_d24").unwrap().true_graph().unwrap();
        // 8 groups of 3: 3 edges each, none across groups.
        assert_eq!(graph.edges().len(), 24);
        for g in crate::high_dim::additive_hartmann_groups() {
            assert!(graph.has_edge(g[0], g[1]) && graph.has_edge(g[1], g[2]) && graph.has_edge(g[0], g[2]));
        }
        assert_eq!(by_name("rolland_star_d10").unwrap().true_graph().unwrap().edges().len(), 9);
        assert!(by_name("branin").unwrap().true_graph().is_none());
    }

    #[test]
    fn jenatton_leaves_follow_the_reading() {
        let p = by_name("jenatton").unwrap();
        let c = |s: &str| ParamValue::Categorical(s.into());
        let f = ParamValue::Float;
        assert_eq!((p.eval)(&at(&[("x1", c("1")), ("x3", c("1")), ("r9", f(1.0)), ("x7", f(1.0))])), 2.4);
        assert_eq!((p.eval)(&at(&[("x1", c("0")), ("x2", c("1")), ("r8", f(0.0)), ("x5", f(0.0))])), 0.2);
        assert_eq!((p.space)().n_params(), 9);
    }
}
