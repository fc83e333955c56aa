//! The exponential-decay kernel of freeze-thaw Bayesian optimisation (Swersky, Snoek & Adams,
//! "Freeze-Thaw Bayesian Optimization", 2014): over a training position `t ≥ 0`,
//! `k(t, t') = a · βᵅ / (t + t' + β)ᵅ`, the covariance of curves that settle — a mixture of
//! decaying exponentials `e^{−λt}` with a gamma(α, β) distribution over the rate λ, so positive
//! definite for every α, β > 0 and `t, t' ≥ 0`, and dying away as both positions grow. Here it
//! covers one curve at a time: points whose `curve` codes differ are independent (covariance 0),
//! so beside a kernel over the configuration that models each curve's asymptote, it gives the
//! freeze-thaw model `y_n(t) = f(x_n) + g_n(t)` as one [`Sum`](super::Sum). [`ExpDecay::shared`]
//! covers every curve alike: times a kernel over the configuration, it lets nearby configurations
//! share how their curves settle.
//!
//! θ = (log a, log α, log β), with weak normal priors around a = 1, α = 1, β = 1 (positions on the
//! unit scale: `t` is the position over the furthest one).
//!
//! Must not know where `t` comes from (steps or seconds, scaled by the caller).

use super::{Kernel, normal_log_prior};

/// The exponential-decay kernel over position dimension `position`, within the curve named by the
/// code in dimension `curve`.
#[derive(Clone, Debug)]
pub struct ExpDecay {
    position: usize,
    /// The dimension of the curve code, or `None` for a decay every curve shares.
    curve: Option<usize>,
    log_amplitude: f64,
    log_alpha: f64,
    log_beta: f64,
}

/// Wider than the other kernels' amplitudes: on standardised values, a curve's first steps
/// lie many standard deviations below its end.
const LOG_AMPLITUDE_BOUNDS: (f64, f64) = (-6.0, 6.0);
const LOG_ALPHA_BOUNDS: (f64, f64) = (-4.0, 4.0);
const LOG_BETA_BOUNDS: (f64, f64) = (-6.0, 4.0);

impl ExpDecay {
    /// The kernel over `position` within each curve of `curve`, with a = α = β = 1.
    pub fn new(position: usize, curve: usize) -> ExpDecay {
        ExpDecay { position, curve: Some(curve), log_amplitude: 0.0, log_alpha: 0.0, log_beta: 0.0 }
    }

    /// The kernel over `position` across all curves alike: times a kernel over the
    /// configuration, how far a configuration's curve still is from its end at each position.
    pub fn shared(position: usize) -> ExpDecay {
        ExpDecay { position, curve: None, log_amplitude: 0.0, log_alpha: 0.0, log_beta: 0.0 }
    }

    /// `(k, ln β − ln(t + t' + β))` for two points of one curve.
    fn value(&self, x: &[f64], y: &[f64]) -> (f64, f64) {
        let beta = self.log_beta.exp();
        let s = x[self.position] + y[self.position] + beta;
        let log_ratio = self.log_beta - s.ln();
        ((self.log_amplitude + self.log_alpha.exp() * log_ratio).exp(), log_ratio)
    }

    fn same_curve(&self, x: &[f64], y: &[f64]) -> bool {
        self.curve.is_none_or(|c| x[c] == y[c])
    }
}

impl Kernel for ExpDecay {
    fn param_names(&self) -> Vec<String> {
        vec!["log_amplitude".into(), "log_alpha".into(), "log_beta".into()]
    }

    fn params(&self) -> Vec<f64> {
        vec![self.log_amplitude, self.log_alpha, self.log_beta]
    }

    fn set_params(&mut self, p: &[f64]) {
        (self.log_amplitude, self.log_alpha, self.log_beta) = (p[0], p[1], p[2]);
    }

    fn bounds(&self) -> Vec<(f64, f64)> {
        vec![LOG_AMPLITUDE_BOUNDS, LOG_ALPHA_BOUNDS, LOG_BETA_BOUNDS]
    }

    fn log_prior(&self, grad: &mut [f64]) -> f64 {
        let mut lp = 0.0;
        for (k, p) in [self.log_amplitude, self.log_alpha, self.log_beta].into_iter().enumerate() {
            let (v, g) = normal_log_prior(p, 0.0, 1.5);
            lp += v;
            grad[k] += g;
        }
        lp
    }

    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        if !self.same_curve(x, y) {
            return 0.0;
        }
        self.value(x, y).0
    }

    fn eval_grad(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        grad[..3].iter_mut().for_each(|g| *g = 0.0);
        if !self.same_curve(x, y) {
            return 0.0;
        }
        let (k, log_ratio) = self.value(x, y);
        let (alpha, beta) = (self.log_alpha.exp(), self.log_beta.exp());
        let s = x[self.position] + y[self.position] + beta;
        grad[0] = k;
        // ∂k/∂log α = α · ln(β/s) · k; ∂k/∂log β = β · α (1/β − 1/s) · k.
        grad[1] = alpha * log_ratio * k;
        grad[2] = alpha * (1.0 - beta / s) * k;
        k
    }

    fn grad_x(&self, x: &[f64], y: &[f64], out: &mut [f64]) {
        if !self.same_curve(x, y) {
            return;
        }
        let (k, _) = self.value(x, y);
        let s = x[self.position] + y[self.position] + self.log_beta.exp();
        out[self.position] += -self.log_alpha.exp() * k / s;
    }

    fn clone_box(&self) -> Box<dyn Kernel> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The covariance falls as the curve goes on, and no two curves share any.
    #[test]
    fn covariance_decays_along_a_curve_and_is_zero_across_curves() {
        let k = ExpDecay::new(0, 1);
        let (early, late) = (k.eval(&[0.0, 3.0], &[0.0, 3.0]), k.eval(&[1.0, 3.0], &[1.0, 3.0]));
        assert!((early - 1.0).abs() < 1e-12, "a · (β/β)^α at t = 0: {early}");
        assert!((late - 1.0 / 3.0).abs() < 1e-12, "a = α = β = 1 at t = t' = 1: 1/3, got {late}");
        assert_eq!(k.eval(&[0.0, 3.0], &[0.0, 4.0]), 0.0);
        let mut g = vec![0.0; 2];
        k.grad_x(&[0.5, 3.0], &[0.5, 4.0], &mut g);
        assert_eq!(g, vec![0.0, 0.0]);
        let shared = ExpDecay::shared(0);
        assert_eq!(shared.eval(&[1.0, 3.0], &[1.0, 4.0]), 1.0 / 3.0, "one decay across codes");
    }
}
