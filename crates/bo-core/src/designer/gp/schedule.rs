//! The fit schedule: how much of θ a GP designer's fit searches, given what it knows of the last
//! fit, and the state it leaves for the next one.
//!
//! A fit is in one of four [`Mode`]s: a full search (the first fit, or once the data has grown by
//! [`FULL_FIT_GROWTH`]), a warm refit (θ optimised from the last θ alone), conditioning only (the
//! last θ kept while the data has grown by less than [`WARM_REFIT_GROWTH`]), or a restore (a
//! stored fit taken up at its θ, as a replica does with another's). The caller says which of the
//! last two it wants through [`Start`]; nothing of that is written into the stored state.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::designer::{FitError, ModelState};
use crate::gp::{self, FitConfig, Gp, Hyperparameters, NoiseBounds, Search};
use crate::kernel::Kernel;
use crate::study::ObservationNoise;

/// What a fit knows of the last one.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Start<'a> {
    /// Nothing: a full search.
    Cold,
    /// The last fit's state: the schedule decides how much to search.
    Last(&'a ModelState),
    /// A stored fit to take up as it is: condition at its θ, no search.
    Restore(&'a ModelState),
}

impl<'a> From<Option<&'a ModelState>> for Start<'a> {
    fn from(last: Option<&'a ModelState>) -> Start<'a> {
        last.map_or(Start::Cold, Start::Last)
    }
}

impl<'a> Start<'a> {
    /// The stored state, if any.
    pub fn state(self) -> Option<&'a ModelState> {
        match self {
            Start::Cold => None,
            Start::Last(s) | Start::Restore(s) => Some(s),
        }
    }

    /// Whether a stored fit is to be taken up as it is (no search of θ or of a structure).
    pub fn is_restore(self) -> bool {
        matches!(self, Start::Restore(_))
    }
}

/// A GP designer's `Designer::fit` and `Designer::restore`, both its own `fit_from(problem,
/// history, start, rng)`: `fit` from the last fit's state (the schedule decides how much to
/// search), `restore` from a stored fit taken up as it is (conditioned on `history` at its θ and
/// structure, no search). Written inside the designer's `impl Designer`.
macro_rules! fit_from_start {
    () => {
        fn fit(
            &self,
            problem: &$crate::designer::Problem,
            history: &[$crate::trial::Observation],
            warm: Option<&$crate::designer::ModelState>,
            rng: &mut dyn rand::Rng,
        ) -> Result<$crate::designer::Fitted, $crate::designer::FitError> {
            self.fit_from(problem, history, warm.into(), rng)
        }

        fn restore(
            &self,
            problem: &$crate::designer::Problem,
            history: &[$crate::trial::Observation],
            state: &$crate::designer::ModelState,
            rng: &mut dyn rand::Rng,
        ) -> Result<$crate::designer::Fitted, $crate::designer::FitError> {
            self.fit_from(problem, history, $crate::designer::gp::schedule::Start::Restore(state), rng)
        }
    };
}
pub(crate) use fit_from_start;

/// What a fit does with θ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// From the last, the default and random θ.
    Fit,
    /// From the last θ alone.
    WarmRefit,
    /// The last θ kept; the GP conditions on the data (one factorisation).
    ConditionOnly,
    /// The stored θ kept, as [`Mode::ConditionOnly`], because the caller restores a stored fit.
    Restore,
}

impl Mode {
    fn search(self) -> Search {
        match self {
            Mode::Fit => Search::Full,
            Mode::WarmRefit => Search::Warm,
            Mode::ConditionOnly | Mode::Restore => Search::Reuse,
        }
    }
}

/// What is stored between fits.
#[derive(Serialize, Deserialize)]
struct State {
    gp: Hyperparameters,
    /// The number of observations at the last full hyperparameter search.
    #[serde(default)]
    full_fit_at: Option<usize>,
    /// The number of observations at the last optimisation of θ (full or warm).
    #[serde(default)]
    fit_at: Option<usize>,
}

/// Between full hyperparameter searches (from the warm, default and random starts), refits start
/// from the warm start alone; a full search runs again once the data has grown by this factor —
/// O(log n) of them over a study. Measured with `bo-bench suite` (docs/journal/benchmarks.md).
const FULL_FIT_GROWTH: f64 = 1.2;

/// Between optimisations of θ, the GP conditions on new observations at the last θ; θ is
/// optimised again (from the warm start) once the data has grown by this fraction since — every
/// trial below 40, every 5th at 100, every 50th at 1,000. Over 12 seeds of Branin, Hartmann-3/-6
/// and Jenatton it took 30 % off the time per step with the same regret; 0.1 took 40 % and cost
/// Branin and Jenatton regret (docs/journal/benchmarks.md).
const WARM_REFIT_GROWTH: f64 = 0.05;

/// The noise bounds of a study's `observationNoise`.
pub(crate) fn noise_bounds(noise: ObservationNoise) -> NoiseBounds {
    match noise {
        ObservationNoise::Low => NoiseBounds::LOW,
        ObservationNoise::High => NoiseBounds::HIGH,
        ObservationNoise::Unspecified => NoiseBounds::DEFAULT,
    }
}

/// The mode of a fit on `n` observations after a fit that left `last`.
fn mode(n: usize, last: Option<&State>, restore: bool) -> Mode {
    let Some(state) = last else { return Mode::Fit };
    if restore {
        return Mode::Restore;
    }
    let Some(full_at) = state.full_fit_at else { return Mode::Fit };
    if n < full_at || n as f64 >= FULL_FIT_GROWTH * full_at as f64 {
        return Mode::Fit;
    }
    match state.fit_at {
        // A refit without new observations is a request to optimise θ again.
        Some(at) if n > at && n - at < (WARM_REFIT_GROWTH * at as f64) as usize => Mode::ConditionOnly,
        _ => Mode::WarmRefit,
    }
}

/// How much a fit of θ does: random restarts of its optimisation, and samples of θ drawn from
/// its posterior beside the best found ([`gp::FitConfig::samples`]; 0: the best alone).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Effort {
    pub restarts: usize,
    pub samples: usize,
}

/// The most θ samples a designer's `hyperparameterSamples` may ask for: each is one more GP
/// to factor at every fit and to predict with at every candidate.
pub(crate) const MAX_HYPERPARAMETER_SAMPLES: usize = 32;

impl Effort {
    /// `restarts` random restarts, one θ.
    pub(crate) fn restarts(restarts: usize) -> Effort {
        Effort { restarts, samples: 0 }
    }
}

/// Fits `kernel` to `x`, `y` under the study's noise setting, each target with its own noise
/// variance `extra` on top (empty: none; [`super::training::Training::extra`]), in the [`Mode`]
/// the schedule gives from `start`; returns the GP and the state to store.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_gp(
    kernel: Box<dyn Kernel>,
    x: Vec<Vec<f64>>,
    y: &[f64],
    extra: &[f64],
    noise: ObservationNoise,
    effort: Effort,
    start: Start<'_>,
    rng: &mut dyn Rng,
) -> Result<(Gp, ModelState), FitError> {
    let noise = noise_bounds(noise);
    let (stored, restore) = match start {
        Start::Cold => (None, false),
        Start::Last(s) => (Some(s), false),
        Start::Restore(s) => (Some(s), true),
    };
    let last: Option<State> = stored.and_then(|s| serde_json::from_value::<State>(s.0.clone()).ok());
    let n = x.len();
    let mode = mode(n, last.as_ref(), restore);
    let config = FitConfig { noise, restarts: effort.restarts, search: mode.search(), samples: effort.samples, ..FitConfig::default() };
    let gp = gp::fit_with(kernel, x, y, extra, &config, last.as_ref().map(|s| &s.gp), rng)
        .map_err(|e| FitError::Numerical(format!("GP fit failed: {e}")))?;
    let kept = |f: fn(&State) -> Option<usize>| last.as_ref().and_then(f);
    let full_fit_at = if mode == Mode::Fit { Some(n) } else { kept(|s| s.full_fit_at) };
    let fit_at = if mode.search() == Search::Reuse { kept(|s| s.fit_at) } else { Some(n) };
    let state = ModelState(serde_json::to_value(State { gp: gp.hyperparameters(), full_fit_at, fit_at }).unwrap_or_default());
    Ok((gp, state))
}

/// The state after which [`fit_gp`] on `n` observations optimises θ from `theta` alone (a warm
/// refit): for a designer that chose θ itself, e.g. by a structure search.
pub(crate) fn warm_start(theta: Hyperparameters, n: usize) -> ModelState {
    ModelState(serde_json::to_value(State { gp: theta, full_fit_at: Some(n), fit_at: Some(n) }).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperparameter_searches_follow_the_data_geometrically() {
        let state = |full_fit_at, fit_at| State {
            gp: Hyperparameters { kernel: vec![], names: vec![], log_noise: 0.0, samples: vec![] },
            full_fit_at,
            fit_at,
        };
        let mode = |n, last: Option<&State>| mode(n, last, false);
        assert_eq!(mode(14, None), Mode::Fit, "the first fit searches fully");
        assert_eq!(mode(15, Some(&state(Some(14), Some(14)))), Mode::WarmRefit, "small data: θ every trial");
        assert_eq!(mode(16, Some(&state(Some(14), Some(15)))), Mode::WarmRefit);
        assert_eq!(mode(41, Some(&state(Some(40), Some(40)))), Mode::ConditionOnly, "every other trial at 40");
        assert_eq!(mode(40, Some(&state(Some(40), Some(40)))), Mode::WarmRefit, "no new data: optimise θ again");
        assert_eq!(mode(17, Some(&state(Some(14), Some(16)))), Mode::Fit, "20 % more data");
        assert_eq!(mode(10, Some(&state(Some(14), Some(14)))), Mode::Fit, "trials were deleted");
        assert_eq!(mode(104, Some(&state(Some(100), Some(100)))), Mode::ConditionOnly, "4 % more data keeps θ");
        assert_eq!(mode(105, Some(&state(Some(100), Some(100)))), Mode::WarmRefit, "5 % more data refits θ");
        assert_eq!(mode(105, Some(&state(Some(100), None))), Mode::WarmRefit, "a state from before fit_at");
        let started = warm_start(Hyperparameters { kernel: vec![], names: vec![], log_noise: 0.0, samples: vec![] }, 77);
        let started: State = serde_json::from_value(started.0).unwrap();
        assert_eq!(mode(77, Some(&started)), Mode::WarmRefit, "a chosen θ is optimised from, not kept or replaced");
        let (mut full, mut warm, mut last) = (0, 0, None::<State>);
        for n in 14..=2000 {
            let m = mode(n, last.as_ref());
            full += usize::from(m == Mode::Fit);
            warm += usize::from(m == Mode::WarmRefit);
            let kept = |f: fn(&State) -> Option<usize>| last.as_ref().and_then(f);
            last = Some(state(
                if m == Mode::Fit { Some(n) } else { kept(|s| s.full_fit_at) },
                if m == Mode::ConditionOnly { kept(|s| s.fit_at) } else { Some(n) },
            ));
        }
        assert!(full < 30, "O(log n) full searches over a study: {full}");
        assert!(full + warm < 200, "O(log n) optimisations of θ over a study: {}", full + warm);
    }

    #[test]
    fn a_restore_keeps_the_stored_theta_whatever_the_data() {
        let s = State {
            gp: Hyperparameters { kernel: vec![], names: vec![], log_noise: 0.0, samples: vec![] },
            full_fit_at: Some(10),
            fit_at: Some(10),
        };
        for n in [5, 10, 11, 100] {
            assert_eq!(mode(n, Some(&s), true), Mode::Restore, "{n} observations");
        }
        assert_eq!(mode(10, None, true), Mode::Fit, "nothing stored to restore: a fit");
    }
}
