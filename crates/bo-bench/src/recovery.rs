//! Scoring a learned structure against the true one: Rolland et al. 2018's CC and CS of a model's graph
//! (or an additive model's groups, read as cliques).

use bo_core::structure::Graph;

/// How much of the true graph a learned one has: CC = shared edges / true edges, CS = shared
/// non-edges / true non-edges (Rolland et al. 2018 §5).
pub fn recovery(truth: &Graph, edges: &[(usize, usize)]) -> (f64, f64) {
    let n = truth.n();
    let mut learned = Graph::empty(n);
    edges.iter().for_each(|&(a, b)| learned.add_edge(a, b));
    let (mut both, mut neither, mut true_edges, mut true_non) = (0, 0, 0, 0);
    for a in 0..n {
        for b in a + 1..n {
            match (truth.has_edge(a, b), learned.has_edge(a, b)) {
                (true, l) => {
                    true_edges += 1;
                    both += usize::from(l);
                }
                (false, l) => {
                    true_non += 1;
                    neither += usize::from(!l);
                }
            }
        }
    }
    (both as f64 / true_edges.max(1) as f64, neither as f64 / true_non.max(1) as f64)
}

/// The edges a model's description names: `OVERLAP_ADD_GP`'s `edges`, or every pair within one
/// of `ADD_GP_UCB`'s `groups` (its graph: disjoint cliques).
pub fn described_edges(description: &serde_json::Value) -> Vec<(usize, usize)> {
    let index = |v: &serde_json::Value| v.as_str().and_then(|s| s.strip_prefix('x')).and_then(|s| s.parse::<usize>().ok());
    if let Some(edges) = description["edges"].as_array() {
        return edges.iter().filter_map(|e| Some((index(&e[0])?, index(&e[1])?))).collect();
    }
    let mut out = Vec::new();
    for group in description["groups"].as_array().into_iter().flatten() {
        let members: Vec<usize> = group.as_array().into_iter().flatten().filter_map(index).collect();
        for (k, &a) in members.iter().enumerate() {
            out.extend(members[k + 1..].iter().map(|&b| (a.min(b), a.max(b))));
        }
    }
    out
}

#[cfg(test)]
mod recovery_tests {
    use super::*;
    use crate::problems::graphs::star;

    #[test]
    fn cc_and_cs_count_edges_and_separations() {
        let truth = &star().graph;
        assert_eq!(recovery(truth, &truth.edges()), (1.0, 1.0));
        assert_eq!(recovery(truth, &[]), (0.0, 1.0));
        let groups = serde_json::json!({"groups": [["x0", "x1", "x2"], ["x3"]]});
        assert_eq!(described_edges(&groups), vec![(0, 1), (0, 2), (1, 2)]);
        let (cc, cs) = recovery(truth, &described_edges(&groups));
        assert!((cc - 2.0 / 9.0).abs() < 1e-12 && (cs - 35.0 / 36.0).abs() < 1e-12);
    }
}
