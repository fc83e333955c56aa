//! The stopping rules' settings, as a study holds them: which rule ([`StoppingSpec`]) and each
//! rule's parameters, checked, with what follows from them alone (a successive-halving rule's
//! rungs and brackets). The rules themselves, which read trials, live beside this file.
//!
//! Must not do: read trials or measurements; this file is what `crate::study` needs of stopping,
//! and imports nothing of the rules.

use serde::{Deserialize, Serialize};

use crate::field::FieldError;

/// Automated early stopping of unpromising trials (see [`crate::stopping`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoppingSpec {
    /// The median stopping rule (Golovin et al., 2017), measured by step count or elapsed time.
    Median {
        /// Compare at equal elapsed time instead of equal step count.
        use_elapsed_duration: bool,
    },
    /// `decayCurveStoppingSpec`: a GP over parameters and position predicts the trial's final
    /// value; the trial stops when it is very unlikely to beat the best.
    DecayCurve {
        /// Positions are elapsed seconds instead of steps.
        use_elapsed_duration: bool,
    },
    /// `convexAutomatedStoppingSpec` (and v1beta1's `convexStopConfig`): the curve's
    /// extrapolation under convexity against the best, with an autoregressive last measurement.
    Convex(ConvexStopping),
    /// `successiveHalvingStoppingSpec` (bo extension): ASHA's promotion rule at rungs a factor
    /// apart (see [`super::successive_halving`]).
    SuccessiveHalving(SuccessiveHalving),
}

/// `convexAutomatedStoppingSpec`, with the proto's defaults made explicit where they are fixed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConvexStopping {
    /// The position a trial is predicted at (`maxStepCount`); `None`: learned from the completed
    /// trials (the furthest any reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_step_count: Option<f64>,
    /// Trials are not judged before they pass this position (`minStepCount`); `None`: a tenth of
    /// the maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_step_count: Option<f64>,
    /// Measurements a trial needs before it is judged, and completed trials beyond it the rule
    /// waits for (`minMeasurementCount`; `None`: 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_measurement_count: Option<u32>,
    /// The DOUBLE parameter that is the learning rate, used by the autoregressive prediction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate_parameter_name: Option<String>,
    /// Positions are elapsed seconds instead of steps.
    #[serde(default)]
    pub use_elapsed_duration: bool,
}

impl StoppingSpec {
    /// Whether positions are elapsed seconds instead of steps.
    pub fn use_elapsed(&self) -> bool {
        match self {
            StoppingSpec::Median { use_elapsed_duration } | StoppingSpec::DecayCurve { use_elapsed_duration } => *use_elapsed_duration,
            StoppingSpec::Convex(c) => c.use_elapsed_duration,
            StoppingSpec::SuccessiveHalving(h) => h.use_elapsed_duration,
        }
    }

    /// The rule's name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            StoppingSpec::Median { .. } => "medianAutomatedStoppingSpec",
            StoppingSpec::DecayCurve { .. } => "decayCurveStoppingSpec",
            StoppingSpec::Convex(_) => "convexAutomatedStoppingSpec",
            StoppingSpec::SuccessiveHalving(_) => "successiveHalvingStoppingSpec",
        }
    }
}

/// The reduction factor when none is given: a third goes on at each rung (Li et al. 2018).
pub const DEFAULT_REDUCTION_FACTOR: f64 = 3.0;
/// The lowest rung when none is given.
pub const DEFAULT_MIN_STEP: f64 = 1.0;
/// The most rungs a study may have: more would judge a trial at steps too close to tell apart.
pub const MAX_RUNGS: usize = 64;
/// Brackets when none is given: one, plain successive halving.
pub const DEFAULT_BRACKETS: u32 = 1;

fn default_brackets() -> u32 {
    DEFAULT_BRACKETS
}

/// Which of the trials at a rung go on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Promotion {
    /// At least as good as the `1 − 1/η` quantile (linear between order statistics) of the other
    /// trials' values at the rung: Ray Tune's `AsyncHyperBandScheduler`.
    #[default]
    Quantile,
    /// Among the best `max(1, ⌊n/η⌋)` of the `n` values at the rung, its own included: ASHA's
    /// `top_k` (Li et al. 2020, Algorithm 2) and Optuna's `SuccessiveHalvingPruner`.
    TopK,
}

/// The rule's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuccessiveHalving {
    /// The lowest rung (`minStepCount`): a trial is not judged before it.
    pub min_step_count: f64,
    /// The full training (`maxStepCount`): rungs sit below it, and a trial at it is not judged.
    pub max_step_count: f64,
    /// The factor between rungs, and the inverse of the share that goes on at each (`η`).
    pub reduction_factor: f64,
    /// Positions are elapsed seconds instead of steps.
    #[serde(default)]
    pub use_elapsed_duration: bool,
    /// Hyperband's brackets: bracket `b` (from 0) starts at the `b`-th rung. 1 is plain
    /// successive halving; at most the number of rungs.
    #[serde(default = "default_brackets")]
    pub brackets: u32,
    /// Which of the trials at a rung go on.
    #[serde(default)]
    pub promotion: Promotion,
    /// ASHA with checkpoints (Li et al. 2020, Algorithm 2): every trial pauses at each rung, and
    /// a paused trial that becomes one of the best `⌊n/η⌋` at its rung is handed out again as a
    /// new trial that resumes it ([`promotable`]). Only with one bracket and [`Promotion::TopK`].
    #[serde(default)]
    pub resume: bool,
}

impl SuccessiveHalving {
    /// Checks the settings; errors name the field under `path`.
    pub fn check(&self, path: &str) -> Result<(), FieldError> {
        let (min, max, eta) = (self.min_step_count, self.max_step_count, self.reduction_factor);
        if !(min.is_finite() && min > 0.0) {
            return Err(FieldError::new(format!("{path}.minStepCount"), format!("must be positive, got {min}")));
        }
        if !(max.is_finite() && max > min) {
            return Err(FieldError::new(
                format!("{path}.maxStepCount"),
                format!("is required and must be above minStepCount ({min}), got {max}"),
            ));
        }
        if !(1.5..=100.0).contains(&eta) {
            return Err(FieldError::new(format!("{path}.reductionFactor"), format!("must be from 1.5 to 100, got {eta}")));
        }
        let rungs = self.rungs().len();
        if rungs > MAX_RUNGS {
            return Err(FieldError::new(
                format!("{path}.reductionFactor"),
                format!("gives more than {MAX_RUNGS} rungs from {min} to {max}; raise it or minStepCount"),
            ));
        }
        if !(1..=rungs as u32).contains(&self.brackets) {
            return Err(FieldError::new(
                format!("{path}.brackets"),
                format!("must be from 1 to {rungs}, the number of rungs from minStepCount to maxStepCount, got {}", self.brackets),
            ));
        }
        if self.resume && self.brackets != 1 {
            return Err(FieldError::new(
                format!("{path}.resume"),
                format!("resumes paused trials within one bracket only; brackets must be 1, got {}", self.brackets),
            ));
        }
        if self.resume && self.promotion != Promotion::TopK {
            return Err(FieldError::new(
                format!("{path}.resume"),
                "promotes a paused trial by ASHA's top k (Li et al. 2020, Algorithm 2); promotion must be TOP_K or unset",
            ));
        }
        Ok(())
    }

    /// The rungs of the first bracket, lowest first: `min · η^k` below the maximum (at most
    /// [`MAX_RUNGS`] + 1).
    pub fn rungs(&self) -> Vec<f64> {
        let mut rungs = Vec::new();
        let mut r = self.min_step_count;
        while r < self.max_step_count && rungs.len() <= MAX_RUNGS {
            rungs.push(r);
            r *= self.reduction_factor;
        }
        rungs
    }

    /// The bracket of trial number `trial`: the first whose cumulative Hyperband share passes
    /// the trial's point of the golden-ratio sequence (always 0 with one bracket).
    pub fn bracket_of(&self, trial: i64) -> u32 {
        bracket_by(&self.shares(), trial)
    }

    /// Each bracket's share of the trials, summing to 1: bracket `b` with `s` rungs gets
    /// `η^s / (s + 1)` of it, normalised (Li et al. 2018, Algorithm 1's `n`).
    pub fn shares(&self) -> Vec<f64> {
        let rungs = self.rungs().len();
        let brackets = (self.brackets.max(1) as usize).min(rungs.max(1));
        let weights: Vec<f64> = (0..brackets)
            .map(|b| {
                let s = (rungs - b) as f64;
                // Relative to the first bracket, so large η^s cannot overflow.
                self.reduction_factor.powf(s - rungs as f64) * (rungs as f64 + 1.0) / (s + 1.0)
            })
            .collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }

    /// The highest rung of `bracket` at or below `at`, if `at` is below the maximum.
    pub fn rung_at(&self, at: f64, bracket: u32) -> Option<f64> {
        if at >= self.max_step_count {
            return None;
        }
        self.rungs().into_iter().skip(bracket as usize).take_while(|r| *r <= at).last()
    }
}

/// The fractional part of the golden ratio: trial numbers times it, modulo 1, spread evenly.
const GOLDEN: f64 = 0.618_033_988_749_894_9;

/// The bracket of trial number `trial` given the brackets' `shares`.
pub(crate) fn bracket_by(shares: &[f64], trial: i64) -> u32 {
    let u = (trial as f64 * GOLDEN).fract().abs();
    let mut cumulative = 0.0;
    for (b, share) in shares.iter().enumerate() {
        cumulative += share;
        if u < cumulative {
            return b as u32;
        }
    }
    shares.len().saturating_sub(1) as u32
}
