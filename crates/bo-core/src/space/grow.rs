//! An open study's space grows as a define-by-run objective asks for parameters (a bo extension
//! to Vertex's fixed `parameters`). The tree is learned from where each parameter is asked:
//!
//! - **A new parameter** goes under the parameter it was asked after — the parent the client
//!   names, at the value the trial holds (`svc_c` under `classifier = SVC`) — or at the root.
//! - **A known parameter asked where the tree does not make it active** is generalised until it
//!   is: its condition takes the trial's parent value (`rf_max_depth` under `RandomForest`, then
//!   under `{RandomForest, ExtraTrees}`), or, when the trial does not hold its parent at all, it
//!   moves up beside its parent, under the parent's own condition.
//! - **A condition that lists every value of its parent** says nothing: the parameter moves up
//!   beside its parent (a learning rate asked under `adam`, then `sgd`, of an optimizer with those
//!   two values is a root parameter).
//!
//! Every step only widens where a parameter is active, so each trial of an earlier revision
//! still holds only active parameters; what it lacks (asked after it ran) is inactive there, as
//! in any conditional space ([`SearchSpace::check_partial`]). A parameter's domain and scale are
//! fixed at first use.
//!
//! Must not know about trials' outcomes, models or storage: this is a function from a space,
//! an assignment and what was asked to the next space.

use super::{Conditional, Domain, ParamSpec, ParentValues, SearchSpace};
use crate::field::FieldError;
use crate::limits::{Limits, Text};
use crate::trial::{Assignment, ParamValue};

/// A parameter a trial asked for: its spec (no children), the parameter it was asked under
/// (where a new one is placed; `None`: the root), and its value when the caller fixes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Asked {
    /// The parameter, without conditional children.
    pub spec: ParamSpec,
    /// The parameter of the trial it was asked under.
    pub parent: Option<String>,
    /// Its value in the trial, when given (else the study chooses it).
    pub value: Option<ParamValue>,
}

/// The most values an INTEGER parent's condition may be hoisted over: a condition over a wider
/// range never lists all of it.
const MAX_HOISTED_INTEGERS: i64 = 4096;

impl SearchSpace {
    /// An empty space: an open study before its objective asked for anything.
    pub fn empty() -> SearchSpace {
        SearchSpace::indexed(Vec::new())
    }

    /// Checks an assignment of an open study, where a trial may lack parameters added after it
    /// ran: each parameter it holds is one of the space's, in its domain, and active under the
    /// others (its parent held with a value that activates it). Errors are paths under
    /// `parameters` naming the parameter.
    pub fn check_partial(&self, assignment: &Assignment) -> Result<(), FieldError> {
        let active: std::collections::HashSet<&str> = self.active_ids(assignment).into_iter().collect();
        for (id, value) in assignment.0.iter() {
            let Some(spec) = self.param(id) else {
                return Err(FieldError::new("parameters", format!("parameter {id:?} is not a parameter of the study")));
            };
            if !spec.domain.contains(value) {
                return Err(FieldError::new(
                    "parameters",
                    format!("value {value} of parameter {id:?} is not in its {} domain", spec.domain.type_name()),
                ));
            }
            if !active.contains(&**id) {
                return Err(FieldError::new("parameters", format!("parameter {id:?} is not active under the parent values given")));
            }
        }
        Ok(())
    }

    /// Whether `assignment` holds every parameter active under it (a point of this space, not
    /// of an earlier revision's).
    pub fn is_complete(&self, assignment: &Assignment) -> bool {
        self.active_ids(assignment).iter().all(|id| assignment.get(id).is_some())
    }

    /// The space grown so that each parameter of `asked` is active under `assignment` (a
    /// trial's values, to which each asked parameter's given value is added in turn), within
    /// `limits`; `None` when it already is. `assignment` must pass
    /// [`SearchSpace::check_partial`]. Errors are paths under `parameters[i]`, `i` the asked
    /// parameter's position.
    pub fn grown(&self, assignment: &Assignment, asked: &[Asked], limits: &Limits) -> Result<Option<SearchSpace>, FieldError> {
        let mut roots = self.roots.clone();
        let mut a = assignment.clone();
        let mut changed = false;
        for (i, ask) in asked.iter().enumerate() {
            let at = |e: FieldError| e.under(&format!("parameters[{i}]"));
            changed |= grow_one(&mut roots, &a, ask, limits).map_err(at)?;
            let spec = find(&roots, &ask.spec.id).map(|path| node(&roots, &path)).expect("the asked parameter is in the tree");
            match &ask.value {
                Some(v) if !spec.domain.contains(v) => {
                    return Err(at(FieldError::new(
                        "value",
                        format!("{v} is not in the {} domain of {:?}", spec.domain.type_name(), spec.id),
                    )));
                }
                Some(v) => match a.get(&ask.spec.id) {
                    Some(held) if held != v => {
                        return Err(at(FieldError::new("value", format!("the trial already holds {held} for {:?}", spec.id))));
                    }
                    _ => {
                        a.insert(ask.spec.id.clone(), v.clone());
                    }
                },
                None => {}
            }
        }
        if !changed {
            return Ok(None);
        }
        SearchSpace::with_limits(roots, limits).map(Some)
    }
}

/// Grows `roots` for one asked parameter; whether anything changed.
fn grow_one(roots: &mut Vec<ParamSpec>, a: &Assignment, ask: &Asked, limits: &Limits) -> Result<bool, FieldError> {
    let id = &ask.spec.id;
    if !ask.spec.children.is_empty() {
        return Err(FieldError::new(
            "parameterSpec.conditionalParameterSpecs",
            "a parameter added to an open study comes alone: its children are added as the objective asks for them",
        ));
    }
    limits.check_text(id, Text::Token).map_err(|e| FieldError::text("parameterSpec.parameterId", e))?;
    if let Some(path) = find(roots, id) {
        let known = node(roots, &path);
        if known.domain != ask.spec.domain || known.scale != ask.spec.scale {
            return Err(FieldError::new(
                "parameterSpec",
                format!(
                    "parameter {id:?} is already in the study as {}; asked as {}: a parameter's domain and scale are fixed at first use",
                    describe(known),
                    describe(&ask.spec)
                ),
            ));
        }
        if is_active(roots, &path, a) {
            return Ok(false);
        }
        generalise(roots, id, a);
        hoist(roots, id);
        return Ok(true);
    }
    let spec = ParamSpec { children: Vec::new(), ..ask.spec.clone() };
    match &ask.parent {
        None => roots.push(spec),
        Some(parent) => {
            let field = "parentParameterId";
            if parent == id {
                return Err(FieldError::new(field, format!("{id:?} cannot be its own parent")));
            }
            let Some(parent_path) = find(roots, parent) else {
                return Err(FieldError::new(field, format!("{parent:?} is not a parameter of the study")));
            };
            let Some(value) = a.get(parent) else {
                return Err(FieldError::new(field, format!("{parent:?} has no value in this trial")));
            };
            let values = match (&node(roots, &parent_path).domain, value) {
                (Domain::Categorical { .. }, ParamValue::Categorical(s)) => ParentValues::Categorical(vec![s.to_string()]),
                (Domain::Integer { .. }, ParamValue::Int(i)) => ParentValues::Integer(vec![*i]),
                (Domain::Discrete { .. }, ParamValue::Float(x)) => ParentValues::Discrete(vec![*x]),
                (domain, _) => {
                    return Err(FieldError::new(
                        field,
                        format!(
                            "{parent:?} is {}: only CATEGORICAL, INTEGER and DISCRETE parameters can have children",
                            domain.type_name()
                        ),
                    ));
                }
            };
            node_mut(roots, &parent_path).children.push(Conditional { parent_values: values, spec });
            hoist(roots, id);
        }
    }
    Ok(true)
}

/// A parameter's domain and scale, for messages.
fn describe(p: &ParamSpec) -> String {
    let domain = match &p.domain {
        Domain::Double { min, max } => format!("DOUBLE [{min}, {max}]"),
        Domain::Integer { min, max } => format!("INTEGER [{min}, {max}]"),
        Domain::Discrete { values } => format!("DISCRETE {values:?}"),
        Domain::Categorical { values } => format!("CATEGORICAL {values:?}"),
    };
    match p.scale {
        super::Scale::Linear => domain,
        super::Scale::Log => format!("{domain} on a log scale"),
        super::Scale::ReverseLog => format!("{domain} on a reverse log scale"),
    }
}

/// The path of parameter `id`: its root's index, then a child's index at each level.
fn find(roots: &[ParamSpec], id: &str) -> Option<Vec<usize>> {
    fn walk(p: &ParamSpec, id: &str, path: &mut Vec<usize>) -> bool {
        if p.id == id {
            return true;
        }
        for (j, c) in p.children.iter().enumerate() {
            path.push(j);
            if walk(&c.spec, id, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    for (i, p) in roots.iter().enumerate() {
        let mut path = vec![i];
        if walk(p, id, &mut path) {
            return Some(path);
        }
    }
    None
}

fn node<'a>(roots: &'a [ParamSpec], path: &[usize]) -> &'a ParamSpec {
    path[1..].iter().fold(&roots[path[0]], |p, &j| &p.children[j].spec)
}

fn node_mut<'a>(roots: &'a mut [ParamSpec], path: &[usize]) -> &'a mut ParamSpec {
    path[1..].iter().fold(&mut roots[path[0]], |p, &j| &mut p.children[j].spec)
}

/// Whether the parameter at `path` is active under `a`: each ancestor held with a value that
/// activates the next.
fn is_active(roots: &[ParamSpec], path: &[usize], a: &Assignment) -> bool {
    let mut p = &roots[path[0]];
    for &j in &path[1..] {
        let child = &p.children[j];
        if !a.get(&p.id).is_some_and(|v| child.parent_values.matches(v)) {
            return false;
        }
        p = &child.spec;
    }
    true
}

/// Moves the parameter at `path` (not a root) up beside its parent, under the parent's own
/// condition (a root when the parent is one).
fn lift(roots: &mut Vec<ParamSpec>, path: &[usize]) {
    let (parent_path, j) = (&path[..path.len() - 1], path[path.len() - 1]);
    let moved = node_mut(roots, parent_path).children.remove(j).spec;
    if parent_path.len() == 1 {
        roots.push(moved);
    } else {
        let (grand, k) = (&parent_path[..parent_path.len() - 1], parent_path[parent_path.len() - 1]);
        let values = node(roots, grand).children[k].parent_values.clone();
        node_mut(roots, grand).children.push(Conditional { parent_values: values, spec: moved });
    }
}

/// Widens where parameter `id` is active until it is active under `a`: its condition takes the
/// value `a` holds for its parent; a parent `a` does not hold is stepped over (see the module
/// docs).
fn generalise(roots: &mut Vec<ParamSpec>, id: &str, a: &Assignment) {
    loop {
        let path = find(roots, id).expect("the parameter is in the tree");
        if path.len() == 1 || is_active(roots, &path, a) {
            return;
        }
        let parent_path = &path[..path.len() - 1];
        let parent = node(roots, parent_path);
        match a.get(&parent.id).cloned() {
            Some(value) => {
                let j = path[path.len() - 1];
                let condition = &mut node_mut(roots, parent_path).children[j].parent_values;
                add_value(condition, &value);
                // The parent is held, so it is active (an assignment holds only active
                // parameters): the parameter is now.
                return;
            }
            None => lift(roots, &path),
        }
    }
}

/// Adds `value` to a condition of its parent's type.
fn add_value(condition: &mut ParentValues, value: &ParamValue) {
    match (condition, value) {
        (ParentValues::Categorical(vs), ParamValue::Categorical(s)) if !vs.iter().any(|v| v.as_str() == &**s) => vs.push(s.to_string()),
        (ParentValues::Integer(vs), ParamValue::Int(i)) if !vs.contains(i) => {
            vs.push(*i);
            vs.sort_unstable();
        }
        (ParentValues::Discrete(vs), ParamValue::Float(x)) if super::discrete_index(vs, *x).is_none() => {
            vs.push(*x);
            vs.sort_by(f64::total_cmp);
        }
        _ => {}
    }
}

/// Moves parameter `id` up while its condition lists every value of its parent.
fn hoist(roots: &mut Vec<ParamSpec>, id: &str) {
    loop {
        let path = find(roots, id).expect("the parameter is in the tree");
        if path.len() == 1 {
            return;
        }
        let parent = node(roots, &path[..path.len() - 1]);
        if !covers(&parent.domain, &parent.children[path[path.len() - 1]].parent_values) {
            return;
        }
        lift(roots, &path);
    }
}

/// Whether `condition` lists every value of `domain`.
fn covers(domain: &Domain, condition: &ParentValues) -> bool {
    match (domain, condition) {
        (Domain::Categorical { values }, ParentValues::Categorical(vs)) => values.iter().all(|v| vs.contains(v)),
        (Domain::Integer { min, max }, ParentValues::Integer(vs)) => {
            max - min < MAX_HOISTED_INTEGERS && (*min..=*max).all(|i| vs.contains(&i))
        }
        (Domain::Discrete { values }, ParentValues::Discrete(vs)) => values.iter().all(|v| super::discrete_index(vs, *v).is_some()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Scale;

    fn double(id: &str) -> ParamSpec {
        ParamSpec { id: id.into(), domain: Domain::Double { min: 0.0, max: 1.0 }, scale: Scale::Linear, default: None, children: vec![] }
    }

    fn categorical(id: &str, values: &[&str]) -> ParamSpec {
        let values = values.iter().map(|v| (*v).to_owned()).collect();
        ParamSpec { id: id.into(), domain: Domain::Categorical { values }, scale: Scale::Linear, default: None, children: vec![] }
    }

    fn int(id: &str, min: i64, max: i64) -> ParamSpec {
        ParamSpec { id: id.into(), domain: Domain::Integer { min, max }, scale: Scale::Linear, default: None, children: vec![] }
    }

    fn ask(spec: ParamSpec, parent: Option<&str>) -> Asked {
        Asked { spec, parent: parent.map(str::to_owned), value: None }
    }

    fn given(spec: ParamSpec, parent: Option<&str>, value: ParamValue) -> Asked {
        Asked { spec, parent: parent.map(str::to_owned), value: Some(value) }
    }

    fn cat(s: &str) -> ParamValue {
        ParamValue::Categorical(s.into())
    }

    fn trial(pairs: &[(&str, ParamValue)]) -> Assignment {
        Assignment::new(pairs.iter().map(|(k, v)| ((*k).into(), v.clone())).collect())
    }

    /// The tree as `id[parent values]` in pre-order, for assertions.
    fn shape(space: &SearchSpace) -> Vec<String> {
        fn walk(p: &ParamSpec, under: String, out: &mut Vec<String>) {
            out.push(format!("{}{under}", p.id));
            for c in &p.children {
                let values = match &c.parent_values {
                    ParentValues::Categorical(v) => v.join(","),
                    ParentValues::Integer(v) => v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","),
                    ParentValues::Discrete(v) => v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","),
                };
                walk(&c.spec, format!("[{}={values}]", p.id), out);
            }
        }
        let mut out = Vec::new();
        for p in space.roots() {
            walk(p, String::new(), &mut out);
        }
        out
    }

    fn grow(space: &SearchSpace, a: &Assignment, asked: &[Asked]) -> SearchSpace {
        space.grown(a, asked, &Limits::default()).unwrap().unwrap_or_else(|| space.clone())
    }

    /// Optuna's `sklearn_simple.py`: the first trial a RandomForest, then an SVC; each branch's
    /// parameter lands under its value, and the tree stops growing once both are known.
    #[test]
    fn a_branch_parameter_lands_under_the_value_it_was_asked_under() {
        let classifier = categorical("classifier", &["SVC", "RandomForest"]);
        let s = grow(&SearchSpace::empty(), &trial(&[]), &[given(classifier.clone(), None, cat("RandomForest"))]);
        let rf = trial(&[("classifier", cat("RandomForest"))]);
        let s = grow(&s, &rf, &[ask(int("rf_max_depth", 2, 32), Some("classifier"))]);
        let svc = trial(&[("classifier", cat("SVC"))]);
        let s = grow(&s, &svc, &[ask(double("svc_c"), Some("classifier"))]);
        assert_eq!(shape(&s), ["classifier", "rf_max_depth[classifier=RandomForest]", "svc_c[classifier=SVC]"]);
        let full = trial(&[("classifier", cat("SVC")), ("svc_c", ParamValue::Float(0.5))]);
        s.check(&full).unwrap();
        assert_eq!(s.grown(&full, &[ask(double("svc_c"), Some("classifier"))], &Limits::default()).unwrap(), None, "idempotent");
        assert!(s.point_count().is_none(), "a DOUBLE under SVC: the space never runs out");
    }

    /// A parameter asked after a category it does not depend on ends at the root once every
    /// value of that category has asked for it.
    #[test]
    fn a_condition_over_every_value_is_lifted() {
        let s = grow(&SearchSpace::empty(), &trial(&[]), &[given(categorical("opt", &["adam", "sgd"]), None, cat("adam"))]);
        let s = grow(&s, &trial(&[("opt", cat("adam"))]), &[ask(double("lr"), Some("opt"))]);
        assert_eq!(shape(&s), ["opt", "lr[opt=adam]"]);
        let s = grow(&s, &trial(&[("opt", cat("sgd"))]), &[ask(double("lr"), Some("opt"))]);
        assert_eq!(shape(&s), ["opt", "lr"]);
    }

    /// `n_units_l1` only under two and three layers; a trial that does not hold the parent at all
    /// lifts a parameter beside it.
    #[test]
    fn integer_parents_and_missing_parents() {
        let layers = int("n_layers", 1, 3);
        let s = grow(&SearchSpace::empty(), &trial(&[]), &[given(layers, None, ParamValue::Int(2))]);
        let two = trial(&[("n_layers", ParamValue::Int(2))]);
        let s = grow(&s, &two, &[ask(double("u0"), Some("n_layers")), ask(double("u1"), Some("n_layers"))]);
        let s = grow(&s, &trial(&[("n_layers", ParamValue::Int(1))]), &[ask(double("u0"), Some("n_layers"))]);
        let s = grow(&s, &trial(&[("n_layers", ParamValue::Int(3))]), &[ask(double("u0"), None), ask(double("u1"), None)]);
        assert_eq!(shape(&s), ["n_layers", "u1[n_layers=2,3]", "u0"]);
        // A trial of an older revision without n_layers asks for u1: it moves to the root.
        let s = grow(&s, &trial(&[]), &[ask(double("u1"), None)]);
        assert_eq!(shape(&s), ["n_layers", "u0", "u1"]);
    }

    /// Every step widens: an assignment valid before is valid after (possibly lacking the new
    /// parameters), and nothing it holds becomes inactive.
    #[test]
    fn growth_never_deactivates_what_a_trial_holds() {
        let s = grow(&SearchSpace::empty(), &trial(&[]), &[given(categorical("a", &["x", "y", "z"]), None, cat("x"))]);
        let ax = trial(&[("a", cat("x"))]);
        let s = grow(&s, &ax, &[given(categorical("b", &["u", "v"]), Some("a"), cat("u"))]);
        let axu = trial(&[("a", cat("x")), ("b", cat("u"))]);
        let s = grow(&s, &axu, &[given(double("p"), Some("b"), ParamValue::Float(0.1))]);
        let old = trial(&[("a", cat("x")), ("b", cat("u")), ("p", ParamValue::Float(0.1))]);
        s.check(&old).unwrap();
        // p asked where a = y (b inactive there): p steps over b to sit under a ∈ {x, y}.
        let s2 = grow(&s, &trial(&[("a", cat("y"))]), &[ask(double("p"), Some("a"))]);
        assert_eq!(shape(&s2), ["a", "b[a=x]", "p[a=x,y]"]);
        s2.check_partial(&old).unwrap();
        assert!(!s2.is_complete(&trial(&[("a", cat("x"))])), "b and p are active under x");
        assert!(s2.check_partial(&trial(&[("a", cat("z")), ("p", ParamValue::Float(0.2))])).is_err(), "p is not active under z");
    }

    #[test]
    fn a_domain_is_fixed_at_first_use_and_bad_parents_are_refused() {
        let s = grow(&SearchSpace::empty(), &trial(&[]), &[given(double("x"), None, ParamValue::Float(0.3))]);
        let a = trial(&[("x", ParamValue::Float(0.3))]);
        let e = s.grown(&a, &[ask(int("x", 0, 3), None)], &Limits::default()).unwrap_err();
        assert_eq!(e.path, "parameters[0].parameterSpec");
        assert!(e.reason.contains("already in the study as DOUBLE [0, 1]") && e.reason.contains("INTEGER [0, 3]"), "{e}");
        let e = s.grown(&a, &[ask(double("y"), Some("x"))], &Limits::default()).unwrap_err();
        assert!(e.reason.contains("only CATEGORICAL, INTEGER and DISCRETE"), "{e}");
        let e = s.grown(&a, &[ask(double("y"), Some("nope"))], &Limits::default()).unwrap_err();
        assert_eq!(e.path, "parameters[0].parentParameterId");
        let e = s.grown(&a, &[given(double("y"), None, ParamValue::Float(2.0))], &Limits::default()).unwrap_err();
        assert_eq!(e.path, "parameters[0].value");
        let limits = Limits { parameters: 1, ..Limits::default() };
        assert!(s.grown(&a, &[ask(double("y"), None)], &limits).unwrap_err().limit.is_some(), "within the parameter limit");
    }
}
