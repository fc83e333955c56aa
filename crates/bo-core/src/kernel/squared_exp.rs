//! Squared exponential: `f(r²) = exp(−r²/2)` (Rasmussen & Williams 2006, eq. 4.9).

use super::ard::{Ard, Profile};
use super::exp::exp_nonpositive;

/// The squared-exponential profile.
#[derive(Clone, Copy, Debug)]
pub struct SquaredExpProfile;

impl Profile for SquaredExpProfile {
    const NAME: &'static str = "squared_exp";

    #[inline(always)]
    fn value(r2: f64) -> f64 {
        exp_nonpositive(-0.5 * r2.max(0.0))
    }

    #[inline(always)]
    fn d_dr2(r2: f64) -> f64 {
        -0.5 * exp_nonpositive(-0.5 * r2.max(0.0))
    }

    #[inline(always)]
    fn d_dr2_given(_r2: f64, f: f64) -> f64 {
        -0.5 * f
    }
}

/// An ARD squared-exponential kernel.
pub type SquaredExp = Ard<SquaredExpProfile>;

/// An ARD squared-exponential kernel over `dims`.
pub fn squared_exp(dims: Vec<usize>, length_scale: f64, bounds: (f64, f64)) -> SquaredExp {
    Ard::new(dims, length_scale, bounds)
}
