//! Ma & Blaschko 2020, Fig. 4b's regression protocol: training sets of n
//! points with every categorical drawn uniformly per decision and continuous values uniform, 50
//! test points drawn the same way, log10 test MSE of the posterior mean; Add-Tree against
//! independent GPs, one per leaf (`GP_BANDIT`'s GP on that leaf's points alone; a leaf with no
//! point predicts the training mean, with one point that point's value).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use bo_core::designer::designer_for;
use bo_core::{Assignment, Observation, Outcome};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use crate::harness::spec_with_space;
use crate::problems::Problem;

/// One row: median log10 test MSE over seeds at `n` training points.
#[derive(Serialize)]
pub struct RegressionRow {
    n: usize,
    add_tree: f64,
    independent: f64,
}

fn sample(problem: &Problem, n: usize, rng: &mut StdRng) -> Vec<Assignment> {
    let space = (problem.space)();
    (0..n).map(|_| space.decode(&(0..space.n_params()).map(|_| rng.random::<f64>()).collect::<Vec<_>>())).collect()
}

fn observe(problem: &Problem, points: &[Assignment]) -> Vec<Observation> {
    points
        .iter()
        .map(|a| Observation {
            objective_sd: None,
            assignment: a.clone(),
            outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), (problem.eval)(a))])),
        })
        .collect()
}

/// Posterior means of `algorithm` (fitted on `train`) at `test`.
fn means(
    problem: &Problem,
    algorithm: &str,
    config: &serde_json::Value,
    train: &[Observation],
    test: &[Assignment],
    rng: &mut StdRng,
) -> Result<Vec<f64>> {
    let mut config = config.clone();
    config["initialDesignSize"] = serde_json::json!(1);
    let spec = spec_with_space((problem.space)(), algorithm, config);
    let designer = designer_for(&spec)?;
    let fitted = designer.fit(&bo_core::Problem { spec, seed: 0, priors: Vec::new() }, train, None, rng)?;
    fitted
        .model
        .predictor()
        .and_then(|p| p.predict(test))
        .context("a GP predicts")?
        .into_iter()
        .map(|p| p.mean.context("a finite posterior mean"))
        .collect()
}

fn log_mse(predicted: &[f64], truth: &[f64]) -> f64 {
    (predicted.iter().zip(truth).map(|(p, t)| (p - t).powi(2)).sum::<f64>() / truth.len() as f64).log10()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The rows for `ns` over `seeds` seeds; `config` is both models' `algorithmConfig` (e.g. the
/// kernel).
pub fn regression(problem: &Problem, ns: &[usize], seeds: u64, config: &serde_json::Value) -> Result<Vec<RegressionRow>> {
    let space = (problem.space)();
    let leaf = |a: &Assignment| space.active_ids(a).join(",");
    println!("{:>4} {:>14} {:>14}", "n", "Add-Tree", "independent");
    let mut rows = Vec::new();
    for &n in ns {
        let (mut at, mut ind) = (Vec::new(), Vec::new());
        for seed in 0..seeds {
            let mut rng = StdRng::seed_from_u64(seed * 1000 + n as u64);
            let train = observe(problem, &sample(problem, n, &mut rng));
            let test = sample(problem, 50, &mut rng);
            let truth: Vec<f64> = test.iter().map(problem.eval).collect();
            at.push(log_mse(&means(problem, "ADD_TREE", config, &train, &test, &mut rng)?, &truth));
            let overall = train.iter().map(value).sum::<f64>() / train.len().max(1) as f64;
            let mut predicted = vec![overall; test.len()];
            let mut leaves: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for (j, a) in test.iter().enumerate() {
                leaves.entry(leaf(a)).or_default().push(j);
            }
            for (key, idx) in leaves {
                let on: Vec<Observation> = train.iter().filter(|o| leaf(&o.assignment) == key).cloned().collect();
                let points: Vec<Assignment> = idx.iter().map(|&j| test[j].clone()).collect();
                let values = match on.len() {
                    0 => vec![overall; idx.len()],
                    1 => vec![value(&on[0]); idx.len()],
                    _ => means(problem, "GP_BANDIT", config, &on, &points, &mut rng)?,
                };
                for (&j, v) in idx.iter().zip(values) {
                    predicted[j] = v;
                }
            }
            ind.push(log_mse(&predicted, &truth));
        }
        let row = RegressionRow { n, add_tree: median(at), independent: median(ind) };
        println!("{:>4} {:>14.2} {:>14.2}", row.n, row.add_tree, row.independent);
        rows.push(row);
    }
    Ok(rows)
}

fn value(o: &Observation) -> f64 {
    match &o.outcome {
        Outcome::Measured(m) => m["f"],
        Outcome::Infeasible => f64::NAN,
    }
}
