//! Suggestions within a context (Vertex's `SuggestTrialsRequest.contexts`): the study's model
//! searched over the slice of the space a context fixes, for any designer.
//!
//! - A model that predicts (every GP designer past its initial design): expected improvement
//!   over the best observed value — the upper confidence bound `μ + 2σ` before one — maximised
//!   without gradients over quasi-random points of the slice, the model's own proposal moved
//!   into the slice, and two rounds of perturbations of the best (the context's coordinates kept
//!   fixed throughout, by [`SearchSpace::decode_fixed`]).
//! - A model that does not (random, quasi-random or grid search; an initial design): its own
//!   next proposal, moved into the slice.
//!
//! A model whose acquisition is its own (several objectives, safety metrics: the several-metrics
//! model) searches the context itself ([`ContextSearch::suggest_in_context`](super::ContextSearch::suggest_in_context)); this search is for the
//! others.
//!
//! Must not: know which designer made the model.

use std::collections::HashSet;

use rand::{Rng, RngExt};

use super::{FitError, Model};
use crate::acquisition::log_h;
use crate::optimize::mixed::standard_normal;
use crate::optimize::sobol::sobol_point;
use crate::space::SearchSpace;
use crate::study::Goal;
use crate::trial::{Assignment, AssignmentKey};

/// Quasi-random candidates in the slice, at most (a request of many contexts shares a budget:
/// see [`Slice::candidates`]).
pub const CANDIDATES: usize = 1000;
/// Refinement: the best candidates explored around, and their perturbations' deviation (unit
/// cube) in each round; each round scores a quarter as many points as the first.
const TOP: usize = 8;
const SCALES: [f64; 2] = [0.05, 0.01];
/// The multiplier of σ in the bound used before any value is observed.
const UCB_SIGMA: f64 = 2.0;

/// What a search within a context knows of the study besides its model.
pub struct Slice<'a> {
    /// The study's space.
    pub space: &'a SearchSpace,
    /// Which way the objective goes.
    pub goal: Goal,
    /// The best objective value observed so far, if any.
    pub best: Option<f64>,
    /// Keys of the assignments already tried or in flight (not proposed again where the slice
    /// has others).
    pub taken: &'a HashSet<AssignmentKey>,
    /// Quasi-random candidates to score (at most [`CANDIDATES`]); the refinement scores half as
    /// many again.
    pub candidates: usize,
}

/// The model's suggestion within `context` (a partial assignment the caller has checked with
/// [`SearchSpace::check_context`]), with `pending` in flight.
pub fn suggest_in(
    model: &dyn Model,
    slice: &Slice,
    context: &Assignment,
    pending: &[Assignment],
    rng: &mut dyn Rng,
) -> Result<Assignment, FitError> {
    if let Some(own) = model.context_search().and_then(|m| m.suggest_in_context(context, pending, rng)) {
        return own;
    }
    let space = slice.space;
    let d = space.n_params();
    // The model's own proposal, moved into the slice: where it would go without the context.
    let own: Vec<Assignment> =
        model.suggest(pending, 1, rng)?.into_iter().map(|a| space.decode_fixed(&space.encode(&a), context)).collect();
    if model.predictor().and_then(|p| p.predict(&[])).is_none() {
        if let Some(a) = own.into_iter().find(|a| !slice.taken.contains(&a.key())) {
            return Ok(a);
        }
        let u: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
        return Ok(space.decode_fixed(&u, context));
    }
    let seed: u64 = rng.random();
    let budget = slice.candidates.clamp(TOP, CANDIDATES);
    let per = (budget / (4 * TOP)).max(1);
    let mut candidates: Vec<Assignment> = (0..budget as u64).map(|i| space.decode_fixed(&sobol_point(i, d, seed), context)).collect();
    candidates.extend(own);
    let mut best: Option<(f64, Assignment)> = None;
    let mut scored = score(model, slice, candidates)?;
    for sd in SCALES {
        if let Some(top) = scored.first()
            && best.as_ref().is_none_or(|(s, _)| top.0 > *s)
        {
            best = Some(top.clone());
        }
        let around: Vec<Assignment> = scored
            .iter()
            .take(TOP)
            .flat_map(|(_, a)| {
                let u0 = space.encode(a);
                (0..per)
                    .map(|_| {
                        let u: Vec<f64> = u0.iter().map(|v| (v + sd * standard_normal(rng)).clamp(0.0, 1.0)).collect();
                        space.decode_fixed(&u, context)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        scored = score(model, slice, around)?;
    }
    if let Some(top) = scored.into_iter().next()
        && best.as_ref().is_none_or(|(s, _)| top.0 > *s)
    {
        best = Some(top);
    }
    match best {
        Some((_, a)) => Ok(a),
        // Every candidate was taken (a small finite slice): the model's choice regardless.
        None => Ok(space.decode_fixed(&(0..d).map(|_| rng.random::<f64>()).collect::<Vec<_>>(), context)),
    }
}

/// `candidates` not taken, deduplicated, scored (log EI, or the bound before a best) and sorted
/// best first.
fn score(model: &dyn Model, slice: &Slice, candidates: Vec<Assignment>) -> Result<Vec<(f64, Assignment)>, FitError> {
    let mut seen = HashSet::with_capacity(candidates.len());
    let fresh: Vec<Assignment> = candidates
        .into_iter()
        .filter(|a| {
            let key = a.key();
            !slice.taken.contains(&key) && seen.insert(key)
        })
        .collect();
    if fresh.is_empty() {
        return Ok(Vec::new());
    }
    let predicted = normal_approximations(model, &fresh).ok_or_else(|| FitError::Numerical("the model stopped predicting".into()))?;
    let sign = if slice.goal == Goal::Minimize { -1.0 } else { 1.0 };
    let mut scored: Vec<(f64, Assignment)> = fresh
        .into_iter()
        .zip(predicted)
        .map(|(a, (centre, sd))| {
            let (mean, sd) = (sign * centre, sd.max(1e-12));
            let s = match slice.best {
                Some(b) => sd.ln() + log_h((mean - sign * b) / sd),
                None => mean + UCB_SIGMA * sd,
            };
            (s, a)
        })
        .filter(|(s, _)| !s.is_nan())
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(scored)
}

/// The normal approximation ([`super::Prediction::normal_approximation`]) of `model`'s
/// prediction at each of `points`, from its predictive distribution where it has one (no
/// quadrature of a mean an acquisition does not read), else from its predictions; `None` when it
/// does not predict.
pub(crate) fn normal_approximations(model: &dyn Model, points: &[Assignment]) -> Option<Vec<(f64, f64)>> {
    let predictor = model.predictor()?;
    match predictor.predictive(points) {
        Some(p) => Some(p.iter().map(super::Predictive::normal_approximation).collect()),
        None => Some(predictor.predict(points)?.iter().map(super::Prediction::normal_approximation).collect()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::{Problem, designer_for};

    use crate::study::StudySpec;
    use crate::trial::{Observation, Outcome, ParamValue};

    /// Minimise (x − c)² + (y − 0.3)² where the context fixes c = x's target: within each
    /// context the GP's suggestion moves x towards it and y towards 0.3 — the model, searched
    /// over the slice — and a random-search study answers within the context too.
    #[test]
    fn a_context_is_searched_by_the_model() {
        let space = crate::designer::testing::fixtures::unit_box(&["c", "x", "y"]);
        let f = |a: &Assignment| {
            let v = |id: &str| match a.get(id) {
                Some(ParamValue::Float(x)) => *x,
                _ => unreachable!(),
            };
            (v("x") - v("c")).powi(2) + (v("y") - 0.3).powi(2)
        };
        for algorithm in ["GP_BANDIT", "RANDOM_SEARCH"] {
            let spec = StudySpec::new("loss", Goal::Minimize, space.clone(), algorithm);
            let designer = designer_for(&spec).unwrap();
            let problem = Problem { spec, seed: 1, priors: Vec::new() };
            let mut rng = StdRng::seed_from_u64(1);
            let history: Vec<Observation> = (0..40u64)
                .map(|i| {
                    let a = space.decode(&sobol_point(i, 3, 5));
                    Observation { objective_sd: None, outcome: Outcome::Measured(BTreeMap::from([("loss".into(), f(&a))])), assignment: a }
                })
                .collect();
            let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
            let taken: HashSet<AssignmentKey> = history.iter().map(|o| o.assignment.key()).collect();
            let best = history.iter().map(|o| f(&o.assignment)).fold(f64::INFINITY, f64::min);
            let slice = Slice { space: &space, goal: Goal::Minimize, best: Some(best), taken: &taken, candidates: CANDIDATES };
            for c in [0.1, 0.8] {
                let context = Assignment::new(BTreeMap::from([("c".into(), ParamValue::Float(c))]));
                let a = suggest_in(fitted.model.as_ref(), &slice, &context, &[], &mut rng).unwrap();
                space.check(&a).unwrap();
                assert_eq!(a.get("c"), Some(&ParamValue::Float(c)), "{algorithm}: the context's value, exactly");
                if algorithm == "GP_BANDIT" {
                    assert!(f(&a) < 0.05, "{algorithm}: within c = {c} the model finds x ≈ c, y ≈ 0.3: {a:?} ({})", f(&a));
                }
            }
        }
    }
}
