//! `OVERLAP_ADD_GP`: additive GP-UCB with overlapping groups (Rolland, Scarlett,
//! Bogunovic & Cevher 2018) — one term per maximal clique
//! of a dependency graph over the parameters, the acquisition maximised exactly on a grid by
//! max-sum over a junction tree, the graph learned by Gibbs sampling.
//!
//! - **Model**: [`GroupAdditive`] (squared exponential) over the graph's maximal cliques — an
//!   isolated parameter is a clique of one — with per-parameter length scales shared by every
//!   term and the amplitude split by clique size (§5's `σ^(i) = d_i / Σ d_j`).
//! - **Acquisition**: `Σ_c μ_c(x^(c)) + √β σ_c(x^(c))`, `β = 0.5 ln 2t` (Tables 1–2; `t` the
//!   observations + 1). Each parameter takes `m` grid values (its unit coordinate at `k/(m−1)`, a
//!   categorical each category); each clique's term is tabulated over its grid with the other
//!   parameters at the best observed point's values, and the tables are maximised exactly by
//!   `structure::JunctionTree::max_sum` (each factor counted once, the argmax decoded: the
//!   reading's C3, C4). `m` is the largest in [5, 50] for which the tables hold at most 20,000
//!   points and the junction tree's nodes 2,000,000 (C1). The grid maximiser is not polished in
//!   the continuous space (a documented gap; INTEGER and DISCRETE values round to the grid).
//! - **Graph**: given (`edges`: pairs of parameter ids), or learned every `relearnEvery` (N_cyc,
//!   30) observations by Gibbs sampling (Alg. 3): edge bits with prior `edgePrior` (p = ½) and
//!   each length scale from {0.05, 0.1, 0.2, 0.4, 0.8, 1.6} (C6), full conditionals ∝ prior ×
//!   exp(log marginal likelihood) at the fitted amplitude and noise, sweeps of the edges in
//!   random order then the length scales, stopped after `gibbsBudget` (N_Gibbs, 200) new
//!   likelihood evaluations, warm-started from the last graph (C8), and the most likely sample
//!   kept. Graphs whose min-fill triangulation has a clique above `maxClique` (4) get prior 0
//!   (C9). θ is then optimised from the kept sample.
//! - **Pending trials and batches**: kriging-believer fantasies; a proposal equal to a taken one
//!   moves to a neighbouring grid value.
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `edges` | learned | the dependency graph: pairs of parameter ids | — |
//! | `relearnEvery` | 30 | N_cyc | 1 – 10,000 |
//! | `gibbsBudget` | 200 | N_Gibbs: likelihood evaluations per learning | 1 – 100,000 |
//! | `edgePrior` | 0.5 | p of an edge | (0, 1) |
//! | `maxClique` | 4 | the largest triangulated clique allowed | 1 – 6 |
//! | `ucbBeta` | 0.5 ln 2t | a constant β | > 0 |
//! | `priorMean` | `MEAN` | the GP's constant prior mean: `MEAN` of the observations, or the `WORST` (as `ADD_GP_UCB`) | — |
//! | `initialDesignSize` | 10 | quasi-random trials before the GP | 1 – 1,000 |
//! | `numRestarts` | 2 | random restarts of the hyperparameter fit | 0 – 50 |
//! | `outputWarping` | `NONE` | `NONE`, `YEO_JOHNSON` or `HALF_RANK`: the monotone warp of the objective the GP is fitted to (`gp::output_warp`) | — |

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};

use super::config::{FromConfig, check_beta, check_range, refuse_conditional};
use super::gp::schedule::fit_from_start;
use super::gp::{Effort, GpModel, Member, OutputWarping, Posterior, PriorMean, Proposer, Start, Training, fit_gp, warm_start};
use super::{ConfigError, Designer, FitError, Fitted, Problem, QuasiRandomSearch};
use crate::gp::{Gp, Hyperparameters, fit_subset, log_marginal_likelihood};
use crate::kernel::{GroupAdditive, Kernel, LENGTH_SCALE_BOUNDS, SquaredExpProfile};
use crate::space::SearchSpace;
use crate::space::features::{FeatureKind, Features};
use crate::structure::{Factor, Graph, JunctionTree};
use crate::trial::{Assignment, Observation};

/// `algorithmConfig` of `OVERLAP_ADD_GP` (the table above).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OverlapAddGpParams {
    /// A known graph: pairs of parameter ids.
    pub edges: Option<Vec<(String, String)>>,
    /// N_cyc.
    pub relearn_every: usize,
    /// N_Gibbs.
    pub gibbs_budget: usize,
    /// p.
    pub edge_prior: f64,
    /// The largest triangulated clique.
    pub max_clique: usize,
    /// A constant β.
    pub ucb_beta: Option<f64>,
    /// Where the GP's constant prior mean sits.
    pub prior_mean: PriorMean,
    /// Quasi-random trials before the GP.
    pub initial_design_size: usize,
    /// Random restarts of the hyperparameter fit.
    pub num_restarts: usize,
    /// The warp of the objective the GP is fitted to.
    pub output_warping: OutputWarping,
}

impl Default for OverlapAddGpParams {
    fn default() -> Self {
        OverlapAddGpParams {
            edges: None,
            relearn_every: 30,
            gibbs_budget: 200,
            edge_prior: 0.5,
            max_clique: 4,
            ucb_beta: None,
            prior_mean: PriorMean::default(),
            initial_design_size: 10,
            num_restarts: 2,
            output_warping: OutputWarping::None,
        }
    }
}

/// The length scales Gibbs sampling chooses from (unit-cube inputs).
const LENGTH_SCALES: [f64; 6] = [0.05, 0.1, 0.2, 0.4, 0.8, 1.6];
/// Grid points tabulated over all cliques, and junction-tree entries, at most.
const MAX_TABLE_POINTS: usize = 20_000;
const MAX_TREE_ENTRIES: usize = 2_000_000;

/// The OVERLAP_ADD_GP designer.
pub struct OverlapAddGp {
    params: OverlapAddGpParams,
    /// The given graph, if any.
    known: Option<Graph>,
}

impl FromConfig for OverlapAddGp {
    type Params = OverlapAddGpParams;

    /// Checks `params` against `space`.
    fn new(params: OverlapAddGpParams, space: &SearchSpace) -> Result<OverlapAddGp, ConfigError> {
        let bad = |field: &str, reason: String| Err(ConfigError::Invalid { field: field.into(), reason });
        refuse_conditional(space, "OVERLAP_ADD_GP", "models")?;
        check_range("relearnEvery", params.relearn_every, 1, 10_000)?;
        check_range("gibbsBudget", params.gibbs_budget, 1, 100_000)?;
        if !(params.edge_prior > 0.0 && params.edge_prior < 1.0) {
            return bad("edgePrior", format!("{} is not strictly between 0 and 1", params.edge_prior));
        }
        check_range("maxClique", params.max_clique, 1, 6)?;
        check_beta("ucbBeta", params.ucb_beta)?;
        check_range("initialDesignSize", params.initial_design_size, 1, 1000)?;
        check_range("numRestarts", params.num_restarts, 0, 50)?;
        let ids: Vec<&str> = space.params().iter().map(|p| p.id.as_str()).collect();
        let known = match &params.edges {
            None => None,
            Some(edges) => {
                let mut g = Graph::empty(ids.len());
                for (a, b) in edges {
                    let find = |id: &str| ids.iter().position(|p| *p == id);
                    match (find(a), find(b)) {
                        (Some(i), Some(j)) if i != j => g.add_edge(i, j),
                        (Some(_), Some(_)) => return bad("edges", format!("{a:?} is joined to itself")),
                        _ => return bad("edges", format!("({a:?}, {b:?}) names a parameter the study does not have")),
                    }
                }
                if JunctionTree::new(&g).max_clique() > params.max_clique {
                    return bad("edges", format!("the graph's triangulation has a clique above maxClique = {}", params.max_clique));
                }
                Some(g)
            }
        };
        Ok(OverlapAddGp { params, known })
    }
}

/// The kernel of `graph` with θ `theta` (if given).
fn kernel_for(features: &Features, graph: &Graph, theta: Option<&[f64]>) -> GroupAdditive<SquaredExpProfile> {
    let mut k =
        GroupAdditive::new((0..features.dim()).collect(), &features.categorical_dims(), &graph.maximal_cliques(), 0.5, LENGTH_SCALE_BOUNDS);
    if let Some(t) = theta {
        k.set_params(t);
    }
    k
}

/// What is stored besides the GP's state.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GraphState {
    edges: Vec<(usize, usize)>,
    learned_at: usize,
}

/// The result of a Gibbs run.
struct Learned {
    graph: Graph,
    log_length_scales: Vec<f64>,
    /// Likelihood evaluations spent.
    evaluations: usize,
}

impl OverlapAddGp {
    /// Rolland et al. 2018's Algorithm 3 from `graph` and `gp`'s θ: the most likely (graph, length scales)
    /// sampled within the budget.
    fn gibbs(&self, gp: &Gp, features: &Features, graph: &Graph, rng: &mut dyn Rng) -> Learned {
        let h = gp.hyperparameters();
        let (x, y, extra) = fit_subset(gp.x(), gp.y(), gp.extra_noise(), 300);
        let log_amplitude = h.kernel[0];
        let nearest = |l: f64| {
            (0..LENGTH_SCALES.len())
                .min_by(|&a, &b| (LENGTH_SCALES[a].ln() - l).abs().total_cmp(&(LENGTH_SCALES[b].ln() - l).abs()))
                .unwrap_or(0)
        };
        let scales: Vec<usize> = h.kernel[1..].iter().map(|&l| nearest(l)).collect();
        let mut likelihood = |g: &Graph, scales: &[usize]| {
            let mut theta = vec![log_amplitude];
            theta.extend(scales.iter().map(|&s| LENGTH_SCALES[s].ln()));
            log_marginal_likelihood(&kernel_for(features, g, Some(&theta)), &x, &y, &extra, h.log_noise).unwrap_or(f64::NEG_INFINITY)
        };
        let sampler = Gibbs { edge_prior: self.params.edge_prior, max_clique: self.params.max_clique, budget: self.params.gibbs_budget };
        sampler.run(graph.clone(), scales, &mut likelihood, &mut |_| {}, rng)
    }
}

/// Rolland et al. 2018's Gibbs sampler over edge bits and length-scale indices (Alg. 3, Eq. 8).
struct Gibbs {
    edge_prior: f64,
    max_clique: usize,
    /// New likelihood evaluations allowed.
    budget: usize,
}

impl Gibbs {
    /// Sweeps from (`graph`, `scales`) — the edges in random order, then each length scale —
    /// until the budget is spent; `visit` sees every sample. Returns the most likely sample.
    fn run(
        &self,
        mut graph: Graph,
        mut scales: Vec<usize>,
        likelihood: &mut dyn FnMut(&Graph, &[usize]) -> f64,
        visit: &mut dyn FnMut(&Graph),
        rng: &mut dyn Rng,
    ) -> Learned {
        let d = graph.n();
        let allowed = |g: &Graph| JunctionTree::new(g).max_clique() <= self.max_clique;
        let mut evaluations = 1;
        let mut current = likelihood(&graph, &scales);
        let mut best = (current, graph.clone(), scales.clone());
        let logit = (self.edge_prior / (1.0 - self.edge_prior)).ln();
        let pairs: Vec<(usize, usize)> = (0..d).flat_map(|a| (a + 1..d).map(move |b| (a, b))).collect();
        'sweeps: while evaluations < self.budget {
            let mut order = pairs.clone();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
            for (a, b) in order {
                if evaluations >= self.budget {
                    break 'sweeps;
                }
                let mut flipped = graph.clone();
                if graph.has_edge(a, b) {
                    flipped.remove_edge(a, b);
                } else {
                    flipped.add_edge(a, b);
                }
                let other = if allowed(&flipped) {
                    evaluations += 1;
                    likelihood(&flipped, &scales)
                } else {
                    f64::NEG_INFINITY
                };
                let (with, without) = if graph.has_edge(a, b) { (current, other) } else { (other, current) };
                // P(Z_ab = 1) = logistic(logit p + φ₁ − φ₀), Eq. 8 in log space.
                let p1 = if with == f64::NEG_INFINITY {
                    0.0
                } else if without == f64::NEG_INFINITY {
                    1.0
                } else {
                    1.0 / (1.0 + (-(logit + with - without)).exp())
                };
                if (rng.random::<f64>() < p1) != graph.has_edge(a, b) {
                    graph = flipped;
                    current = other;
                }
                visit(&graph);
                if current > best.0 {
                    best = (current, graph.clone(), scales.clone());
                }
            }
            for k in 0..d {
                if evaluations >= self.budget {
                    break 'sweeps;
                }
                // p(L_k = l | rest) ∝ exp φ (uniform prior): a softmax over the set.
                let options: Vec<f64> = (0..LENGTH_SCALES.len())
                    .map(|s| {
                        if s == scales[k] {
                            return current;
                        }
                        let mut trial = scales.clone();
                        trial[k] = s;
                        evaluations += 1;
                        likelihood(&graph, &trial)
                    })
                    .collect();
                let top = options.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if top.is_finite() {
                    let weights: Vec<f64> = options.iter().map(|v| (v - top).exp()).collect();
                    let mut u = rng.random::<f64>() * weights.iter().sum::<f64>();
                    if let Some(chosen) = weights.iter().position(|w| {
                        u -= w;
                        u <= 0.0
                    }) {
                        scales[k] = chosen;
                    }
                    current = options[scales[k]];
                }
                if current > best.0 {
                    best = (current, graph.clone(), scales.clone());
                }
            }
        }
        Learned { graph: best.1, log_length_scales: best.2.iter().map(|&s| LENGTH_SCALES[s].ln()).collect(), evaluations }
    }
}

impl Designer for OverlapAddGp {
    fn work(&self, _space: &SearchSpace) -> super::Work {
        let search = if self.known.is_some() { 0 } else { self.params.gibbs_budget };
        super::Work { candidates: 0, structure_evaluations: search }
    }

    fit_from_start!();
}

impl OverlapAddGp {
    /// The fit from `start`; restored, the GP at the stored θ and graph, conditioned on `history`: no
    /// search of either.
    fn fit_from(&self, problem: &Problem, history: &[Observation], start: Start<'_>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let spec = &problem.spec;
        let features = Features::new(&spec.space);
        let d = features.dim();
        let encode = |a: &Assignment| features.encode(a);
        let Some(Training { sign, worst, ranked, x, y, extra, warp }) =
            Training::new(spec, history, &encode, self.params.initial_design_size, self.params.output_warping)
        else {
            return QuasiRandomSearch.fit(problem, history, None, rng);
        };
        let n = x.len();
        let last: Option<GraphState> = start.state().and_then(|s| s.0.get("graph").cloned()).and_then(|v| serde_json::from_value(v).ok());
        let (mut graph, mut learned_at) = match (&self.known, last) {
            (Some(g), _) => (g.clone(), None),
            (None, Some(s)) if s.edges.iter().all(|&(a, b)| a < d && b < d && a != b) => {
                let mut g = Graph::empty(d);
                s.edges.iter().for_each(|&(a, b)| g.add_edge(a, b));
                (g, Some(s.learned_at))
            }
            (None, _) => (Graph::empty(d), None),
        };
        let restarts = self.params.num_restarts;
        let (mut gp, mut state) = fit_gp(
            Box::new(kernel_for(&features, &graph, None)),
            x,
            &y,
            &extra,
            spec.observation_noise,
            Effort::restarts(restarts),
            start,
            rng,
        )?;
        let mut gibbs_evaluations = None;
        if self.known.is_none() && !start.is_restore() && learned_at.is_none_or(|at| n < at || n >= at + self.params.relearn_every) {
            let learned = self.gibbs(&gp, &features, &graph, rng);
            gibbs_evaluations = Some(learned.evaluations);
            graph = learned.graph;
            // θ from the kept sample (a warm optimisation: the stored fit is at n).
            let h = gp.hyperparameters();
            let mut theta = vec![h.kernel[0]];
            theta.extend(learned.log_length_scales);
            let kernel = kernel_for(&features, &graph, Some(&theta));
            let start = Hyperparameters { kernel: theta, names: kernel.param_names(), log_noise: h.log_noise, samples: Vec::new() };
            let warm_state = warm_start(start, n);
            let x = gp.x().to_vec();
            (gp, state) =
                fit_gp(Box::new(kernel), x, &y, &extra, spec.observation_noise, Effort::restarts(restarts), Start::Last(&warm_state), rng)?;
            learned_at = Some(n);
        }
        if let (Some(at), serde_json::Value::Object(map)) = (learned_at, &mut state.0) {
            map.insert("graph".into(), serde_json::json!(GraphState { edges: graph.edges(), learned_at: at }));
        }
        self.params.prior_mean.apply(&mut gp);
        let fitted = kernel_for(&features, &graph, Some(&gp.hyperparameters().kernel));
        let cliques = graph.maximal_cliques();
        let components: Vec<Box<dyn Kernel>> = (0..cliques.len()).map(|c| Box::new(fitted.component(c)) as Box<dyn Kernel>).collect();
        let tree = JunctionTree::new(&graph);
        let grid = grid_size(&cliques, &tree);
        let incumbent = ranked.first().map(|(a, _)| encode(a));
        let proposer = OverlapAddGpProposer {
            values: (0..d)
                .map(|i| match features.kind(i) {
                    FeatureKind::Numeric => (0..grid).map(|k| k as f64 / (grid - 1) as f64).collect(),
                    FeatureKind::Categorical(c) => (0..c).map(|k| k as f64).collect(),
                })
                .collect(),
            features,
            graph,
            cliques,
            components,
            tree,
            ucb_beta: self.params.ucb_beta,
            incumbent,
            learned_at: if self.known.is_some() { None } else { learned_at },
            gibbs_evaluations,
        };
        Ok(GpModel::fitted(
            Posterior::new(gp, sign, warp, worst, spec, history).chosen_on_its_trials(spec.observation_noise),
            proposer,
            state,
        ))
    }
}

/// The grid size m (C1): the largest in [5, 50] with the clique tables and the tree's nodes
/// within their budgets.
fn grid_size(cliques: &[Vec<usize>], tree: &JunctionTree) -> usize {
    let fits = |m: usize| {
        let points: usize = cliques.iter().map(|c| m.saturating_pow(c.len() as u32)).sum();
        let entries: usize = tree.nodes().iter().map(|c| m.saturating_pow(c.len() as u32)).sum();
        points <= MAX_TABLE_POINTS && entries <= MAX_TREE_ENTRIES
    };
    (5..=50).rev().find(|&m| fits(m)).unwrap_or(5)
}

/// OVERLAP_ADD_GP's search: the UCB maximised exactly on a grid by junction-tree max-sum over the
/// cliques' components.
struct OverlapAddGpProposer {
    features: Features,
    graph: Graph,
    cliques: Vec<Vec<usize>>,
    components: Vec<Box<dyn Kernel>>,
    tree: JunctionTree,
    /// Each parameter's grid of feature values.
    values: Vec<Vec<f64>>,
    ucb_beta: Option<f64>,
    incumbent: Option<Vec<f64>>,
    learned_at: Option<usize>,
    gibbs_evaluations: Option<usize>,
}

impl OverlapAddGpProposer {
    fn beta(&self, post: &Posterior) -> f64 {
        let t = (post.taken.len() + 1) as f64;
        self.ucb_beta.unwrap_or(0.5 * (2.0 * t).ln())
    }

    /// The grid maximiser of the acquisition under `gp`.
    fn maximise(&self, post: &Posterior, gp: &Gp, rng: &mut dyn Rng) -> Vec<f64> {
        let d = self.features.dim();
        let base: Vec<f64> =
            self.incumbent.clone().unwrap_or_else(|| self.values.iter().map(|v| v[rng.random_range(0..v.len())]).collect());
        let b = self.beta(post).sqrt();
        let cards: Vec<usize> = self.values.iter().map(Vec::len).collect();
        let factors: Vec<Factor> = self
            .cliques
            .iter()
            .zip(&self.components)
            .map(|(clique, component)| {
                let size: usize = clique.iter().map(|&v| cards[v]).product();
                let xs: Vec<Vec<f64>> = (0..size)
                    .map(|mut i| {
                        let mut x = base.clone();
                        for &v in clique.iter().rev() {
                            x[v] = self.values[v][i % cards[v]];
                            i /= cards[v];
                        }
                        x
                    })
                    .collect();
                let table = gp.predict_component(component.as_ref(), &xs).into_iter().map(|(m, v)| m + b * v.sqrt()).collect();
                Factor { vars: clique.clone(), table }
            })
            .collect();
        let (_, argmax) = self.tree.max_sum(&cards, &factors);
        (0..d).map(|v| self.values[v][argmax[v]]).collect()
    }
}

impl Proposer for OverlapAddGpProposer {
    type Batch = ();

    fn encode(&self, a: &Assignment) -> Vec<f64> {
        self.features.encode(a)
    }

    fn propose(&self, post: &Posterior, member: Member<'_>, _: &mut (), rng: &mut dyn Rng) -> Result<Option<Assignment>, FitError> {
        let Member { gp, taken, .. } = member;
        let mut x = self.maximise(post, gp, rng);
        let mut a = self.features.decode(&x);
        // A taken point moves one grid step along random parameters until it is new.
        for _ in 0..64 {
            if !taken.contains(&a.key()) {
                break;
            }
            let v = rng.random_range(0..x.len());
            let grid = &self.values[v];
            let at = grid.iter().position(|g| *g == x[v]).unwrap_or(0);
            let next = if at + 1 < grid.len() && (at == 0 || rng.random::<bool>()) { at + 1 } else { at.saturating_sub(1) };
            x[v] = grid[next];
            a = self.features.decode(&x);
        }
        Ok(Some(a))
    }

    fn terms(&self) -> Vec<(String, &dyn Kernel)> {
        let params = self.features.space().params();
        self.cliques
            .iter()
            .zip(&self.components)
            .map(|(c, k)| (c.iter().map(|&i| params[i].id.as_str()).collect::<Vec<_>>().join(" + "), k.as_ref()))
            .collect()
    }

    fn describe(&self, post: &Posterior) -> serde_json::Value {
        let params = self.features.space().params();
        let name = |i: usize| params[i].id.clone();
        let h = post.gp.hyperparameters();
        serde_json::json!({
            "model": "additive GP over a dependency graph's cliques (Rolland et al. 2018)",
            "trials": post.gp.n(),
            "edges": self.graph.edges().iter().map(|&(a, b)| [name(a), name(b)]).collect::<Vec<_>>(),
            "cliques": self.cliques.iter().map(|c| c.iter().map(|&i| name(i)).collect::<Vec<_>>()).collect::<Vec<_>>(),
            "graph": if self.learned_at.is_some() { "learned" } else { "given" },
            "graphLearnedAt": self.learned_at,
            "gibbsEvaluations": self.gibbs_evaluations,
            "junctionTreeMaxClique": self.tree.max_clique(),
            "gridSize": self.values.iter().map(Vec::len).max(),
            "beta": self.beta(post),
            "priorMean": post.prior_mean(),
            "lengthScales": (0..params.len()).map(|i| (name(i), serde_json::json!(h.kernel[1 + i].exp()))).collect::<serde_json::Map<String, serde_json::Value>>(),
            "logNoiseVariance": h.log_noise,
        })
    }

    fn width(&self) -> usize {
        self.features.dim()
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    /// The fraction of visited samples with edge 0–1, and the sampler's result.
    fn frequency(edge_prior: f64, mut phi: impl FnMut(&Graph) -> f64, budget: usize) -> (f64, Learned) {
        let sampler = Gibbs { edge_prior, max_clique: 6, budget };
        let (mut hits, mut seen) = (0usize, 0usize);
        let learned = sampler.run(
            Graph::empty(4),
            vec![2; 4],
            &mut |g, _| phi(g),
            &mut |g| {
                seen += 1;
                hits += usize::from(g.has_edge(0, 1));
            },
            &mut StdRng::seed_from_u64(3),
        );
        (hits as f64 / seen as f64, learned)
    }

    #[test]
    fn the_gibbs_conditionals_follow_the_prior_and_the_likelihood() {
        // The reading's §7 item 9. No data (φ ≡ 0): edges appear with probability p.
        let (f, _) = frequency(0.5, |_| 0.0, 40_000);
        assert!((f - 0.5).abs() < 0.03, "p = 0.5: {f}");
        let (f, _) = frequency(0.2, |_| 0.0, 40_000);
        assert!((f - 0.2).abs() < 0.03, "p = 0.2: {f}");
        // A likelihood favouring edge 0–1 by 1.5 nats: logistic(logit 0.5 + 1.5) = 0.818.
        let (f, learned) = frequency(0.5, |g| if g.has_edge(0, 1) { 1.5 } else { 0.0 }, 40_000);
        assert!((f - 0.818).abs() < 0.03, "{f}");
        assert!(learned.graph.has_edge(0, 1), "the most likely sample has the favoured edge");
        // p → 0 leaves the graph empty.
        let (f, learned) = frequency(1e-9, |_| 0.0, 5_000);
        assert_eq!(f, 0.0);
        assert!(learned.graph.edges().is_empty());
    }

    #[test]
    fn graphs_beyond_the_clique_bound_are_never_sampled() {
        let sampler = Gibbs { edge_prior: 0.9, max_clique: 2, budget: 5_000 };
        let mut worst = 0;
        sampler.run(
            Graph::empty(5),
            vec![2; 5],
            &mut |_, _| 0.0,
            &mut |g| worst = worst.max(JunctionTree::new(g).max_clique()),
            &mut StdRng::seed_from_u64(1),
        );
        assert!(worst <= 2, "a triangulated clique of {worst}");
    }
}
