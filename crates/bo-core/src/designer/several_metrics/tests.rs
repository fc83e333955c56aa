//! The several-metrics wrapper's tests.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::acquisition::*;
use super::search::*;
use super::*;
use crate::designer::{Model, Problem, designer_for};
use crate::optimize::sobol::sobol_point;
use crate::study::{Goal, MetricSpec, StudySpec};
use crate::trial::{Assignment, Observation, Outcome};

/// The unit square, x0 and x1.
fn unit_square() -> SearchSpace {
    crate::designer::testing::fixtures::unit_cube(2)
}

fn two_metric_spec(algorithm: &str) -> StudySpec {
    let mut spec = StudySpec::new("f1", Goal::Minimize, unit_square(), algorithm);
    spec.metrics.push(MetricSpec::objective("f2", Goal::Minimize));
    spec
}

/// The two objectives of a simple trade-off: f1 = x0, f2 = 1 − x0 + x1² (the front is x1 = 0).
fn evaluate(a: &Assignment) -> Outcome {
    let v = |id: &str| match a.get(id) {
        Some(crate::trial::ParamValue::Float(x)) => *x,
        _ => panic!("{id} missing"),
    };
    Outcome::Measured(BTreeMap::from([("f1".into(), v("x0")), ("f2".into(), 1.0 - v("x0") + v("x1").powi(2))]))
}

#[test]
fn scalarisations_reward_only_what_adds_hypervolume() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut s = Scalarised::new(2, vec![(0.0, 1.0), (0.0, 1.0)], &mut rng);
    s.raise_floor(&[0.5, 0.5]);
    assert!(s.score(&[0.4, 0.4]) < 1e-6, "a dominated value adds nothing: {}", s.score(&[0.4, 0.4]));
    assert!(s.score(&[0.6, 0.6]) > s.score(&[0.9, 0.1]).max(1e-6), "the dominating point adds most");
    assert!(s.score(&[0.9, 0.4]) > 1e-4, "a new trade-off adds some");
    // Without a floor the mean scalarisation estimates the hypervolume (up to its constant
    // π/4 for k = 2): a unit box and a half box.
    let mut fresh = Scalarised::new(2, vec![(0.0, 1.0), (0.0, 1.0)], &mut rng);
    fresh.floors.fill(0.0);
    let ratio = fresh.score(&[1.0, 0.5]) / fresh.score(&[1.0, 1.0]);
    assert!((ratio - 0.5).abs() < 0.05, "the half box scores half: {ratio}");
}

#[test]
fn fronts_keep_the_non_dominated() {
    let v = [vec![1.0, 0.0], vec![0.5, 0.5], vec![0.4, 0.4], vec![0.0, 1.0], vec![0.5, 0.5]];
    let indexed: Vec<(usize, &Vec<f64>)> = v.iter().enumerate().collect();
    let mut f = front(&indexed);
    f.sort();
    assert_eq!(f, vec![0, 1, 3], "the duplicate counts once, the dominated not at all");
}

/// A GP_BANDIT study of two metrics spreads its suggestions along the front (x1 near 0) over
/// the whole range of x0, where optimising the first metric alone would pile them at x0 = 0.
#[test]
fn two_objectives_are_both_optimised() {
    let spec = two_metric_spec("GP_BANDIT");
    let designer = designer_for(&spec).unwrap();
    let problem = Problem { spec, seed: 3, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(3);
    let mut history: Vec<Observation> = Vec::new();
    let mut warm = None;
    while history.len() < 30 {
        let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
        warm = Some(fitted.state);
        let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
        history.push(Observation { objective_sd: None, outcome: evaluate(&a), assignment: a });
    }
    let late: Vec<(f64, f64)> = history[15..]
        .iter()
        .map(|o| match (o.assignment.get("x0"), o.assignment.get("x1")) {
            (Some(crate::trial::ParamValue::Float(a)), Some(crate::trial::ParamValue::Float(b))) => (*a, *b),
            _ => unreachable!(),
        })
        .collect();
    let near_front = late.iter().filter(|(_, x1)| *x1 < 0.15).count();
    assert!(near_front >= 10, "most late suggestions lie near the front: {late:?}");
    let spread = late.iter().filter(|(_, x1)| *x1 < 0.15).map(|(x0, _)| *x0).fold((1.0f64, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    assert!(spread.1 - spread.0 > 0.5, "and spread along it, not at one metric's optimum: {late:?}");
    let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
    let both = fitted.model.predictor().unwrap().predict_metrics(&[history[0].assignment.clone()]).expect("every objective predicts");
    assert_eq!(both.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["f1", "f2"]);
    let batch = fitted.model.suggest(&[], 4, &mut rng).unwrap();
    let keys: HashSet<crate::AssignmentKey> = batch.iter().map(Assignment::key).collect();
    assert_eq!(keys.len(), 4, "a batch has distinct members");
    // Within a context the model's own acquisition answers, and keeps the fixed value.
    let context = Assignment::new(BTreeMap::from([("x1".into(), crate::trial::ParamValue::Float(0.25))]));
    let within = fitted.model.context_search().unwrap().suggest_in_context(&context, &[], &mut rng).expect("its own search").unwrap();
    assert_eq!(within.get("x1"), Some(&crate::trial::ParamValue::Float(0.25)), "{within:?}");
}

/// Maximise f = x0 + x1 with the safety metric g = x0² + x1² at most 0.5: the unconstrained
/// optimum (1, 1) is unsafe, the safe one is (0.5, 0.5) with f = 1.
fn safe_spec(desired: f64) -> StudySpec {
    let mut spec = StudySpec::new("f", Goal::Maximize, unit_square(), "GP_BANDIT");
    spec.metrics.push(MetricSpec {
        safety: Some(crate::study::Safety { threshold: 0.5, desired_min_safe_fraction: desired }),
        ..MetricSpec::objective("g", Goal::Minimize)
    });
    spec
}

fn constrained(a: &Assignment) -> Outcome {
    let v = |id: &str| match a.get(id) {
        Some(crate::trial::ParamValue::Float(x)) => *x,
        _ => panic!("{id} missing"),
    };
    let (x0, x1) = (v("x0"), v("x1"));
    Outcome::Measured(BTreeMap::from([("f".into(), x0 + x1), ("g".into(), x0 * x0 + x1 * x1)]))
}

/// Runs a sequential study of `n` trials; returns the history and the last fitted model.
fn run(spec: StudySpec, n: usize, seed: u64) -> (Vec<Observation>, Arc<dyn Model>) {
    let designer = designer_for(&spec).unwrap();
    let problem = Problem { spec, seed, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut history, mut warm) = (Vec::new(), None);
    loop {
        let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
        if history.len() == n {
            return (history, fitted.model);
        }
        warm = Some(fitted.state);
        let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
        history.push(Observation { objective_sd: None, outcome: constrained(&a), assignment: a });
    }
}

fn values(o: &Observation) -> (f64, f64) {
    match &o.outcome {
        Outcome::Measured(m) => (m["f"], m["g"]),
        Outcome::Infeasible => unreachable!(),
    }
}

/// Constrained expected improvement finds the safe optimum (the first objective alone would
/// climb to the unsafe corner) and then samples both sides of the constraint's boundary; a
/// target fraction of safe trials keeps it on the safe side.
#[test]
fn a_safety_metric_keeps_the_search_safe() {
    let safe_late = |history: &[Observation]| history[20..].iter().filter(|o| values(o).1 <= 0.5).count();
    let (free, model) = run(safe_spec(0.0), 40, 5);
    let best_safe = free.iter().map(values).filter(|(_, g)| *g <= 0.5).map(|(f, _)| f).fold(f64::NEG_INFINITY, f64::max);
    assert!(best_safe > 0.97, "the safe optimum is f = 1: best safe {best_safe}");
    let at_the_boundary = free[20..].iter().filter(|o| (values(o).1 - 0.5).abs() < 0.05).count();
    assert!(at_the_boundary >= 15, "without a target the search hugs the constraint's boundary: {at_the_boundary} of 20");
    let described = model.describe();
    assert_eq!(described["constraints"][0]["metricId"], "g", "{described}");
    assert!(described["safety"]["g"].is_object(), "the safety metric's own model is described: {described}");
    let predicted = model.predictor().unwrap().predict_metrics(&[free[0].assignment.clone()]).unwrap();
    assert_eq!(predicted.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["f", "g"]);
    let (careful, _) = run(safe_spec(0.95), 40, 5);
    let best_careful = careful.iter().map(values).filter(|(_, g)| *g <= 0.5).map(|(f, _)| f).fold(f64::NEG_INFINITY, f64::max);
    assert!(
        safe_late(&careful) >= 15 && safe_late(&careful) > safe_late(&free),
        "a target of 95 % safe trials keeps most late trials safe: {} of 20, against {} without one",
        safe_late(&careful),
        safe_late(&free)
    );
    assert!(best_careful > 0.95, "and still gets close to the safe optimum: {best_careful}");
}

/// Before any trial is safe the search looks for safety alone: with every initial trial
/// unsafe (a threshold only a corner meets), the next suggestions move towards it.
#[test]
fn without_a_safe_trial_the_search_seeks_safety() {
    let mut spec = safe_spec(0.0);
    spec.metrics[1].safety = Some(crate::study::Safety { threshold: 0.02, desired_min_safe_fraction: 0.0 });
    let designer = designer_for(&spec).unwrap();
    let problem = Problem { spec, seed: 1, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(1);
    let history: Vec<Observation> = (0..12)
        .map(|i| problem.spec.space.decode(&sobol_point(i, 2, 3)))
        .filter(|a| values(&Observation { objective_sd: None, outcome: constrained(a), assignment: a.clone() }).1 > 0.02)
        .map(|a| Observation { objective_sd: None, outcome: constrained(&a), assignment: a })
        .collect();
    let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
    let next = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
    let (_, g) = values(&Observation { objective_sd: None, outcome: constrained(&next), assignment: next.clone() });
    let nearest = history.iter().map(|o| values(o).1).fold(f64::INFINITY, f64::min);
    assert!(g < nearest, "the suggestion ({next:?}, g = {g}) is safer than every trial so far (g ≥ {nearest})");
}

/// A several-metric study's models see the metrics' own values and the whole space unless
/// its settings say otherwise; AUTO takes the same settings for its candidates.
#[test]
fn several_metrics_models_are_unwarped_unless_named() {
    let keys = |spec: &StudySpec| single_objective_settings(spec).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    let spec = safe_spec(0.0);
    assert_eq!(keys(&spec), ["outputWarping", "trustRegion"]);
    let named = spec.clone().with_config(serde_json::json!({"outputWarping": "YEO_JOHNSON"}));
    assert_eq!(keys(&named), ["trustRegion"]);
    let tree = StudySpec { algorithm: "ADD_TREE".into(), ..spec.clone() };
    assert_eq!(keys(&tree), ["outputWarping"]);
    assert!(keys(&StudySpec { algorithm: "RANDOM_SEARCH".into(), ..spec.clone() }).is_empty());
    for algorithm in ["GP_BANDIT", "AUTO", "ADD_GP_UCB"] {
        let spec = StudySpec { algorithm: algorithm.into(), ..safe_spec(0.0) };
        let designer = designer_for(&spec).unwrap_or_else(|e| panic!("{algorithm}: {e}"));
        let problem = Problem { spec, seed: 1, priors: Vec::new() };
        let history: Vec<Observation> = (0..14)
            .map(|i| {
                let a = Assignment::new(BTreeMap::from([
                    ("x0".into(), crate::trial::ParamValue::Float((0.13 + 0.37 * i as f64) % 1.0)),
                    ("x1".into(), crate::trial::ParamValue::Float((0.29 + 0.61 * i as f64) % 1.0)),
                ]));
                Observation { objective_sd: None, outcome: constrained(&a), assignment: a }
            })
            .collect();
        let described = designer.fit(&problem, &history, None, &mut StdRng::seed_from_u64(1)).unwrap().model.describe().to_string();
        assert!(!described.contains("outputWarp") && !described.contains("trustRegion"), "{algorithm}: {described}");
        // The same study of its first metric alone warps and searches a region.
        let mut one = problem.spec.clone();
        one.metrics.truncate(1);
        let described = designer_for(&one).unwrap().fit(&Problem { spec: one, ..problem }, &history, None, &mut StdRng::seed_from_u64(1));
        let described = described.unwrap().model.describe().to_string();
        assert!(described.contains("outputWarp"), "{algorithm}: {described}");
    }
}

/// `infeasibleTrials`: PENALTY or CLASSIFIER, refused otherwise and for designers that learn
/// nothing; with CLASSIFIER, a study whose trials outside the disk x0² + x1² ≤ 0.5 fail
/// finds the best feasible point (f = x0 + x1 = 1), and its model describes the classifier.
#[test]
fn a_classifier_models_infeasible_trials() {
    let with = |algorithm: &str, mode: serde_json::Value| {
        let mut spec = safe_spec(0.0);
        spec.metrics.truncate(1);
        spec.algorithm = algorithm.into();
        spec.with_config(serde_json::json!({ "infeasibleTrials": mode }))
    };
    assert!(designer_for(&with("GP_BANDIT", "PENALTY".into())).is_ok());
    let e = designer_for(&with("GP_BANDIT", "SOMETIMES".into())).err().unwrap().to_string();
    assert!(e.contains("infeasibleTrials") && e.contains("CLASSIFIER"), "{e}");
    let e = designer_for(&with("RANDOM_SEARCH", "CLASSIFIER".into())).err().unwrap().to_string();
    assert!(e.contains("learns nothing"), "{e}");
    // The best feasible value after 40 trials, and the last model.
    // Both on the values as they are and the whole space (the classifier's models are), so
    // the comparison is of the two treatments of infeasible trials alone.
    let best_of = |mode: &str| {
        let mut spec = with("GP_BANDIT", mode.into());
        spec.algorithm_config["outputWarping"] = serde_json::json!("NONE");
        spec.algorithm_config["trustRegion"] = serde_json::json!(false);
        let designer = designer_for(&spec).unwrap();
        let problem = Problem { spec, seed: 2, priors: Vec::new() };
        let mut rng = StdRng::seed_from_u64(2);
        let (mut history, mut warm): (Vec<Observation>, _) = (Vec::new(), None);
        let mut model = None;
        while history.len() < 40 {
            let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
            warm = Some(fitted.state);
            let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
            let (f, g) = values(&Observation { objective_sd: None, outcome: constrained(&a), assignment: a.clone() });
            let outcome = if g <= 0.5 { Outcome::Measured(BTreeMap::from([("f".into(), f)])) } else { Outcome::Infeasible };
            history.push(Observation { objective_sd: None, assignment: a, outcome });
            model = Some(fitted.model);
        }
        let best = history
            .iter()
            .filter_map(|o| match &o.outcome {
                Outcome::Measured(m) => Some(m["f"]),
                Outcome::Infeasible => None,
            })
            .fold(f64::NEG_INFINITY, f64::max);
        (best, model.unwrap())
    };
    let (classified, model) = best_of("CLASSIFIER");
    let (penalised, _) = best_of("PENALTY");
    assert!(classified > 0.95 && classified >= penalised, "the best feasible point is f = 1: {classified} (with the penalty {penalised})");
    let described = model.describe();
    assert!(described["safety"][FEASIBILITY].is_object(), "{described}");
}

/// A metric that no trial reports does not hold the study in its initial design: the study
/// is optimised on the metrics that are reported.
#[test]
fn an_unreported_metric_leaves_the_others_optimised() {
    let spec = two_metric_spec("GP_BANDIT");
    let designer = designer_for(&spec).unwrap();
    let problem = Problem { spec, seed: 3, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(4);
    let history: Vec<Observation> = (0..20)
        .map(|i| {
            let a = problem.spec.space.decode(&sobol_point(i, 2, 9));
            let Outcome::Measured(mut m) = evaluate(&a) else { unreachable!() };
            m.remove("f2");
            Observation { objective_sd: None, assignment: a, outcome: Outcome::Measured(m) }
        })
        .collect();
    let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
    assert!(fitted.model.predictor().unwrap().predict(&[history[0].assignment.clone()]).is_some(), "f1's GP answers");
    assert!(fitted.model.predictor().unwrap().predict_metrics(&[]).is_none(), "not a model of both");
}
