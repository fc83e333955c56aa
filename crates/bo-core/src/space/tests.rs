use proptest::prelude::*;

use super::*;
use crate::designer::testing::fixtures;

fn double(id: &str, min: f64, max: f64, scale: Scale) -> ParamSpec {
    ParamSpec { id: id.into(), domain: Domain::Double { min, max }, scale, default: None, children: vec![] }
}

fn categorical(id: &str, values: &[&str], children: Vec<Conditional>) -> ParamSpec {
    ParamSpec {
        id: id.into(),
        domain: Domain::Categorical { values: values.iter().map(|s| (*s).to_owned()).collect() },
        scale: Scale::Linear,
        default: None,
        children,
    }
}

fn err_of(roots: Vec<ParamSpec>) -> SpaceError {
    SearchSpace::new(roots).expect_err("invalid")
}

#[test]
fn min_above_max_names_the_field() {
    let e = err_of(vec![double("x", 2.0, 1.0, Scale::Linear)]);
    assert_eq!(e.path, "parameters[0].doubleValueSpec");
    assert!(e.reason.contains("greater than"), "{e}");
}

#[test]
fn log_scale_needs_a_positive_minimum() {
    let e = err_of(vec![double("x", 0.0, 1.0, Scale::Log)]);
    assert!(e.reason.contains("minValue > 0"), "{e}");
}

#[test]
fn duplicate_ids_anywhere_in_the_tree_are_rejected() {
    let child = Conditional { parent_values: ParentValues::Categorical(vec!["a".into()]), spec: double("x", 0.0, 1.0, Scale::Linear) };
    let e = err_of(vec![categorical("c", &["a", "b"], vec![child]), double("x", 0.0, 1.0, Scale::Linear)]);
    assert_eq!(e.path, "parameters[1].parameterId");
}

#[test]
fn a_child_under_a_missing_parent_value_is_rejected() {
    let child = Conditional { parent_values: ParentValues::Categorical(vec!["z".into()]), spec: double("x", 0.0, 1.0, Scale::Linear) };
    let e = err_of(vec![categorical("c", &["a", "b"], vec![child])]);
    assert_eq!(e.path, "parameters[0].conditionalParameterSpecs[0].parentCategoricalValues.values");
}

#[test]
fn a_double_parent_cannot_have_children() {
    let mut parent = double("p", 0.0, 1.0, Scale::Linear);
    parent.children.push(Conditional { parent_values: ParentValues::Discrete(vec![0.5]), spec: double("x", 0.0, 1.0, Scale::Linear) });
    let e = err_of(vec![parent]);
    assert!(e.reason.contains("DOUBLE"), "{e}");
}

#[test]
fn a_condition_of_the_wrong_type_is_rejected() {
    let child = Conditional { parent_values: ParentValues::Integer(vec![1]), spec: double("x", 0.0, 1.0, Scale::Linear) };
    let e = err_of(vec![categorical("c", &["a"], vec![child])]);
    assert_eq!(e.path, "parameters[0].conditionalParameterSpecs[0].parentIntValues");
}

#[test]
fn discrete_values_must_increase() {
    let p = ParamSpec {
        id: "d".into(),
        domain: Domain::Discrete { values: vec![1.0, 1.0] },
        scale: Scale::Linear,
        default: None,
        children: vec![],
    };
    assert!(err_of(vec![p]).reason.contains("increase"));
}

#[test]
fn check_requires_exactly_the_active_parameters() {
    let space = fixtures::optimizer_tree();
    let mut a = Assignment::default();
    a.0.insert("optimizer".into(), ParamValue::Categorical("sgd".into()));
    a.0.insert("layers".into(), ParamValue::Int(2));
    assert!(space.check(&a).unwrap_err().reason.contains("momentum"), "momentum is active and missing");
    a.0.insert("momentum".into(), ParamValue::Float(0.5));
    space.check(&a).unwrap();
    a.0.insert("beta1".into(), ParamValue::Float(0.9));
    assert!(space.check(&a).unwrap_err().reason.contains("not active"));
    a.0.remove("beta1");
    a.0.insert("momentum".into(), ParamValue::Float(1.5));
    assert!(space.check(&a).unwrap_err().reason.contains("not in its DOUBLE domain"));
}

#[test]
fn scales_map_the_ends_of_the_interval_to_the_bounds() {
    for scale in [Scale::Linear, Scale::Log, Scale::ReverseLog] {
        let p = double("x", 0.01, 100.0, scale);
        assert_eq!(p.from_unit(0.0), ParamValue::Float(0.01));
        let ParamValue::Float(hi) = p.from_unit(1.0) else { unreachable!() };
        assert!((hi - 100.0).abs() < 1e-9, "{scale:?}: {hi}");
    }
    // Log puts the middle of the interval at the geometric mean; reverse-log mirrors it.
    let ParamValue::Float(mid) = double("x", 0.01, 100.0, Scale::Log).from_unit(0.5) else { unreachable!() };
    assert!((mid - 1.0).abs() < 1e-9);
    let ParamValue::Float(rmid) = double("x", 0.01, 100.0, Scale::ReverseLog).from_unit(0.5) else { unreachable!() };
    assert!((rmid - (100.0 + 0.01 - 1.0)).abs() < 1e-9);
}

#[test]
fn decoding_sets_only_active_parameters() {
    let space = fixtures::conditional_three_levels();
    for i in 0..200 {
        let u: Vec<f64> = (0..space.n_params()).map(|k| ((i * 7919 + k * 104_729) % 1000) as f64 / 1000.0).collect();
        let a = space.decode(&u);
        space.check(&a).unwrap();
    }
}

fn same(a: &Assignment, b: &Assignment) -> bool {
    a.0.len() == b.0.len()
        && a.0.iter().all(|(k, v)| match (v, b.get(k)) {
            (ParamValue::Float(x), Some(ParamValue::Float(y))) => (x - y).abs() <= 1e-9 * (1.0 + x.abs()),
            (v, w) => Some(v) == w,
        })
}

proptest! {
    /// Encoding a feasible assignment and decoding it gives it back (doubles up to rounding).
    #[test]
    fn encode_then_decode_is_the_identity(u in proptest::collection::vec(0.0f64..=1.0, 7), which in 0usize..3) {
        let space = [fixtures::all_types(), fixtures::optimizer_tree(), fixtures::conditional_three_levels()][which].clone();
        let u = &u[..space.n_params().min(7)];
        let mut point = u.to_vec();
        point.resize(space.n_params(), 0.25);
        let a = space.decode(&point);
        prop_assert!(space.check(&a).is_ok());
        let back = space.decode(&space.encode(&a));
        prop_assert!(same(&a, &back), "{:?} != {:?}", a, back);
    }

    /// Validation never panics, whatever the bounds.
    #[test]
    fn validation_never_panics(min in proptest::num::f64::ANY, max in proptest::num::f64::ANY, lo in any::<i64>(), hi in any::<i64>(), s in 0usize..3) {
        let scale = [Scale::Linear, Scale::Log, Scale::ReverseLog][s];
        let _ = SearchSpace::new(vec![double("x", min, max, scale)]);
        let p = ParamSpec { id: "i".into(), domain: Domain::Integer { min: lo, max: hi }, scale, default: None, children: vec![] };
        if let Ok(space) = SearchSpace::new(vec![p]) {
            let a = space.decode(&[0.999_999]);
            prop_assert!(space.check(&a).is_ok());
        }
    }
}
