//! The exchangeable categorical kernel: `k(x, y) = a · exp(−Σⱼ [xⱼ ≠ yⱼ] / ℓⱼ)` over category
//! codes, one length scale per categorical parameter — every pair of distinct values equally
//! similar. θ = (log a, log ℓ₁ … log ℓ_c). Positive definite as a product of exchangeable
//! (compound-symmetric) kernels, one per parameter.

use faer::MatRef;

use super::{Kernel, normal_log_prior};

/// The exchangeable kernel over categorical `dims`.
#[derive(Clone, Debug)]
pub struct Categorical {
    dims: Vec<usize>,
    log_amplitude: f64,
    log_length_scales: Vec<f64>,
}

const LOG_AMPLITUDE_BOUNDS: (f64, f64) = (-4.0, 4.0);
const LOG_LENGTH_SCALE_BOUNDS: (f64, f64) = (-4.0, 4.0);

impl Categorical {
    /// A kernel over `dims` (category codes), length scales 1.
    pub fn new(dims: Vec<usize>) -> Categorical {
        let c = dims.len();
        Categorical { dims, log_amplitude: 0.0, log_length_scales: vec![0.0; c] }
    }

    fn distance(&self, x: &[f64], y: &[f64]) -> f64 {
        self.dims.iter().zip(&self.log_length_scales).filter(|(i, _)| x[**i] != y[**i]).map(|(_, l)| (-l).exp()).sum()
    }
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
        for (j, (&i, &l)) in self.dims.iter().zip(&self.log_length_scales).enumerate() {
            // ∂/∂log ℓⱼ of −[xⱼ≠yⱼ]/ℓⱼ is +[xⱼ≠yⱼ]/ℓⱼ.
            grad[1 + j] = if x[i] != y[i] { k * (-l).exp() } else { 0.0 };
        }
        k
    }

    fn grad_x(&self, _x: &[f64], _y: &[f64], _out: &mut [f64]) {}

    fn grad_x_dot(&self, _x: &[f64], _data: &[Vec<f64>], _w: MatRef<'_, f64>, _out: &mut [Vec<f64>]) {}

    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
}
