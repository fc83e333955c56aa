//! Random search spaces up to the default limits — deep trees, a thousand categories, bounds at
//! the edge of what a double or a trial's integer holds, log scales over hundreds of decades —
//! go through validation, the map to the unit cube and back, and every designer's first
//! suggestions (and, on smaller spaces, a suggestion from a fitted model) without a panic, and
//! every suggestion is feasible.

use std::collections::BTreeMap;

use bo_core::designer::designer_for;
use bo_core::designer::testing::study;
use bo_core::space::MAX_SAFE_INTEGER;
use bo_core::{
    ALGORITHMS, Assignment, Conditional, Domain, Limits, Observation, Outcome, ParamSpec, ParentValues, Problem, Scale, SearchSpace,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// What a random tree may hold.
struct Budget {
    params: usize,
    max_values: usize,
    depth: usize,
}

fn random_domain(rng: &mut StdRng, max_values: usize, may_branch: bool) -> (Domain, Scale) {
    let linear_or = |rng: &mut StdRng, other: Scale| if rng.random_bool(0.5) { Scale::Linear } else { other };
    match rng.random_range(0..if may_branch { 6 } else { 4 }) {
        0 => {
            // Ordinary, huge, degenerate or tiny ranges.
            let (min, max) = match rng.random_range(0..4) {
                0 => (-1.0, 1.0),
                1 => (-8e307, 8e307),
                2 => (0.5, 0.5),
                _ => (1e-300, 1e300),
            };
            let logish = if rng.random_bool(0.5) { Scale::Log } else { Scale::ReverseLog };
            let scale = if min > 0.0 { linear_or(rng, logish) } else { Scale::Linear };
            (Domain::Double { min, max }, scale)
        }
        1 => {
            let (min, max) = match rng.random_range(0..3) {
                0 => (0, 10),
                1 => (-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
                _ => (1, MAX_SAFE_INTEGER),
            };
            let scale = if min > 0 { linear_or(rng, Scale::Log) } else { Scale::Linear };
            (Domain::Integer { min, max }, scale)
        }
        2 | 4 => {
            let n = rng.random_range(1..=max_values);
            let mut x = -1e6 * rng.random::<f64>();
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    x += 1e-9 + rng.random::<f64>() * 1e3;
                    x
                })
                .collect();
            (Domain::Discrete { values }, Scale::Linear)
        }
        _ => {
            let n = rng.random_range(1..=max_values);
            (Domain::Categorical { values: (0..n).map(|k| format!("v{k} é\u{2603}")).collect() }, Scale::Linear)
        }
    }
}

fn random_param(rng: &mut StdRng, budget: &mut Budget, next_id: &mut usize, depth: usize) -> Option<ParamSpec> {
    if budget.params == 0 {
        return None;
    }
    budget.params -= 1;
    *next_id += 1;
    let may_branch = depth < budget.depth && budget.params > 0;
    let (domain, scale) = random_domain(rng, budget.max_values, may_branch);
    let mut p = ParamSpec { id: format!("p{next_id}_{depth}"), domain, scale, default: None, children: vec![] };
    if may_branch && rng.random_bool(0.5) {
        let values: Vec<ParentValues> = match &p.domain {
            Domain::Categorical { values } => (0..rng.random_range(1..=3))
                .map(|_| ParentValues::Categorical(vec![values[rng.random_range(0..values.len())].clone()]))
                .collect(),
            Domain::Integer { min, max } => (0..rng.random_range(1..=3))
                .map(|_| ParentValues::Integer(vec![(*min + rng.random_range(0..=(max - min).min(10))).min(*max)]))
                .collect(),
            Domain::Discrete { values } => {
                (0..rng.random_range(1..=3)).map(|_| ParentValues::Discrete(vec![values[rng.random_range(0..values.len())]])).collect()
            }
            Domain::Double { .. } => vec![],
        };
        for parent_values in values {
            if let Some(spec) = random_param(rng, budget, next_id, depth + 1) {
                p.children.push(Conditional { parent_values, spec });
            }
        }
    }
    Some(p)
}

fn random_space(seed: u64, params: usize, max_values: usize) -> Vec<ParamSpec> {
    let mut rng = StdRng::seed_from_u64(seed);
    let limits = Limits::default();
    let mut budget = Budget { params, max_values, depth: limits.tree_depth };
    let mut next_id = 0;
    let mut roots = Vec::new();
    while let Some(p) = random_param(&mut rng, &mut budget, &mut next_id, 1) {
        roots.push(p);
    }
    roots
}

/// Every algorithm's first suggestions on `space` (and, with `fit`, one from a model fitted on
/// a few observations) are feasible; a designer may refuse the space, never panic.
fn every_designer_suggests(space: &SearchSpace, seed: u64, fit: bool) -> Result<(), TestCaseError> {
    let mut rng = StdRng::seed_from_u64(seed);
    for algorithm in ALGORITHMS {
        let config = if fit && *algorithm != "RANDOM_SEARCH" && *algorithm != "QUASI_RANDOM_SEARCH" && *algorithm != "GRID_SEARCH" {
            serde_json::json!({"initialDesignSize": 2})
        } else {
            serde_json::Value::Null
        };
        let study = study(space.clone(), algorithm, config);
        let Ok(designer) = designer_for(&study) else { continue };
        let problem = Problem { spec: study, seed, priors: Vec::new() };
        let history: Vec<Observation> = if fit {
            (0..4)
                .map(|k| {
                    let u: Vec<f64> = (0..space.n_params()).map(|_| rng.random()).collect();
                    let value = if k == 2 { 5e307 } else { rng.random::<f64>() };
                    Observation {
                        objective_sd: None,
                        assignment: space.decode(&u),
                        outcome: Outcome::Measured(BTreeMap::from([("loss".to_owned(), value)])),
                    }
                })
                .collect()
        } else {
            vec![]
        };
        // A designer may fail to fit (the service then falls back); it must not panic.
        let Ok(fitted) = designer.fit(&problem, &history, None, &mut rng) else { continue };
        let pending: Vec<Assignment> = history.iter().map(|o| o.assignment.clone()).collect();
        if let Ok(points) = fitted.model.suggest(&pending, 3, &mut rng) {
            for a in &points {
                prop_assert!(space.check(a).is_ok(), "{algorithm} suggested an infeasible point {a:?}: {:?}", space.check(a));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Spaces up to the default limits: validation, the unit cube, first suggestions.
    #[test]
    fn random_specs_up_to_the_limits(seed in any::<u64>(), params in 1usize..=300, big_values in any::<bool>()) {
        let limits = Limits::default();
        let max_values = if big_values { limits.values } else { 8 };
        let roots = random_space(seed, params, max_values);
        let space = match SearchSpace::with_limits(roots, &limits) {
            Ok(space) => space,
            Err(_) => return Ok(()),
        };
        let mut rng = StdRng::seed_from_u64(seed);
        for _ in 0..4 {
            let u: Vec<f64> = (0..space.n_params()).map(|_| rng.random()).collect();
            let a = space.decode(&u);
            prop_assert!(space.check(&a).is_ok());
            let back = space.decode(&space.encode(&a));
            prop_assert!(space.check(&back).is_ok());
        }
        // What is stored reads back as it was.
        let stored: SearchSpace = serde_json::from_str(&serde_json::to_string(&space).unwrap()).unwrap();
        prop_assert_eq!(&stored, &space);
        every_designer_suggests(&space, seed, false)?;
    }

    /// Smaller random spaces through a fitted model of every designer, with one observation
    /// near the largest double among the others.
    #[test]
    fn random_specs_through_a_fitted_model(seed in any::<u64>(), params in 1usize..=24) {
        let space = match SearchSpace::new(random_space(seed, params, 6)) {
            Ok(space) => space,
            Err(_) => return Ok(()),
        };
        every_designer_suggests(&space, seed, true)?;
    }
}
