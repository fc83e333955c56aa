//! The designers by name: the one list of the algorithms a study may use ([`ALGORITHMS`]), and
//! how the designer a study names is built ([`designer_for`]) with the wrappers every learning
//! designer gets — several metrics, and a subset of a large study's observations. The wire's
//! description of `algorithm` is checked against [`ALGORITHMS`] by the server's tests.
//!
//! Must not: hold an algorithm; each lives in a file of its own beside this one.

use super::config::build;
use super::{
    AddGpUcb, AddTree, Auto, BranchingNested, ConfigError, Designer, GpBandit, GridSearch, OverlapAddGp, QuasiRandomSearch, RandomSearch,
    Rembo, several_metrics, subset,
};
use crate::study::StudySpec;

/// How a designer is built from a study.
type Build = fn(&StudySpec) -> Result<Box<dyn Designer>, ConfigError>;

/// Every algorithm name and its designer, in the order errors list them. `AUTO` (and Vertex's
/// `ALGORITHM_UNSPECIFIED`, its synonym) chooses from the study's data: it fits `GP_BANDIT` under
/// two length-scale priors, `ADD_GP_UCB` with learned groups and, on a conditional space,
/// `ADD_TREE`, and proposes from the one that predicts the trials best (see [`Auto`]).
const REGISTRY: [(&str, Build); 11] = [
    ("AUTO", build::<Auto>),
    ("ALGORITHM_UNSPECIFIED", build::<Auto>),
    ("RANDOM_SEARCH", build::<RandomSearch>),
    ("QUASI_RANDOM_SEARCH", build::<QuasiRandomSearch>),
    ("GRID_SEARCH", build::<GridSearch>),
    ("GP_BANDIT", build::<GpBandit>),
    ("ADD_TREE", build::<AddTree>),
    ("BRANCHING_NESTED", build::<BranchingNested>),
    ("ADD_GP_UCB", build::<AddGpUcb>),
    ("OVERLAP_ADD_GP", build::<OverlapAddGp>),
    ("REMBO", build::<Rembo>),
];

/// The algorithm names a study may use, in [`REGISTRY`]'s order.
pub const ALGORITHMS: &[&str] = &{
    let mut names = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        names[i] = REGISTRY[i].0;
        i += 1;
    }
    names
};

/// The designer for `spec.algorithm`, its `algorithmConfig` checked (each designer's
/// [`config::FromConfig`]); one that learns is fitted on a subset of a large study's
/// observations ([`subset`]).
pub fn designer_for(spec: &StudySpec) -> Result<Box<dyn Designer>, ConfigError> {
    let designer = designer_fitted_whole(spec)?;
    Ok(if designer.learns() { subset::Subset::wrap(designer) } else { designer })
}

/// [`designer_for`] without the subset: fitted on every observation whatever the study's size
/// (what `designer_for` gives up to [`subset::EXACT_UP_TO`]; for measuring what the subset
/// costs).
pub fn designer_fitted_whole(spec: &StudySpec) -> Result<Box<dyn Designer>, ConfigError> {
    let (spec, infeasible) = several_metrics::take_infeasible_trials(spec)?;
    let designer = designer_of(&spec)?;
    if infeasible.is_some() && !designer.learns() {
        return Err(ConfigError::Invalid {
            field: several_metrics::INFEASIBLE_TRIALS_KEY.into(),
            reason: format!("{} learns nothing from trials; the setting is for the designers that model them", spec.algorithm),
        });
    }
    // Several metrics (or infeasible trials modelled by a classifier): one model per metric of
    // the study's own designer, and an acquisition over them. Designers that learn nothing
    // propose the same whatever the metrics.
    let classify = infeasible == Some(several_metrics::InfeasibleTrials::Classifier);
    if (spec.metrics.len() > 1 || classify) && designer.learns() {
        let single = several_metrics::single_objective_settings(&spec);
        let designer = if single.is_empty() { designer } else { designer_of(&with_settings(&spec, &single))? };
        return Ok(several_metrics::SeveralMetrics::wrap(designer, classify));
    }
    Ok(designer)
}

/// `spec` with `settings` added to its `algorithmConfig`.
fn with_settings(spec: &StudySpec, settings: &[(&str, serde_json::Value)]) -> StudySpec {
    let mut config = spec.algorithm_config.as_object().cloned().unwrap_or_default();
    for (key, value) in settings {
        config.insert((*key).to_owned(), value.clone());
    }
    StudySpec { algorithm_config: serde_json::Value::Object(config), ..spec.clone() }
}

/// Checks that `name` is one of [`ALGORITHMS`] (what can be checked of a study's algorithm
/// before its space has a parameter).
pub fn check_name(name: &str) -> Result<(), ConfigError> {
    if ALGORITHMS.contains(&name) {
        Ok(())
    } else {
        Err(ConfigError::UnknownAlgorithm { name: name.to_owned(), known: ALGORITHMS.iter().map(|s| (*s).to_owned()).collect() })
    }
}

/// The designer `spec.algorithm` names, before any wrapper.
fn designer_of(spec: &StudySpec) -> Result<Box<dyn Designer>, ConfigError> {
    match REGISTRY.iter().find(|(name, _)| *name == spec.algorithm) {
        Some((_, build)) => build(spec),
        None => {
            Err(ConfigError::UnknownAlgorithm { name: spec.algorithm.clone(), known: ALGORITHMS.iter().map(|s| (*s).to_owned()).collect() })
        }
    }
}
