//! Trials and what was measured of them: parameter values, assignments, measurements and the
//! trial's states. Plain data; the store persists it, designers read it, and the rules of a
//! trial's life are `lifecycle.rs`'s.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The value of one parameter in a trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamValue {
    /// A DOUBLE or DISCRETE value.
    Float(f64),
    /// An INTEGER value.
    Int(i64),
    /// A CATEGORICAL value; shared, not copied, when an assignment is (a study's trials
    /// and the observations made from them hold one copy of each value between them).
    Categorical(Arc<str>),
}

impl ParamValue {
    /// A CATEGORICAL value.
    pub fn categorical(value: &str) -> ParamValue {
        ParamValue::Categorical(Arc::from(value))
    }
}

impl ParamValue {
    /// The value as a number, for DOUBLE, DISCRETE and INTEGER values.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ParamValue::Float(x) => Some(*x),
            ParamValue::Int(i) => Some(*i as f64),
            ParamValue::Categorical(_) => None,
        }
    }
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Categorical(s) => write!(f, "{s:?}"),
        }
    }
}

/// The active parameters of one trial, by parameter id. A clone shares the values (a study's
/// trials, the observations made from them and a large study's subset hold one copy between
/// them); a change copies them first where they are shared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Assignment(pub Arc<BTreeMap<ParamId, ParamValue>>);

/// A parameter's id as an assignment holds it: shared, so the trials of a study unpacked from
/// the mirror (`packed.rs`) hold each id once between them instead of once per trial.
pub type ParamId = Arc<str>;

impl Assignment {
    /// An assignment of `values`.
    pub fn new(values: BTreeMap<ParamId, ParamValue>) -> Assignment {
        Assignment(Arc::new(values))
    }

    /// Sets `id` to `value`; the value it had, if any.
    pub fn insert(&mut self, id: impl Into<ParamId>, value: ParamValue) -> Option<ParamValue> {
        Arc::make_mut(&mut self.0).insert(id.into(), value)
    }

    /// Makes `id` inactive; the value it had, if any.
    pub fn remove(&mut self, id: &str) -> Option<ParamValue> {
        Arc::make_mut(&mut self.0).remove(id)
    }

    /// The value of `id`, if it is active.
    pub fn get(&self, id: &str) -> Option<&ParamValue> {
        self.0.get(id)
    }

    /// Its identity for de-duplication ([`AssignmentKey`]).
    pub fn key(&self) -> AssignmentKey {
        // Each id and text value with its length first, each value with its kind: the bytes
        // hashed are different for different assignments.
        let mut hash = xxhash_rust::xxh3::Xxh3::new();
        for (id, value) in self.0.iter() {
            hash.update(&(id.len() as u64).to_le_bytes());
            hash.update(id.as_bytes());
            match value {
                ParamValue::Float(x) => {
                    hash.update(b"f");
                    hash.update(&x.to_bits().to_le_bytes());
                }
                ParamValue::Int(i) => {
                    hash.update(b"i");
                    hash.update(&i.to_le_bytes());
                }
                ParamValue::Categorical(s) => {
                    hash.update(b"c");
                    hash.update(&(s.len() as u64).to_le_bytes());
                    hash.update(s.as_bytes());
                }
            }
        }
        AssignmentKey(hash.digest128())
    }
}

/// An assignment's identity for de-duplication (the points a designer must not propose again):
/// equal for equal assignments, floats compared bit for bit; for two different assignments
/// equal with probability 2⁻¹²⁸ (a 128-bit XXH3 digest). Sixteen bytes however wide the
/// assignment: as text, the keys of a 1,024-trial subset of 300 long ids and values took 80 MB,
/// copied for every proposal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AssignmentKey(u128);

impl<K: Into<ParamId>> FromIterator<(K, ParamValue)> for Assignment {
    fn from_iter<I: IntoIterator<Item = (K, ParamValue)>>(values: I) -> Assignment {
        Assignment::new(values.into_iter().map(|(id, value)| (id.into(), value)).collect())
    }
}

impl<K: Into<ParamId>> Extend<(K, ParamValue)> for Assignment {
    fn extend<I: IntoIterator<Item = (K, ParamValue)>>(&mut self, values: I) {
        Arc::make_mut(&mut self.0).extend(values.into_iter().map(|(id, value)| (id.into(), value)));
    }
}

/// One measurement of a trial: metric values at a point of its training.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Training steps done when measured; never negative.
    pub step_count: i64,
    /// Seconds of training when measured.
    pub elapsed_secs: f64,
    /// Metric values by metric id; every value finite.
    pub metrics: BTreeMap<String, f64>,
}

/// Where a trial is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TrialState {
    /// Created but not yet handed to a client.
    Requested,
    /// Handed to a client that is evaluating it.
    Active,
    /// Asked to stop early; still waiting for its final measurement.
    Stopping,
    /// Completed with a final measurement.
    Succeeded,
    /// Completed as infeasible.
    Infeasible,
}

impl TrialState {
    /// Every state, in Vertex's enum order.
    pub const ALL: [TrialState; 5] =
        [TrialState::Requested, TrialState::Active, TrialState::Stopping, TrialState::Succeeded, TrialState::Infeasible];

    /// The Vertex name of the state, also used as its stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialState::Requested => "REQUESTED",
            TrialState::Active => "ACTIVE",
            TrialState::Stopping => "STOPPING",
            TrialState::Succeeded => "SUCCEEDED",
            TrialState::Infeasible => "INFEASIBLE",
        }
    }

    /// The state named `name` (as written by [`TrialState::as_str`]).
    pub fn parse(name: &str) -> Option<TrialState> {
        TrialState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether the trial is finished (succeeded or infeasible).
    pub fn is_completed(self) -> bool {
        matches!(self, TrialState::Succeeded | TrialState::Infeasible)
    }
}

/// A trial as stored: its parameters, its measurements and its state.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The trial's number within its study, from 1.
    pub id: i64,
    /// Its state.
    pub state: TrialState,
    /// Its active parameters.
    pub assignment: Assignment,
    /// Intermediate measurements, in the order reported.
    pub measurements: Vec<Measurement>,
    /// The final measurement, once succeeded.
    pub final_measurement: Option<Measurement>,
    /// The client it was handed to; empty if none.
    pub client_id: String,
    /// Why it was infeasible; empty otherwise.
    pub infeasible_reason: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub start_time_ms: i64,
    /// Completion time, milliseconds since the Unix epoch.
    pub end_time_ms: Option<i64>,
    /// When it was asked to stop before completing (by the study's stopping rule or its
    /// client), milliseconds since the Unix epoch: its results are then partial (see
    /// [`Trial::is_partial`]).
    pub stop_time_ms: Option<i64>,
    /// The paused trial this one resumes, under successive halving with resumption
    /// (`stopping::successive_halving`): it carries that trial's measurements and goes on
    /// from them.
    pub resumed: Option<Resumed>,
    /// The revision of an open study's space its parameters were drawn from
    /// ([`crate::StudySpec::space_revision`]); 0 in a study whose space never grew.
    pub space_revision: i64,
    /// The client's own names for the trial (a bo extension, such as Optuna's trial number):
    /// shown, never read by a designer.
    pub labels: BTreeMap<String, String>,
}

/// The most labels a trial may carry.
pub const MAX_LABELS: usize = 16;

/// Checks a trial's labels: at most [`MAX_LABELS`], each key a token and each value an id within
/// `limits`. Errors are paths under `labels`.
pub fn check_labels(labels: &BTreeMap<String, String>, limits: &crate::Limits) -> Result<(), crate::FieldError> {
    use crate::limits::Text;
    if labels.len() > MAX_LABELS {
        return Err(crate::FieldError::new("labels", format!("{} labels, at most {MAX_LABELS} allowed", labels.len())));
    }
    for (k, v) in labels {
        limits.check_text(k, Text::Token).map_err(|e| crate::FieldError::text("labels", e))?;
        if k.is_empty() {
            return Err(crate::FieldError::new("labels", "a label's key must not be empty"));
        }
        limits.check_text(v, Text::Id).map_err(|e| crate::FieldError::text(format!("labels.{k}"), e))?;
    }
    Ok(())
}

/// Where a resumed trial came from: the paused trial it goes on from, and the position (step, or
/// elapsed seconds) of the last measurement it took over from it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Resumed {
    /// The paused trial's number.
    pub from: i64,
    /// The position it paused at: the resumed trial pauses again only at a rung past it.
    pub at: f64,
}

impl Trial {
    /// Trial number `id` at `assignment`, ACTIVE, not measured, with no client and no times: a
    /// base to set the rest on (`Trial { state, ..Trial::new(id, assignment) }`).
    pub fn new(id: i64, assignment: Assignment) -> Trial {
        Trial {
            id,
            state: TrialState::Active,
            assignment,
            measurements: Vec::new(),
            final_measurement: None,
            client_id: String::new(),
            infeasible_reason: String::new(),
            start_time_ms: 0,
            end_time_ms: None,
            stop_time_ms: None,
            resumed: None,
            space_revision: 0,
            labels: BTreeMap::new(),
        }
    }

    /// Whether the trial's results are partial: it was asked to stop before it completed, so its
    /// final measurement is a point on a curve cut short, not the configuration's result. The
    /// designers model such a trial's final value from its curve, and "best" and
    /// `listOptimalTrials` leave it out while any trial trained in full is there.
    pub fn is_partial(&self) -> bool {
        self.stop_time_ms.is_some()
    }

    /// The numbers of the trials among `trials` that a later trial resumes: each stands for its
    /// configuration only until then, so the designers learn from the newest trial of a chain
    /// alone and successive halving counts a chain once at each rung.
    pub fn superseded(trials: &[Trial]) -> std::collections::BTreeSet<i64> {
        trials.iter().filter_map(|t| t.resumed.map(|r| r.from)).collect()
    }

    /// An estimate of the heap the trial holds, in bytes: what the service's trial mirror is
    /// bounded by (checked against a counting allocator in `tests/memory.rs`). A map entry costs
    /// its share of a B-tree node (about 96 bytes; a small map one whole node) besides its
    /// strings.
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        /// A map of `n` entries: its entries' share of the nodes, at least one node of eleven.
        fn map<K, V>(n: usize) -> usize {
            const ENTRY: usize = 96;
            if n == 0 { 0 } else { (n * ENTRY).max(11 * (size_of::<K>() + size_of::<V>()) + 16) }
        }
        let value = |v: &ParamValue| match v {
            // The text and its two counts (counted whole, though clones share it).
            ParamValue::Categorical(s) => s.len() + 16,
            _ => 0,
        };
        // The map behind its shared pointer (its two counts), counted whole, though clones share it.
        let assignment = 2 * size_of::<usize>()
            + size_of::<BTreeMap<ParamId, ParamValue>>()
            + map::<ParamId, ParamValue>(self.assignment.0.len())
            // Each id with its two counts (counted whole, though a study's trials may share it).
            + self.assignment.0.iter().map(|(k, v)| k.len() + 16 + value(v)).sum::<usize>();
        let measurement = |m: &Measurement| {
            size_of::<Measurement>() + map::<String, f64>(m.metrics.len()) + m.metrics.keys().map(String::capacity).sum::<usize>()
        };
        size_of::<Trial>()
            + assignment
            + self.measurements.iter().map(measurement).sum::<usize>()
            + self.final_measurement.as_ref().map_or(0, measurement)
            + self.client_id.capacity()
            + self.infeasible_reason.capacity()
            + map::<String, String>(self.labels.len())
            + self.labels.iter().map(|(k, v)| k.capacity() + v.capacity()).sum::<usize>()
    }
}

/// What a designer learns from: a completed trial's parameters and outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// The trial's parameters.
    pub assignment: Assignment,
    /// How it ended.
    pub outcome: Outcome,
    /// Where the objective's value is an estimate rather than a measurement — a partial trial's
    /// predicted final value (`stopping::partial`) — the estimate's standard deviation, in the
    /// objective's units; `None` for a measured value. The GP designers observe such a value
    /// with this much more noise; the others take the value as it is.
    pub objective_sd: Option<f64>,
}

/// How a completed trial ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Succeeded with these final metric values.
    Measured(BTreeMap<String, f64>),
    /// Infeasible: the point could not be evaluated.
    Infeasible,
}

impl Observation {
    /// The observation of a completed trial, or `None` while it is still running.
    pub fn from_trial(trial: &Trial) -> Option<Observation> {
        let outcome = match (trial.state, &trial.final_measurement) {
            (TrialState::Succeeded, Some(m)) => Outcome::Measured(m.metrics.clone()),
            (TrialState::Infeasible, _) => Outcome::Infeasible,
            _ => return None,
        };
        Some(Observation { assignment: trial.assignment.clone(), outcome, objective_sd: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal assignments share a key; assignments that differ anywhere — an id's or a value's
    /// text split differently, a float's sign bit, a value's kind — do not.
    #[test]
    fn keys_tell_assignments_apart() {
        let a = |pairs: &[(&str, ParamValue)]| pairs.iter().map(|(k, v)| (*k, v.clone())).collect::<Assignment>();
        let cat = ParamValue::categorical;
        assert_eq!(a(&[("x", ParamValue::Float(0.5)), ("c", cat("b"))]).key(), a(&[("c", cat("b")), ("x", ParamValue::Float(0.5))]).key());
        let different = [
            a(&[]),
            a(&[("x", ParamValue::Float(0.0))]),
            a(&[("x", ParamValue::Float(-0.0))]),
            a(&[("x", ParamValue::Int(0))]),
            a(&[("x", cat(""))]),
            a(&[("x", cat("ab")), ("y", cat("c"))]),
            a(&[("x", cat("a")), ("y", cat("bc"))]),
            a(&[("xa", cat("b"))]),
            a(&[("x", cat("ab"))]),
        ];
        let keys: std::collections::HashSet<AssignmentKey> = different.iter().map(Assignment::key).collect();
        assert_eq!(keys.len(), different.len());
    }
}
