//! The models of a study's metrics as one [`Model`]: each metric's own model, the completed
//! trials as the acquisition reads them ([`Point`]: objectives oriented to be maximised, safety
//! per metric), and what the models predict and describe.
//!
//! Must not: choose candidates (`search.rs`) or score them (`acquisition.rs`).

use std::sync::Arc;

use rand::Rng;

use super::acquisition::{Acquisition, Gain, MAX_REQUIRED_SAFETY, Scalarised, UCB_COEFFICIENT, WEIGHTS};
use super::labelled;
use crate::designer::{Conditioning, ContextSearch, FitError, Model, Prediction, Predictor};
use crate::hypervolume::reference_point;
use crate::space::SearchSpace;
use crate::study::{Goal, MetricSpec};
use crate::trial::{Assignment, Observation, Outcome};

/// One trial as the acquisition sees it: its objective values, oriented to be maximised, where
/// all were measured, and for each safety metric whether it was safe (`None`: not reported;
/// `false` for an infeasible trial).
#[derive(Clone)]
pub(super) struct Point {
    pub(super) assignment: Assignment,
    pub(super) values: Option<Vec<f64>>,
    pub(super) safe: Vec<Option<bool>>,
}

impl Point {
    /// Safe on every safety metric it reports (an infeasible trial is not).
    pub(super) fn is_safe(&self) -> bool {
        self.safe.iter().all(|s| s.unwrap_or(true))
    }
}

/// The models of a study's metrics and the data their acquisition reads.
pub(super) struct MetricsModel {
    pub(super) space: SearchSpace,
    /// Objectives first, then safety metrics; `models` in the same order.
    pub(super) metrics: Vec<MetricSpec>,
    pub(super) models: Vec<Arc<dyn Model>>,
    /// How many of `metrics` are objectives.
    pub(super) k: usize,
    /// The completed trials (infeasible ones without values).
    pub(super) points: Vec<Point>,
    /// Whether feasibility is a metric (the last), so new observations are [`labelled`].
    pub(super) classify: bool,
}

/// `o` as the acquisition sees it under `metrics` (objectives first, `k` of them).
pub(super) fn point(metrics: &[MetricSpec], k: usize, o: &Observation) -> Point {
    let (values, safe) = match &o.outcome {
        Outcome::Measured(m) => (
            metrics[..k].iter().map(|s| m.get(&s.id).map(|v| sign(s.goal) * v)).collect(),
            metrics[k..].iter().map(|s| m.get(&s.id).map(|&v| s.is_safe(v))).collect(),
        ),
        // Not a safe trial: it counts against the safe fraction.
        Outcome::Infeasible => (None, vec![Some(false); metrics.len() - k]),
    };
    Point { assignment: o.assignment.clone(), values, safe }
}

pub(super) fn sign(goal: Goal) -> f64 {
    if goal == Goal::Minimize { -1.0 } else { 1.0 }
}

impl MetricsModel {
    pub(super) fn new(
        space: SearchSpace,
        metrics: Vec<MetricSpec>,
        models: Vec<Arc<dyn Model>>,
        history: &[Observation],
        classify: bool,
    ) -> MetricsModel {
        let k = metrics.iter().filter(|m| m.safety.is_none()).count();
        let points = history.iter().map(|o| point(&metrics, k, o)).collect();
        MetricsModel { space, metrics, models, k, points, classify }
    }

    /// Each objective's reference (worst seen less 10 % of the range) and range, from the trials
    /// that measured every objective; (0, 1) before there are any.
    pub(super) fn scales(&self) -> Vec<(f64, f64)> {
        let values: Vec<Vec<f64>> = self.points.iter().filter_map(|p| p.values.clone()).collect();
        let Some(reference) = reference_point(&values) else { return vec![(0.0, 1.0); self.k] };
        reference
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let hi = values.iter().map(|v| v[i]).fold(f64::NEG_INFINITY, f64::max);
                if hi > r { (r, hi - r) } else { (0.0, 1.0) }
            })
            .collect()
    }

    /// Oriented predictions (mean, deviation) of every metric at `points`: `[metric][point]`.
    pub(super) fn oriented(
        models: &[Arc<dyn Model>],
        metrics: &[MetricSpec],
        points: &[Assignment],
    ) -> Result<Vec<Vec<(f64, f64)>>, FitError> {
        models
            .iter()
            .zip(metrics)
            .map(|(m, spec)| {
                let p = crate::designer::context::normal_approximations(m.as_ref(), points)
                    .ok_or_else(|| FitError::Numerical(format!("the model of {} stopped predicting", spec.id)))?;
                Ok(p.into_iter().map(|(centre, sd)| (sign(spec.goal) * centre, sd)).collect())
            })
            .collect()
    }

    /// The acquisition of the next member: its gain (hypervolume for several objectives,
    /// improvement for one) floored by the safe trials, and each safety metric's oriented
    /// threshold with the probability a hard constraint asks (while the metric's observed safe
    /// fraction is below its target).
    pub(super) fn acquisition(&self, rng: &mut dyn Rng) -> Acquisition {
        let mut gain = if self.k > 1 {
            Gain::Hypervolume(Scalarised::new(self.k, self.scales(), rng))
        } else {
            let (r, s) = self.scales()[0];
            Gain::Improvement { best: None, scale: s, reference: r }
        };
        for p in self.points.iter().filter(|p| p.is_safe()) {
            if let Some(v) = &p.values {
                gain.raise_floor(v);
            }
        }
        Acquisition { gain, safety: self.constraints() }
    }

    /// Each safety metric's oriented threshold and, while its observed safe fraction is below
    /// its target, the probability of safety a candidate needs.
    pub(super) fn constraints(&self) -> Vec<(f64, Option<f64>)> {
        self.metrics[self.k..]
            .iter()
            .enumerate()
            .map(|(j, m)| {
                let s = m.safety.expect("a safety metric");
                let (safe, judged) = self.safe_count(j);
                let hard = judged > 0 && s.desired_min_safe_fraction > 0.0 && (safe as f64) < s.desired_min_safe_fraction * judged as f64;
                (sign(m.goal) * s.threshold, hard.then(|| s.desired_min_safe_fraction.min(MAX_REQUIRED_SAFETY)))
            })
            .collect()
    }

    /// Safety metric `j`'s safe trials and the trials judged on it.
    pub(super) fn safe_count(&self, j: usize) -> (usize, usize) {
        let seen = self.points.iter().filter_map(|p| p.safe[j]);
        seen.fold((0, 0), |(safe, judged), s| (safe + usize::from(s), judged + 1))
    }
}

impl Model for MetricsModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        self.suggest_within(pending, count, &Assignment::default(), rng)
    }

    fn describe(&self) -> serde_json::Value {
        let described = |range: std::ops::Range<usize>| -> serde_json::Map<String, serde_json::Value> {
            range.map(|i| (self.metrics[i].id.clone(), self.models[i].describe())).collect()
        };
        let gain = if self.k > 1 {
            format!(
                "mean of {WEIGHTS} random hypervolume scalarisations of UCB (coefficient {UCB_COEFFICIENT}), floored by the safe trials"
            )
        } else {
            "expected improvement over the best safe trial".to_owned()
        };
        let mut out = serde_json::json!({ "acquisition": gain, "objectives": described(0..self.k) });
        if self.metrics.len() > self.k {
            let constraints: Vec<serde_json::Value> = self.metrics[self.k..]
                .iter()
                .zip(self.constraints())
                .enumerate()
                .map(|(j, (m, (_, required)))| {
                    let (safe, judged) = self.safe_count(j);
                    serde_json::json!({
                        "metricId": m.id,
                        "safeTrials": safe,
                        "judgedTrials": judged,
                        "hard": required.is_some(),
                        "requiredProbability": required,
                    })
                })
                .collect();
            out["acquisition"] = serde_json::Value::String(format!("{gain}, times the probability that every safety metric is safe"));
            out["safety"] = serde_json::Value::Object(described(self.k..self.metrics.len()));
            out["constraints"] = serde_json::Value::Array(constraints);
        }
        out
    }

    fn memory_bytes(&self) -> usize {
        self.models.iter().map(|m| m.memory_bytes()).sum::<usize>() + self.points.len() * 256
    }

    fn predictor(&self) -> Option<&dyn Predictor> {
        Some(self)
    }

    fn conditioning(&self) -> Option<&dyn Conditioning> {
        Some(self)
    }

    fn context_search(&self) -> Option<&dyn ContextSearch> {
        Some(self)
    }
}

impl Predictor for MetricsModel {
    /// The first objective's prediction (what a one-metric caller reads); every metric's is
    /// [`Predictor::predict_metrics`].
    fn predict(&self, points: &[Assignment]) -> Option<Vec<Prediction>> {
        self.models[0].predictor()?.predict(points)
    }

    /// Every metric's prediction: the objectives, then the safety metrics.
    fn predict_metrics(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<Prediction>)>> {
        self.models.iter().zip(&self.metrics).map(|(m, s)| Some((s.id.clone(), m.predictor()?.predict(points)?))).collect()
    }

    fn term_means(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<f64>)>> {
        self.models[0].predictor()?.term_means(points)
    }
}

impl Conditioning for MetricsModel {
    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>> {
        let labelled_new: Vec<Observation>;
        let new = if self.classify {
            labelled_new = new.iter().map(labelled).collect();
            &labelled_new[..]
        } else {
            new
        };
        let models = self.models.iter().map(|m| m.conditioning()?.observe(new)).collect::<Option<Vec<_>>>()?;
        let mut points = self.points.clone();
        points.extend(new.iter().map(|o| point(&self.metrics, self.k, o)));
        Some(self.with_models(models, points))
    }

    fn refactored(&self) -> Option<Arc<dyn Model>> {
        let models = self.models.iter().map(|m| m.conditioning()?.refactored()).collect::<Option<Vec<_>>>()?;
        Some(self.with_models(models, self.points.clone()))
    }
}

impl ContextSearch for MetricsModel {
    /// Its own acquisition (hypervolume, safety), searched within the context.
    fn suggest_in_context(&self, context: &Assignment, pending: &[Assignment], rng: &mut dyn Rng) -> Option<Result<Assignment, FitError>> {
        let found = self.suggest_within(pending, 1, context, rng).map(|mut v| v.pop());
        match found {
            Ok(Some(a)) => Some(Ok(a)),
            Ok(None) => None, // every candidate taken: the generic search decides
            Err(e) => Some(Err(e)),
        }
    }
}
