//! Several objectives for every learning designer: one model per objective metric, each of the
//! study's own designer fitted as if that metric were the study's only one, and an acquisition
//! over them — the mean over random hypervolume scalarisations (Golovin & Zhang 2020, "Random
//! hypervolume scalarizations for provable multi-objective black box optimization", Thm. 4) of
//! each model's upper confidence bound, floored by the best scalarised value already observed,
//! as OSS Vizier's GP bandit does for multi-metric studies.
//!
//! - **Scale.** Each objective is oriented to be maximised and measured from its reference
//!   point — the worst value seen less 10 % of its range ([`crate::hypervolume::reference_point`])
//!   — in units of its range, so no metric outweighs another by its units.
//! - **Acquisition.** For a weight `w` drawn uniformly from the positive unit sphere,
//!   `s_w(z) = min_i (max(z_i, 0) / w_i)^k` over `k` objectives; `E_w[s_w]` over the data's
//!   front is proportional to its hypervolume. A candidate scores
//!   `mean_w max(s_w(UCB(x)) − max_data s_w(y), 0)`: how much hypervolume its optimistic value
//!   would add, averaged over directions. [`WEIGHTS`] directions, drawn per suggestion; the
//!   UCB's coefficient is [`UCB_COEFFICIENT`], measured.
//! - **Search.** Gradient-free, as OSS Vizier's evolutionary acquisition optimiser: quasi-random
//!   points of the space, perturbations of the front's trials, each objective model's own
//!   proposal (its designer's search, which knows the model's structure), then two rounds of
//!   finer perturbations around the best, with coordinates near a bound also moved onto it (a
//!   gradient search lands on a bound; a perturbation rarely does: on ZDT1, whose front lies on
//!   five bounds at once, this halved the regret at 25 evaluations).
//! - **Batches.** Pending trials and the members chosen so far are fantasies: each model
//!   observes them at its own posterior mean (the kriging believer), and their predicted values
//!   join the scalarisations' floor, so the next member looks for other hypervolume.
//!
//! A model that does not predict yet (a designer still in its initial design, or a metric
//! nobody reports) takes no part: with one predicting model left the study is optimised on it,
//! with none the first metric's designer (its initial design) answers.
//!
//! Must not: know which designer it wraps, or read anything of the study but its metrics and
//! space.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rand::{Rng, RngExt};
use serde::{Deserialize, Serialize};

use super::{Designer, FitError, Fitted, Model, ModelState, Prediction, Problem, Work};
use crate::hypervolume::reference_point;
use crate::optimize::mixed::standard_normal;
use crate::optimize::sobol::sobol_point;
use crate::space::SearchSpace;
use crate::study::{Goal, MetricSpec};
use crate::trial::{Assignment, Observation, Outcome};

/// Random scalarisation directions per suggestion (OSS Vizier uses 1,000).
const WEIGHTS: usize = 1000;
/// The multiplier of each objective's posterior deviation in its upper confidence bound. OSS
/// Vizier uses 1.8; over 10 seeds of the five `bo-bench multi` problems, 1.8, 1.0, 0.5 and 0.25
/// explored too much (hypervolume regret at 100 up to 2.8× that of 0.1), and 0 (the posterior
/// mean alone) was within seed spread of 0.1 (docs/benchmarks.md, "Several objectives"). The
/// scalarisations' floor and the fantasies already spread a batch.
const UCB_COEFFICIENT: f64 = 0.1;
/// Quasi-random candidates per batch member.
const SOBOL_CANDIDATES: usize = 1000;
/// Front trials explored around, and perturbations of each.
const ANCHORS: usize = 24;
const PER_ANCHOR: usize = 16;
/// Refinement: rounds, the best candidates each explores around, perturbations of each, and the
/// perturbations' deviation (unit cube) in each round.
const REFINE_TOP: usize = 8;
const REFINE_PER: usize = 24;
const REFINE_SCALES: [f64; 2] = [0.02, 0.005];

/// Wraps a learning designer for studies with two or more metrics.
pub(crate) struct MultiObjective {
    inner: Box<dyn Designer>,
}

/// What is stored: each objective model's own state, in the study's metric order.
#[derive(Serialize, Deserialize)]
struct State {
    objectives: Vec<ModelState>,
}

impl MultiObjective {
    /// `inner`, fitted once per metric of the studies it is asked about.
    pub fn wrap(inner: Box<dyn Designer>) -> Box<dyn Designer> {
        Box::new(MultiObjective { inner })
    }

    fn fit_each(
        &self,
        problem: &Problem,
        history: &[Observation],
        stored: Option<&ModelState>,
        restore: bool,
        rng: &mut dyn Rng,
    ) -> Result<Fitted, FitError> {
        let stored: Vec<ModelState> =
            stored.and_then(|s| serde_json::from_value::<State>(s.0.clone()).ok()).map(|s| s.objectives).unwrap_or_default();
        let metrics = &problem.spec.metrics;
        let mut fitted = Vec::with_capacity(metrics.len());
        for (i, metric) in metrics.iter().enumerate() {
            let mut spec = problem.spec.clone();
            spec.metrics = vec![metric.clone()];
            let one = Problem { spec, seed: problem.seed };
            let warm = stored.get(i);
            let f = match warm {
                Some(s) if restore => self.inner.restore(&one, history, s, rng)?,
                _ => self.inner.fit(&one, history, warm, rng)?,
            };
            fitted.push(f);
        }
        let state =
            ModelState(serde_json::to_value(State { objectives: fitted.iter().map(|f| f.state.clone()).collect() }).unwrap_or_default());
        let (predicting, waiting): (Vec<_>, Vec<_>) = fitted.into_iter().zip(metrics).partition(|(f, _)| f.model.predict(&[]).is_some());
        let model = match predicting.len() {
            0 => waiting.into_iter().next().map(|(f, _)| f.model).ok_or_else(|| FitError::Numerical("a study without metrics".into()))?,
            1 => predicting.into_iter().next().map(|(f, _)| f.model).expect("one"),
            _ => {
                let (models, metrics): (Vec<_>, Vec<_>) = predicting.into_iter().map(|(f, m)| (f.model, m.clone())).unzip();
                Arc::new(ObjectivesModel::new(problem.spec.space.clone(), metrics, models, history))
            }
        };
        Ok(Fitted { model, state })
    }
}

impl Designer for MultiObjective {
    fn fit(&self, problem: &Problem, history: &[Observation], warm: Option<&ModelState>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit_each(problem, history, warm, false, rng)
    }

    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        self.fit_each(problem, history, Some(state), true, rng)
    }

    fn learns(&self) -> bool {
        self.inner.learns()
    }

    fn work(&self, space: &SearchSpace) -> Work {
        self.inner.work(space)
    }
}

/// One trial as the acquisition sees it: its objective values, oriented to be maximised, where
/// all were measured.
#[derive(Clone)]
struct Point {
    assignment: Assignment,
    values: Option<Vec<f64>>,
}

/// The models of two or more objectives and the data their acquisition reads.
struct ObjectivesModel {
    space: SearchSpace,
    metrics: Vec<MetricSpec>,
    models: Vec<Arc<dyn Model>>,
    /// The completed trials (infeasible ones without values).
    points: Vec<Point>,
}

/// `o` as the acquisition sees it under `metrics`.
fn point(metrics: &[MetricSpec], o: &Observation) -> Point {
    let values = match &o.outcome {
        Outcome::Measured(m) => metrics.iter().map(|s| m.get(&s.id).map(|v| sign(s.goal) * v)).collect(),
        Outcome::Infeasible => None,
    };
    Point { assignment: o.assignment.clone(), values }
}

fn sign(goal: Goal) -> f64 {
    if goal == Goal::Minimize { -1.0 } else { 1.0 }
}

impl ObjectivesModel {
    fn new(space: SearchSpace, metrics: Vec<MetricSpec>, models: Vec<Arc<dyn Model>>, history: &[Observation]) -> ObjectivesModel {
        let points = history.iter().map(|o| point(&metrics, o)).collect();
        ObjectivesModel { space, metrics, models, points }
    }

    /// Each objective's reference (worst seen less 10 % of the range) and range, from the trials
    /// that measured every objective; (0, 1) before there are any.
    fn scales(&self) -> Vec<(f64, f64)> {
        let values: Vec<Vec<f64>> = self.points.iter().filter_map(|p| p.values.clone()).collect();
        let Some(reference) = reference_point(&values) else { return vec![(0.0, 1.0); self.metrics.len()] };
        reference
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let hi = values.iter().map(|v| v[i]).fold(f64::NEG_INFINITY, f64::max);
                if hi > r { (r, hi - r) } else { (0.0, 1.0) }
            })
            .collect()
    }

    /// Oriented predictions (mean, deviation) of every objective at `points`: `[objective][point]`.
    fn oriented(models: &[Arc<dyn Model>], metrics: &[MetricSpec], points: &[Assignment]) -> Result<Vec<Vec<(f64, f64)>>, FitError> {
        models
            .iter()
            .zip(metrics)
            .map(|(m, spec)| {
                let p = m.predict(points).ok_or_else(|| FitError::Numerical(format!("the model of {} stopped predicting", spec.id)))?;
                Ok(p.into_iter().map(|p| (sign(spec.goal) * p.mean, p.stddev)).collect())
            })
            .collect()
    }
}

/// The acquisition of one batch member: scalarisation directions, each objective's scale and the
/// floor each direction's scalarisation must beat.
struct Scalarised {
    /// `1 / w_i` per direction, flattened `[direction][objective]`.
    inverse_weights: Vec<f64>,
    scales: Vec<(f64, f64)>,
    floors: Vec<f64>,
    k: usize,
}

impl Scalarised {
    fn new(k: usize, scales: Vec<(f64, f64)>, rng: &mut dyn Rng) -> Scalarised {
        let mut inverse_weights = Vec::with_capacity(WEIGHTS * k);
        for _ in 0..WEIGHTS {
            let w: Vec<f64> = (0..k).map(|_| standard_normal(rng).abs().max(1e-12)).collect();
            let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            inverse_weights.extend(w.iter().map(|x| norm / x));
        }
        Scalarised { inverse_weights, scales, floors: vec![0.0; WEIGHTS], k }
    }

    /// `z` in units of each objective's range above its reference.
    fn normalise(&self, y: &[f64]) -> Vec<f64> {
        y.iter().zip(&self.scales).map(|(v, (r, s))| ((v - r) / s).max(0.0)).collect()
    }

    /// `s_w(z)` for direction `j`.
    fn scalarise(&self, j: usize, z: &[f64]) -> f64 {
        let inv = &self.inverse_weights[j * self.k..(j + 1) * self.k];
        z.iter().zip(inv).map(|(z, i)| z * i).fold(f64::INFINITY, f64::min).powi(self.k as i32)
    }

    /// Raises each direction's floor to the scalarised value of `y` (oriented values).
    fn raise_floor(&mut self, y: &[f64]) {
        let z = self.normalise(y);
        for j in 0..WEIGHTS {
            let s = self.scalarise(j, &z);
            if s > self.floors[j] {
                self.floors[j] = s;
            }
        }
    }

    /// The mean hypervolume improvement over the floors of the optimistic value `ucb`, and —
    /// breaking ties where no direction improves — a millionth of its mean scalarisation.
    fn score(&self, ucb: &[f64]) -> f64 {
        let z = self.normalise(ucb);
        let (mut gain, mut level) = (0.0, 0.0);
        for j in 0..WEIGHTS {
            let s = self.scalarise(j, &z);
            gain += (s - self.floors[j]).max(0.0);
            level += s;
        }
        (gain + 1e-6 * level) / WEIGHTS as f64
    }
}

/// `n` Gaussian perturbations of `a` in the unit cube (deviation `sd`), decoded.
fn perturb(space: &SearchSpace, a: &Assignment, n: usize, sd: f64, rng: &mut dyn Rng) -> Vec<Assignment> {
    let u0 = space.encode(a);
    (0..n)
        .map(|_| {
            let u: Vec<f64> = u0.iter().map(|v| (v + sd * standard_normal(rng)).clamp(0.0, 1.0)).collect();
            space.decode(&u)
        })
        .collect()
}

/// `n` copies of `a` with a random half of its coordinates within 0.1 of a bound of the unit
/// cube moved onto it (optima on a bound are common: no dropout, the smallest size), decoded.
fn snap(space: &SearchSpace, a: &Assignment, n: usize, rng: &mut dyn Rng) -> Vec<Assignment> {
    let u0 = space.encode(a);
    (0..n)
        .map(|_| {
            let u: Vec<f64> = u0
                .iter()
                .map(|&v| match v {
                    v if v < 0.1 && rng.random_bool(0.5) => 0.0,
                    v if v > 0.9 && rng.random_bool(0.5) => 1.0,
                    v => v,
                })
                .collect();
            space.decode(&u)
        })
        .collect()
}

/// The indices of the non-dominated points among `values` (maximised).
fn front(values: &[(usize, &Vec<f64>)]) -> Vec<usize> {
    let dominates = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y);
    let mut sorted: Vec<&(usize, &Vec<f64>)> = values.iter().collect();
    sorted.sort_by(|a, b| b.1.iter().sum::<f64>().total_cmp(&a.1.iter().sum::<f64>()));
    let mut out: Vec<(usize, &Vec<f64>)> = Vec::new();
    for &&(i, v) in &sorted {
        if !out.iter().any(|(_, f)| dominates(f, v) || *f == v) {
            out.push((i, v));
        }
    }
    out.into_iter().map(|(i, _)| i).collect()
}

impl ObjectivesModel {
    /// The models with `points` observed at their own posterior means (fantasies), or unchanged
    /// where a model cannot observe.
    fn with_fantasies(&self, models: &[Arc<dyn Model>], points: &[Assignment]) -> Result<(Vec<Arc<dyn Model>>, Vec<Vec<f64>>), FitError> {
        if points.is_empty() {
            return Ok((models.to_vec(), Vec::new()));
        }
        let predicted = Self::oriented(models, &self.metrics, points)?;
        let updated = models
            .iter()
            .zip(&self.metrics)
            .zip(&predicted)
            .map(|((m, spec), p)| {
                let fantasies: Vec<Observation> = points
                    .iter()
                    .zip(p)
                    .map(|(a, (mean, _))| Observation {
                        assignment: a.clone(),
                        outcome: Outcome::Measured(BTreeMap::from([(spec.id.clone(), sign(spec.goal) * mean)])),
                    })
                    .collect();
                m.observe(&fantasies).unwrap_or_else(|| m.clone())
            })
            .collect();
        let values = (0..points.len()).map(|j| predicted.iter().map(|p| p[j].0).collect()).collect();
        Ok((updated, values))
    }

    /// One batch member: the best-scoring new assignment over the candidate rounds.
    fn member(
        &self,
        models: &[Arc<dyn Model>],
        acquisition: &Scalarised,
        taken: &HashSet<String>,
        pending: &[Assignment],
        front: &[usize],
        rng: &mut dyn Rng,
    ) -> Result<Option<Assignment>, FitError> {
        let d = self.space.n_params();
        let seed: u64 = rng.random();
        let offset: u64 = rng.random_range(0..1 << 15);
        let mut candidates: Vec<Assignment> =
            (0..SOBOL_CANDIDATES as u64).map(|i| self.space.decode(&sobol_point(offset + i, d, seed))).collect();
        let mut anchors = front.to_vec();
        if anchors.len() > ANCHORS {
            // A random share of a large front, so every part of it is explored over a study.
            for i in 0..ANCHORS {
                let j = rng.random_range(i..anchors.len());
                anchors.swap(i, j);
            }
            anchors.truncate(ANCHORS);
        }
        for &i in &anchors {
            candidates.extend(perturb(&self.space, &self.points[i].assignment, PER_ANCHOR / 2, 0.05, rng));
            candidates.extend(perturb(&self.space, &self.points[i].assignment, PER_ANCHOR / 2, 0.15, rng));
        }
        // Each objective's own designer, searching its model (with the in-flight trials as its
        // own fantasies) for that objective alone: the front's ends, found by its optimiser.
        for m in &self.models {
            candidates.extend(m.suggest(pending, 1, rng)?);
        }
        let mut best: Option<(f64, Assignment)> = None;
        let mut scored = self.score(models, acquisition, taken, candidates)?;
        for sd in REFINE_SCALES {
            if let Some(top) = scored.first() {
                if best.as_ref().is_none_or(|(s, _)| top.0 > *s) {
                    best = Some(top.clone());
                }
            }
            let mut around: Vec<Assignment> =
                scored.iter().take(REFINE_TOP).flat_map(|(_, a)| perturb(&self.space, a, REFINE_PER, sd, rng)).collect();
            around.extend(scored.iter().take(REFINE_TOP).flat_map(|(_, a)| snap(&self.space, a, REFINE_PER / 2, rng)));
            scored = self.score(models, acquisition, taken, around)?;
        }
        if let Some(top) = scored.into_iter().next() {
            if best.as_ref().is_none_or(|(s, _)| top.0 > *s) {
                best = Some(top);
            }
        }
        Ok(best.map(|(_, a)| a))
    }

    /// `candidates` not taken, deduplicated, scored and sorted best first.
    fn score(
        &self,
        models: &[Arc<dyn Model>],
        acquisition: &Scalarised,
        taken: &HashSet<String>,
        candidates: Vec<Assignment>,
    ) -> Result<Vec<(f64, Assignment)>, FitError> {
        let mut seen = HashSet::with_capacity(candidates.len());
        let fresh: Vec<Assignment> = candidates
            .into_iter()
            .filter(|a| {
                let key = a.key();
                !taken.contains(&key) && seen.insert(key)
            })
            .collect();
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let predicted = Self::oriented(models, &self.metrics, &fresh)?;
        let mut scored: Vec<(f64, Assignment)> = fresh
            .into_iter()
            .enumerate()
            .map(|(j, a)| {
                let ucb: Vec<f64> = predicted.iter().map(|p| p[j].0 + UCB_COEFFICIENT * p[j].1).collect();
                (acquisition.score(&ucb), a)
            })
            .filter(|(s, _)| s.is_finite())
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok(scored)
    }
}

impl Model for ObjectivesModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let mut acquisition = Scalarised::new(self.metrics.len(), self.scales(), rng);
        for v in self.points.iter().filter_map(|p| p.values.as_ref()) {
            acquisition.raise_floor(v);
        }
        let (mut models, fantasised) = self.with_fantasies(&self.models, pending)?;
        for v in &fantasised {
            acquisition.raise_floor(v);
        }
        let mut taken: HashSet<String> =
            self.points.iter().map(|p| p.assignment.key()).chain(pending.iter().map(Assignment::key)).collect();
        let mut in_flight = pending.to_vec();
        // The data's front, once: the members explore around it.
        let measured: Vec<(usize, &Vec<f64>)> =
            self.points.iter().enumerate().filter_map(|(i, p)| p.values.as_ref().map(|v| (i, v))).collect();
        let front_trials = front(&measured);
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            let Some(a) = self.member(&models, &acquisition, &taken, &in_flight, &front_trials, rng)? else { break };
            taken.insert(a.key());
            if k + 1 < count {
                let (next, values) = self.with_fantasies(&models, std::slice::from_ref(&a))?;
                models = next;
                values.iter().for_each(|v| acquisition.raise_floor(v));
            }
            in_flight.push(a.clone());
            out.push(a);
        }
        Ok(out)
    }

    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>> {
        let models = self.models.iter().map(|m| m.observe(new)).collect::<Option<Vec<_>>>()?;
        let mut points = self.points.clone();
        points.extend(new.iter().map(|o| point(&self.metrics, o)));
        Some(Arc::new(ObjectivesModel { space: self.space.clone(), metrics: self.metrics.clone(), models, points }))
    }

    fn refactored(&self) -> Option<Arc<dyn Model>> {
        let models = self.models.iter().map(|m| m.refactored()).collect::<Option<Vec<_>>>()?;
        Some(Arc::new(ObjectivesModel { space: self.space.clone(), metrics: self.metrics.clone(), models, points: self.points.clone() }))
    }

    /// The first objective's prediction (what a one-metric caller reads); every objective's is
    /// [`Model::predict_metrics`].
    fn predict(&self, points: &[Assignment]) -> Option<Vec<Prediction>> {
        self.models[0].predict(points)
    }

    fn predict_metrics(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<Prediction>)>> {
        self.models.iter().zip(&self.metrics).map(|(m, s)| Some((s.id.clone(), m.predict(points)?))).collect()
    }

    fn describe(&self) -> serde_json::Value {
        let objectives: serde_json::Map<String, serde_json::Value> =
            self.models.iter().zip(&self.metrics).map(|(m, s)| (s.id.clone(), m.describe())).collect();
        serde_json::json!({
            "acquisition": format!("mean of {WEIGHTS} random hypervolume scalarisations of UCB (coefficient {UCB_COEFFICIENT}), floored by the data"),
            "objectives": objectives,
        })
    }

    fn term_means(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<f64>)>> {
        self.models[0].term_means(points)
    }

    fn memory_bytes(&self) -> usize {
        self.models.iter().map(|m| m.memory_bytes()).sum::<usize>() + self.points.len() * 256
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::designer_for;
    use crate::space::{Domain, ParamSpec, Scale};
    use crate::study::StudySpec;

    fn two_metric_spec(algorithm: &str) -> StudySpec {
        let x = |id: &str| ParamSpec {
            id: id.into(),
            domain: Domain::Double { min: 0.0, max: 1.0 },
            scale: Scale::Linear,
            default: None,
            children: vec![],
        };
        let mut spec = StudySpec::new("f1", Goal::Minimize, SearchSpace::new(vec![x("x0"), x("x1")]).unwrap(), algorithm);
        spec.metrics.push(MetricSpec { id: "f2".into(), goal: Goal::Minimize });
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
        let problem = Problem { spec, seed: 3 };
        let mut rng = StdRng::seed_from_u64(3);
        let mut history: Vec<Observation> = Vec::new();
        let mut warm = None;
        while history.len() < 30 {
            let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
            warm = Some(fitted.state);
            let a = fitted.model.suggest(&[], 1, &mut rng).unwrap().remove(0);
            history.push(Observation { outcome: evaluate(&a), assignment: a });
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
        let spread =
            late.iter().filter(|(_, x1)| *x1 < 0.15).map(|(x0, _)| *x0).fold((1.0f64, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
        assert!(spread.1 - spread.0 > 0.5, "and spread along it, not at one metric's optimum: {late:?}");
        let fitted = designer.fit(&problem, &history, warm.as_ref(), &mut rng).unwrap();
        let both = fitted.model.predict_metrics(&[history[0].assignment.clone()]).expect("every objective predicts");
        assert_eq!(both.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["f1", "f2"]);
        let batch = fitted.model.suggest(&[], 4, &mut rng).unwrap();
        let keys: HashSet<String> = batch.iter().map(Assignment::key).collect();
        assert_eq!(keys.len(), 4, "a batch has distinct members");
    }

    /// A metric that no trial reports does not hold the study in its initial design: the study
    /// is optimised on the metrics that are reported.
    #[test]
    fn an_unreported_metric_leaves_the_others_optimised() {
        let spec = two_metric_spec("GP_BANDIT");
        let designer = designer_for(&spec).unwrap();
        let problem = Problem { spec, seed: 3 };
        let mut rng = StdRng::seed_from_u64(4);
        let history: Vec<Observation> = (0..20)
            .map(|i| {
                let a = problem.spec.space.decode(&sobol_point(i, 2, 9));
                let Outcome::Measured(mut m) = evaluate(&a) else { unreachable!() };
                m.remove("f2");
                Observation { assignment: a, outcome: Outcome::Measured(m) }
            })
            .collect();
        let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
        assert!(fitted.model.predict(&[history[0].assignment.clone()]).is_some(), "f1's GP answers");
        assert!(fitted.model.predict_metrics(&[]).is_none(), "not a model of both");
    }
}
