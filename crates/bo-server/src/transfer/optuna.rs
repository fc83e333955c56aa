//! Optuna's journal format (`JournalStorage` over `JournalFileBackend`: one JSON operation per
//! line), out and in, so `optuna-dashboard` and Optuna's analysis tools open a bo study, and a
//! study run in Optuna continues in bo.
//!
//! Out: a `CREATE_STUDY` with one direction per metric, the bo study's name and spec as study
//! user attributes, then one `CREATE_TRIAL` per trial carrying everything (Optuna's own
//! `create_new_trial(template_trial=…)` form). SUCCEEDED is `COMPLETE` (`PRUNED` when partial,
//! in a one-metric study), INFEASIBLE `FAIL`,
//! REQUESTED `WAITING`, ACTIVE and STOPPING `RUNNING`. Each trial's distributions are its active
//! parameters' (a conditional space is Optuna's "define-by-run" space): DOUBLE is
//! `FloatDistribution` (`log` for a log scale; a reverse-log scale has no Optuna counterpart and
//! is written linear), INTEGER `IntDistribution`, DISCRETE and CATEGORICAL
//! `CategoricalDistribution`. Intermediate values are the objective of each measurement (the last
//! at a step); bo's trial number, other metrics, client and infeasible reason are user attributes.
//!
//! In: the journal is replayed (create/delete study, create trial, set param, set state and
//! values, set intermediate value, attributes) and the chosen study's finished trials become bo
//! trials of the search space the user supplies: `COMPLETE` SUCCEEDED with its values as the
//! metrics in order, `PRUNED` SUCCEEDED at its last intermediate value and partial (a one-metric
//! study; otherwise INFEASIBLE), `FAIL` INFEASIBLE; RUNNING and WAITING trials are left out and
//! counted.

use std::collections::BTreeMap;

use bo_core::{Domain, Goal, Limits, Measurement, ParamValue, Scale, StudySpec, Trial, TrialState};
use bo_store::{StudyDump, StudyRecord, StudySettings, StudyState};
use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::wire::study::StudySpecW;
use crate::wire::study::study_name;
use crate::wire::trial::{ParameterW, ValueW, assignment_from_wire};

const WORKER: &str = "bo-export";

/// The study attribute holding bo's study spec in a journal bo wrote: import reads it back.
const SPEC_ATTR: &str = "bo:studySpec";

// Optuna's JournalOperation and TrialState codes.
const CREATE_STUDY: i64 = 0;
const DELETE_STUDY: i64 = 1;
const SET_STUDY_USER_ATTR: i64 = 2;
const SET_STUDY_SYSTEM_ATTR: i64 = 3;
const CREATE_TRIAL: i64 = 4;
const SET_TRIAL_PARAM: i64 = 5;
const SET_TRIAL_STATE_VALUES: i64 = 6;
const SET_TRIAL_INTERMEDIATE_VALUE: i64 = 7;
const RUNNING: i64 = 0;
const COMPLETE: i64 = 1;
const PRUNED: i64 = 2;
const FAIL: i64 = 3;
const WAITING: i64 = 4;

fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Micros, false)
}

/// The journal lines of `study` before its trials.
pub fn head(study: &StudyRecord) -> Vec<Value> {
    let spec = &study.spec;
    let directions: Vec<i64> = spec.metrics.iter().map(|m| if m.goal == Goal::Maximize { 2 } else { 1 }).collect();
    vec![
        json!({"op_code": CREATE_STUDY, "worker_id": WORKER, "study_name": study.display_name, "directions": directions}),
        json!({"op_code": SET_STUDY_USER_ATTR, "worker_id": WORKER, "study_id": 0, "user_attr": {"bo:study": study_name(study)}}),
        json!({"op_code": SET_STUDY_USER_ATTR, "worker_id": WORKER, "study_id": 0,
               "user_attr": {SPEC_ATTR: serde_json::to_value(StudySpecW::from_domain(spec, &study.settings)).unwrap_or(Value::Null)}}),
        // What `study.set_metric_names` stores: optuna-dashboard labels the objectives with them.
        json!({"op_code": SET_STUDY_SYSTEM_ATTR, "worker_id": WORKER, "study_id": 0,
               "system_attr": {"study:metric_names": spec.metrics.iter().map(|m| m.id.as_str()).collect::<Vec<_>>()}}),
    ]
}

/// The journal line of trial `t` of a study of `spec`.
pub fn trial_line(spec: &StudySpec, t: &Trial) -> Value {
    let objective = &spec.objective().id;
    let mut distributions = serde_json::Map::new();
    let mut params = serde_json::Map::new();
    for id in spec.space.active_ids(&t.assignment) {
        let (Some(p), Some(v)) = (spec.space.param(id), t.assignment.get(id)) else { continue };
        let (dist, internal) = distribution(&p.domain, p.scale, v);
        distributions.insert(id.to_owned(), Value::String(dist.to_string()));
        params.insert(id.to_owned(), internal);
    }
    let state = match t.state {
        // A partial result of one metric is Optuna's pruned trial, valued at its last value.
        TrialState::Succeeded if t.is_partial() && spec.metrics.len() == 1 => PRUNED,
        TrialState::Succeeded => COMPLETE,
        TrialState::Infeasible => FAIL,
        TrialState::Requested => WAITING,
        TrialState::Active | TrialState::Stopping => RUNNING,
    };
    let finals: Option<Vec<f64>> = match (&t.final_measurement, t.state) {
        (Some(f), TrialState::Succeeded) => spec.metrics.iter().map(|m| f.metrics.get(&m.id).copied()).collect(),
        _ => None,
    };
    let (value, values) = match finals {
        Some(vs) if vs.len() == 1 => (json!(vs[0]), Value::Null),
        Some(vs) => (Value::Null, json!(vs)),
        None => (Value::Null, Value::Null),
    };
    let intermediate: BTreeMap<String, f64> =
        t.measurements.iter().filter_map(|m| m.metrics.get(objective).map(|v| (m.step_count.to_string(), *v))).collect();
    let mut user_attrs = serde_json::Map::new();
    user_attrs.insert("bo:trial".into(), json!(t.id));
    if let Some(f) = &t.final_measurement {
        user_attrs.insert("bo:metrics".into(), json!(f.metrics));
    }
    if !t.client_id.is_empty() {
        user_attrs.insert("bo:clientId".into(), json!(t.client_id));
    }
    if !t.infeasible_reason.is_empty() {
        user_attrs.insert("bo:infeasibleReason".into(), json!(t.infeasible_reason));
    }
    let mut op = json!({
        "op_code": CREATE_TRIAL, "worker_id": WORKER, "study_id": 0,
        "datetime_start": iso(t.start_time_ms), "state": state, "value": value, "values": values,
        "distributions": distributions, "params": params, "user_attrs": user_attrs, "system_attrs": {},
        "intermediate_values": intermediate,
    });
    if let (Some(end), true) = (t.end_time_ms, t.state.is_completed()) {
        op["datetime_complete"] = json!(iso(end));
    }
    op
}

/// Optuna's distribution (as its JSON) and the value's internal representation.
fn distribution(domain: &Domain, scale: Scale, v: &ParamValue) -> (Value, Value) {
    match (domain, v) {
        (Domain::Double { min, max }, ParamValue::Float(x)) => (
            json!({"name": "FloatDistribution", "attributes": {"low": min, "high": max, "log": scale == Scale::Log, "step": null}}),
            json!(x),
        ),
        (Domain::Integer { min, max }, ParamValue::Int(i)) => (
            json!({"name": "IntDistribution", "attributes": {"low": min, "high": max, "log": scale == Scale::Log, "step": 1}}),
            json!(*i as f64),
        ),
        (Domain::Discrete { values }, ParamValue::Float(x)) => {
            let index = values.iter().position(|y| y == x).unwrap_or(0);
            (json!({"name": "CategoricalDistribution", "attributes": {"choices": values}}), json!(index))
        }
        (Domain::Categorical { values }, ParamValue::Categorical(s)) => {
            let index = values.iter().position(|y| y.as_str() == &**s).unwrap_or(0);
            (json!({"name": "CategoricalDistribution", "attributes": {"choices": values}}), json!(index))
        }
        // An assignment checked against its space has the domain's type; nothing else is stored.
        (_, other) => (json!({"name": "CategoricalDistribution", "attributes": {"choices": [format!("{other:?}")]}}), json!(0)),
    }
}

/// A trial as the journal's replay leaves it.
#[derive(Default)]
struct JournalTrial {
    study: i64,
    state: i64,
    /// Parameter → its external value.
    params: BTreeMap<String, Value>,
    value: Option<f64>,
    values: Option<Vec<f64>>,
    intermediate: BTreeMap<i64, f64>,
    start: Option<String>,
    complete: Option<String>,
}

/// What an import made of a journal.
pub struct Imported {
    /// The study to restore.
    pub dump: StudyDump,
    /// Trials left out because they had not finished (RUNNING, WAITING).
    pub unfinished: usize,
}

/// Why a journal cannot be imported.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct JournalError(String);

fn err(m: impl Into<String>) -> JournalError {
    JournalError(m.into())
}

/// Where an imported study goes.
pub struct Target<'a> {
    /// Its project.
    pub project: &'a str,
    /// Its location.
    pub location: &'a str,
    /// Its display name (default: the Optuna study's name).
    pub display_name: Option<&'a str>,
}

/// A study as the journal's replay leaves it.
struct JournalStudy {
    name: String,
    directions: Vec<i64>,
    deleted: bool,
    /// bo's spec, in a journal bo wrote.
    spec: Option<Value>,
}

/// Replays `text` and makes the Optuna study `study` (or the journal's only one) a bo study of
/// `spec` (with its settings) at `target` — by default, the spec a journal bo wrote carries.
pub fn import(
    text: &str,
    study: Option<&str>,
    spec: Option<(StudySpec, StudySettings)>,
    target: Target<'_>,
    now_ms: i64,
    limits: &Limits,
) -> Result<Imported, JournalError> {
    let mut studies: Vec<JournalStudy> = vec![];
    let mut trials: Vec<JournalTrial> = vec![];
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |m: String| err(format!("line {}: {m}", n + 1));
        let op: Value = serde_json::from_str(line).map_err(|e| at(format!("not JSON: {e}")))?;
        let code = op["op_code"].as_i64().ok_or_else(|| at("no op_code".into()))?;
        let trial = |trials: &mut Vec<JournalTrial>| -> Result<usize, JournalError> {
            let id = op["trial_id"].as_i64().ok_or_else(|| at("no trial_id".into()))?;
            usize::try_from(id).ok().filter(|i| *i < trials.len()).ok_or_else(|| at(format!("trial {id} was never created")))
        };
        match code {
            CREATE_STUDY => {
                let name = op["study_name"].as_str().ok_or_else(|| at("no study_name".into()))?.to_owned();
                let directions = op["directions"].as_array().map(|d| d.iter().filter_map(Value::as_i64).collect()).unwrap_or_default();
                studies.push(JournalStudy { name, directions, deleted: false, spec: None });
            }
            SET_STUDY_USER_ATTR => {
                let carried = op["user_attr"].get(SPEC_ATTR).cloned();
                if let (Some(spec), Some(s)) =
                    (carried, op["study_id"].as_i64().and_then(|i| usize::try_from(i).ok()).and_then(|i| studies.get_mut(i)))
                {
                    s.spec = Some(spec);
                }
            }
            DELETE_STUDY => {
                if let Some(s) = op["study_id"].as_i64().and_then(|i| usize::try_from(i).ok()).and_then(|i| studies.get_mut(i)) {
                    s.deleted = true;
                }
            }
            CREATE_TRIAL => {
                let mut t = JournalTrial {
                    study: op["study_id"].as_i64().ok_or_else(|| at("no study_id".into()))?,
                    state: op.get("state").and_then(Value::as_i64).unwrap_or(RUNNING),
                    value: op.get("value").and_then(Value::as_f64),
                    values: op.get("values").and_then(Value::as_array).map(|v| v.iter().filter_map(Value::as_f64).collect()),
                    start: op.get("datetime_start").and_then(Value::as_str).map(str::to_owned),
                    complete: op.get("datetime_complete").and_then(Value::as_str).map(str::to_owned),
                    ..Default::default()
                };
                if let (Some(dists), Some(params)) =
                    (op.get("distributions").and_then(Value::as_object), op.get("params").and_then(Value::as_object))
                {
                    for (name, internal) in params {
                        let dist = dists.get(name).ok_or_else(|| at(format!("parameter {name:?} has no distribution")))?;
                        t.params.insert(name.clone(), external(dist, internal).map_err(|m| at(format!("parameter {name:?}: {m}")))?);
                    }
                }
                if let Some(iv) = op.get("intermediate_values").and_then(Value::as_object) {
                    for (step, v) in iv {
                        if let (Ok(step), Some(v)) = (step.parse::<i64>(), v.as_f64()) {
                            t.intermediate.insert(step, v);
                        }
                    }
                }
                trials.push(t);
            }
            SET_TRIAL_PARAM => {
                let i = trial(&mut trials)?;
                let name = op["param_name"].as_str().ok_or_else(|| at("no param_name".into()))?.to_owned();
                let v = external(&op["distribution"], &op["param_value_internal"]).map_err(|m| at(format!("parameter {name:?}: {m}")))?;
                trials[i].params.insert(name, v);
            }
            SET_TRIAL_STATE_VALUES => {
                let i = trial(&mut trials)?;
                let t = &mut trials[i];
                t.state = op["state"].as_i64().ok_or_else(|| at("no state".into()))?;
                if let Some(vs) = op.get("values").and_then(Value::as_array) {
                    t.values = Some(vs.iter().filter_map(Value::as_f64).collect());
                }
                if let Some(s) = op.get("datetime_start").and_then(Value::as_str) {
                    t.start = Some(s.to_owned());
                }
                if let Some(s) = op.get("datetime_complete").and_then(Value::as_str) {
                    t.complete = Some(s.to_owned());
                }
            }
            SET_TRIAL_INTERMEDIATE_VALUE => {
                let i = trial(&mut trials)?;
                if let (Some(step), Some(v)) = (op["step"].as_i64(), op["intermediate_value"].as_f64()) {
                    trials[i].intermediate.insert(step, v);
                }
            }
            _ => {} // attributes and discards change nothing bo keeps
        }
    }
    let live: Vec<(usize, &JournalStudy)> = studies.iter().enumerate().filter(|(_, s)| !s.deleted).collect();
    let (index, JournalStudy { name, directions, spec: carried, .. }) = match study {
        Some(want) => live
            .into_iter()
            .find(|(_, s)| s.name == want)
            .ok_or_else(|| err(format!("the journal has no study {want:?}; it has {}", names(&studies))))?,
        None if live.len() == 1 => live[0],
        None => return Err(err(format!("the journal has {} studies ({}): name one with --optuna-study", live.len(), names(&studies)))),
    };
    let (spec, settings) = match (spec, carried) {
        (Some(given), _) => given,
        (None, Some(carried)) => serde_json::from_value::<StudySpecW>(carried.clone())
            .map_err(|e| format!("{e}"))
            .and_then(|w| w.into_domain(limits).map_err(|e| format!("{}: {}", e.path, e.reason)))
            .map_err(|m| err(format!("the study spec bo wrote in the journal ({SPEC_ATTR}) cannot be read: {m}")))?,
        (None, None) => {
            return Err(err(format!(
                "Optuna study {name:?} was not written by bo: give its search space and metrics with --spec FILE (a Vertex StudySpec, a Study, or bo's JSON export)"
            )));
        }
    };
    if directions.len() != spec.metrics.len() {
        return Err(err(format!(
            "Optuna study {name:?} has {} objective(s); the spec has {} metric(s)",
            directions.len(),
            spec.metrics.len()
        )));
    }
    for (k, (d, m)) in directions.iter().zip(&spec.metrics).enumerate() {
        let want = if m.goal == Goal::Maximize { 2 } else { 1 };
        if *d != want {
            return Err(err(format!(
                "objective {k} of {name:?} is {}, but metric {:?} is {:?}",
                if *d == 2 { "maximised" } else { "minimised" },
                m.id,
                m.goal
            )));
        }
    }
    let objective = spec.objective().id.clone();
    let mut out: Vec<Trial> = vec![];
    let mut unfinished = 0;
    for (n, t) in trials.iter().filter(|t| t.study == index as i64).enumerate() {
        if t.state == RUNNING || t.state == WAITING {
            unfinished += 1;
            continue;
        }
        let at = |m: String| err(format!("Optuna trial {n}: {m}"));
        let params = t.params.iter().map(|(k, v)| ParameterW { parameter_id: k.clone(), value: ValueW(v.clone()) }).collect();
        let assignment = assignment_from_wire(params, &spec).map_err(|e| at(format!("{}: {}", e.path, e.reason)))?;
        let measurements: Vec<Measurement> = t
            .intermediate
            .iter()
            .map(|(step, v)| Measurement { step_count: *step, elapsed_secs: 0.0, metrics: BTreeMap::from([(objective.clone(), *v)]) })
            .collect();
        limits.check(bo_core::Limit::Measurements, measurements.len()).map_err(|e| at(format!("intermediate values: {e}")))?;
        let last_step = t.intermediate.keys().last().copied().unwrap_or(0);
        let (state, final_measurement, reason) = match t.state {
            COMPLETE => {
                let values = t.values.clone().or_else(|| t.value.map(|v| vec![v])).ok_or_else(|| at("COMPLETE without values".into()))?;
                if values.len() != spec.metrics.len() || values.iter().any(|v| !v.is_finite()) {
                    return Err(at(format!("values {values:?} are not {} finite number(s)", spec.metrics.len())));
                }
                let metrics = spec.metrics.iter().map(|m| m.id.clone()).zip(values).collect();
                (TrialState::Succeeded, Some(Measurement { step_count: last_step, elapsed_secs: 0.0, metrics }), String::new())
            }
            PRUNED => match t.intermediate.iter().last() {
                Some((step, v)) if spec.metrics.len() == 1 && v.is_finite() => (
                    TrialState::Succeeded,
                    Some(Measurement { step_count: *step, elapsed_secs: 0.0, metrics: BTreeMap::from([(objective.clone(), *v)]) }),
                    String::new(),
                ),
                _ => (TrialState::Infeasible, None, "pruned in Optuna".to_owned()),
            },
            FAIL => (TrialState::Infeasible, None, "failed in Optuna".to_owned()),
            other => return Err(at(format!("unknown trial state {other}"))),
        };
        let start = t.start.as_deref().map(|s| parse_time(s).map_err(&at)).transpose()?.unwrap_or(now_ms);
        let end = t.complete.as_deref().map(|s| parse_time(s).map_err(&at)).transpose()?.unwrap_or(start);
        out.push(Trial {
            id: out.len() as i64 + 1,
            state,
            assignment,
            measurements,
            final_measurement,
            client_id: String::new(),
            infeasible_reason: reason,
            start_time_ms: start,
            end_time_ms: Some(end),
            // A pruned trial was stopped: its result is partial.
            stop_time_ms: (t.state == PRUNED && state == TrialState::Succeeded).then_some(end),
            ..Trial::new(out.len() as i64 + 1, bo_core::Assignment::default())
        });
    }
    let display_name = target.display_name.unwrap_or(name).to_owned();
    limits.check_text(&display_name, bo_core::limits::Text::Name).map_err(|e| err(format!("display name: {e}")))?;
    let study = StudyRecord {
        id: 0,
        number: 0,
        project: target.project.to_owned(),
        location: target.location.to_owned(),
        display_name,
        spec,
        settings,
        state: StudyState::Active,
        inactive_reason: String::new(),
        create_time_ms: out.iter().map(|t| t.start_time_ms).min().unwrap_or(now_ms),
        data_version: out.len() as i64,
    };
    let next_trial_id = out.len() as i64 + 1;
    Ok(Imported { dump: StudyDump { study, trials: out, next_trial_id, model: None }, unfinished })
}

fn names(studies: &[JournalStudy]) -> String {
    studies.iter().filter(|s| !s.deleted).map(|s| format!("{:?}", s.name)).collect::<Vec<_>>().join(", ")
}

/// A parameter's external value from its distribution (a JSON string, as Optuna writes it, or
/// an object) and internal value.
fn external(dist: &Value, internal: &Value) -> Result<Value, String> {
    let parsed;
    let dist = match dist {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).map_err(|e| format!("distribution is not JSON: {e}"))?;
            &parsed
        }
        other => other,
    };
    let name = dist["name"].as_str().ok_or("distribution has no name")?;
    let x = internal.as_f64().ok_or("internal value is not a number")?;
    Ok(match name {
        "CategoricalDistribution" => {
            let choices = dist["attributes"]["choices"].as_array().ok_or("categorical distribution has no choices")?;
            let choice = choices.get(x as usize).filter(|_| x >= 0.0 && x.fract() == 0.0).ok_or(format!("choice {x} out of range"))?;
            match choice {
                // Python's str(): bo's categorical values are strings.
                Value::Bool(b) => Value::String(if *b { "True" } else { "False" }.to_owned()),
                Value::Null => Value::String("None".to_owned()),
                other => other.clone(),
            }
        }
        "IntDistribution" | "IntUniformDistribution" | "IntLogUniformDistribution" => json!(x.round() as i64),
        _ => json!(x),
    })
}

/// Python's `isoformat()`, with an offset or without (then UTC), to milliseconds.
fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
        .map(|t| t.and_utc().timestamp_millis())
        .map_err(|e| format!("{s:?} is not an ISO 8601 time: {e}"))
}
