//! Designers: the algorithms that propose new trials, behind one trait pair.
//!
//! A [`Designer`] does the expensive part — learning from a study's completed trials — and
//! returns a [`Model`] that does the cheap part, proposing assignments with the in-flight trials
//! as context (`model.rs`: a required core and capabilities only some models have). The registry ([`designer_for`]) maps a study's `algorithm` name to a designer and
//! checks its `algorithmConfig`; [`ALGORITHMS`] lists the names it knows, and an unknown name is a
//! [`ConfigError::UnknownAlgorithm`] naming them. Each algorithm lives in its own file.

mod add_gp_ucb;
mod add_tree;
mod auto;
mod branching_nested;
pub mod calibration;
mod config;
pub mod context;
mod error;
pub mod gp;
mod gp_bandit;
mod grid;
mod model;
mod overlap_add_gp;
mod prediction;
mod quasi_random;
mod random;
mod registry;
mod rembo;
mod several_metrics;
pub mod subset;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod unlearned;
mod wrapper;

use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::limits::{Limit, Limits};
use crate::space::SearchSpace;
use crate::study::StudySpec;
use crate::trial::Observation;

pub use add_gp_ucb::{AddGpUcb, AddGpUcbParams};
pub use add_tree::{AddTree, AddTreeParams};
pub use auto::{Auto, AutoParams, Candidate};
pub use branching_nested::{BranchingNested, BranchingNestedParams};
pub use error::{ConfigError, FitError};
pub use gp::Predictive;
pub use gp::PriorMean;
pub use gp::priors::PriorStudy;
pub use gp_bandit::{GpBandit, GpBanditParams};
pub use grid::{GridParams, GridSearch};
pub use model::{Conditioning, ContextSearch, Embedded, Embeddings, Model, Positional, Predictor};
pub use overlap_add_gp::{OverlapAddGp, OverlapAddGpParams};
pub use prediction::Prediction;
pub(crate) use prediction::Z_95;
pub use quasi_random::QuasiRandomSearch;
pub use random::RandomSearch;
pub use registry::{ALGORITHMS, check_name, designer_fitted_whole, designer_for};
pub use rembo::{Rembo, RemboKernel, RemboParams};

/// What a designer optimises: the study's configuration and a seed fixed for the study.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The study's configuration.
    pub spec: StudySpec,
    /// A seed constant over the study's life (for scrambles and anything that must not change
    /// from one suggestion to the next).
    pub seed: u64,
    /// The prior studies whose trials inform the model (transfer learning), the base of the
    /// stack first; empty for a study without. Only designers whose
    /// [`Designer::takes_priors`] read them.
    pub priors: Vec<PriorStudy>,
}

/// What a designer learned that is worth keeping across restarts: opaque JSON that the store
/// keeps beside the study and hands back as `warm` to the next fit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ModelState(pub serde_json::Value);

/// A fitted model and the state to store.
pub struct Fitted {
    /// Proposes suggestions.
    pub model: Arc<dyn Model>,
    /// Kept by the store for the next fit.
    pub state: ModelState,
}

/// The expensive half of an algorithm: learning from completed trials.
pub trait Designer: Send + Sync {
    /// Learns from `history` (the study's completed trials). `warm` is the last stored state.
    fn fit(&self, problem: &Problem, history: &[Observation], warm: Option<&ModelState>, rng: &mut dyn Rng) -> Result<Fitted, FitError>;

    /// The model a finished fit's `state` describes, rebuilt on `history` without learning
    /// anything new (no search of hyperparameters or structure where the designer can avoid
    /// one): how a replica takes up the fit another replica stored. By default, a fit
    /// warm-started from `state`.
    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit(problem, history, Some(state), rng)
    }

    /// Whether fitting on more data changes what the model proposes beyond the trials it is
    /// given as pending: false for the designers that learn nothing (random, quasi-random,
    /// grid), which a service need not refit when trials complete.
    fn learns(&self) -> bool {
        true
    }

    /// Whether the model stands on the prior studies of [`Problem::priors`] (see
    /// [`gp::priors`]); false for a designer that would ignore them, which a service must not
    /// give any.
    fn takes_priors(&self) -> bool {
        false
    }

    /// The search work its settings ask for on `space` (for the service's limits): candidates
    /// scored per suggestion and likelihood evaluations per structure search. Zero for what the
    /// designer does not do.
    fn work(&self, _space: &SearchSpace) -> Work {
        Work::default()
    }
}

/// The search work a designer's settings ask for, as [`Designer::work`] reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Candidates scored per suggestion (`numCandidates`, per group for additive models); each
    /// spans the space's parameters.
    pub candidates: usize,
    /// Marginal-likelihood evaluations of one structure search.
    pub structure_evaluations: usize,
}

/// Checks that `designer`'s settings stay within `limits` on `space`: candidates × parameters
/// within [`Limit::CandidateCoordinates`], a structure search within
/// [`Limit::StructureEvaluations`].
pub fn check_limits(designer: &dyn Designer, space: &SearchSpace, limits: &Limits) -> Result<(), ConfigError> {
    let work = designer.work(space);
    let coordinates = work.candidates.saturating_mul(space.n_params());
    if let Err(over) = limits.check(Limit::CandidateCoordinates, coordinates) {
        return Err(ConfigError::OverLimit {
            field: "numCandidates".into(),
            reason: format!("{} candidates × {} parameters = {over}", work.candidates, space.n_params()),
            limit: Limit::CandidateCoordinates,
        });
    }
    if let Err(over) = limits.check(Limit::StructureEvaluations, work.structure_evaluations) {
        return Err(ConfigError::OverLimit {
            field: String::new(),
            reason: format!("a structure search of {over} (gibbsBudget, or numPartitions + swapsPerParameter × parameters)"),
            limit: Limit::StructureEvaluations,
        });
    }
    Ok(())
}

/// How a model's own predictions of its trials are scored ([`Predictor::self_prediction`]): how
/// `AUTO` compares its candidate models.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Criterion {
    /// Each of the better half of the trials predicted from all the others (leave-one-out).
    Loo,
    /// Each of the later half of the trials predicted from those before it: the conditional
    /// marginal likelihood (Lotfi et al. 2022), how well the model would have predicted where
    /// the search went. The default: over 13 problems (docs/journal/benchmarks.md, "AUTO's criterion")
    /// it changed model less often than `LOO` (43 changes against 70), was ahead on 3 —
    /// vgg16_tree by 45× (2.2e-4 against 1.0e-2 after 100), where `LOO` left `ADD_TREE` for the
    /// flat GP in 9 of 10 seeds — behind on 5 by 1.2–3×, and equal on 5.
    #[default]
    Sequential,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random and quasi-random search answer by position in a space with an always-active real:
    /// feasible, the same each time, the quasi-random one the point its sequence gives there; in
    /// a space of finitely many points they do not (they must avoid repeating a trial).
    #[test]
    fn position_only_proposals() {
        use rand::SeedableRng;

        use crate::space::{Domain, ParamSpec, Scale, SearchSpace};
        let param = |id: &str, domain: Domain| ParamSpec { id: id.into(), domain, scale: Scale::Linear, default: None, children: vec![] };
        let continuous = SearchSpace::new(vec![
            param("x", Domain::Double { min: 0.0, max: 1.0 }),
            param("c", Domain::Categorical { values: vec!["a".into(), "b".into()] }),
        ])
        .unwrap();
        let finite = SearchSpace::new(vec![param("c", Domain::Categorical { values: vec!["a".into(), "b".into()] })]).unwrap();
        for algorithm in ["RANDOM_SEARCH", "QUASI_RANDOM_SEARCH"] {
            let mut spec = testing_spec();
            spec.algorithm = algorithm.into();
            spec.space = continuous.clone();
            let designer = designer_for(&spec).unwrap();
            assert!(!designer.learns());
            let problem = Problem { spec: spec.clone(), seed: 7, priors: Vec::new() };
            let mut rng = rand::rngs::StdRng::seed_from_u64(0);
            let model = designer.fit(&problem, &[], None, &mut rng).unwrap().model;
            let points = model.positional().unwrap().suggest_indexed(5, 3).expect("answers by position");
            assert_eq!(points.len(), 3);
            for p in &points {
                continuous.check(p).unwrap();
            }
            assert_eq!(model.positional().unwrap().suggest_indexed(5, 3).unwrap(), points, "{algorithm}: deterministic");
            assert_eq!(model.positional().unwrap().suggest_indexed(6, 1).unwrap()[0], points[1], "{algorithm}: by position alone");
            assert_ne!(points[0], points[1]);
            if algorithm == "QUASI_RANDOM_SEARCH" {
                let earlier = model.positional().unwrap().suggest_indexed(0, 5).unwrap();
                assert_eq!(model.suggest(&earlier, 1, &mut rng).unwrap()[0], points[0], "the sequence's point 5");
            }
            spec.space = finite.clone();
            let model =
                designer_for(&spec).unwrap().fit(&Problem { spec, seed: 7, priors: Vec::new() }, &[], None, &mut rng).unwrap().model;
            assert!(model.positional().unwrap().suggest_indexed(0, 1).is_none(), "{algorithm}: a finite space needs the other trials");
        }
        let mut gp = testing_spec();
        gp.algorithm = "GP_BANDIT".into();
        assert!(designer_for(&gp).unwrap().learns(), "GP designers learn");
    }

    #[test]
    fn random_search_conforms() {
        testing::conformance("RANDOM_SEARCH");
    }

    #[test]
    fn quasi_random_search_conforms() {
        testing::conformance("QUASI_RANDOM_SEARCH");
    }

    #[test]
    fn grid_search_conforms() {
        testing::conformance("GRID_SEARCH");
    }

    #[test]
    fn gp_bandit_conforms() {
        testing::conformance("GP_BANDIT");
    }

    #[test]
    fn add_tree_conforms() {
        testing::conformance("ADD_TREE");
    }

    #[test]
    fn branching_nested_conforms() {
        testing::conformance("BRANCHING_NESTED");
    }

    #[test]
    fn add_gp_ucb_conforms() {
        testing::conformance("ADD_GP_UCB");
    }

    #[test]
    fn overlap_add_gp_conforms() {
        testing::conformance("OVERLAP_ADD_GP");
    }

    #[test]
    fn rembo_conforms() {
        testing::conformance("REMBO");
    }

    #[test]
    fn branching_nested_refuses_deeper_trees_naming_add_tree() {
        let mut spec = testing_spec();
        spec.algorithm = "BRANCHING_NESTED".into();
        spec.space = testing::fixtures::conditional_three_levels();
        let text = designer_for(&spec).err().expect("refused").to_string();
        assert!(text.contains("ADD_TREE") && text.contains("children of its own"), "{text}");
    }

    #[test]
    fn unknown_algorithm_lists_the_known_ones() {
        let mut spec = testing_spec();
        spec.algorithm = "SIMULATED_ANNEALING".into();
        let err = designer_for(&spec).err().expect("unknown");
        let text = err.to_string();
        assert!(text.contains("SIMULATED_ANNEALING") && text.contains("GRID_SEARCH") && text.contains("RANDOM_SEARCH"), "{text}");
    }

    #[test]
    fn grid_config_is_checked() {
        let mut spec = testing_spec();
        spec.algorithm = "GRID_SEARCH".into();
        spec.algorithm_config = serde_json::json!({"gridResolution": 0});
        assert!(matches!(designer_for(&spec), Err(ConfigError::Invalid { .. })));
        spec.algorithm_config = serde_json::json!({"gridResolutoin": 5});
        assert!(matches!(designer_for(&spec), Err(ConfigError::Invalid { .. })));
        spec.algorithm_config = serde_json::json!({"gridResolution": 5});
        assert!(designer_for(&spec).is_ok());
    }

    /// Settings that ask a suggestion or a fit for more work than the limits allow are refused,
    /// naming the limit; the defaults of every designer fit the default limits at the largest
    /// space they allow.
    #[test]
    fn work_is_checked_against_the_limits() {
        let limits = Limits::default();
        let space = testing::fixtures::unit_cube(limits.parameters);
        let mut spec = testing_spec();
        spec.space = space.clone();
        for algorithm in ["GP_BANDIT", "ADD_TREE", "ADD_GP_UCB", "OVERLAP_ADD_GP", "REMBO", "RANDOM_SEARCH", "GRID_SEARCH"] {
            spec.algorithm = algorithm.into();
            let designer = designer_for(&spec).unwrap();
            check_limits(designer.as_ref(), &space, &limits).unwrap_or_else(|e| panic!("{algorithm}'s defaults: {e}"));
        }
        spec.algorithm = "GP_BANDIT".into();
        spec.algorithm_config = serde_json::json!({"numCandidates": 100_000});
        let e = check_limits(designer_for(&spec).unwrap().as_ref(), &space, &limits).unwrap_err();
        assert_eq!(e.limit(), Some(Limit::CandidateCoordinates), "{e}");
        assert!(e.to_string().contains("numCandidates"), "{e}");
        spec.algorithm = "OVERLAP_ADD_GP".into();
        spec.algorithm_config = serde_json::json!({"gibbsBudget": 100_000});
        let e = check_limits(designer_for(&spec).unwrap().as_ref(), &space, &limits).unwrap_err();
        assert_eq!(e.limit(), Some(Limit::StructureEvaluations), "{e}");
    }

    #[test]
    fn auto_compares_add_tree_on_a_conditional_space_and_the_additive_model_on_a_wide_one() {
        // Told apart by the candidates each accepts.
        let mut spec = testing_spec();
        spec.algorithm = "AUTO".into();
        spec.algorithm_config = serde_json::json!({"models": ["ADD_TREE", "GP_BANDIT"]});
        assert!(spec.space.params().iter().any(|p| !p.children.is_empty()), "the fixture is conditional");
        assert!(designer_for(&spec).is_ok());
        spec.algorithm_config = serde_json::json!({"models": ["ADD_GP_UCB"]});
        assert!(designer_for(&spec).is_err(), "no additive model of a conditional space");
        spec.space = testing::fixtures::unit_cube(8);
        assert!(designer_for(&spec).is_ok());
        spec.algorithm_config = serde_json::json!({"models": ["ADD_TREE"]});
        assert!(designer_for(&spec).is_err(), "no tree model of a flat space");
    }

    fn testing_spec() -> StudySpec {
        StudySpec::new("m", crate::study::Goal::Maximize, testing::fixtures::optimizer_tree(), "RANDOM_SEARCH")
    }
}
