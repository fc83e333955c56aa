//! `AUTO` (and Vertex's `ALGORITHM_UNSPECIFIED`): the designer chosen from the study's data.
//!
//! No rule on the space alone says when an additive model or a long-length-scale prior helps
//! (docs/journal/benchmarks.md, "High-dimensional designers"), so `AUTO` fits several candidate models of
//! the same trials and proposes from the one that predicts them best:
//!
//! - **Candidates** ([`Candidate`]), in order of preference: on a conditional space `ADD_TREE`
//!   (Ma & Blaschko 2020; the default, ahead of the flat GP on every bo-bench tree problem) and the flat
//!   GP; otherwise `GP_BANDIT` with the weak length-scale prior (the default) and `ADD_GP_UCB`
//!   with learned groups (Kandasamy et al. 2015; from [`MIN_ADDITIVE_PARAMS`] parameters). `GP_BANDIT` with
//!   the dimension-scaled prior (Hvarfner et al. 2024), with learned input warping and with the
//!   SAAS prior (Eriksson & Jankowiak 2021) are compared only when `models` names them (see
//!   [`Candidate::by_default`]). All share one quasi-random initial design (the default's
//!   size), so they fit the same trials. `REMBO` is no candidate: its GPs model only trials in
//!   its embeddings' image, so it cannot be scored on trials another designer chose.
//! - **Criterion** (`criterion`): the log predictive density of each trial at each model's
//!   fitted θ ([`Predictor::self_prediction`]), read off the factor each fit computes anyway and
//!   comparable across kernels — by default `SEQUENTIAL`: each of the later half of the trials
//!   predicted from those before it, the conditional marginal likelihood (Lotfi et al. 2022),
//!   how well the model would have predicted where the search went; or `LOO`: each of the
//!   better half of the trials ([`SCORED_FRACTION`]) predicted from all the others (Rasmussen &
//!   Williams 2006, eq. 5.10–5.12). Every examination compares each candidate with the
//!   default, paired trial by trial: a candidate is chosen when its summed gain over the default
//!   exceeds [`SWITCH_Z`] standard errors and [`MIN_GAIN`] nats, doubled for each change of model
//!   so far, and kept while its gain exceeds [`KEEP_Z`] standard errors; the largest such gain
//!   wins, and with none the default proposes. Once chosen, a structure must go on showing in
//!   the data: a choice measured against itself was never revisited, and `AUTO` kept
//!   `ADD_GP_UCB` on rotated functions after one early examination on few trials
//!   (docs/journal/benchmarks.md, "The held-out suite, second pass").
//! - **Schedule**: every candidate is fitted at the first fit after the design and again each
//!   time the data has grown by [`REEXAMINE_GROWTH`] (O(log n) examinations over a study); in
//!   between only the chosen one is, each warm-started from its own stored state. It all runs
//!   in the fit (the service's background refit), never on a suggestion's path.
//! - **Priors** (transfer learning): over a space without conditions, a study standing on prior
//!   studies compares only the candidates that stand on them (the flat GPs); over a conditional
//!   space `AUTO` takes none, as `ADD_TREE` does not.
//!
//! `GET …/model` shows the chosen model's description with an `auto` object: the choice, the
//! scores of the last examination and when the next one is due.
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `models` | `ADD_TREE` and `GP_BANDIT` on a conditional space, else `GP_BANDIT` and (from 6 parameters) `ADD_GP_UCB` | the candidates compared, the default first: `GP_BANDIT`, `GP_BANDIT_DIMENSION_SCALED`, `GP_BANDIT_INPUT_WARPED`, `GP_BANDIT_SAAS`, `ADD_GP_UCB`, `ADD_TREE` | non-empty |
//! | `criterion` | `SEQUENTIAL` | `SEQUENTIAL` or `LOO` (above) | — |
//! | `initialDesignSize` | the default designer's (`ADD_TREE`'s on a conditional space, else `GP_BANDIT`'s, which a declared `maxNumTrials` holds to a quarter of it) | quasi-random trials first | 1 – 1,000 |
//! | `outputWarping` | each candidate's own | one warp of the objective for every candidate: `NONE`, `YEO_JOHNSON` or `HALF_RANK` | — |
//! | `trustRegion` | `GP_BANDIT`'s own | whether the flat GP candidates search a trust region | — |
//! | `explorationBeta` | none | the flat GP candidates' `explorationBeta`: UCB with this β until the first stall | > 0 |
//! | `hyperparameterSamples` | 0 | θ samples beside the fitted θ for the `GP_BANDIT` and `ADD_TREE` candidates (their own setting; `ADD_GP_UCB` fits one θ) | 0 – 32 |
//!
//! Candidates may differ in their output warp (`GP_BANDIT` and `ADD_GP_UCB` warp the objective by
//! default, `ADD_TREE` does not): each model's densities are of the objective's own values (a
//! warped model's times the warp's slope, [`Predictor::self_prediction`]), so they compare whatever
//! the warp.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::config::{FromConfig, check_range, declared_budget};
use super::gp::{OutputWarping, objective_values};
use super::wrapper::Wrapper;
use super::{
    AddGpUcb, AddTree, ConfigError, Criterion, Designer, FitError, Fitted, GpBandit, Model, ModelState, Problem, Work, add_tree,
    config::build, gp_bandit,
};
use crate::space::SearchSpace;
use crate::space::features::Features;
use crate::study::StudySpec;
use crate::trial::Observation;

/// Fewest parameters for which the additive model is a candidate: below, groups of 3 make one
/// or two groups, a model the flat GP already contains.
pub const MIN_ADDITIVE_PARAMS: usize = 6;

/// θ samples of the `GP_BANDIT_SAAS` candidate unless `hyperparameterSamples` is set: SAAS's
/// posterior is what its shrinkage is meant to be read through (Eriksson & Jankowiak 2021, §4).
pub const SAAS_SAMPLES: usize = 8;

/// The models are compared again once the data has grown by this factor since the last
/// comparison: at 10, 13, 17, 22, 28, 36, … trials.
const REEXAMINE_GROWTH: f64 = 1.25;

/// How many standard errors a challenger's gain in log predictive density under the criterion
/// (summed over the scored trials, paired trial by trial) over the default must exceed for it to be chosen or kept — as model comparisons by
/// expected log predictive density are read (Vehtari, Gelman & Gabry 2017, §5.2). Choosing the
/// best mean alone flipped `ADD_TREE` and the flat GPs at nearly every examination on
/// vgg16_tree and did worse than either (docs/journal/benchmarks.md); even with this test they flipped
/// back and forth, so each change of model doubles the gain the next adoption needs.
const SWITCH_Z: f64 = 2.0;

/// The smallest summed gain in log predictive density (nats) over the default that chooses or keeps a challenger,
/// however consistent: below 4 a difference is small (Sivula, Magnusson & Vehtari 2020), and two
/// priors on the same kernel differ by tiny amounts on every trial alike — a smooth function of
/// 2 parameters gave the dimension-scaled prior +0.46 nats over 25 trials at 10 standard errors.
const MIN_GAIN: f64 = 4.0;

/// How many standard errors a chosen challenger's gain over the default must go on exceeding
/// at each examination for it to be kept (and above 0). Below adoption's bar ([`SWITCH_Z`] and
/// [`MIN_GAIN`], doubled per change), so a choice does not flip on a lead that dips; above 0,
/// so one the data no longer show is left.
const KEEP_Z: f64 = 1.0;

/// A model `AUTO` may choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Candidate {
    /// `GP_BANDIT`, weak length-scale prior.
    GpBandit,
    /// `GP_BANDIT` with `lengthScalePrior: DIMENSION_SCALED`.
    GpBanditDimensionScaled,
    /// `GP_BANDIT` with `inputWarping`: a Kumaraswamy CDF learned per numeric coordinate.
    GpBanditInputWarped,
    /// `GP_BANDIT` with `lengthScalePrior: SAAS` and θ sampled ([`SAAS_SAMPLES`] unless
    /// `hyperparameterSamples` says otherwise): SAASBO's model (Eriksson & Jankowiak 2021).
    GpBanditSaas,
    /// `ADD_GP_UCB`, groups learned.
    AddGpUcb,
    /// `ADD_TREE`.
    AddTree,
}

impl Candidate {
    /// In order of preference: the first that applies is the default, kept until another is
    /// measured better — `ADD_TREE` on a conditional space (ahead of the flat GP on every bo-bench
    /// tree problem), the flat GP with the weak prior otherwise.
    const ALL: [Candidate; 6] = [
        Candidate::AddTree,
        Candidate::GpBandit,
        Candidate::GpBanditDimensionScaled,
        Candidate::GpBanditInputWarped,
        Candidate::GpBanditSaas,
        Candidate::AddGpUcb,
    ];

    /// The name `algorithmConfig.models` and `GET …/model` use.
    pub fn name(self) -> &'static str {
        match self {
            Candidate::GpBandit => "GP_BANDIT",
            Candidate::GpBanditDimensionScaled => "GP_BANDIT_DIMENSION_SCALED",
            Candidate::GpBanditInputWarped => "GP_BANDIT_INPUT_WARPED",
            Candidate::GpBanditSaas => "GP_BANDIT_SAAS",
            Candidate::AddGpUcb => "ADD_GP_UCB",
            Candidate::AddTree => "ADD_TREE",
        }
    }

    /// Whether it models `space`: the tree model only conditional spaces, the additive model only
    /// unconditional ones of [`MIN_ADDITIVE_PARAMS`] parameters or more.
    fn applies(self, space: &SearchSpace) -> bool {
        let conditional = space.params().iter().any(|p| !p.children.is_empty());
        match self {
            Candidate::GpBandit | Candidate::GpBanditDimensionScaled | Candidate::GpBanditInputWarped | Candidate::GpBanditSaas => true,
            Candidate::AddGpUcb => !conditional && space.n_params() >= MIN_ADDITIVE_PARAMS,
            Candidate::AddTree => conditional,
        }
    }

    /// Whether it is compared unless `models` says otherwise: not the dimension-scaled prior,
    /// which both criteria chose over the weak one where it then stalled short of the optimum
    /// (Hartmann-3 and -6, vgg16_tree, Hartmann-6 in D = 100) more often than it helped (Branin
    /// in D = 100; docs/journal/benchmarks.md), nor the input-warped GP, which won the criterion where
    /// it then searched worse (vgg16_tree 76×, Styblinski–Tang-8 in place of the additive model;
    /// docs/journal/benchmarks.md, "Input warping in `AUTO`"), nor the SAAS GP, 27–52× ahead on Branin
    /// hidden in 25 and 100 dimensions but level on Hartmann-6 hidden in 60 and 50 (the
    /// validation half) and behind on the rotated Branin (docs/journal/benchmarks.md, "A SAAS prior").
    fn by_default(self) -> bool {
        !matches!(self, Candidate::GpBanditDimensionScaled | Candidate::GpBanditInputWarped | Candidate::GpBanditSaas)
    }

    /// Whether it stands on prior studies.
    fn takes_priors(self) -> bool {
        self.is_flat_gp()
    }

    /// Whether it is `GP_BANDIT` under some setting.
    fn is_flat_gp(self) -> bool {
        matches!(self, Candidate::GpBandit | Candidate::GpBanditDimensionScaled | Candidate::GpBanditInputWarped | Candidate::GpBanditSaas)
    }

    /// The designer, with `initial` quasi-random trials first (`None`: its own default) and
    /// `AUTO`'s settings for every candidate.
    fn designer(self, spec: &StudySpec, initial: Option<usize>, params: &AutoParams) -> Result<Box<dyn Designer>, ConfigError> {
        let mut config = serde_json::Map::new();
        if let Some(n) = initial {
            config.insert("initialDesignSize".into(), json!(n));
        }
        if let Some(w) = params.output_warping {
            config.insert("outputWarping".into(), serde_json::to_value(w).unwrap_or_default());
        }
        if let Some(t) = params.trust_region
            && self.is_flat_gp()
        {
            config.insert("trustRegion".into(), json!(t));
        }
        if let Some(b) = params.exploration_beta
            && self.is_flat_gp()
        {
            config.insert("explorationBeta".into(), json!(b));
        }
        if let Some(s) = params.hyperparameter_samples
            && (self.is_flat_gp() || self == Candidate::AddTree)
        {
            config.insert("hyperparameterSamples".into(), json!(s));
        }
        match self {
            Candidate::GpBanditDimensionScaled => {
                config.insert("lengthScalePrior".into(), json!("DIMENSION_SCALED"));
            }
            Candidate::GpBanditInputWarped => {
                config.insert("inputWarping".into(), json!(true));
            }
            Candidate::GpBanditSaas => {
                config.insert("lengthScalePrior".into(), json!("SAAS"));
                config.entry("hyperparameterSamples").or_insert(json!(SAAS_SAMPLES));
            }
            Candidate::GpBandit | Candidate::AddGpUcb | Candidate::AddTree => {}
        }
        let spec = StudySpec { algorithm_config: serde_json::Value::Object(config), ..spec.clone() };
        match self {
            Candidate::GpBandit | Candidate::GpBanditDimensionScaled | Candidate::GpBanditInputWarped | Candidate::GpBanditSaas => {
                build::<GpBandit>(&spec)
            }
            Candidate::AddGpUcb => build::<AddGpUcb>(&spec),
            Candidate::AddTree => build::<AddTree>(&spec),
        }
    }
}

/// `algorithmConfig` of `AUTO` (the table above).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AutoParams {
    /// The candidates compared; `None`: every one that applies.
    pub models: Option<Vec<Candidate>>,
    /// Quasi-random trials before any model.
    pub initial_design_size: Option<usize>,
    /// How the models are compared.
    pub criterion: Criterion,
    /// One output warp for every candidate (`None`: each its own default).
    pub output_warping: Option<OutputWarping>,
    /// Whether the flat GP candidates search a trust region (`None`: their default).
    pub trust_region: Option<bool>,
    /// The flat GP candidates' β of UCB before the first stall (`None`: no such phase).
    pub exploration_beta: Option<f64>,
    /// θ samples for the `GP_BANDIT` and `ADD_TREE` candidates (`None`: their default).
    pub hyperparameter_samples: Option<usize>,
}

/// The `AUTO` designer: candidate designers and which of them a study's data favours.
pub struct Auto {
    criterion: Criterion,
    /// The candidates, the default first.
    candidates: Vec<(Candidate, Box<dyn Designer>)>,
    /// The same without the initial design fixed, for a study on prior studies (whose designers
    /// shorten the design themselves): the candidates that stand on priors.
    with_priors: Vec<(Candidate, Box<dyn Designer>)>,
}

impl FromConfig for Auto {
    type Params = AutoParams;

    fn new(params: AutoParams, space: &SearchSpace) -> Result<Auto, ConfigError> {
        Auto::within(params, space, None)
    }

    /// The candidates' shared design reads the study's declared budget.
    fn for_study(params: AutoParams, spec: &StudySpec) -> Result<Auto, ConfigError> {
        Auto::within(params, &spec.space, declared_budget(spec))
    }
}

impl Auto {
    /// `AUTO` on `space` for a study that declares it will run `budget` trials (or does not).
    fn within(params: AutoParams, space: &SearchSpace, budget: Option<usize>) -> Result<Auto, ConfigError> {
        // A designer needs only the space to be built; the spec's other fields are the fit's.
        let spec = StudySpec::new("objective", crate::study::Goal::Maximize, space.clone(), "AUTO");
        let conditional = space.params().iter().any(|p| !p.children.is_empty());
        let chosen: Vec<Candidate> = match params.models.clone() {
            None => Candidate::ALL.into_iter().filter(|c| c.by_default() && c.applies(space)).collect(),
            Some(models) => {
                if models.is_empty() {
                    return Err(ConfigError::Invalid { field: "models".into(), reason: "name at least one candidate model".into() });
                }
                for m in &models {
                    if !m.applies(space) {
                        return Err(ConfigError::Invalid {
                            field: "models".into(),
                            reason: format!(
                                "{} does not model this space; {}",
                                m.name(),
                                match m {
                                    Candidate::AddTree => "ADD_TREE is for conditional spaces".to_owned(),
                                    _ =>
                                        format!("ADD_GP_UCB is for spaces without conditions of at least {MIN_ADDITIVE_PARAMS} parameters"),
                                }
                            ),
                        });
                    }
                }
                let mut unique = Vec::with_capacity(models.len());
                for m in models {
                    if !unique.contains(&m) {
                        unique.push(m);
                    }
                }
                unique
            }
        };
        // (Not `trustRegion`: a study of several metrics sets it for every `AUTO`, whatever its
        // models.)
        if params.exploration_beta.is_some() && !chosen.iter().any(|c| c.is_flat_gp()) {
            return Err(ConfigError::Invalid {
                field: "explorationBeta".into(),
                reason: "only the GP_BANDIT candidates take it; none is among the models".into(),
            });
        }
        if params.hyperparameter_samples.is_some() && !chosen.iter().any(|c| c.is_flat_gp() || *c == Candidate::AddTree) {
            return Err(ConfigError::Invalid {
                field: "hyperparameterSamples".into(),
                reason: "only the GP_BANDIT and ADD_TREE candidates sample θ; none is among the models".into(),
            });
        }
        let initial = match params.initial_design_size {
            Some(n) => {
                check_range("initialDesignSize", n, 1, 1000)?;
                n
            }
            None if conditional => add_tree::default_initial_design(space),
            None => gp_bandit::default_initial_design(Features::new(space).dim(), budget),
        };
        let build_all = |initial: Option<usize>, keep: &dyn Fn(Candidate) -> bool| {
            chosen
                .iter()
                .filter(|c| keep(**c))
                .map(|&c| Ok((c, c.designer(&spec, initial, &params)?)))
                .collect::<Result<Vec<_>, ConfigError>>()
        };
        let candidates = build_all(Some(initial), &|_| true)?;
        // On a conditional space `ADD_TREE` leads and stands on no priors: no priors there.
        let with_priors = if conditional { Vec::new() } else { build_all(params.initial_design_size, &Candidate::takes_priors)? };
        Ok(Auto { criterion: params.criterion, candidates, with_priors })
    }
}

impl Criterion {
    fn describe(self) -> &'static str {
        match self {
            Criterion::Sequential => {
                "log predictive density of each of the later half of the trials given those before it: per trial (mean), and summed against the default model (difference, standard error); another model is chosen when ahead of the default by 2 standard errors and 4 nats, doubled for each change so far, and kept while ahead by 1 standard error"
            }
            Criterion::Loo => {
                "leave-one-out log predictive density of the better half of the trials: per trial (mean), and summed against the default model (difference, standard error); another model is chosen when ahead of the default by 2 standard errors and 4 nats, doubled for each change so far, and kept while ahead by 1 standard error"
            }
        }
    }
}

/// What is stored between fits.
#[derive(Default, Serialize, Deserialize)]
struct State {
    /// The model proposing, once one has been fitted.
    chosen: Option<Candidate>,
    /// Trials at the last examination.
    examined_at: usize,
    /// How many times the choice has changed: each change doubles the gain the next one needs.
    #[serde(default)]
    switches: u32,
    /// Each candidate's score at the last examination (`None`: it could not be fitted).
    scores: BTreeMap<Candidate, Option<Score>>,
    /// Each candidate's own stored state.
    states: BTreeMap<Candidate, ModelState>,
}

/// A candidate's log predictive density of the scored trials at an examination.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Score {
    /// Per trial, averaged.
    mean: f64,
    /// Summed over the trials, its difference from the default model's, and that difference's
    /// standard error (paired by trial); absent for the default itself.
    difference: Option<(f64, f64)>,
}

/// The fraction of the trials, the best by the objective, on which the models are compared.
/// Over all trials, the smoother models (the dimension-scaled prior, the additive model) won by
/// predicting the many poor trials of the design well, and then stalled short of the optimum on
/// Hartmann-3, Hartmann-6 and vgg16_tree (docs/journal/benchmarks.md); near the best trials is where a
/// model's mistakes cost the search.
const SCORED_FRACTION: f64 = 0.5;

/// The indices of the best [`SCORED_FRACTION`] of `values` (maximised), at least 2.
fn better_trials(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    order.truncate(((SCORED_FRACTION * values.len() as f64).ceil() as usize).max(2).min(values.len()));
    order.sort_unstable();
    order
}

/// The sum over trials of `a − b` and its standard error, for densities of the same trials.
fn paired_difference(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let n = a.len();
    if n != b.len() || n < 2 {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let mean = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean * n as f64, (n as f64 * var).sqrt()))
}

impl Auto {
    fn candidates(&self, problem: &Problem) -> &[(Candidate, Box<dyn Designer>)] {
        if problem.priors.is_empty() || self.with_priors.is_empty() { &self.candidates } else { &self.with_priors }
    }

    fn fit_from(
        &self,
        problem: &Problem,
        history: &[Observation],
        warm: Option<&ModelState>,
        restore: bool,
        rng: &mut dyn Rng,
    ) -> Result<Fitted, FitError> {
        let candidates = self.candidates(problem);
        let mut state: State = warm.and_then(|s| serde_json::from_value(s.0.clone()).ok()).unwrap_or_default();
        let values: Vec<f64> = objective_values(&problem.spec, history).1.into_iter().flatten().collect();
        let n = values.len();
        let current = state.chosen.and_then(|c| candidates.iter().find(|(k, _)| *k == c));
        let due = n < state.examined_at || n as f64 >= REEXAMINE_GROWTH * state.examined_at as f64;
        // Between examinations (and to take up a stored fit) only the chosen model is fitted.
        if let Some((chosen, designer)) = current
            && (restore || !due)
        {
            let own = state.states.get(chosen).cloned();
            let fitted = match (&own, restore) {
                (Some(s), true) => designer.restore(problem, history, s, rng)?,
                _ => designer.fit(problem, history, own.as_ref(), rng)?,
            };
            state.states.insert(*chosen, fitted.state);
            return Ok(self.wrap(fitted.model, state));
        }
        // An examination: every candidate fitted and scored.
        let mut fits = Vec::with_capacity(candidates.len());
        let mut failed = Vec::new();
        for (candidate, designer) in candidates {
            match designer.fit(problem, history, state.states.get(candidate), rng) {
                Ok(fitted) => {
                    // One density per trial, in history order, or the model is not comparable.
                    let densities = fitted
                        .model
                        .predictor()
                        .and_then(|p| p.self_prediction(self.criterion))
                        .filter(|v| n > 0 && v.len() == n && v.iter().all(|x| x.is_finite()));
                    state.states.insert(*candidate, fitted.state);
                    fits.push((*candidate, fitted.model, densities));
                }
                Err(_) => failed.push(*candidate),
            }
        }
        // The model to beat at every examination: the default (the first candidate with a
        // score). A challenger is adopted when it leads it by the threshold, doubled for each
        // change of model so far, and kept only while it leads by the threshold itself:
        // otherwise the default proposes again. A structure is chosen while the data show it,
        // not for ever once a few trials seemed to.
        let Some(default) = fits.iter().position(|(_, _, densities)| densities.is_some()) else {
            // No model yet (the initial design), or none could be fitted: the default's answer.
            let Some((_, model, _)) = fits.into_iter().next() else {
                return Err(FitError::Numerical("no candidate model of AUTO could be fitted".into()));
            };
            return Ok(Fitted { model, state: ModelState(serde_json::to_value(&state).unwrap_or_default()) });
        };
        // Scored on the better trials only, where the acquisition works.
        let scored = match self.criterion {
            Criterion::Loo => better_trials(&values),
            Criterion::Sequential => (n / 2..n).collect(),
        };
        let pick = |densities: &[f64]| -> Vec<f64> { scored.iter().map(|&i| densities[i]).collect() };
        let base = pick(fits[default].2.as_deref().unwrap_or_default());
        let mut scores: BTreeMap<Candidate, Option<Score>> = failed.into_iter().map(|c| (c, None)).collect();
        let mut chosen = default;
        let mut best_gain = 0.0;
        for (i, (candidate, _, densities)) in fits.iter().enumerate() {
            let Some(densities) = densities else {
                scores.insert(*candidate, None);
                continue;
            };
            let densities = pick(densities);
            let difference = if i == default { None } else { paired_difference(&densities, &base) };
            let keeps = state.chosen == Some(*candidate);
            let threshold = |se: f64| {
                if keeps { KEEP_Z * se } else { (SWITCH_Z * se).max(MIN_GAIN) * 2f64.powi(state.switches.min(30) as i32) }
            };
            if let Some((gain, se)) = difference
                && gain > threshold(se)
                && gain > best_gain
            {
                (chosen, best_gain) = (i, gain);
            }
            scores.insert(*candidate, Some(Score { mean: densities.iter().sum::<f64>() / densities.len() as f64, difference }));
        }
        let (candidate, model, _) = fits.swap_remove(chosen);
        if state.chosen.is_some_and(|c| c != candidate) {
            state.switches += 1;
        }
        state.chosen = Some(candidate);
        state.examined_at = n;
        state.scores = scores;
        Ok(self.wrap(model, state))
    }

    fn wrap(&self, inner: Arc<dyn Model>, state: State) -> Fitted {
        let chosen = state.chosen.map(Candidate::name);
        let about = json!({
            "chosen": chosen,
            "criterion": self.criterion.describe(),
            "changes": state.switches,
            "scores": state.scores.iter().map(|(c, s)| (c.name().to_owned(), json!(s))).collect::<serde_json::Map<_, _>>(),
            "examinedAt": state.examined_at,
            "nextExamination": (REEXAMINE_GROWTH * state.examined_at as f64).ceil() as usize,
        });
        Fitted {
            model: Arc::new(AutoModel { inner, about: Arc::new(about) }),
            state: ModelState(serde_json::to_value(&state).unwrap_or_default()),
        }
    }
}

impl Designer for Auto {
    fn fit(&self, problem: &Problem, history: &[Observation], warm: Option<&ModelState>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit_from(problem, history, warm, false, rng)
    }

    /// The chosen model at its stored state; no examination.
    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit_from(problem, history, Some(state), true, rng)
    }

    fn takes_priors(&self) -> bool {
        !self.with_priors.is_empty()
    }

    fn work(&self, space: &SearchSpace) -> Work {
        self.candidates.iter().fold(Work::default(), |w, (_, d)| {
            let o = d.work(space);
            Work { candidates: w.candidates.max(o.candidates), structure_evaluations: w.structure_evaluations.max(o.structure_evaluations) }
        })
    }
}

/// The chosen candidate's model, its description saying why it was chosen.
struct AutoModel {
    inner: Arc<dyn Model>,
    about: Arc<serde_json::Value>,
}

impl Wrapper for AutoModel {
    fn inner(&self) -> &Arc<dyn Model> {
        &self.inner
    }

    fn rewrap(&self, inner: Arc<dyn Model>) -> Arc<dyn Model> {
        Arc::new(AutoModel { inner, about: self.about.clone() })
    }

    fn describe_around(&self, mut inner: serde_json::Value) -> serde_json::Value {
        if let serde_json::Value::Object(map) = &mut inner {
            map.insert("auto".into(), (*self.about).clone());
            inner
        } else {
            json!({"model": inner, "auto": *self.about})
        }
    }

    fn own_bytes(&self) -> usize {
        // What AUTO says of its choice (a JSON value takes several times its text).
        8 * self.about.to_string().len() + (64 << 10)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::{designer_for, testing};
    use crate::study::Goal;
    use crate::trial::{Assignment, Outcome, ParamValue};

    fn box_space(d: usize) -> SearchSpace {
        testing::fixtures::unit_cube(d)
    }

    fn observe(points: &[Vec<f64>], f: impl Fn(&[f64]) -> f64) -> Vec<Observation> {
        points
            .iter()
            .map(|x| Observation {
                objective_sd: None,
                assignment: Assignment::new(x.iter().enumerate().map(|(i, v)| (format!("x{i}").into(), ParamValue::Float(*v))).collect()),
                outcome: Outcome::Measured([("y".to_owned(), f(x))].into_iter().collect()),
            })
            .collect()
    }

    fn spec(space: SearchSpace, config: serde_json::Value) -> StudySpec {
        let mut spec = StudySpec::new("y", Goal::Minimize, space, "AUTO");
        spec.algorithm_config = config;
        spec
    }

    #[test]
    fn hyperparameter_samples_go_to_the_candidates_that_sample() {
        let space = crate::designer::testing::fixtures::all_types();
        let spec =
            |config| StudySpec { algorithm_config: config, ..StudySpec::new("f", crate::study::Goal::Maximize, space.clone(), "AUTO") };
        assert!(crate::designer::designer_for(&spec(serde_json::json!({"hyperparameterSamples": 8}))).is_ok());
        let refused = |config| crate::designer::designer_for(&spec(config)).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused(serde_json::json!({"hyperparameterSamples": 33})).contains("hyperparameterSamples"));
        let additive = serde_json::json!({"hyperparameterSamples": 8, "models": ["ADD_GP_UCB"]});
        assert!(Candidate::AddGpUcb.applies(&space), "the set-up: seven parameters without conditions");
        assert!(refused(additive).contains("only the GP_BANDIT and ADD_TREE candidates"));
    }

    #[test]
    fn auto_conforms() {
        testing::conformance("AUTO");
    }

    /// On an additive function of 12 parameters in 4 groups of 3, once the additive model has
    /// learned the groups (its search is random: from a cold start on these 200 trials it finds
    /// them about half the time, and with this seed it does, ahead of the flat GP by ~0.9 nats
    /// per trial), `AUTO` chooses it and says why; the choice survives a restore, and between
    /// examinations only the chosen model is fitted.
    #[test]
    fn auto_chooses_the_model_that_predicts_the_trials() {
        let d = 12;
        let mut rng = StdRng::seed_from_u64(7);
        let points: Vec<Vec<f64>> = (0..200).map(|_| (0..d).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
        let additive = |x: &[f64]| x.chunks(3).map(|g| (6.0 * g[0] * g[1]).sin() + (g[1] - g[2]).powi(2) * 4.0).sum::<f64>();
        let history = observe(&points, additive);
        let study = spec(box_space(d), serde_json::Value::Null);
        let designer = designer_for(&study).unwrap();
        let problem = Problem { spec: study, seed: 1, priors: Vec::new() };
        let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
        let about = fitted.model.describe()["auto"].clone();
        let scores = about["scores"].as_object().unwrap().clone();
        assert_eq!(scores.len(), 2, "flat and additive: {about}");
        assert!(scores.values().all(|s| s["mean"].as_f64().is_some_and(f64::is_finite)), "{about}");
        let (gain, se) = (scores["ADD_GP_UCB"]["difference"][0].as_f64().unwrap(), scores["ADD_GP_UCB"]["difference"][1].as_f64().unwrap());
        assert!(gain > 2.0 * se, "ahead of the flat GP by more than 2 standard errors: {about}");
        assert_eq!(about["chosen"], "ADD_GP_UCB", "{about}");
        assert_eq!(about["examinedAt"], 200);
        // Restored on the same trials: the same model, no examination.
        let restored = designer.restore(&problem, &history, &fitted.state, &mut rng).unwrap();
        assert_eq!(restored.model.describe()["auto"], about);
        // One more trial is before the next examination: the chosen model alone is fitted.
        let more = observe(&[vec![0.5; d]], additive);
        let longer: Vec<Observation> = history.iter().chain(&more).cloned().collect();
        let next = designer.fit(&problem, &longer, Some(&fitted.state), &mut rng).unwrap();
        assert_eq!(next.model.describe()["auto"]["examinedAt"], 200, "not re-examined at 201");
        let at = |state: &ModelState| serde_json::from_value::<State>(state.0.clone()).unwrap();
        assert_eq!(
            at(&next.state).states[&Candidate::GpBandit],
            at(&fitted.state).states[&Candidate::GpBandit],
            "the others are not refitted"
        );
        // Grown by a quarter: examined again.
        let grown: Vec<Vec<f64>> = (0..50).map(|_| (0..d).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
        let longer: Vec<Observation> = longer.into_iter().chain(observe(&grown, additive)).collect();
        let again = designer.fit(&problem, &longer, Some(&next.state), &mut rng).unwrap();
        assert_eq!(again.model.describe()["auto"]["examinedAt"], 251);
        assert_eq!(again.model.describe()["auto"]["chosen"], "ADD_GP_UCB");
    }

    /// A challenger once chosen is kept only while the data go on showing it: a study whose
    /// `AUTO` chose `ADD_GP_UCB`, examined on a function in which every pair of parameters
    /// interacts, goes back to the flat GP (a change counted), the additive model's gain over it
    /// short of [`KEEP_Z`] standard errors.
    #[test]
    fn a_structure_the_data_no_longer_show_is_left_for_the_default() {
        let d = 8;
        let mut rng = StdRng::seed_from_u64(11);
        let points: Vec<Vec<f64>> = (0..80).map(|_| (0..d).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
        let history = observe(&points, |x| {
            let s = x.iter().sum::<f64>();
            (3.0 * s).sin() + (s - 4.0).powi(2)
        });
        let study = spec(box_space(d), serde_json::Value::Null);
        let designer = designer_for(&study).unwrap();
        let problem = Problem { spec: study, seed: 1, priors: Vec::new() };
        let earlier = State { chosen: Some(Candidate::AddGpUcb), examined_at: 30, switches: 1, ..State::default() };
        let warm = ModelState(serde_json::to_value(&earlier).unwrap());
        let fitted = designer.fit(&problem, &history, Some(&warm), &mut rng).unwrap();
        let about = fitted.model.describe()["auto"].clone();
        assert_eq!(about["examinedAt"], 80, "{about}");
        let (gain, se) = (
            about["scores"]["ADD_GP_UCB"]["difference"][0].as_f64().unwrap(),
            about["scores"]["ADD_GP_UCB"]["difference"][1].as_f64().unwrap(),
        );
        assert!(gain <= KEEP_Z * se, "the additive model still leads: {about}");
        assert_eq!(about["chosen"], "GP_BANDIT", "{about}");
        assert_eq!(about["changes"], 2, "{about}");
    }

    /// On a smooth function of 2 parameters the flat GP is kept against the dimension-scaled
    /// prior when both are compared, which is not clearly better; by default it is the only
    /// candidate there.
    #[test]
    fn a_low_dimensional_smooth_function_keeps_the_flat_gp() {
        let mut rng = StdRng::seed_from_u64(2);
        let points: Vec<Vec<f64>> = (0..25).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
        let history = observe(&points, |x| (5.0 * x[0]).sin() + (3.0 * x[1]).cos());
        let study = spec(box_space(2), json!({"models": ["GP_BANDIT", "GP_BANDIT_DIMENSION_SCALED"]}));
        let fitted =
            designer_for(&study).unwrap().fit(&Problem { spec: study, seed: 1, priors: Vec::new() }, &history, None, &mut rng).unwrap();
        let about = fitted.model.describe()["auto"].clone();
        assert_eq!(about["scores"].as_object().unwrap().len(), 2, "{about}");
        assert_eq!(about["chosen"], "GP_BANDIT", "{about}");
        let study = spec(box_space(2), serde_json::Value::Null);
        let fitted =
            designer_for(&study).unwrap().fit(&Problem { spec: study, seed: 1, priors: Vec::new() }, &history, None, &mut rng).unwrap();
        let about = fitted.model.describe()["auto"].clone();
        assert_eq!(about["scores"].as_object().unwrap().keys().collect::<Vec<_>>(), ["GP_BANDIT"], "{about}");
    }

    /// The input-warped flat GP is compared when `models` names it, and not by default.
    #[test]
    fn the_input_warped_gp_is_compared_when_named() {
        let mut rng = StdRng::seed_from_u64(3);
        let points: Vec<Vec<f64>> = (0..25).map(|_| (0..2).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
        // Fast near x0 = 1, slow elsewhere: what a learned warp of x0 straightens.
        let history = observe(&points, |x| (8.0 * x[0].powi(4)).sin() + x[1]);
        let study = spec(box_space(2), json!({"models": ["GP_BANDIT", "GP_BANDIT_INPUT_WARPED"]}));
        let fitted =
            designer_for(&study).unwrap().fit(&Problem { spec: study, seed: 1, priors: Vec::new() }, &history, None, &mut rng).unwrap();
        let about = fitted.model.describe()["auto"].clone();
        let scores = about["scores"].as_object().unwrap();
        assert!(scores.contains_key("GP_BANDIT_INPUT_WARPED") && scores.contains_key("GP_BANDIT"), "{about}");
        assert!(scores.values().all(|s| s["mean"].as_f64().is_some_and(f64::is_finite)), "{about}");
        let study = spec(box_space(2), serde_json::Value::Null);
        let fitted =
            designer_for(&study).unwrap().fit(&Problem { spec: study, seed: 1, priors: Vec::new() }, &history, None, &mut rng).unwrap();
        assert!(!fitted.model.describe()["auto"]["scores"].as_object().unwrap().contains_key("GP_BANDIT_INPUT_WARPED"));
    }

    /// The SAAS GP is compared when `models` names it, with [`SAAS_SAMPLES`] θ samples unless
    /// `hyperparameterSamples` says otherwise; on a function of 2 of 20 coordinates it predicts
    /// the trials better than the flat GP with the weak prior.
    #[test]
    fn the_saas_gp_is_compared_when_named_and_samples_its_hyperparameters() {
        let d = 20;
        let mut rng = StdRng::seed_from_u64(5);
        let points: Vec<Vec<f64>> = (0..40).map(|_| (0..d).map(|_| rand::RngExt::random::<f64>(&mut rng)).collect()).collect();
        let history = observe(&points, |x| (6.0 * x[3]).sin() + 2.0 * (x[11] - 0.3).powi(2));
        for (config, samples) in [
            (json!({"models": ["GP_BANDIT", "GP_BANDIT_SAAS"]}), SAAS_SAMPLES),
            (json!({"models": ["GP_BANDIT", "GP_BANDIT_SAAS"], "hyperparameterSamples": 2}), 2),
        ] {
            let study = spec(box_space(d), config);
            let problem = Problem { spec: study.clone(), seed: 1, priors: Vec::new() };
            let fitted = designer_for(&study).unwrap().fit(&problem, &history, None, &mut rng).unwrap();
            let about = fitted.model.describe()["auto"].clone();
            let state = serde_json::from_value::<State>(fitted.state.0.clone()).unwrap();
            assert_eq!(testing::stored_samples(&state.states[&Candidate::GpBanditSaas].0), Some(samples), "{about}");
            let mean = |c: &str| about["scores"][c]["mean"].as_f64().unwrap();
            assert!(mean("GP_BANDIT_SAAS") > mean("GP_BANDIT"), "{about}");
        }
        let study = spec(box_space(d), serde_json::Value::Null);
        let fitted =
            designer_for(&study).unwrap().fit(&Problem { spec: study, seed: 1, priors: Vec::new() }, &history, None, &mut rng).unwrap();
        assert!(!fitted.model.describe()["auto"]["scores"].as_object().unwrap().contains_key("GP_BANDIT_SAAS"), "not by default");
    }

    #[test]
    fn its_settings_are_checked_naming_the_field() {
        let err = |space: SearchSpace, config| designer_for(&spec(space, config)).err().expect("refused").to_string();
        let e = err(box_space(3), json!({"models": ["ADD_GP_UCB"]}));
        assert!(e.contains("models") && e.contains("at least 6"), "{e}");
        let e = err(box_space(8), json!({"models": ["ADD_TREE"]}));
        assert!(e.contains("conditional"), "{e}");
        let e = err(box_space(8), json!({"models": []}));
        assert!(e.contains("at least one"), "{e}");
        let e = err(box_space(8), json!({"models": ["REMBO"]}));
        assert!(e.contains("REMBO"), "{e}");
        let e = err(box_space(8), json!({"initialDesignSize": 0}));
        assert!(e.contains("initialDesignSize"), "{e}");
        let e = err(box_space(8), json!({"numCandidates": 10}));
        assert!(e.contains("numCandidates"), "{e}");
        assert!(designer_for(&spec(box_space(8), json!({"models": ["GP_BANDIT", "ADD_GP_UCB"], "initialDesignSize": 12}))).is_ok());
        // The flat GP candidates' exploring start: refused with none of them among the models,
        // checked by them otherwise.
        let e = err(box_space(8), json!({"models": ["ADD_GP_UCB"], "explorationBeta": 1.0}));
        assert!(e.contains("explorationBeta") && e.contains("GP_BANDIT"), "{e}");
        assert!(designer_for(&spec(box_space(8), json!({"explorationBeta": 1.0}))).is_ok());
        let e = err(box_space(8), json!({"explorationBeta": 0.0}));
        assert!(e.contains("explorationBeta"), "{e}");
        // Priors: over a flat space (its flat GPs stand on them), not over a conditional one.
        assert!(designer_for(&spec(box_space(8), serde_json::Value::Null)).unwrap().takes_priors());
        assert!(!designer_for(&spec(testing::fixtures::optimizer_tree(), serde_json::Value::Null)).unwrap().takes_priors());
    }
}
