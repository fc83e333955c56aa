//! The map between assignments and the unit cube `[0, 1]^D`, one dimension per parameter of the
//! tree in pre-order ([`SearchSpace::params`]).
//!
//! Each parameter maps `[0, 1]` onto its domain respecting its scale: DOUBLE linearly, in
//! log(x) (`Log`) or in log(max + min − x) (`ReverseLog`); INTEGER, DISCRETE and CATEGORICAL
//! under a linear scale cut the interval into equal buckets, one per value, so a uniform point
//! gives a uniform value; INTEGER and DISCRETE under a log scale use the continuous transform and
//! round to the nearest value. Decoding a point walks the tree and sets only the active
//! parameters, so a sampler over the cube respects the conditional structure; encoding puts
//! inactive dimensions at [`INACTIVE`]. `decode(encode(a)) == a` for every feasible `a`.

use super::{Domain, ParamSpec, Scale, SearchSpace, discrete_index};
use crate::trial::{Assignment, ParamValue};

/// The coordinate an inactive parameter gets from [`SearchSpace::encode`].
pub const INACTIVE: f64 = 0.5;

impl ParamSpec {
    /// The value at `u ∈ [0, 1]` (clamped) of this parameter's domain.
    pub fn from_unit(&self, u: f64) -> ParamValue {
        let u = if u.is_nan() { 0.5 } else { u.clamp(0.0, 1.0) };
        match &self.domain {
            Domain::Double { min, max } => ParamValue::Float(scale_from_unit(self.scale, *min, *max, u)),
            Domain::Integer { min, max } => match self.scale {
                Scale::Linear => ParamValue::Int(int_bucket(*min, *max, u)),
                s => ParamValue::Int((scale_from_unit(s, *min as f64, *max as f64, u).round() as i64).clamp(*min, *max)),
            },
            Domain::Discrete { values } => match self.scale {
                Scale::Linear => ParamValue::Float(values[bucket(u, values.len())]),
                s => {
                    let x = scale_from_unit(s, values[0], values[values.len() - 1], u);
                    ParamValue::Float(nearest(values, x))
                }
            },
            Domain::Categorical { values } => ParamValue::categorical(&values[bucket(u, values.len())]),
        }
    }

    /// The index of the value at `u` of a CATEGORICAL parameter ([`ParamSpec::from_unit`]'s,
    /// without copying it); `None` for another type.
    pub(crate) fn category_at(&self, u: f64) -> Option<usize> {
        let u = if u.is_nan() { 0.5 } else { u.clamp(0.0, 1.0) };
        match &self.domain {
            Domain::Categorical { values } => Some(bucket(u, values.len())),
            _ => None,
        }
    }

    /// The coordinate in `[0, 1]` of `value`, such that `from_unit(to_unit(v)) == v`; `None` when
    /// the value is not of this parameter's type.
    pub fn to_unit(&self, value: &ParamValue) -> Option<f64> {
        let u = match (&self.domain, value) {
            (Domain::Double { min, max }, ParamValue::Float(x)) => scale_to_unit(self.scale, *min, *max, *x),
            (Domain::Integer { min, max }, ParamValue::Int(i)) => match self.scale {
                Scale::Linear => ((*i as i128 - *min as i128) as f64 + 0.5) / int_count(*min, *max),
                s => scale_to_unit(s, *min as f64, *max as f64, *i as f64),
            },
            (Domain::Discrete { values }, ParamValue::Float(x)) => match self.scale {
                Scale::Linear => (discrete_index(values, *x)? as f64 + 0.5) / values.len() as f64,
                s => scale_to_unit(s, values[0], values[values.len() - 1], *x),
            },
            (Domain::Categorical { values }, ParamValue::Categorical(s)) => {
                (values.iter().position(|v| v.as_str() == &**s)? as f64 + 0.5) / values.len() as f64
            }
            _ => return None,
        };
        Some(u.clamp(0.0, 1.0))
    }
}

impl SearchSpace {
    /// The assignment at point `u` of the cube: `u.len()` must be [`SearchSpace::n_params`].
    /// Only the parameters active under the values decoded above them are set.
    pub fn decode(&self, u: &[f64]) -> Assignment {
        assert_eq!(u.len(), self.n_params(), "a point of the cube needs one coordinate per parameter");
        fn walk(p: &ParamSpec, u: &[f64], next: &mut usize, active: bool, out: &mut Assignment) {
            let value = p.from_unit(u[*next]);
            *next += 1;
            for c in &p.children {
                let child_active = active && c.parent_values.matches(&value);
                walk(&c.spec, u, next, child_active, out);
            }
            if active {
                out.insert(p.id.clone(), value);
            }
        }
        let mut out = Assignment::default();
        let mut next = 0;
        for p in self.roots() {
            walk(p, u, &mut next, true, &mut out);
        }
        out
    }

    /// Whether any parameter has a `defaultValue`.
    pub fn has_defaults(&self) -> bool {
        self.params().iter().any(|p| p.default.is_some())
    }

    /// The study's starting point: each active parameter at its `defaultValue`, or at the
    /// centre of its range in its own scale (the middle value of a DISCRETE or CATEGORICAL
    /// one); a default parent value chooses the children that are active.
    pub fn starting_point(&self) -> Assignment {
        fn walk(p: &ParamSpec, out: &mut Assignment) {
            let value = p.default.clone().unwrap_or_else(|| p.from_unit(0.5));
            for c in &p.children {
                if c.parent_values.matches(&value) {
                    walk(&c.spec, out);
                }
            }
            out.insert(p.id.clone(), value);
        }
        let mut out = Assignment::default();
        for p in self.roots() {
            walk(p, &mut out);
        }
        out
    }

    /// The point of the cube of `assignment`: its active parameters' coordinates, and
    /// [`INACTIVE`] for the others (and for a value not of its parameter's type).
    pub fn encode(&self, assignment: &Assignment) -> Vec<f64> {
        self.params().into_iter().map(|p| assignment.get(&p.id).and_then(|v| p.to_unit(v)).unwrap_or(INACTIVE)).collect()
    }
}

fn bucket(u: f64, n: usize) -> usize {
    ((u * n as f64).floor() as usize).min(n - 1)
}

/// The number of integers in `[min, max]`, as a float (exact below 2^53, which is all that
/// matters for bucketing).
fn int_count(min: i64, max: i64) -> f64 {
    (max as i128 - min as i128 + 1) as f64
}

/// The integer of `[min, max]` whose bucket holds `u`, computed in i128 so that ranges as wide
/// as all of i64 neither overflow nor leave the range.
fn int_bucket(min: i64, max: i64, u: f64) -> i64 {
    let offset = (u * int_count(min, max)).floor() as i128;
    (min as i128 + offset).clamp(min as i128, max as i128) as i64
}

fn nearest(values: &[f64], x: f64) -> f64 {
    let mut best = values[0];
    for &v in values {
        if (v - x).abs() < (best - x).abs() {
            best = v;
        }
    }
    best
}

fn scale_from_unit(scale: Scale, min: f64, max: f64, u: f64) -> f64 {
    if min >= max || u <= 0.0 {
        return min;
    }
    if u >= 1.0 {
        return max;
    }
    let x = match scale {
        Scale::Linear => min + u * (max - min),
        Scale::Log => (min.ln() + u * (max.ln() - min.ln())).exp(),
        Scale::ReverseLog => max + min - (min.ln() + (1.0 - u) * (max.ln() - min.ln())).exp(),
    };
    x.clamp(min, max)
}

fn scale_to_unit(scale: Scale, min: f64, max: f64, x: f64) -> f64 {
    if min >= max {
        return 0.5;
    }
    match scale {
        Scale::Linear => (x - min) / (max - min),
        Scale::Log => (x.ln() - min.ln()) / (max.ln() - min.ln()),
        Scale::ReverseLog => 1.0 - ((max + min - x).ln() - min.ln()) / (max.ln() - min.ln()),
    }
}
