//! The additive kernel of the high-dimensional papers: one stationary term per group of
//! variables, the groups disjoint (Kandasamy et al. 2015, eq. 1 and Obs. 1) or
//! overlapping cliques of a dependency graph (Rolland et al. 2018, §5):
//!
//! `k(x, y) = a · Σ_g w_g f(r²_g)`, `r²_g = Σ_{i∈g} s_i(x, y) / ℓᵢ²`, `w_g = |g| / Σ_h |h|`,
//!
//! with `s_i = (xᵢ − yᵢ)²` for a numeric coordinate and `[xᵢ ≠ yᵢ]` (a one-hot distance, so `f`
//! stays positive definite) for a categorical one. The length scales are **per variable and
//! shared by every group that holds the variable**, and the amplitude is split by group size
//! (Rolland et al. 2018 §5's `σ^(i) = d_i/Σ d_j`): θ = (log a, log ℓ₁ … log ℓ_D) does
//! not depend on the grouping, so one θ scores many candidate groupings (Kandasamy et al. 2015's partial
//! marginal-likelihood search) and a Gibbs sweep over a graph's edges
//! (Rolland et al. 2018 Alg. 3) changes the kernel without changing its parameters. Kandasamy et al. 2015's code shares
//! one bandwidth across all groups; per-variable length scales (ARD) are the service's choice,
//! measured in docs/journal/benchmarks.md.
//!
//! [`GroupAdditive::component`] is one group's term, for the per-group posteriors μ_g, σ_g of
//! Kandasamy et al. 2015 eq. 5 (`Gp::predict_component`).
//!
//! Priors as [`super::Ard`]'s `Weak`: log a ~ N(0, 1), `log p(ℓ) = −0.1 (ℓ² + ℓ⁻²)`.

use super::ard::Profile;
use super::{Kernel, normal_log_prior};

/// Bounds of log a.
const LOG_AMPLITUDE_BOUNDS: (f64, f64) = (-4.0, 4.0);

/// An additive kernel with profile `P` over groups of dimensions.
#[derive(Clone, Debug)]
pub struct GroupAdditive<P: Profile> {
    /// The dimensions with a length scale, sorted.
    dims: Vec<usize>,
    /// Whether each of `dims` is categorical.
    categorical: Vec<bool>,
    /// Each group as indices into `dims`.
    groups: Vec<Vec<usize>>,
    /// The groups' shares of the amplitude.
    weights: Vec<f64>,
    log_amplitude: f64,
    log_length_scales: Vec<f64>,
    inv_length_scales: Vec<f64>,
    length_scale_bounds: (f64, f64),
    /// One length scale for every dimension (Kandasamy et al. 2015's code) instead of one each.
    shared: bool,
    _profile: std::marker::PhantomData<P>,
}

impl<P: Profile> GroupAdditive<P> {
    /// A kernel over `dims` (those in `categorical_dims` compared by equality) with one term per
    /// group of `groups` (each a non-empty subset of `dims`), amplitude 1 and every length scale
    /// `length_scale`, bounded to `length_scale_bounds` (not in log space).
    pub fn new(
        dims: Vec<usize>,
        categorical_dims: &[usize],
        groups: &[Vec<usize>],
        length_scale: f64,
        length_scale_bounds: (f64, f64),
    ) -> GroupAdditive<P> {
        let mut dims = dims;
        dims.sort_unstable();
        dims.dedup();
        let d = dims.len();
        let mut kernel = GroupAdditive {
            categorical: dims.iter().map(|i| categorical_dims.contains(i)).collect(),
            dims,
            groups: Vec::new(),
            weights: Vec::new(),
            log_amplitude: 0.0,
            log_length_scales: vec![length_scale.ln(); d],
            inv_length_scales: vec![1.0 / length_scale; d],
            length_scale_bounds: (length_scale_bounds.0.ln(), length_scale_bounds.1.ln()),
            shared: false,
            _profile: std::marker::PhantomData,
        };
        kernel.set_groups(groups);
        kernel
    }

    /// The same kernel with one length scale shared by every dimension (Kandasamy et al. 2015's code,
    /// `useSameSm`): θ = (log a, log ℓ).
    pub fn with_shared_length_scale(mut self) -> GroupAdditive<P> {
        self.shared = true;
        self
    }

    /// The index in θ of dimension `k`'s length scale.
    fn param_of(&self, k: usize) -> usize {
        if self.shared { 1 } else { 1 + k }
    }

    /// Replaces the groups (each a non-empty subset of the kernel's dimensions), keeping θ.
    pub fn set_groups(&mut self, groups: &[Vec<usize>]) {
        self.groups = groups
            .iter()
            .map(|g| {
                assert!(!g.is_empty(), "a group has at least one dimension");
                g.iter().map(|i| self.dims.binary_search(i).expect("a group's dimension belongs to the kernel")).collect()
            })
            .collect();
        let total: usize = self.groups.iter().map(Vec::len).sum();
        self.weights = self.groups.iter().map(|g| g.len() as f64 / total as f64).collect();
    }

    /// The groups, as feature dimensions.
    pub fn groups(&self) -> Vec<Vec<usize>> {
        self.groups.iter().map(|g| g.iter().map(|&k| self.dims[k]).collect()).collect()
    }

    /// The length scales, one per dimension of [`GroupAdditive::dims`].
    pub fn length_scales(&self) -> Vec<f64> {
        self.log_length_scales.iter().map(|l| l.exp()).collect()
    }

    /// The dimensions with a length scale.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Group `g`'s term alone, with its share of the amplitude: the components sum to the
    /// kernel.
    pub fn component(&self, g: usize) -> GroupAdditive<P> {
        GroupAdditive { groups: vec![self.groups[g].clone()], weights: vec![self.weights[g]], ..self.clone() }
    }

    /// `s_k(x, y) / ℓ_k²` for local dimension `k`.
    fn scaled_distance(&self, k: usize, x: &[f64], y: &[f64]) -> f64 {
        let i = self.dims[k];
        if self.categorical[k] {
            if x[i] == y[i] { 0.0 } else { self.inv_length_scales[k] * self.inv_length_scales[k] }
        } else {
            let d = (x[i] - y[i]) * self.inv_length_scales[k];
            d * d
        }
    }

    fn r2(&self, g: usize, x: &[f64], y: &[f64]) -> f64 {
        self.groups[g].iter().map(|&k| self.scaled_distance(k, x, y)).sum()
    }
}

impl<P: Profile> Kernel for GroupAdditive<P> {
    fn param_names(&self) -> Vec<String> {
        let mut names = vec![format!("additive_{}.log_amplitude", P::NAME)];
        if self.shared {
            names.push(format!("additive_{}.log_length_scale", P::NAME));
        } else {
            names.extend(self.dims.iter().map(|i| format!("additive_{}.log_length_scale[{i}]", P::NAME)));
        }
        names
    }

    fn params(&self) -> Vec<f64> {
        let mut p = Vec::with_capacity(1 + self.dims.len());
        p.push(self.log_amplitude);
        if self.shared {
            p.push(self.log_length_scales.first().copied().unwrap_or(0.0));
        } else {
            p.extend_from_slice(&self.log_length_scales);
        }
        p
    }

    fn set_params(&mut self, p: &[f64]) {
        self.log_amplitude = p[0];
        if self.shared {
            self.log_length_scales.iter_mut().for_each(|l| *l = p[1]);
        } else {
            self.log_length_scales.copy_from_slice(&p[1..]);
        }
        for (inv, log_l) in self.inv_length_scales.iter_mut().zip(&self.log_length_scales) {
            *inv = (-log_l).exp();
        }
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        let mut b = vec![LOG_AMPLITUDE_BOUNDS];
        b.extend(std::iter::repeat_n(self.length_scale_bounds, if self.shared { 1 } else { self.dims.len() }));
        b
    }

    fn log_prior(&self, grad: &mut [f64]) -> f64 {
        let (mut lp, g) = normal_log_prior(self.log_amplitude, 0.0, 1.0);
        grad[0] += g;
        let scales = if self.shared { &self.log_length_scales[..1] } else { &self.log_length_scales[..] };
        for (k, &log_l) in scales.iter().enumerate() {
            let l2 = (2.0 * log_l).exp();
            lp += -0.1 * (l2 + 1.0 / l2);
            grad[1 + k] += -0.1 * (2.0 * l2 - 2.0 / l2);
        }
        lp
    }

    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        let sum: f64 = (0..self.groups.len()).map(|g| self.weights[g] * P::value(self.r2(g, x, y))).sum();
        self.log_amplitude.exp() * sum
    }

    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let a = self.log_amplitude.exp();
        grad[1..].iter_mut().for_each(|v| *v = 0.0);
        let mut k = 0.0;
        for (g, group) in self.groups.iter().enumerate() {
            let (f, df) = P::value_and_d(self.r2(g, x, y));
            k += a * self.weights[g] * f;
            let coef = a * self.weights[g] * df;
            for &j in group {
                // ∂r²/∂log ℓ_j = −2 s_j/ℓ_j².
                grad[self.param_of(j)] += coef * -2.0 * self.scaled_distance(j, x, y);
            }
        }
        grad[0] = k;
        k
    }

    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]) {
        let a = self.log_amplitude.exp();
        for (g, group) in self.groups.iter().enumerate() {
            let coef = a * self.weights[g] * P::d_dr2(self.r2(g, x, y));
            for &j in group.iter().filter(|&&j| !self.categorical[j]) {
                let (i, inv_l) = (self.dims[j], self.inv_length_scales[j]);
                out[i] += coef * 2.0 * (x[i] - y[i]) * inv_l * inv_l;
            }
        }
    }

    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::json!({ "groups": self.groups() })
    }
}
