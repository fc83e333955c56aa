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
    Median(MedianStopping),
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

/// `medianAutomatedStoppingSpec`, with bo's extensions — where the rule starts judging and how
/// often, which Optuna's `MedianPruner` sets as `n_startup_trials`, `n_warmup_steps` and
/// `interval_steps`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MedianStopping {
    /// Compare at equal elapsed time instead of equal step count.
    #[serde(default)]
    pub use_elapsed_duration: bool,
    /// Completed trials that must have reached a position before a trial is judged there
    /// (`minCompletedTrials`; `None`: [`MIN_COMPLETED`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_completed_trials: Option<u32>,
    /// A trial is judged from this position on (`minStepCount`; `None`: from its first
    /// measurement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_step_count: Option<f64>,
    /// Judged only at its first measurement at or past each `minStepCount + k · intervalSteps`
    /// (`intervalSteps`; `None`: at every measurement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_steps: Option<f64>,
    /// What of each completed trial the median is taken of (`medianOf`).
    #[serde(default, skip_serializing_if = "MedianOf::is_default")]
    pub median_of: MedianOf,
}

/// What of each completed trial the median rule takes the median of, at a trial's position.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MedianOf {
    /// Its running average of the objective up to the position (Golovin et al. 2017, Vizier's):
    /// on a climbing curve it trails the value there, so fewer trials stop, later.
    #[default]
    RunningAverage,
    /// Its value at the position itself, where it has a measurement there (Optuna's
    /// `MedianPruner`); a position no completed trial was measured at judges nothing.
    ValueAtPosition,
}

impl MedianOf {
    fn is_default(&self) -> bool {
        *self == MedianOf::RunningAverage
    }
}

/// The most completed trials `minCompletedTrials` may ask for.
pub const MAX_MIN_COMPLETED: u32 = 100_000;
/// The number of comparable completed trials the median rule needs before it stops anything
/// (`minCompletedTrials` unset).
pub const MIN_COMPLETED: usize = 3;

impl MedianStopping {
    /// Checks the settings; errors name the field under `path`.
    pub fn check(&self, path: &str) -> Result<(), FieldError> {
        if let Some(n) = self.min_completed_trials
            && !(1..=MAX_MIN_COMPLETED).contains(&n)
        {
            return Err(FieldError::new(format!("{path}.minCompletedTrials"), format!("must be from 1 to {MAX_MIN_COMPLETED}, got {n}")));
        }
        if let Some(s) = self.min_step_count
            && !(s.is_finite() && s >= 0.0)
        {
            return Err(FieldError::new(format!("{path}.minStepCount"), format!("must be a finite number, at least 0, got {s}")));
        }
        if let Some(k) = self.interval_steps
            && !(k.is_finite() && k > 0.0)
        {
            return Err(FieldError::new(format!("{path}.intervalSteps"), format!("must be a finite positive number, got {k}")));
        }
        Ok(())
    }

    /// Whether a trial whose measurements sit at `positions` (its newest at `at`) is judged at
    /// `at`: at or past `minStepCount`, and its first measurement at or past the last interval
    /// boundary (Optuna's `_is_first_in_interval_step`).
    pub fn judges(&self, at: f64, positions: impl Iterator<Item = f64>) -> bool {
        let start = self.min_step_count.unwrap_or(0.0);
        if at < start {
            return false;
        }
        let Some(every) = self.interval_steps else { return true };
        let boundary = start + ((at - start) / every).floor() * every;
        let before = positions.filter(|p| *p < at).fold(f64::NEG_INFINITY, f64::max);
        before < boundary
    }

    /// The completed trials the rule waits for at a position.
    pub fn min_completed(&self) -> usize {
        self.min_completed_trials.map_or(MIN_COMPLETED, |n| n as usize)
    }
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
            StoppingSpec::Median(m) => m.use_elapsed_duration,
            StoppingSpec::DecayCurve { use_elapsed_duration } => *use_elapsed_duration,
            StoppingSpec::Convex(c) => c.use_elapsed_duration,
            StoppingSpec::SuccessiveHalving(h) => h.use_elapsed_duration,
        }
    }

    /// The rule's name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            StoppingSpec::Median(_) => "medianAutomatedStoppingSpec",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Optuna's `n_warmup_steps` and `interval_steps`: judged from the warm-up on, at the first
    /// measurement at or past each interval boundary.
    #[test]
    fn the_median_rule_judges_from_its_warm_up_at_each_interval() {
        let rule = MedianStopping { min_step_count: Some(5.0), interval_steps: Some(3.0), ..MedianStopping::default() };
        let steps = |upto: u32| (0..upto).map(f64::from);
        assert!(!rule.judges(4.0, steps(4)), "before the warm-up");
        assert!(rule.judges(5.0, steps(5)), "the first boundary");
        assert!(!rule.judges(6.0, steps(6)) && !rule.judges(7.0, steps(7)));
        assert!(rule.judges(8.0, steps(8)), "the next boundary");
        assert!(rule.judges(9.0, [0.0, 4.0, 7.0].into_iter()), "the first measurement past 8 when 8 was skipped");
        assert!(!rule.judges(10.0, [9.0].into_iter()), "9 was that one");
        assert!(MedianStopping::default().judges(0.0, std::iter::empty()), "without settings: every measurement");
        let bad = MedianStopping { interval_steps: Some(0.0), ..MedianStopping::default() };
        assert_eq!(bad.check("m").unwrap_err().path, "m.intervalSteps");
        assert_eq!(
            MedianStopping { min_completed_trials: Some(0), ..MedianStopping::default() }.check("m").unwrap_err().path,
            "m.minCompletedTrials"
        );
    }
}
