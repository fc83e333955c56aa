//! The structure of additive models: dependency graphs over variables, their maximal cliques
//! (one additive term each, Rolland et al. 2018 §2), and exact maximisation of a sum of factors on a
//! junction tree ([`junction_tree`], Rolland et al. 2018 §3.2).
//!
//! Must not know about GPs, data or search spaces.

pub mod junction_tree;

pub use junction_tree::{Factor, JunctionTree};

/// An undirected graph on vertices `0..n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    adjacent: Vec<Vec<bool>>,
}

impl Graph {
    /// `n` vertices, no edges.
    pub fn empty(n: usize) -> Graph {
        Graph { adjacent: vec![vec![false; n]; n] }
    }

    /// The number of vertices.
    pub fn n(&self) -> usize {
        self.adjacent.len()
    }

    /// Adds the edge a–b (a ≠ b).
    pub fn add_edge(&mut self, a: usize, b: usize) {
        assert_ne!(a, b, "no self-loops");
        self.adjacent[a][b] = true;
        self.adjacent[b][a] = true;
    }

    /// Removes the edge a–b.
    pub fn remove_edge(&mut self, a: usize, b: usize) {
        self.adjacent[a][b] = false;
        self.adjacent[b][a] = false;
    }

    /// Whether a–b is an edge.
    pub fn has_edge(&self, a: usize, b: usize) -> bool {
        self.adjacent[a][b]
    }

    /// The neighbours of `v`, ascending.
    pub fn neighbours(&self, v: usize) -> Vec<usize> {
        (0..self.n()).filter(|&u| self.adjacent[v][u]).collect()
    }

    /// The edges (a < b), in order.
    pub fn edges(&self) -> Vec<(usize, usize)> {
        (0..self.n()).flat_map(|a| (a + 1..self.n()).filter(move |&b| self.adjacent[a][b]).map(move |b| (a, b))).collect()
    }

    /// The maximal cliques (Bron–Kerbosch with pivoting), each sorted, in lexicographic order; an
    /// isolated vertex is a clique of one (a one-variable term, Rolland et al. 2018 Fig. 1).
    pub fn maximal_cliques(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        self.bron_kerbosch(Vec::new(), (0..self.n()).collect(), Vec::new(), &mut out);
        for c in &mut out {
            c.sort_unstable();
        }
        out.sort();
        out
    }

    fn bron_kerbosch(&self, r: Vec<usize>, p: Vec<usize>, x: Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if p.is_empty() && x.is_empty() {
            out.push(r);
            return;
        }
        let pivot = *p.iter().chain(&x).max_by_key(|&&u| p.iter().filter(|&&v| self.adjacent[u][v]).count()).expect("p or x is non-empty");
        let (mut p, mut x) = (p, x);
        for v in p.clone().into_iter().filter(|&v| !self.adjacent[pivot][v]) {
            let mut r2 = r.clone();
            r2.push(v);
            let p2 = p.iter().copied().filter(|&u| self.adjacent[v][u]).collect();
            let x2 = x.iter().copied().filter(|&u| self.adjacent[v][u]).collect();
            self.bron_kerbosch(r2, p2, x2, out);
            p.retain(|&u| u != v);
            x.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maximal_cliques_of_seed_002s_figure_1() {
        // f = f(x1, x2, x3) + f(x1, x3, x4) + f(x4, x5) + f(x6), 0-based.
        let mut g = Graph::empty(6);
        for (a, b) in [(0, 1), (1, 2), (0, 2), (0, 3), (2, 3), (3, 4)] {
            g.add_edge(a, b);
        }
        assert_eq!(g.maximal_cliques(), vec![vec![0, 1, 2], vec![0, 2, 3], vec![3, 4], vec![5]]);
        assert_eq!(g.edges().len(), 6);
    }
}
