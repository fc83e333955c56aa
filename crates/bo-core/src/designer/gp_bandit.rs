//! `GP_BANDIT`: GP-UCB (Srinivas et al. 2010), EI (the default) or PI over the whole search
//! space.
//!
//! - **Design**: the first `initialDesignSize` trials are quasi-random (this crate's
//!   `QUASI_RANDOM_SEARCH`, so they respect the conditional tree).
//! - **Model**: one exact GP on [`Features`]: an ARD Matérn-5/2 (or squared-exponential) kernel
//!   over the numeric coordinates, times an exchangeable categorical kernel when there are
//!   categorical parameters; outputs standardised; noise fitted within the bounds of the study's
//!   `observationNoise`; hyperparameters by MAP with multi-start L-BFGS, warm-started from the
//!   stored state of the last fit. Conditional spaces are flattened (inactive parameters at a
//!   fixed value, see `space::features`) until the tree kernels arrive.
//! - **Infeasible trials**: a penalty — they enter the GP at the worst feasible value observed.
//!   One model, no classifier to fit, and it steers the acquisition away from the region; a
//!   feasibility model would need a second GP and more data than these studies usually have.
//! - **Acquisition**: log-EI over the best observed value by default; UCB with
//!   `β_t = 0.2 · d · ln(2t)` (Kandasamy et al. 2015 §5, the practical schedule) unless `ucbBeta` fixes it;
//!   or log-PI. EI is the default because bo-bench measured it better on 5 of 7 problems
//!   (UCB over-explores boundaries as d grows; docs/journal/benchmarks.md). Maximised by
//!   `optimize::mixed`. The objective is the study's first metric; minimisation is handled by
//!   negating it.
//! - **Pending trials** are fantasies: each in-flight trial is added to the GP at its posterior
//!   mean as a noise-free observation, which collapses the variance there.
//! - **Batches** (`suggestionCount > 1`) add each chosen member as a fantasy too. Under UCB the
//!   members after the first follow GP-UCB-PE (Contal, Buffoni, Robicquet & Vayatis 2013): they
//!   maximise the fantasised posterior σ within the relevant region {x : UCB(x) ≥ max LCB},
//!   because once fantasies pin the variance, UCB alone just follows the mean to one spot (seen
//!   in this file's batch test). EI and PI keep the kriging believer (Ginsbourger et al. 2010,
//!   §3.1): a fantasy's believed value counts as observed, so it raises the incumbent when it is
//!   above the best measured one — otherwise the points beside a pending trial believed best
//!   keep an expected improvement of their mean's excess, and the next worker is sent next door
//!   (docs/journal/benchmarks.md, "Parallel workers").
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `acquisition` | `EI` | `EI`, `UCB` or `PI` | — |
//! | `ucbBeta` | schedule | a constant β for UCB | > 0 |
//! | `explorationBeta` | none | UCB with this β instead of `acquisition` for the suggestions before the first stall (max(4, d) trials in a row without improvement, as `trustRegion` counts them), `acquisition` from then on: a global phase that explores, then one that exploits (docs/journal/benchmarks.md, "An exploring start") | > 0 |
//! | `initialDesignSize` | 2d + 2 within [10, 30], and at most a quarter of the study's `maxNumTrials` (never below 10) when it declares one | quasi-random trials before the GP | 1 – 1,000 |
//! | `kernel` | `MATERN52` | `MATERN52` or `SQUARED_EXP` | — |
//! | `lengthScalePrior` | `WEAK` | `WEAK` (mode 1), `DIMENSION_SCALED` (median grows as √D) or `SAAS` (sparse, τ integrated out; for D ≥ 20, best with `hyperparameterSamples`) | — |
//! | `numCandidates` | 256 | Sobol candidates scored per suggestion | 16 – 100,000 |
//! | `numRestarts` | 2 | random restarts of the hyperparameter fit | 0 – 50 |
//! | `hyperparameterSamples` | 0 | θ drawn from its posterior (slice sampling, `gp::sample`) beside the fitted θ; the model predicts with the moment-matched mixture of all of them, wider where they disagree — better calibrated on few trials, at one more GP per sample (docs/journal/benchmarks.md, "Hyperparameter samples") | 0 – 32 |
//! | `outputWarping` | `YEO_JOHNSON` | `NONE`, `YEO_JOHNSON` or `HALF_RANK`: the monotone warp of the objective the GP is fitted to (`gp::output_warp`); none on prior studies | — |
//! | `trustRegion` | `true` | a local phase from the first stall on (max(4, d) trials in a row without improvement; the whole space before it): the acquisition searched in a box around the best trial that grows after successes and shrinks after failures, restarting from the whole space when it collapses (`gp::trust_region`, TuRBO-1); the whole space is searched too when every point in the box has been tried (a discrete space) | — |
//! | `inputWarping` | `false` | warp each numeric coordinate by a learned Kumaraswamy CDF before the kernel (`kernel::InputWarped`) | — |
//!
//! The defaults of `outputWarping`, `trustRegion` and `inputWarping` were chosen with `bo-bench
//! suite` and held on problems nobody tuned for (docs/journal/benchmarks.md, "Robust by default"
//! and the held-out suite's passes).

use rand::Rng;
use serde::Deserialize;

use super::config::{FromConfig, check_beta, check_range, declared_budget, within_budget};
use super::gp::schedule::fit_from_start;
use super::gp::search::{ACQUISITION_ITERATIONS, DEFAULT_CANDIDATES, maximize_acquisition};
use super::gp::{
    Effort, GpModel, KernelKind, MAX_HYPERPARAMETER_SAMPLES, Member, OutputWarping, Posterior, Proposer, Start, Training, fit_gp,
    objective_values, priors, product_kernel, trust_region,
};
use super::{ConfigError, Designer, FitError, Fitted, Problem, QuasiRandomSearch};
use crate::acquisition::{Acquisition, BetaSchedule};
use crate::gp::Gp;
use crate::kernel::{Kernel, LengthScalePrior};
use crate::optimize::mixed::{MixedConfig, maximize};
use crate::space::SearchSpace;
use crate::space::features::Features;
use crate::study::ObservationNoise;
use crate::trial::{Assignment, Observation};

/// Which acquisition function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AcquisitionKind {
    /// Upper confidence bound.
    Ucb,
    /// Expected improvement (as log-EI): the default, measured better than UCB on 5 of 7
    /// bo-bench problems (docs/journal/benchmarks.md); UCB with β_t = 0.2·d·ln(2t) over-explores the
    /// boundary as d grows (worse than random search on Styblinski–Tang-8).
    #[default]
    Ei,
    /// Probability of improvement (as log-PI).
    Pi,
}

/// `algorithmConfig` of `GP_BANDIT` (the table above).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GpBanditParams {
    /// The acquisition function.
    pub acquisition: AcquisitionKind,
    /// A constant β for UCB instead of the schedule.
    pub ucb_beta: Option<f64>,
    /// UCB with this β before the first stall, `acquisition` after it.
    pub exploration_beta: Option<f64>,
    /// Quasi-random trials before the GP.
    pub initial_design_size: Option<usize>,
    /// The numeric kernel.
    pub kernel: KernelKind,
    /// The prior on its length scales.
    pub length_scale_prior: LengthScalePrior,
    /// Sobol candidates per suggestion.
    pub num_candidates: usize,
    /// Random restarts of the hyperparameter fit.
    pub num_restarts: usize,
    /// θ drawn from its posterior by slice sampling beside the best θ found, the model's
    /// predictions the moment-matched mixture of all of them (0: the best θ alone).
    pub hyperparameter_samples: usize,
    /// Whether numeric coordinates are warped by a learned Kumaraswamy CDF.
    pub input_warping: bool,
    /// Whether the acquisition is searched in a trust region around the best trial.
    pub trust_region: bool,
    /// The warp of the objective the GP is fitted to.
    pub output_warping: OutputWarping,
}

impl GpBanditParams {
    /// The effort of each fit of θ.
    pub(crate) fn effort(&self) -> Effort {
        Effort { restarts: self.num_restarts, samples: self.hyperparameter_samples }
    }
}

impl Default for GpBanditParams {
    fn default() -> Self {
        GpBanditParams {
            acquisition: AcquisitionKind::Ei,
            ucb_beta: None,
            exploration_beta: None,
            initial_design_size: None,
            kernel: KernelKind::Matern52,
            length_scale_prior: LengthScalePrior::Weak,
            num_candidates: DEFAULT_CANDIDATES,
            num_restarts: 2,
            hyperparameter_samples: 0,
            input_warping: false,
            trust_region: true,
            output_warping: OutputWarping::YeoJohnson,
        }
    }
}

impl GpBanditParams {
    /// Checks the ranges of the table.
    pub fn check(self) -> Result<GpBanditParams, ConfigError> {
        check_beta("ucbBeta", self.ucb_beta)?;
        check_beta("explorationBeta", self.exploration_beta)?;
        if let Some(n) = self.initial_design_size {
            check_range("initialDesignSize", n, 1, 1000)?;
        }
        check_range("numCandidates", self.num_candidates, 16, 100_000)?;
        check_range("numRestarts", self.num_restarts, 0, 50)?;
        check_range("hyperparameterSamples", self.hyperparameter_samples, 0, MAX_HYPERPARAMETER_SAMPLES)?;
        Ok(self)
    }
}

/// What tells apart the designers that are GP_BANDIT with another kernel (BRANCHING_NESTED).
#[derive(Clone, Copy)]
pub(super) struct Variant {
    /// The model's name in its description.
    pub name: &'static str,
    /// The kernel over [`Features`].
    pub kernel: fn(&Features, &GpBanditParams) -> Box<dyn Kernel>,
    /// EI's incumbent: the largest posterior mean at the data (for noisy objectives, as Zhang, Hung,
    /// Lin & Liu's reference runs did best with) instead of the largest observation.
    pub plug_in_best: bool,
}

const FLAT: Variant = Variant { name: "exact GP", kernel: kernel_for, plug_in_best: false };

/// The GP-bandit designer.
pub struct GpBandit {
    params: GpBanditParams,
    variant: Variant,
}

impl FromConfig for GpBandit {
    type Params = GpBanditParams;

    fn new(params: GpBanditParams, _space: &SearchSpace) -> Result<GpBandit, ConfigError> {
        Ok(GpBandit { params: params.check()?, variant: FLAT })
    }
}

impl GpBandit {
    /// GP_BANDIT with another kernel, its settings checked.
    pub(super) fn with_variant(params: GpBanditParams, variant: Variant) -> Result<GpBandit, ConfigError> {
        Ok(GpBandit { params: params.check()?, variant })
    }
}

/// GP_BANDIT's kernel: [`product_kernel`] under its settings.
pub(super) fn kernel_for(features: &Features, params: &GpBanditParams) -> Box<dyn Kernel> {
    product_kernel(features, params.kernel, params.length_scale_prior, params.input_warping)
}

impl Designer for GpBandit {
    fn work(&self, _space: &SearchSpace) -> super::Work {
        super::Work { candidates: self.params.num_candidates, structure_evaluations: 0 }
    }

    fn takes_priors(&self) -> bool {
        true
    }

    fit_from_start!();
}

impl GpBandit {
    /// The fit from `start`; restored, the GP at the stored θ, conditioned on `history`: no search.
    fn fit_from(&self, problem: &Problem, history: &[Observation], start: Start<'_>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let spec = &problem.spec;
        let features = Features::new(&spec.space);
        let encode = |a: &Assignment| features.encode(a);
        // Prior studies (transfer learning) stand in for most of the initial design.
        let stack = priors::fit_stack(spec, &problem.priors, &features, start, rng)?;
        let initial = match (&stack, self.params.initial_design_size) {
            (Some(_), None) => priors::INITIAL_DESIGN_WITH_PRIORS,
            _ => self.initial_design_size(features.dim(), declared_budget(spec)),
        };
        // The prior studies' GPs model the objective's own values: no warp on a stack.
        let warping = if stack.is_some() { OutputWarping::None } else { self.params.output_warping };
        let Some(Training { sign, worst, ranked, x, y, extra, warp }) = Training::new(spec, history, &encode, initial, warping) else {
            return QuasiRandomSearch.fit(problem, history, None, rng);
        };
        let kernel = (self.variant.kernel)(&features, &self.params);
        let (gp, state) = match &stack {
            None => fit_gp(kernel, x, &y, &extra, spec.observation_noise, self.params.effort(), start, rng)?,
            Some(stack) => {
                let n = x.len();
                let residuals = stack.residuals(&x, &y);
                let (gp, state) = fit_gp(kernel, x, &residuals, &extra, spec.observation_noise, self.params.effort(), start, rng)?;
                (gp.on_base(stack.gp.clone(), n), stack.keep_in(state))
            }
        };
        let t = ranked.len() + 1;
        let beta = self.params.ucb_beta.unwrap_or_else(|| BetaSchedule::Kandasamy.beta(features.dim(), t));
        // Noisy observations overstate the best one: under HIGH noise EI improves on the best
        // posterior mean instead.
        let plug_in_best = self.variant.plug_in_best || spec.observation_noise == ObservationNoise::High;
        let best = if plug_in_best {
            gp.predict(gp.x()).into_iter().map(|(m, _)| m).fold(f64::NEG_INFINITY, f64::max)
        } else {
            gp.y().iter().copied().fold(f64::NEG_INFINITY, f64::max)
        };
        // The phases, replayed from the trials in order: the global one until the first stall,
        // then the trust region's box around the best trial (under `trustRegion`).
        let values: Vec<f64> = objective_values(spec, history).1.into_iter().flatten().collect();
        let phase = trust_region::replay(&values, initial, features.numeric_dims().len(), true);
        let acquisition = match (self.params.exploration_beta, self.params.acquisition) {
            (Some(beta), _) if !phase.started => Acquisition::Ucb { beta },
            (_, AcquisitionKind::Ucb) => Acquisition::Ucb { beta },
            (_, AcquisitionKind::Ei) => Acquisition::LogEi { best },
            (_, AcquisitionKind::Pi) => Acquisition::LogPi { best },
        };
        // The best observed points anchor a local search around them.
        let anchors: Vec<Assignment> = ranked.iter().take(3).map(|(a, _)| (*a).clone()).collect();
        let local = self.params.trust_region.then_some(phase);
        let region = local.as_ref().and_then(|p| p.length).map(|l| trust_region::region(&spec.space.encode(&anchors[0]), l));
        let proposer = GpBanditProposer {
            name: self.variant.name,
            priors: stack.map(|s| s.names).unwrap_or_default(),
            features,
            acquisition,
            anchors,
            local,
            config: MixedConfig {
                n_candidates: self.params.num_candidates,
                max_iter: ACQUISITION_ITERATIONS,
                region,
                ..MixedConfig::default()
            },
        };
        Ok(GpModel::fitted(Posterior::new(gp, sign, warp, worst, spec, history), proposer, state))
    }

    fn initial_design_size(&self, d: usize, budget: Option<usize>) -> usize {
        // Measured with bo-bench: with d + 1 points Hartmann-6 fell into its −3.20 basin in 3
        // of 5 seeds and one Branin seed stalled on the boundary; with 10, 2 and 0 of 5; with
        // 2d + 2 = 14, Hartmann-6 1 of 5 (median 7.2e-5). Capped so that a high-dimensional
        // study does not spend its budget on the design.
        self.params.initial_design_size.unwrap_or(default_initial_design(d, budget))
    }
}

/// `initialDesignSize`'s default for a space of `d` features: 2d + 2 within [10, 30], within
/// the study's declared `budget` ([`within_budget`]).
pub(super) fn default_initial_design(d: usize, budget: Option<usize>) -> usize {
    within_budget((2 * d + 2).clamp(10, 30), budget, 10)
}

/// GP_BANDIT's search: the acquisition maximised over the whole (flattened) space by
/// `optimize::mixed`, batch members after the first by GP-UCB-PE under UCB.
struct GpBanditProposer {
    name: &'static str,
    /// The prior studies the model stands on, the base first.
    priors: Vec<String>,
    features: Features,
    acquisition: Acquisition,
    anchors: Vec<Assignment>,
    /// The local phase, under `trustRegion`.
    local: Option<trust_region::LocalPhase>,
    config: MixedConfig,
}

/// How far below the relevant region a pure-exploration score is pushed, per unit of UCB.
const PE_PENALTY: f64 = 10.0;

/// What a UCB batch carries between members: the posterior before the batch's own fantasies,
/// which defines UCB-PE's relevant region, and the region's floor (max LCB).
struct PeRegion {
    base: Option<Gp>,
    lcb_bound: f64,
}

impl Default for PeRegion {
    fn default() -> Self {
        PeRegion { base: None, lcb_bound: f64::NEG_INFINITY }
    }
}

impl Proposer for GpBanditProposer {
    type Batch = PeRegion;

    fn encode(&self, a: &Assignment) -> Vec<f64> {
        self.features.encode(a)
    }

    fn propose(&self, _: &Posterior, member: Member<'_>, region: &mut PeRegion, rng: &mut dyn Rng) -> Result<Option<Assignment>, FitError> {
        let Member { gp, taken, k, count, believed, .. } = member;
        // The posterior before this batch's fantasies (a copy only when there is a batch).
        if k == 0 && count > 1 {
            region.base = Some(gp.clone());
        }
        let lcb_bound = region.lcb_bound;
        let chosen = match (self.acquisition, &region.base) {
            (Acquisition::Ucb { beta }, Some(base)) if k > 0 => {
                let b = beta.sqrt();
                let pe = |ucb: f64, sigma: f64| if ucb >= lcb_bound { sigma } else { sigma - PE_PENALTY * (lcb_bound - ucb) };
                let score_batch = |xs: &[Vec<f64>]| {
                    base.predict(xs)
                        .into_iter()
                        .zip(gp.predict(xs))
                        .map(|((m, v), (_, vf))| pe(m + b * v.sqrt(), vf.sqrt()))
                        .collect::<Vec<f64>>()
                };
                let score_grad = |xs: &[Vec<f64>]| {
                    base.predict_with_grad_batch(xs)
                        .into_iter()
                        .zip(gp.predict_with_grad_batch(xs))
                        .map(|(p, f)| {
                            let (s, sf) = (p.var.sqrt(), f.var.sqrt());
                            let ucb = p.mean + b * s;
                            let grad = (0..p.d_mean.len())
                                .map(|i| {
                                    let d_sf = f.d_var[i] / (2.0 * sf);
                                    let d_ucb = p.d_mean[i] + b * p.d_var[i] / (2.0 * s);
                                    if ucb >= lcb_bound { d_sf } else { d_sf + PE_PENALTY * d_ucb }
                                })
                                .collect();
                            (pe(ucb, sf), grad)
                        })
                        .collect::<Vec<_>>()
                };
                maximize(&self.features, &score_batch, &score_grad, taken, &self.anchors, &self.config, rng)?
            }
            (acquisition, _) => {
                let acquisition = acquisition.with_incumbent_at_least(believed);
                maximize_acquisition(acquisition, gp, &self.features, taken, &self.anchors, &self.config, rng)?
            }
        };
        // Nothing chosen: every point of a small discrete space has been tried.
        let Some((a, _)) = chosen else { return Ok(None) };
        if k == 0
            && let (Acquisition::Ucb { beta }, Some(base)) = (self.acquisition, &region.base)
        {
            // max LCB over the observed points and the first member: the region's floor.
            let mut xs: Vec<Vec<f64>> = self.anchors.iter().map(|a| self.features.encode(a)).collect();
            xs.push(self.features.encode(&a));
            region.lcb_bound = base.predict(&xs).into_iter().map(|(m, v)| m - beta.sqrt() * v.sqrt()).fold(f64::NEG_INFINITY, f64::max);
        }
        Ok(Some(a))
    }

    fn describe(&self, post: &Posterior) -> serde_json::Value {
        let h = post.gp.hyperparameters();
        let mut described = serde_json::json!({
            "model": self.name,
            "trials": post.gp.n(),
            "hyperparameters": post.hyperparameter_map(),
            "structure": post.gp.kernel().summary(),
            "logNoiseVariance": h.log_noise,
            "acquisition": self.acquisition.to_string(),
        });
        if let Some(local) = &self.local {
            described["trustRegion"] = serde_json::json!({"started": local.started, "side": local.length, "restarts": local.restarts});
        }
        if !self.priors.is_empty() {
            // α: how much of the model's deviation is its own rather than the priors'.
            described["priorStudies"] = serde_json::json!(self.priors);
            described["ownDeviationWeight"] = serde_json::json!(post.gp.stack_weight());
        }
        described
    }

    fn width(&self) -> usize {
        self.features.dim()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::designer_for;
    use crate::space::{Domain, ParamSpec, Scale, SearchSpace};
    use crate::study::{Goal, StudySpec};
    use crate::trial::{Outcome, ParamValue};

    /// A GP_BANDIT study of metric `f` over `[0, 1]` for each id.
    fn unit_spec(ids: &[&str], goal: Goal, config: serde_json::Value) -> StudySpec {
        StudySpec::new("f", goal, crate::designer::testing::fixtures::unit_box(ids), "GP_BANDIT").with_config(config)
    }

    /// `n` observations of `f(i, a, b)` at points spread over the unit square.
    fn spread_observations(n: usize, f: impl Fn(usize, f64, f64) -> f64) -> Vec<Observation> {
        (0..n)
            .map(|i| {
                let (a, b) = ((0.1 + i as f64 * 0.37) % 1.0, (0.2 + i as f64 * 0.61) % 1.0);
                let assignment = Assignment::new(BTreeMap::from([("a".into(), ParamValue::Float(a)), ("b".into(), ParamValue::Float(b))]));
                Observation { objective_sd: None, assignment, outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), f(i, a, b))])) }
            })
            .collect()
    }

    /// Under `observationNoise: HIGH` a measured point may be proposed again: in a space of three
    /// points, all measured, the model measures the best-looking one again; otherwise it has
    /// nothing new to propose (the space is used up), and never repeats a point.
    #[test]
    fn only_high_noise_measures_a_point_again() {
        let space = SearchSpace::new(vec![ParamSpec {
            id: "c".into(),
            domain: Domain::Categorical { values: vec!["a".into(), "b".into(), "c".into()] },
            scale: Scale::Linear,
            default: None,
            children: vec![],
        }])
        .unwrap();
        let history: Vec<Observation> = [("a", 0.1), ("b", 0.9), ("c", 0.2), ("a", 0.15), ("b", 0.7), ("c", 0.25)]
            .iter()
            .map(|(c, f)| Observation {
                objective_sd: None,
                assignment: Assignment::new(BTreeMap::from([("c".into(), ParamValue::Categorical((*c).into()))])),
                outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), *f)])),
            })
            .collect();
        for (noise, repeats) in [(ObservationNoise::High, true), (ObservationNoise::Low, false), (ObservationNoise::Unspecified, false)] {
            let mut spec =
                StudySpec::new("f", Goal::Maximize, space.clone(), "GP_BANDIT").with_config(serde_json::json!({"initialDesignSize": 3}));
            spec.observation_noise = noise;
            let problem = Problem { spec, seed: 3, priors: Vec::new() };
            let mut rng = StdRng::seed_from_u64(3);
            let model = designer_for(&problem.spec).unwrap().fit(&problem, &history, None, &mut rng).unwrap().model;
            let got = model.suggest(&[], 1, &mut rng).unwrap();
            if repeats {
                assert_eq!(got.len(), 1, "{noise:?}: a repeat");
                assert_eq!(got[0].get("c"), Some(&ParamValue::Categorical("b".into())), "{noise:?}: the best-looking point again");
                assert!(model.suggest(&got, 1, &mut rng).unwrap().iter().all(|a| a != &got[0]), "{noise:?}: never what is in flight");
            } else {
                assert!(got.is_empty(), "{noise:?}: nothing new to propose, never a repeat: {got:?}");
            }
        }
    }

    /// In a discrete space the trust region's box is used up long before the space: then the
    /// acquisition is searched in the whole space, and every step has a new point to propose.
    /// (It used to propose nothing, read by the service as an exhausted space at trial 35 of
    /// scikit-learn's k-NN: 50 × 2 × 2 points.)
    #[test]
    fn a_used_up_trust_region_gives_way_to_the_whole_space() {
        let param = |id: &str, domain: Domain| ParamSpec { id: id.into(), domain, scale: Scale::Linear, default: None, children: vec![] };
        let categories = |values: &[&str]| Domain::Categorical { values: values.iter().map(|v| (*v).to_owned()).collect() };
        let space = SearchSpace::new(vec![
            param("n", Domain::Integer { min: 1, max: 50 }),
            param("w", categories(&["u", "d"])),
            param("p", categories(&["1", "2"])),
        ])
        .unwrap();
        let problem = Problem { spec: StudySpec::new("f", Goal::Minimize, space, "GP_BANDIT"), seed: 1, priors: Vec::new() };
        let designer = designer_for(&problem.spec).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        let mut history: Vec<Observation> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for step in 0..60 {
            let model = designer.fit(&problem, &history, None, &mut rng).unwrap().model;
            let got = model.suggest(&[], 1, &mut rng).unwrap();
            assert_eq!(got.len(), 1, "step {step}: 200 points, {} tried: something new to propose", history.len());
            assert!(seen.insert(got[0].key()), "step {step}: never a repeat");
            let Some(ParamValue::Int(n)) = got[0].get("n") else { unreachable!() };
            let w = if got[0].get("w") == Some(&ParamValue::Categorical("u".into())) { 0.1 } else { 0.0 };
            let f = (*n as f64 - 7.0).abs() / 50.0 + w;
            history.push(Observation {
                objective_sd: None,
                assignment: got[0].clone(),
                outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), f)])),
            });
        }
    }

    /// `explorationBeta`: UCB with that β while every few trials still improve, the study's
    /// `acquisition` (EI) from the first stall on — with or without the trust region — and the
    /// setting refused where β is not a positive number.
    #[test]
    fn exploration_beta_is_ucb_until_the_first_stall() {
        let describe = |config: serde_json::Value, history: &[Observation]| {
            let problem = Problem { spec: unit_spec(&["a", "b"], Goal::Maximize, config), seed: 4, priors: Vec::new() };
            let mut rng = StdRng::seed_from_u64(4);
            let model = designer_for(&problem.spec).unwrap().fit(&problem, history, None, &mut rng).unwrap().model;
            assert_eq!(model.suggest(&[], 1, &mut rng).unwrap().len(), 1);
            model.describe()["acquisition"].as_str().unwrap().to_owned()
        };
        // Three design trials, then three that each improve: no stall yet.
        let improving = spread_observations(6, |i, _, _| i as f64);
        // Then four (max(4, d)) that do not: the stall.
        let stalled = spread_observations(10, |i, _, _| i.min(5) as f64 - if i > 5 { 1.0 } else { 0.0 });
        for trust_region in [true, false] {
            let config = serde_json::json!({"initialDesignSize": 3, "explorationBeta": 1.5, "trustRegion": trust_region});
            let before = describe(config.clone(), &improving);
            assert!(before.starts_with("upper confidence bound, β = 1.500"), "trustRegion {trust_region}: {before}");
            let after = describe(config, &stalled);
            assert!(after.starts_with("expected improvement"), "trustRegion {trust_region}: {after}");
        }
        // Without the setting, EI throughout.
        assert!(describe(serde_json::json!({"initialDesignSize": 3}), &improving).starts_with("expected improvement"));
        for bad in [serde_json::json!(0.0), serde_json::json!(-1.0)] {
            let spec = unit_spec(&["a", "b"], Goal::Maximize, serde_json::json!({"explorationBeta": bad}));
            let e = designer_for(&spec).err().expect("refused").to_string();
            assert!(e.contains("explorationBeta"), "{e}");
        }
    }

    /// A study that declares 40 trials in 20 dimensions models from its 11th: the default design
    /// (2d + 2 within [10, 30], 30 here) is held to a quarter of the budget, for `GP_BANDIT` and
    /// for `AUTO`'s candidates; without a declared budget, or with an explicit
    /// `initialDesignSize`, the 11th is still a design point. 40 expected trials
    /// (`expectedNumTrials`) count as 40 declared; with `maxNumTrials` too, the smaller counts.
    #[test]
    fn a_declared_budget_holds_the_design_to_a_quarter_of_it() {
        use crate::study_stopping::StudyStoppingConfig;
        let space = crate::designer::testing::fixtures::unit_cube(20);
        let history: Vec<Observation> = (0..10)
            .map(|i| {
                let values = (0..20).map(|j| (format!("x{j}").into(), ParamValue::Float(((i * 7 + j * 3) % 11) as f64 / 10.0)));
                Observation {
                    objective_sd: None,
                    assignment: Assignment::new(values.collect()),
                    outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), i as f64)])),
                }
            })
            .collect();
        let models = |algorithm: &str, budget: Option<i64>, config: serde_json::Value| {
            let mut spec = StudySpec::new("f", Goal::Maximize, space.clone(), algorithm).with_config(config);
            spec.study_stopping = budget.map(|n| StudyStoppingConfig { max_num_trials: Some(n), ..StudyStoppingConfig::default() });
            let problem = Problem { spec, seed: 1, priors: Vec::new() };
            let model = designer_for(&problem.spec).unwrap().fit(&problem, &history, None, &mut StdRng::seed_from_u64(1)).unwrap().model;
            model.predictor().is_some()
        };
        let expecting = |algorithm: &str, expected: u32, stops_at: Option<i64>| {
            let mut spec = StudySpec::new("f", Goal::Maximize, space.clone(), algorithm);
            spec.expected_trials = Some(expected);
            spec.study_stopping = stops_at.map(|n| StudyStoppingConfig { max_num_trials: Some(n), ..StudyStoppingConfig::default() });
            let problem = Problem { spec, seed: 1, priors: Vec::new() };
            let model = designer_for(&problem.spec).unwrap().fit(&problem, &history, None, &mut StdRng::seed_from_u64(1)).unwrap().model;
            model.predictor().is_some()
        };
        for algorithm in ["GP_BANDIT", "AUTO"] {
            assert!(models(algorithm, Some(40), serde_json::json!({})), "{algorithm}: a GP from the 11th of 40 trials");
            assert!(expecting(algorithm, 40, None), "{algorithm}: 40 expected trials size the design as 40 declared");
            assert!(expecting(algorithm, 40, Some(1000)), "{algorithm}: the smaller of the two budgets");
            assert!(expecting(algorithm, 1000, Some(40)), "{algorithm}: the smaller of the two budgets");
            assert!(!expecting(algorithm, 1000, None), "{algorithm}: a quarter of 1,000 expected is above the design");
            assert!(!models(algorithm, None, serde_json::json!({})), "{algorithm}: still the design without a budget");
            assert!(!models(algorithm, Some(1000), serde_json::json!({})), "{algorithm}: a quarter of 1,000 is above the design");
            let explicit = serde_json::json!({"initialDesignSize": 30});
            assert!(!models(algorithm, Some(40), explicit), "{algorithm}: an explicit design is the user's");
        }
        assert_eq!(within_budget(30, Some(60), 10), 15);
        assert_eq!(within_budget(12, Some(25), 10), 10, "never below the floor");
        assert_eq!(within_budget(12, None, 10), 12);
    }

    /// One best value near the largest double (a user's bug, or a sentinel) leaves the model
    /// finite: the fit succeeds, a suggestion comes back, predictions are numbers. It used to
    /// turn every score into NaN, and an empty proposal read as an exhausted space.
    #[test]
    fn an_extreme_but_finite_value_keeps_the_model_working() {
        let spec = unit_spec(&["a", "b"], Goal::Maximize, serde_json::json!({"initialDesignSize": 5}));
        let problem = Problem { spec, seed: 3, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(3);
        let history = spread_observations(8, |i, a, b| if i == 6 { 5e307 } else { a + b });
        let model = designer_for(&problem.spec).unwrap().fit(&problem, &history, None, &mut rng).unwrap().model;
        assert_eq!(model.suggest(&[], 2, &mut rng).unwrap().len(), 2);
        let p = model.predictor().unwrap().predict(&[history[0].assignment.clone()]).unwrap()[0];
        assert!(p.median.is_finite() && p.lower.is_finite() && p.upper.is_finite(), "{p:?}");
    }

    /// The kriging believer takes a pending trial's believed value as observed, EI's incumbent
    /// included: when the model believes the trial in flight better than any measured, the next
    /// suggestion does not crowd it. (With the measured best as the incumbent, the points beside
    /// the pending one kept an expected improvement of about their mean's excess over it, and a
    /// second worker was sent next door: 0.002 away here, against 0.056 now.)
    #[test]
    fn a_pending_trial_believed_best_is_the_value_to_improve_on() {
        let spec = unit_spec(&["a", "b"], Goal::Maximize, serde_json::json!({"initialDesignSize": 5, "trustRegion": false}));
        let problem = Problem { spec, seed: 2, priors: Vec::new() };
        // A smooth hill whose top, (0.45, 0.55), lies between the measured points.
        let history = spread_observations(12, |_, a, b| -((a - 0.45).powi(2) + (b - 0.55).powi(2)));
        let point = |a: &Assignment| match (a.get("a"), a.get("b")) {
            (Some(ParamValue::Float(x)), Some(ParamValue::Float(y))) => (*x, *y),
            _ => unreachable!(),
        };
        let mut rng = StdRng::seed_from_u64(2);
        let model = designer_for(&problem.spec).unwrap().fit(&problem, &history, None, &mut rng).unwrap().model;
        let first = model.suggest(&[], 1, &mut rng).unwrap();
        let believed = model.predictor().unwrap().predict(&first).unwrap()[0].median;
        let (_, values) = crate::designer::gp::objective_values(&problem.spec, &history);
        let measured_best = values.into_iter().flatten().fold(f64::NEG_INFINITY, f64::max);
        assert!(believed > measured_best, "the set-up: the model believes its suggestion better than the best measured");
        let second = model.suggest(&first, 1, &mut rng).unwrap();
        let (p, q) = (point(&first[0]), point(&second[0]));
        let dist = ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt();
        assert!(dist > 0.02, "the second worker's trial crowds the first's: {p:?} {q:?} ({dist:.3} apart)");
    }

    #[test]
    fn a_batch_is_distinct_and_spread_out() {
        let spec = unit_spec(&["a", "b"], Goal::Maximize, serde_json::Value::Null);
        let problem = Problem { spec, seed: 1, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(1);
        // Six observations of a multimodal function: the model is unsure, so the batch should
        // explore rather than pile up in one place.
        let history = spread_observations(6, |_, a, b| (6.0 * a).sin() * (4.0 * b).cos());
        let designer = designer_for(&problem.spec).unwrap();
        let batch = designer.fit(&problem, &history, None, &mut rng).unwrap().model.suggest(&[], 8, &mut rng).unwrap();
        assert_eq!(batch.len(), 8);
        let point = |a: &Assignment| match (a.get("a"), a.get("b")) {
            (Some(ParamValue::Float(x)), Some(ParamValue::Float(y))) => (*x, *y),
            _ => unreachable!(),
        };
        for i in 0..8 {
            for j in 0..i {
                let (p, q) = (point(&batch[i]), point(&batch[j]));
                let dist = ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt();
                assert!(dist > 0.05, "batch members {i} and {j} nearly coincide: {p:?} {q:?}");
            }
        }
    }

    /// A replica restoring another's stored fit gets the same θ and the same predictions, and
    /// does not search (the stored state comes back unchanged, θ to the last bit).
    #[test]
    fn restoring_a_stored_fit_keeps_its_hyperparameters() {
        for samples in [0, 4] {
            restoring_keeps(serde_json::json!({"initialDesignSize": 3, "hyperparameterSamples": samples}), samples);
        }
    }

    fn restoring_keeps(config: serde_json::Value, samples: usize) {
        let spec = unit_spec(&["a", "b"], Goal::Minimize, config);
        let problem = Problem { spec, seed: 5, priors: Vec::new() };
        let history: Vec<Observation> = (0..12)
            .map(|i| {
                let (a, b) = ((0.13 + i as f64 * 0.37) % 1.0, (0.29 + i as f64 * 0.61) % 1.0);
                Observation {
                    objective_sd: None,
                    assignment: Assignment::new(BTreeMap::from([("a".into(), ParamValue::Float(a)), ("b".into(), ParamValue::Float(b))])),
                    outcome: Outcome::Measured(BTreeMap::from([("f".into(), (5.0 * a).sin() + b * b)])),
                }
            })
            .collect();
        let designer = designer_for(&problem.spec).unwrap();
        let theirs = designer.fit(&problem, &history, None, &mut StdRng::seed_from_u64(1)).unwrap();
        let ours = designer.restore(&problem, &history, &theirs.state, &mut StdRng::seed_from_u64(2)).unwrap();
        assert_eq!(ours.state, theirs.state, "no search: the state is the one stored");
        let probe = vec![Assignment::new(BTreeMap::from([("a".into(), ParamValue::Float(0.4)), ("b".into(), ParamValue::Float(0.7))]))];
        let (p, q) =
            (theirs.model.predictor().unwrap().predict(&probe).unwrap()[0], ours.model.predictor().unwrap().predict(&probe).unwrap()[0]);
        assert!((p.median - q.median).abs() < 1e-9 && (p.upper - q.upper).abs() < 1e-9, "{p:?} {q:?}");
        assert_eq!(
            crate::designer::testing::stored_samples(&theirs.state.0).unwrap_or(0),
            samples,
            "the θ samples are stored with the fit"
        );
        assert_eq!(ours.model.suggest(&[], 1, &mut StdRng::seed_from_u64(3)).unwrap().len(), 1);
    }

    #[test]
    fn observing_new_data_equals_conditioning_the_gp_on_it() {
        let spec = unit_spec(&["a"], Goal::Minimize, serde_json::json!({"initialDesignSize": 3}));
        let obs = |a: f64| Observation {
            objective_sd: None,
            assignment: Assignment::new(BTreeMap::from([("a".into(), ParamValue::Float(a))])),
            outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), (a - 0.4).powi(2))])),
        };
        let problem = Problem { spec, seed: 3, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(3);
        let designer = designer_for(&problem.spec).unwrap();
        let model = designer.fit(&problem, &[obs(0.1), obs(0.5), obs(0.9)], None, &mut rng).unwrap().model;
        let probe = [Assignment::new(BTreeMap::from([("a".into(), ParamValue::Float(0.7))]))];
        let before = model.predictor().unwrap().predict(&probe).unwrap()[0];
        let updated = model.conditioning().unwrap().observe(&[obs(0.7)]).expect("a GP can observe");
        let after = updated.predictor().unwrap().predict(&probe).unwrap()[0];
        assert!((after.median - 0.09).abs() < 0.01, "the real value 0.09 is now known there: {after:?}");
        assert!(after.upper - after.lower < (before.upper - before.lower) / 5.0, "{before:?} → {after:?}");
    }

    #[test]
    fn config_is_checked() {
        assert!(GpBanditParams { ucb_beta: Some(-1.0), ..Default::default() }.check().is_err());
        assert!(GpBanditParams { num_candidates: 1, ..Default::default() }.check().is_err());
        assert!(GpBanditParams { hyperparameter_samples: 33, ..Default::default() }.check().is_err());
        assert!(GpBanditParams { hyperparameter_samples: 32, ..Default::default() }.check().is_ok());
        let parsed: GpBanditParams = serde_json::from_value(serde_json::json!({"acquisition": "EI", "initialDesignSize": 5})).unwrap();
        assert_eq!(parsed.acquisition, AcquisitionKind::Ei);
        assert!(serde_json::from_value::<GpBanditParams>(serde_json::json!({"acquisiton": "EI"})).is_err());
    }
}
