//! Acquisition functions on a GP posterior, for maximisation, in standardised units: UCB with
//! the β_t schedules of Srinivas et al. and the seed papers, log expected improvement
//! (numerically stable far into the tail), and log probability of improvement. Each returns its
//! value and gradient in x from the posterior's mean and variance gradients.

use crate::gp::PosteriorGrad;

/// The exploration schedule of UCB, `φ_t(x) = μ(x) + √β_t σ(x)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BetaSchedule {
    /// `β_t = 0.2 · d · ln(2t)`: the practical schedule of Kandasamy et al. (2015,
    /// §5) and Rolland et al. 2018, with `d` the dimension optimised.
    Kandasamy,
    /// `β_t = 2 ln(|X| t² π² / (6δ))`: Srinivas et al. (2010), Thm 1, with `|X|` the number of
    /// candidate points (or paths/patterns of a tree).
    Srinivas {
        /// `|X|`.
        cardinality: f64,
        /// The failure probability δ.
        delta: f64,
    },
    /// A constant β.
    Constant(f64),
}

impl BetaSchedule {
    /// β_t for dimension `d` at round `t ≥ 1` (number of observations + 1).
    pub fn beta(self, d: usize, t: usize) -> f64 {
        let t = t.max(1) as f64;
        match self {
            BetaSchedule::Kandasamy => (0.2 * d.max(1) as f64 * (2.0 * t).ln()).max(0.0),
            BetaSchedule::Srinivas { cardinality, delta } => {
                2.0 * (cardinality * t * t * std::f64::consts::PI.powi(2) / (6.0 * delta)).ln()
            }
            BetaSchedule::Constant(b) => b,
        }
    }
}

/// An acquisition function, ready to evaluate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Acquisition {
    /// Upper confidence bound with this β.
    Ucb {
        /// β (the squared multiplier of σ).
        beta: f64,
    },
    /// log expected improvement over `best`.
    LogEi {
        /// The incumbent, standardised.
        best: f64,
    },
    /// log probability of improvement over `best`.
    LogPi {
        /// The incumbent, standardised.
        best: f64,
    },
}

/// What the model page shows: the function and its setting, in words.
impl std::fmt::Display for Acquisition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Acquisition::Ucb { beta } => write!(f, "upper confidence bound, β = {beta:.3}"),
            Acquisition::LogEi { best } => write!(f, "expected improvement over the best value ({best:.3} standardised)"),
            Acquisition::LogPi { best } => write!(f, "probability of improvement over the best value ({best:.3} standardised)"),
        }
    }
}

impl Acquisition {
    /// The same function with its incumbent raised to `value` where that is higher (UCB has
    /// none): under the kriging believer a fantasy's believed value counts as observed, so a
    /// pending trial believed better than the best one becomes the value to improve on
    /// (Ginsbourger et al. 2010, §3.1).
    pub fn with_incumbent_at_least(self, value: f64) -> Acquisition {
        match self {
            Acquisition::Ucb { .. } => self,
            Acquisition::LogEi { best } => Acquisition::LogEi { best: best.max(value) },
            Acquisition::LogPi { best } => Acquisition::LogPi { best: best.max(value) },
        }
    }

    /// The value at a posterior (mean, variance).
    pub fn value(self, mean: f64, var: f64) -> f64 {
        let sigma = var.sqrt();
        match self {
            Acquisition::Ucb { beta } => mean + beta.sqrt() * sigma,
            Acquisition::LogEi { best } => sigma.ln() + log_h((mean - best) / sigma),
            Acquisition::LogPi { best } => log_ndtr((mean - best) / sigma),
        }
    }

    /// The value and its gradient in x.
    pub fn value_and_grad(self, p: &PosteriorGrad) -> (f64, Vec<f64>) {
        let sigma = p.var.sqrt();
        // ∂σ/∂x = ∂σ²/∂x / 2σ.
        let d_sigma: Vec<f64> = p.d_var.iter().map(|v| v / (2.0 * sigma)).collect();
        match self {
            Acquisition::Ucb { beta } => {
                let b = beta.sqrt();
                (p.mean + b * sigma, p.d_mean.iter().zip(&d_sigma).map(|(m, s)| m + b * s).collect())
            }
            Acquisition::LogEi { best } => {
                let z = (p.mean - best) / sigma;
                let dlogh = d_log_h(z);
                let grad = p.d_mean.iter().zip(&d_sigma).map(|(dm, ds)| ds / sigma + dlogh * (dm - z * ds) / sigma).collect();
                (sigma.ln() + log_h(z), grad)
            }
            Acquisition::LogPi { best } => {
                let z = (p.mean - best) / sigma;
                let dlog = d_log_ndtr(z);
                let grad = p.d_mean.iter().zip(&d_sigma).map(|(dm, ds)| dlog * (dm - z * ds) / sigma).collect();
                (log_ndtr(z), grad)
            }
        }
    }
}

const SQRT_2: f64 = std::f64::consts::SQRT_2;
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// log φ(z), the standard normal log-density.
pub fn log_phi(z: f64) -> f64 {
    -0.5 * z * z - LN_SQRT_2PI
}

/// Φ(z) through `erfc`, exact in both tails.
pub fn ndtr(z: f64) -> f64 {
    0.5 * libm::erfc(-z / SQRT_2)
}

/// log Φ(z), stable for very negative z (asymptotic series below −20).
pub fn log_ndtr(z: f64) -> f64 {
    if z > -20.0 {
        ndtr(z).ln()
    } else {
        // Φ(z) = φ(z)/|z| · (1 − 1/z² + 3/z⁴ − 15/z⁶ + 105/z⁸ …)
        let z2 = z * z;
        log_phi(z) - (-z).ln() + (1.0 - 1.0 / z2 + 3.0 / (z2 * z2) - 15.0 / (z2 * z2 * z2) + 105.0 / (z2 * z2 * z2 * z2)).ln()
    }
}

fn d_log_ndtr(z: f64) -> f64 {
    // φ/Φ, the inverse Mills ratio; for very negative z it approaches −z.
    (log_phi(z) - log_ndtr(z)).exp()
}

/// `h(z) = φ(z) + zΦ(z)` in the tail: `φ(z)/z² · Σₖ (−1)ᵏ (2k+1)!! / z²ᵏ`, eight terms.
fn tail_series(z: f64) -> f64 {
    let inv = 1.0 / (z * z);
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..8 {
        term *= -((2 * k + 1) as f64) * inv;
        sum += term;
    }
    sum
}

/// Below this, h(z) and its log use the asymptotic series.
const TAIL: f64 = -10.0;

/// log h(z), `h(z) = φ(z) + zΦ(z)` = EI / σ: exact for z > −10 (erfc keeps Φ accurate, and
/// the cancellation in φ + zΦ costs at most two digits there), the asymptotic series beyond,
/// so log-EI stays finite and smooth however far in the tail.
pub fn log_h(z: f64) -> f64 {
    if z > TAIL {
        let h = (log_phi(z)).exp() + z * ndtr(z);
        h.max(f64::MIN_POSITIVE).ln()
    } else {
        log_phi(z) - 2.0 * (-z).ln() + tail_series(z).ln()
    }
}

/// d log h / dz = Φ(z) / h(z).
pub fn d_log_h(z: f64) -> f64 {
    (log_ndtr(z) - log_h(z)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::approx_constant)] // a printed constant that happens to be ln 2
    fn paper_beta_schedules_follow_their_formulas() {
        // 0.2 · d · ln(2t): d = 2, t = 50 → 0.4 ln 100.
        assert!((BetaSchedule::Kandasamy.beta(2, 50) - 0.4 * 100f64.ln()).abs() < 1e-12);
        // A group of 5 at t = 1, 0.2 · 5 · ln 2.
        assert!((BetaSchedule::Kandasamy.beta(5, 1) - 0.693147).abs() < 1e-6);
        // |P| = 4, δ = 0.1 gives κ = √β ≈ 3.9 at t = 5 and 5.2 at
        // t = 100. (At t = 30 the formula gives 4.69, checked
        // below.)
        let s = BetaSchedule::Srinivas { cardinality: 4.0, delta: 0.1 };
        assert!((s.beta(1, 5).sqrt() - 3.9).abs() < 0.06, "{}", s.beta(1, 5).sqrt());
        assert!((s.beta(1, 100).sqrt() - 5.2).abs() < 0.03, "{}", s.beta(1, 100).sqrt());
        assert!((s.beta(1, 30).sqrt() - 4.69).abs() < 0.01 && (s.beta(1, 15).sqrt() - 4.3).abs() < 0.1);
        assert_eq!(BetaSchedule::Constant(4.0).beta(10, 10), 4.0);
    }

    #[test]
    fn log_ei_matches_the_closed_form_and_stays_finite_in_the_tail() {
        // EI = (μ − f⁺)Φ(z) + σφ(z) in the body.
        for (mean, var, best) in [(0.3, 0.04, 0.1), (-1.0, 1.0, 0.5), (2.0, 0.25, 2.5)] {
            let s: f64 = f64::sqrt(var);
            let z = (mean - best) / s;
            let ei = (mean - best) * ndtr(z) + s * (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
            assert!((Acquisition::LogEi { best }.value(mean, var) - ei.ln()).abs() < 1e-10);
        }
        // The two branches agree where they meet.
        let z: f64 = TAIL + 1e-9;
        let direct = (log_phi(z)).exp() + z * ndtr(z);
        assert!((direct.ln() - (log_phi(z) - 2.0 * (-z).ln() + tail_series(z).ln())).abs() < 1e-7);
        // Far in the tail: finite, decreasing, and ≈ log φ(z) − 2 log|z|.
        let mut last = f64::INFINITY;
        for z in [-5.0, -20.0, -40.0, -100.0, -1000.0] {
            let v = log_h(z);
            assert!(v.is_finite() && v < last, "log h({z}) = {v}");
            last = v;
        }
        assert!((log_h(-1000.0) - (log_phi(-1000.0) - 2.0 * 1000f64.ln())).abs() < 1e-5);
        assert!(d_log_h(-1000.0).is_finite() && (d_log_h(-1000.0) - 1000.0).abs() < 1.0);
    }

    #[test]
    fn gradients_follow_the_chain_rule() {
        // μ(x) = x₀², σ²(x) = 0.1 + x₁², checked against finite differences.
        let post = |x: &[f64]| PosteriorGrad {
            mean: x[0] * x[0],
            var: 0.1 + x[1] * x[1],
            d_mean: vec![2.0 * x[0], 0.0],
            d_var: vec![0.0, 2.0 * x[1]],
        };
        for acq in [
            Acquisition::Ucb { beta: 2.5 },
            Acquisition::LogEi { best: 0.7 },
            Acquisition::LogPi { best: 0.7 },
            Acquisition::LogEi { best: 30.0 },
        ] {
            let x = [0.4, 0.3];
            let (_, g) = acq.value_and_grad(&post(&x));
            for i in 0..2 {
                let h = 1e-6;
                let mut a = x;
                a[i] += h;
                let mut b = x;
                b[i] -= h;
                let fd = (acq.value_and_grad(&post(&a)).0 - acq.value_and_grad(&post(&b)).0) / (2.0 * h);
                assert!((fd - g[i]).abs() < 1e-5 * (1.0 + fd.abs()), "{acq:?} ∂/∂x[{i}]: {} vs {fd}", g[i]);
            }
        }
    }

    #[test]
    fn a_believed_value_only_ever_raises_the_incumbent() {
        let ei = Acquisition::LogEi { best: 0.5 };
        assert_eq!(ei.with_incumbent_at_least(0.8), Acquisition::LogEi { best: 0.8 });
        assert_eq!(ei.with_incumbent_at_least(0.2), ei, "a fantasy below the best changes nothing");
        assert_eq!(ei.with_incumbent_at_least(f64::NEG_INFINITY), ei, "no fantasies");
        assert_eq!(Acquisition::LogPi { best: 0.5 }.with_incumbent_at_least(0.8), Acquisition::LogPi { best: 0.8 });
        let ucb = Acquisition::Ucb { beta: 2.0 };
        assert_eq!(ucb.with_incumbent_at_least(9.0), ucb, "UCB has no incumbent");
        // A raised incumbent lowers EI everywhere.
        assert!(ei.with_incumbent_at_least(0.8).value(0.7, 0.01) < ei.value(0.7, 0.01));
    }
}
