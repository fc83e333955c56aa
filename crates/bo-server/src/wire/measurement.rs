//! Wire shape of `Measurement` and its metrics, with conversions to bo-core's `Measurement`
//! (checked against the study's metrics).

use std::collections::BTreeMap;

use bo_core::{FieldError, Measurement, StudySpec};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{format_duration, int64, is_default, lenient_f64, parse_duration};

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

pub(super) fn measurement_to_wire(m: &Measurement) -> MeasurementW {
    MeasurementW {
        elapsed_duration: if m.elapsed_secs == 0.0 { String::new() } else { format_duration(m.elapsed_secs) },
        step_count: m.step_count,
        metrics: m.metrics.iter().map(|(k, v)| MetricW { metric_id: k.clone(), value: *v }).collect(),
    }
}

/// Reads a measurement for `spec`: step count ≥ 0, a valid duration, every metric one of the
/// study's and finite, none twice; with `complete`, every metric of the study present.
pub fn measurement_from_wire(m: MeasurementW, spec: &StudySpec, path: &str, complete: bool) -> Result<Measurement, FieldError> {
    if m.step_count < 0 {
        return Err(FieldError::new(format!("{path}.stepCount"), format!("must be ≥ 0, got {}", m.step_count)));
    }
    let elapsed_secs = if m.elapsed_duration.is_empty() {
        0.0
    } else {
        match parse_duration(&m.elapsed_duration) {
            Some(s) if s >= 0.0 => s,
            _ => {
                return Err(FieldError::new(
                    format!("{path}.elapsedDuration"),
                    format!(
                        "{} is not a non-negative duration like \"12.5s\" (at most {}s, 9 fractional digits)",
                        super::shown(&m.elapsed_duration),
                        super::MAX_DURATION_SECS
                    ),
                ));
            }
        }
    };
    let mut metrics = BTreeMap::new();
    for (i, metric) in m.metrics.into_iter().enumerate() {
        let mpath = format!("{path}.metrics[{i}]");
        if spec.metric(&metric.metric_id).is_none() {
            let known: Vec<&str> = spec.metrics.iter().map(|m| m.id.as_str()).collect();
            return Err(FieldError::new(
                format!("{mpath}.metricId"),
                format!("{} is not a metric of the study; its metrics are {}", super::shown(&metric.metric_id), known.join(", ")),
            ));
        }
        if !metric.value.is_finite() {
            return Err(FieldError::new(format!("{mpath}.value"), format!("metric values must be finite, got {}", metric.value)));
        }
        if metrics.insert(metric.metric_id.clone(), metric.value).is_some() {
            return Err(FieldError::new(format!("{mpath}.metricId"), format!("metric {} is given twice", super::shown(&metric.metric_id))));
        }
    }
    if complete && let Some(missing) = spec.metrics.iter().find(|s| !metrics.contains_key(&s.id)) {
        return Err(FieldError::new(
            format!("{path}.metrics"),
            format!("a final measurement needs every metric of the study; {:?} is missing", missing.id),
        ));
    }
    Ok(Measurement { step_count: m.step_count, elapsed_secs, metrics })
}
