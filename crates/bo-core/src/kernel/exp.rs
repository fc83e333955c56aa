//! `exp(x)` for the kernels' profiles (`x ≤ 0`), written so the compiler can vectorise a loop of
//! them: the C library's `exp` is an opaque call per pair, and took a quarter of a suggestion at
//! 100 trials (measured with `perf` on `bo-bench latency`). Range reduction `x = k ln 2 + r`,
//! `|r| ≤ ln 2 / 2` (Cody & Waite's two-part ln 2), a degree-13 Taylor polynomial for `e^r`
//! (truncation below 1e-17 relative), and `2^k` put straight into the exponent bits; no branch,
//! no integer conversion the baseline x86-64 instruction set lacks.
//!
//! Agrees with `f64::exp` to a few units in the last place over `[−708, 0]` (tested below);
//! below −708 it returns 0 (the true value is under 1e-307: a covariance of nothing).
//!
//! The gain is in wide vectors: the loops that apply a profile to whole matrices (`ard.rs`'s
//! `Profiled` and `Sloped`) are compiled for AVX2 at run time, 0.7 ns a value; in a scalar or
//! baseline (2-lane) loop it is no faster than the C library's (2.9 against 2.5 ns, measured).
//!
//! Must not be used for positive arguments: `2^k` is only built for `k ≤ 0`.

/// 1.5 · 2⁵²: adding it rounds a double of magnitude < 2⁵¹ to an integer held in the low bits.
const ROUND: f64 = 6_755_399_441_055_744.0;
const LOG2_E: f64 = std::f64::consts::LOG2_E;
/// ln 2 in two parts: the high part has trailing zero bits, so `k · LN2_HI` is exact for |k| < 2¹¹.
const LN2_HI: f64 = 6.931_471_803_691_238_2e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// Below this, `e^x` is subnormal or zero; the function returns 0.
const LOWEST: f64 = -708.0;

/// `e^x` for `x ≤ 0` (see the module docs).
#[inline(always)]
pub(crate) fn exp_nonpositive(x: f64) -> f64 {
    let below = x < LOWEST;
    let x = if below { LOWEST } else { x };
    let t = x * LOG2_E + ROUND;
    let k = t - ROUND;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // e^r = Σ rⁱ/i!, i ≤ 13, by Horner.
    let mut p = 1.0 / 6_227_020_800.0;
    p = p * r + 1.0 / 479_001_600.0;
    p = p * r + 1.0 / 39_916_800.0;
    p = p * r + 1.0 / 3_628_800.0;
    p = p * r + 1.0 / 362_880.0;
    p = p * r + 1.0 / 40_320.0;
    p = p * r + 1.0 / 5_040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // t's low bits hold k (two's complement); k + 1023 ∈ [1, 1023] is the exponent of 2^k.
    let scale = f64::from_bits(t.to_bits().wrapping_add(1023) << 52);
    if below { 0.0 } else { p * scale }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within 4 units in the last place of `f64::exp` on a dense grid of [−708, 0] and at the
    /// awkward points (0, the reduction's boundaries, tiny arguments); 0 below.
    #[test]
    fn agrees_with_the_c_library() {
        let mut worst = 0.0f64;
        let mut check = |x: f64| {
            let (got, want) = (exp_nonpositive(x), x.exp());
            let ulps = (got - want).abs() / (want * f64::EPSILON);
            worst = worst.max(ulps);
            assert!(ulps <= 4.0, "exp({x}) = {got}, libm {want}: {ulps} ulps");
        };
        for i in 0..=2_000_000 {
            check(-708.0 * f64::from(i) / 2_000_000.0);
        }
        for x in [0.0, -0.0, -1e-300, -1e-17, -1e-9, -0.5 * std::f64::consts::LN_2, -std::f64::consts::LN_2, -1.5 * std::f64::consts::LN_2]
        {
            check(x);
        }
        assert!(worst < 4.0);
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-709.0), 0.0);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
    }
}
