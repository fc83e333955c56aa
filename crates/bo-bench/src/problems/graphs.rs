//! Rolland et al.'s GP-sampled functions on fixed dependency graphs (Rolland et al. 2018 §5,
//! Fig. 2): `f(x) = Σ_{edges (a, b)} g_ab(x_a, x_b)`, each
//! `g_ab` an independent draw from a GP with the squared-exponential kernel of length scale 0.2
//! and variance 1/#edges (Rolland et al. 2018's `σ^(i)` rule) on the grid of `GRID` equally spaced values of
//! [0, 1] per variable, drawn exactly through the Cholesky factor of its `GRID² × GRID²`
//! covariance from a fixed seed (`bo_core::embedding`'s normal rows, stable across versions). The
//! star has 10 variables (a centre and 9 leaves), the grid is the 3 × 3 lattice (12 edges,
//! chordless 4-cycles). The true maximum comes from exact max-sum on the true graph
//! (`bo_core::structure`). Problems are minimised, so bo-bench sees `−f`.

use std::sync::OnceLock;

use bo_core::embedding::Embedding;
use bo_core::linalg::Cholesky;
use bo_core::structure::{Factor, Graph, JunctionTree};
use bo_core::{Assignment, Domain, ParamSpec, ParamValue, Scale, SearchSpace};

use super::problem::Problem;
use faer::Mat;

/// Values per variable.
pub const GRID: usize = 20;
/// The sampling kernel's length scale (Rolland et al. 2018: "L^(i) = 0.2 ∗ I_2", read as a length scale, C5).
const LENGTH_SCALE: f64 = 0.2;

/// A sampled graph function.
pub struct GraphFunction {
    /// The true dependency graph.
    pub graph: Graph,
    edges: Vec<(usize, usize)>,
    /// Each edge's table, `x_a`'s index × GRID + `x_b`'s.
    tables: Vec<Vec<f64>>,
    /// max f.
    pub max: f64,
}

impl GraphFunction {
    fn sample(n: usize, edges: Vec<(usize, usize)>, seed: u64) -> GraphFunction {
        let m = GRID;
        let grid = |i: usize| i as f64 / (m - 1) as f64;
        let variance = 1.0 / edges.len() as f64;
        let cov = Mat::from_fn(m * m, m * m, |p, q| {
            let (da, db) = (grid(p / m) - grid(q / m), grid(p % m) - grid(q % m));
            variance * (-(da * da + db * db) / (2.0 * LENGTH_SCALE * LENGTH_SCALE)).exp() + if p == q { 1e-8 } else { 0.0 }
        });
        let chol = Cholesky::new(&cov).expect("the sampling covariance is positive definite");
        let l = chol.l();
        let normals = Embedding::new(seed, m * m);
        let tables: Vec<Vec<f64>> = (0..edges.len())
            .map(|e| {
                let z = normals.row(e as u64);
                (0..m * m).map(|p| (0..=p).map(|q| l[(p, q)] * z[q]).sum()).collect()
            })
            .collect();
        let mut graph = Graph::empty(n);
        for &(a, b) in &edges {
            graph.add_edge(a, b);
        }
        let factors: Vec<Factor> = edges.iter().zip(&tables).map(|(&(a, b), t)| Factor { vars: vec![a, b], table: t.clone() }).collect();
        let (max, _) = JunctionTree::new(&graph).max_sum(&vec![m; n], &factors);
        GraphFunction { graph, edges, tables, max }
    }

    /// f at grid indices `x`.
    pub fn value(&self, x: &[usize]) -> f64 {
        self.edges.iter().zip(&self.tables).map(|(&(a, b), t)| t[x[a] * GRID + x[b]]).sum()
    }

    /// The number of variables.
    pub fn n(&self) -> usize {
        self.graph.n()
    }
}

/// The star: variable 0 joined to 1–9.
pub fn star() -> &'static GraphFunction {
    static STAR: OnceLock<GraphFunction> = OnceLock::new();
    STAR.get_or_init(|| GraphFunction::sample(10, (1..10).map(|leaf| (0, leaf)).collect(), 21))
}

/// The 3 × 3 lattice, variable 3r + c at row r, column c.
pub fn grid() -> &'static GraphFunction {
    static GRID_GRAPH: OnceLock<GraphFunction> = OnceLock::new();
    GRID_GRAPH.get_or_init(|| {
        let mut edges = Vec::new();
        for v in 0..9 {
            if v % 3 < 2 {
                edges.push((v, v + 1));
            }
            if v < 6 {
                edges.push((v, v + 3));
            }
        }
        GraphFunction::sample(9, edges, 22)
    })
}

/// `x0 … x{n−1}`, each DISCRETE on the grid.
pub fn space(n: usize) -> SearchSpace {
    let values: Vec<f64> = (0..GRID).map(|i| i as f64 / (GRID - 1) as f64).collect();
    SearchSpace::new(
        (0..n)
            .map(|i| ParamSpec {
                id: format!("x{i}"),
                domain: Domain::Discrete { values: values.clone() },
                scale: Scale::Linear,
                default: None,
                children: vec![],
            })
            .collect(),
    )
    .expect("benchmark spaces are valid")
}

/// `−f` at an assignment of the grid space.
pub fn eval(f: &GraphFunction, a: &Assignment) -> f64 {
    let x: Vec<usize> = (0..f.n())
        .map(|i| match a.get(&format!("x{i}")) {
            Some(ParamValue::Float(v)) => (v * (GRID - 1) as f64).round() as usize,
            other => panic!("x{i} is {other:?}"),
        })
        .collect();
    -f.value(&x)
}

/// The problems of this family.
pub fn problems() -> Vec<Problem> {
    vec![
        Problem {
            name: "rolland_star_d10",
            dim: 10,
            optimum: -star().max,
            space: || space(10),
            eval: |a| eval(star(), a),
            noise_sd: 0.0,
            graph: Some(|| star().graph.clone()),
            groups: None,
        },
        Problem {
            name: "rolland_grid_d9",
            dim: 9,
            optimum: -grid().max,
            space: || space(9),
            eval: |a| eval(grid(), a),
            noise_sd: 0.0,
            graph: Some(|| grid().graph.clone()),
            groups: None,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stars_maximum_is_exact() {
        // On a star, max f = max over the centre of Σ_leaves max over the leaf.
        let f = star();
        let by_centre = (0..GRID)
            .map(|c| (1..10).map(|leaf| (0..GRID).map(|v| f.tables[leaf - 1][c * GRID + v]).fold(f64::NEG_INFINITY, f64::max)).sum::<f64>())
            .fold(f64::NEG_INFINITY, f64::max);
        assert!((f.max - by_centre).abs() < 1e-12, "{} vs {by_centre}", f.max);
    }

    #[test]
    fn the_samples_are_fixed_and_have_the_recipes_scale() {
        for f in [star(), grid()] {
            let all: Vec<f64> = f.tables.iter().flatten().copied().collect();
            let var = all.iter().map(|v| v * v).sum::<f64>() / all.len() as f64;
            let expected = 1.0 / f.edges.len() as f64;
            assert!(var > 0.2 * expected && var < 5.0 * expected, "variance {var} against {expected}");
            assert!(f.max > 0.0 && f.max.is_finite());
        }
        assert_eq!(grid().graph.edges().len(), 12);
        assert_eq!(star().graph.edges().len(), 9);
    }
}
