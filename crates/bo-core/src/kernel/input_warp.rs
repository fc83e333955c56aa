//! Input warping (Snoek, Swersky, Zemel & Adams 2014, with BoTorch's Kumaraswamy CDF in place of
//! the Beta CDF): each of some unit-cube coordinates goes through a learned monotone map
//! `w(x) = 1 − (1 − x^a)^b` before the inner kernel sees it, so a stationary kernel can model a
//! function that changes fast near one end of a range and slowly at the other (a learning rate
//! on a linear scale, a penalty near zero). `log a` and `log b` are two hyperparameters per
//! coordinate, fitted with the others; their prior `N(0, 0.75²)` (BoTorch's) centres on the
//! identity `a = b = 1`.
//!
//! Coordinates are clamped into `[ε, 1 − ε]` first (the map's derivatives are unbounded at 0 and
//! 1); the Kumaraswamy CDF's derivatives in `x`, `log a` and `log b` are analytic, and the
//! wrapper passes the inner kernel's through them by the chain rule.
//!
//! Must not know about data or the GP.

use faer::{Mat, MatRef};

use super::{Kernel, normal_log_prior};

/// Coordinates are clamped into `[EPSILON, 1 − EPSILON]` before warping.
const EPSILON: f64 = 1e-6;

/// Bounds of `log a` and `log b`: concentrations from 0.1 to 10.
const LOG_CONCENTRATION_BOUNDS: (f64, f64) = (-std::f64::consts::LN_10, std::f64::consts::LN_10);

/// The prior's standard deviation on `log a` and `log b` (mean 0: the identity).
const LOG_CONCENTRATION_PRIOR_SD: f64 = 0.75;

/// An inner kernel over coordinates of which `dims` are warped first.
#[derive(Clone, Debug)]
pub struct InputWarped {
    inner: Box<dyn Kernel>,
    dims: Vec<usize>,
    /// `log a` per warped coordinate.
    log_a: Vec<f64>,
    /// `log b` per warped coordinate.
    log_b: Vec<f64>,
}

/// The Kumaraswamy CDF at a clamped `x` and its derivatives.
struct Warped {
    value: f64,
    /// ∂w/∂x.
    d_x: f64,
    /// ∂w/∂log a.
    d_log_a: f64,
    /// ∂w/∂log b.
    d_log_b: f64,
}

/// `w(x) = 1 − (1 − x^a)^b`, and its derivatives; at a clamped end, ∂w/∂x = 0.
fn kumaraswamy(x: f64, a: f64, b: f64) -> Warped {
    let clamped = x.clamp(EPSILON, 1.0 - EPSILON);
    let inside = if x == clamped { 1.0 } else { 0.0 };
    let ln_x = clamped.ln();
    let xa = (a * ln_x).exp();
    let one_minus = 1.0 - xa;
    let ln_one_minus = (-xa).ln_1p();
    let pow_b = (b * ln_one_minus).exp();
    let pow_b1 = ((b - 1.0) * ln_one_minus).exp();
    Warped {
        value: 1.0 - pow_b,
        d_x: inside * a * b * xa / clamped * pow_b1,
        // ∂/∂a (1 − (1 − x^a)^b) = b (1 − x^a)^(b−1) x^a ln x; times a for log a.
        d_log_a: a * b * pow_b1 * xa * ln_x,
        // ∂/∂b = −(1 − x^a)^b ln(1 − x^a); times b for log b.
        d_log_b: -b * pow_b * ln_one_minus,
    }
    .clamped(one_minus)
}

impl Warped {
    /// Keeps the value finite where `1 − x^a` underflows to 0.
    fn clamped(self, one_minus: f64) -> Warped {
        if one_minus > 0.0 { self } else { Warped { value: 1.0, d_x: 0.0, d_log_a: 0.0, d_log_b: 0.0 } }
    }
}

impl InputWarped {
    /// `inner` over coordinates of which `dims` (unit-cube ones) are warped, starting from the
    /// identity.
    pub fn new(inner: Box<dyn Kernel>, dims: Vec<usize>) -> InputWarped {
        let n = dims.len();
        InputWarped { inner, dims, log_a: vec![0.0; n], log_b: vec![0.0; n] }
    }

    /// The warped coordinates of `x`, and the warps' derivatives when asked.
    fn warp(&self, x: &[f64]) -> Vec<f64> {
        let mut u = x.to_vec();
        for (k, &d) in self.dims.iter().enumerate() {
            u[d] = kumaraswamy(x[d], self.log_a[k].exp(), self.log_b[k].exp()).value;
        }
        u
    }

    fn warp_all(&self, xs: &[Vec<f64>]) -> Vec<Vec<f64>> {
        xs.iter().map(|x| self.warp(x)).collect()
    }

    fn derivatives(&self, x: &[f64]) -> Vec<Warped> {
        self.dims.iter().enumerate().map(|(k, &d)| kumaraswamy(x[d], self.log_a[k].exp(), self.log_b[k].exp())).collect()
    }

    /// The fitted concentrations `(a, b)` per warped coordinate.
    pub fn concentrations(&self) -> Vec<(usize, f64, f64)> {
        self.dims.iter().enumerate().map(|(k, &d)| (d, self.log_a[k].exp(), self.log_b[k].exp())).collect()
    }
}

impl Kernel for InputWarped {
    fn param_names(&self) -> Vec<String> {
        let mut names = self.inner.param_names();
        names.extend(self.dims.iter().map(|d| format!("log_warp_a[{d}]")));
        names.extend(self.dims.iter().map(|d| format!("log_warp_b[{d}]")));
        names
    }

    fn params(&self) -> Vec<f64> {
        let mut p = self.inner.params();
        p.extend(&self.log_a);
        p.extend(&self.log_b);
        p
    }

    fn set_params(&mut self, p: &[f64]) {
        let (m, n) = (self.inner.n_params(), self.dims.len());
        self.inner.set_params(&p[..m]);
        self.log_a.copy_from_slice(&p[m..m + n]);
        self.log_b.copy_from_slice(&p[m + n..m + 2 * n]);
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        let mut b = self.inner.bounds();
        b.extend(std::iter::repeat_n(LOG_CONCENTRATION_BOUNDS, 2 * self.dims.len()));
        b
    }

    fn log_prior(&self, grad: &mut [f64]) -> f64 {
        let m = self.inner.n_params();
        let mut lp = self.inner.log_prior(&mut grad[..m]);
        for (g, v) in grad[m..].iter_mut().zip(self.log_a.iter().chain(&self.log_b)) {
            let (value, d) = normal_log_prior(*v, 0.0, LOG_CONCENTRATION_PRIOR_SD);
            lp += value;
            *g += d;
        }
        lp
    }

    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.inner.eval(&self.warp(x), &self.warp(y))
    }

    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let (m, n) = (self.inner.n_params(), self.dims.len());
        let (u, v) = (self.warp(x), self.warp(y));
        let value = self.inner.eval_grad(&u, &v, &mut grad[..m]);
        // ∂k/∂θ_w = ∂k/∂u_d ∂u_d/∂θ_w + ∂k/∂v_d ∂v_d/∂θ_w, with ∂k(u, v)/∂v = grad_x(v, u).
        let (mut du, mut dv) = (vec![0.0; x.len()], vec![0.0; y.len()]);
        self.inner.grad_x(&u, &v, &mut du);
        self.inner.grad_x(&v, &u, &mut dv);
        for (k, (wx, wy)) in self.derivatives(x).iter().zip(self.derivatives(y)).enumerate() {
            let d = self.dims[k];
            grad[m + k] = du[d] * wx.d_log_a + dv[d] * wy.d_log_a;
            grad[m + n + k] = du[d] * wx.d_log_b + dv[d] * wy.d_log_b;
        }
        value
    }

    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]) {
        let mut du = vec![0.0; x.len()];
        self.inner.grad_x(&self.warp(x), &self.warp(y), &mut du);
        for (k, w) in self.derivatives(x).iter().enumerate() {
            du[self.dims[k]] *= w.d_x;
        }
        out.iter_mut().zip(&du).for_each(|(o, g)| *o += g);
    }

    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }

    fn gram(&self, xs: &[Vec<f64>]) -> Mat<f64> {
        self.inner.gram(&self.warp_all(xs))
    }

    fn cross(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> Mat<f64> {
        self.inner.cross(&self.warp_all(a), &self.warp_all(b))
    }

    fn grad_x_dot(&self, x: &[f64], data: &[Vec<f64>], w: MatRef<'_, f64>, out: &mut [Vec<f64>]) {
        let mut inner_out = vec![vec![0.0; x.len()]; out.len()];
        self.inner.grad_x_dot(&self.warp(x), &self.warp_all(data), w, &mut inner_out);
        let derivatives = self.derivatives(x);
        for (o, g) in out.iter_mut().zip(&mut inner_out) {
            for (k, wd) in derivatives.iter().enumerate() {
                g[self.dims[k]] *= wd.d_x;
            }
            o.iter_mut().zip(g.iter()).for_each(|(o, g)| *o += g);
        }
    }

    fn gram_grad_dot(&self, xs: &[Vec<f64>], w: &Mat<f64>, out: &mut [f64]) {
        let (m, n) = (self.inner.n_params(), self.dims.len());
        let u = self.warp_all(xs);
        self.inner.gram_grad_dot(&u, w, &mut out[..m]);
        if n == 0 {
            return;
        }
        // Σᵢⱼ Wᵢⱼ ∂k(uᵢ, uⱼ)/∂θ_w = 2 Σᵢ (Σⱼ Wᵢⱼ ∂k(uᵢ, uⱼ)/∂uᵢ) · ∂uᵢ/∂θ_w, W and k symmetric.
        let mut g = vec![vec![0.0; xs[0].len()]];
        for (i, x) in xs.iter().enumerate() {
            g[0].iter_mut().for_each(|v| *v = 0.0);
            self.inner.grad_x_dot(&u[i], &u, w.col(i).as_mat(), &mut g);
            for (k, wd) in self.derivatives(x).iter().enumerate() {
                let gd = g[0][self.dims[k]];
                out[m + k] += 2.0 * gd * wd.d_log_a;
                out[m + n + k] += 2.0 * gd * wd.d_log_b;
            }
        }
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::json!({
            "inputWarping": self.concentrations().into_iter().map(|(d, a, b)| serde_json::json!({"feature": d, "a": a, "b": b})).collect::<Vec<_>>(),
            "inner": self.inner.summary(),
        })
    }
}
