//! The exchangeable categorical kernel: `k(x, y) = a · exp(−Σⱼ [xⱼ ≠ yⱼ] / ℓⱼ)` over category
//! codes, one length scale per categorical parameter — every pair of distinct values equally
//! similar. θ = (log a, log ℓ₁ … log ℓ_c). Positive definite as a product of exchangeable
//! (compound-symmetric) kernels, one per parameter.
//!
//! `1/ℓⱼ` is kept beside θ (never an `exp` per parameter per pair), and a distance is summed in
//! [`LANES`] independent partial sums, which the compiler turns into vector instructions: a
//! study of 300 categorical parameters spends most of a Gram matrix's or a cross-covariance's
//! time in these sums. The batch methods (Gram matrix, cross-covariance, the likelihood
//! gradient's contraction) take the codes as one row per point; their results are those of
//! [`Kernel::eval`] and [`Kernel::eval_grad`] bit for bit (the same terms, summed in the same
//! order).

use faer::{Mat, MatRef};

use super::{Kernel, normal_log_prior};

/// The exchangeable kernel over categorical `dims`.
#[derive(Clone, Debug)]
pub struct Categorical {
    dims: Vec<usize>,
    log_amplitude: f64,
    log_length_scales: Vec<f64>,
    /// `1/ℓⱼ`, kept with `log_length_scales`.
    inverse_length_scales: Vec<f64>,
}

const LOG_AMPLITUDE_BOUNDS: (f64, f64) = (-4.0, 4.0);
const LOG_LENGTH_SCALE_BOUNDS: (f64, f64) = (-4.0, 4.0);

impl Categorical {
    /// A kernel over `dims` (category codes), length scales 1.
    pub fn new(dims: Vec<usize>) -> Categorical {
        let c = dims.len();
        Categorical { dims, log_amplitude: 0.0, log_length_scales: vec![0.0; c], inverse_length_scales: vec![1.0; c] }
    }

    /// `Σⱼ [xⱼ ≠ yⱼ] / ℓⱼ`, summed as [`weighted_mismatches`] sums it.
    fn distance(&self, x: &[f64], y: &[f64]) -> f64 {
        let mut lanes = [0.0; LANES];
        for (j, (&i, &w)) in self.dims.iter().zip(&self.inverse_length_scales).enumerate() {
            lanes[j % LANES] += mismatch(x[i], y[i], w);
        }
        total(lanes)
    }

    /// The points' codes of this kernel's parameters, one row of `dims.len()` per point.
    fn codes(&self, xs: &[Vec<f64>]) -> Vec<f64> {
        xs.iter().flat_map(|x| self.dims.iter().map(move |&i| x[i])).collect()
    }
}

/// How many partial sums a distance is summed in: independent additions the processor overlaps,
/// and the compiler packs into vector registers (four of the two-lane SSE2 registers every
/// x86-64 has).
const LANES: usize = 8;

/// `Σⱼ [aⱼ ≠ bⱼ] wⱼ`, term `j` added to partial sum `j mod` [`LANES`] (an equal code adds an
/// exact zero), the partial sums then added by [`total`] — as [`Categorical::distance`] sums.
fn weighted_mismatches(a: &[f64], b: &[f64], w: &[f64]) -> f64 {
    let mut lanes = [0.0; LANES];
    let (ca, cb, cw) = (a.chunks_exact(LANES), b.chunks_exact(LANES), w.chunks_exact(LANES));
    let (ra, rb, rw) = (ca.remainder(), cb.remainder(), cw.remainder());
    for ((x, y), w) in ca.zip(cb).zip(cw) {
        for l in 0..LANES {
            lanes[l] += mismatch(x[l], y[l], w[l]);
        }
    }
    for l in 0..ra.len() {
        lanes[l] += mismatch(ra[l], rb[l], rw[l]);
    }
    total(lanes)
}

/// `w` where codes `a` and `b` differ, else `+0`: chosen by a mask, not a branch (which codes
/// differ is as good as random, and a mispredicted branch per term cost more than the sum).
#[inline(always)]
fn mismatch(a: f64, b: f64, w: f64) -> f64 {
    f64::from_bits(w.to_bits() & u64::from(a != b).wrapping_neg())
}

/// The partial sums of a distance, added pairwise in a fixed order.
fn total(l: [f64; LANES]) -> f64 {
    ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

impl Kernel for Categorical {
    fn param_names(&self) -> Vec<String> {
        let mut names = vec!["categorical.log_amplitude".to_owned()];
        names.extend(self.dims.iter().map(|i| format!("categorical.log_length_scale[{i}]")));
        names
    }

    fn params(&self) -> Vec<f64> {
        let mut p = vec![self.log_amplitude];
        p.extend_from_slice(&self.log_length_scales);
        p
    }

    fn set_params(&mut self, p: &[f64]) {
        self.log_amplitude = p[0];
        self.log_length_scales.copy_from_slice(&p[1..]);
        self.inverse_length_scales = self.log_length_scales.iter().map(|l| (-l).exp()).collect();
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        let mut b = vec![LOG_AMPLITUDE_BOUNDS];
        b.extend(std::iter::repeat_n(LOG_LENGTH_SCALE_BOUNDS, self.dims.len()));
        b
    }

    fn log_prior(&self, grad: &mut [f64]) -> f64 {
        let (mut lp, g) = normal_log_prior(self.log_amplitude, 0.0, 1.0);
        grad[0] += g;
        for (k, &l) in self.log_length_scales.iter().enumerate() {
            let (v, g) = normal_log_prior(l, 0.0, 1.5);
            lp += v;
            grad[1 + k] += g;
        }
        lp
    }

    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.log_amplitude.exp() * (-self.distance(x, y)).exp()
    }

    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let k = self.eval(x, y);
        grad[0] = k;
        for (j, (&i, &w)) in self.dims.iter().zip(&self.inverse_length_scales).enumerate() {
            // ∂/∂log ℓⱼ of −[xⱼ≠yⱼ]/ℓⱼ is +[xⱼ≠yⱼ]/ℓⱼ.
            grad[1 + j] = k * mismatch(x[i], y[i], w);
        }
        k
    }

    fn grad_x(&self, _x: &[f64], _y: &[f64], _out: &mut [f64]) {}

    fn gram(&self, xs: &[Vec<f64>]) -> Mat<f64> {
        let (n, c, a) = (xs.len(), self.dims.len(), self.log_amplitude.exp());
        let (codes, w) = (self.codes(xs), &self.inverse_length_scales);
        let mut k = Mat::zeros(n, n);
        for j in 0..n {
            let cj = &codes[j * c..(j + 1) * c];
            for i in j..n {
                let v = a * (-weighted_mismatches(&codes[i * c..(i + 1) * c], cj, w)).exp();
                k[(i, j)] = v;
                k[(j, i)] = v;
            }
        }
        k
    }

    fn cross(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> Mat<f64> {
        let (c, amplitude) = (self.dims.len(), self.log_amplitude.exp());
        let (ca, cb, w) = (self.codes(a), self.codes(b), &self.inverse_length_scales);
        Mat::from_fn(a.len(), b.len(), |i, j| amplitude * (-weighted_mismatches(&ca[i * c..(i + 1) * c], &cb[j * c..(j + 1) * c], w)).exp())
    }

    fn gram_grad_dot(&self, xs: &[Vec<f64>], weights: &Mat<f64>, out: &mut [f64]) {
        let (n, c, a) = (xs.len(), self.dims.len(), self.log_amplitude.exp());
        let (codes, w) = (self.codes(xs), &self.inverse_length_scales);
        for j in 0..n {
            let cj = &codes[j * c..(j + 1) * c];
            for i in j..n {
                let ci = &codes[i * c..(i + 1) * c];
                let factor = if i == j { weights[(i, i)] } else { 2.0 * weights[(i, j)] };
                let k = a * (-weighted_mismatches(ci, cj, w)).exp();
                out[0] += factor * k;
                for (q, ((&x, &y), &w)) in ci.iter().zip(cj).zip(w).enumerate() {
                    out[1 + q] += factor * (k * mismatch(x, y, w));
                }
            }
        }
    }

    fn grad_x_dot(&self, _x: &[f64], _data: &[Vec<f64>], _w: MatRef<'_, f64>, _out: &mut [Vec<f64>]) {}

    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
}
