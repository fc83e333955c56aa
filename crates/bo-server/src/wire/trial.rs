//! Wire shape of `Trial` (its state and parameters), with conversions to bo-core's `Trial` and
//! `Assignment`.

use std::collections::BTreeMap;

use bo_core::{Assignment, FieldError, ParamValue, SearchSpace, Trial, TrialState};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};

use super::measurement::{MeasurementW, measurement_to_wire};
use super::{format_time, is_default, wire_enum};

wire_enum! {
    /// `Trial.State`.
    #[schema(as = TrialState)]
    TrialStateW { #[default] STATE_UNSPECIFIED = 0, REQUESTED = 1, ACTIVE = 2, STOPPING = 3, SUCCEEDED = 4, INFEASIBLE = 5 }
}

impl TrialStateW {
    pub(crate) fn from_domain(s: TrialState) -> TrialStateW {
        match s {
            TrialState::Requested => TrialStateW::REQUESTED,
            TrialState::Active => TrialStateW::ACTIVE,
            TrialState::Stopping => TrialStateW::STOPPING,
            TrialState::Succeeded => TrialStateW::SUCCEEDED,
            TrialState::Infeasible => TrialStateW::INFEASIBLE,
        }
    }
}

/// A parameter's value: a number (DOUBLE, INTEGER, DISCRETE) or a string (CATEGORICAL).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ValueW(pub serde_json::Value);

impl utoipa::PartialSchema for ValueW {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .item(ObjectBuilder::new().schema_type(Type::String))
            .description(Some("a number for DOUBLE, INTEGER and DISCRETE parameters, a string for CATEGORICAL ones"))
            .into()
    }
}

impl ToSchema for ValueW {
    fn name() -> std::borrow::Cow<'static, str> {
        "Value".into()
    }
}

/// `Trial.Parameter`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = Parameter)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ParameterW {
    /// The parameter's id.
    pub parameter_id: String,
    /// Its value.
    pub value: ValueW,
}

/// A trial (Vertex `Trial`). On input (`POST …/trials`) the output-only fields are ignored.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = Trial)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TrialW {
    /// Output only: `projects/…/studies/{study}/trials/{trial}`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Output only: the trial number.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The state; on input only INFEASIBLE (with `infeasibleReason`) means anything.
    #[serde(skip_serializing_if = "is_default")]
    pub state: TrialStateW,
    /// Exactly the active parameters — in a study with `openSearchSpace`, those the trial was
    /// given: a parameter added to the space after the trial ran is inactive in it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<ParameterW>,
    /// The final measurement of a SUCCEEDED trial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_measurement: Option<MeasurementW>,
    /// Intermediate measurements in the order reported.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<MeasurementW>,
    /// Output only, RFC 3339.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub start_time: String,
    /// Output only, RFC 3339; set once completed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub end_time: String,
    /// Output only (bo extension), RFC 3339: when the trial was asked to stop, by the study's
    /// stopping rule or its client. A trial completed after it is partial: the designers learn
    /// its predicted final value, and "best" ranks it only while no trial was trained in full.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stop_time: String,
    /// Output only (bo extension): under `successiveHalvingStoppingSpec.resume`, the paused
    /// trial this one resumes (its name). The trial starts with that trial's parameters and
    /// measurements; its client loads the checkpoint it saved for that trial and trains on.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resumed_from: String,
    /// Output only (bo extension), with `resumedFrom`: the position of the last measurement
    /// taken over (its step count, or elapsed seconds under `useElapsedDuration`), where
    /// training goes on from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumed_at: Option<f64>,
    /// Output only: the client the trial was handed to.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub client_id: String,
    /// bo extension: the client's own names for the trial (such as Optuna's trial number,
    /// `optuna.trial_number`), shown by the dashboard and never read by a designer; at most 16,
    /// keys without whitespace. Set on `POST …/trials` or by `SuggestTrialsRequest.labels`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Output only (bo extension), int64 as a string: the revision of the study's search space
    /// when the trial's parameters were last given (`openSearchSpace`); absent while 0.
    #[serde(with = "super::int64", skip_serializing_if = "is_default")]
    #[schema(schema_with = super::revision_schema)]
    pub search_space_revision: i64,
    /// Why the trial is infeasible.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub infeasible_reason: String,
    /// Output only (HyperparameterTuningJob only): always empty here.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub custom_job: String,
    /// Output only (HyperparameterTuningJob only): always empty here.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub web_access_uris: BTreeMap<String, String>,
    /// Output only (bo extension), in the answer to `:addTrialMeasurement` with
    /// `checkEarlyStopping`: what the study's stopping rule says of the trial now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_stopping: Option<EarlyStoppingAnswerW>,
}

/// What the study's stopping rule says of a trial at its newest measurement (bo extension): the
/// decision, and under the median rule its thresholds at the next positions, so a client can
/// decide at each step until the next answer without asking (Optuna's `should_prune`): at a
/// position `s` the rule judges (past `minStepCount`, on an `intervalSteps` boundary), the trial
/// stops when its best objective value so far is strictly worse than the threshold of the last
/// listed position at or before `s` (with `thresholdsPointwise`, of `s` itself) — for `s` up to
/// `thresholdsThrough`, or any `s` without it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
#[schema(as = EarlyStoppingAnswer)]
pub struct EarlyStoppingAnswerW {
    /// Whether the trial should stop now (advice: the client stops it with `:stop`).
    pub should_stop: bool,
    /// Why, in a sentence.
    pub reason: String,
    /// The median rule's thresholds from the trial's newest position on, in order; a `value`
    /// absent means too few completed trials reached the position (the trial goes on there).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub median_thresholds: Vec<ThresholdW>,
    /// The last position `medianThresholds` hold through; absent: the last one holds for good.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thresholds_through: Option<f64>,
    /// Under `medianOf: VALUE_AT_POSITION`: each threshold holds at its position only; at any
    /// other position no completed trial was measured, and the trial goes on there.
    #[serde(skip_serializing_if = "is_default")]
    pub thresholds_pointwise: bool,
}

/// One of the median rule's thresholds: from `position` on, until the next listed one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default)]
#[schema(as = StoppingThreshold)]
pub struct ThresholdW {
    /// A step (or elapsed seconds, under `useElapsedDuration`).
    pub position: f64,
    /// The median of the completed trials' running averages there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

/// A parameter value as JSON: a number, or a category's name.
pub(crate) fn value_to_wire(v: &ParamValue) -> serde_json::Value {
    match v {
        ParamValue::Float(x) => serde_json::json!(x),
        ParamValue::Int(i) => serde_json::json!(i),
        ParamValue::Categorical(s) => serde_json::json!(s),
    }
}

impl TrialW {
    /// The wire form of a stored trial of study `study_name`.
    pub fn from_domain(trial: &Trial, study_name: &str, space: &SearchSpace) -> TrialW {
        let parameters = space
            .active_ids(&trial.assignment)
            .into_iter()
            .filter_map(|id| trial.assignment.get(id).map(|v| (id, v)))
            .map(|(id, v)| ParameterW { parameter_id: id.to_owned(), value: ValueW(value_to_wire(v)) })
            .collect();
        TrialW {
            name: format!("{study_name}/trials/{}", trial.id),
            id: trial.id.to_string(),
            state: TrialStateW::from_domain(trial.state),
            parameters,
            final_measurement: trial.final_measurement.as_ref().map(measurement_to_wire),
            measurements: trial.measurements.iter().map(measurement_to_wire).collect(),
            start_time: format_time(trial.start_time_ms),
            end_time: trial.end_time_ms.map(format_time).unwrap_or_default(),
            stop_time: trial.stop_time_ms.map(format_time).unwrap_or_default(),
            resumed_from: trial.resumed.map(|r| format!("{study_name}/trials/{}", r.from)).unwrap_or_default(),
            resumed_at: trial.resumed.map(|r| r.at),
            client_id: trial.client_id.clone(),
            labels: trial.labels.clone(),
            search_space_revision: trial.space_revision,
            infeasible_reason: trial.infeasible_reason.clone(),
            custom_job: String::new(),
            web_access_uris: BTreeMap::new(),
            early_stopping: None,
        }
    }
}

/// Reads trial parameters against `spec`'s space: each id once, each value of its parameter's
/// type, and together exactly the active parameters of a feasible point — or, in an open study,
/// active parameters only (one added later is inactive in the trial).
pub fn assignment_from_wire(params: Vec<ParameterW>, spec: &bo_core::StudySpec) -> Result<Assignment, FieldError> {
    let a = parameters_from_wire(params, &spec.space)?;
    spec.check_assignment(&a)?;
    Ok(a)
}

/// Reads one parameter's value against its spec, as a trial's parameter is read: `Err` says why
/// not (the caller adds the field).
pub fn value_from_wire(value: &ValueW, spec: &bo_core::ParamSpec) -> Result<ParamValue, String> {
    let read = match &value.0 {
        serde_json::Value::Number(n) => n.as_f64().and_then(|x| spec.domain.coerce_number(x)),
        serde_json::Value::String(s) => spec.domain.coerce_str(s),
        _ => None,
    };
    let Some(read) = read else {
        return Err(format!("{} is not a value of {} parameter {:?}", super::shown_value(&value.0), spec.domain.type_name(), spec.id));
    };
    if !spec.domain.contains(&read) {
        return Err(format!("{read} is outside the {} domain of parameter {:?}", spec.domain.type_name(), spec.id));
    }
    Ok(read)
}

/// Reads a context's parameters against `space`: each id once, each value of its parameter's
/// type, and a conditional parameter only under its parent's activating value
/// ([`SearchSpace::check_context`]).
pub fn context_from_wire(params: Vec<ParameterW>, space: &SearchSpace) -> Result<Assignment, FieldError> {
    let a = parameters_from_wire(params, space)?;
    space.check_context(&a)?;
    Ok(a)
}

fn parameters_from_wire(params: Vec<ParameterW>, space: &SearchSpace) -> Result<Assignment, FieldError> {
    let mut a = Assignment::default();
    for (i, p) in params.into_iter().enumerate() {
        let path = format!("parameters[{i}]");
        let Some(spec) = space.param(&p.parameter_id) else {
            return Err(FieldError::new(
                format!("{path}.parameterId"),
                format!("{} is not a parameter of the study", super::shown(&p.parameter_id)),
            ));
        };
        let value = value_from_wire(&p.value, spec).map_err(|why| FieldError::new(format!("{path}.value"), why))?;
        if a.insert(p.parameter_id.clone(), value).is_some() {
            return Err(FieldError::new(format!("{path}.parameterId"), format!("parameter {:?} is given twice", p.parameter_id)));
        }
    }
    Ok(a)
}
