//! `ADD_GP_UCB`: Add-GP-UCB (Kandasamy, Schneider & Póczos 2015) — the objective
//! modelled as a sum of independent functions of disjoint groups of parameters, and the
//! acquisition maximised group by group.
//!
//! - **Model**: one GP with the additive kernel [`GroupAdditive`] over the groups (squared
//!   exponential by default, as the paper; one length scale for all groups as Kandasamy et al. 2015's code
//!   has it, or one per variable shared across groupings; the amplitude split by group size),
//!   one Cholesky of the summed Gram matrix; per-group posteriors μ_j, σ_j (Kandasamy et al. 2015 eq. 5) from
//!   `Gp::predict_component`.
//! - **Prior mean** (our departure from Kandasamy et al. 2015's code, which uses the
//!   observations' mean): the worst observation. At the mean, a group's unexplored corners score
//!   as well as average and — the sum of M per-group σ_j overstating σ by up to √M — the
//!   group-wise acquisition leaves the incumbent for them (measured: docs/journal/benchmarks.md,
//!   "High-dimensional designers"). `priorMean: MEAN` restores the paper's.
//! - **Acquisition** (eq. 6): `φ̃_t(x) = Σ_j μ_j(x^(j)) + √β_j σ_j(x^(j))` with the practical
//!   `β_j = 0.2 · d_j · ln(2t)` (§4.4; `d_j` the group's own dimension, `t` the number of
//!   observations + 1), each term maximised on its own group's coordinates
//!   (`optimize::subspace`) and the pieces concatenated (Alg. 1) — never a D-dimensional search.
//!   Per-group candidates follow the paper's budget, `0.9 · min(5000, 100 D) / M` (B7).
//!   `acquisition: LOG_EI` instead maximises the log expected improvement of the whole sum over
//!   the whole space, as `GP_BANDIT` does: better where the groups are few and large, worse
//!   where they are many and small, so the paper's acquisition stays the default (measured:
//!   docs/journal/benchmarks.md, "The held-out suite, third pass").
//! - **Decomposition**: given in `algorithmConfig` (`groups`: lists of parameter ids; parameters
//!   in no group are drawn uniformly, B6), or learned ("Add-d/M", `groupSize` d, M = ⌈D/d⌉
//!   groups): every `relearnEvery` (N_cyc) observations the marginal likelihood at the current
//!   θ scores the current grouping and `numPartitions` random ones (random permutations cut into
//!   consecutive chunks, Kandasamy et al. 2015's code "partialLearn": max(5, D) of them and the
//!   current one kept, so the likelihood never drops), then — our addition — a hill climb over
//!   swaps of two parameters between groups, and θ is optimised again for the winner. Since θ
//!   does not depend on the grouping ([`GroupAdditive`]), scoring a candidate costs one
//!   factorisation. Groupings are always scored under one shared length scale: with
//!   `lengthScales: PER_PARAMETER` a shared-ℓ GP is fitted for the search alone, because
//!   per-parameter length scales fitted to a wrong grouping score the others unfairly. The swaps
//!   are what finds a grouping: random partitions alone rarely beat the current one.
//! - **Design**: the first `initialDesignSize` trials (10, Kandasamy et al. 2015's code) are quasi-random.
//! - **Pending trials and batches**: kriging-believer fantasies in the shared GP (the
//!   paper does not treat batches); a proposal equal to a taken one is moved by a small
//!   Gaussian step (Kandasamy et al. 2015's code guard).
//! - **Spaces**: numeric and categorical parameters (a categorical's distance is 0/1), no
//!   conditions — a conditional space is `ADD_TREE`'s, and the config check says so.
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `groups` | learned | the decomposition, lists of parameter ids, disjoint | — |
//! | `groupSize` | 3 | d of Add-d/M when learning | 1 – D |
//! | `relearnEvery` | 25 | N_cyc: observations between decomposition searches | 1 – 10,000 |
//! | `numPartitions` | max(5, D) | random groupings scored per search | 1 – 1,000 |
//! | `swapsPerParameter` | 10 | pair swaps tried per search, per parameter | 0 – 1,000 |
//! | `lengthScales` | `SHARED` | one for all (Kandasamy et al. 2015's code), or `PER_PARAMETER` | — |
//! | `priorMean` | `WORST` | the GP's constant prior mean: `WORST` observation, or `MEAN` (the paper) | — |
//! | `kernel` | `SQUARED_EXP` | `SQUARED_EXP` (the paper) or `MATERN52` | — |
//! | `acquisition` | `GROUP_UCB` | `GROUP_UCB` (the paper's Alg. 1) or `LOG_EI` (above) | — |
//! | `ucbBeta` | schedule | a constant β for every group (`GROUP_UCB` only) | > 0 |
//! | `initialDesignSize` | 10 | quasi-random trials before the GP | 1 – 1,000 |
//! | `numCandidates` | 0.9·min(5000, 100D)/M, within [32, 1000]; 256 under `LOG_EI` | Sobol candidates per group, or of the whole space under `LOG_EI` | 16 – 100,000 |
//! | `numRestarts` | 2 | random restarts of the hyperparameter fit | 0 – 50 |
//! | `outputWarping` | `YEO_JOHNSON` | `NONE`, `YEO_JOHNSON` or `HALF_RANK`: the monotone warp of the objective the GP is fitted to (`gp::output_warp`) | — |

use std::collections::HashSet;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};

use super::config::{FromConfig, check_beta, check_range, refuse_conditional};
use super::gp::schedule::fit_from_start;
use super::gp::search::{ACQUISITION_ITERATIONS, DEFAULT_CANDIDATES, maximize_acquisition};
use super::gp::{Effort, GpModel, Member, OutputWarping, Posterior, PriorMean, Proposer, Start, Training, fit_gp};
use super::{ConfigError, Designer, FitError, Fitted, Problem, QuasiRandomSearch};
use crate::acquisition::{Acquisition, BetaSchedule};
use crate::gp::{Gp, fit_subset, log_marginal_likelihood};
use crate::kernel::{GroupAdditive, Kernel, LENGTH_SCALE_BOUNDS, Matern52Profile, SquaredExpProfile};
use crate::optimize::mixed::{MixedConfig, standard_normal};
use crate::optimize::subspace::{self, Coordinate, SubspaceConfig};
use crate::space::SearchSpace;
use crate::space::features::{FeatureKind, Features};
use crate::trial::{Assignment, Observation};

/// `algorithmConfig` of `ADD_GP_UCB` (the table above).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AddGpUcbParams {
    /// A known decomposition: disjoint lists of parameter ids.
    pub groups: Option<Vec<Vec<String>>>,
    /// d of Add-d/M, when the decomposition is learned.
    pub group_size: Option<usize>,
    /// N_cyc.
    pub relearn_every: usize,
    /// Random groupings scored per search (default max(5, D)).
    pub num_partitions: Option<usize>,
    /// Pair swaps tried per search, per parameter.
    pub swaps_per_parameter: usize,
    /// The kernel of each group.
    pub kernel: KernelChoice,
    /// One length scale for all parameters, or one each.
    pub length_scales: LengthScales,

    /// A constant β instead of the schedule.
    pub ucb_beta: Option<f64>,
    /// How the next point is chosen from the additive model.
    pub acquisition: AddAcquisition,
    /// Where the GP's constant prior mean sits.
    pub prior_mean: PriorMean,
    /// Quasi-random trials before the GP.
    pub initial_design_size: usize,
    /// Sobol candidates per group.
    pub num_candidates: Option<usize>,
    /// Random restarts of the hyperparameter fit.
    pub num_restarts: usize,
    /// The warp of the objective the GP is fitted to.
    pub output_warping: OutputWarping,
}

/// How many length scales the additive kernel has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LengthScales {
    /// One per parameter, shared by every grouping (the grouping search still scores under one
    /// shared length scale, fitted for it).
    PerParameter,
    /// One for all (Kandasamy et al. 2015's code): the default.
    Shared,
}

/// How the next point is chosen from the additive model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AddAcquisition {
    /// Each group's UCB maximised on its own coordinates (Kandasamy et al. 2015's Alg. 1): the default.
    GroupUcb,
    /// log expected improvement of the whole sum over the best trial, maximised over the whole
    /// space as `GP_BANDIT` does (`optimize::mixed`).
    LogEi,
}

/// The groups' kernel: the paper's squared exponential by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum KernelChoice {
    /// Squared exponential (Kandasamy et al. 2015 eq. 2).
    #[default]
    SquaredExp,
    /// Matérn-5/2.
    Matern52,
}

impl Default for AddGpUcbParams {
    fn default() -> Self {
        AddGpUcbParams {
            groups: None,
            group_size: None,
            relearn_every: 25,
            num_partitions: None,
            swaps_per_parameter: 10,
            kernel: KernelChoice::SquaredExp,
            length_scales: LengthScales::Shared,
            ucb_beta: None,
            acquisition: AddAcquisition::GroupUcb,
            prior_mean: PriorMean::Worst,
            initial_design_size: 10,
            num_candidates: None,
            num_restarts: 2,
            output_warping: OutputWarping::YeoJohnson,
        }
    }
}

/// The default d of Add-d/M: Kandasamy et al. 2015 found small groups (d = 3–5) best on every synthetic
/// problem whose true groups are larger or unknown (§5).
const DEFAULT_GROUP_SIZE: usize = 3;

/// Where the decomposition comes from.
#[derive(Clone, Debug)]
enum Decomposition {
    /// Given: groups of feature dimensions; the rest are loose.
    Known(Vec<Vec<usize>>),
    /// Learned with groups of at most this size.
    Learned(usize),
}

/// The Add-GP-UCB designer.
pub struct AddGpUcb {
    params: AddGpUcbParams,
    decomposition: Decomposition,
}

impl FromConfig for AddGpUcb {
    type Params = AddGpUcbParams;

    /// Checks `params` against `space`.
    fn new(params: AddGpUcbParams, space: &SearchSpace) -> Result<AddGpUcb, ConfigError> {
        let bad = |field: &str, reason: String| Err(ConfigError::Invalid { field: field.into(), reason });
        refuse_conditional(space, "ADD_GP_UCB", "models")?;
        let ids: Vec<&str> = space.params().iter().map(|p| p.id.as_str()).collect();
        let d_all = ids.len();
        check_beta("ucbBeta", params.ucb_beta)?;
        if params.ucb_beta.is_some() && params.acquisition != AddAcquisition::GroupUcb {
            return bad("ucbBeta", "β is the group-wise UCB's; give acquisition GROUP_UCB with it, or leave ucbBeta out".into());
        }
        check_range("initialDesignSize", params.initial_design_size, 1, 1000)?;
        check_range("relearnEvery", params.relearn_every, 1, 10_000)?;
        if let Some(n) = params.num_partitions {
            check_range("numPartitions", n, 1, 1000)?;
        }
        if let Some(n) = params.num_candidates {
            check_range("numCandidates", n, 16, 100_000)?;
        }
        check_range("swapsPerParameter", params.swaps_per_parameter, 0, 1000)?;
        check_range("numRestarts", params.num_restarts, 0, 50)?;
        let decomposition = match (&params.groups, params.group_size) {
            (Some(_), Some(_)) => return bad("", "give either groups or groupSize, not both".into()),
            (Some(groups), None) if groups.is_empty() => {
                return bad("groups", "at least one group is needed; leave groups out to learn them".into());
            }
            (Some(groups), None) => {
                let mut seen = HashSet::new();
                let mut dims = Vec::with_capacity(groups.len());
                for (g, group) in groups.iter().enumerate() {
                    if group.is_empty() {
                        return bad("groups", format!("group {g} is empty"));
                    }
                    let mut members = Vec::with_capacity(group.len());
                    for id in group {
                        let Some(i) = ids.iter().position(|p| p == id) else {
                            return bad("groups", format!("{id:?} is not a parameter of the study"));
                        };
                        if !seen.insert(i) {
                            return bad(
                                "groups",
                                format!("{id:?} is in two groups; ADD_GP_UCB's groups are disjoint (OVERLAP_ADD_GP allows overlaps)"),
                            );
                        }
                        members.push(i);
                    }
                    members.sort_unstable();
                    dims.push(members);
                }
                Decomposition::Known(dims)
            }
            (None, size) => {
                let d = size.unwrap_or(DEFAULT_GROUP_SIZE.min(d_all));
                check_range("groupSize", d, 1, d_all)?;
                Decomposition::Learned(d)
            }
        };
        Ok(AddGpUcb { params, decomposition })
    }
}

impl AddGpUcb {
    /// Candidates per group for `m` groups over `d_all` parameters: `numCandidates`, else
    /// 0.9·min(5000, 100·d_all)/m within [32, 1000] (the table above).
    fn candidates_per_group(&self, d_all: usize, m: usize) -> usize {
        self.params
            .num_candidates
            .unwrap_or_else(|| ((0.9 * (100.0 * d_all as f64).min(5000.0) / m.max(1) as f64) as usize).clamp(32, 1000))
    }

    /// The model's kernel over `groups`.
    fn kernel(&self, features: &Features, groups: &[Vec<usize>]) -> GroupKernel {
        self.kernel_with(features, groups, self.params.length_scales == LengthScales::Shared)
    }

    /// The kernel over `groups`, with one length scale for all parameters or one each.
    fn kernel_with(&self, features: &Features, groups: &[Vec<usize>], shared: bool) -> GroupKernel {
        let dims: Vec<usize> = groups.iter().flatten().copied().collect();
        let categorical = features.categorical_dims();
        match self.params.kernel {
            KernelChoice::SquaredExp => {
                let k = GroupAdditive::new(dims, &categorical, groups, INITIAL_LENGTH_SCALE, LENGTH_SCALE_BOUNDS);
                GroupKernel::SquaredExp(if shared { k.with_shared_length_scale() } else { k })
            }
            KernelChoice::Matern52 => {
                let k = GroupAdditive::new(dims, &categorical, groups, INITIAL_LENGTH_SCALE, LENGTH_SCALE_BOUNDS);
                GroupKernel::Matern52(if shared { k.with_shared_length_scale() } else { k })
            }
        }
    }
}

const INITIAL_LENGTH_SCALE: f64 = 0.5;

/// The additive kernel under either profile.
#[derive(Clone, Debug)]
enum GroupKernel {
    SquaredExp(GroupAdditive<SquaredExpProfile>),
    Matern52(GroupAdditive<Matern52Profile>),
}

impl GroupKernel {
    fn boxed(self) -> Box<dyn Kernel> {
        match self {
            GroupKernel::SquaredExp(k) => Box::new(k),
            GroupKernel::Matern52(k) => Box::new(k),
        }
    }

    fn set_params(&mut self, p: &[f64]) {
        match self {
            GroupKernel::SquaredExp(k) => k.set_params(p),
            GroupKernel::Matern52(k) => k.set_params(p),
        }
    }

    fn set_groups(&mut self, groups: &[Vec<usize>]) {
        match self {
            GroupKernel::SquaredExp(k) => k.set_groups(groups),
            GroupKernel::Matern52(k) => k.set_groups(groups),
        }
    }

    fn as_kernel(&self) -> &dyn Kernel {
        match self {
            GroupKernel::SquaredExp(k) => k,
            GroupKernel::Matern52(k) => k,
        }
    }

    fn components(&self, n: usize) -> Vec<Box<dyn Kernel>> {
        (0..n)
            .map(|g| match self {
                GroupKernel::SquaredExp(k) => Box::new(k.component(g)) as Box<dyn Kernel>,
                GroupKernel::Matern52(k) => Box::new(k.component(g)),
            })
            .collect()
    }
}

/// A random partition of `0..d` into consecutive chunks of a random permutation, each of at
/// most `size` (M = ⌈d/size⌉ groups), each sorted.
fn random_partition(d: usize, size: usize, rng: &mut dyn Rng) -> Vec<Vec<usize>> {
    let mut p: Vec<usize> = (0..d).collect();
    for i in (1..d).rev() {
        p.swap(i, rng.random_range(0..=i));
    }
    p.chunks(size)
        .map(|c| {
            let mut g = c.to_vec();
            g.sort_unstable();
            g
        })
        .collect()
}

/// What is stored besides the GP's state: the learned grouping and when it was searched.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupsState {
    groups: Vec<Vec<usize>>,
    learned_at: usize,
}

/// Whether `groups` partition `0..d`.
fn is_partition(groups: &[Vec<usize>], d: usize) -> bool {
    let mut seen = vec![false; d];
    for &i in groups.iter().flatten() {
        if i >= d || seen[i] {
            return false;
        }
        seen[i] = true;
    }
    seen.iter().all(|s| *s)
}

impl Designer for AddGpUcb {
    fn work(&self, space: &SearchSpace) -> super::Work {
        let d_all = space.n_params();
        let (m, search) = match &self.decomposition {
            Decomposition::Known(groups) => (groups.len(), 0),
            Decomposition::Learned(d) => (
                d_all.div_ceil((*d).max(1)),
                self.params.num_partitions.unwrap_or(d_all.max(5)).saturating_add(self.params.swaps_per_parameter.saturating_mul(d_all)),
            ),
        };
        let candidates = match self.params.acquisition {
            AddAcquisition::GroupUcb => self.candidates_per_group(d_all, m),
            AddAcquisition::LogEi => self.params.num_candidates.unwrap_or(DEFAULT_CANDIDATES),
        };
        super::Work { candidates, structure_evaluations: search }
    }

    fit_from_start!();
}

impl AddGpUcb {
    /// The fit from `start`; restored, the GP at the stored θ and grouping, conditioned on `history`:
    /// no search of either.
    fn fit_from(&self, problem: &Problem, history: &[Observation], start: Start<'_>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let spec = &problem.spec;
        let features = Features::new(&spec.space);
        let d_all = features.dim();
        let encode = |a: &Assignment| features.encode(a);
        let Some(Training { sign, worst, ranked, x, y, extra, warp }) =
            Training::new(spec, history, &encode, self.params.initial_design_size, self.params.output_warping)
        else {
            return QuasiRandomSearch.fit(problem, history, None, rng);
        };
        let n = x.len();
        let last: Option<GroupsState> = start
            .state()
            .and_then(|s| s.0.get("decomposition").cloned())
            .and_then(|v| serde_json::from_value(v).ok())
            .filter(|s: &GroupsState| is_partition(&s.groups, d_all));
        let (mut groups, learned_at) = match (&self.decomposition, last) {
            (Decomposition::Known(groups), _) => (groups.clone(), None),
            (Decomposition::Learned(_), Some(s)) => (s.groups, Some(s.learned_at)),
            (Decomposition::Learned(size), None) => (random_partition(d_all, *size, rng), None),
        };
        let restarts = Effort::restarts(self.params.num_restarts);
        let kernel = self.kernel(&features, &groups).boxed();
        let (mut gp, mut state) = fit_gp(kernel, x, &y, &extra, spec.observation_noise, restarts, start, rng)?;
        let mut learned_at = learned_at;
        if let Decomposition::Learned(size) = self.decomposition
            && !start.is_restore()
            && learned_at.is_none_or(|at| n < at || n >= at + self.params.relearn_every)
        {
            // Groupings are scored under one shared length scale: per-parameter length scales
            // fitted to a wrong grouping score the right one badly (docs/journal/benchmarks.md).
            let shared = self.kernel_with(&features, &groups, true);
            let scorer = match self.params.length_scales {
                LengthScales::Shared => None,
                LengthScales::PerParameter => {
                    Some(fit_gp(shared.clone().boxed(), gp.x().to_vec(), &y, &extra, spec.observation_noise, restarts, Start::Cold, rng)?.0)
                }
            };
            if let Some(better) = self.search_grouping(scorer.as_ref().unwrap_or(&gp), shared, &groups, d_all, size, rng) {
                groups = better;
                // θ again for the new grouping, from the current θ (a refit on unchanged data is
                // a warm optimisation).
                let x = gp.x().to_vec();
                (gp, state) = fit_gp(
                    self.kernel(&features, &groups).boxed(),
                    x,
                    &y,
                    &extra,
                    spec.observation_noise,
                    restarts,
                    Start::Last(&state),
                    rng,
                )?;
            }
            learned_at = Some(n);
        }
        if let (Some(at), serde_json::Value::Object(map)) = (learned_at, &mut state.0) {
            map.insert("decomposition".into(), serde_json::json!(GroupsState { groups: groups.clone(), learned_at: at }));
        }
        self.params.prior_mean.apply(&mut gp);
        let mut fitted = self.kernel(&features, &groups);
        fitted.set_params(&gp.hyperparameters().kernel);
        let components = fitted.components(groups.len());
        let kinds: Vec<Coordinate> = (0..d_all)
            .map(|i| match features.kind(i) {
                FeatureKind::Numeric => Coordinate::Unit,
                FeatureKind::Categorical(n) => Coordinate::Category(n),
            })
            .collect();
        let in_groups: HashSet<usize> = groups.iter().flatten().copied().collect();
        let m = groups.len();
        let per_group = self.candidates_per_group(d_all, m);
        let proposer = AddGpUcbProposer {
            groups,
            components,
            ucb_beta: self.params.ucb_beta,
            joint: (self.params.acquisition == AddAcquisition::LogEi).then(|| {
                (
                    ranked.iter().take(3).map(|(a, _)| (*a).clone()).collect(),
                    MixedConfig {
                        n_candidates: self.params.num_candidates.unwrap_or(DEFAULT_CANDIDATES),
                        max_iter: ACQUISITION_ITERATIONS,
                        ..MixedConfig::default()
                    },
                )
            }),
            loose: (0..d_all).filter(|i| !in_groups.contains(i)).collect(),
            kinds,
            anchors: ranked.iter().take(3).map(|(a, _)| features.encode(a)).collect(),
            learned: matches!(self.decomposition, Decomposition::Learned(_)).then_some(learned_at).flatten(),
            config: SubspaceConfig { n_candidates: per_group, ..SubspaceConfig::default() },
            features,
        };
        Ok(GpModel::fitted(Posterior::new(gp, sign, warp, worst, spec, history), proposer, state))
    }

    /// The grouping with the largest marginal likelihood at `gp`'s θ found from `current`:
    /// `numPartitions` random partitions of groups of at most `size` (Kandasamy et al. 2015), then
    /// `swapsPerParameter · D` proposals exchanging two parameters of different groups of the
    /// best so far, each kept if it raises the likelihood (a hill climb the paper does not have:
    /// with 8 groups of 3 among 24 parameters, a random partition is almost never right and 24
    /// of them rarely beat the current one, measured in docs/journal/benchmarks.md). `None` when
    /// `current` stays best.
    fn search_grouping(
        &self,
        gp: &Gp,
        mut kernel: GroupKernel,
        current: &[Vec<usize>],
        d: usize,
        size: usize,
        rng: &mut dyn Rng,
    ) -> Option<Vec<Vec<usize>>> {
        let h = gp.hyperparameters();
        kernel.set_params(&h.kernel);
        let (x, y, extra) = fit_subset(gp.x(), gp.y(), gp.extra_noise(), MAX_SCORED_POINTS);
        let mut score = |groups: &[Vec<usize>]| {
            kernel.set_groups(groups);
            log_marginal_likelihood(kernel.as_kernel(), &x, &y, &extra, h.log_noise).unwrap_or(f64::NEG_INFINITY)
        };
        let start = score(current);
        let mut best = (current.to_vec(), start);
        for _ in 0..self.params.num_partitions.unwrap_or(d.max(5)) {
            let candidate = random_partition(d, size, rng);
            let s = score(&candidate);
            if s > best.1 {
                best = (candidate, s);
            }
        }
        if best.0.len() > 1 {
            for _ in 0..self.params.swaps_per_parameter * d {
                let (a, b) = (rng.random_range(0..d), rng.random_range(0..d));
                let group_of = |i: usize| best.0.iter().position(|g| g.contains(&i)).expect("a partition holds every parameter");
                let (ga, gb) = (group_of(a), group_of(b));
                if ga == gb {
                    continue;
                }
                let mut candidate = best.0.clone();
                candidate[ga].retain(|&i| i != a);
                candidate[gb].retain(|&i| i != b);
                candidate[ga].push(b);
                candidate[gb].push(a);
                candidate[ga].sort_unstable();
                candidate[gb].sort_unstable();
                let s = score(&candidate);
                if s > best.1 {
                    best = (candidate, s);
                }
            }
        }
        (best.1 > start).then_some(best.0)
    }
}

/// Groupings are scored on at most this many points (the best half and a spread of the rest,
/// as θ is fitted): one factorisation of 300 points costs about 5 ms.
const MAX_SCORED_POINTS: usize = 300;

/// ADD_GP_UCB's search: each group's UCB maximised over its own coordinates in turn
/// (`optimize::subspace`), the others at the incumbent's values.
struct AddGpUcbProposer {
    features: Features,
    /// Feature dimensions of each group.
    groups: Vec<Vec<usize>>,
    /// Each group's term of the kernel, at the fitted θ.
    components: Vec<Box<dyn Kernel>>,
    ucb_beta: Option<f64>,
    /// Under `LOG_EI`: the best observed trials (the local search's anchors) and the search's
    /// setting; `None`: the group-wise UCB.
    joint: Option<(Vec<Assignment>, MixedConfig)>,
    /// Dimensions in no group: drawn uniformly.
    loose: Vec<usize>,
    kinds: Vec<Coordinate>,
    /// Features of the best observed points.
    anchors: Vec<Vec<f64>>,
    /// When the learned decomposition was searched.
    learned: Option<usize>,
    config: SubspaceConfig,
}

/// How many times a proposal equal to a taken one is moved before it is accepted.
const MAX_NUDGES: usize = 16;

impl AddGpUcbProposer {
    /// β of a group of `d` dimensions at round `t`.
    fn beta(&self, d: usize, t: usize) -> f64 {
        self.ucb_beta.unwrap_or_else(|| BetaSchedule::Kandasamy.beta(d, t))
    }

    fn draw(&self, kind: Coordinate, rng: &mut dyn Rng) -> f64 {
        match kind {
            Coordinate::Unit => rng.random(),
            Coordinate::Category(n) => rng.random_range(0..n) as f64,
        }
    }
}

impl Proposer for AddGpUcbProposer {
    type Batch = ();

    fn encode(&self, a: &Assignment) -> Vec<f64> {
        self.features.encode(a)
    }

    fn propose(&self, post: &Posterior, member: Member<'_>, _: &mut (), rng: &mut dyn Rng) -> Result<Option<Assignment>, FitError> {
        // t counts the real observations (Kandasamy et al. 2015's code: #observations + 1).
        let t = post.taken.len() + 1;
        let Member { gp, taken, believed, .. } = member;
        if let Some((anchors, config)) = &self.joint {
            let best = post.gp.y().iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let acquisition = Acquisition::LogEi { best }.with_incumbent_at_least(believed);
            let found = maximize_acquisition(acquisition, gp, &self.features, taken, anchors, config, rng)?;
            return Ok(found.map(|(a, _)| a));
        }
        let mut x: Vec<f64> = match self.anchors.first() {
            Some(best) => best.clone(),
            None => self.kinds.iter().map(|&kind| self.draw(kind, rng)).collect(),
        };
        for &i in &self.loose {
            x[i] = self.draw(self.kinds[i], rng);
        }
        for (dims, component) in self.groups.iter().zip(&self.components) {
            let b = self.beta(dims.len(), t).sqrt();
            let component = component.as_ref();
            let score_batch =
                |xs: &[Vec<f64>]| gp.predict_component(component, xs).into_iter().map(|(m, v)| m + b * v.sqrt()).collect::<Vec<f64>>();
            let score_grad = |xs: &[Vec<f64>]| {
                gp.predict_component_with_grad(component, xs)
                    .into_iter()
                    .map(|p| {
                        let s = p.var.sqrt();
                        (p.mean + b * s, p.d_mean.iter().zip(&p.d_var).map(|(dm, dv)| dm + b * dv / (2.0 * s)).collect())
                    })
                    .collect::<Vec<_>>()
            };
            let kinds: Vec<Coordinate> = dims.iter().map(|&i| self.kinds[i]).collect();
            if let Some((best, _)) = subspace::maximize(dims, &kinds, &x, &score_batch, &score_grad, &self.anchors, &self.config, rng) {
                for &i in dims {
                    x[i] = best[i];
                }
            }
        }
        let mut a = self.features.decode(&x);
        for _ in 0..MAX_NUDGES {
            if !taken.contains(&a.key()) {
                break;
            }
            for (v, kind) in x.iter_mut().zip(&self.kinds) {
                if *kind == Coordinate::Unit {
                    *v = (*v + 0.05 * standard_normal(rng)).clamp(0.0, 1.0);
                }
            }
            a = self.features.decode(&x);
        }
        if !x.iter().all(|v| v.is_finite()) {
            return Err(FitError::Numerical("the acquisition's maximiser is not finite".into()));
        }
        Ok(Some(a))
    }

    fn terms(&self) -> Vec<(String, &dyn Kernel)> {
        let params = self.features.space().params();
        self.groups
            .iter()
            .zip(&self.components)
            .map(|(g, k)| (g.iter().map(|&i| params[i].id.as_str()).collect::<Vec<_>>().join(" + "), k.as_ref()))
            .collect()
    }

    fn describe(&self, post: &Posterior) -> serde_json::Value {
        let params = self.features.space().params();
        let name = |i: usize| params[i].id.clone();
        let h = post.gp.hyperparameters();
        let t = post.taken.len() + 1;
        serde_json::json!({
            "model": "additive GP (Add-GP-UCB)",
            "trials": post.gp.n(),
            "groups": self.groups.iter().map(|g| g.iter().map(|&i| name(i)).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "decomposition": if self.learned.is_some() { "learned" } else { "given" },
            "decompositionLearnedAt": self.learned,
            "unmodelled": self.loose.iter().map(|&i| name(i)).collect::<Vec<_>>(),
            "acquisition": if self.joint.is_some() {
                "log expected improvement of the sum over the best value, over the whole space"
            } else {
                "each group's upper confidence bound, on its own coordinates"
            },
            "beta": if self.joint.is_some() { None } else { Some(self.groups.iter().map(|g| self.beta(g.len(), t)).collect::<Vec<_>>()) },
            "priorMean": post.prior_mean(),
            "hyperparameters": post.hyperparameter_map(),
            "logNoiseVariance": h.log_noise,
        })
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

    use crate::study::{Goal, StudySpec};
    use crate::trial::{Outcome, ParamValue};

    fn spec(d: usize, config: serde_json::Value) -> StudySpec {
        StudySpec::new("f", Goal::Maximize, crate::designer::testing::fixtures::unit_cube(d), "ADD_GP_UCB").with_config(config)
    }

    #[test]
    fn config_is_checked() {
        let space = spec(4, serde_json::Value::Null).space;
        let check = |config: serde_json::Value| AddGpUcb::new(serde_json::from_value(config).unwrap(), &space).map(|_| ());
        assert!(check(serde_json::json!({"groups": [["x0", "x1"], ["x2"]]})).is_ok());
        let err = check(serde_json::json!({"groups": [["x0", "x1"], ["x1"]]})).unwrap_err().to_string();
        assert!(err.contains("two groups"), "{err}");
        assert!(check(serde_json::json!({"groups": [["x0", "nope"]]})).unwrap_err().to_string().contains("nope"));
        assert!(check(serde_json::json!({"groupSize": 5})).is_err());
        assert!(check(serde_json::json!({"groupSize": 2, "groups": [["x0"]]})).is_err());
        assert!(check(serde_json::json!({"acquisition": "GROUP_UCB", "ucbBeta": 2.0})).is_ok());
        let err = check(serde_json::json!({"acquisition": "LOG_EI", "ucbBeta": 2.0})).unwrap_err().to_string();
        assert!(err.contains("ucbBeta") && err.contains("GROUP_UCB"), "{err}");
        assert!(check(serde_json::json!({"relearnEvery": 0})).is_err());
        // No groups at all would leave nothing to model (it used to panic at every refit).
        assert!(check(serde_json::json!({"groups": []})).unwrap_err().to_string().contains("at least one group"));
        assert!(check(serde_json::json!({"groups": [[]]})).unwrap_err().to_string().contains("empty"));
        let conditional = crate::designer::testing::fixtures::optimizer_tree();
        let err = AddGpUcb::new(AddGpUcbParams::default(), &conditional).err().unwrap().to_string();
        assert!(err.contains("ADD_TREE"), "{err}");
    }

    #[test]
    fn random_partitions_are_partitions_of_the_right_sizes() {
        let mut rng = StdRng::seed_from_u64(2);
        for (d, size) in [(10, 3), (24, 11), (7, 7), (5, 1)] {
            let p = random_partition(d, size, &mut rng);
            assert!(is_partition(&p, d));
            assert_eq!(p.len(), d.div_ceil(size));
            assert!(p.iter().all(|g| g.len() <= size));
        }
    }

    /// Observations of `f` on `n` points of `[0, 1]^d` from a fixed stream.
    fn history(d: usize, n: usize, f: impl Fn(&[f64]) -> f64) -> Vec<Observation> {
        let mut rng = StdRng::seed_from_u64(9);
        (0..n)
            .map(|_| {
                let x: Vec<f64> = (0..d).map(|_| rng.random()).collect();
                Observation {
                    objective_sd: None,
                    assignment: Assignment::new(
                        x.iter().enumerate().map(|(i, v)| (format!("x{i}").into(), ParamValue::Float(*v))).collect(),
                    ),
                    outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), f(&x))])),
                }
            })
            .collect()
    }

    #[test]
    fn learns_the_true_grouping_of_an_additive_function() {
        // f = g(x0, x3) + g(x1, x4) + g(x2, x5): pairs far apart in the parameter order.
        let g = |a: f64, b: f64| (6.0 * a * b).sin() + (5.0 * (a - b)).cos();
        let f = |x: &[f64]| g(x[0], x[3]) + g(x[1], x[4]) + g(x[2], x[5]);
        // Under either kind of length scale (per-parameter ones search under a shared one).
        for length_scales in ["SHARED", "PER_PARAMETER"] {
            let config = serde_json::json!({"groupSize": 2, "numPartitions": 200, "lengthScales": length_scales});
            let problem = Problem { spec: spec(6, config), seed: 1, priors: Vec::new() };
            let designer = designer_for(&problem.spec).unwrap();
            let fitted = designer.fit(&problem, &history(6, 60, f), None, &mut StdRng::seed_from_u64(1)).unwrap();
            let groups = fitted.model.describe()["groups"].clone();
            let mut groups: Vec<Vec<String>> = serde_json::from_value(groups).unwrap();
            groups.iter_mut().for_each(|g| g.sort());
            groups.sort();
            assert_eq!(groups, vec![vec!["x0", "x3"], vec!["x1", "x4"], vec!["x2", "x5"]], "{length_scales}");
            let per_parameter = fitted.model.describe()["hyperparameters"].as_object().unwrap().len() > 3;
            assert_eq!(per_parameter, length_scales == "PER_PARAMETER", "the model keeps its own length scales");
        }
    }

    #[test]
    fn per_group_posteriors_sum_to_the_posterior_mean_and_their_deviations_bound_its() {
        // The reading's §7 item 5, on the fitted model's GP.
        let f = |x: &[f64]| (4.0 * x[0]).sin() + x[1] * x[2] + (3.0 * x[3]).cos();
        let spec = spec(4, serde_json::json!({"groups": [["x0", "x1"], ["x2", "x3"]]}));
        let problem = Problem { spec, seed: 1, priors: Vec::new() };
        let designer = AddGpUcb::new(serde_json::from_value(problem.spec.algorithm_config.clone()).unwrap(), &problem.spec.space).unwrap();
        let fitted = designer.fit(&problem, &history(4, 30, f), None, &mut StdRng::seed_from_u64(1)).unwrap();
        let state = fitted.state.clone();
        let features = Features::new(&problem.spec.space);
        let groups = vec![vec![0, 1], vec![2, 3]];
        let mut kernel = designer.kernel(&features, &groups);
        let h: crate::gp::Hyperparameters = serde_json::from_value(state.0["gp"].clone()).unwrap();
        kernel.set_params(&h.kernel);
        let encode = |a: &Assignment| features.encode(a);
        let data = history(4, 30, f);
        let x: Vec<Vec<f64>> = data.iter().map(|o| encode(&o.assignment)).collect();
        let y: Vec<f64> = data.iter().map(|o| if let Outcome::Measured(m) = &o.outcome { m["f"] } else { 0.0 }).collect();
        let (ys, mean, std) = crate::gp::standardize(&y);
        let gp = Gp::new(kernel.clone().boxed(), h.log_noise, x.clone(), ys, mean, std).unwrap();
        let components = kernel.components(2);
        let mut rng = StdRng::seed_from_u64(5);
        let probes: Vec<Vec<f64>> = (0..50).map(|_| (0..4).map(|_| rng.random()).collect()).chain(x.iter().take(5).cloned()).collect();
        let whole = gp.predict(&probes);
        let parts: Vec<Vec<(f64, f64)>> = components.iter().map(|c| gp.predict_component(c.as_ref(), &probes)).collect();
        for (j, (m, v)) in whole.iter().enumerate() {
            let sum_mean: f64 = parts.iter().map(|p| p[j].0).sum();
            let sum_sd: f64 = parts.iter().map(|p| p[j].1.sqrt()).sum();
            assert!((sum_mean - m).abs() < 1e-10, "Σ μ_j = μ at probe {j}: {sum_mean} vs {m}");
            assert!(sum_sd >= v.sqrt() - 1e-12, "Σ σ_j ≥ σ at probe {j}: {sum_sd} vs {}", v.sqrt());
        }
    }

    #[test]
    fn suggests_the_per_group_maximiser_of_a_known_decomposition() {
        // Two independent bumps; with little exploration (β tiny) the suggestion is the
        // posterior mean's maximiser, found group by group near (0.3, 0.7 | 0.6, 0.2).
        let f = |x: &[f64]| -((x[0] - 0.3).powi(2) + (x[1] - 0.7).powi(2)) * 4.0 - ((x[2] - 0.6).powi(2) + (x[3] - 0.2).powi(2)) * 4.0;
        let spec = spec(4, serde_json::json!({"groups": [["x0", "x1"], ["x2", "x3"]], "ucbBeta": 1e-6}));
        let problem = Problem { spec, seed: 1, priors: Vec::new() };
        let designer = designer_for(&problem.spec).unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        let model = designer.fit(&problem, &history(4, 60, f), None, &mut rng).unwrap().model;
        let a = model.suggest(&[], 1, &mut rng).unwrap().remove(0);
        let x: Vec<f64> = (0..4).map(|i| if let Some(ParamValue::Float(v)) = a.get(&format!("x{i}")) { *v } else { f64::NAN }).collect();
        for (v, want) in x.iter().zip([0.3, 0.7, 0.6, 0.2]) {
            assert!((v - want).abs() < 0.05, "{x:?}");
        }
    }

    /// Under `LOG_EI` the whole sum's expected improvement is maximised over the whole space:
    /// near the two bumps' joint maximiser, and a batch is distinct.
    #[test]
    fn log_ei_maximises_the_sums_improvement_over_the_whole_space() {
        let f = |x: &[f64]| -((x[0] - 0.3).powi(2) + (x[1] - 0.7).powi(2)) * 4.0 - ((x[2] - 0.6).powi(2) + (x[3] - 0.2).powi(2)) * 4.0;
        let spec = spec(4, serde_json::json!({"groups": [["x0", "x1"], ["x2", "x3"]], "acquisition": "LOG_EI"}));
        let problem = Problem { spec, seed: 1, priors: Vec::new() };
        let designer = designer_for(&problem.spec).unwrap();
        let mut rng = StdRng::seed_from_u64(3);
        let model = designer.fit(&problem, &history(4, 60, f), None, &mut rng).unwrap().model;
        let described = model.describe();
        assert!(described["acquisition"].as_str().unwrap().contains("expected improvement"), "{described}");
        assert!(described["beta"].is_null(), "{described}");
        let batch = model.suggest(&[], 3, &mut rng).unwrap();
        let keys: HashSet<crate::AssignmentKey> = batch.iter().map(|a| a.key()).collect();
        assert_eq!(keys.len(), 3);
        let x: Vec<f64> =
            (0..4).map(|i| if let Some(ParamValue::Float(v)) = batch[0].get(&format!("x{i}")) { *v } else { f64::NAN }).collect();
        assert!(f(&x) > -0.05, "{x:?}: {}", f(&x));
    }

    #[test]
    fn the_prior_mean_is_the_worst_observation_unless_asked_for_the_mean() {
        let f = |x: &[f64]| (4.0 * x[0]).sin() + x[1];
        let data = history(2, 20, f);
        let values: Vec<f64> = data.iter().map(|o| if let Outcome::Measured(m) = &o.outcome { m["f"] } else { f64::NAN }).collect();
        let (lowest, mean) = (values.iter().copied().fold(f64::INFINITY, f64::min), values.iter().sum::<f64>() / values.len() as f64);
        // On the values as they are: a warp's prior mean is the warped values' level, mapped back.
        let none = |mut c: serde_json::Value| {
            c["outputWarping"] = serde_json::json!("NONE");
            c
        };
        for (config, want) in [(none(serde_json::json!({})), lowest), (none(serde_json::json!({"priorMean": "MEAN"})), mean)] {
            let problem = Problem { spec: spec(2, config), seed: 1, priors: Vec::new() };
            let designer = designer_for(&problem.spec).unwrap();
            let model = designer.fit(&problem, &data, None, &mut StdRng::seed_from_u64(1)).unwrap().model;
            let got = model.describe()["priorMean"].as_f64().unwrap();
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
    }
}
