//! The Add-Tree covariance (Ma & Blaschko 2020, Definition 5 and Algorithm 1):
//! `k(x, x') = Σ_{v ∈ A(x) ∩ A(x')} [c_v + k_v(x_v, x'_v)]`, a sum over
//! the vertices active at both points of a per-vertex kernel on that vertex's parameters plus a
//! learnable per-branch offset `c_v ≥ 0` (the paper's "no term" for a vertex without variables
//! makes two leaves that differ only by a categorical choice indistinguishable; the
//! authors' code uses a constant 1). Positive semi-definite for any active sets: each term is
//! `1[v∈A(x)]·1[v∈A(x')]` times a PSD kernel (Proposition 6).
//!
//! Points are feature vectors whose last coordinates are the vertices' activity indicators
//! (1 active, 0 not; none for the root, which is always active), so the kernel composes with the
//! rest of the engine — the GP, its fit and the acquisition's gradients — unchanged. Each term
//! works on the points where its vertex is active only: Gram matrices, their likelihood
//! contractions and cross-covariances cost Σ_v n_v² instead of |V|·n², and a vertex's kernel
//! never sees an inactive parameter's placeholder value.
//!
//! Must not know how a search space becomes vertices: that is `space::tree`.

use faer::{Mat, MatRef};

use super::{Kernel, normal_log_prior};

/// Bounds of a vertex's log offset `log c_v`: from negligible to the output's scale.
const LOG_BIAS_BOUNDS: (f64, f64) = (-9.2, 1.4);
/// Weak prior on `log c_v`: N(log 0.1, 2²).
const LOG_BIAS_PRIOR: (f64, f64) = (-2.3, 2.0);

/// One vertex's term.
#[derive(Clone, Debug)]
pub struct Term {
    /// The vertex's name, prefixed to its parameters' names.
    pub name: String,
    /// The feature coordinate holding the vertex's activity; `None` when always active.
    pub indicator: Option<usize>,
    /// `log c_v`, when the vertex has an offset.
    pub log_bias: Option<f64>,
    /// The kernel on the vertex's parameters, when it has any.
    pub kernel: Option<Box<dyn Kernel>>,
}

impl Term {
    fn active(&self, x: &[f64]) -> bool {
        self.indicator.is_none_or(|i| x[i] > 0.5)
    }

    fn n_params(&self) -> usize {
        usize::from(self.log_bias.is_some()) + self.kernel.as_ref().map_or(0, |k| k.n_params())
    }

    fn bias(&self) -> f64 {
        self.log_bias.map_or(0.0, f64::exp)
    }
}

/// `Σ_v 1[v active at both] (c_v + k_v)`.
#[derive(Clone, Debug)]
pub struct AddTree {
    terms: Vec<Term>,
}

impl AddTree {
    /// A kernel of `terms`; a term must have an offset or a kernel.
    pub fn new(terms: Vec<Term>) -> AddTree {
        assert!(terms.iter().all(|t| t.log_bias.is_some() || t.kernel.is_some()), "an Add-Tree term without a covariance");
        AddTree { terms }
    }

    /// The terms.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// Term `i` alone: one vertex's component of the sum (for its own posterior).
    pub fn component(&self, i: usize) -> AddTree {
        AddTree { terms: vec![self.terms[i].clone()] }
    }

    /// The indices of `xs` where term `t` is active, and copies of those points.
    fn active_points(&self, t: &Term, xs: &[Vec<f64>]) -> (Vec<usize>, Vec<Vec<f64>>) {
        let idx: Vec<usize> = (0..xs.len()).filter(|&i| t.active(&xs[i])).collect();
        let sub = if t.kernel.is_some() { idx.iter().map(|&i| xs[i].clone()).collect() } else { Vec::new() };
        (idx, sub)
    }
}

impl Kernel for AddTree {
    fn param_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        for t in &self.terms {
            if t.log_bias.is_some() {
                names.push(format!("{}.log_bias", t.name));
            }
            if let Some(k) = &t.kernel {
                names.extend(k.param_names().into_iter().map(|n| format!("{}.{n}", t.name)));
            }
        }
        names
    }

    fn params(&self) -> Vec<f64> {
        let mut p = Vec::new();
        for t in &self.terms {
            p.extend(t.log_bias);
            if let Some(k) = &t.kernel {
                p.extend(k.params());
            }
        }
        p
    }

    fn set_params(&mut self, p: &[f64]) {
        let mut at = 0;
        for t in &mut self.terms {
            if let Some(b) = &mut t.log_bias {
                *b = p[at];
                at += 1;
            }
            if let Some(k) = &mut t.kernel {
                let n = k.n_params();
                k.set_params(&p[at..at + n]);
                at += n;
            }
        }
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        let mut b = Vec::new();
        for t in &self.terms {
            if t.log_bias.is_some() {
                b.push(LOG_BIAS_BOUNDS);
            }
            if let Some(k) = &t.kernel {
                b.extend(k.bounds());
            }
        }
        b
    }

    fn log_prior(&self, grad: &mut [f64]) -> f64 {
        let mut at = 0;
        let mut lp = 0.0;
        for t in &self.terms {
            if let Some(b) = t.log_bias {
                let (v, g) = normal_log_prior(b, LOG_BIAS_PRIOR.0, LOG_BIAS_PRIOR.1);
                lp += v;
                grad[at] += g;
                at += 1;
            }
            if let Some(k) = &t.kernel {
                let n = k.n_params();
                lp += k.log_prior(&mut grad[at..at + n]);
                at += n;
            }
        }
        lp
    }

    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.terms.iter().filter(|t| t.active(x) && t.active(y)).map(|t| t.bias() + t.kernel.as_ref().map_or(0.0, |k| k.eval(x, y))).sum()
    }

    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let mut at = 0;
        let mut value = 0.0;
        for t in &self.terms {
            let n = t.n_params();
            let g = &mut grad[at..at + n];
            g.iter_mut().for_each(|v| *v = 0.0);
            if t.active(x) && t.active(y) {
                let mut k_at = 0;
                if t.log_bias.is_some() {
                    g[0] = t.bias();
                    value += t.bias();
                    k_at = 1;
                }
                if let Some(k) = &t.kernel {
                    value += k.eval_grad(x, y, &mut g[k_at..]);
                }
            }
            at += n;
        }
        value
    }

    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]) {
        // The indicators are not moved by an optimiser (a pattern fixes them), and the kernel is
        // flat in them away from 0.5: no gradient along them.
        for t in &self.terms {
            if let Some(k) = &t.kernel
                && t.active(x)
                && t.active(y)
            {
                k.grad_x(x, y, out);
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }

    fn gram(&self, xs: &[Vec<f64>]) -> Mat<f64> {
        let mut out = Mat::zeros(xs.len(), xs.len());
        for t in &self.terms {
            let (idx, sub) = self.active_points(t, xs);
            let g = t.kernel.as_ref().map(|k| k.gram(&sub));
            let c = t.bias();
            for (b, &j) in idx.iter().enumerate() {
                for (a, &i) in idx.iter().enumerate() {
                    out[(i, j)] += c + g.as_ref().map_or(0.0, |g| g[(a, b)]);
                }
            }
        }
        out
    }

    fn cross(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> Mat<f64> {
        let mut out = Mat::zeros(a.len(), b.len());
        for t in &self.terms {
            let (ia, sa) = self.active_points(t, a);
            let (ib, sb) = self.active_points(t, b);
            if ia.is_empty() || ib.is_empty() {
                continue;
            }
            let g = t.kernel.as_ref().map(|k| k.cross(&sa, &sb));
            let c = t.bias();
            for (q, &j) in ib.iter().enumerate() {
                for (p, &i) in ia.iter().enumerate() {
                    out[(i, j)] += c + g.as_ref().map_or(0.0, |g| g[(p, q)]);
                }
            }
        }
        out
    }

    fn gram_grad_dot(&self, xs: &[Vec<f64>], w: &Mat<f64>, out: &mut [f64]) {
        let mut at = 0;
        for t in &self.terms {
            let n = t.n_params();
            let (idx, sub) = self.active_points(t, xs);
            let ws = Mat::from_fn(idx.len(), idx.len(), |a, b| w[(idx[a], idx[b])]);
            let mut k_at = at;
            if t.log_bias.is_some() {
                // ∂(c 11ᵀ)/∂log c = c 11ᵀ.
                let total: f64 = (0..idx.len()).map(|j| ws.col_as_slice(j).iter().sum::<f64>()).sum();
                out[at] += t.bias() * total;
                k_at += 1;
            }
            if let Some(k) = &t.kernel
                && !idx.is_empty()
            {
                k.gram_grad_dot(&sub, &ws, &mut out[k_at..at + n]);
            }
            at += n;
        }
    }

    fn grad_x_dot(&self, x: &[f64], data: &[Vec<f64>], w: MatRef<'_, f64>, out: &mut [Vec<f64>]) {
        let mut dk = vec![0.0; x.len()];
        for t in &self.terms {
            let Some(k) = &t.kernel else { continue };
            if !t.active(x) {
                continue;
            }
            for (i, xi) in data.iter().enumerate().filter(|(_, xi)| t.active(xi)) {
                dk.iter_mut().for_each(|v| *v = 0.0);
                k.grad_x(x, xi, &mut dk);
                for (c, o) in out.iter_mut().enumerate() {
                    let wi = w[(i, c)];
                    o.iter_mut().zip(&dk).for_each(|(o, g)| *o += wi * g);
                }
            }
        }
    }
}
