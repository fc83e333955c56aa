//! Exact maximisation of a sum of factors over a discrete grid by max-sum message passing on a
//! junction tree: Rolland et al. 2018's (Rolland et al. 2018) §3.2 for its overlapping additive acquisition
//! `Σ_c φ^(c)(x^(c))`, made executable in four steps:
//!
//! 1. triangulate the dependency graph by greedy min-fill elimination (ties: fewest neighbours,
//!    then lowest index; C2), its maximal cliques read off the elimination;
//! 2. join them by a maximum-weight spanning forest of the clique graph (weights |C_a ∩ C_b|,
//!    Kruskal), which has the running-intersection property;
//! 3. give each factor to exactly **one** node that holds its variables — the first in
//!    breadth-first order — where the paper's Eq. (7) can count a factor twice (C3);
//! 4. pass max-marginals up (the paper's Algorithm 2) keeping, for each separator assignment,
//!    the best assignment of the node, and decode the maximiser top-down — the step the paper's
//!    Algorithm 2 omits (C4). Ties go to the lowest index.
//!
//! Cost: Σ over nodes of the product of their variables' grid sizes — exponential in the largest
//! clique of the triangulated graph, linear in the number of nodes.
//!
//! Must not know about GPs or search spaces: variables are indices, values are grid indices.

use super::Graph;

/// A table over a few variables: `table[i]` is the value at the assignment whose mixed-radix
/// index is `i` (the last variable fastest) over the variables' grid sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Factor {
    /// The variables, sorted.
    pub vars: Vec<usize>,
    /// One value per assignment.
    pub table: Vec<f64>,
}

/// A junction forest of a graph's triangulation.
#[derive(Clone, Debug)]
pub struct JunctionTree {
    /// Each node's variables, sorted.
    nodes: Vec<Vec<usize>>,
    /// Each node's parent (`None` for a root).
    parent: Vec<Option<usize>>,
    /// The nodes in breadth-first order from the roots.
    order: Vec<usize>,
}

impl JunctionTree {
    /// The junction forest of `graph`'s min-fill triangulation.
    pub fn new(graph: &Graph) -> JunctionTree {
        let nodes = triangulated_cliques(graph);
        // Kruskal on the clique graph, heaviest separators first.
        let mut edges: Vec<(usize, usize, usize)> = Vec::new();
        for a in 0..nodes.len() {
            for b in a + 1..nodes.len() {
                let w = nodes[a].iter().filter(|v| nodes[b].contains(v)).count();
                if w > 0 {
                    edges.push((w, a, b));
                }
            }
        }
        edges.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
        let mut component: Vec<usize> = (0..nodes.len()).collect();
        fn root(c: &mut [usize], mut i: usize) -> usize {
            while c[i] != i {
                c[i] = c[c[i]];
                i = c[i];
            }
            i
        }
        let mut adjacent = vec![Vec::new(); nodes.len()];
        for (_, a, b) in edges {
            let (ra, rb) = (root(&mut component, a), root(&mut component, b));
            if ra != rb {
                component[ra.max(rb)] = ra.min(rb);
                adjacent[a].push(b);
                adjacent[b].push(a);
            }
        }
        let mut parent = vec![None; nodes.len()];
        let mut seen = vec![false; nodes.len()];
        let mut order = Vec::with_capacity(nodes.len());
        for start in 0..nodes.len() {
            if seen[start] {
                continue;
            }
            seen[start] = true;
            let mut queue = std::collections::VecDeque::from([start]);
            while let Some(c) = queue.pop_front() {
                order.push(c);
                for &n in &adjacent[c] {
                    if !seen[n] {
                        seen[n] = true;
                        parent[n] = Some(c);
                        queue.push_back(n);
                    }
                }
            }
        }
        JunctionTree { nodes, parent, order }
    }

    /// Each node's variables.
    pub fn nodes(&self) -> &[Vec<usize>] {
        &self.nodes
    }

    /// Each node's parent.
    pub fn parents(&self) -> &[Option<usize>] {
        &self.parent
    }

    /// The size of the largest node (the triangulated graph's largest clique).
    pub fn max_clique(&self) -> usize {
        self.nodes.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The node each factor is added into: the first node in breadth-first order that holds all
    /// its variables. Panics if none does (a factor over variables no clique joins).
    pub fn assign(&self, factors: &[Factor]) -> Vec<usize> {
        factors
            .iter()
            .map(|f| {
                *self
                    .order
                    .iter()
                    .find(|&&c| f.vars.iter().all(|v| self.nodes[c].binary_search(v).is_ok()))
                    .unwrap_or_else(|| panic!("no junction-tree node holds the factor over {:?}", f.vars))
            })
            .collect()
    }

    /// The maximum of `Σ factors` over the grid (`cards[v]` values for variable `v`) and a
    /// maximiser, each variable's grid index.
    pub fn max_sum(&self, cards: &[usize], factors: &[Factor]) -> (f64, Vec<usize>) {
        let home = self.assign(factors);
        // Each node's belief: its factors, then its children's messages.
        let mut belief: Vec<Vec<f64>> = self.nodes.iter().map(|vars| vec![0.0; size(vars, cards)]).collect();
        for (f, &c) in factors.iter().zip(&home) {
            add_into(&mut belief[c], &self.nodes[c], f, cards);
        }
        // For each non-root node: the best assignment of the node per separator assignment.
        let mut best_given: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for &c in self.order.iter().rev() {
            let Some(p) = self.parent[c] else { continue };
            let sep: Vec<usize> = self.nodes[c].iter().copied().filter(|v| self.nodes[p].contains(v)).collect();
            let mut message = vec![f64::NEG_INFINITY; size(&sep, cards)];
            let mut arg = vec![0; message.len()];
            for (i, (&v, s)) in belief[c].iter().zip(sub_indices(&self.nodes[c], &sep, cards)).enumerate() {
                if v > message[s] {
                    message[s] = v;
                    arg[s] = i;
                }
            }
            best_given[c] = arg;
            let message = Factor { vars: sep, table: message };
            add_into(&mut belief[p], &self.nodes[p].clone(), &message, cards);
        }
        let mut assignment = vec![usize::MAX; cards.len()];
        let mut total = 0.0;
        for &c in &self.order {
            let i = match self.parent[c] {
                None => {
                    let (i, v) = belief[c].iter().enumerate().fold((0, f64::NEG_INFINITY), |b, (i, &v)| if v > b.1 { (i, v) } else { b });
                    total += v;
                    i
                }
                Some(p) => {
                    let sep: Vec<usize> = self.nodes[c].iter().copied().filter(|v| self.nodes[p].contains(v)).collect();
                    best_given[c][index_of(&sep, cards, &assignment)]
                }
            };
            for (v, x) in self.nodes[c].iter().zip(unravel(i, &self.nodes[c], cards)) {
                assignment[*v] = x;
            }
        }
        (total, assignment)
    }
}

/// The maximal cliques of `graph` after min-fill elimination (each eliminated vertex with its
/// remaining neighbours; subsets dropped), each sorted.
fn triangulated_cliques(graph: &Graph) -> Vec<Vec<usize>> {
    let n = graph.n();
    let mut adj: Vec<std::collections::BTreeSet<usize>> = (0..n).map(|v| graph.neighbours(v).into_iter().collect()).collect();
    let mut alive = vec![true; n];
    let mut cliques: Vec<Vec<usize>> = Vec::new();
    for _ in 0..n {
        let fill = |v: usize, adj: &[std::collections::BTreeSet<usize>]| {
            let nb: Vec<usize> = adj[v].iter().copied().collect();
            let mut missing = 0;
            for (k, &a) in nb.iter().enumerate() {
                missing += nb[k + 1..].iter().filter(|b| !adj[a].contains(b)).count();
            }
            missing
        };
        let v = (0..n).filter(|&v| alive[v]).min_by_key(|&v| (fill(v, &adj), adj[v].len(), v)).expect("a vertex is left");
        let nb: Vec<usize> = adj[v].iter().copied().collect();
        for &a in &nb {
            for &b in &nb {
                if a != b {
                    adj[a].insert(b);
                }
            }
            adj[a].remove(&v);
        }
        alive[v] = false;
        let mut clique = nb;
        clique.push(v);
        clique.sort_unstable();
        cliques.push(clique);
    }
    let mut maximal: Vec<Vec<usize>> = Vec::new();
    for c in &cliques {
        let inside = |big: &Vec<usize>| c.iter().all(|v| big.binary_search(v).is_ok());
        if !cliques.iter().any(|o| o.len() > c.len() && inside(o)) && !maximal.contains(c) {
            maximal.push(c.clone());
        }
    }
    maximal
}

/// The number of assignments of `vars`.
fn size(vars: &[usize], cards: &[usize]) -> usize {
    vars.iter().map(|&v| cards[v]).product()
}

/// The values of `vars` at mixed-radix index `i` (last variable fastest).
fn unravel(mut i: usize, vars: &[usize], cards: &[usize]) -> Vec<usize> {
    let mut out = vec![0; vars.len()];
    for (k, &v) in vars.iter().enumerate().rev() {
        out[k] = i % cards[v];
        i /= cards[v];
    }
    out
}

/// The index over `vars` of a full assignment.
fn index_of(vars: &[usize], cards: &[usize], assignment: &[usize]) -> usize {
    vars.iter().fold(0, |i, &v| i * cards[v] + assignment[v])
}

/// For every assignment index over `vars`, the index over `sub` (a subset of `vars`) of the
/// same assignment: one pass with a mixed-radix counter, no allocation per entry.
fn sub_indices(vars: &[usize], sub: &[usize], cards: &[usize]) -> Vec<usize> {
    // The stride of each of `vars` in `sub`'s index (0 when not in `sub`).
    let strides: Vec<usize> = vars
        .iter()
        .map(|v| match sub.iter().position(|u| u == v) {
            Some(k) => sub[k + 1..].iter().map(|&u| cards[u]).product(),
            None => 0,
        })
        .collect();
    let total = size(vars, cards);
    let mut out = Vec::with_capacity(total);
    let mut digits = vec![0; vars.len()];
    let mut index = 0;
    for _ in 0..total {
        out.push(index);
        // Increment the last variable fastest, carrying.
        for k in (0..vars.len()).rev() {
            digits[k] += 1;
            index += strides[k];
            if digits[k] < cards[vars[k]] {
                break;
            }
            index -= strides[k] * digits[k];
            digits[k] = 0;
        }
    }
    out
}

/// `table += f`, broadcast from `f.vars` (a subset of `vars`).
fn add_into(table: &mut [f64], vars: &[usize], f: &Factor, cards: &[usize]) {
    for (t, j) in table.iter_mut().zip(sub_indices(vars, &f.vars, cards)) {
        *t += f.table[j];
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::*;

    fn graph(n: usize, edges: &[(usize, usize)]) -> Graph {
        let mut g = Graph::empty(n);
        for &(a, b) in edges {
            g.add_edge(a, b);
        }
        g
    }

    /// Random factors on the maximal cliques of `g` (and some on their sub-cliques, so factors
    /// overlap and nest), random grid sizes 2–`m`.
    fn random_factors(g: &Graph, m: usize, rng: &mut StdRng) -> (Vec<usize>, Vec<Factor>) {
        let cards: Vec<usize> = (0..g.n()).map(|_| rng.random_range(2..=m)).collect();
        let mut factors = Vec::new();
        for clique in g.maximal_cliques() {
            let mut sets = vec![clique.clone()];
            if clique.len() > 1 {
                sets.push(clique[..1].to_vec());
            }
            for vars in sets {
                let table = (0..size(&vars, &cards)).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
                factors.push(Factor { vars, table });
            }
        }
        (cards, factors)
    }

    fn brute_force(cards: &[usize], factors: &[Factor]) -> f64 {
        let all: Vec<usize> = (0..cards.len()).collect();
        (0..size(&all, cards))
            .map(|i| {
                let x = unravel(i, &all, cards);
                factors.iter().map(|f| f.table[index_of(&f.vars, cards, &x)]).sum::<f64>()
            })
            .fold(f64::NEG_INFINITY, f64::max)
    }

    fn check(g: &Graph, seed: u64) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (cards, factors) = random_factors(g, 5, &mut rng);
        let tree = JunctionTree::new(g);
        // Running intersection: a variable's nodes are connected in the forest.
        for v in 0..g.n() {
            let holding: Vec<usize> = (0..tree.nodes.len()).filter(|&c| tree.nodes[c].contains(&v)).collect();
            let tops = holding.iter().filter(|&&c| tree.parent[c].is_none_or(|p| !tree.nodes[p].contains(&v))).count();
            assert_eq!(tops, 1, "variable {v}'s nodes form one subtree: {:?}", tree.nodes);
        }
        // Every maximal clique of the graph is inside a node, and every factor is given once.
        for c in g.maximal_cliques() {
            assert!(tree.nodes.iter().any(|n| c.iter().all(|v| n.contains(v))), "clique {c:?} in no node");
        }
        assert_eq!(tree.assign(&factors).len(), factors.len());
        let (value, x) = tree.max_sum(&cards, &factors);
        let at_x: f64 = factors.iter().map(|f| f.table[index_of(&f.vars, &cards, &x)]).sum();
        let best = brute_force(&cards, &factors);
        assert!((value - best).abs() < 1e-12, "max-sum {value} vs brute force {best}");
        assert!((at_x - best).abs() < 1e-12, "the decoded point attains the maximum: {at_x} vs {best}");
    }

    #[test]
    fn message_passing_equals_brute_force_on_small_graphs() {
        // A 4-cycle, a star, a triangle with a pendant,
        // disconnected pieces, a chain, and random graphs on up to 6 variables.
        let cases = [
            graph(4, &[(0, 1), (1, 2), (2, 3), (3, 0)]),
            graph(5, &[(0, 1), (0, 2), (0, 3), (0, 4)]),
            graph(4, &[(0, 1), (1, 2), (0, 2), (2, 3)]),
            graph(6, &[(0, 1), (2, 3), (3, 4)]),
            graph(5, &[(0, 1), (1, 2), (2, 3), (3, 4)]),
            graph(3, &[]),
        ];
        for (k, g) in cases.iter().enumerate() {
            for seed in 0..5 {
                check(g, 100 * k as u64 + seed);
            }
        }
        let mut rng = StdRng::seed_from_u64(7);
        for seed in 0..40 {
            let n = rng.random_range(2..=6);
            let mut g = Graph::empty(n);
            for a in 0..n {
                for b in a + 1..n {
                    if rng.random::<f64>() < 0.45 {
                        g.add_edge(a, b);
                    }
                }
            }
            check(&g, 1000 + seed);
        }
    }

    #[test]
    fn the_3x3_grid_triangulates_with_cliques_of_four() {
        // §7 item 8: min-fill on the 3 × 3 lattice gives a largest clique of 4 (treewidth 3).
        let mut edges = Vec::new();
        for r in 0..3 {
            for c in 0..3 {
                let v = 3 * r + c;
                if c < 2 {
                    edges.push((v, v + 1));
                }
                if r < 2 {
                    edges.push((v, v + 3));
                }
            }
        }
        let tree = JunctionTree::new(&graph(9, &edges));
        assert_eq!(tree.max_clique(), 4, "{:?}", tree.nodes);
        check(&graph(9, &edges), 9);
    }
}
