//! The conformance suite every designer passes, and the fixture spaces it runs on. Public behind
//! the `testing` feature so the service's tests can reuse the fixtures.
//!
//! For each fixture space and for 0, 1 and 24 completed trials (some infeasible; enough for the
//! GP designers to leave their initial design), a designer
//! must: return exactly `count` suggestions; make each one feasible with exactly its active
//! parameters (so no NaN and no inactive value); not repeat a pending trial; and return the same
//! suggestions for the same seed. After 24 trials, a designer whose model predicts must also
//! rebuild its stored fit with `restore` (the same state, the same predictions), and a model
//! that observes must equal the same model refitted at the same hyperparameters
//! ([`Conditioning::refactored`](super::Conditioning::refactored)). In a space of 18 points, a designer must
//! propose something at every step until all have been tried. A designer that learns must
//! predict within bounds under every output warp ([`predictions_are_bounded`]).

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::{ConfigError, Model, Prediction, Problem, designer_for};
use crate::space::SearchSpace;
use crate::study::{Goal, StudySpec};
use crate::trial::{Assignment, Observation, Outcome, ParamValue};

/// The θ samples stored with a fit: the length of the first `samples` array found in a
/// designer's stored state (its hyperparameters'), wherever the designer nests it.
pub fn stored_samples(state: &serde_json::Value) -> Option<usize> {
    match state {
        serde_json::Value::Object(m) => {
            m.get("samples").and_then(|s| s.as_array()).map(Vec::len).or_else(|| m.values().find_map(stored_samples))
        }
        serde_json::Value::Array(a) => a.iter().find_map(stored_samples),
        _ => None,
    }
}

/// Fixture spaces.
pub mod fixtures {
    use crate::space::{Conditional, Domain, ParamSpec, ParentValues, Scale, SearchSpace};

    fn leaf(id: &str, domain: Domain, scale: Scale) -> ParamSpec {
        ParamSpec { id: id.into(), domain, scale, default: None, children: vec![] }
    }

    fn cond(values: ParentValues, spec: ParamSpec) -> Conditional {
        Conditional { parent_values: values, spec }
    }

    fn cats(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A DOUBLE parameter `id` over [0, 1], linear, without children.
    pub fn unit_double(id: &str) -> ParamSpec {
        leaf(id, Domain::Double { min: 0.0, max: 1.0 }, Scale::Linear)
    }

    /// A DOUBLE parameter over [0, 1] for each of `ids`.
    pub fn unit_box(ids: &[&str]) -> SearchSpace {
        SearchSpace::new(ids.iter().map(|id| unit_double(id)).collect()).expect("fixture is valid")
    }

    /// `n` DOUBLE parameters `x0`, `x1`, … over [0, 1] (under the default limits).
    pub fn unit_cube(n: usize) -> SearchSpace {
        SearchSpace::new((0..n).map(|i| unit_double(&format!("x{i}"))).collect()).expect("fixture is valid")
    }

    /// One parameter of every type and scale, no conditions.
    pub fn all_types() -> SearchSpace {
        SearchSpace::new(vec![
            leaf("lr", Domain::Double { min: 1e-5, max: 1e-1 }, Scale::Log),
            leaf("dropout", Domain::Double { min: 0.0, max: 0.9 }, Scale::Linear),
            leaf("beta", Domain::Double { min: 0.5, max: 0.999 }, Scale::ReverseLog),
            leaf("layers", Domain::Integer { min: 1, max: 8 }, Scale::Linear),
            leaf("width", Domain::Integer { min: 16, max: 4096 }, Scale::Log),
            leaf("batch", Domain::Discrete { values: vec![16.0, 32.0, 64.0, 128.0] }, Scale::Linear),
            leaf("act", Domain::Categorical { values: cats(&["relu", "tanh", "gelu"]) }, Scale::Linear),
        ])
        .expect("fixture is valid")
    }

    /// Finitely many points, 6 × 3 = 18: an integer and a category.
    pub fn small_discrete() -> SearchSpace {
        SearchSpace::new(vec![
            leaf("n", Domain::Integer { min: 1, max: 6 }, Scale::Linear),
            leaf("kind", Domain::Categorical { values: cats(&["a", "b", "c"]) }, Scale::Linear),
        ])
        .expect("fixture is valid")
    }

    /// `optimizer ∈ {sgd, adam}` with `momentum` under sgd and `beta1` under adam, and `layers`.
    pub fn optimizer_tree() -> SearchSpace {
        SearchSpace::new(vec![
            ParamSpec {
                children: vec![
                    cond(
                        ParentValues::Categorical(cats(&["sgd"])),
                        leaf("momentum", Domain::Double { min: 0.0, max: 0.99 }, Scale::Linear),
                    ),
                    cond(ParentValues::Categorical(cats(&["adam"])), leaf("beta1", Domain::Double { min: 0.8, max: 0.999 }, Scale::Linear)),
                ],
                ..leaf("optimizer", Domain::Categorical { values: cats(&["sgd", "adam"]) }, Scale::Linear)
            },
            leaf("layers", Domain::Integer { min: 1, max: 2 }, Scale::Linear),
        ])
        .expect("fixture is valid")
    }

    /// A tree three levels deep under CATEGORICAL, INTEGER and DISCRETE parents.
    pub fn conditional_three_levels() -> SearchSpace {
        let depth3 = cond(ParentValues::Discrete(vec![2.0]), leaf("kernel_scale", Domain::Double { min: 0.1, max: 10.0 }, Scale::Log));
        let depth2 = cond(
            ParentValues::Integer(vec![2, 3]),
            ParamSpec { children: vec![depth3], ..leaf("pool", Domain::Discrete { values: vec![1.0, 2.0, 4.0] }, Scale::Linear) },
        );
        let conv = cond(
            ParentValues::Categorical(cats(&["conv"])),
            ParamSpec { children: vec![depth2], ..leaf("conv_layers", Domain::Integer { min: 1, max: 4 }, Scale::Linear) },
        );
        let mlp = cond(ParentValues::Categorical(cats(&["mlp"])), leaf("hidden", Domain::Integer { min: 8, max: 512 }, Scale::Log));
        SearchSpace::new(vec![
            ParamSpec {
                children: vec![conv, mlp],
                ..leaf("model", Domain::Categorical { values: cats(&["conv", "mlp", "linear"]) }, Scale::Linear)
            },
            leaf("lr", Domain::Double { min: 1e-4, max: 1.0 }, Scale::Log),
        ])
        .expect("fixture is valid")
    }
}

/// The metrics of a conformance study: `loss` alone, or with `accuracy` as a second objective or
/// as a safety metric.
#[derive(Clone, Copy, Debug)]
enum Metrics {
    One,
    TwoObjectives,
    ObjectiveAndSafety,
    /// `loss` alone, its infeasible trials modelled by a classifier (learning designers only).
    OneWithClassifier,
}

fn spec_for(space: SearchSpace, algorithm: &str, metrics: Metrics) -> StudySpec {
    let mut spec = study(space, algorithm, serde_json::Value::Null);
    let accuracy = crate::study::MetricSpec::objective("accuracy", Goal::Maximize);
    match metrics {
        Metrics::One => {}
        Metrics::TwoObjectives => spec.metrics.push(accuracy),
        Metrics::ObjectiveAndSafety => spec.metrics.push(crate::study::MetricSpec {
            safety: Some(crate::study::Safety { threshold: 0.5, desired_min_safe_fraction: 0.6 }),
            ..accuracy
        }),
        Metrics::OneWithClassifier => spec.algorithm_config = serde_json::json!({"infeasibleTrials": "CLASSIFIER"}),
    }
    spec
}

/// A study minimising `loss` over `space` with `algorithm` and its `config`.
pub fn study(space: SearchSpace, algorithm: &str, config: serde_json::Value) -> StudySpec {
    StudySpec::new("loss", Goal::Minimize, space, algorithm).with_config(config)
}

/// A made-up but deterministic outcome: every fourth trial infeasible, else a sum of encodings
/// (`loss`) and, for a second objective that trades off against it, `accuracy`.
fn observe(space: &SearchSpace, i: usize, a: Assignment) -> Observation {
    let outcome = if i % 4 == 3 {
        Outcome::Infeasible
    } else {
        let u = space.encode(&a);
        let loss: f64 = u.iter().enumerate().map(|(k, u)| (u - 0.3).powi(2) * (k + 1) as f64).sum();
        let accuracy: f64 = (-u.iter().map(|u| (u - 0.7).powi(2)).sum::<f64>()).exp();
        Outcome::Measured(BTreeMap::from([("loss".to_owned(), loss), ("accuracy".to_owned(), accuracy)]))
    };
    Observation { objective_sd: None, assignment: a, outcome }
}

fn suggest(problem: &Problem, history: &[Observation], pending: &[Assignment], count: usize, seed: u64) -> Vec<Assignment> {
    let designer = designer_for(&problem.spec).expect("known algorithm");
    let mut rng = StdRng::seed_from_u64(seed);
    let fitted = designer.fit(problem, history, None, &mut rng).expect("fit succeeds");
    fitted.model.suggest(pending, count, &mut rng).expect("suggest succeeds")
}

/// Runs the conformance checks for `algorithm` on every fixture space it accepts (a designer
/// may refuse a space with a configuration error naming what it supports; it must accept at
/// least one), for a study of one metric, of two objectives, of an objective and a safety
/// metric, and (for the designers that learn) of one metric whose infeasible trials a classifier
/// models; panics on the first failure, naming it.
pub fn conformance(algorithm: &str) {
    conformance_of(algorithm, Metrics::One);
    conformance_of(algorithm, Metrics::TwoObjectives);
    conformance_of(algorithm, Metrics::ObjectiveAndSafety);
    let learns = designer_for(&study(fixtures::all_types(), algorithm, serde_json::Value::Null)).is_ok_and(|d| d.learns());
    if learns {
        conformance_of(algorithm, Metrics::OneWithClassifier);
        predictions_are_bounded(algorithm);
    }
    proposes_until_used_up(algorithm);
    learns_across_revisions(algorithm);
}

/// An open study's space before and after its objective asked for more (`space::grow`): a
/// branch, a child under one of its values, a root; then a child of the other value, a root
/// parameter first asked under one branch, a DOUBLE root and an INTEGER child.
pub fn grown_spaces() -> (SearchSpace, SearchSpace) {
    use crate::space::grow::Asked;
    use crate::space::{Domain, ParamSpec, Scale};
    let leaf = |id: &str, domain: Domain, scale: Scale| Asked {
        spec: ParamSpec { id: id.into(), domain, scale, default: None, children: vec![] },
        parent: None,
        value: None,
    };
    let under = |parent: &str, a: Asked| Asked { parent: Some(parent.into()), ..a };
    let with = |value: ParamValue, a: Asked| Asked { value: Some(value), ..a };
    let cat = |s: &str| ParamValue::Categorical(s.into());
    let optimizer = Domain::Categorical { values: vec!["sgd".into(), "adam".into()] };
    let unit = Domain::Double { min: 0.0, max: 1.0 };
    let limits = crate::Limits::default();
    let sgd = Assignment::new(BTreeMap::from([("optimizer".into(), cat("sgd"))]));
    let adam = Assignment::new(BTreeMap::from([("optimizer".into(), cat("adam"))]));
    let first = SearchSpace::empty()
        .grown(
            &Assignment::default(),
            &[
                with(cat("sgd"), leaf("optimizer", optimizer, Scale::Linear)),
                with(ParamValue::Float(0.5), under("optimizer", leaf("momentum", unit.clone(), Scale::Linear))),
                with(ParamValue::Int(2), leaf("layers", Domain::Integer { min: 1, max: 4 }, Scale::Linear)),
            ],
            &limits,
        )
        .expect("valid growth")
        .expect("grown");
    let second = first
        .grown(&adam, &[under("optimizer", leaf("beta1", Domain::Double { min: 0.8, max: 0.999 }, Scale::Linear))], &limits)
        .expect("valid growth")
        .expect("grown");
    let second = second
        .grown(&sgd, &[under("optimizer", leaf("decay", unit.clone(), Scale::Linear))], &limits)
        .and_then(|s| s.expect("grown").grown(&adam, &[leaf("decay", unit, Scale::Linear)], &limits))
        .expect("valid growth")
        .expect("grown");
    let width = leaf("width", Domain::Integer { min: 8, max: 512 }, Scale::Log);
    let lr = leaf("lr", Domain::Double { min: 1e-4, max: 1.0 }, Scale::Log);
    let layered = Assignment::new(BTreeMap::from([("optimizer".into(), cat("sgd")), ("layers".into(), ParamValue::Int(3))]));
    let second = second.grown(&layered, &[lr, under("layers", width)], &limits).expect("valid growth").expect("grown");
    (first, second)
}

/// Trials drawn from an earlier revision of an open study's space lack what was added since;
/// a designer fitted on them beside trials of the grown space proposes complete points of the
/// grown space, with the earlier trials pending too, and the same for the same seed.
fn learns_across_revisions(algorithm: &str) {
    let (first, second) = grown_spaces();
    let problem = |space: &SearchSpace| Problem {
        spec: StudySpec { open_space: true, ..spec_for(space.clone(), algorithm, Metrics::One) },
        seed: 42,
        priors: Vec::new(),
    };
    let (old, new) = (problem(&first), problem(&second));
    if designer_for(&old.spec).is_err() || designer_for(&new.spec).is_err() {
        return;
    }
    let mut history = Vec::new();
    for i in 0..10 {
        let a = suggest(&old, &history, &[], 1, 4000 + i as u64).remove(0);
        second.check_partial(&a).unwrap_or_else(|e| panic!("{algorithm}: a trial of the first revision is not one of the second: {e}"));
        history.push(observe(&first, i, a));
    }
    let pending: Vec<Assignment> = suggest(&old, &history, &[], 2, 7);
    for i in 10..24 {
        let a = suggest(&new, &history, &pending, 1, 4000 + i as u64).remove(0);
        second.check(&a).unwrap_or_else(|e| panic!("{algorithm} after {i} trials of two revisions: infeasible {a:?}: {e}"));
        history.push(observe(&second, i, a));
    }
    let got = suggest(&new, &history, &pending, 3, 9);
    assert_eq!(got.len(), 3, "{algorithm} across revisions: asked for 3");
    for a in &got {
        second.check(a).unwrap_or_else(|e| panic!("{algorithm} across revisions: infeasible {a:?}: {e}"));
    }
    assert_eq!(got, suggest(&new, &history, &pending, 3, 9), "{algorithm} across revisions: same seed, other suggestions");
}

/// In a space of finitely many points a designer has something to propose at every step until
/// every point has been tried. (GP_BANDIT's trust region, used up long before the space, once
/// proposed nothing, and the service completed the study as exhausted; the service now fills
/// such a shortfall quasi-randomly and counts it as a failure, but the designer should not fail.)
fn proposes_until_used_up(algorithm: &str) {
    let space = fixtures::small_discrete();
    let problem = Problem { spec: spec_for(space.clone(), algorithm, Metrics::One), seed: 42, priors: Vec::new() };
    if designer_for(&problem.spec).is_err() {
        return;
    }
    let mut history = Vec::new();
    for i in 0..17 {
        let got = suggest(&problem, &history, &[], 1, 2000 + i as u64);
        assert_eq!(got.len(), 1, "{algorithm} on small_discrete after {i} of its 18 points: nothing proposed");
        history.push(observe(&space, i, got[0].clone()));
    }
}

fn conformance_of(algorithm: &str, objectives: Metrics) {
    let mut accepted = 0;
    let spaces = [
        ("all_types", fixtures::all_types()),
        ("optimizer_tree", fixtures::optimizer_tree()),
        ("conditional_three_levels", fixtures::conditional_three_levels()),
    ];
    for (name, space) in spaces {
        let problem = Problem { spec: spec_for(space.clone(), algorithm, objectives), seed: 42, priors: Vec::new() };
        if let Err(e) = designer_for(&problem.spec) {
            assert!(matches!(e, ConfigError::Invalid { .. }), "{algorithm} on {name}: {e}");
            continue;
        }
        accepted += 1;
        for n_history in [0usize, 1, 24] {
            let mut history = Vec::new();
            for i in 0..n_history {
                let a = suggest(&problem, &history, &[], 1, 1000 + i as u64).remove(0);
                history.push(observe(&space, i, a));
            }
            let pending = suggest(&problem, &history, &[], 2, 7);
            let count = 3;
            let got = suggest(&problem, &history, &pending, count, 9);
            let context = format!("{algorithm} ({objectives:?}) on {name} after {n_history} trials");
            assert_eq!(got.len(), count, "{context}: asked for {count} suggestions");
            for a in &got {
                space.check(a).unwrap_or_else(|e| panic!("{context}: infeasible suggestion {a:?}: {e}"));
                for v in a.0.values() {
                    if let ParamValue::Float(x) = v {
                        assert!(x.is_finite(), "{context}: non-finite value in {a:?}");
                    }
                }
                assert!(!pending.iter().any(|p| p == a), "{context}: repeated a pending trial {a:?}");
            }
            let again = suggest(&problem, &history, &pending, count, 9);
            assert_eq!(got, again, "{context}: same seed gave different suggestions");
            if n_history == 24 {
                restore_and_observe(&problem, &history, &context);
            }
        }
    }
    assert!(accepted > 0, "{algorithm} accepted none of the fixture spaces");
}

/// `a` and `b` agree to `tol`, relative to the larger magnitude (at least 1).
fn close(a: &[Prediction], b: &[Prediction], tol: f64) -> bool {
    let near = |x: f64, y: f64| (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0);
    let near_opt = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => near(x, y),
        (x, y) => x == y,
    };
    a.len() == b.len()
        && a.iter().zip(b).all(|(p, q)| {
            near(p.median, q.median)
                && near(p.lower, q.lower)
                && near(p.upper, q.upper)
                && near_opt(p.mean, q.mean)
                && near_opt(p.stddev, q.stddev)
        })
}

/// Designers, warps and spaces (a fixture's or a suite problem's name; empty: any) whose
/// predictions [`predictions_are_bounded_on`] finds confidently beyond the data, with what it
/// saw: calibration defects, not mapping ones (every warp maps back exactly), open in issue 43.
/// Each is held to finite, ordered predictions only.
pub const OVERCONFIDENT: &[(&str, &str, &str, &str)] = &[
    (
        "OVERLAP_ADD_GP",
        "YEO_JOHNSON",
        "styblinski_tang8",
        "eight one-dimensional terms, each extrapolated: −482 (90 %: −591 to −374) where the value is −176, below the function's minimum −313",
    ),
    (
        "ADD_TREE",
        "YEO_JOHNSON",
        "jenatton",
        "a leaf's quadratic extrapolated through the warp's tangent: 2.54 (90 %: 2.45 to 2.62) where the value is 1.97, past every observed value (≤ 1.83)",
    ),
    ("AUTO", "YEO_JOHNSON", "jenatton", "AUTO chooses ADD_TREE there: the same"),
];

/// Every prediction of `algorithm`'s model under every output warp it accepts, on an objective
/// spanning orders of magnitude (where Yeo–Johnson's λ goes above 2 and a prediction was once
/// mapped back to about 1e147), at the trials and at random points: finite, ordered (5 % ≤
/// median ≤ 95 %), and within the observed range widened by twice the prediction's own 90 %
/// interval (wider than its 99 % interval under any normal), the mean included where given.
/// Designers without a model, or refusing the warp or the space, are skipped; panics on the
/// first failure, naming it. The entries of [`OVERCONFIDENT`] are held to finite, ordered
/// predictions only.
pub fn predictions_are_bounded(algorithm: &str) {
    let mut checked = 0;
    for (name, space) in [("unit_cube(6)", fixtures::unit_cube(6)), ("all_types", fixtures::all_types())] {
        let cube = space.clone();
        let loss = move |a: &Assignment| {
            let u = cube.encode(a);
            // exp of a quadratic: 0 at the optimum, above 1e5 in the far corner.
            (12.0 * u.iter().map(|u| (u - 0.3).powi(2)).sum::<f64>() / u.len() as f64 * 2.0).exp_m1().powi(2)
        };
        let (fits, beyond) = predictions_are_bounded_on(algorithm, name, &space, &loss);
        assert!(beyond.is_empty(), "{}", beyond.join("\n"));
        checked += fits;
    }
    assert!(checked > 0, "{algorithm}: its model predicted under no warp on no space");
}

/// [`predictions_are_bounded`] on any space and objective `loss` (minimised; the bench runs it
/// over the suite's problems): the number of fits whose predictions were checked, one per output
/// warp the designer accepts on the space (0 when it refuses the space or learns nothing), and
/// the first prediction of each fit found beyond the data, described.
pub fn predictions_are_bounded_on(
    algorithm: &str,
    name: &str,
    space: &SearchSpace,
    loss: &dyn Fn(&Assignment) -> f64,
) -> (usize, Vec<String>) {
    use rand::RngExt;
    let mut checked = 0;
    let mut beyond = Vec::new();
    for warping in ["NONE", "YEO_JOHNSON", "HALF_RANK"] {
        let spec = study(space.clone(), algorithm, serde_json::json!({ "outputWarping": warping }));
        let problem = Problem { spec, seed: 42, priors: Vec::new() };
        let Ok(designer) = designer_for(&problem.spec) else { continue };
        if !designer.learns() {
            return (0, beyond);
        }
        let mut history: Vec<Observation> = Vec::new();
        for i in 0..30 {
            let a = suggest(&problem, &history, &[], 1, 3000 + i).remove(0);
            let value = loss(&a);
            history.push(Observation {
                objective_sd: None,
                assignment: a,
                outcome: Outcome::Measured(BTreeMap::from([("loss".to_owned(), value)])),
            });
        }
        let fitted = designer.fit(&problem, &history, None, &mut StdRng::seed_from_u64(11)).expect("fit succeeds");
        let mut rng = StdRng::seed_from_u64(12);
        let mut points: Vec<Assignment> = history.iter().map(|o| o.assignment.clone()).collect();
        points.extend((0..40).map(|_| space.decode(&(0..space.n_params()).map(|_| rng.random::<f64>()).collect::<Vec<_>>())));
        let context = format!("{algorithm} with outputWarping {warping} on {name}");
        let bounded = !OVERCONFIDENT.iter().any(|(a, w, on, _)| *a == algorithm && *w == warping && (on.is_empty() || *on == name));
        // REMBO predicts only at points of its embeddings: its own suggestions.
        let Some(predicted) = predict(&*fitted.model, &points).or_else(|| predict(&*fitted.model, &points[..history.len()])) else {
            continue;
        };
        checked += 1;
        let observed: Vec<f64> = history.iter().map(|o| loss(&o.assignment)).collect();
        let (lo, hi) = (observed.iter().copied().fold(f64::INFINITY, f64::min), observed.iter().copied().fold(f64::NEG_INFINITY, f64::max));
        for (p, a) in predicted.iter().zip(&points) {
            assert!(p.lower.is_finite() && p.median.is_finite() && p.upper.is_finite(), "{context}: non-finite {p:?} at {a:?}");
            assert!(p.lower <= p.median && p.median <= p.upper, "{context}: unordered {p:?} at {a:?}");
            if !bounded {
                continue;
            }
            let width = 2.0 * (p.upper - p.lower);
            let (bottom, top) = (lo - width, hi + width);
            let outside = [Some(p.median), Some(p.lower), Some(p.upper), p.mean]
                .into_iter()
                .flatten()
                .any(|v| !(v.is_finite() && (bottom..=top).contains(&v)));
            if outside {
                beyond.push(format!("{context}: {p:?} at {a:?} (loss {}) beyond [{bottom}, {top}]", loss(a)));
                break;
            }
            // The deviation may be large: a warped prediction has a long tail towards the
            // worse values the warp compressed.
            if let Some(sd) = p.stddev {
                assert!(sd.is_finite() && sd >= 0.0, "{context}: deviation of {p:?} at {a:?}");
            }
        }
    }
    (checked, beyond)
}

/// `model`'s predictions at `points`, if it predicts there.
pub fn predict(model: &dyn Model, points: &[Assignment]) -> Option<Vec<Prediction>> {
    model.predictor()?.predict(points)
}

/// `restore` rebuilds the stored fit; `observe` equals a refit at the same hyperparameters.
fn restore_and_observe(problem: &Problem, history: &[Observation], context: &str) {
    let designer = designer_for(&problem.spec).expect("known algorithm");
    let (old, new) = history.split_at(history.len() - 3);
    let fitted = designer.fit(problem, old, None, &mut StdRng::seed_from_u64(5)).expect("fit succeeds");
    let probes: Vec<Assignment> = history.iter().map(|o| o.assignment.clone()).collect();
    let Some(before) = predict(&*fitted.model, &probes) else { return };
    let restored = designer.restore(problem, old, &fitted.state, &mut StdRng::seed_from_u64(6)).expect("restore succeeds");
    assert_eq!(restored.state, fitted.state, "{context}: restore changed the stored state");
    let again = predict(&*restored.model, &probes).unwrap_or_else(|| panic!("{context}: the restored model does not predict"));
    assert!(close(&before, &again, 1e-9), "{context}: restore gave other predictions:\n{before:?}\n{again:?}");
    let Some(observed) = fitted.model.conditioning().and_then(|c| c.observe(new)) else { return };
    let after = predict(&*observed, &probes).expect("an observing model predicts");
    let refit = observed
        .conditioning()
        .and_then(|c| c.refactored())
        .unwrap_or_else(|| panic!("{context}: an observing model has no refit at fixed θ"));
    let expected = predict(&*refit, &probes).expect("a refit predicts");
    assert!(close(&after, &expected, 1e-6), "{context}: observe differs from a refit at the same θ:\n{after:?}\n{expected:?}");
    let moved = before.iter().zip(&after).rev().take(new.len()).any(|(p, q)| p.stddev != q.stddev);
    assert!(moved, "{context}: observing new trials changed nothing at them");
}
