//! Wire shape of bo's columnar trials read (`GET …/trials:columns`, a bo extension for live
//! views): one array per field, a trial per index, so a study of 100,000 trials crosses the wire
//! as a few arrays of numbers instead of 100,000 objects.

use std::collections::{BTreeMap, HashSet};

use bo_core::{SearchSpace, StudySpec, Trial};
use bo_store::Curve;
use serde::Serialize;
use utoipa::ToSchema;

use super::study::StudyStateW;
use super::trial::{TrialStateW, ValueW, value_to_wire};

/// The trials of a study changed after a cursor, as columns (bo extension).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TrialColumns)]
pub struct TrialColumnsW {
    /// The study's state now.
    pub study_state: StudyStateW,
    /// The study's data version now (it grows with every completed, added or deleted trial).
    pub data_version: i64,
    /// The cursor was from before a trial was deleted: these columns start from the first trial,
    /// and the reader drops what it held.
    pub reset: bool,
    /// The page was cut short (by `pageSize` or its size budget): ask again with `cursor` now.
    pub more: bool,
    /// Where the next read starts: pass it as `after`.
    pub cursor: String,
    /// Trial ids, in the order the trials were last changed (a trial changed again appears again
    /// in a later read: the later one holds).
    pub ids: Vec<i64>,
    /// Trial states.
    pub states: Vec<TrialStateW>,
    /// Start times, milliseconds since the epoch.
    pub start_times: Vec<i64>,
    /// End times, milliseconds since the epoch; null while running.
    pub end_times: Vec<Option<i64>>,
    /// When each trial was asked to stop (by its client or the early-stopping rule),
    /// milliseconds since the epoch; null if never.
    pub stop_times: Vec<Option<i64>>,
    /// Each trial's labels (bo extension), null where it has none.
    #[schema(value_type = Vec<Option<BTreeMap<String, String>>>)]
    pub labels: Vec<Option<BTreeMap<String, String>>>,
    /// The final measurement's value of each of the study's metrics, null where there is none.
    pub metrics: Vec<MetricColumnW>,
    /// Each parameter of the space, in the space's order: its value where active, else null.
    pub parameters: Vec<ParameterColumnW>,
}

/// One metric's final values.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = MetricColumn)]
pub struct MetricColumnW {
    /// The metric's id.
    pub metric_id: String,
    /// Its value per trial, null where the trial has no final measurement of it.
    pub values: Vec<Option<f64>>,
}

/// One parameter's values.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ParameterColumn)]
pub struct ParameterColumnW {
    /// The parameter's id.
    pub parameter_id: String,
    /// Its value per trial (a number, or a category's name), null where inactive.
    #[schema(value_type = Vec<Option<ValueW>>)]
    pub values: Vec<serde_json::Value>,
}

/// Where a read of the columns stands, besides its trials.
pub struct ColumnsHead {
    /// The study's state now.
    pub study_state: StudyStateW,
    /// The study's data version now.
    pub data_version: i64,
    /// Whether the reader starts over.
    pub reset: bool,
    /// Whether more changes follow now.
    pub more: bool,
    /// Where the next read starts.
    pub cursor: String,
}

impl TrialColumnsW {
    /// The columns of `trials` (with when each was asked to stop) of a study of `spec`.
    pub fn new(head: ColumnsHead, trials: &[Trial], spec: &StudySpec) -> TrialColumnsW {
        let ColumnsHead { study_state, data_version, reset, more, cursor } = head;
        TrialColumnsW {
            study_state,
            data_version,
            reset,
            more,
            cursor,
            ids: trials.iter().map(|t| t.id).collect(),
            states: trials.iter().map(|t| TrialStateW::from_domain(t.state)).collect(),
            start_times: trials.iter().map(|t| t.start_time_ms).collect(),
            end_times: trials.iter().map(|t| t.end_time_ms).collect(),
            stop_times: trials.iter().map(|t| t.stop_time_ms).collect(),
            labels: trials.iter().map(|t| (!t.labels.is_empty()).then(|| t.labels.clone())).collect(),
            metrics: spec
                .metrics
                .iter()
                .map(|m| MetricColumnW {
                    metric_id: m.id.clone(),
                    values: trials.iter().map(|t| t.final_measurement.as_ref().and_then(|f| f.metrics.get(&m.id).copied())).collect(),
                })
                .collect(),
            parameters: parameter_columns(trials, &spec.space),
        }
    }
}

fn parameter_columns(trials: &[Trial], space: &SearchSpace) -> Vec<ParameterColumnW> {
    let params = space.params();
    let mut columns: Vec<ParameterColumnW> =
        params.iter().map(|p| ParameterColumnW { parameter_id: p.id.clone(), values: Vec::with_capacity(trials.len()) }).collect();
    for t in trials {
        let active: HashSet<&str> = space.active_ids(&t.assignment).into_iter().collect();
        for (column, p) in columns.iter_mut().zip(&params) {
            let value = active.contains(p.id.as_str()).then(|| t.assignment.get(&p.id)).flatten();
            column.values.push(value.map_or(serde_json::Value::Null, value_to_wire));
        }
    }
    columns
}

/// Learning curves of a study's trials for one metric (bo extension).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TrialCurves)]
pub struct TrialCurvesW {
    /// The metric drawn.
    pub metric_id: String,
    /// The trials, ACTIVE and STOPPING first, then the newest others.
    pub curves: Vec<CurveW>,
    /// Curves within the read's `limit` left out to keep the answer within its points (the
    /// oldest); absent when none were.
    #[serde(skip_serializing_if = "super::is_default")]
    pub omitted: usize,
}

/// One trial's learning curve.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Curve)]
pub struct CurveW {
    /// The trial's id.
    pub trial_id: i64,
    /// Its state.
    pub state: TrialStateW,
    /// When it was asked to stop (by its client or the early-stopping rule), milliseconds since
    /// the epoch; absent if never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_time: Option<i64>,
    /// When it ended, milliseconds since the epoch; absent while running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<i64>,
    /// Each measurement's step count.
    pub steps: Vec<i64>,
    /// Each measurement's elapsed seconds.
    pub elapsed_secs: Vec<f64>,
    /// Each measurement's value of the metric, null where it was not measured.
    pub values: Vec<Option<f64>>,
}

impl CurveW {
    /// The wire form of a stored curve.
    pub fn new(c: &Curve) -> CurveW {
        CurveW {
            trial_id: c.trial_id,
            state: TrialStateW::from_domain(c.state),
            stop_time: c.stopped_ms,
            end_time: c.end_time_ms,
            steps: c.points.iter().map(|p| p.step_count).collect(),
            elapsed_secs: c.points.iter().map(|p| p.elapsed_secs).collect(),
            values: c.points.iter().map(|p| p.value).collect(),
        }
    }
}

/// A study's optimisation history in buckets of consecutive trial ids (bo extension): at most
/// `maxPoints` of them, each trial its own bucket when the study is no larger.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TrialHistory)]
pub struct TrialHistoryW {
    /// The metric (the study's objective: its first metric without a safety constraint).
    pub metric_id: String,
    /// Trial ids per bucket (1: every trial is its own).
    pub bucket_width: i64,
    /// Each bucket's first trial id.
    pub first_ids: Vec<i64>,
    /// Each bucket's last trial id.
    pub last_ids: Vec<i64>,
    /// The lowest final value among each bucket's SUCCEEDED trials (null with none).
    pub min: Vec<Option<f64>>,
    /// The highest.
    pub max: Vec<Option<f64>>,
    /// SUCCEEDED trials with a value, per bucket.
    pub succeeded: Vec<i64>,
    /// INFEASIBLE trials per bucket.
    pub infeasible: Vec<i64>,
    /// Trials asked to stop per bucket.
    pub stopped: Vec<i64>,
    /// For a study with safety metrics: unsafe SUCCEEDED trials per bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsafe_trials: Option<Vec<i64>>,
    /// For a study with safety metrics: the lowest final value among each bucket's safe
    /// SUCCEEDED trials (what a best so far may be; null with none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_min: Option<Vec<Option<f64>>>,
    /// The highest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_max: Option<Vec<Option<f64>>>,
}
