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

use std::collections::BTreeSet;

use rand::Rng;

use super::{Designer, FitError, Fitted, ModelState, Problem, Work};
use crate::space::SearchSpace;
use crate::study::Goal;
use crate::trial::{Observation, Outcome};

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
        match relevant(problem, history) {
            Some(subset) => self.inner.fit(problem, &subset, warm, rng),
            None => self.inner.fit(problem, history, warm, rng),
        }
    }

    fn restore(&self, problem: &Problem, history: &[Observation], state: &ModelState, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        match relevant(problem, history) {
            Some(subset) => self.inner.restore(problem, &subset, state, rng),
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
    Some(chosen.into_iter().map(|i| history[i].clone()).collect())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::study::StudySpec;
    use crate::trial::{Assignment, ParamValue};

    fn problem(goal: Goal) -> Problem {
        use crate::space::{Domain, ParamSpec, Scale};
        let x = ParamSpec {
            id: "x".into(),
            domain: Domain::Double { min: 0.0, max: 1.0 },
            scale: Scale::Linear,
            default: None,
            children: vec![],
        };
        let space = SearchSpace::new(vec![x]).unwrap();
        Problem { spec: StudySpec::new("f", goal, space, "GP_BANDIT"), seed: 0, priors: Vec::new() }
    }

    fn history(n: usize) -> Vec<Observation> {
        (0..n)
            .map(|i| Observation {
                assignment: Assignment(BTreeMap::from([("x".to_owned(), ParamValue::Float(i as f64 / n as f64))])),
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
            let keys: BTreeSet<String> = subset.iter().map(|o| o.assignment.key()).collect();
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
