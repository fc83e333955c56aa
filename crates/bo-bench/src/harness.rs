//! Runs a designer on a problem in process, as a study would: each step fits the designer on
//! all completed trials (warm-started from the previous fit's state), asks for one suggestion —
//! or a batch of several, as parallel workers would —, evaluates it. Records best-so-far simple
//! regret, the seconds each fit + suggest took, and — in a space with INTEGER, DISCRETE or
//! CATEGORICAL parameters — how many distinct cells of them the run evaluated.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use anyhow::{Context, Result};
use bo_core::designer::designer_for;
use bo_core::{Assignment, AssignmentKey, Domain, Goal, Observation, Outcome, SearchSpace, StudySpec};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::problems::Problem;

/// One seed's trace.
#[derive(Serialize)]
pub struct RunTrace {
    /// The seed.
    pub seed: u64,
    /// Best-so-far simple regret after each evaluation.
    pub regret: Vec<f64>,
    /// Seconds of fit + suggest before each evaluation.
    pub suggest_seconds: Vec<f64>,
    /// For a noisy problem: the best (lowest) noisy observation so far after each evaluation —
    /// what a user of the service sees, and what Zhang, Hung, Lin & Liu reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_observed: Option<Vec<f64>>,
    /// For a problem with a known structure (a dependency graph, or disjoint groups read as
    /// cliques): (evaluations, CC, CS) of the model's graph every 25 evaluations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_recovery: Option<Vec<(usize, f64, f64)>>,
    /// Each evaluation's suggestion, when asked for (`run --suggestions`): what the golden
    /// check compares (`tests/same_suggestions.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<bo_core::Assignment>,
    /// Under `AUTO`: (evaluations, model) each time the chosen model changed.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub auto_choices: Vec<(usize, String)>,
    /// In a space with discrete parameters (INTEGER, DISCRETE, CATEGORICAL): how many distinct
    /// combinations of their values the run evaluated ([`distinct_cells`]) — a search that keeps
    /// returning to evaluated cells shows here before it shows in the regret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells: Option<usize>,
}

/// How many distinct combinations of the discrete parameters' values (INTEGER, DISCRETE,
/// CATEGORICAL; an inactive one counts as absent) `evaluated` holds; `None` in a space without
/// discrete parameters.
pub fn distinct_cells(space: &SearchSpace, evaluated: &[Assignment]) -> Option<usize> {
    let discrete: Vec<&str> = space.params().into_iter().filter(|p| !matches!(p.domain, Domain::Double { .. })).map(|p| &*p.id).collect();
    if discrete.is_empty() {
        return None;
    }
    let cells: HashSet<AssignmentKey> =
        evaluated.iter().map(|a| discrete.iter().filter_map(|id| Some((*id, a.get(id)?.clone()))).collect::<Assignment>().key()).collect();
    Some(cells.len())
}

/// The median of `v` (the mean of the middle two for an even count; NaN when empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// A study spec minimising `f` over the problem's space with `algorithm`.
pub fn spec_for(problem: &Problem, algorithm: &str, config: serde_json::Value) -> StudySpec {
    spec_with_space((problem.space)(), algorithm, config)
}

/// A study spec minimising `f` over `space` with `algorithm`.
pub fn spec_with_space(space: SearchSpace, algorithm: &str, config: serde_json::Value) -> StudySpec {
    StudySpec::new("f", Goal::Minimize, space, algorithm).with_config(config)
}

/// Runs `algorithm` on `problem` for `budget` evaluations with `seed`, asking for `batch`
/// suggestions at each step (the last step's fewer when the budget runs out).
pub fn run(problem: &Problem, algorithm: &str, config: serde_json::Value, budget: usize, batch: usize, seed: u64) -> Result<RunTrace> {
    anyhow::ensure!(batch >= 1, "a batch holds at least one suggestion");
    let spec = spec_for(problem, algorithm, config);
    let designer = designer_for(&spec).with_context(|| format!("algorithm {algorithm}"))?;
    let study = bo_core::Problem { spec, seed, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut history: Vec<Observation> = Vec::with_capacity(budget);
    let mut warm = None;
    let mut best = f64::INFINITY;
    let truth = problem.true_graph();
    let mut trace = RunTrace {
        seed,
        regret: Vec::with_capacity(budget),
        suggest_seconds: Vec::with_capacity(budget),
        best_observed: (problem.noise_sd > 0.0).then(Vec::new),
        graph_recovery: truth.as_ref().map(|_| Vec::new()),
        suggestions: Vec::with_capacity(budget),
        auto_choices: Vec::new(),
        cells: None,
    };
    let mut best_observed = f64::INFINITY;
    let mut noise = Noise::new(problem, seed);
    while history.len() < budget {
        let start = Instant::now();
        let fitted = designer.fit(&study, &history, warm.as_ref(), &mut rng)?;
        let assignments = fitted.model.suggest(&[], batch.min(budget - history.len()), &mut rng)?;
        anyhow::ensure!(!assignments.is_empty(), "the designer proposed nothing");
        // A batch's one fit and search, shared among its members.
        let seconds = start.elapsed().as_secs_f64() / assignments.len() as f64;
        if let (Some(truth), Some(log)) = (&truth, &mut trace.graph_recovery)
            && history.len().is_multiple_of(25)
            && !history.is_empty()
        {
            let (cc, cs) = crate::recovery::recovery(truth, &crate::recovery::described_edges(&fitted.model.describe()));
            log.push((history.len(), cc, cs));
        }
        if matches!(algorithm, "AUTO" | "ALGORITHM_UNSPECIFIED")
            && let Some(chosen) = fitted.model.describe()["auto"]["chosen"].as_str()
            && trace.auto_choices.last().is_none_or(|(_, last)| last != chosen)
        {
            trace.auto_choices.push((history.len(), chosen.to_owned()));
        }
        warm = Some(fitted.state);
        for assignment in assignments {
            trace.suggest_seconds.push(seconds);
            trace.suggestions.push(assignment.clone());
            let y = (problem.eval)(&assignment);
            best = best.min(y);
            let observed = noise.observe(y);
            best_observed = best_observed.min(observed);
            if let Some(b) = &mut trace.best_observed {
                b.push(best_observed);
            }
            trace.regret.push((best - problem.optimum).max(0.0));
            history.push(Observation {
                objective_sd: None,
                assignment,
                outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), observed)])),
            });
        }
    }
    trace.cells = distinct_cells(&study.spec.space, &trace.suggestions);
    Ok(trace)
}

/// What a designer is told of a problem's value: the value plus the problem's measurement noise
/// (`noise_sd`), drawn from a stream of the seed's own, so a noisy problem's designer sees the
/// same draws of its own whatever else the run draws.
pub struct Noise {
    rng: StdRng,
    sd: f64,
}

impl Noise {
    /// The noise of `problem`'s measurements under `seed`.
    pub fn new(problem: &Problem, seed: u64) -> Noise {
        Noise { rng: StdRng::seed_from_u64(seed ^ 0x006e_6f69_7365), sd: problem.noise_sd }
    }

    /// The measurement of the true value `y`.
    pub fn observe(&mut self, y: f64) -> f64 {
        if self.sd > 0.0 { y + self.sd * standard_normal(&mut self.rng) } else { y }
    }
}

/// A standard normal draw (Box–Muller).
fn standard_normal(rng: &mut StdRng) -> f64 {
    use rand::RngExt;
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::by_name;

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// The in-process check: GP_BANDIT beats random search on Branin within 30
    /// evaluations, over 5 fixed seeds (median final simple regret).
    #[test]
    fn gp_bandit_beats_random_search_on_branin_in_30_evaluations() {
        let branin = by_name("branin").unwrap();
        let final_regret = |algorithm: &str| -> Vec<f64> {
            (0..5).map(|seed| *run(&branin, algorithm, serde_json::Value::Null, 30, 1, seed).unwrap().regret.last().unwrap()).collect()
        };
        let (gp, random) = (final_regret("GP_BANDIT"), final_regret("RANDOM_SEARCH"));
        assert!(median(gp.clone()) < median(random.clone()), "median simple regret: GP {gp:?} vs random {random:?}");
        assert!(median(gp.clone()) < 0.05, "GP_BANDIT should be near the optimum after 30 evaluations: {gp:?}");
    }

    /// A run in batches spends exactly its budget (the last batch cut short), one regret and one
    /// suggestion per evaluation, never the same point twice.
    #[test]
    fn a_batched_run_spends_exactly_its_budget() {
        let branin = by_name("branin").unwrap();
        let trace = run(&branin, "GP_BANDIT", serde_json::Value::Null, 22, 4, 0).unwrap();
        assert_eq!((trace.regret.len(), trace.suggestions.len(), trace.suggest_seconds.len()), (22, 22, 22));
        let distinct: std::collections::HashSet<bo_core::AssignmentKey> = trace.suggestions.iter().map(|a| a.key()).collect();
        assert_eq!(distinct.len(), 22, "a batch's members and earlier trials are never repeated");
        assert!(trace.regret.windows(2).all(|w| w[1] <= w[0]), "best-so-far regret never rises");
        assert!(run(&branin, "GP_BANDIT", serde_json::Value::Null, 5, 0, 0).is_err(), "an empty batch is refused");
    }

    /// Median final regret of `algorithm` on `problem` over seeds 0, 1, 2.
    fn median_final(problem: &str, algorithm: &str, config: serde_json::Value, budget: usize) -> f64 {
        let p = by_name(problem).unwrap();
        median((0..3).map(|seed| *run(&p, algorithm, config.clone(), budget, 1, seed).unwrap().regret.last().unwrap()).collect())
    }

    /// The in-process check for ADD_GP_UCB, on its home problem: an additive function
    /// of three groups of three (Kandasamy's (10, 3, 3)).
    #[test]
    fn add_gp_ucb_beats_random_search_on_an_additive_function() {
        let (additive, random) = (
            median_final("kandasamy_10_3_3", "ADD_GP_UCB", serde_json::Value::Null, 50),
            median_final("kandasamy_10_3_3", "RANDOM_SEARCH", serde_json::Value::Null, 50),
        );
        assert!(additive < random, "median simple regret: ADD_GP_UCB {additive} vs random {random}");
    }

    /// The same for OVERLAP_ADD_GP, on Rolland et al.'s 3 × 3 grid graph function.
    #[test]
    fn overlap_add_gp_beats_random_search_on_a_grid_graph_function() {
        let (overlap, random) = (
            median_final("rolland_grid_d9", "OVERLAP_ADD_GP", serde_json::Value::Null, 50),
            median_final("rolland_grid_d9", "RANDOM_SEARCH", serde_json::Value::Null, 50),
        );
        assert!(overlap < random, "median simple regret: OVERLAP_ADD_GP {overlap} vs random {random}");
    }

    /// The same for REMBO, on Branin hidden in 25 dimensions. (Over the first ~100 evaluations
    /// random search is ahead: each embedding first learns where its box is clipped flat;
    /// docs/journal/benchmarks.md.)
    #[test]
    fn rembo_beats_random_search_on_branin_in_25_dimensions() {
        let config = serde_json::json!({"d": 2, "k": 2});
        let (rembo, random) =
            (median_final("branin_d25", "REMBO", config, 200), median_final("branin_d25", "RANDOM_SEARCH", serde_json::Value::Null, 200));
        assert!(rembo < random, "median simple regret: REMBO {rembo} vs random {random}");
    }

    /// Every designer's suggestions, seed for seed, equal those checked in under `golden/`
    /// (`bo-bench run --budget 40 --seeds 2 --suggestions`, one problem per GP designer, and
    /// REMBO's `HIGH_DIM` kernel with `--config '{"kernel":"HIGH_DIM"}'`): the
    /// proof that a change of layout changed no behaviour. A change meant to alter suggestions
    /// rewrites the files with `BO_BLESS=1 cargo test -p bo-bench same_seeds` and says why.
    #[test]
    fn the_same_seeds_give_the_same_suggestions() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden");
        let bless = std::env::var_os("BO_BLESS").is_some();
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        assert!(files.len() >= 6, "golden files missing in {}", dir.display());
        for path in files {
            let mut golden: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let problem = by_name(golden["problem"].as_str().unwrap()).unwrap();
            let algorithm = golden["algorithm"].as_str().unwrap().to_owned();
            let budget = golden["budget"].as_u64().unwrap() as usize;
            let config = golden["config"].clone();
            for run_json in golden["runs"].as_array_mut().unwrap() {
                let seed = run_json["seed"].as_u64().unwrap();
                let trace = run(&problem, &algorithm, config.clone(), budget, 1, seed).unwrap();
                let now = serde_json::to_value(&trace.suggestions).unwrap();
                if bless {
                    *run_json = serde_json::to_value(&trace).unwrap();
                    continue;
                }
                let before = &run_json["suggestions"];
                let first = (0..budget).find(|&i| now[i] != before[i]);
                assert!(
                    first.is_none(),
                    "{algorithm} seed {seed}: suggestion {} differs:\n now {}\n was {}",
                    first.unwrap(),
                    now[first.unwrap()],
                    before[first.unwrap()]
                );
                assert_eq!(serde_json::to_value(&trace.regret).unwrap(), run_json["regret"], "{algorithm} seed {seed}: regret");
            }
            if bless {
                std::fs::write(&path, serde_json::to_string(&golden).unwrap()).unwrap();
            }
        }
    }

    #[test]
    fn a_noisy_problem_is_measured_with_its_noise_and_a_noise_free_one_exactly() {
        let (noisy, exact) = (by_name("hartmann6_noisy").unwrap(), by_name("hartmann6").unwrap());
        let draws = |p: &Problem, seed| {
            let mut noise = Noise::new(p, seed);
            (0..200).map(|_| noise.observe(1.0) - 1.0).collect::<Vec<f64>>()
        };
        assert!(draws(&exact, 3).iter().all(|e| *e == 0.0));
        let errors = draws(&noisy, 3);
        assert_eq!(errors, draws(&noisy, 3), "the same seed draws the same noise");
        let sd = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len() as f64).sqrt();
        assert!((sd / noisy.noise_sd - 1.0).abs() < 0.2, "spread {sd} against the problem's {}", noisy.noise_sd);
    }

    /// A cell is the discrete parameters' values: the reals do not make a new one, an inactive
    /// parameter is absent from its cell, and a space of reals has none.
    #[test]
    fn cells_count_the_discrete_values_evaluated() {
        use bo_core::{Domain, ParamSpec, ParamValue, Scale};
        let param = |id: &str, domain| ParamSpec { id: id.into(), domain, scale: Scale::Linear, default: None, children: vec![] };
        let space = SearchSpace::new(vec![
            param("n", Domain::Integer { min: 0, max: 3 }),
            param("c", Domain::Categorical { values: vec!["a".into(), "b".into()] }),
            param("x", Domain::Double { min: 0.0, max: 1.0 }),
        ])
        .unwrap();
        let at = |n: i64, c: Option<&str>, x: f64| -> Assignment {
            let mut a: Assignment = [("n", ParamValue::Int(n)), ("x", ParamValue::Float(x))].into_iter().collect();
            if let Some(c) = c {
                a.insert("c", ParamValue::Categorical(c.into()));
            }
            a
        };
        let evaluated = [at(1, Some("a"), 0.1), at(1, Some("a"), 0.9), at(2, Some("a"), 0.1), at(1, Some("b"), 0.1), at(1, None, 0.5)];
        assert_eq!(distinct_cells(&space, &evaluated), Some(4));
        let reals = SearchSpace::new(vec![param("x", Domain::Double { min: 0.0, max: 1.0 })]).unwrap();
        assert_eq!(distinct_cells(&reals, &evaluated), None);
    }

    #[test]
    fn a_trace_has_one_non_increasing_regret_per_evaluation() {
        let trace = run(&by_name("hartmann3").unwrap(), "QUASI_RANDOM_SEARCH", serde_json::Value::Null, 12, 1, 1).unwrap();
        assert_eq!((trace.regret.len(), trace.suggest_seconds.len()), (12, 12));
        assert!(trace.regret.windows(2).all(|w| w[1] <= w[0]) && trace.regret.iter().all(|r| *r >= 0.0));
    }
}
