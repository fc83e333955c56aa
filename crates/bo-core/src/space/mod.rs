//! The search space: a forest of parameters (DOUBLE, INTEGER, DISCRETE, CATEGORICAL) where a
//! CATEGORICAL, INTEGER or DISCRETE parameter may have children that are active only under some
//! of its values — Vertex's `conditionalParameterSpecs`, to any depth.
//!
//! This module owns validation (every error names the field, in the Vertex vocabulary, as
//! `parameters[2].conditionalParameterSpecs[0].parameterSpec.doubleValueSpec`), the feasibility
//! of an assignment (exactly the active parameters, each in its domain), and through [`encode`]
//! the map between assignments and the unit cube. It must not know about trials' outcomes or
//! any model.
//!
//! Validation runs once, when a space enters ([`SearchSpace::with_limits`]), in time linear in
//! its size; a space read back from storage (serde) is trusted and only indexed, so a parameter
//! is found by id in O(depth) however large the tree.

mod context;
pub mod encode;
pub mod features;
pub mod grow;
#[cfg(test)]
mod tests;
pub mod tree;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::field::FieldError;
use crate::limits::{Limit, Limits, Text};
use crate::trial::{Assignment, ParamValue};

/// Two DISCRETE values closer than this are the same value (Vertex's epsilon).
pub const DISCRETE_EPSILON: f64 = 1e-10;

/// The largest magnitude of an INTEGER parameter's bounds and values: 2^53, the integers a
/// trial's parameter value — a JSON number, a double — carries exactly.
pub const MAX_SAFE_INTEGER: i64 = 1 << 53;

/// How a numeric parameter is spread over the unit interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Evenly.
    #[default]
    Linear,
    /// Evenly in log(x): resolution is finer near the minimum.
    Log,
    /// Evenly in log(max + min − x): resolution is finer near the maximum.
    ReverseLog,
}

/// The values a parameter may take.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// A real in `[min, max]`.
    Double {
        /// Smallest value.
        min: f64,
        /// Largest value.
        max: f64,
    },
    /// An integer in `[min, max]`.
    Integer {
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// One of these numbers, strictly increasing.
    Discrete {
        /// The values.
        values: Vec<f64>,
    },
    /// One of these strings.
    Categorical {
        /// The values.
        values: Vec<String>,
    },
}

impl Domain {
    /// The Vertex name of the type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Domain::Double { .. } => "DOUBLE",
            Domain::Integer { .. } => "INTEGER",
            Domain::Discrete { .. } => "DISCRETE",
            Domain::Categorical { .. } => "CATEGORICAL",
        }
    }

    /// The Vertex field holding this domain, for error paths.
    pub fn field_name(&self) -> &'static str {
        match self {
            Domain::Double { .. } => "doubleValueSpec",
            Domain::Integer { .. } => "integerValueSpec",
            Domain::Discrete { .. } => "discreteValueSpec",
            Domain::Categorical { .. } => "categoricalValueSpec",
        }
    }

    /// Whether `value` is one of the domain's values.
    pub fn contains(&self, value: &ParamValue) -> bool {
        match (self, value) {
            (Domain::Double { min, max }, ParamValue::Float(x)) => x.is_finite() && *min <= *x && *x <= *max,
            (Domain::Integer { min, max }, ParamValue::Int(i)) => *min <= *i && *i <= *max,
            (Domain::Discrete { values }, ParamValue::Float(x)) => discrete_index(values, *x).is_some(),
            (Domain::Categorical { values }, ParamValue::Categorical(s)) => values.iter().any(|v| v.as_str() == &**s),
            _ => false,
        }
    }

    /// Reads a number sent for this parameter: an INTEGER takes integral numbers, DOUBLE and
    /// DISCRETE any finite number; `None` when the number does not fit the type.
    pub fn coerce_number(&self, x: f64) -> Option<ParamValue> {
        if !x.is_finite() {
            return None;
        }
        match self {
            Domain::Double { .. } => Some(ParamValue::Float(x)),
            Domain::Discrete { values } => discrete_index(values, x).map(|i| ParamValue::Float(values[i])),
            Domain::Integer { .. } if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 => Some(ParamValue::Int(x as i64)),
            Domain::Integer { .. } | Domain::Categorical { .. } => None,
        }
    }

    /// Reads a string sent for this parameter: a CATEGORICAL value, or a number written as text.
    pub fn coerce_str(&self, s: &str) -> Option<ParamValue> {
        match self {
            Domain::Categorical { .. } => Some(ParamValue::categorical(s)),
            Domain::Integer { .. } if s.trim().parse::<i64>().is_ok() => s.trim().parse().ok().map(ParamValue::Int),
            _ => s.trim().parse::<f64>().ok().and_then(|x| self.coerce_number(x)),
        }
    }
}

/// The index of `x` among DISCRETE `values`, within [`DISCRETE_EPSILON`].
pub fn discrete_index(values: &[f64], x: f64) -> Option<usize> {
    values.iter().position(|v| (v - x).abs() <= DISCRETE_EPSILON)
}

/// The parent values under which a conditional child is active.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParentValues {
    /// Values of a CATEGORICAL parent.
    Categorical(Vec<String>),
    /// Values of an INTEGER parent.
    Integer(Vec<i64>),
    /// Values of a DISCRETE parent.
    Discrete(Vec<f64>),
}

impl ParentValues {
    /// Whether the child is active when its parent has `value`.
    pub fn matches(&self, value: &ParamValue) -> bool {
        match (self, value) {
            (ParentValues::Categorical(vs), ParamValue::Categorical(s)) => vs.iter().any(|v| v.as_str() == &**s),
            (ParentValues::Integer(vs), ParamValue::Int(i)) => vs.contains(i),
            (ParentValues::Discrete(vs), ParamValue::Float(x)) => discrete_index(vs, *x).is_some(),
            _ => false,
        }
    }

    /// The Vertex field of this condition, for error paths.
    pub fn field_name(&self) -> &'static str {
        match self {
            ParentValues::Categorical(_) => "parentCategoricalValues",
            ParentValues::Integer(_) => "parentIntValues",
            ParentValues::Discrete(_) => "parentDiscreteValues",
        }
    }
}

/// One parameter and its conditional children.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    /// Unique across the whole tree; no whitespace.
    pub id: String,
    /// Its values.
    pub domain: Domain,
    /// How it spreads over the unit interval.
    #[serde(default)]
    pub scale: Scale,
    /// The value to try first, if the user gave one.
    #[serde(default)]
    pub default: Option<ParamValue>,
    /// Children active under some of its values.
    #[serde(default)]
    pub children: Vec<Conditional>,
}

/// A child parameter and the parent values that activate it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conditional {
    /// When the child is active.
    pub parent_values: ParentValues,
    /// The child.
    pub spec: ParamSpec,
}

/// The product of the parameters' point counts (`None` if any is unbounded).
fn product<'a>(params: impl Iterator<Item = &'a ParamSpec>) -> Option<u128> {
    params.map(ParamSpec::point_count).try_fold(1u128, |n, c| Some(n.saturating_mul(c?)))
}

impl ParamSpec {
    /// Distinct assignments of this parameter and the children its values activate: each value
    /// named by a child's condition counts the product of its active children's points, every
    /// other value one point.
    fn point_count(&self) -> Option<u128> {
        let values = match &self.domain {
            Domain::Double { min, max } if max > min => return None,
            Domain::Double { .. } => 1,
            Domain::Integer { min, max } => (i128::from(*max) - i128::from(*min) + 1).max(0) as u128,
            Domain::Discrete { values } => values.len() as u128,
            Domain::Categorical { values } => values.len() as u128,
        };
        let mut named: Vec<ParamValue> = Vec::new();
        for child in &self.children {
            let under: Vec<ParamValue> = match &child.parent_values {
                ParentValues::Categorical(vs) => vs.iter().map(|v| ParamValue::categorical(v)).collect(),
                ParentValues::Integer(vs) => vs.iter().copied().map(ParamValue::Int).collect(),
                ParentValues::Discrete(vs) => vs.iter().copied().map(ParamValue::Float).collect(),
            };
            for v in under {
                if !named.contains(&v) {
                    named.push(v);
                }
            }
        }
        named.iter().try_fold(values.saturating_sub(named.len() as u128), |n, v| Some(n.saturating_add(product(self.active_children(v))?)))
    }

    /// The children active when this parameter has `value`.
    pub fn active_children<'a, 'v>(&'a self, value: &'v ParamValue) -> impl Iterator<Item = &'a ParamSpec> + use<'a, 'v> {
        self.children.iter().filter(move |c| c.parent_values.matches(value)).map(|c| &c.spec)
    }
}

/// A validated forest of parameters, indexed by id.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "Vec<ParamSpec>", into = "Vec<ParamSpec>")]
pub struct SearchSpace {
    roots: Vec<ParamSpec>,
    /// Each parameter's position in pre-order, by id.
    index: HashMap<String, usize>,
    /// Each parameter's path from the roots (root index, then child indices), in pre-order.
    paths: Vec<Box<[u32]>>,
}

impl PartialEq for SearchSpace {
    fn eq(&self, other: &Self) -> bool {
        self.roots == other.roots
    }
}

/// A stored space: validated when it entered, so only indexed here.
impl From<Vec<ParamSpec>> for SearchSpace {
    fn from(roots: Vec<ParamSpec>) -> Self {
        SearchSpace::indexed(roots)
    }
}

impl From<SearchSpace> for Vec<ParamSpec> {
    fn from(space: SearchSpace) -> Self {
        space.roots
    }
}

impl SearchSpace {
    /// Validates `roots` as a search space under the default [`Limits`]. Errors are paths under
    /// `parameters`.
    pub fn new(roots: Vec<ParamSpec>) -> Result<SearchSpace, FieldError> {
        SearchSpace::with_limits(roots, &Limits::default())
    }

    /// Validates `roots` as a search space within `limits`, in time linear in its size. Errors
    /// are paths under `parameters`.
    pub fn with_limits(roots: Vec<ParamSpec>, limits: &Limits) -> Result<SearchSpace, FieldError> {
        if roots.is_empty() {
            return Err(FieldError::new("parameters", "a study needs at least one parameter"));
        }
        let mut validator = Validator { limits, seen: HashSet::new() };
        for (i, p) in roots.iter().enumerate() {
            validator.param(p, &format!("parameters[{i}]"), 1)?;
        }
        Ok(SearchSpace::indexed(roots))
    }

    /// The space of `roots` without validation (for spaces validated before they were stored).
    fn indexed(roots: Vec<ParamSpec>) -> SearchSpace {
        fn walk(p: &ParamSpec, path: &mut Vec<u32>, index: &mut HashMap<String, usize>, paths: &mut Vec<Box<[u32]>>) {
            index.insert(p.id.clone(), paths.len());
            paths.push(path.clone().into_boxed_slice());
            for (j, c) in p.children.iter().enumerate() {
                path.push(j as u32);
                walk(&c.spec, path, index, paths);
                path.pop();
            }
        }
        let (mut index, mut paths) = (HashMap::new(), Vec::new());
        for (i, p) in roots.iter().enumerate() {
            walk(p, &mut vec![i as u32], &mut index, &mut paths);
        }
        SearchSpace { roots, index, paths }
    }

    /// The top-level parameters.
    pub fn roots(&self) -> &[ParamSpec] {
        &self.roots
    }

    /// Whether two independently drawn points coincide with probability zero: some top-level
    /// (always active) parameter is a real with a non-empty interval. Designers that avoid
    /// repeating a point need not look at the other trials then.
    pub fn is_continuous(&self) -> bool {
        self.roots.iter().any(|p| matches!(p.domain, Domain::Double { min, max } if max > min))
    }

    /// How many distinct assignments the space holds — what a study can use up — or `None`
    /// when a DOUBLE with `min < max` can be active (then there is no end). Saturates at
    /// `u128::MAX`.
    pub fn point_count(&self) -> Option<u128> {
        product(self.roots.iter())
    }

    /// The number of parameters in the whole tree, active or not.
    pub fn n_params(&self) -> usize {
        self.paths.len()
    }

    /// Every parameter of the tree in pre-order (a parent before its children, children in the
    /// order given): the order of the encoded dimensions.
    pub fn params(&self) -> Vec<&ParamSpec> {
        fn walk<'a>(p: &'a ParamSpec, out: &mut Vec<&'a ParamSpec>) {
            out.push(p);
            for c in &p.children {
                walk(&c.spec, out);
            }
        }
        let mut out = Vec::with_capacity(self.n_params());
        for p in &self.roots {
            walk(p, &mut out);
        }
        out
    }

    /// The parameter with id `id`, anywhere in the tree: a hash lookup and a walk down its path.
    pub fn param(&self, id: &str) -> Option<&ParamSpec> {
        let path = &self.paths[*self.index.get(id)?];
        let mut p = &self.roots[path[0] as usize];
        for &j in &path[1..] {
            p = &p.children[j as usize].spec;
        }
        Some(p)
    }

    /// The position of parameter `id` in pre-order ([`SearchSpace::params`]).
    pub fn position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The ids of the parameters active under `assignment`, in pre-order. A parameter is active
    /// when it is a root or its parent is active with a value that activates it.
    pub fn active_ids<'a>(&'a self, assignment: &Assignment) -> Vec<&'a str> {
        fn walk<'a>(p: &'a ParamSpec, a: &Assignment, out: &mut Vec<&'a str>) {
            out.push(&p.id);
            if let Some(v) = a.get(&p.id) {
                for child in p.active_children(v) {
                    walk(child, a, out);
                }
            }
        }
        let mut out = Vec::new();
        for p in &self.roots {
            walk(p, assignment, &mut out);
        }
        out
    }

    /// Checks that `assignment` is feasible: it sets exactly the active parameters, each to a
    /// value of its domain. Errors are paths under `parameters` naming the parameter id.
    pub fn check(&self, assignment: &Assignment) -> Result<(), FieldError> {
        let active = self.active_ids(assignment);
        for id in &active {
            let spec = self.param(id).expect("active ids come from the tree");
            match assignment.get(id) {
                None => {
                    return Err(FieldError::new("parameters", format!("parameter {id:?} is active but has no value")));
                }
                Some(v) if !spec.domain.contains(v) => {
                    return Err(FieldError::new(
                        "parameters",
                        format!("value {v} of parameter {id:?} is not in its {} domain", spec.domain.type_name()),
                    ));
                }
                Some(_) => {}
            }
        }
        if assignment.0.len() != active.len() {
            let active: HashSet<&str> = active.into_iter().collect();
            if let Some(id) = assignment.0.keys().find(|id| !active.contains(&**id as &str)) {
                let why = if self.param(id).is_some() {
                    "is not active under the parent values given"
                } else {
                    "is not a parameter of the study"
                };
                return Err(FieldError::new("parameters", format!("parameter {id:?} {why}")));
            }
        }
        Ok(())
    }
}

/// Validation of a tree against limits, with the ids seen so far.
struct Validator<'l> {
    limits: &'l Limits,
    seen: HashSet<String>,
}

impl Validator<'_> {
    fn param(&mut self, p: &ParamSpec, path: &str, depth: usize) -> Result<(), FieldError> {
        let id_path = format!("{path}.parameterId");
        if p.id.is_empty() {
            return Err(FieldError::new(id_path, "a parameter id must not be empty"));
        }
        self.limits.check_text(&p.id, Text::Token).map_err(|e| FieldError::text(&id_path, e))?;
        self.limits.check(Limit::TreeDepth, depth).map_err(|o| FieldError::over(path, o))?;
        if !self.seen.insert(p.id.clone()) {
            return Err(FieldError::new(id_path, format!("parameter id {:?} appears more than once in the tree", p.id)));
        }
        self.limits.check(Limit::Parameters, self.seen.len()).map_err(|o| FieldError::over("parameters", o))?;
        let field = format!("{path}.{}", p.domain.field_name());
        let logish = p.scale != Scale::Linear;
        match &p.domain {
            Domain::Double { min, max } => {
                if !min.is_finite() || !max.is_finite() {
                    return Err(FieldError::new(field, format!("minValue {min} and maxValue {max} must be finite")));
                }
                if min > max {
                    return Err(FieldError::new(field, format!("minValue {min} is greater than maxValue {max}")));
                }
                if !(max - min).is_finite() {
                    return Err(FieldError::new(
                        field,
                        format!("the range from {min} to {max} is wider than a double holds; its width must be finite"),
                    ));
                }
                if logish && *min <= 0.0 {
                    return Err(FieldError::new(field, format!("a log scale needs minValue > 0, got {min}")));
                }
            }
            Domain::Integer { min, max } => {
                if min.unsigned_abs() > MAX_SAFE_INTEGER as u64 || max.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
                    return Err(FieldError::new(
                        field,
                        format!(
                            "minValue {min} and maxValue {max} must lie within ±{MAX_SAFE_INTEGER} (2^53), the integers a trial's value carries exactly"
                        ),
                    ));
                }
                if min > max {
                    return Err(FieldError::new(field, format!("minValue {min} is greater than maxValue {max}")));
                }
                if logish && *min <= 0 {
                    return Err(FieldError::new(field, format!("a log scale needs minValue > 0, got {min}")));
                }
            }
            Domain::Discrete { values } => {
                if values.is_empty() {
                    return Err(FieldError::new(field, "values must not be empty"));
                }
                self.limits.check(Limit::Values, values.len()).map_err(|o| FieldError::over(format!("{field}.values"), o))?;
                if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
                    return Err(FieldError::new(field, format!("value {bad} is not finite")));
                }
                if let Some(w) = values.windows(2).find(|w| w[1] - w[0] < DISCRETE_EPSILON) {
                    return Err(FieldError::new(
                        field,
                        format!("values must increase by at least {DISCRETE_EPSILON}: {} then {}", w[0], w[1]),
                    ));
                }
                if logish && values[0] <= 0.0 {
                    return Err(FieldError::new(field, format!("a log scale needs values > 0, got {}", values[0])));
                }
            }
            Domain::Categorical { values } => {
                if values.is_empty() {
                    return Err(FieldError::new(field, "values must not be empty"));
                }
                self.limits.check(Limit::Values, values.len()).map_err(|o| FieldError::over(format!("{field}.values"), o))?;
                let mut distinct = HashSet::with_capacity(values.len());
                for (k, v) in values.iter().enumerate() {
                    self.limits.check_text(v, Text::Id).map_err(|e| FieldError::text(format!("{field}.values[{k}]"), e))?;
                    if !distinct.insert(v.as_str()) {
                        return Err(FieldError::new(field, format!("value {v:?} appears twice")));
                    }
                }
                if logish {
                    return Err(FieldError::new(format!("{path}.scaleType"), "a CATEGORICAL parameter takes no log scale"));
                }
            }
        }
        if let Some(default) = &p.default
            && !p.domain.contains(default)
        {
            return Err(FieldError::new(
                format!("{field}.defaultValue"),
                format!("default {default} is not one of the parameter's values"),
            ));
        }
        // A CATEGORICAL parent's values as a set, so checking its children's conditions is linear.
        let categories: HashSet<&str> = match &p.domain {
            Domain::Categorical { values } if !p.children.is_empty() => values.iter().map(String::as_str).collect(),
            _ => HashSet::new(),
        };
        for (j, child) in p.children.iter().enumerate() {
            let cpath = format!("{path}.conditionalParameterSpecs[{j}]");
            self.condition(p, &categories, &child.parent_values, &cpath)?;
            self.param(&child.spec, &format!("{cpath}.parameterSpec"), depth + 1)?;
        }
        Ok(())
    }

    fn condition(&self, parent: &ParamSpec, categories: &HashSet<&str>, cond: &ParentValues, path: &str) -> Result<(), FieldError> {
        let field = format!("{path}.{}", cond.field_name());
        let n = match cond {
            ParentValues::Categorical(vs) => vs.len(),
            ParentValues::Integer(vs) => vs.len(),
            ParentValues::Discrete(vs) => vs.len(),
        };
        self.limits.check(Limit::Values, n).map_err(|o| FieldError::over(format!("{field}.values"), o))?;
        let values: Vec<ParamValue> = match (&parent.domain, cond) {
            (Domain::Double { .. }, _) => {
                return Err(FieldError::new(
                    path,
                    format!(
                        "DOUBLE parameter {:?} cannot have conditional children; only CATEGORICAL, INTEGER and DISCRETE parents can",
                        parent.id
                    ),
                ));
            }
            (Domain::Categorical { .. }, ParentValues::Categorical(vs)) => vs.iter().map(|v| ParamValue::categorical(v)).collect(),
            (Domain::Integer { .. }, ParentValues::Integer(vs)) => vs.iter().copied().map(ParamValue::Int).collect(),
            (Domain::Discrete { .. }, ParentValues::Discrete(vs)) => vs.iter().copied().map(ParamValue::Float).collect(),
            (domain, _) => {
                return Err(FieldError::new(
                    field,
                    format!("parent {:?} is {}; its children need a matching parent value condition", parent.id, domain.type_name()),
                ));
            }
        };
        if values.is_empty() {
            return Err(FieldError::new(format!("{field}.values"), "a condition needs at least one parent value"));
        }
        let contains = |v: &ParamValue| match v {
            ParamValue::Categorical(s) => categories.contains(&**s),
            v => parent.domain.contains(v),
        };
        if let Some(bad) = values.iter().find(|v| !contains(v)) {
            return Err(FieldError::new(
                format!("{field}.values"),
                format!("parent value {bad} is not a value of parameter {:?}", parent.id),
            ));
        }
        Ok(())
    }
}
