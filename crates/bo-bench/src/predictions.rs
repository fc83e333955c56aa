//! How well a curve model predicts a trial's final value from a prefix of its curve (issue 72's
//! yardstick for a model of configuration × step): on a learning-curve problem, `train` random
//! configurations are trained in full and `test` others for each prefix length. The decay-curve
//! model ([`DecayCurveModel`]) is fitted on the full curves, as the service fits it, and
//! conditioned on each test prefix; the freeze-thaw model ([`FreezeThawModel`]) is fitted on the
//! full curves and every test prefix at once, as it would read a study whose trials are all part
//! way. Each is asked for the final values' predictive distributions, scored by the mean log
//! predictive density of the observed final value and by the Spearman rank correlation of the
//! predicted means with the true (noiseless) final accuracies, against the plainest predictor
//! there is, the prefix's last value.
//!
//! Must not do: decide anything; a rule's decisions are measured by `bo-bench curves`.

use anyhow::{Context, Result};
use bo_core::stopping::curves::{CURVE_POINTS, Curve, thin};
use bo_core::stopping::decay_curve::DecayCurveModel;
use bo_core::stopping::freeze_thaw::FreezeThawModel;
use bo_core::stopping::spec::StoppingSpec;
use bo_core::stopping::Finished;
use bo_core::{Goal, StudySpec};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::curves::{CurveProblem, EPOCHS, space};

/// One prefix length's scores on one seed (in the order of the prefixes asked for).
#[derive(Clone, Debug)]
pub struct PrefixScore {
    /// Mean log density of the observed final values under the model's predictions.
    pub log_density: f64,
    /// Spearman correlation of the predicted means with the true final accuracies.
    pub model_rank: f64,
    /// The freeze-thaw model's mean log density.
    pub freeze_thaw_density: f64,
    /// The freeze-thaw model's Spearman correlation.
    pub freeze_thaw_rank: f64,
    /// Spearman correlation of the prefixes' last values with the true final accuracies.
    pub last_rank: f64,
}

/// A configuration's noisy curve, as `bo-bench curves` trains one: a per-trial offset and
/// per-epoch noise, both of the problem's noise.
struct Trained {
    assignment: bo_core::Assignment,
    curve: Vec<f64>,
    truth: f64,
}

fn train(problem: &CurveProblem, rng: &mut StdRng) -> Trained {
    let space = space();
    let unit: Vec<f64> = (0..space.n_params()).map(|_| rng.random::<f64>()).collect();
    let assignment = space.decode(&unit);
    let offset = crate::curves::gauss(rng) * problem.noise;
    let curve = (1..=EPOCHS).map(|t| problem.accuracy_of(&assignment, t as f64) + offset + crate::curves::gauss(rng) * problem.noise).collect();
    Trained { truth: problem.accuracy_of(&assignment, EPOCHS as f64), assignment, curve }
}

fn points(curve: &[f64]) -> Vec<(f64, f64)> {
    curve.iter().enumerate().map(|(k, v)| ((k + 1) as f64, *v)).collect()
}

/// Scores the decay-curve and freeze-thaw models on `problem` for one `seed` at each of
/// `prefixes` (epochs).
pub fn score(problem: &CurveProblem, seed: u64, trained: usize, tested: usize, prefixes: &[usize]) -> Result<Vec<PrefixScore>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut spec = StudySpec::new("accuracy", Goal::Maximize, space(), "GP_BANDIT");
    spec.stopping = Some(StoppingSpec::DecayCurve { use_elapsed_duration: false });
    let train_set: Vec<Trained> = (0..trained).map(|_| train(problem, &mut rng)).collect();
    let test_set: Vec<Trained> = (0..tested).map(|_| train(problem, &mut rng)).collect();
    let curves: Vec<Curve> = train_set
        .iter()
        .map(|t| Curve { assignment: t.assignment.clone(), points: thin(&points(&t.curve), CURVE_POINTS), final_value: t.curve[EPOCHS - 1] })
        .collect();
    let best = curves.iter().map(|c| c.final_value).reduce(f64::max);
    let finished = Finished { count: curves.len(), curves, best };
    let model = DecayCurveModel::fit(&spec, &finished, None, &mut rng)?.context("too few curves for the decay-curve model")?;
    let truths: Vec<f64> = test_set.iter().map(|t| t.truth).collect();
    prefixes
        .iter()
        .map(|&prefix| -> Result<PrefixScore> {
            let decay = test_set
                .iter()
                .map(|t| model.predict_final(&t.assignment, &points(&t.curve[..prefix])))
                .collect::<Result<Vec<_>, _>>()?;
            let seen: Vec<_> = test_set.iter().map(|t| (t.assignment.clone(), points(&t.curve[..prefix]))).collect();
            let every_curve = FreezeThawModel::fit(&spec, &finished, &seen, &mut rng)?.context("too few curves for the freeze-thaw model")?;
            let freeze_thaw: Vec<(f64, f64)> = (0..tested).map(|k| every_curve.predict_partial(k)).collect();
            let finals: Vec<f64> = test_set.iter().map(|t| t.curve[EPOCHS - 1]).collect();
            let lasts: Vec<f64> = test_set.iter().map(|t| t.curve[prefix - 1]).collect();
            Ok(PrefixScore {
                log_density: log_density(&decay, &finals),
                model_rank: spearman(&decay.iter().map(|p| p.0).collect::<Vec<_>>(), &truths),
                freeze_thaw_density: log_density(&freeze_thaw, &finals),
                freeze_thaw_rank: spearman(&freeze_thaw.iter().map(|p| p.0).collect::<Vec<_>>(), &truths),
                last_rank: spearman(&lasts, &truths),
            })
        })
        .collect()
}

/// The mean log density of `observed` under the normal `predicted` (mean, sd) each.
fn log_density(predicted: &[(f64, f64)], observed: &[f64]) -> f64 {
    let total: f64 = predicted
        .iter()
        .zip(observed)
        .map(|(&(mean, sd), y)| {
            let z = (y - mean) / sd;
            -0.5 * z * z - sd.ln() - 0.5 * std::f64::consts::TAU.ln()
        })
        .sum();
    total / observed.len() as f64
}

/// Ranks from 1, ties given their mean rank.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut out = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        for &k in &order[i..=j] {
            out[k] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation (Pearson's of the ranks); 0 when either side is constant.
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let (va, vb): (f64, f64) = (ra.iter().map(|x| (x - ma).powi(2)).sum(), rb.iter().map(|y| (y - mb).powi(2)).sum());
    if va == 0.0 || vb == 0.0 { 0.0 } else { cov / (va * vb).sqrt() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_is_one_for_the_same_order_and_minus_one_reversed_ties_averaged() {
        assert!((spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 35.0]) - 1.0).abs() < 1e-12);
        assert!((spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), vec![2.5, 1.0, 2.5]);
        assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), 0.0);
    }

    /// On a noiseless-enough problem, a prefix of half the curve ranks the final values well,
    /// and the model's density is finite: the harness measures something.
    #[test]
    fn half_a_curve_ranks_final_values() {
        let problem = crate::curves::problems().into_iter().find(|p| p.name == "lc_c").unwrap();
        let scores = score(&problem, 1, 12, 10, &[25]).unwrap();
        assert!(scores[0].log_density.is_finite() && scores[0].freeze_thaw_density.is_finite());
        assert!(scores[0].last_rank > 0.5, "{scores:?}");
    }
}
