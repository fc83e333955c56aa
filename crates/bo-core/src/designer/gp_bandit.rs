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
//!   `β_t = 0.2 · d · ln(2t)` (seed 004 §5, the practical schedule) unless `ucbBeta` fixes it;
//!   or log-PI. EI is the default because bo-bench measured it better on 5 of 7 problems
//!   (UCB over-explores boundaries as d grows; docs/benchmarks.md). Maximised by
//!   `optimize::mixed`. The objective is the study's first metric; minimisation is handled by
//!   negating it.
//! - **Pending trials** are fantasies: each in-flight trial is added to the GP at its posterior
//!   mean as a noise-free observation, which collapses the variance there.
//! - **Batches** (`suggestionCount > 1`) add each chosen member as a fantasy too. Under UCB the
//!   members after the first follow GP-UCB-PE (Contal, Buffoni, Robicquet & Vayatis 2013): they
//!   maximise the fantasised posterior σ within the relevant region {x : UCB(x) ≥ max LCB},
//!   because once fantasies pin the variance, UCB alone just follows the mean to one spot (seen
//!   in this file's batch test). EI and PI keep the kriging believer (Ginsbourger et al. 2010).
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `acquisition` | `EI` | `EI`, `UCB` or `PI` | — |
//! | `ucbBeta` | schedule | a constant β for UCB | > 0 |
//! | `initialDesignSize` | 2d + 2 within [10, 30] | quasi-random trials before the GP | 1 – 1,000 |
//! | `kernel` | `MATERN52` | `MATERN52` or `SQUARED_EXP` | — |
//! | `lengthScalePrior` | `WEAK` | `WEAK` (mode 1) or `DIMENSION_SCALED` (median grows as √D) | — |
//! | `numCandidates` | 512 | Sobol candidates scored per suggestion | 16 – 100,000 |
//! | `numRestarts` | 2 | random restarts of the hyperparameter fit | 0 – 50 |

use std::collections::HashSet;
use std::sync::Arc;

use rand::Rng;
use serde::Deserialize;

use super::{ConfigError, Designer, FitError, Fitted, Model, ModelState, Prediction, Problem, QuasiRandomSearch, check_beta, check_range};
use crate::acquisition::{Acquisition, BetaSchedule};
use crate::gp::{self, FitConfig, Gp, Hyperparameters, NoiseBounds, Search};
use crate::kernel::{Categorical, Kernel, LengthScalePrior, Product, matern52, squared_exp};
use crate::optimize::mixed::{MixedConfig, maximize};
use crate::space::features::Features;
use crate::study::{Goal, ObservationNoise, StudySpec};
use crate::trial::{Assignment, Observation, Outcome};

/// Which acquisition function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AcquisitionKind {
    /// Upper confidence bound.
    Ucb,
    /// Expected improvement (as log-EI): the default, measured better than UCB on 5 of 7
    /// bo-bench problems (docs/benchmarks.md); UCB with β_t = 0.2·d·ln(2t) over-explores the
    /// boundary as d grows (worse than random search on Styblinski–Tang-8).
    #[default]
    Ei,
    /// Probability of improvement (as log-PI).
    Pi,
}

/// Which stationary kernel for numeric parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum KernelKind {
    /// Matérn-5/2.
    #[default]
    Matern52,
    /// Squared exponential.
    SquaredExp,
}

/// `algorithmConfig` of `GP_BANDIT` (the table above).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct GpBanditParams {
    /// The acquisition function.
    pub acquisition: AcquisitionKind,
    /// A constant β for UCB instead of the schedule.
    pub ucb_beta: Option<f64>,
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
}

impl Default for GpBanditParams {
    fn default() -> Self {
        GpBanditParams {
            acquisition: AcquisitionKind::Ei,
            ucb_beta: None,
            initial_design_size: None,
            kernel: KernelKind::Matern52,
            length_scale_prior: LengthScalePrior::Weak,
            num_candidates: 512,
            num_restarts: 2,
        }
    }
}

impl GpBanditParams {
    /// Checks the ranges of the table.
    pub fn check(self) -> Result<GpBanditParams, ConfigError> {
        check_beta(self.ucb_beta)?;
        if let Some(n) = self.initial_design_size {
            check_range("initialDesignSize", n, 1, 1000)?;
        }
        check_range("numCandidates", self.num_candidates, 16, 100_000)?;
        check_range("numRestarts", self.num_restarts, 0, 50)?;
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
    /// EI's incumbent: the largest posterior mean at the data (for noisy objectives, seed 003 as
    /// the reading found best, §D) instead of the largest observation.
    pub plug_in_best: bool,
}

const FLAT: Variant = Variant { name: "exact GP", kernel: kernel_for, plug_in_best: false };

/// The GP-bandit designer.
pub struct GpBandit {
    params: GpBanditParams,
    variant: Variant,
}

impl GpBandit {
    /// A designer with checked settings.
    pub fn new(params: GpBanditParams) -> GpBandit {
        GpBandit { params, variant: FLAT }
    }

    /// GP_BANDIT with another kernel.
    pub(super) fn with_variant(params: GpBanditParams, variant: Variant) -> GpBandit {
        GpBandit { params, variant }
    }
}

/// Length-scale bounds on the unit cube.
const LENGTH_SCALE_BOUNDS: (f64, f64) = (0.01, 20.0);

/// The noise variance of a fantasy observation (standardised units): as if measured exactly.
const FANTASY_NOISE: f64 = 1e-6;

/// What is stored between fits.
#[derive(serde::Serialize, Deserialize)]
struct State {
    gp: Hyperparameters,
    /// The number of observations at the last full hyperparameter search.
    #[serde(default)]
    full_fit_at: Option<usize>,
    /// The number of observations at the last optimisation of θ (full or warm).
    #[serde(default)]
    fit_at: Option<usize>,
    /// Set only on a state handed back to a fit by [`for_reuse`]: condition at θ, no search.
    /// Never stored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    reuse: bool,
}

/// Between full hyperparameter searches (from the warm, default and random starts), refits start
/// from the warm start alone; a full search runs again once the data has grown by this factor —
/// O(log n) of them over a study. Measured with `bo-bench suite` (docs/benchmarks.md).
const FULL_FIT_GROWTH: f64 = 1.2;

/// Between optimisations of θ, the GP conditions on new observations at the last θ; θ is
/// optimised again (from the warm start) once the data has grown by this fraction since — every
/// trial below 40, every 5th at 100, every 50th at 1,000. Over 12 seeds of Branin, Hartmann-3/-6
/// and Jenatton it took 30 % off the time per step with the same regret; 0.1 took 40 % and cost
/// Branin and Jenatton regret (docs/benchmarks.md).
const WARM_REFIT_GROWTH: f64 = 0.05;

/// How a fit on `n` observations searches θ, given the state of the last fit.
fn search_for(n: usize, last: Option<&State>) -> Search {
    let Some(state) = last else { return Search::Full };
    if state.reuse {
        return Search::Reuse;
    }
    let Some(full_at) = state.full_fit_at else { return Search::Full };
    if n < full_at || n as f64 >= FULL_FIT_GROWTH * full_at as f64 {
        return Search::Full;
    }
    match state.fit_at {
        // A refit without new observations is a request to optimise θ again.
        Some(at) if n > at && n - at < (WARM_REFIT_GROWTH * at as f64) as usize => Search::Reuse,
        _ => Search::Warm,
    }
}

fn kernel_for(features: &Features, params: &GpBanditParams) -> Box<dyn Kernel> {
    let numeric = features.numeric_dims();
    let categorical = features.categorical_dims();
    let prior = params.length_scale_prior;
    // Under the dimension-scaled prior the fit starts from its median, as Hvarfner et al. do,
    // and the bounds leave room above it (the median is 41 at D = 100).
    let (start, bounds) = match prior {
        LengthScalePrior::Weak => (0.5, LENGTH_SCALE_BOUNDS),
        LengthScalePrior::DimensionScaled => {
            let median = prior.median(numeric.len());
            (median, (LENGTH_SCALE_BOUNDS.0, LENGTH_SCALE_BOUNDS.1.max(10.0 * median)))
        }
    };
    let numeric_kernel: Option<Box<dyn Kernel>> = (!numeric.is_empty()).then(|| match params.kernel {
        KernelKind::Matern52 => Box::new(matern52(numeric, start, bounds).with_prior(prior)) as Box<dyn Kernel>,
        KernelKind::SquaredExp => Box::new(squared_exp(numeric, start, bounds).with_prior(prior)),
    });
    let categorical_kernel: Option<Box<dyn Kernel>> =
        (!categorical.is_empty()).then(|| Box::new(Categorical::new(categorical)) as Box<dyn Kernel>);
    match (numeric_kernel, categorical_kernel) {
        (Some(n), Some(c)) => Box::new(Product(vec![n, c])),
        (Some(k), None) | (None, Some(k)) => k,
        (None, None) => unreachable!("a search space has at least one parameter"),
    }
}

impl GpBandit {
    fn initial_design_size(&self, d: usize) -> usize {
        // Measured with bo-bench: with d + 1 points Hartmann-6 fell into its −3.20 basin in 3
        // of 5 seeds and one Branin seed stalled on the boundary; with 10, 2 and 0 of 5; with
        // 2d + 2 = 14, Hartmann-6 1 of 5 (median 7.2e-5). Capped so that a high-dimensional
        // study does not spend its budget on the design.
        self.params.initial_design_size.unwrap_or((2 * d + 2).clamp(10, 30))
    }
}

/// A study's completed trials as GP training data, the objective `sign`-adjusted so the GP
/// maximises it.
pub(super) struct Training<'h> {
    /// +1 to maximise the objective, −1 to minimise it.
    pub sign: f64,
    /// The worst feasible value (`sign`-adjusted): infeasible trials' penalty.
    pub worst: f64,
    /// Trials with a measured objective, best first.
    pub ranked: Vec<(&'h Assignment, f64)>,
    /// Inputs, in the model's features.
    pub x: Vec<Vec<f64>>,
    /// Outputs, `sign`-adjusted.
    pub y: Vec<f64>,
}

/// Each trial's objective made a maximisation (×`sign`, returned), infeasible trials at the
/// worst feasible value (their penalty; `None` while no trial is feasible), `None` for a trial
/// without the objective: the rule every GP designer trains on.
pub(super) fn objective_values(spec: &StudySpec, history: &[Observation]) -> (f64, Vec<Option<f64>>) {
    let objective = spec.objective();
    let sign = if objective.goal == Goal::Minimize { -1.0 } else { 1.0 };
    let measured = |o: &Observation| match &o.outcome {
        Outcome::Measured(m) => m.get(&objective.id).map(|v| sign * v),
        Outcome::Infeasible => None,
    };
    let worst = history.iter().filter_map(measured).fold(f64::INFINITY, f64::min);
    let values = history
        .iter()
        .map(|o| match &o.outcome {
            Outcome::Infeasible if worst.is_finite() => Some(worst),
            _ => measured(o),
        })
        .collect();
    (sign, values)
}

impl<'h> Training<'h> {
    /// The training data of `history` under `encode`; `None` with fewer than `min` measured
    /// trials.
    pub fn new(spec: &StudySpec, history: &'h [Observation], encode: &dyn Fn(&Assignment) -> Vec<f64>, min: usize) -> Option<Training<'h>> {
        let (sign, values) = objective_values(spec, history);
        let mut ranked: Vec<(&Assignment, f64)> = history
            .iter()
            .zip(&values)
            .filter(|(o, _)| matches!(o.outcome, Outcome::Measured(_)))
            .filter_map(|(o, v)| v.map(|v| (&o.assignment, v)))
            .collect();
        if ranked.len() < min.max(2) {
            return None;
        }
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let worst = ranked.iter().map(|(_, y)| *y).fold(f64::INFINITY, f64::min);
        let (x, y) = history.iter().zip(&values).filter_map(|(o, v)| v.map(|v| (encode(&o.assignment), v))).unzip();
        Some(Training { sign, worst, ranked, x, y })
    }
}

/// Fits `kernel` to `x`, `y` under the study's noise setting, warm-started from the state of the
/// last fit and searching θ as [`search_for`] says; returns the GP and the state to store.
pub(super) fn fit_gp(
    kernel: Box<dyn Kernel>,
    x: Vec<Vec<f64>>,
    y: &[f64],
    noise: ObservationNoise,
    restarts: usize,
    warm: Option<&ModelState>,
    rng: &mut dyn Rng,
) -> Result<(Gp, ModelState), FitError> {
    let noise = match noise {
        ObservationNoise::Low => NoiseBounds::LOW,
        ObservationNoise::High => NoiseBounds::HIGH,
        ObservationNoise::Unspecified => NoiseBounds::DEFAULT,
    };
    let warm_state: Option<State> = warm.and_then(|s| serde_json::from_value::<State>(s.0.clone()).ok());
    let n = x.len();
    let search = search_for(n, warm_state.as_ref());
    let config = FitConfig { noise, restarts, search, ..FitConfig::default() };
    let gp = gp::fit(kernel, x, y, &config, warm_state.as_ref().map(|s| &s.gp), rng)
        .map_err(|e| FitError::Numerical(format!("GP fit failed: {e}")))?;
    let last = |f: fn(&State) -> Option<usize>| warm_state.as_ref().and_then(f);
    let full_fit_at = if search == Search::Full { Some(n) } else { last(|s| s.full_fit_at) };
    let fit_at = if search == Search::Reuse { last(|s| s.fit_at) } else { Some(n) };
    let state = ModelState(serde_json::to_value(State { gp: gp.hyperparameters(), full_fit_at, fit_at, reuse: false }).unwrap_or_default());
    Ok((gp, state))
}

/// `state` (of a [`fit_gp`]) marked so that the next [`fit_gp`] conditions at its θ without a
/// search: how a designer restores another process's stored fit.
pub(super) fn for_reuse(state: &ModelState) -> ModelState {
    let mut value = state.0.clone();
    if let Some(object) = value.as_object_mut() {
        object.insert("reuse".to_owned(), serde_json::Value::Bool(true));
    }
    ModelState(value)
}

/// The state after which [`fit_gp`] on `n` observations optimises θ from `theta` alone (a warm
/// search): for a designer that chose θ itself, e.g. by a structure search.
pub(super) fn warm_start(theta: Hyperparameters, n: usize) -> ModelState {
    ModelState(serde_json::to_value(State { gp: theta, full_fit_at: Some(n), fit_at: Some(n), reuse: false }).unwrap_or_default())
}

/// `gp` conditioned on `points` as noise-free fantasies at its posterior mean: all at once, or —
/// when that factor cannot be extended, e.g. for a point already in the data — one at a time,
/// skipping those that cannot be added.
pub(super) fn add_fantasies(gp: &mut Gp, encode: &dyn Fn(&Assignment) -> Vec<f64>, points: &[Assignment]) {
    let xs: Vec<Vec<f64>> = points.iter().map(encode).collect();
    let means: Vec<f64> = gp.predict(&xs).into_iter().map(|(m, _)| m).collect();
    if gp.condition_on(xs.clone(), means.clone(), Some(FANTASY_NOISE)).is_err() {
        for (x, m) in xs.into_iter().zip(means) {
            // Failing leaves the GP as it was; the fantasy is skipped (see above).
            let _ = gp.condition_on(vec![x], vec![m], Some(FANTASY_NOISE));
        }
    }
}

/// The level of a GP's constant prior mean, to which its posterior mean returns away from the
/// data. Fitting puts it at the observations' mean; an additive model's acquisition then finds
/// each group's unexplored corners as good as average, and with tens of groups it leaves the
/// incumbent for them (measured in docs/benchmarks.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PriorMean {
    /// The observations' mean (seed 004's code).
    #[default]
    Mean,
    /// The worst observation: unexplored regions are assumed no better than the worst seen.
    Worst,
}

impl PriorMean {
    /// Moves `gp`'s prior mean to this level (θ unchanged).
    pub fn apply(self, gp: &mut Gp) {
        if self == PriorMean::Worst {
            let lowest = gp.y().iter().copied().fold(f64::INFINITY, f64::min);
            gp.set_prior_mean(lowest);
        }
    }
}

/// A fitted GP on a study's objective and what every GP model keeps with it: the sign that
/// makes it a maximisation, the infeasible trials' penalty and the trials not to propose again.
pub(super) struct Posterior {
    pub gp: Gp,
    /// +1 to maximise the objective, −1 to minimise it (the GP models `sign · objective`).
    pub sign: f64,
    /// The objective's metric id.
    pub objective: String,
    /// The worst feasible value seen at the fit (`sign`-adjusted): infeasible trials' penalty.
    pub worst: f64,
    /// Keys of the assignments in the data.
    pub taken: HashSet<String>,
}

impl Posterior {
    /// The posterior of `gp` fitted to `spec`'s objective (`sign`-adjusted, infeasible trials at
    /// `worst`) over `history`.
    pub fn new(gp: Gp, sign: f64, worst: f64, spec: &StudySpec, history: &[Observation]) -> Posterior {
        Posterior { gp, sign, objective: spec.objective().id.clone(), worst, taken: history.iter().map(|o| o.assignment.key()).collect() }
    }

    /// The posterior conditioned on `new` completed trials (without refitting θ); `None` when
    /// one lacks the objective or the factor cannot be extended.
    pub fn observed(&self, new: &[Observation], encode: &dyn Fn(&Assignment) -> Vec<f64>) -> Option<Posterior> {
        let mut gp = self.gp.with_room(new.len());
        let mut taken = self.taken.clone();
        let mut xs = Vec::with_capacity(new.len());
        let mut ys = Vec::with_capacity(new.len());
        for o in new {
            let y = match &o.outcome {
                Outcome::Measured(m) => self.sign * *m.get(&self.objective)?,
                Outcome::Infeasible => self.worst,
            };
            xs.push(encode(&o.assignment));
            ys.push(gp.standardize_value(y));
            taken.insert(o.assignment.key());
        }
        gp.condition_on(xs, ys, None).ok()?;
        Some(Posterior { gp, sign: self.sign, objective: self.objective.clone(), worst: self.worst, taken })
    }

    /// Up to `count` new assignments chosen one at a time by the kriging believer (Ginsbourger
    /// et al. 2010): the pending trials, then each member chosen, are fantasies in a copy of the
    /// GP before the next member. `propose(gp, taken, k)` gives member `k` from the fantasised GP
    /// and the keys not to propose again (data, pending and members so far); `None` ends the
    /// batch early (a small discrete space used up).
    pub fn batch(
        &self,
        encode: &dyn Fn(&Assignment) -> Vec<f64>,
        pending: &[Assignment],
        count: usize,
        mut propose: impl FnMut(&Gp, &HashSet<String>, usize) -> Result<Option<Assignment>, FitError>,
    ) -> Result<Vec<Assignment>, FitError> {
        let mut gp = self.gp.with_room(pending.len() + count);
        add_fantasies(&mut gp, encode, pending);
        let mut taken = self.taken.clone();
        taken.extend(pending.iter().map(Assignment::key));
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            let Some(a) = propose(&gp, &taken, k)? else { break };
            taken.insert(a.key());
            if k + 1 < count {
                add_fantasies(&mut gp, encode, std::slice::from_ref(&a));
            }
            out.push(a);
        }
        Ok(out)
    }

    /// The GP's constant prior mean, in the objective's units.
    pub fn prior_mean(&self) -> f64 {
        self.sign * self.gp.unstandardize(0.0, 0.0).0
    }

    /// Posterior mean and deviation of the objective, in its own units and direction.
    pub fn predictions(&self, points: &[Assignment], encode: &dyn Fn(&Assignment) -> Vec<f64>) -> Vec<Prediction> {
        let xs: Vec<Vec<f64>> = points.iter().map(encode).collect();
        self.gp
            .predict(&xs)
            .into_iter()
            .map(|(m, v)| {
                let (mean, stddev) = self.gp.unstandardize_sd(m, v);
                Prediction { mean: self.sign * mean, stddev }
            })
            .collect()
    }
}

impl Designer for GpBandit {
    fn work(&self, _space: &crate::space::SearchSpace) -> super::Work {
        super::Work { candidates: self.params.num_candidates, structure_evaluations: 0 }
    }

    /// The GP at the stored θ, conditioned on `history`: no search.
    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit(problem, history, Some(&for_reuse(state)), rng)
    }

    fn fit(&self, problem: &Problem, history: &[Observation], warm: Option<&ModelState>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let spec = &problem.spec;
        let features = Features::new(&spec.space);
        let encode = |a: &Assignment| features.encode(a);
        let Some(Training { sign, worst, ranked, x, y }) = Training::new(spec, history, &encode, self.initial_design_size(features.dim()))
        else {
            return QuasiRandomSearch.fit(problem, history, warm, rng);
        };
        let kernel = (self.variant.kernel)(&features, &self.params);
        let (gp, state) = fit_gp(kernel, x, &y, spec.observation_noise, self.params.num_restarts, warm, rng)?;
        let t = ranked.len() + 1;
        let beta = self.params.ucb_beta.unwrap_or_else(|| BetaSchedule::Kandasamy.beta(features.dim(), t));
        let best = if self.variant.plug_in_best {
            gp.predict(gp.x()).into_iter().map(|(m, _)| m).fold(f64::NEG_INFINITY, f64::max)
        } else {
            gp.y().iter().copied().fold(f64::NEG_INFINITY, f64::max)
        };
        let acquisition = match self.params.acquisition {
            AcquisitionKind::Ucb => Acquisition::Ucb { beta },
            AcquisitionKind::Ei => Acquisition::LogEi { best },
            AcquisitionKind::Pi => Acquisition::LogPi { best },
        };
        // The best observed points anchor a local search around them.
        let anchors = ranked.iter().take(3).map(|(a, _)| (*a).clone()).collect();
        let model = GpBanditModel {
            name: self.variant.name,
            features,
            post: Posterior::new(gp, sign, worst, spec, history),
            acquisition,
            anchors,
            config: MixedConfig { n_candidates: self.params.num_candidates, ..MixedConfig::default() },
        };
        Ok(Fitted { model: Arc::new(model), state })
    }
}

struct GpBanditModel {
    name: &'static str,
    features: Features,
    post: Posterior,
    acquisition: Acquisition,
    anchors: Vec<Assignment>,
    config: MixedConfig,
}

/// How far below the relevant region a pure-exploration score is pushed, per unit of UCB.
const PE_PENALTY: f64 = 10.0;

impl Model for GpBanditModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        // The posterior before this batch's fantasies defines UCB-PE's relevant region (a copy
        // only when there is a batch).
        let mut base: Option<Gp> = None;
        let mut lcb_bound = f64::NEG_INFINITY;
        self.post.batch(&|a| self.features.encode(a), pending, count, |gp, taken, k| {
            if k == 0 && count > 1 {
                base = Some(gp.clone());
            }
            let chosen = match (self.acquisition, &base) {
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
                    let score_batch =
                        |xs: &[Vec<f64>]| gp.predict(xs).into_iter().map(|(m, v)| acquisition.value(m, v)).collect::<Vec<f64>>();
                    let score_grad =
                        |xs: &[Vec<f64>]| gp.predict_with_grad_batch(xs).iter().map(|p| acquisition.value_and_grad(p)).collect::<Vec<_>>();
                    maximize(&self.features, &score_batch, &score_grad, taken, &self.anchors, &self.config, rng)?
                }
            };
            // Nothing chosen: every point of a small discrete space has been tried.
            let Some((a, _)) = chosen else { return Ok(None) };
            if k == 0
                && let (Acquisition::Ucb { beta }, Some(base)) = (self.acquisition, &base)
            {
                // max LCB over the observed points and the first member: the region's floor.
                let mut xs: Vec<Vec<f64>> = self.anchors.iter().map(|a| self.features.encode(a)).collect();
                xs.push(self.features.encode(&a));
                lcb_bound = base.predict(&xs).into_iter().map(|(m, v)| m - beta.sqrt() * v.sqrt()).fold(f64::NEG_INFINITY, f64::max);
            }
            Ok(Some(a))
        })
    }

    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>> {
        Some(Arc::new(GpBanditModel {
            name: self.name,
            features: self.features.clone(),
            post: self.post.observed(new, &|a| self.features.encode(a))?,
            acquisition: self.acquisition,
            anchors: self.anchors.clone(),
            config: self.config.clone(),
        }))
    }

    fn predict(&self, points: &[Assignment]) -> Option<Vec<Prediction>> {
        Some(self.post.predictions(points, &|a| self.features.encode(a)))
    }

    fn describe(&self) -> serde_json::Value {
        let h = self.post.gp.hyperparameters();
        let hyperparameters: serde_json::Map<String, serde_json::Value> =
            h.names.iter().zip(&h.kernel).map(|(name, v)| (name.clone(), serde_json::json!(v))).collect();
        serde_json::json!({
            "model": self.name,
            "trials": self.post.gp.n(),
            "hyperparameters": hyperparameters,
            "structure": self.post.gp.kernel().summary(),
            "logNoiseVariance": h.log_noise,
            "acquisition": format!("{:?}", self.acquisition),
        })
    }

    fn memory_bytes(&self) -> usize {
        // The Cholesky factor and the inputs dominate.
        let n = self.post.gp.n();
        8 * (n * n + n * (self.features.dim() + 2)) + 4096
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
    use crate::study::{MetricSpec, StudySpec};
    use crate::trial::ParamValue;

    /// A GP_BANDIT study of metric `f` over `[0, 1]` for each id.
    fn unit_spec(ids: &[&str], goal: Goal, config: serde_json::Value) -> StudySpec {
        let double = |id: &str| ParamSpec {
            id: id.into(),
            domain: Domain::Double { min: 0.0, max: 1.0 },
            scale: Scale::Linear,
            default: None,
            children: vec![],
        };
        StudySpec {
            trial_lease_secs: None,
            metrics: vec![MetricSpec { id: "f".into(), goal }],
            space: SearchSpace::new(ids.iter().map(|id| double(id)).collect()).unwrap(),
            algorithm: "GP_BANDIT".into(),
            algorithm_config: config,
            observation_noise: Default::default(),
            measurement_selection: Default::default(),
            stopping: None,
        }
    }

    /// `n` observations of `f(i, a, b)` at points spread over the unit square.
    fn spread_observations(n: usize, f: impl Fn(usize, f64, f64) -> f64) -> Vec<Observation> {
        (0..n)
            .map(|i| {
                let (a, b) = ((0.1 + i as f64 * 0.37) % 1.0, (0.2 + i as f64 * 0.61) % 1.0);
                let assignment =
                    Assignment(BTreeMap::from([("a".to_owned(), ParamValue::Float(a)), ("b".to_owned(), ParamValue::Float(b))]));
                Observation { assignment, outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), f(i, a, b))])) }
            })
            .collect()
    }

    /// One best value near the largest double (a user's bug, or a sentinel) leaves the model
    /// finite: the fit succeeds, a suggestion comes back, predictions are numbers. It used to
    /// turn every score into NaN, and an empty proposal read as an exhausted space.
    #[test]
    fn an_extreme_but_finite_value_keeps_the_model_working() {
        let spec = unit_spec(&["a", "b"], Goal::Maximize, serde_json::json!({"initialDesignSize": 5}));
        let problem = Problem { spec, seed: 3 };
        let mut rng = StdRng::seed_from_u64(3);
        let history = spread_observations(8, |i, a, b| if i == 6 { 5e307 } else { a + b });
        let model = designer_for(&problem.spec).unwrap().fit(&problem, &history, None, &mut rng).unwrap().model;
        assert_eq!(model.suggest(&[], 2, &mut rng).unwrap().len(), 2);
        let p = model.predict(&[history[0].assignment.clone()]).unwrap()[0];
        assert!(p.mean.is_finite() && p.stddev.is_finite(), "{p:?}");
    }

    #[test]
    fn a_batch_is_distinct_and_spread_out() {
        let spec = unit_spec(&["a", "b"], Goal::Maximize, serde_json::Value::Null);
        let problem = Problem { spec, seed: 1 };
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
        let spec = unit_spec(&["a", "b"], Goal::Minimize, serde_json::json!({"initialDesignSize": 3}));
        let problem = Problem { spec, seed: 5 };
        let history: Vec<Observation> = (0..12)
            .map(|i| {
                let (a, b) = ((0.13 + i as f64 * 0.37) % 1.0, (0.29 + i as f64 * 0.61) % 1.0);
                Observation {
                    assignment: Assignment(BTreeMap::from([
                        ("a".to_owned(), ParamValue::Float(a)),
                        ("b".to_owned(), ParamValue::Float(b)),
                    ])),
                    outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), (5.0 * a).sin() + b * b)])),
                }
            })
            .collect();
        let designer = designer_for(&problem.spec).unwrap();
        let theirs = designer.fit(&problem, &history, None, &mut StdRng::seed_from_u64(1)).unwrap();
        let ours = designer.restore(&problem, &history, &theirs.state, &mut StdRng::seed_from_u64(2)).unwrap();
        assert_eq!(ours.state, theirs.state, "no search: the state is the one stored");
        let probe = vec![Assignment(BTreeMap::from([("a".to_owned(), ParamValue::Float(0.4)), ("b".to_owned(), ParamValue::Float(0.7))]))];
        let (p, q) = (theirs.model.predict(&probe).unwrap()[0], ours.model.predict(&probe).unwrap()[0]);
        assert!((p.mean - q.mean).abs() < 1e-9 && (p.stddev - q.stddev).abs() < 1e-9, "{p:?} {q:?}");
    }

    #[test]
    fn observing_new_data_equals_conditioning_the_gp_on_it() {
        let spec = unit_spec(&["a"], Goal::Minimize, serde_json::json!({"initialDesignSize": 3}));
        let obs = |a: f64| Observation {
            assignment: Assignment(BTreeMap::from([("a".to_owned(), ParamValue::Float(a))])),
            outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), (a - 0.4).powi(2))])),
        };
        let problem = Problem { spec, seed: 3 };
        let mut rng = StdRng::seed_from_u64(3);
        let designer = designer_for(&problem.spec).unwrap();
        let model = designer.fit(&problem, &[obs(0.1), obs(0.5), obs(0.9)], None, &mut rng).unwrap().model;
        let probe = [Assignment(BTreeMap::from([("a".to_owned(), ParamValue::Float(0.7))]))];
        let before = model.predict(&probe).unwrap()[0];
        let updated = model.observe(&[obs(0.7)]).expect("a GP can observe");
        let after = updated.predict(&probe).unwrap()[0];
        assert!((after.mean - 0.09).abs() < 0.01, "the real value 0.09 is now known there: {after:?}");
        assert!(after.stddev < before.stddev / 5.0, "{before:?} → {after:?}");
    }

    #[test]
    fn hyperparameter_searches_follow_the_data_geometrically() {
        let state = |full_fit_at, fit_at| State {
            gp: Hyperparameters { kernel: vec![], names: vec![], log_noise: 0.0 },
            full_fit_at,
            fit_at,
            reuse: false,
        };
        assert_eq!(search_for(14, None), Search::Full, "the first fit searches fully");
        assert_eq!(search_for(15, Some(&state(Some(14), Some(14)))), Search::Warm, "small data: θ every trial");
        assert_eq!(search_for(16, Some(&state(Some(14), Some(15)))), Search::Warm);
        assert_eq!(search_for(41, Some(&state(Some(40), Some(40)))), Search::Reuse, "every other trial at 40");
        assert_eq!(search_for(40, Some(&state(Some(40), Some(40)))), Search::Warm, "no new data: optimise θ again");
        assert_eq!(search_for(17, Some(&state(Some(14), Some(16)))), Search::Full, "20 % more data");
        assert_eq!(search_for(10, Some(&state(Some(14), Some(14)))), Search::Full, "trials were deleted");
        assert_eq!(search_for(104, Some(&state(Some(100), Some(100)))), Search::Reuse, "4 % more data keeps θ");
        assert_eq!(search_for(105, Some(&state(Some(100), Some(100)))), Search::Warm, "5 % more data refits θ");
        assert_eq!(search_for(105, Some(&state(Some(100), None))), Search::Warm, "a state from before fit_at");
        let started = warm_start(Hyperparameters { kernel: vec![], names: vec![], log_noise: 0.0 }, 77);
        let started: State = serde_json::from_value(started.0).unwrap();
        assert_eq!(search_for(77, Some(&started)), Search::Warm, "a chosen θ is optimised from, not kept or replaced");
        let (mut full, mut warm, mut last) = (0, 0, None::<State>);
        for n in 14..=2000 {
            let search = search_for(n, last.as_ref());
            full += usize::from(search == Search::Full);
            warm += usize::from(search == Search::Warm);
            let kept = |f: fn(&State) -> Option<usize>| last.as_ref().and_then(f);
            last = Some(state(
                if search == Search::Full { Some(n) } else { kept(|s| s.full_fit_at) },
                if search == Search::Reuse { kept(|s| s.fit_at) } else { Some(n) },
            ));
        }
        assert!(full < 30, "O(log n) full searches over a study: {full}");
        assert!(full + warm < 200, "O(log n) optimisations of θ over a study: {}", full + warm);
    }

    #[test]
    fn config_is_checked() {
        assert!(GpBanditParams { ucb_beta: Some(-1.0), ..Default::default() }.check().is_err());
        assert!(GpBanditParams { num_candidates: 1, ..Default::default() }.check().is_err());
        let parsed: GpBanditParams = serde_json::from_value(serde_json::json!({"acquisition": "EI", "initialDesignSize": 5})).unwrap();
        assert_eq!(parsed.acquisition, AcquisitionKind::Ei);
        assert!(serde_json::from_value::<GpBanditParams>(serde_json::json!({"acquisiton": "EI"})).is_err());
    }
}
