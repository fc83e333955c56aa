//! Matérn-5/2: `f(r) = (1 + √5 r + 5r²/3) exp(−√5 r)` (Rasmussen & Williams 2006, eq. 4.17),
//! the default kernel of GP_BANDIT and of the seed papers' GP-UCB experiments.

use super::ard::{Ard, Profile};
use super::exp::exp_nonpositive;

/// The Matérn-5/2 profile.
#[derive(Clone, Copy, Debug)]
pub struct Matern52Profile;

impl Profile for Matern52Profile {
    const NAME: &'static str = "matern52";

    #[inline(always)]
    fn value(r2: f64) -> f64 {
        let r = r2.max(0.0).sqrt();
        let s = 5f64.sqrt() * r;
        (1.0 + s + 5.0 * r2 / 3.0) * exp_nonpositive(-s)
    }

    #[inline(always)]
    fn d_dr2(r2: f64) -> f64 {
        // df/dr = −(5/3) r (1 + √5 r) e^{−√5 r}; df/dr² = (df/dr) / 2r.
        let s = 5f64.sqrt() * r2.max(0.0).sqrt();
        -(5.0 / 6.0) * (1.0 + s) * exp_nonpositive(-s)
    }

    #[inline(always)]
    fn d_dr2_given(r2: f64, f: f64) -> f64 {
        // f = (1 + s + s²/3) e^{−s} with s = √5 r, so e^{−s} = f / (1 + s + s²/3).
        let r2 = r2.max(0.0);
        let s = 5f64.sqrt() * r2.sqrt();
        -(5.0 / 6.0) * (1.0 + s) * f / (1.0 + s + 5.0 * r2 / 3.0)
    }

    #[inline(always)]
    fn value_and_d(r2: f64) -> (f64, f64) {
        let r2 = r2.max(0.0);
        let s = 5f64.sqrt() * r2.sqrt();
        let e = exp_nonpositive(-s);
        ((1.0 + s + 5.0 * r2 / 3.0) * e, -(5.0 / 6.0) * (1.0 + s) * e)
    }
}

/// An ARD Matérn-5/2 kernel.
pub type Matern52 = Ard<Matern52Profile>;

/// An ARD Matérn-5/2 kernel over `dims`, length scales starting at `length_scale`.
pub fn matern52(dims: Vec<usize>, length_scale: f64, bounds: (f64, f64)) -> Matern52 {
    Ard::new(dims, length_scale, bounds)
}
