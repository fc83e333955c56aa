//! `ADD_TREE`: Bayesian optimisation over a conditional space with the Add-Tree covariance
//! (Ma & Blaschko 2020).
//!
//! - **Tree**: `space::tree` turns the study's conditional parameters into vertices and
//!   patterns (root-to-leaf paths). A trial's features are [`Features`]' coordinates followed by
//!   one activity indicator per non-root vertex, so inactive parameters never enter a term.
//! - **Kernel** ([`AddTree`]): per vertex an ARD Matérn-5/2 (default) or squared exponential on
//!   its numeric parameters — times an exchangeable kernel on its plain categorical ones — with
//!   its own amplitude, plus a learnable offset `c_v` for every non-root vertex.
//!   Length scales are capped at `maxLengthScale` = 1 on the unit cube: our calibration
//!   found the cap "the single most effective robustness fix" — without it,
//!   two or three points on a subtree fit long length scales and the model misses the minimum.
//! - **Fit**: GP_BANDIT's (standardised outputs, fitted noise, MAP by multi-start L-BFGS
//!   warm-started from the study's last fit, infeasible trials at the worst value seen).
//! - **Acquisition**: UCB maximised jointly —
//!   exact path variance — on every pattern over that pattern's own parameters: quasi-random
//!   candidates with the pattern's branching values fixed, the best observed points perturbed,
//!   then L-BFGS from the best two of each pattern, all patterns' starts in lock-step (split
//!   over the machine's threads from [`PARALLEL_FROM`] observations); the best pattern wins. With more than [`MAX_PATTERNS`] patterns, the patterns are those of the
//!   candidates.
//! - **κ: exploit, and explore on a thinning schedule.** The paper's schedule is
//!   `κ_t = √(2 ln(|P| t² π² / (6δ)))`, δ = 0.1, clipped to [1, 6] (≈ 3.9 at t = 5, 5.2 at
//!   t = 100 for 4 paths) throughout; that keeps exploring long after a path is solved, and a
//!   small κ throughout stalls on a wrong branch. The default exploits (κ = 1) and explores with
//!   κ_t on a thinning schedule — every max(2, ⌊t/20⌋)-th suggestion (`exploreDecay` = 20),
//!   Θ(log t) exploring steps. Exploring only when the exploiting proposal lands within 0.01 of a
//!   data point (`exploreEvery` 0, `exploreNear` 0.01) is an option for spaces with many
//!   parameters per path (measured: docs/journal/benchmarks.md, "Conditional spaces").
//! - **Pending trials and batches** are fantasies at the posterior mean, as in GP_BANDIT.
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `kernel` | `MATERN52` | per-vertex kernel: `MATERN52` or `SQUARED_EXP` | — |
//! | `mode` | `JOINT` | `JOINT`, or `PAPER` for Ma & Blaschko 2020's Algorithm 2 (see [`Mode`]) | — |
//! | `ucbKappa` | 1 | κ of the exploiting suggestions | (0, 100] |
//! | `exploreEvery` | 2 | every this many suggestions use κ_t (0 never, 1 always) | 0 – 1,000 |
//! | `exploreDecay` | 20 | with t trials, explore every max(`exploreEvery`, ⌊t/20⌋)-th (0 off) | 0 – 100,000 |
//! | `exploreNear` | 0 | an exploiting suggestion this close to the data uses κ_t (0 off) | [0, 1] |
//! | `maxLengthScale` | 1 | the length-scale cap (unit cube) | [0.05, 20] |
//! | `initialDesignSize` | max(5, 2·paths), at most 20 | quasi-random trials first | 1 – 1,000 |
//! | `numCandidates` | 512 | quasi-random candidates per suggestion, shared by the paths | 16 – 100,000 |
//! | `numRestarts` | 2 | random restarts of the hyperparameter fit | 0 – 50 |
//! | `hyperparameterSamples` | 0 | θ drawn from its posterior (slice sampling, `gp::sample`) beside the fitted θ; the model predicts with the moment-matched mixture of all of them, wider where they disagree — better calibrated on few trials, at one more GP per sample (docs/journal/benchmarks.md, "Hyperparameter samples") | 0 – 32 |
//! | `outputWarping` | `NONE` | `NONE`, `YEO_JOHNSON` or `HALF_RANK`: the monotone warp of the objective the GP is fitted to (`gp::output_warp`); Yeo–Johnson was worse on 3 of the 6 tree problems (vgg16_tree 2.3e-3 → 4.0e-2; docs/journal/benchmarks.md) | — |

use std::collections::{HashMap, HashSet};

use rand::{Rng, RngExt};
use serde::Deserialize;

use super::config::{FromConfig, check_range};
use super::gp::schedule::fit_from_start;
use super::gp::{
    Effort, GpModel, KernelKind, MAX_HYPERPARAMETER_SAMPLES, Member, OutputWarping, Posterior, Proposer, Start, Training, fit_gp,
};
use super::{ConfigError, Designer, FitError, Fitted, Problem, QuasiRandomSearch};
use crate::acquisition::Acquisition;
use crate::gp::Gp;
use crate::kernel::{self, Categorical, Kernel, Product, Term, matern52, squared_exp};
use crate::optimize::mixed::{Candidate, MixedConfig, Objective, around, refine};
use crate::optimize::sobol::sobol_point;
use crate::space::SearchSpace;
use crate::space::features::Features;
use crate::space::tree::{Pattern, Tree};
use crate::trial::{Assignment, AssignmentKey, Observation};

/// Up to this many patterns are each optimised; beyond, those the candidates fall on.
pub const MAX_PATTERNS: usize = 64;

/// The smallest length scale (unit cube).
const MIN_LENGTH_SCALE: f64 = 0.01;

/// δ of the κ_t schedule.
const DELTA: f64 = 0.1;

/// L-BFGS starts per pattern.
const STARTS_PER_PATTERN: usize = 2;

/// From this many observations the paths' local optimisations are split over the machine's
/// threads. Measured on `vgg16_tree` (2 cores): at n ≤ 100 two threads made a step slower
/// (9.4 → 13.9 ms: spawning and smaller lock-step batches cost more than they save); at
/// n = 250–300 faster (38.5 → 32.4 ms).
const PARALLEL_FROM: usize = 200;

/// How `ADD_TREE` maximises its acquisition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Mode {
    /// The joint UCB of every path, over the path's parameters.
    #[default]
    Joint,
    /// Ma & Blaschko 2020's Algorithm 2: each vertex's own UCB maximised over its own parameters, paths
    /// scored by the sum over their vertices; a proposal already tried or pending falls back
    /// to `JOINT` (alone, Algorithm 2 re-proposed one point forever in our runs).
    Paper,
}

/// `algorithmConfig` of `ADD_TREE` (the table above).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AddTreeParams {
    /// The per-vertex kernel.
    pub kernel: KernelKind,
    /// The acquisition's maximisation.
    pub mode: Mode,
    /// κ of the exploiting suggestions.
    pub ucb_kappa: f64,
    /// Every this many suggestions use κ_t instead (0: never, 1: always — the paper's pure
    /// schedule).
    pub explore_every: usize,
    /// An exploiting suggestion within this distance (feature space, unit scale) of a point
    /// already in the data uses κ_t instead (0: never).
    pub explore_near: f64,
    /// With t trials, only every max(`explore_every`, ⌊t / `explore_decay`⌋)-th suggestion
    /// explores (0: every `explore_every`-th throughout; no effect with `explore_every` ≤ 1).
    pub explore_decay: usize,
    /// The length-scale cap.
    pub max_length_scale: f64,
    /// Quasi-random trials before the GP.
    pub initial_design_size: Option<usize>,
    /// Quasi-random candidates per suggestion.
    pub num_candidates: usize,
    /// Random restarts of the hyperparameter fit.
    pub num_restarts: usize,
    /// θ drawn from its posterior by slice sampling beside the best θ found, the model's
    /// predictions the moment-matched mixture of all of them (0: the best θ alone).
    pub hyperparameter_samples: usize,
    /// The warp of the objective the GP is fitted to.
    pub output_warping: OutputWarping,
}

impl AddTreeParams {
    /// The effort of each fit of θ.
    pub(crate) fn effort(&self) -> Effort {
        Effort { restarts: self.num_restarts, samples: self.hyperparameter_samples }
    }
}

impl Default for AddTreeParams {
    fn default() -> Self {
        AddTreeParams {
            kernel: KernelKind::Matern52,
            mode: Mode::Joint,
            ucb_kappa: 1.0,
            explore_every: 2,
            explore_near: 0.0,
            explore_decay: 20,
            max_length_scale: 1.0,
            initial_design_size: None,
            num_candidates: 512,
            num_restarts: 2,
            hyperparameter_samples: 0,
            output_warping: OutputWarping::None,
        }
    }
}

impl AddTreeParams {
    /// Checks the ranges of the table.
    pub fn check(self) -> Result<AddTreeParams, ConfigError> {
        let bad = |field: &str, reason: String| Err(ConfigError::Invalid { field: field.into(), reason });
        if !(self.ucb_kappa > 0.0 && self.ucb_kappa <= 100.0) {
            return bad("ucbKappa", format!("{} is outside (0, 100]", self.ucb_kappa));
        }
        if !(0.0..=1.0).contains(&self.explore_near) {
            return bad("exploreNear", format!("{} is outside [0, 1]", self.explore_near));
        }
        if self.explore_decay > 100_000 {
            return bad("exploreDecay", format!("{} is above 100000", self.explore_decay));
        }
        if self.explore_every > 1000 {
            return bad("exploreEvery", format!("{} is above 1000", self.explore_every));
        }
        if !(0.05..=20.0).contains(&self.max_length_scale) {
            return bad("maxLengthScale", format!("{} is outside [0.05, 20]", self.max_length_scale));
        }
        if let Some(n) = self.initial_design_size {
            check_range("initialDesignSize", n, 1, 1000)?;
        }
        check_range("numCandidates", self.num_candidates, 16, 100_000)?;
        check_range("numRestarts", self.num_restarts, 0, 50)?;
        check_range("hyperparameterSamples", self.hyperparameter_samples, 0, MAX_HYPERPARAMETER_SAMPLES)?;
        Ok(self)
    }
}

/// Ma & Blaschko 2020's κ_t for `paths` paths at step `t`.
pub fn kappa(paths: usize, t: usize) -> f64 {
    let (p, t) = (paths.max(1) as f64, t.max(1) as f64);
    let beta = 2.0 * (p * t * t * std::f64::consts::PI.powi(2) / (6.0 * DELTA)).ln();
    beta.sqrt().clamp(1.0, 6.0)
}

/// The Add-Tree designer.
pub struct AddTree {
    params: AddTreeParams,
}

impl FromConfig for AddTree {
    type Params = AddTreeParams;

    fn new(params: AddTreeParams, _space: &SearchSpace) -> Result<AddTree, ConfigError> {
        Ok(AddTree { params: params.check()? })
    }
}

/// `initialDesignSize`'s default on `space`: two trials per path of the tree, within [5, 20].
pub(super) fn default_initial_design(space: &SearchSpace) -> usize {
    initial_design_for(&Layout::new(Features::new(space)))
}

fn initial_design_for(layout: &Layout) -> usize {
    (2 * layout.n_paths()).clamp(5, 20)
}

/// The model's view of a space: its features, tree and patterns.
#[derive(Clone, Debug)]
struct Layout {
    features: Features,
    tree: Tree,
    /// `None` beyond [`MAX_PATTERNS`].
    patterns: Option<Vec<Pattern>>,
}

impl Layout {
    fn new(features: Features) -> Layout {
        let tree = Tree::new(features.space());
        let patterns = tree.patterns(MAX_PATTERNS);
        Layout { features, tree, patterns }
    }

    /// Features, then one activity indicator per non-root vertex.
    fn encode(&self, a: &Assignment) -> Vec<f64> {
        let mut x = self.features.encode(a);
        x.extend(self.tree.active(a).iter().skip(1).map(|&on| if on { 1.0 } else { 0.0 }));
        x
    }

    /// The Add-Tree kernel of the tree.
    fn kernel(&self, kind: KernelKind, max_length_scale: f64) -> kernel::AddTree {
        let d = self.features.dim();
        let numeric: HashSet<usize> = self.features.numeric_dims().into_iter().collect();
        let bounds = (MIN_LENGTH_SCALE, max_length_scale);
        let start = 0.5f64.min(max_length_scale);
        let terms = self
            .tree
            .vertices()
            .iter()
            .enumerate()
            .filter_map(|(v, vertex)| {
                let nums: Vec<usize> = vertex.params.iter().copied().filter(|i| numeric.contains(i)).collect();
                let cats: Vec<usize> = vertex.params.iter().copied().filter(|i| !numeric.contains(i)).collect();
                let numeric_kernel: Option<Box<dyn Kernel>> = (!nums.is_empty()).then(|| match kind {
                    KernelKind::Matern52 => Box::new(matern52(nums, start, bounds)) as Box<dyn Kernel>,
                    KernelKind::SquaredExp => Box::new(squared_exp(nums, start, bounds)),
                });
                let categorical: Option<Box<dyn Kernel>> = (!cats.is_empty()).then(|| Box::new(Categorical::new(cats)) as Box<dyn Kernel>);
                let kernel = match (numeric_kernel, categorical) {
                    (Some(n), Some(c)) => Some(Box::new(Product(vec![n, c])) as Box<dyn Kernel>),
                    (k, None) | (None, k) => k,
                };
                let root = v == 0;
                // The root is always active: an offset there would only shift the mean, which the
                // standardisation already fixes, and would couple the root's subtrees.
                let log_bias = (!root).then_some(-2.3);
                (kernel.is_some() || log_bias.is_some()).then(|| Term {
                    name: vertex.name.clone(),
                    indicator: (!root).then(|| d + v - 1),
                    log_bias,
                    kernel,
                })
            })
            .collect();
        kernel::AddTree::new(terms)
    }

    fn n_paths(&self) -> usize {
        self.patterns.as_ref().map_or(MAX_PATTERNS, Vec::len)
    }
}

impl Designer for AddTree {
    fn work(&self, _space: &SearchSpace) -> super::Work {
        super::Work { candidates: self.params.num_candidates, structure_evaluations: 0 }
    }

    fit_from_start!();
}

impl AddTree {
    /// The fit from `start`; restored, the GP at the stored θ, conditioned on `history`: no search.
    fn fit_from(&self, problem: &Problem, history: &[Observation], start: Start<'_>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let spec = &problem.spec;
        let layout = Layout::new(Features::new(&spec.space));
        let encode = |a: &Assignment| layout.encode(a);
        let initial = self.params.initial_design_size.unwrap_or_else(|| initial_design_for(&layout));
        let Some(Training { sign, worst, ranked, x, y, extra, warp }) =
            Training::new(spec, history, &encode, initial, self.params.output_warping)
        else {
            return QuasiRandomSearch.fit(problem, history, None, rng);
        };
        let kernel = Box::new(layout.kernel(self.params.kernel, self.params.max_length_scale));
        let (gp, state) = fit_gp(kernel, x, &y, &extra, spec.observation_noise, self.params.effort(), start, rng)?;
        let layout_paths = layout.n_paths();
        let components = {
            let mut k = layout.kernel(self.params.kernel, self.params.max_length_scale);
            k.set_params(&gp.hyperparameters().kernel);
            let vertex = |name: &str| layout.tree.vertices().iter().position(|v| v.name == name).expect("a term per vertex");
            (0..k.terms().len()).map(|i| (vertex(&k.terms()[i].name), k.component(i))).collect()
        };
        let anchors = ranked.iter().take(3).map(|(a, _)| (*a).clone()).collect();
        let proposer = AddTreeProposer {
            layout,
            mode: self.params.mode,
            components,
            kappa: self.params.ucb_kappa,
            kappa_t: kappa(layout_paths, ranked.len() + 1),
            explore_every: self.params.explore_every,
            explore_near: self.params.explore_near,
            explore_decay: self.params.explore_decay,
            anchors,
            n_candidates: self.params.num_candidates,
        };
        Ok(GpModel::fitted(Posterior::new(gp, sign, warp, worst, spec, history), proposer, state))
    }
}

/// ADD_TREE's search: the joint UCB of every path over its own parameters, κ switching between
/// exploiting and exploring steps, or Ma & Blaschko 2020's Algorithm 2.
struct AddTreeProposer {
    layout: Layout,
    mode: Mode,
    /// The fitted kernel's terms alone, with their vertices (for Algorithm 2).
    components: Vec<(usize, kernel::AddTree)>,
    /// κ of the exploiting suggestions.
    kappa: f64,
    /// κ_t of the exploring ones.
    kappa_t: f64,
    /// Every this many suggestions explore (0: none).
    explore_every: usize,
    /// An exploiting proposal this close to the data explores instead (0: never).
    explore_near: f64,
    /// Exploration thins out: every max(explore_every, t / explore_decay)-th step (0: never).
    explore_decay: usize,
    anchors: Vec<Assignment>,
    n_candidates: usize,
}

impl AddTreeProposer {
    /// Every how many steps one explores with κ_t at step `step` (0: never): `explore_every`,
    /// and ever more rarely as data accumulate — max(exploreEvery, ⌊t / exploreDecay⌋), Θ(log t)
    /// exploring steps in all (exploreEvery 1 is "always").
    fn exploring_period(&self, step: usize) -> usize {
        if self.explore_every > 1 && self.explore_decay > 0 {
            (step / self.explore_decay).max(self.explore_every)
        } else {
            self.explore_every
        }
    }

    /// Candidates for every pattern and the pattern of each: quasi-random points with the
    /// pattern's branching values fixed (so each path gets its share), and the anchors perturbed.
    fn candidates(&self, rng: &mut dyn Rng) -> (Vec<Assignment>, Vec<usize>) {
        let space = self.layout.features.space();
        let params = space.params();
        let d = params.len();
        let seed: u64 = rng.random();
        let offset: u64 = rng.random_range(0..1 << 15);
        let mut out: Vec<Assignment> = Vec::with_capacity(self.n_candidates + 48);
        match &self.layout.patterns {
            Some(patterns) => {
                let per = (self.n_candidates / patterns.len()).max(32);
                let mut i = 0u64;
                for p in patterns {
                    for _ in 0..per {
                        let mut u = sobol_point(offset + i, d, seed);
                        i += 1;
                        for (param, values) in &p.choices {
                            let value = &values[rng.random_range(0..values.len())];
                            u[*param] = params[*param].to_unit(value).expect("a pattern's value is in its parameter's domain");
                        }
                        out.push(space.decode(&u));
                    }
                }
            }
            None => out.extend((0..self.n_candidates as u64).map(|i| space.decode(&sobol_point(offset + i, d, seed)))),
        }
        out.extend(around(&self.layout.features, &self.anchors, 16, rng));
        // Group by active vertices: the pattern of each candidate.
        let mut ids: HashMap<Vec<bool>, usize> = HashMap::new();
        let groups = out
            .iter()
            .map(|a| {
                let next = ids.len();
                *ids.entry(self.layout.tree.active(a)).or_insert(next)
            })
            .collect();
        (out, groups)
    }
}

impl AddTreeProposer {
    /// Ma & Blaschko 2020's Algorithm 2: per vertex, the UCB of its own component
    /// maximised over its own parameters; per path, the sum over its vertices; the best path
    /// with each vertex's maximiser. `None` when the result was tried already (the re-proposal
    /// guard) or cannot be assembled (a numeric parent's value moved the path).
    fn algorithm_2(&self, gp: &Gp, kappa: f64, taken: &HashSet<AssignmentKey>, rng: &mut dyn Rng) -> Option<Assignment> {
        let patterns = self.layout.patterns.as_ref()?;
        let (candidates, _) = self.candidates(rng);
        let best = self.vertex_optima(gp, kappa, &candidates);
        let (_, path) = patterns
            .iter()
            .map(|p| {
                let score: f64 = (0..p.active.len()).filter(|&v| p.active[v]).filter_map(|v| best.get(&v).map(|b| b.0)).sum();
                (score, p)
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))?;
        let a = self.assemble(&path.active, &best, &candidates)?;
        (!taken.contains(&a.key())).then_some(a)
    }

    /// Per vertex, the maximum of its own component's UCB over its own parameters and the
    /// assignment attaining it (Algorithm 2, lines 3–5), from `candidates`.
    fn vertex_optima(&self, gp: &Gp, kappa: f64, candidates: &[Assignment]) -> HashMap<usize, (f64, Assignment)> {
        let encode = |a: &Assignment| self.layout.encode(a);
        let none = HashSet::new();
        let config = MixedConfig { n_starts: 4, ..MixedConfig::default() };
        let mut best = HashMap::new();
        for (vertex, component) in &self.components {
            let on: Vec<Assignment> = candidates.iter().filter(|a| self.layout.tree.active(a)[*vertex]).cloned().collect();
            if on.is_empty() {
                continue;
            }
            let score_batch =
                |xs: &[Vec<f64>]| gp.predict_component(component, xs).into_iter().map(|(m, v)| m + kappa * v.sqrt()).collect::<Vec<f64>>();
            let score_grad = |xs: &[Vec<f64>]| {
                gp.predict_component_with_grad(component, xs)
                    .iter()
                    .map(|p| Acquisition::Ucb { beta: kappa * kappa }.value_and_grad(p))
                    .collect::<Vec<_>>()
            };
            let objective = Objective {
                features: &self.layout.features,
                encode: &encode,
                encode_unit: None,
                score_batch: &score_batch,
                score_grad: &score_grad,
                taken: &none,
            };
            // A vertex whose component scores nothing finite is left out, as one with no
            // candidate is.
            if let Ok(Some((a, u))) = refine(&objective, on.into_iter().map(|a| (Candidate::Assignment(a), 0)), config.n_starts, &config) {
                best.insert(*vertex, (u, a));
            }
        }
        best
    }

    /// The assignment on the path of active vertices `path` taking each vertex's parameters from
    /// its optimum in `best`; `None` when it cannot be assembled (a numeric parent's value
    /// moved the path).
    fn assemble(&self, path: &[bool], best: &HashMap<usize, (f64, Assignment)>, candidates: &[Assignment]) -> Option<Assignment> {
        let params = self.layout.features.space().params();
        let mut a = candidates.iter().find(|c| self.layout.tree.active(c) == path)?.clone();
        for (v, vertex) in self.layout.tree.vertices().iter().enumerate() {
            if !path[v] {
                continue;
            }
            if let Some((_, from)) = best.get(&v) {
                for &i in &vertex.params {
                    if let Some(value) = from.get(&params[i].id) {
                        a.insert(params[i].id.clone(), value.clone());
                    }
                }
            }
        }
        (self.layout.tree.active(&a) == path && self.layout.features.space().check(&a).is_ok()).then_some(a)
    }
}

impl Proposer for AddTreeProposer {
    type Batch = ();

    fn encode(&self, a: &Assignment) -> Vec<f64> {
        self.layout.encode(a)
    }

    fn propose(&self, post: &Posterior, member: Member<'_>, _: &mut (), rng: &mut dyn Rng) -> Result<Option<Assignment>, FitError> {
        let encode = |a: &Assignment| self.layout.encode(a);
        let Member { gp, taken, k, pending, .. } = member;
        // Every `exploring_period`-th suggestion (counting the data, pending trials and this
        // batch's members) explores with κ_t; the others exploit with κ.
        let step = post.gp.n() + pending + k;
        let every = self.exploring_period(step);
        let explore = every > 0 && step.is_multiple_of(every);
        let kappa = if explore { self.kappa_t } else { self.kappa };
        if self.mode == Mode::Paper
            && let Some(a) = self.algorithm_2(gp, kappa, taken, rng)
        {
            return Ok(Some(a));
        }
        let search = |kappa: f64, rng: &mut dyn Rng| {
            let acquisition = Acquisition::Ucb { beta: kappa * kappa };
            let (candidates, groups) = self.candidates(rng);
            let n_groups = groups.iter().max().map_or(0, |g| g + 1);
            let config = MixedConfig {
                n_starts: (STARTS_PER_PATTERN * n_groups).min(32),
                threads: if gp.n() >= PARALLEL_FROM { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { 1 },
                ..MixedConfig::default()
            };
            let score_batch = |xs: &[Vec<f64>]| gp.predict(xs).into_iter().map(|(m, v)| acquisition.value(m, v)).collect::<Vec<f64>>();
            let score_grad =
                |xs: &[Vec<f64>]| gp.predict_with_grad_batch(xs).iter().map(|p| acquisition.value_and_grad(p)).collect::<Vec<_>>();
            let objective = Objective {
                features: &self.layout.features,
                encode: &encode,
                encode_unit: None,
                score_batch: &score_batch,
                score_grad: &score_grad,
                taken,
            };
            refine(&objective, candidates.into_iter().map(Candidate::Assignment).zip(groups), STARTS_PER_PATTERN, &config)
                .map(|found| found.map(|(a, _)| a))
        };
        let Some(mut a) = search(kappa, rng)? else {
            return Ok(None); // every candidate was tried already
        };
        // An exploiting proposal next to a point already in the data would learn little: explore.
        if !explore && self.explore_near > 0.0 {
            let x = encode(&a);
            let nearest =
                gp.x().iter().map(|y| y.iter().zip(&x).map(|(u, v)| (u - v) * (u - v)).sum::<f64>()).fold(f64::INFINITY, f64::min).sqrt();
            if nearest < self.explore_near
                && let Some(b) = search(self.kappa_t, rng)?
            {
                a = b;
            }
        }
        Ok(Some(a))
    }

    fn terms(&self) -> Vec<(String, &dyn Kernel)> {
        let vertices = self.layout.tree.vertices();
        self.components.iter().map(|(v, k)| (vertices[*v].name.clone(), k as &dyn Kernel)).collect()
    }

    fn describe(&self, post: &Posterior) -> serde_json::Value {
        let h = post.gp.hyperparameters();
        let params = self.layout.features.space().params();
        let vertices: Vec<serde_json::Value> = self
            .layout
            .tree
            .vertices()
            .iter()
            .map(|v| {
                let prefix = format!("{}.", v.name);
                let hyperparameters: serde_json::Map<String, serde_json::Value> = h
                    .names
                    .iter()
                    .zip(&h.kernel)
                    .filter_map(|(name, value)| name.strip_prefix(&prefix).map(|rest| (rest.to_owned(), serde_json::json!(value))))
                    .collect();
                serde_json::json!({
                    "vertex": v.name,
                    "parameters": v.params.iter().map(|&i| params[i].id.clone()).collect::<Vec<_>>(),
                    "hyperparameters": hyperparameters,
                })
            })
            .collect();
        serde_json::json!({
            "model": "Add-Tree GP",
            "trials": post.gp.n(),
            "tree": vertices,
            "paths": self.layout.patterns.as_ref().map(Vec::len),
            "logNoiseVariance": h.log_noise,
            "acquisition": match self.exploring_period(post.gp.n()) {
                0 => format!("UCB, kappa {:.3}", self.kappa),
                1 => format!("UCB, kappa_t {:.3} at every suggestion", self.kappa_t),
                every => format!("UCB, kappa {:.3}; kappa_t {:.3} at every {} suggestion now", self.kappa, self.kappa_t, ordinal(every)),
            },
        })
    }

    fn width(&self) -> usize {
        self.layout.features.dim() + self.layout.tree.vertices().len()
    }
}

/// `n` as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, …
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::designer_for;
    use crate::gp::{self, FitConfig};
    use crate::space::SearchSpace;
    use crate::space::tree::tests::jenatton;
    use crate::study::{Goal, StudySpec};
    use crate::trial::{Outcome, ParamValue};

    /// The Jenatton function on the test tree's domains (x4 … x7 ∈ [−1, 1], r8, r9 ∈ [−1, 1]).
    fn f(a: &Assignment) -> f64 {
        let num = |id: &str| if let Some(ParamValue::Float(x)) = a.get(id) { *x } else { panic!("{id}") };
        let cat = |id: &str| matches!(a.get(id), Some(ParamValue::Categorical(s)) if &**s == "1");
        match (cat("x1"), cat("x2"), cat("x3")) {
            (false, false, _) => num("x4").powi(2) + 0.1 + num("r8"),
            (false, true, _) => num("x5").powi(2) + 0.2 + num("r8"),
            (true, _, false) => num("x6").powi(2) + 0.3 + num("r9"),
            (true, _, true) => num("x7").powi(2) + 0.4 + num("r9"),
        }
    }

    fn spec(config: serde_json::Value) -> StudySpec {
        StudySpec::new("f", Goal::Minimize, jenatton(), "ADD_TREE").with_config(config)
    }

    fn observed(a: Assignment) -> Observation {
        let y = f(&a);
        Observation { objective_sd: None, assignment: a, outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), y)])) }
    }

    /// Ma & Blaschko 2020, Fig. 1: v_r ∈ [−1, 1]² shared, t ∈ {1, 2}, v_p1 ∈ [−1, 1]² and v_p2 ∈ [−1, 1]³.
    fn toy() -> SearchSpace {
        use crate::space::{Conditional, Domain, ParamSpec, ParentValues, Scale};
        let double = |id: &str| ParamSpec {
            id: id.into(),
            domain: Domain::Double { min: -1.0, max: 1.0 },
            scale: Scale::Linear,
            default: None,
            children: vec![],
        };
        let under = |t: &str, id: &str| Conditional { parent_values: ParentValues::Categorical(vec![t.into()]), spec: double(id) };
        let t = ParamSpec {
            id: "t".into(),
            domain: Domain::Categorical { values: vec!["1".into(), "2".into()] },
            scale: Scale::Linear,
            default: None,
            children: vec![under("1", "a0"), under("1", "a1"), under("2", "b0"), under("2", "b1"), under("2", "b2")],
        };
        SearchSpace::new(vec![double("r0"), double("r1"), t]).unwrap()
    }

    fn random_points(space: &SearchSpace, n: usize, rng: &mut StdRng) -> Vec<Assignment> {
        (0..n).map(|_| space.decode(&(0..space.n_params()).map(|_| rng.random::<f64>()).collect::<Vec<_>>())).collect()
    }

    #[test]
    fn the_kernel_has_seed_000s_structure() {
        // On the Fig. 1 tree the covariance of points on different leaves is the root's
        // term alone; on the Jenatton tree (no root variable) it is 0 across root subtrees; a
        // Gram matrix of 200 mixed-path points is positive semi-definite.
        let mut rng = StdRng::seed_from_u64(8);
        let space = toy();
        let layout = Layout::new(Features::new(&space));
        let mut k = layout.kernel(KernelKind::SquaredExp, 1.0);
        let p: Vec<f64> = k.params().iter().map(|v| v + rng.random_range(-0.5..0.5)).collect();
        k.set_params(&p);
        let root = k.component(0);
        assert_eq!(k.terms()[0].name, "root");
        let points = random_points(&space, 60, &mut rng);
        let leaf = |a: &Assignment| a.get("t").cloned();
        for a in &points {
            for b in &points {
                let (x, y) = (layout.encode(a), layout.encode(b));
                if leaf(a) != leaf(b) {
                    assert!((k.eval(&x, &y) - root.eval(&x, &y)).abs() < 1e-15, "across leaves: the root term only");
                } else {
                    assert!(k.eval(&x, &y) > root.eval(&x, &y), "on one leaf the leaf's terms add");
                }
            }
        }
        let space = jenatton();
        let layout = Layout::new(Features::new(&space));
        let k = layout.kernel(KernelKind::Matern52, 1.0);
        let points = random_points(&space, 200, &mut rng);
        let xs: Vec<Vec<f64>> = points.iter().map(|a| layout.encode(a)).collect();
        let side = |a: &Assignment| a.get("x1").cloned();
        for (a, x) in points.iter().zip(&xs).take(50) {
            for (b, y) in points.iter().zip(&xs) {
                if side(a) != side(b) {
                    assert_eq!(k.eval(x, y), 0.0, "different root subtrees share nothing");
                }
            }
        }
        let gram = k.gram(&xs);
        let trace: f64 = (0..xs.len()).map(|i| gram[(i, i)]).sum();
        let lowest = gram.self_adjoint_eigenvalues(faer::Side::Lower).unwrap().into_iter().fold(f64::INFINITY, f64::min);
        assert!(lowest >= -1e-10 * trace, "PSD: lowest eigenvalue {lowest}, trace {trace}");
    }

    /// Restoring a stored fit keeps its θ to the last bit (no search) and predicts the same.
    #[test]
    fn restoring_a_stored_fit_keeps_its_hyperparameters() {
        let mut rng = StdRng::seed_from_u64(4);
        let problem = Problem { spec: spec(serde_json::Value::Null), seed: 4, priors: Vec::new() };
        let points = random_points(&problem.spec.space, 30, &mut rng);
        let history: Vec<Observation> = points.iter().cloned().map(observed).collect();
        let designer = designer_for(&problem.spec).unwrap();
        let theirs = designer.fit(&problem, &history, None, &mut StdRng::seed_from_u64(1)).unwrap();
        let ours = designer.restore(&problem, &history, &theirs.state, &mut StdRng::seed_from_u64(2)).unwrap();
        assert_eq!(ours.state, theirs.state);
        let probe = random_points(&problem.spec.space, 5, &mut rng);
        for (p, q) in theirs
            .model
            .predictor()
            .unwrap()
            .predict(&probe)
            .unwrap()
            .into_iter()
            .zip(ours.model.predictor().unwrap().predict(&probe).unwrap())
        {
            assert!((p.median - q.median).abs() < 1e-9 && (p.upper - q.upper).abs() < 1e-9, "{p:?} {q:?}");
        }
    }

    #[test]
    fn kappa_follows_its_formula() {
        // κ ≈ 3.9 at t = 5 and 5.2 at t = 100 for 4 paths; clipped to [1, 6]. (4.69
        // at t = 30, from the formula.)
        assert!((kappa(4, 5) - 3.85).abs() < 0.01, "{}", kappa(4, 5));
        assert!((kappa(4, 30) - 4.69).abs() < 0.01, "{}", kappa(4, 30));
        assert!((kappa(4, 100) - 5.18).abs() < 0.01, "{}", kappa(4, 100));
        assert_eq!(kappa(4, 1_000_000_000), 6.0);
    }

    #[test]
    fn per_vertex_posteriors_add_up_to_the_path_mean_and_bound_its_deviation() {
        // Σ_v μ^v equals the joint mean; Σ_v σ^v ≥ σ_path.
        let space = jenatton();
        let layout = Layout::new(Features::new(&space));
        let mut rng = StdRng::seed_from_u64(5);
        let points: Vec<Assignment> =
            (0..30).map(|_| space.decode(&(0..space.n_params()).map(|_| rng.random::<f64>()).collect::<Vec<_>>())).collect();
        let x: Vec<Vec<f64>> = points.iter().map(|a| layout.encode(a)).collect();
        let y: Vec<f64> = points.iter().map(f).collect();
        let kernel = layout.kernel(KernelKind::Matern52, 1.0);
        let gp = gp::fit(Box::new(kernel.clone()), x, &y, &FitConfig::default(), None, &mut rng).unwrap();
        let mut fitted = kernel;
        fitted.set_params(&gp.hyperparameters().kernel);
        let tests: Vec<Vec<f64>> = (0..20)
            .map(|_| layout.encode(&space.decode(&(0..space.n_params()).map(|_| rng.random::<f64>()).collect::<Vec<_>>())))
            .collect();
        let joint = gp.predict(&tests);
        let parts: Vec<Vec<(f64, f64)>> = (0..fitted.terms().len()).map(|i| gp.predict_component(&fitted.component(i), &tests)).collect();
        for (j, (mean, var)) in joint.iter().enumerate() {
            let active: Vec<&(f64, f64)> = parts.iter().map(|p| &p[j]).collect();
            let sum: f64 = active.iter().map(|(m, _)| m).sum();
            assert!((sum - mean).abs() < 1e-10, "point {j}: Σ μ^v = {sum}, joint {mean}");
            let sd_sum: f64 = fitted
                .terms()
                .iter()
                .zip(&active)
                .filter(|(t, _)| t.indicator.is_none_or(|i| tests[j][i] > 0.5))
                .map(|(_, (_, v))| v.sqrt())
                .sum();
            assert!(sd_sum + 1e-9 >= var.sqrt(), "point {j}: Σ σ^v = {sd_sum} < σ = {}", var.sqrt());
        }
    }

    #[test]
    fn the_paper_s_algorithm_2_runs_without_proposing_a_point_twice() {
        // With `mode = PAPER` no proposal repeats a trial (the guard falls back to JOINT).
        for config in [serde_json::json!({"mode": "PAPER"}), serde_json::json!({})] {
            let spec = spec(config.clone());
            let designer = designer_for(&spec).unwrap();
            let problem = Problem { spec, seed: 3, priors: Vec::new() };
            let mut rng = StdRng::seed_from_u64(3);
            let mut history: Vec<Observation> = Vec::new();
            let mut warm = None;
            for _ in 0..30 {
                let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
                warm = Some(fitted.state);
                let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
                problem.spec.space.check(&a).unwrap();
                assert!(!history.iter().any(|o| o.assignment == a), "{config}: {a:?} proposed twice");
                history.push(observed(a));
            }
            let best = history.iter().map(|o| f(&o.assignment)).fold(f64::INFINITY, f64::min);
            assert!(best < 0.35, "{config}: 30 evaluations should find a good leaf: best {best}");
        }
    }

    #[test]
    fn ordinals_read_as_english() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112].into_iter().map(ordinal).collect();
        assert_eq!(got, ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th", "112th"]);
    }
}
