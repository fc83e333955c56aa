use proptest::prelude::*;

use super::*;
use crate::designer::testing::fixtures;
use crate::limits::{Limit, Limits};

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

fn err_of(roots: Vec<ParamSpec>) -> FieldError {
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
    a.insert("optimizer", ParamValue::Categorical("sgd".into()));
    a.insert("layers", ParamValue::Int(2));
    assert!(space.check(&a).unwrap_err().reason.contains("momentum"), "momentum is active and missing");
    a.insert("momentum", ParamValue::Float(0.5));
    space.check(&a).unwrap();
    a.insert("beta1", ParamValue::Float(0.9));
    assert!(space.check(&a).unwrap_err().reason.contains("not active"));
    a.remove("beta1");
    a.insert("momentum", ParamValue::Float(1.5));
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

fn flat(n: usize) -> Vec<ParamSpec> {
    (0..n).map(|i| double(&format!("x{i}"), 0.0, 1.0, Scale::Linear)).collect()
}

#[test]
fn limits_name_the_field_and_the_limit() {
    let limits = Limits { parameters: 3, values: 4, tree_depth: 2, id_length: 8, ..Limits::default() };
    let e = SearchSpace::with_limits(flat(4), &limits).unwrap_err();
    assert_eq!((e.path.as_str(), e.limit), ("parameters", Some(Limit::Parameters)), "{e}");
    assert!(SearchSpace::with_limits(flat(3), &limits).is_ok());

    let e = SearchSpace::with_limits(vec![categorical("c", &["a", "b", "c", "d", "e"], vec![])], &limits).unwrap_err();
    assert_eq!((e.path.as_str(), e.limit), ("parameters[0].categoricalValueSpec.values", Some(Limit::Values)), "{e}");

    let e = SearchSpace::with_limits(vec![double("a_long_name", 0.0, 1.0, Scale::Linear)], &limits).unwrap_err();
    assert_eq!((e.path.as_str(), e.limit), ("parameters[0].parameterId", Some(Limit::IdLength)), "{e}");

    let deep = |levels: usize| {
        let mut p = double("leaf", 0.0, 1.0, Scale::Linear);
        for k in 0..levels - 1 {
            p = categorical(
                &format!("c{k}"),
                &["a"],
                vec![Conditional { parent_values: ParentValues::Categorical(vec!["a".into()]), spec: p }],
            );
        }
        vec![p]
    };
    assert!(SearchSpace::with_limits(deep(2), &limits).is_ok());
    let e = SearchSpace::with_limits(deep(3), &limits).unwrap_err();
    assert_eq!(e.limit, Some(Limit::TreeDepth), "{e}");
}

#[test]
fn ids_and_values_hold_no_control_characters() {
    let e = err_of(vec![double("x\0", 0.0, 1.0, Scale::Linear)]);
    assert!(e.reason.contains("control"), "{e}");
    let e = err_of(vec![categorical("c", &["ok", "bad\u{1b}"], vec![])]);
    assert_eq!(e.path, "parameters[0].categoricalValueSpec.values[1]", "{e}");
    assert!(SearchSpace::new(vec![categorical("c", &["with space", "é"], vec![])]).is_ok(), "values may hold spaces");
}

#[test]
fn numbers_stay_representable() {
    let e = err_of(vec![double("x", -1.7e308, 1.7e308, Scale::Linear)]);
    assert!(e.reason.contains("width must be finite"), "{e}");
    assert!(SearchSpace::new(vec![double("x", -8e307, 8e307, Scale::Linear)]).is_ok());
    let int = |min: i64, max: i64| ParamSpec {
        id: "n".into(),
        domain: Domain::Integer { min, max },
        scale: Scale::Linear,
        default: None,
        children: vec![],
    };
    let e = err_of(vec![int(0, MAX_SAFE_INTEGER + 1)]);
    assert!(e.reason.contains("2^53"), "{e}");
    assert!(SearchSpace::new(vec![int(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)]).is_ok());
}

/// Parameters are found by id through the index, anywhere in the tree; a stored space is only
/// indexed, never validated again (a space over today's limits still reads back).
#[test]
fn lookups_use_the_index_and_stored_spaces_are_not_validated_again() {
    let space = fixtures::conditional_three_levels();
    for (k, p) in space.params().iter().enumerate() {
        assert_eq!(space.param(&p.id), Some(*p));
        assert_eq!(space.position(&p.id), Some(k));
    }
    assert!(space.param("nope").is_none());
    let big = SearchSpace::with_limits(flat(2000), &Limits { parameters: 2000, ..Limits::default() }).unwrap();
    let json = serde_json::to_string(&big).unwrap();
    let back: SearchSpace = serde_json::from_str(&json).unwrap();
    assert_eq!(back, big);
    assert_eq!(back.param("x1999").map(|p| p.id.as_str()), Some("x1999"));
    assert!(SearchSpace::new(flat(2000)).is_err(), "over the default limit when it enters");
}

#[test]
fn point_count_counts_each_branch_and_has_no_end_with_a_real() {
    assert_eq!(fixtures::small_discrete().point_count(), Some(18));
    assert_eq!(fixtures::optimizer_tree().point_count(), None, "a real under each optimizer");
    let int = |id: &str, max| ParamSpec {
        id: id.into(),
        domain: Domain::Integer { min: 1, max },
        scale: Scale::Linear,
        default: None,
        children: vec![],
    };
    let under = |values: &[&str], spec| Conditional {
        parent_values: ParentValues::Categorical(values.iter().map(|s| (*s).to_owned()).collect()),
        spec,
    };
    // a: 4 values of n × 2 of k; b: 2 of k; c: one point.
    let tree = |c_child: ParamSpec| {
        SearchSpace::new(vec![categorical(
            "m",
            &["a", "b", "c"],
            vec![under(&["a"], int("n", 4)), under(&["a", "b"], categorical("k", &["p", "q"], vec![])), under(&["c"], c_child)],
        )])
        .unwrap()
    };
    assert_eq!(tree(double("x", 0.5, 0.5, Scale::Linear)).point_count(), Some(8 + 2 + 1), "a real of one value is one point");
    assert_eq!(tree(double("x", 0.0, 1.0, Scale::Linear)).point_count(), None);
    let huge = SearchSpace::new(vec![int("a", 1 << 53), int("b", 1 << 53), int("c", 1 << 53)]).unwrap();
    assert_eq!(huge.point_count(), Some(u128::MAX), "saturates");
}
