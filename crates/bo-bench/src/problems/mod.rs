//! Benchmark problems, all minimised, each with its search space and known optimum: one file per
//! family (`classic`, `mixed`, `trees`, `high_dim`, `graphs`), what a problem is (`problem`), the helpers
//! they share (`space`), and here the registry.

pub mod classic;
pub mod graphs;
pub mod high_dim;
pub mod mixed;
mod problem;
pub mod space;
pub mod trees;

pub use problem::Problem;
pub use space::unit_box;

/// Every problem, family by family.
pub fn all() -> Vec<Problem> {
    [classic::problems(), mixed::problems(), trees::problems(), high_dim::problems(), graphs::problems()].into_iter().flatten().collect()
}

/// The problem named `name`.
pub fn by_name(name: &str) -> Option<Problem> {
    all().into_iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use bo_core::{Assignment, Domain, ParamValue};

    use super::*;

    fn at(values: &[(&str, ParamValue)]) -> Assignment {
        Assignment::new(values.iter().map(|(k, v)| ((*k).into(), v.clone())).collect())
    }

    fn box_point(x: &[f64]) -> Assignment {
        Assignment::new(x.iter().enumerate().map(|(i, v)| (format!("x{i}").into(), ParamValue::Float(*v))).collect())
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
        check("michalewicz5", box_point(&[2.202906, 1.570796, 1.284992, 1.923058, 1.720470]), 1e-6);
        check("six_hump_camel", box_point(&[0.0898, -0.7126]), 1e-6);
        check("hartmann6_noisy", box_point(&[0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]), 1e-5);
        let mixed =
            |values: &[ParamValue]| Assignment::new(values.iter().enumerate().map(|(i, v)| (format!("x{i}").into(), v.clone())).collect());
        let (i, f) = (ParamValue::Int, ParamValue::Float);
        check("mixed_styblinski_tang8", mixed(&[i(-3), i(-3), i(-3), i(-3), f(-2.903534), f(-2.903534), f(-2.903534), f(-2.903534)]), 1e-6);
        let mut shift = mixed(&[f(0.85), f(0.15), f(0.35)]);
        shift.insert("c", ParamValue::Categorical("d".into()));
        check("categorical_shift", shift, 1e-15);
        let c = |s: &str| ParamValue::Categorical(s.into());
        check("ackley_categorical", mixed(&[c("0"), c("0"), f(0.0), f(0.0), f(0.0)]), 1e-12);
        check("integer_rosenbrock", mixed(&[i(1), i(1), i(1), i(1), f(0.3), f(0.6)]), 1e-15);
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
    fn the_tree_problems_have_their_published_shapes() {
        let c = |s: &str| ParamValue::Categorical(s.into());
        let f = ParamValue::Float;
        let vgg = (by_name("vgg16_tree").unwrap().space)();
        let continuous = vgg.params().iter().filter(|p| matches!(p.domain, Domain::Double { .. })).count();
        assert_eq!((continuous, vgg.n_params()), (42, 49), "14 vertices of 3 amounts, 7 choices");
        // Zhang, Hung, Lin & Liu's per-cell maxima: cell (z, v) = (1, 1) peaks at 4.1996.
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
        for g in high_dim::additive_hartmann_groups() {
            assert!(graph.has_edge(g[0], g[1]) && graph.has_edge(g[1], g[2]) && graph.has_edge(g[0], g[2]));
        }
        assert_eq!(by_name("rolland_star_d10").unwrap().true_graph().unwrap().edges().len(), 9);
        assert!(by_name("branin").unwrap().true_graph().is_none());
    }

    #[test]
    fn jenatton_leaves_follow_the_published_function() {
        let p = by_name("jenatton").unwrap();
        let c = |s: &str| ParamValue::Categorical(s.into());
        let f = ParamValue::Float;
        assert_eq!((p.eval)(&at(&[("x1", c("1")), ("x3", c("1")), ("r9", f(1.0)), ("x7", f(1.0))])), 2.4);
        assert_eq!((p.eval)(&at(&[("x1", c("0")), ("x2", c("1")), ("r8", f(0.0)), ("x5", f(0.0))])), 0.2);
        assert_eq!((p.space)().n_params(), 9);
    }
}
