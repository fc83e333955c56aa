//! How every designer is made from a study, and the `algorithmConfig` checks they share.
//!
//! One convention ([`FromConfig`]): a designer's `algorithmConfig` is parsed into its `Params`
//! (camelCase, unknown fields refused), and `new(params, space)` checks the ranges and the space,
//! refusing with a [`ConfigError`] that names the field and what is supported; `for_study` is
//! where a designer reads more of the study than its space (the budget it declares,
//! [`within_budget`]). The registry ([`super::designer_for`]) only maps names to [`build`]. This
//! module owns no algorithm.

use serde::de::DeserializeOwned;

use super::{ConfigError, Designer};
use crate::space::SearchSpace;
use crate::study::StudySpec;

/// A designer made from its checked `algorithmConfig` and the study's space.
pub(crate) trait FromConfig: Designer + Sized + 'static {
    /// The parsed `algorithmConfig`; its `Default` is the settings of an empty or absent one.
    type Params: DeserializeOwned + Default;

    /// Parses `algorithmConfig` (absent: the defaults).
    fn parse(config: &serde_json::Value) -> Result<Self::Params, ConfigError> {
        parse_params(config)
    }

    /// The designer for `space` with `params`, or why the settings or the space are refused.
    fn new(params: Self::Params, space: &SearchSpace) -> Result<Self, ConfigError>;

    /// The designer for the study `spec`: [`new`](Self::new) on its space, unless a designer's
    /// defaults read more of the study (`AUTO`'s design reads the budget it declares).
    fn for_study(params: Self::Params, spec: &StudySpec) -> Result<Self, ConfigError> {
        Self::new(params, &spec.space)
    }
}

/// The designer `D` for `spec`, its `algorithmConfig` parsed and checked.
pub(crate) fn build<D: FromConfig>(spec: &StudySpec) -> Result<Box<dyn Designer>, ConfigError> {
    Ok(Box::new(D::for_study(D::parse(&spec.algorithm_config)?, spec)?))
}

/// The trials the study says it will run: the smaller of its `studyStoppingConfig.maxNumTrials`
/// (where it stops) and its expected number of trials (where it does not), if it declares either.
pub(crate) fn declared_budget(spec: &StudySpec) -> Option<usize> {
    let max = spec.study_stopping.as_ref().and_then(|s| s.max_num_trials).and_then(|n| usize::try_from(n).ok());
    let expected = spec.expected_trials.and_then(|n| usize::try_from(n).ok());
    [max, expected].into_iter().flatten().filter(|&n| n > 0).min()
}

/// A default initial design of `design` trials within a declared `budget`: at most a quarter of
/// it (as SMAC3's initial designs are, at most `max_ratio` = ¼ of the trials), never below
/// `floor`. A study that will stop after 60 trials in 60 dimensions models from its 16th, not
/// its 31st (docs/journal/benchmarks.md, "A design within the declared budget").
pub(crate) fn within_budget(design: usize, budget: Option<usize>, floor: usize) -> usize {
    budget.map_or(design, |b| design.min(b.div_ceil(4).max(floor)))
}

/// `value` must lie in `lo..=hi`, or `algorithmConfig.{field}` is wrong.
pub(crate) fn check_range<T: PartialOrd + std::fmt::Display>(field: &str, value: T, lo: T, hi: T) -> Result<(), ConfigError> {
    if lo <= value && value <= hi {
        Ok(())
    } else {
        Err(ConfigError::Invalid { field: field.into(), reason: format!("{value} is outside {lo} to {hi}") })
    }
}

/// A constant β for UCB must be a positive number.
pub(crate) fn check_beta(field: &str, beta: Option<f64>) -> Result<(), ConfigError> {
    match beta {
        Some(b) if !(b > 0.0 && b.is_finite()) => {
            Err(ConfigError::Invalid { field: field.into(), reason: format!("{b} must be a positive number") })
        }
        _ => Ok(()),
    }
}

/// The designers that model only spaces without conditional parameters refuse the others,
/// naming the one that models them.
pub(crate) fn refuse_conditional(space: &SearchSpace, algorithm: &str, verb: &str) -> Result<(), ConfigError> {
    if space.params().iter().any(|p| !p.children.is_empty()) {
        return Err(ConfigError::Invalid {
            field: String::new(),
            reason: format!("{algorithm} {verb} spaces without conditional parameters; use ADD_TREE (or AUTO) for a conditional space"),
        });
    }
    Ok(())
}

/// The `parse` of a designer that takes no settings: absent or `{}`.
pub(crate) fn no_config(config: &serde_json::Value) -> Result<(), ConfigError> {
    match config {
        serde_json::Value::Null => Ok(()),
        serde_json::Value::Object(map) if map.is_empty() => Ok(()),
        _ => Err(ConfigError::Invalid { field: String::new(), reason: "this algorithm takes no settings".into() }),
    }
}

fn parse_params<P: DeserializeOwned + Default>(config: &serde_json::Value) -> Result<P, ConfigError> {
    if config.is_null() {
        return Ok(P::default());
    }
    serde_json::from_value(config.clone()).map_err(|e| ConfigError::Invalid { field: String::new(), reason: e.to_string() })
}
