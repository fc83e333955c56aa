//! Trials packed for holding many in memory: the trial mirror (bo-server's `engine/mirror.rs`)
//! keeps each study's trials in this form and unpacks them for the reader that asks.
//!
//! A decoded [`Trial`] holds each parameter as a B-tree entry with its own id and categorical
//! value strings: a trial of 300 categorical parameters with 128-character ids and values takes
//! about 105 KB. Packed, every distinct string of a study (parameter and metric ids, categorical
//! values, client ids, reasons, labels) is held once and named by its index; the parameter ids
//! and kinds of a trial are one shared *layout* (the trials of a study nearly always share
//! one); and a value is eight bytes (a number's bits, or a categorical value's index). That
//! trial then adds about 2.4 KB to its study. `tests/memory.rs` measures both with a counting
//! allocator.
//!
//! A replaced trial's strings that no other trial uses stay until [`PackedTrials::clear`]; they
//! count in [`PackedTrials::memory_bytes`], so a budget over it still holds.
//!
//! It also has a stored form ([`PackedTrials::to_stored`], [`PackedTrials::from_stored`]): the
//! tables and the trials' words as JSON, numbers as their bits, so a server that restarts loads
//! a large study's trials from one value of a few megabytes instead of decoding every trial's
//! parameters again. Loading checks every index it reads and refuses a value that does not hold
//! together ([`StoredFormError`]).
//!
//! Owns packing, unpacking and the stored form only: unpacking gives back exactly the trial
//! packed, loading exactly the trials stored.

use std::collections::{BTreeMap, HashMap};
use std::mem::size_of;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::trial::{Assignment, Measurement, ParamValue, Resumed, Trial, TrialState};

/// The stored form's version: a value of another version is refused, and its reader reads the
/// trials instead.
pub const STORED_FORMAT: u32 = 1;

/// Why a stored value could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum StoredFormError {
    /// It is not JSON of the stored form.
    #[error("the stored trials are not readable: {0}")]
    Unreadable(#[from] serde_json::Error),
    /// It was written in another version of the form.
    #[error("the stored trials are in format {found}; this server reads format {STORED_FORMAT}")]
    Format {
        /// The value's version.
        found: u32,
    },
    /// An index points past its table, a trial's values do not match its layout, or the trials
    /// are not in id order.
    #[error("the stored trials do not hold together: {0}")]
    Inconsistent(&'static str),
}

/// A study's trials, packed, in id order.
#[derive(Clone, Debug, Default)]
pub struct PackedTrials {
    strings: Strings,
    layouts: Layouts,
    trials: Vec<PackedTrial>,
    /// The estimated heap held by `trials` (the tables' own is theirs).
    trial_bytes: usize,
}

/// One trial: its parameters as a layout and one word per value, strings as indices.
#[derive(Clone, Debug)]
struct PackedTrial {
    id: i64,
    state: TrialState,
    layout: u32,
    values: Box<[u64]>,
    measurements: Box<[PackedMeasurement]>,
    final_measurement: Option<PackedMeasurement>,
    client_id: u32,
    infeasible_reason: u32,
    start_time_ms: i64,
    end_time_ms: Option<i64>,
    stop_time_ms: Option<i64>,
    resumed: Option<Resumed>,
    space_revision: i64,
    labels: Box<[(u32, u32)]>,
}

#[derive(Clone, Debug)]
struct PackedMeasurement {
    step_count: i64,
    elapsed_secs: f64,
    metrics: Box<[(u32, f64)]>,
}

/// A parameter value's kind, which says how its word reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum Kind {
    Float,
    Int,
    Categorical,
}

/// Each distinct string once, named by its index.
#[derive(Clone, Debug, Default)]
struct Strings {
    all: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
    bytes: usize,
}

impl Strings {
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = u32::try_from(self.all.len()).expect("fewer than 2^32 distinct strings in one study");
        let shared: Arc<str> = Arc::from(s);
        // The string and its counts, the list's slot and the index's entry (each table up to
        // twice its entries).
        self.bytes += s.len() + 16 + 2 * size_of::<Arc<str>>() + 2 * (size_of::<Arc<str>>() + 8 + 1);
        self.all.push(shared.clone());
        self.index.insert(shared, i);
        i
    }

    fn get(&self, i: u32) -> &str {
        &self.all[i as usize]
    }

    /// The string `i`, shared (a parameter id or categorical value unpacked costs a count, not a
    /// copy).
    fn shared(&self, i: u32) -> Arc<str> {
        self.all[i as usize].clone()
    }
}

/// Each distinct sequence of (parameter id, kind) once.
#[derive(Clone, Debug, Default)]
struct Layouts {
    all: Vec<Arc<[(u32, Kind)]>>,
    index: HashMap<Arc<[(u32, Kind)]>, u32>,
    bytes: usize,
}

impl Layouts {
    fn intern(&mut self, layout: Vec<(u32, Kind)>) -> u32 {
        if let Some(&i) = self.index.get(layout.as_slice()) {
            return i;
        }
        let i = u32::try_from(self.all.len()).expect("fewer than 2^32 layouts in one study");
        self.bytes += layout.len() * size_of::<(u32, Kind)>()
            + 16
            + 2 * size_of::<Arc<[(u32, Kind)]>>()
            + 2 * (size_of::<Arc<[(u32, Kind)]>>() + 8 + 1);
        let shared: Arc<[(u32, Kind)]> = layout.into();
        self.all.push(shared.clone());
        self.index.insert(shared, i);
        i
    }
}

impl PackedTrials {
    /// The trials of `trials`, packed (in id order whatever their order here).
    pub fn from_trials(trials: &[Trial]) -> PackedTrials {
        let mut packed = PackedTrials::default();
        for t in trials {
            packed.upsert(t);
        }
        packed
    }

    /// Adds `trial`, or replaces the trial of its id.
    pub fn upsert(&mut self, trial: &Trial) {
        let packed = self.pack(trial);
        let bytes = packed.heap_bytes();
        match self.trials.binary_search_by_key(&trial.id, |t| t.id) {
            Ok(i) => {
                self.trial_bytes -= self.trials[i].heap_bytes();
                self.trials[i] = packed;
            }
            Err(i) => self.trials.insert(i, packed),
        }
        self.trial_bytes += bytes;
    }

    /// Forgets every trial (and every string and layout).
    pub fn clear(&mut self) {
        *self = PackedTrials::default();
    }

    /// How many trials it holds.
    pub fn len(&self) -> usize {
        self.trials.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.trials.is_empty()
    }

    /// The trials, unpacked, in id order.
    pub fn unpack(&self) -> Vec<Trial> {
        self.trials.iter().map(|t| self.unpack_one(t)).collect()
    }

    /// The estimated heap it holds (checked against a counting allocator in `tests/memory.rs`).
    pub fn memory_bytes(&self) -> usize {
        size_of::<PackedTrials>()
            + self.trials.capacity() * size_of::<PackedTrial>()
            + self.trial_bytes
            + self.strings.bytes
            + self.layouts.bytes
    }

    /// The stored form (see the module docs).
    pub fn to_stored(&self) -> String {
        let out = StoredOut {
            format: STORED_FORMAT,
            strings: &self.strings.all,
            layouts: &self.layouts.all,
            trials: self.trials.iter().map(StoredTrial::from_packed).collect(),
        };
        serde_json::to_string(&out).expect("the stored form has no map keys that are not strings")
    }

    /// The trials of a stored value, exactly as they were stored; a value that does not hold
    /// together is refused whole.
    pub fn from_stored(stored: &str) -> Result<PackedTrials, StoredFormError> {
        #[derive(Deserialize)]
        struct Version {
            format: u32,
        }
        // One pass over a value of the current form; a value that does not read is read again
        // for its version only, to say which it is.
        let value: StoredIn = match serde_json::from_str(stored) {
            Ok(value) => value,
            Err(e) => {
                let Version { format } = serde_json::from_str(stored)?;
                return Err(if format == STORED_FORMAT { e.into() } else { StoredFormError::Format { found: format } });
            }
        };
        if value.format != STORED_FORMAT {
            return Err(StoredFormError::Format { found: value.format });
        }
        let mut packed = PackedTrials::default();
        for s in value.strings {
            if packed.strings.intern(&s) as usize != packed.strings.all.len() - 1 {
                return Err(StoredFormError::Inconsistent("a string is stored twice"));
            }
        }
        let strings = packed.strings.all.len();
        let string =
            |i: u32| if (i as usize) < strings { Ok(i) } else { Err(StoredFormError::Inconsistent("a string index is out of range")) };
        for layout in value.layouts {
            for &(id, _) in &layout {
                string(id)?;
            }
            if packed.layouts.intern(layout) as usize != packed.layouts.all.len() - 1 {
                return Err(StoredFormError::Inconsistent("a layout is stored twice"));
            }
        }
        let mut last_id = None;
        for t in value.trials {
            if last_id.is_some_and(|last| last >= t.id) {
                return Err(StoredFormError::Inconsistent("the trials are not in id order"));
            }
            last_id = Some(t.id);
            let layout =
                packed.layouts.all.get(t.layout as usize).ok_or(StoredFormError::Inconsistent("a layout index is out of range"))?;
            if layout.len() != t.values.len() {
                return Err(StoredFormError::Inconsistent("a trial's values do not match its layout"));
            }
            for (&(_, kind), &word) in layout.iter().zip(&t.values) {
                if kind == Kind::Categorical {
                    string(u32::try_from(word).map_err(|_| StoredFormError::Inconsistent("a string index is out of range"))?)?;
                }
            }
            for m in t.measurements.iter().chain(&t.final_measurement) {
                for &(id, _) in &m.2 {
                    string(id)?;
                }
            }
            for &(k, v) in &t.labels {
                string(k)?;
                string(v)?;
            }
            string(t.client_id)?;
            string(t.infeasible_reason)?;
            let trial = t.into_packed();
            packed.trial_bytes += trial.heap_bytes();
            packed.trials.push(trial);
        }
        Ok(packed)
    }

    fn pack(&mut self, t: &Trial) -> PackedTrial {
        let mut layout = Vec::with_capacity(t.assignment.0.len());
        let mut values = Vec::with_capacity(t.assignment.0.len());
        for (id, value) in t.assignment.0.iter() {
            let (kind, word) = match value {
                ParamValue::Float(x) => (Kind::Float, x.to_bits()),
                ParamValue::Int(i) => (Kind::Int, *i as u64),
                ParamValue::Categorical(s) => (Kind::Categorical, u64::from(self.strings.intern(s))),
            };
            layout.push((self.strings.intern(id), kind));
            values.push(word);
        }
        PackedTrial {
            id: t.id,
            state: t.state,
            layout: self.layouts.intern(layout),
            values: values.into_boxed_slice(),
            measurements: t.measurements.iter().map(|m| self.pack_measurement(m)).collect(),
            final_measurement: t.final_measurement.as_ref().map(|m| self.pack_measurement(m)),
            client_id: self.strings.intern(&t.client_id),
            infeasible_reason: self.strings.intern(&t.infeasible_reason),
            start_time_ms: t.start_time_ms,
            end_time_ms: t.end_time_ms,
            stop_time_ms: t.stop_time_ms,
            resumed: t.resumed,
            space_revision: t.space_revision,
            labels: t.labels.iter().map(|(k, v)| (self.strings.intern(k), self.strings.intern(v))).collect(),
        }
    }

    fn pack_measurement(&mut self, m: &Measurement) -> PackedMeasurement {
        PackedMeasurement {
            step_count: m.step_count,
            elapsed_secs: m.elapsed_secs,
            metrics: m.metrics.iter().map(|(id, v)| (self.strings.intern(id), *v)).collect(),
        }
    }

    fn unpack_one(&self, t: &PackedTrial) -> Trial {
        let text = |i: u32| self.strings.get(i).to_owned();
        let layout = &self.layouts.all[t.layout as usize];
        // The layout is in id order (it was read from a map), so the map is built in one pass.
        let assignment = layout
            .iter()
            .zip(&t.values)
            .map(|(&(id, kind), &word)| {
                let value = match kind {
                    Kind::Float => ParamValue::Float(f64::from_bits(word)),
                    Kind::Int => ParamValue::Int(word as i64),
                    Kind::Categorical => ParamValue::Categorical(self.strings.shared(word as u32)),
                };
                (self.strings.shared(id), value)
            })
            .collect();
        let measurement = |m: &PackedMeasurement| Measurement {
            step_count: m.step_count,
            elapsed_secs: m.elapsed_secs,
            metrics: m.metrics.iter().map(|&(id, v)| (text(id), v)).collect(),
        };
        Trial {
            id: t.id,
            state: t.state,
            assignment: Assignment::new(assignment),
            measurements: t.measurements.iter().map(measurement).collect(),
            final_measurement: t.final_measurement.as_ref().map(measurement),
            client_id: text(t.client_id),
            infeasible_reason: text(t.infeasible_reason),
            start_time_ms: t.start_time_ms,
            end_time_ms: t.end_time_ms,
            stop_time_ms: t.stop_time_ms,
            resumed: t.resumed,
            space_revision: t.space_revision,
            labels: t.labels.iter().map(|&(k, v)| (text(k), text(v))).collect::<BTreeMap<_, _>>(),
        }
    }
}

/// The stored form, written (see the module docs).
#[derive(Serialize)]
struct StoredOut<'a> {
    format: u32,
    strings: &'a [Arc<str>],
    layouts: &'a [Arc<[(u32, Kind)]>],
    trials: Vec<StoredTrial>,
}

/// The stored form, read.
#[derive(Deserialize)]
struct StoredIn {
    format: u32,
    strings: Vec<String>,
    layouts: Vec<Vec<(u32, Kind)>>,
    trials: Vec<StoredTrial>,
}

/// A measurement stored: step, elapsed seconds' bits, (metric's string, value's bits).
type StoredMeasurement = (i64, u64, Vec<(u32, u64)>);

/// A trial stored: every number as its bits (JSON has no NaN, and a bit pattern reads back
/// exactly), strings and the layout as indices.
#[derive(Serialize, Deserialize)]
struct StoredTrial {
    id: i64,
    state: TrialState,
    layout: u32,
    values: Vec<u64>,
    measurements: Vec<StoredMeasurement>,
    final_measurement: Option<StoredMeasurement>,
    client_id: u32,
    infeasible_reason: u32,
    start_time_ms: i64,
    end_time_ms: Option<i64>,
    stop_time_ms: Option<i64>,
    /// The trial resumed from, and the position's bits.
    resumed: Option<(i64, u64)>,
    space_revision: i64,
    labels: Vec<(u32, u32)>,
}

impl StoredTrial {
    fn from_packed(t: &PackedTrial) -> StoredTrial {
        let measurement = |m: &PackedMeasurement| -> StoredMeasurement {
            (m.step_count, m.elapsed_secs.to_bits(), m.metrics.iter().map(|&(id, v)| (id, v.to_bits())).collect())
        };
        StoredTrial {
            id: t.id,
            state: t.state,
            layout: t.layout,
            values: t.values.to_vec(),
            measurements: t.measurements.iter().map(measurement).collect(),
            final_measurement: t.final_measurement.as_ref().map(measurement),
            client_id: t.client_id,
            infeasible_reason: t.infeasible_reason,
            start_time_ms: t.start_time_ms,
            end_time_ms: t.end_time_ms,
            stop_time_ms: t.stop_time_ms,
            resumed: t.resumed.map(|r| (r.from, r.at.to_bits())),
            space_revision: t.space_revision,
            labels: t.labels.to_vec(),
        }
    }

    fn into_packed(self) -> PackedTrial {
        let measurement = |(step_count, elapsed, metrics): StoredMeasurement| PackedMeasurement {
            step_count,
            elapsed_secs: f64::from_bits(elapsed),
            metrics: metrics.into_iter().map(|(id, v)| (id, f64::from_bits(v))).collect(),
        };
        PackedTrial {
            id: self.id,
            state: self.state,
            layout: self.layout,
            values: self.values.into_boxed_slice(),
            measurements: self.measurements.into_iter().map(measurement).collect(),
            final_measurement: self.final_measurement.map(measurement),
            client_id: self.client_id,
            infeasible_reason: self.infeasible_reason,
            start_time_ms: self.start_time_ms,
            end_time_ms: self.end_time_ms,
            stop_time_ms: self.stop_time_ms,
            resumed: self.resumed.map(|(from, at)| Resumed { from, at: f64::from_bits(at) }),
            space_revision: self.space_revision,
            labels: self.labels.into_boxed_slice(),
        }
    }
}

impl PackedTrial {
    /// The heap it holds beyond its own size.
    fn heap_bytes(&self) -> usize {
        let measurement = |m: &PackedMeasurement| m.metrics.len() * size_of::<(u32, f64)>();
        self.values.len() * 8
            + self.measurements.len() * size_of::<PackedMeasurement>()
            + self.measurements.iter().map(measurement).sum::<usize>()
            + self.final_measurement.as_ref().map_or(0, measurement)
            + self.labels.len() * size_of::<(u32, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(id: i64, k: usize) -> Trial {
        let mut t = Trial::new(
            id,
            Assignment::new(BTreeMap::from([
                ("lr".into(), ParamValue::Float(0.1 * k as f64)),
                ("layers".into(), ParamValue::Int(-(k as i64))),
                ("act".into(), ParamValue::categorical(["relu", "tanh"][k % 2])),
            ])),
        );
        t.state = TrialState::Succeeded;
        t.measurements = vec![Measurement { step_count: 3, elapsed_secs: 1.5, metrics: BTreeMap::from([("loss".into(), 0.25)]) }];
        t.final_measurement = Some(Measurement { step_count: 4, elapsed_secs: 2.0, metrics: BTreeMap::from([("loss".into(), 0.5)]) });
        t.client_id = format!("worker-{}", k % 3);
        t.infeasible_reason = String::new();
        t.start_time_ms = 10 + id;
        t.end_time_ms = Some(20 + id);
        t.stop_time_ms = (k % 2 == 0).then_some(15);
        t.resumed = (k == 3).then_some(Resumed { from: 1, at: 0.5 });
        t.space_revision = 2;
        t.labels = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        t
    }

    /// Unpacking gives back exactly what was packed, in id order; a replaced trial is replaced;
    /// numbers keep every bit (−0, NaN's payload, the extremes).
    #[test]
    fn unpacking_gives_back_what_was_packed() {
        let mut trials: Vec<Trial> = (1..=6).rev().map(|id| trial(id, id as usize)).collect();
        trials[0].assignment.insert("odd", ParamValue::Float(-0.0));
        trials[1].assignment.insert("odd", ParamValue::Int(i64::MIN));
        trials[2].assignment.insert("odd", ParamValue::Float(f64::from_bits(0x7ff8_0000_dead_beef)));
        let mut packed = PackedTrials::from_trials(&trials);
        trials.sort_by_key(|t| t.id);
        let back = packed.unpack();
        assert_eq!(back.len(), 6);
        for (a, b) in back.iter().zip(&trials) {
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "trial {}", b.id);
        }
        let bits = |t: &Trial| match t.assignment.get("odd") {
            Some(ParamValue::Float(x)) => x.to_bits(),
            other => panic!("{other:?}"),
        };
        assert_eq!((bits(&back[3]), bits(&back[5])), (0x7ff8_0000_dead_beef, (-0.0f64).to_bits()));
        let mut changed = trial(4, 9);
        changed.assignment.remove("lr");
        changed.infeasible_reason = "diverged".into();
        packed.upsert(&changed);
        assert_eq!(packed.len(), 6);
        assert_eq!(packed.unpack()[3], changed);
        packed.clear();
        assert!(packed.is_empty() && packed.unpack().is_empty());
    }

    /// The stored form loads back exactly what was stored — every bit of every number, the
    /// memory estimate too — and a value that does not hold together is refused.
    #[test]
    fn the_stored_form_loads_back_exactly() {
        let mut trials: Vec<Trial> = (1..=7).map(|id| trial(id, id as usize)).collect();
        trials[0].assignment.insert("odd", ParamValue::Float(f64::from_bits(0x7ff8_0000_dead_beef)));
        trials[1].final_measurement.as_mut().unwrap().metrics.insert("nan".into(), f64::NAN);
        trials[2].infeasible_reason = "quote \" and\nnewline".into();
        let packed = PackedTrials::from_trials(&trials);
        let stored = packed.to_stored();
        let back = PackedTrials::from_stored(&stored).unwrap();
        assert_eq!(format!("{:?}", back.unpack()), format!("{:?}", packed.unpack()));
        assert_eq!(back.memory_bytes(), packed.memory_bytes());
        assert_eq!(back.to_stored(), stored);
        let broken = |from: &str, to: &str| {
            assert!(stored.contains(from), "{from}");
            PackedTrials::from_stored(&stored.replacen(from, to, 1)).unwrap_err().to_string()
        };
        assert!(broken("\"format\":1", "\"format\":9").contains("format 9"));
        assert!(broken("\"layout\":0", "\"layout\":5").contains("layout index"));
        assert!(broken("\"client_id\":", "\"client_id\":99").contains("string index"));
        assert!(broken("\"id\":2,", "\"id\":1,").contains("id order"));
        assert!(broken("\"trials\":[", "\"trials\":[1,").contains("not readable"));
        // A value of another version is named as such even when its shape is not this one's.
        let other = stored.replacen("\"format\":1", "\"format\":9", 1).replacen("\"trials\":[", "\"trials\":[1,", 1);
        assert!(PackedTrials::from_stored(&other).unwrap_err().to_string().contains("format 9"));
    }

    /// Trials that share their strings and layout cost a few words each: what a trial adds is
    /// its values and its fixed part, not its strings again.
    #[test]
    fn shared_strings_are_held_once() {
        let one = PackedTrials::from_trials(&[trial(1, 1)]);
        let many = PackedTrials::from_trials(&(1..=101).map(|id| trial(id, id as usize)).collect::<Vec<_>>());
        let per_trial = (many.memory_bytes() - one.memory_bytes()) / 100;
        assert!(per_trial < 2 * size_of::<PackedTrial>() + 3 * 8 + 2 * 40 + 64, "{per_trial} bytes per trial");
    }
}
