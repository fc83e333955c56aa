//! `BRANCHING_NESTED`: Zhang, Hung, Lin & Liu's unified GP for branching and nested parameters (Zhang, Hung,
//! Lin & Liu) with EI.
//!
//! - **Space**: shared quantitative parameters `w` (the unconditional numeric ones), branching
//!   parameters `z` (the unconditional CATEGORICAL ones; those without children are branching
//!   variables without nested variables, i.e. the exchangeable kernel), and nested parameters
//!   `v` (the children of a branching parameter, of any type, with no children of their own).
//!   Anything deeper, or children under an INTEGER or DISCRETE parent, is refused with a 400
//!   naming ADD_TREE, which models any tree.
//! - **Kernel**: [`BranchingNested`] — ARD Matérn-5/2 on `w` with length scales capped at 0.5
//!   on the unit cube (in our reference runs without the cap only 70 % of runs found
//!   the best cell, with it 90 %), `e^{−γ_k}` across levels, exponential `|Δ|` or indicator
//!   kernels on nested variables within a level, validity by reparametrisation.
//! - **Fit and acquisition**: GP_BANDIT's machinery with this kernel. Departures from the paper's
//!   universal-kriging MLE: outputs are standardised (the constant mean is the sample mean, not
//!   the GLS β̂) and the process variance is a hyperparameter fitted with the others by MAP
//!   rather than profiled; a nugget (the fitted noise) is added, which the paper's noisy test
//!   needs and does not specify. EI uses the largest posterior mean at the data as its
//!   incumbent (a "plug-in y_max", better under noise than the largest noisy
//!   observation).
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `initialDesignSize` | 10 (Zhang, Hung, Lin & Liu) | quasi-random trials first | 1 – 1,000 |
//! | `numCandidates` | 512 | candidates per suggestion | 16 – 100,000 |
//! | `numRestarts` | 2 | random restarts of the hyperparameter fit | 0 – 50 |
//! | `outputWarping` | `NONE` | `NONE`, `YEO_JOHNSON` or `HALF_RANK`: the monotone warp of the objective the GP is fitted to (`gp::output_warp`) | — |

use rand::Rng;
use serde::Deserialize;

use super::config::FromConfig;
use super::gp::{KernelKind, OutputWarping};
use super::gp_bandit::{AcquisitionKind, Variant};
use super::{ConfigError, Designer, FitError, Fitted, GpBandit, GpBanditParams, ModelState, Problem};
use crate::kernel::{self, Branch, Kernel, LengthScalePrior, Nested, matern52};
use crate::space::features::Features;
use crate::space::{Domain, SearchSpace};
use crate::trial::{Observation, ParamValue};

/// The cap on the shared variables' length scales (unit cube).
const MAX_SHARED_LENGTH_SCALE: f64 = 0.5;

/// `algorithmConfig` of `BRANCHING_NESTED` (the table above).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct BranchingNestedParams {
    /// Quasi-random trials before the GP.
    pub initial_design_size: usize,
    /// Candidates per suggestion.
    pub num_candidates: usize,
    /// Random restarts of the hyperparameter fit.
    pub num_restarts: usize,
    /// The warp of the objective the GP is fitted to.
    pub output_warping: OutputWarping,
}

impl Default for BranchingNestedParams {
    fn default() -> Self {
        BranchingNestedParams { initial_design_size: 10, num_candidates: 512, num_restarts: 2, output_warping: OutputWarping::None }
    }
}

/// The designer: GP_BANDIT with Zhang, Hung, Lin & Liu's kernel.
pub struct BranchingNested(GpBandit);

impl FromConfig for BranchingNested {
    type Params = BranchingNestedParams;

    /// The designer for `space`, or why the space is not one Zhang, Hung, Lin & Liu models.
    fn new(params: BranchingNestedParams, space: &SearchSpace) -> Result<BranchingNested, ConfigError> {
        check_space(space)?;
        let bandit = GpBanditParams {
            acquisition: AcquisitionKind::Ei,
            ucb_beta: None,
            exploration_beta: None,
            initial_design_size: Some(params.initial_design_size),
            kernel: KernelKind::Matern52,
            length_scale_prior: LengthScalePrior::Weak,
            num_candidates: params.num_candidates,
            num_restarts: params.num_restarts,
            hyperparameter_samples: 0,
            input_warping: false,
            trust_region: false,
            output_warping: params.output_warping,
        };
        let variant = Variant { name: "branching-and-nested GP", kernel, plug_in_best: true };
        Ok(BranchingNested(GpBandit::with_variant(bandit, variant)?))
    }
}

impl Designer for BranchingNested {
    fn work(&self, space: &SearchSpace) -> super::Work {
        self.0.work(space)
    }

    fn takes_priors(&self) -> bool {
        self.0.takes_priors()
    }

    fn fit(&self, problem: &Problem, history: &[Observation], warm: Option<&ModelState>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.0.fit(problem, history, warm, rng)
    }

    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.0.restore(problem, history, state, rng)
    }
}

/// Branching parameters only at the top, CATEGORICAL, with children that have none.
fn check_space(space: &SearchSpace) -> Result<(), ConfigError> {
    let refuse = |reason: String| {
        Err(ConfigError::Invalid {
            field: String::new(),
            reason: format!(
                "BRANCHING_NESTED models branching CATEGORICAL parameters at the top of the space whose children have no \
                 children (Zhang, Hung, Lin & Liu); {reason}. ADD_TREE models any conditional tree"
            ),
        })
    };
    for p in space.roots() {
        if p.children.is_empty() {
            continue;
        }
        if !matches!(p.domain, Domain::Categorical { .. }) {
            return refuse(format!("{} is a {} parent", p.id, p.domain.type_name()));
        }
        if let Some(c) = p.children.iter().find(|c| !c.spec.children.is_empty()) {
            return refuse(format!("{} under {} has children of its own", c.spec.id, p.id));
        }
    }
    Ok(())
}

/// Zhang, Hung, Lin & Liu's kernel over [`Features`] of a space [`check_space`] accepted.
fn kernel(features: &Features, _params: &GpBanditParams) -> Box<dyn Kernel> {
    let space = features.space();
    let params = space.params();
    let index = |id: &str| params.iter().position(|p| p.id == id).expect("a parameter of the space");
    let mut shared = Vec::new();
    let mut branches = Vec::new();
    for p in space.roots() {
        match &p.domain {
            Domain::Categorical { values } => {
                let levels = values
                    .iter()
                    .map(|value| {
                        let here = ParamValue::categorical(value);
                        let nested = p
                            .children
                            .iter()
                            .filter(|c| c.parent_values.matches(&here))
                            .map(|c| Nested {
                                name: c.spec.id.clone(),
                                dim: index(&c.spec.id),
                                values: match &c.spec.domain {
                                    Domain::Categorical { values } => Some(values.len()),
                                    _ => None,
                                },
                            })
                            .collect();
                        (value.clone(), nested)
                    })
                    .collect();
                branches.push(Branch { name: p.id.clone(), dim: index(&p.id), levels });
            }
            _ => shared.push(index(&p.id)),
        }
    }
    let shared: Option<Box<dyn Kernel>> =
        (!shared.is_empty()).then(|| Box::new(matern52(shared, 0.2, (0.01, MAX_SHARED_LENGTH_SCALE))) as Box<dyn Kernel>);
    Box::new(kernel::BranchingNested::new(shared, branches))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::designer_for;
    use crate::space::{Conditional, ParamSpec, ParentValues, Scale};
    use crate::study::{Goal, StudySpec};
    use crate::trial::{Assignment, Outcome};

    #[test]
    fn the_model_shows_the_learned_gamma_and_phi() {
        let double = crate::designer::testing::fixtures::unit_double;
        let child = |value: &str, id: &str| Conditional { parent_values: ParentValues::Categorical(vec![value.into()]), spec: double(id) };
        let z = ParamSpec {
            id: "z".into(),
            domain: Domain::Categorical { values: vec!["a".into(), "b".into()] },
            scale: Scale::Linear,
            default: None,
            children: vec![child("a", "va"), child("b", "vb")],
        };
        let spec = StudySpec::new("f", Goal::Maximize, SearchSpace::new(vec![double("w"), z]).unwrap(), "BRANCHING_NESTED");
        let mut rng = StdRng::seed_from_u64(1);
        let history: Vec<Observation> = (0..16)
            .map(|i| {
                let a: Assignment =
                    spec.space.decode(&[(i as f64 + 0.5) / 16.0, (i % 2) as f64 * 0.5 + 0.25, ((i * 7) % 16) as f64 / 16.0, 0.3]);
                let num = |id: &str| if let Some(ParamValue::Float(x)) = a.get(id) { *x } else { 0.0 };
                let y = -(num("w") - 0.3).powi(2) - num("va") - (num("vb") - 0.5).abs();
                Observation { objective_sd: None, assignment: a, outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), y)])) }
            })
            .collect();
        let designer = designer_for(&spec).unwrap();
        let fitted = designer.fit(&Problem { spec, seed: 0, priors: Vec::new() }, &history, None, &mut rng).unwrap();
        let d = fitted.model.describe();
        assert_eq!(d["model"], "branching-and-nested GP", "{d}");
        assert!(d["structure"]["gamma"]["z"].as_f64().is_some_and(|g| g > 0.0), "{d}");
        assert!(d["structure"]["phi"]["z=a.va"].as_f64().is_some_and(|p| p > 0.0), "{d}");
        assert!(d["structure"]["phi"]["z=b.vb"].is_number(), "{d}");
    }
}
