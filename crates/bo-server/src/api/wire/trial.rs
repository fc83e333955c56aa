//! Wire shapes of `Trial`, `Measurement`, the request bodies of the trial methods, list
//! responses and the long-running `Operation`, with conversions to bo-core's types.

use std::collections::BTreeMap;

use bo_core::{Assignment, Measurement, ParamValue, SearchSpace, SpaceError, StudySpec, Trial, TrialState};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};

use super::study::{StudyStateW, StudyW};
use super::{format_duration, format_time, int64, is_default, lenient_f64, parse_duration, wire_enum};

wire_enum! {
    /// `Trial.State`.
    #[schema(as = TrialState)]
    TrialStateW { #[default] STATE_UNSPECIFIED = 0, REQUESTED = 1, ACTIVE = 2, STOPPING = 3, SUCCEEDED = 4, INFEASIBLE = 5 }
}

impl TrialStateW {
    fn from_domain(s: TrialState) -> TrialStateW {
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

/// `Measurement.Metric`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = Metric)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetricW {
    /// The metric's id.
    pub metric_id: String,
    /// Its value; must be finite.
    #[serde(deserialize_with = "lenient_f64")]
    pub value: f64,
}

/// `Measurement`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = Measurement)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MeasurementW {
    /// Training time when measured, e.g. `"3600s"`.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[schema(pattern = r"^([0-9]{1,12}(\.[0-9]{1,9})?s)?$")]
    pub elapsed_duration: String,
    /// Training steps when measured (int64 as a string); must be ≥ 0.
    #[serde(with = "int64", skip_serializing_if = "is_default")]
    #[schema(schema_with = super::count_schema)]
    pub step_count: i64,
    /// The metric values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricW>,
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
    /// Exactly the active parameters.
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
    /// Output only: the client the trial was handed to.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub client_id: String,
    /// Why the trial is infeasible.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub infeasible_reason: String,
    /// Output only (HyperparameterTuningJob only): always empty here.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub custom_job: String,
    /// Output only (HyperparameterTuningJob only): always empty here.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub web_access_uris: BTreeMap<String, String>,
}

impl TrialW {
    /// The wire form of a stored trial of study `study_name`.
    pub fn from_domain(trial: &Trial, study_name: &str, space: &SearchSpace) -> TrialW {
        let parameters = space
            .active_ids(&trial.assignment)
            .into_iter()
            .filter_map(|id| trial.assignment.get(id).map(|v| (id, v)))
            .map(|(id, v)| ParameterW {
                parameter_id: id.to_owned(),
                value: ValueW(match v {
                    ParamValue::Float(x) => serde_json::json!(x),
                    ParamValue::Int(i) => serde_json::json!(i),
                    ParamValue::Categorical(s) => serde_json::json!(s),
                }),
            })
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
            client_id: trial.client_id.clone(),
            infeasible_reason: trial.infeasible_reason.clone(),
            custom_job: String::new(),
            web_access_uris: BTreeMap::new(),
        }
    }
}

fn measurement_to_wire(m: &Measurement) -> MeasurementW {
    MeasurementW {
        elapsed_duration: if m.elapsed_secs == 0.0 { String::new() } else { format_duration(m.elapsed_secs) },
        step_count: m.step_count,
        metrics: m.metrics.iter().map(|(k, v)| MetricW { metric_id: k.clone(), value: *v }).collect(),
    }
}

/// Reads a measurement for `spec`: step count ≥ 0, a valid duration, every metric one of the
/// study's and finite, none twice; with `complete`, every metric of the study present.
pub fn measurement_from_wire(m: MeasurementW, spec: &StudySpec, path: &str, complete: bool) -> Result<Measurement, SpaceError> {
    if m.step_count < 0 {
        return Err(SpaceError::new(format!("{path}.stepCount"), format!("must be ≥ 0, got {}", m.step_count)));
    }
    let elapsed_secs = if m.elapsed_duration.is_empty() {
        0.0
    } else {
        match parse_duration(&m.elapsed_duration) {
            Some(s) if s >= 0.0 => s,
            _ => {
                return Err(SpaceError::new(
                    format!("{path}.elapsedDuration"),
                    format!("{:?} is not a non-negative duration like \"12.5s\"", m.elapsed_duration),
                ));
            }
        }
    };
    let mut metrics = BTreeMap::new();
    for (i, metric) in m.metrics.into_iter().enumerate() {
        let mpath = format!("{path}.metrics[{i}]");
        if spec.metric(&metric.metric_id).is_none() {
            let known: Vec<&str> = spec.metrics.iter().map(|m| m.id.as_str()).collect();
            return Err(SpaceError::new(
                format!("{mpath}.metricId"),
                format!("{} is not a metric of the study; its metrics are {}", super::shown(&metric.metric_id), known.join(", ")),
            ));
        }
        if !metric.value.is_finite() {
            return Err(SpaceError::new(format!("{mpath}.value"), format!("metric values must be finite, got {}", metric.value)));
        }
        if metrics.insert(metric.metric_id.clone(), metric.value).is_some() {
            return Err(SpaceError::new(format!("{mpath}.metricId"), format!("metric {} is given twice", super::shown(&metric.metric_id))));
        }
    }
    if complete && let Some(missing) = spec.metrics.iter().find(|s| !metrics.contains_key(&s.id)) {
        return Err(SpaceError::new(
            format!("{path}.metrics"),
            format!("a final measurement needs every metric of the study; {:?} is missing", missing.id),
        ));
    }
    Ok(Measurement { step_count: m.step_count, elapsed_secs, metrics })
}

/// Reads trial parameters against `space`: each id once, each value of its parameter's type,
/// and together exactly the active parameters of a feasible point.
pub fn assignment_from_wire(params: Vec<ParameterW>, space: &SearchSpace) -> Result<Assignment, SpaceError> {
    let mut a = Assignment::default();
    for (i, p) in params.into_iter().enumerate() {
        let path = format!("parameters[{i}]");
        let Some(spec) = space.param(&p.parameter_id) else {
            return Err(SpaceError::new(
                format!("{path}.parameterId"),
                format!("{} is not a parameter of the study", super::shown(&p.parameter_id)),
            ));
        };
        let value = match &p.value.0 {
            serde_json::Value::Number(n) => n.as_f64().and_then(|x| spec.domain.coerce_number(x)),
            serde_json::Value::String(s) => spec.domain.coerce_str(s),
            _ => None,
        };
        let Some(value) = value else {
            return Err(SpaceError::new(
                format!("{path}.value"),
                format!(
                    "{} is not a value of {} parameter {:?}",
                    super::shown(&p.value.0.to_string()),
                    spec.domain.type_name(),
                    p.parameter_id
                ),
            ));
        };
        if a.0.insert(p.parameter_id.clone(), value).is_some() {
            return Err(SpaceError::new(format!("{path}.parameterId"), format!("parameter {:?} is given twice", p.parameter_id)));
        }
    }
    space.check(&a)?;
    Ok(a)
}

/// `SuggestTrialsRequest`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SuggestTrialsRequest {
    /// How many trials: at least 1, at most the server's `--max-suggestion-count` (default 100).
    #[serde(deserialize_with = "super::int64::deserialize")]
    #[schema(minimum = 1, maximum = 100, required = true)]
    pub suggestion_count: i64,
    /// Required: who evaluates them. The same client asking again while its trials are ACTIVE
    /// gets the same trials back.
    #[schema(min_length = 1, required = true)]
    pub client_id: String,
    /// Not supported: must be empty.
    #[schema(max_items = 0)]
    pub contexts: Vec<serde_json::Value>,
    /// Ignored (Google's client may repeat the study's name).
    #[schema(ignore)]
    pub parent: String,
}

/// `CompleteTrialRequest`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CompleteTrialRequest {
    /// The final measurement; without one, the study's `measurementSelectionType` picks one of
    /// the trial's measurements.
    pub final_measurement: Option<MeasurementW>,
    /// The trial could not be evaluated.
    pub trial_infeasible: bool,
    /// Why, when infeasible.
    pub infeasible_reason: String,
    /// Output-only field that clients may echo back; ignored.
    #[schema(ignore)]
    pub name: String,
}

/// `AddTrialMeasurementRequest`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AddTrialMeasurementRequest {
    /// The measurement.
    pub measurement: Option<MeasurementW>,
    /// The trial's name, which Google's client repeats in the body; ignored.
    #[schema(ignore)]
    pub trial_name: String,
}

/// The empty body of `:stop`, `:checkTrialEarlyStoppingState` and `:listOptimalTrials` (Google's
/// client repeats the resource name in it; ignored).
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct EmptyRequest {
    /// Ignored.
    #[schema(ignore)]
    pub name: String,
    /// Ignored.
    #[schema(ignore)]
    pub trial_name: String,
    /// Ignored.
    #[schema(ignore)]
    pub parent: String,
}

/// `LookupStudyRequest`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LookupStudyRequest {
    /// The study's display name.
    #[schema(min_length = 1, required = true)]
    pub display_name: String,
    /// Ignored (Google's client repeats the parent).
    #[schema(ignore)]
    pub parent: String,
}

/// `ListStudiesResponse`.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListStudiesResponse {
    /// A page of studies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub studies: Vec<StudyW>,
    /// Pass as `pageToken` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next_page_token: String,
}

/// `ListTrialsResponse`.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTrialsResponse {
    /// A page of trials.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<TrialW>,
    /// Pass as `pageToken` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next_page_token: String,
}

/// `ListOptimalTrialsResponse`.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListOptimalTrialsResponse {
    /// The best trial for one metric; the Pareto front for several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optimal_trials: Vec<TrialW>,
}

/// `google.longrunning.Operation`. bo finishes suggests and early-stopping checks before it
/// answers, so `done` is true and `response` is set.
#[derive(Clone, Debug, Default, Serialize, ToSchema)]
#[schema(as = Operation)]
#[serde(rename_all = "camelCase")]
pub struct OperationW {
    /// `…/studies/{study}/operations/{id}` (or `…/trials/{trial}/operations/{id}`).
    pub name: String,
    /// `SuggestTrialsMetadata` or `CheckTrialEarlyStoppingStateMetatdata`, with `@type`.
    pub metadata: serde_json::Value,
    /// Whether finished.
    pub done: bool,
    /// `SuggestTrialsResponse` or `CheckTrialEarlyStoppingStateResponse`, with `@type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<serde_json::Value>,
    /// Why a finished operation failed (google.rpc.Status), instead of a response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<StatusW>,
}

/// google.rpc.Status: the error of a failed operation.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[schema(as = Status)]
pub struct StatusW {
    /// A google.rpc.Code.
    pub code: i32,
    /// What went wrong.
    pub message: String,
}

/// The Operation of a suggest that has not finished: to poll.
pub fn pending_suggest_operation(name: String, client_id: &str, created: &str) -> OperationW {
    OperationW { name, metadata: suggest_metadata(client_id, created, created), done: false, response: None, error: None }
}

/// The Operation of a suggest that failed.
pub fn failed_suggest_operation(name: String, client_id: &str, created: &str, updated: &str, error: StatusW) -> OperationW {
    OperationW { name, metadata: suggest_metadata(client_id, created, updated), done: true, response: None, error: Some(error) }
}

fn suggest_metadata(client_id: &str, created: &str, updated: &str) -> serde_json::Value {
    let mut metadata = serde_json::json!({
        "@type": format!("{TYPE_PREFIX}SuggestTrialsMetadata"),
        "genericMetadata": {"createTime": created, "updateTime": updated},
    });
    if !client_id.is_empty() {
        metadata["clientId"] = client_id.into();
    }
    metadata
}

/// The `@type` prefix of Vertex messages packed in `Any`.
const TYPE_PREFIX: &str = "type.googleapis.com/google.cloud.aiplatform.v1.";

/// The Operation of a suggest call that has finished.
pub fn suggest_operation(name: String, client_id: &str, time: &str, trials: Vec<TrialW>, state: StudyStateW) -> OperationW {
    finished_suggest_operation(name, client_id, time, time, trials, state)
}

/// The Operation of a suggest that finished at `updated`, after it was created at `created`.
pub fn finished_suggest_operation(
    name: String,
    client_id: &str,
    created: &str,
    updated: &str,
    trials: Vec<TrialW>,
    state: StudyStateW,
) -> OperationW {
    let mut response = serde_json::json!({
        "@type": format!("{TYPE_PREFIX}SuggestTrialsResponse"),
        "studyState": state.as_str(),
        "startTime": created,
        "endTime": updated,
    });
    if !trials.is_empty() {
        response["trials"] = serde_json::to_value(trials).unwrap_or_default();
    }
    OperationW { name, metadata: suggest_metadata(client_id, created, updated), done: true, response: Some(response), error: None }
}

/// The Operation of an early-stopping check (the metadata's type name keeps the official
/// proto's spelling, `Metatdata`).
pub fn early_stopping_operation(name: String, study: &str, trial: &str, time: &str, should_stop: bool) -> OperationW {
    let metadata = serde_json::json!({
        "@type": format!("{TYPE_PREFIX}CheckTrialEarlyStoppingStateMetatdata"),
        "genericMetadata": {"createTime": time, "updateTime": time},
        "study": study,
        "trial": trial,
    });
    let mut response = serde_json::json!({"@type": format!("{TYPE_PREFIX}CheckTrialEarlyStoppingStateResponse")});
    if should_stop {
        response["shouldStop"] = true.into();
    }
    OperationW { name, metadata, done: true, response: Some(response), error: None }
}
