//! How well a curve model predicts a trial's final value from a prefix of its curve (issue 72's
//! yardstick for a model of configuration × step): on a learning-curve problem, `train` random
//! configurations are trained in full and `test` others for each prefix length. The problem is
//! one of `bo-bench curves`' synthetic family, or real training curves exported by
//! `bench/peers/real_curves.py export` ([`RealCurves`]), where each seed draws both sets from the
//! file's random configurations. The decay-curve
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
use bo_core::space::{Conditional, Domain, ParamSpec, ParentValues, Scale, SearchSpace};
use bo_core::stopping::Finished;
use bo_core::stopping::curves::{CURVE_POINTS, Curve, thin};
use bo_core::stopping::decay_curve::DecayCurveModel;
use bo_core::stopping::freeze_thaw::FreezeThawModel;
use bo_core::stopping::spec::StoppingSpec;
use bo_core::{Assignment, Goal, ParamValue, StudySpec};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use serde::Deserialize;

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

/// A configuration's curve (values to maximise, one a step) and the value its rank is judged by:
/// the noiseless final accuracy of a synthetic curve, the observed final value of a real one.
#[derive(Clone)]
pub struct Sample {
    pub(crate) assignment: Assignment,
    pub(crate) curve: Vec<f64>,
    truth: f64,
}

/// A configuration's noisy curve, as `bo-bench curves` trains one: a per-trial offset and
/// per-epoch noise, both of the problem's noise.
pub(crate) fn train(problem: &CurveProblem, rng: &mut StdRng) -> Sample {
    let space = space();
    let unit: Vec<f64> = (0..space.n_params()).map(|_| rng.random::<f64>()).collect();
    let assignment = space.decode(&unit);
    let offset = crate::curves::gauss(rng) * problem.noise;
    let curve =
        (1..=EPOCHS).map(|t| problem.accuracy_of(&assignment, t as f64) + offset + crate::curves::gauss(rng) * problem.noise).collect();
    Sample { truth: problem.accuracy_of(&assignment, EPOCHS as f64), assignment, curve }
}

fn points(curve: &[f64]) -> Vec<(f64, f64)> {
    curve.iter().enumerate().map(|(k, v)| ((k + 1) as f64, *v)).collect()
}

/// Scores the decay-curve and freeze-thaw models on the synthetic `problem` for one `seed` at
/// each of `prefixes` (epochs), on fresh random configurations.
pub fn score(problem: &CurveProblem, seed: u64, trained: usize, tested: usize, prefixes: &[usize]) -> Result<Vec<PrefixScore>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let train_set: Vec<Sample> = (0..trained).map(|_| train(problem, &mut rng)).collect();
    let test_set: Vec<Sample> = (0..tested).map(|_| train(problem, &mut rng)).collect();
    score_samples(space(), &train_set.iter().collect::<Vec<_>>(), &test_set.iter().collect::<Vec<_>>(), prefixes, &mut rng)
}

/// Scores both models on `real`'s curves for one `seed`: the seed shuffles the sample, the first
/// `trained` are the full curves, the next `tested` are predicted from their prefixes.
pub fn score_real(real: &RealCurves, seed: u64, trained: usize, tested: usize, prefixes: &[usize]) -> Result<Vec<PrefixScore>> {
    anyhow::ensure!(
        trained + tested <= real.samples.len(),
        "{} has {} curves, fewer than --train {trained} and --test {tested} together",
        real.problem,
        real.samples.len()
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..real.samples.len()).collect();
    order.shuffle(&mut rng);
    let pick = |range: std::ops::Range<usize>| -> Vec<&Sample> { order[range].iter().map(|&k| &real.samples[k]).collect() };
    let (train_set, test_set) = (pick(0..trained), pick(trained..trained + tested));
    score_samples(real.space.clone(), &train_set, &test_set, prefixes, &mut rng)
}

/// The two models' scores on `test_set`'s prefixes, both fitted with `train_set`'s full curves.
fn score_samples(
    space: SearchSpace,
    train_set: &[&Sample],
    test_set: &[&Sample],
    prefixes: &[usize],
    rng: &mut StdRng,
) -> Result<Vec<PrefixScore>> {
    let mut spec = StudySpec::new("accuracy", Goal::Maximize, space, "GP_BANDIT");
    spec.stopping = Some(StoppingSpec::DecayCurve { use_elapsed_duration: false });
    let curves: Vec<Curve> = train_set
        .iter()
        .map(|t| Curve {
            assignment: t.assignment.clone(),
            points: thin(&points(&t.curve), CURVE_POINTS),
            final_value: t.curve[t.curve.len() - 1],
        })
        .collect();
    let best = curves.iter().map(|c| c.final_value).reduce(f64::max);
    let finished = Finished { count: curves.len(), curves, best };
    let model = DecayCurveModel::fit(&spec, &finished, None, rng)?.context("too few curves for the decay-curve model")?;
    let truths: Vec<f64> = test_set.iter().map(|t| t.truth).collect();
    prefixes
        .iter()
        .map(|&prefix| -> Result<PrefixScore> {
            let decay =
                test_set.iter().map(|t| model.predict_final(&t.assignment, &points(&t.curve[..prefix]))).collect::<Result<Vec<_>, _>>()?;
            let seen: Vec<_> = test_set.iter().map(|t| (t.assignment.clone(), points(&t.curve[..prefix]))).collect();
            let every_curve = FreezeThawModel::fit(&spec, &finished, &seen, rng)?.context("too few curves for the freeze-thaw model")?;
            let freeze_thaw: Vec<(f64, f64)> = (0..test_set.len()).map(|k| every_curve.predict_partial(k)).collect();
            let finals: Vec<f64> = test_set.iter().map(|t| t.curve[t.curve.len() - 1]).collect();
            let lasts: Vec<f64> = test_set.iter().map(|t| t.curve[prefix - 1]).collect();
            if std::env::var("DBG").is_ok() {
                for k in 0..test_set.len() {
                    let ((m, s), (dm, ds)) = (freeze_thaw[k], decay[k]);
                    eprintln!("p{prefix} last {:.3} final {:.3} ft {m:.3}±{s:.3} | dc {dm:.3}±{ds:.3}", lasts[k], finals[k]);
                }
            }
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

/// Learning curves of real training, written by `bench/peers/real_curves.py export`: the
/// problem's parameters in that script's neutral form and random configurations' curves.
pub struct RealCurves {
    /// The problem's name.
    pub problem: String,
    /// Steps of every curve.
    pub steps: usize,
    pub(crate) space: SearchSpace,
    pub(crate) samples: Vec<Sample>,
}

#[derive(Deserialize)]
struct RealFile {
    problem: String,
    steps: usize,
    goal: Goal,
    params: Vec<RealParam>,
    samples: Vec<RealSample>,
}

#[derive(Deserialize)]
struct RealParam {
    name: String,
    kind: String,
    low: f64,
    high: f64,
    log: bool,
    choices: Vec<String>,
    when: Option<RealCondition>,
}

#[derive(Deserialize)]
struct RealCondition {
    parent: String,
    values: Vec<String>,
}

#[derive(Deserialize)]
struct RealSample {
    config: serde_json::Map<String, serde_json::Value>,
    curve: Vec<f64>,
}

impl RealCurves {
    /// Reads an exported file; a minimised curve is negated, so every model maximises.
    pub fn read(path: &std::path::Path) -> Result<RealCurves> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: RealFile = serde_json::from_str(&text).with_context(|| format!("{} is not an exported curve file", path.display()))?;
        let mut roots: Vec<ParamSpec> = Vec::new();
        for p in &file.params {
            let domain = match p.kind.as_str() {
                "float" => Domain::Double { min: p.low, max: p.high },
                "int" => Domain::Integer { min: p.low as i64, max: p.high as i64 },
                "categorical" => Domain::Categorical { values: p.choices.clone() },
                other => anyhow::bail!("{}: parameter {} has kind {other}; float, int and categorical are read", path.display(), p.name),
            };
            let scale = if p.log { Scale::Log } else { Scale::Linear };
            let spec = ParamSpec { id: p.name.clone(), domain, scale, default: None, children: vec![] };
            match &p.when {
                None => roots.push(spec),
                Some(c) => {
                    let parent = roots
                        .iter_mut()
                        .find(|r| r.id == c.parent)
                        .with_context(|| format!("{}'s parent {} is not a root", p.name, c.parent))?;
                    parent.children.push(Conditional { parent_values: ParentValues::Categorical(c.values.clone()), spec });
                }
            }
        }
        let space = SearchSpace::new(roots).map_err(|e| anyhow::anyhow!("{}: the space is refused: {e}", path.display()))?;
        let sign = if file.goal == Goal::Minimize { -1.0 } else { 1.0 };
        let samples = file
            .samples
            .into_iter()
            .map(|s| -> Result<Sample> {
                anyhow::ensure!(s.curve.len() == file.steps, "a curve of {} steps in a problem of {}", s.curve.len(), file.steps);
                let mut assignment = Assignment::default();
                for (id, v) in &s.config {
                    let p = space.param(id).with_context(|| format!("a configuration names {id}, not a parameter"))?;
                    let value = match (v, &p.domain) {
                        (serde_json::Value::String(s), _) => ParamValue::Categorical(s.as_str().into()),
                        (serde_json::Value::Number(n), Domain::Integer { .. }) => ParamValue::Int(n.as_f64().unwrap_or(0.0).round() as i64),
                        (serde_json::Value::Number(n), _) => ParamValue::Float(n.as_f64().unwrap_or(f64::NAN)),
                        _ => anyhow::bail!("{id} is {v}, not a number or a string"),
                    };
                    assignment.insert(id.as_str(), value);
                }
                space.check(&assignment).map_err(|e| anyhow::anyhow!("a configuration is outside the space: {e}"))?;
                let curve: Vec<f64> = s.curve.iter().map(|v| sign * v).collect();
                Ok(Sample { truth: curve[curve.len() - 1], assignment, curve })
            })
            .collect::<Result<Vec<_>>>()
            .with_context(|| path.display().to_string())?;
        Ok(RealCurves { problem: file.problem, steps: file.steps, space, samples })
    }
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

    /// An exported file's space keeps its condition, its minimised curves are negated, the
    /// models score its curves, and a kind it does not know is refused by name.
    #[test]
    fn reads_exported_real_curves() {
        let dir = std::env::temp_dir().join(format!("bo-bench-real-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let params = serde_json::json!([
            {"name": "penalty", "kind": "categorical", "low": 0.0, "high": 1.0, "log": false, "choices": ["l2", "elasticnet"], "when": null},
            {"name": "l1_ratio", "kind": "float", "low": 0.05, "high": 0.95, "log": false, "choices": [], "when": {"parent": "penalty", "values": ["elasticnet"]}},
            {"name": "alpha", "kind": "float", "low": 1e-4, "high": 1.0, "log": true, "choices": [], "when": null},
            {"name": "width", "kind": "int", "low": 8.0, "high": 64.0, "log": true, "choices": [], "when": null},
        ]);
        let samples: Vec<serde_json::Value> = (0..12)
            .map(|k| {
                let a = 1e-4 * 10f64.powf(k as f64 / 3.0);
                let mut config =
                    serde_json::json!({"penalty": if k % 2 == 0 { "l2" } else { "elasticnet" }, "alpha": a, "width": 8 + 4 * k});
                if k % 2 == 1 {
                    config["l1_ratio"] = serde_json::json!(0.5);
                }
                let end = 0.1 + 0.05 * (k as f64 - 6.0).abs() / 6.0;
                let curve: Vec<f64> = (1..=8).map(|t| end + 0.5 / t as f64).collect();
                serde_json::json!({"config": config, "curve": curve})
            })
            .collect();
        let file = serde_json::json!({"problem": "toy", "steps": 8, "goal": "MINIMIZE", "params": params, "samples": samples});
        let path = dir.join("toy.json");
        std::fs::write(&path, file.to_string()).unwrap();
        let real = RealCurves::read(&path).unwrap();
        assert_eq!((real.problem.as_str(), real.steps, real.samples.len()), ("toy", 8, 12));
        assert!(real.space.param("l1_ratio").is_some() && real.space.roots().len() == 3, "l1_ratio is penalty's child");
        assert!(real.samples[0].curve.iter().all(|v| *v < 0.0), "errors are negated");
        let scores = score_real(&real, 0, 6, 5, &[2]).unwrap();
        assert!(scores[0].log_density.is_finite() && scores[0].freeze_thaw_density.is_finite(), "{scores:?}");
        assert!(score_real(&real, 0, 10, 5, &[2]).unwrap_err().to_string().contains("fewer than --train 10"));
        let mut bad = file.clone();
        bad["params"][2]["kind"] = serde_json::json!("ordinal");
        std::fs::write(&path, bad.to_string()).unwrap();
        let err = RealCurves::read(&path).err().expect("refused").to_string();
        assert!(err.contains("alpha has kind ordinal"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
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
