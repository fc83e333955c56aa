//! Large studies: a learning designer fitted on at most [`SUBSET`] of a study's observations
//! once it has more than [`EXACT_UP_TO`], so a fit costs O(SUBSET³) and a suggestion O(SUBSET²)
//! whatever the study's size ("subset of data", Rasmussen & Williams 2006, §8.3.1).
//!
//! The subset is chosen by relevance, from the data alone (no randomness, so a restore on
//! another replica chooses the same):
//!
//! - the best quarter of the subset by each objective, shared between the objectives (where
//!   the next suggestions are sought: the acquisition's incumbent and its neighbourhood);
//! - the most recent quarter (where the study is searching now, and what a model conditioned on
//!   the newest completions extends);
//! - the rest spread evenly over the remaining trials in the order they were observed (the
//!   whole space as the study covered it, so the model does not forget a region).
//!
//! The wrapped designer never knows: it is fitted on the subset as if it were the study, and its
//! model observes the completions that arrive before the next fit. Must not: hold the full
//! history, or choose by anything but the observations and the study's goals.
//!
//! The trials left out are evidence too. A model of a subset is more certain than it should be
//! of the rest of the study, so its predictions are widened by the factor that makes them right
//! about up to [`CHECKED`] of the trials it did not see, spread over the study
//! ([`calibration::factor`], never below 1). What the model proposes is not changed — only what
//! it says it knows — except a suggestion within a context, whose search scores candidates by the
//! model's predictions ([`super::context`]).

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use rand::Rng;

use super::calibration::{self, Residual};
use super::wrapper::Wrapper;
use super::{Designer, FitError, Fitted, Model, ModelState, Problem, Work};
use crate::space::SearchSpace;
use crate::study::Goal;
use crate::trial::{Assignment, Observation, Outcome};

/// Studies of up to this many observations are fitted on all of them.
pub const EXACT_UP_TO: usize = 2048;

/// The observations a larger study's designer is fitted on.
pub const SUBSET: usize = 1024;

/// A designer fitted on [`relevant`] observations once a study has more than [`EXACT_UP_TO`].
pub struct Subset {
    inner: Box<dyn Designer>,
}

impl Subset {
    /// `inner`, fitted on a subset in large studies.
    pub fn wrap(inner: Box<dyn Designer>) -> Box<dyn Designer> {
        Box::new(Subset { inner })
    }
}

impl Designer for Subset {
    fn fit(&self, problem: &Problem, history: &[Observation], warm: Option<&ModelState>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        match chosen(problem, history) {
            Some(chosen) => {
                let fitted = self.inner.fit(problem, &pick(history, &chosen), warm, rng)?;
                Ok(widened(problem, history, &chosen, fitted))
            }
            None => self.inner.fit(problem, history, warm, rng),
        }
    }

    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        match chosen(problem, history) {
            Some(chosen) => {
                let fitted = self.inner.restore(problem, &pick(history, &chosen), state, rng)?;
                Ok(widened(problem, history, &chosen, fitted))
            }
            None => self.inner.restore(problem, history, state, rng),
        }
    }

    fn learns(&self) -> bool {
        self.inner.learns()
    }

    fn takes_priors(&self) -> bool {
        self.inner.takes_priors()
    }

    fn work(&self, space: &SearchSpace) -> Work {
        self.inner.work(space)
    }
}

/// How many of a study's `n` observations its designer is fitted on.
pub fn fitted_on(n: usize) -> usize {
    if n > EXACT_UP_TO { SUBSET } else { n }
}

/// The observations of `history` a designer of a large study is fitted on (see the module
/// docs), in their order in `history`; `None` when the study is small enough to fit whole.
pub fn relevant(problem: &Problem, history: &[Observation]) -> Option<Vec<Observation>> {
    chosen(problem, history).map(|chosen| pick(history, &chosen))
}

fn pick(history: &[Observation], chosen: &BTreeSet<usize>) -> Vec<Observation> {
    chosen.iter().map(|&i| history[i].clone()).collect()
}

/// The left-out trials a subset's model is checked against.
pub const CHECKED: usize = 256;

/// `fitted`'s model, its predictions widened to be right about the trials left out (see the
/// module docs): the evidence is kept, and the factor found the first time a prediction is
/// asked for — a refit, which never predicts, pays nothing for it. Unchanged without evidence.
fn widened(problem: &Problem, history: &[Observation], chosen: &BTreeSet<usize>, fitted: Fitted) -> Fitted {
    let Some(metric) = problem.spec.objectives().next().map(|m| m.id.clone()) else { return fitted };
    let left_out: Vec<(&Assignment, f64)> = history
        .iter()
        .enumerate()
        .filter(|(i, _)| !chosen.contains(i))
        .filter_map(|(_, o)| match &o.outcome {
            Outcome::Measured(m) => m.get(&metric).filter(|v| v.is_finite()).map(|v| (&o.assignment, *v)),
            Outcome::Infeasible => None,
        })
        .collect();
    let m = left_out.len().min(CHECKED);
    if m == 0 {
        return fitted;
    }
    let (points, values): (Vec<Assignment>, Vec<f64>) =
        (0..m).map(|k| left_out[k * left_out.len() / m]).map(|(a, v)| (a.clone(), v)).unzip();
    let evidence = Arc::new(Evidence { points, values, factor: OnceLock::new() });
    Fitted { model: Arc::new(Widened { inner: fitted.model, evidence }), state: fitted.state }
}

/// The trials left out that a subset's model is checked against, and the factor they ask for.
struct Evidence {
    points: Vec<Assignment>,
    values: Vec<f64>,
    factor: OnceLock<f64>,
}

/// A subset's model whose predictions are widened by [`Evidence`]'s factor; everything else is
/// the inner model's. The models it observes into share the evidence (and the factor).
struct Widened {
    inner: Arc<dyn Model>,
    evidence: Arc<Evidence>,
}

impl Widened {
    /// The factor, found on first use: 1 for a model without a predictive distribution.
    fn factor(&self) -> f64 {
        *self.evidence.factor.get_or_init(|| {
            let Some(predictive) = self.inner.predictor().and_then(|p| p.predictive(&self.evidence.points)) else { return 1.0 };
            let residuals: Vec<Residual> = predictive.iter().zip(&self.evidence.values).map(|(p, &y)| p.residual(y)).collect();
            calibration::factor(&residuals, 1.0, calibration::BOUNDS.1)
        })
    }
}

impl Wrapper for Widened {
    fn inner(&self) -> &Arc<dyn Model> {
        &self.inner
    }

    fn rewrap(&self, inner: Arc<dyn Model>) -> Arc<dyn Model> {
        Arc::new(Widened { inner, evidence: self.evidence.clone() })
    }

    fn widening(&self) -> Option<f64> {
        Some(self.factor())
    }

    fn describe_around(&self, mut inner: serde_json::Value) -> serde_json::Value {
        let factor = self.factor();
        if factor > 1.0
            && let serde_json::Value::Object(map) = &mut inner
        {
            map.insert("predictionsWidened".into(), serde_json::json!({ "factor": factor, "checkedOnTrials": self.evidence.points.len() }));
        }
        inner
    }

    fn own_bytes(&self) -> usize {
        // An assignment: a B-tree node at least, about 128 bytes an entry with its key.
        self.evidence.points.iter().map(|a| 512 + 128 * a.0.len()).sum::<usize>() + 8 * self.evidence.values.len()
    }
}

/// The indices of the observations of `history` a designer of a large study is fitted on;
/// `None` when the study is small enough to fit whole.
fn chosen(problem: &Problem, history: &[Observation]) -> Option<BTreeSet<usize>> {
    let n = history.len();
    if fitted_on(n) == n {
        return None;
    }
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    // The best of each objective, in turn, until a quarter of the subset is chosen.
    let objectives: Vec<_> = problem.spec.objectives().collect();
    let mut ranked: Vec<Vec<usize>> = objectives
        .iter()
        .map(|metric| {
            let mut measured: Vec<(usize, f64)> = history
                .iter()
                .enumerate()
                .filter_map(|(i, o)| match &o.outcome {
                    Outcome::Measured(m) => m.get(&metric.id).filter(|v| v.is_finite()).map(|v| (i, *v)),
                    Outcome::Infeasible => None,
                })
                .collect();
            // Best first; ties by trial order.
            measured.sort_by(|a, b| {
                let by_value = match metric.goal {
                    Goal::Minimize => a.1.total_cmp(&b.1),
                    Goal::Maximize => b.1.total_cmp(&a.1),
                };
                by_value.then(a.0.cmp(&b.0))
            });
            measured.into_iter().map(|(i, _)| i).collect()
        })
        .collect();
    let best_quota = SUBSET / 4;
    let mut rank = 0;
    while chosen.len() < best_quota && ranked.iter().any(|r| rank < r.len()) {
        for r in &mut ranked {
            if let Some(&i) = r.get(rank)
                && chosen.len() < best_quota
            {
                chosen.insert(i);
            }
        }
        rank += 1;
    }
    // The most recent quarter.
    let recent_quota = chosen.len() + SUBSET / 4;
    for i in (0..n).rev() {
        if chosen.len() >= recent_quota {
            break;
        }
        chosen.insert(i);
    }
    // The rest spread evenly over what is left, in order.
    let rest: Vec<usize> = (0..n).filter(|i| !chosen.contains(i)).collect();
    let wanted = SUBSET - chosen.len();
    for k in 0..wanted.min(rest.len()) {
        chosen.insert(rest[k * rest.len() / wanted]);
    }
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::designer::Predictive;
    use crate::study::StudySpec;
    use crate::trial::{Assignment, ParamValue};

    fn problem(goal: Goal) -> Problem {
        let space = crate::designer::testing::fixtures::unit_box(&["x"]);
        Problem { spec: StudySpec::new("f", goal, space, "GP_BANDIT"), seed: 0, priors: Vec::new() }
    }

    fn history(n: usize) -> Vec<Observation> {
        (0..n)
            .map(|i| Observation {
                objective_sd: None,
                assignment: Assignment::new(BTreeMap::from([("x".into(), ParamValue::Float(i as f64 / n as f64))])),
                // Trial i scores (i * 7919) mod n: the best are spread through the study.
                outcome: if i % 97 == 3 {
                    Outcome::Infeasible
                } else {
                    Outcome::Measured(BTreeMap::from([("f".to_owned(), ((i * 7919) % n) as f64)]))
                },
            })
            .collect()
    }

    fn value(o: &Observation) -> Option<f64> {
        match &o.outcome {
            Outcome::Measured(m) => m.get("f").copied(),
            Outcome::Infeasible => None,
        }
    }

    /// A model that predicts `mean ± sd` everywhere and proposes nothing.
    struct Fixed {
        mean: f64,
        sd: f64,
        warp: crate::designer::gp::Warp,
    }

    impl Model for Fixed {
        fn suggest(&self, _: &[Assignment], _: usize, _: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
            Ok(Vec::new())
        }

        fn predictor(&self) -> Option<&dyn crate::designer::Predictor> {
            Some(self)
        }
    }

    impl crate::designer::Predictor for Fixed {
        fn predictive(&self, points: &[Assignment]) -> Option<Vec<Predictive<'_>>> {
            Some(points.iter().map(|_| Predictive::new(self.mean, self.sd, 0.0, &self.warp, 1.0)).collect())
        }
    }

    fn fixed(sd: f64) -> Fitted {
        let model = Fixed { mean: 1500.0, sd, warp: crate::designer::gp::Warp::Identity };
        Fitted { model: Arc::new(model), state: ModelState(serde_json::Value::Null) }
    }

    #[test]
    fn a_subset_model_too_sure_of_the_trials_left_out_is_widened() {
        let problem = problem(Goal::Minimize);
        let all = history(3000);
        let kept = chosen(&problem, &all).expect("a subset");
        let at = [all[1].assignment.clone()];
        // The values left out spread evenly over 0..3000: a deviation of 10 is far too sure.
        let wide = widened(&problem, &all, &kept, fixed(10.0));
        let p = wide.model.predictor().unwrap().predict(&at).unwrap()[0];
        let factor = wide.model.describe()["predictionsWidened"]["factor"].as_f64().expect("the factor is described");
        assert!((50.0..300.0).contains(&factor), "{factor}");
        assert!(((p.upper - p.lower) / (2.0 * crate::designer::Z_95 * 10.0) - factor).abs() < 1e-6 * factor, "{p:?}");
        assert_eq!(p.median, 1500.0, "the centre is the model's");
        // A deviation near the values' own (866) needs no widening, and nothing narrows.
        for sd in [900.0, 5000.0] {
            let unchanged = widened(&problem, &all, &kept, fixed(sd));
            assert!(unchanged.model.describe().get("predictionsWidened").is_none(), "sd {sd}");
            assert_eq!(unchanged.model.predictor().unwrap().predict(&at).unwrap()[0].upper, 1500.0 + crate::designer::Z_95 * sd);
        }
    }

    #[test]
    fn a_small_study_is_fitted_whole() {
        assert!(relevant(&problem(Goal::Minimize), &history(EXACT_UP_TO)).is_none());
    }

    #[test]
    fn a_large_study_keeps_its_best_its_newest_and_a_spread_of_the_rest() {
        let n = 10_000;
        let all = history(n);
        for goal in [Goal::Minimize, Goal::Maximize] {
            let subset = relevant(&problem(goal), &all).expect("a subset");
            assert_eq!(subset.len(), SUBSET);
            let keys: BTreeSet<crate::AssignmentKey> = subset.iter().map(|o| o.assignment.key()).collect();
            assert_eq!(keys.len(), SUBSET, "no observation twice");
            // The best quarter by the goal.
            let mut values: Vec<f64> = all.iter().filter_map(value).collect();
            values.sort_by(|a, b| if goal == Goal::Minimize { a.total_cmp(b) } else { b.total_cmp(a) });
            let cutoff = values[SUBSET / 4 - 1];
            let best_kept = subset.iter().filter_map(value).filter(|v| !goal.better(cutoff, *v)).count();
            assert!(best_kept >= SUBSET / 4, "{goal:?}: {best_kept} of the best quarter kept");
            // The newest quarter.
            for o in &all[n - SUBSET / 4..] {
                assert!(keys.contains(&o.assignment.key()), "a recent observation left out");
            }
            // The rest spread: every tenth of the study is represented.
            for tenth in 0..10 {
                let lo = tenth * n / 10;
                let inside = all[lo..lo + n / 10].iter().filter(|o| keys.contains(&o.assignment.key())).count();
                assert!(inside >= SUBSET / 20, "tenth {tenth}: only {inside} observations");
            }
            assert_eq!(relevant(&problem(goal), &all).unwrap().len(), SUBSET, "the same choice again");
        }
    }
}
