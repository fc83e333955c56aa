//! The export document: a study whole as Vertex-shaped JSON — the `Study` as `GET` returns it,
//! every `Trial` as `ListTrials` returns it, plus what only the database knows (the next trial
//! id, the data version, the model's fitted state). `trials` is the document's last field, so a
//! writer streams it after the rest (`super::Encoder`) and an upload sends the rest first.
//! Reading one back checks it as the API checks a request (the spec against the server's
//! limits, each trial's parameters against the space, each measurement against the metrics)
//! and names the first bad field.

use bo_core::limits::MAX_COUNTER;
use bo_core::{Limits, Measurement, ModelState, Trial, TrialState};
use bo_store::{StoredModel, StudyDump, StudyHead, StudyRecord, StudyState};
use chrono::DateTime;
use serde::{Deserialize, Serialize};

use crate::wire::measurement::{MeasurementW, measurement_from_wire};
use crate::wire::study::{StudyStateW, StudyW, study_to_wire};
use crate::wire::trial::{TrialStateW, TrialW, assignment_from_wire};
use crate::wire::{format_time, int64};

/// The version of the format; a reader refuses any other.
pub const FORMAT: i64 = 1;

/// A study, exported.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StudyExport {
    /// [`FORMAT`].
    pub bo_export_format: i64,
    /// When it was written, RFC 3339.
    pub export_time: String,
    /// The study, as `GET …/studies/{study}` returns it.
    pub study: StudyW,
    /// The next trial id (ids of deleted trials are never reused).
    #[serde(with = "int64")]
    pub next_trial_id: i64,
    /// The study's data version (the model's `dataVersion` is compared with it).
    #[serde(with = "int64")]
    pub data_version: i64,
    /// The model's fitted state, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelExport>,
    /// Every trial in id order, as `ListTrials` returns them; the last field (an upload's
    /// opening may leave it out and send the trials in parts).
    #[serde(default)]
    pub trials: Vec<TrialW>,
}

/// A model's fitted state, as the designer stored it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelExport {
    /// The study's data version it was fitted on.
    #[serde(with = "int64")]
    pub data_version: i64,
    /// The revision of an open study's space it was fitted for (absent: 0).
    #[serde(with = "int64", default, skip_serializing_if = "is_zero")]
    pub space_revision: i64,
    /// When, RFC 3339.
    pub fit_time: String,
    /// The designer's state (hyperparameters, learned structure), opaque here.
    pub state: serde_json::Value,
}

/// Why a document cannot be imported: the field and the reason.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DocumentError {
    /// Where, e.g. `trials[3].parameters[0].value`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn bad(path: impl Into<String>, message: impl Into<String>) -> DocumentError {
    DocumentError { path: path.into(), message: message.into() }
}

impl StudyExport {
    /// The document of a study's head, its `trials` empty.
    pub fn head(head: &StudyHead, now_ms: i64) -> StudyExport {
        StudyExport {
            bo_export_format: FORMAT,
            export_time: format_time(now_ms),
            study: study_to_wire(&head.study),
            next_trial_id: head.next_trial_id,
            data_version: head.study.data_version,
            model: head.model.as_ref().map(|m| ModelExport {
                data_version: m.data_version,
                space_revision: m.space_revision,
                fit_time: format_time(m.fitted_at_ms),
                state: m.state.0.clone(),
            }),
            trials: Vec::new(),
        }
    }

    /// The study this document describes, checked; its `id` and `number` are left 0 (the
    /// database gives new ones).
    pub fn into_dump(self, limits: &Limits) -> Result<StudyDump, DocumentError> {
        let (head, wire) = self.into_head(limits)?;
        let mut trials: Vec<Trial> = Vec::with_capacity(wire.len());
        for (i, t) in wire.into_iter().enumerate() {
            let trial = trial_from_wire(t, &head.study, limits, &format!("trials[{i}]"))?;
            if trials.last().is_some_and(|p| p.id >= trial.id) {
                return Err(bad(format!("trials[{i}].id"), format!("trial ids must be positive and increasing, got {}", trial.id)));
            }
            trials.push(trial);
        }
        Ok(StudyDump { study: head.study, trials, next_trial_id: head.next_trial_id, model: head.model })
    }

    /// The document's head, checked, and its trials unchecked (for [`trial_from_wire`]).
    pub fn into_head(self, limits: &Limits) -> Result<(StudyHead, Vec<TrialW>), DocumentError> {
        if self.bo_export_format != FORMAT {
            return Err(bad("boExportFormat", format!("this bo reads format {FORMAT}, the file is format {}", self.bo_export_format)));
        }
        let (project, location) = parse_name(&self.study.name)?;
        // Counters the study goes on incrementing: bounded far below overflow.
        counter("nextTrialId", self.next_trial_id, 1)?;
        counter("dataVersion", self.data_version, 0)?;
        // The revision is output only on create; a study moved keeps its own (its trials and
        // model state record it).
        let revision = counter("study.studySpec.searchSpaceRevision", self.study.study_spec.search_space_revision, 0)?;
        let (mut spec, settings) = self.study.study_spec.into_domain(limits).map_err(|e| bad(format!("study.{}", e.path), e.reason))?;
        if spec.open_space {
            spec.space_revision = revision;
        } else if revision != 0 {
            return Err(bad("study.studySpec.searchSpaceRevision", "only an open study's space has revisions; must be 0 or absent"));
        }
        let state = match self.study.state {
            StudyStateW::INACTIVE => StudyState::Inactive,
            StudyStateW::COMPLETED => StudyState::Completed,
            _ => StudyState::Active,
        };
        let create_time_ms = parse_time(&self.study.create_time, "study.createTime")?;
        let model = match self.model {
            None => None,
            Some(m) => {
                // A designer without fitted state (random search) stores null.
                if !(m.state.is_object() || m.state.is_null()) {
                    return Err(bad("model.state", "must be the JSON object (or null) the designer stored"));
                }
                Some(StoredModel {
                    data_version: counter("model.dataVersion", m.data_version, 0)?,
                    space_revision: counter("model.spaceRevision", m.space_revision, 0)?,
                    state: ModelState(m.state),
                    fitted_at_ms: parse_time(&m.fit_time, "model.fitTime")?,
                })
            }
        };
        let study = StudyRecord {
            id: 0,
            number: 0,
            project,
            location,
            display_name: self.study.display_name,
            spec,
            settings,
            state,
            inactive_reason: self.study.inactive_reason,
            create_time_ms,
            data_version: self.data_version,
        };
        Ok((StudyHead { study, next_trial_id: self.next_trial_id, model }, self.trials))
    }
}

/// `value` of the counter at `path`, unless it is outside `min..=`[`MAX_COUNTER`].
fn counter(path: &str, value: i64, min: i64) -> Result<i64, DocumentError> {
    if (min..=MAX_COUNTER).contains(&value) {
        Ok(value)
    } else {
        Err(bad(path, format!("must be from {min} to {MAX_COUNTER}, got {value}")))
    }
}

/// One trial of a document, checked against its study (the document's head: its spec, project
/// and location) and the server's limits as the API checks a created trial; `at` names it in a
/// message (`trials[3]`).
pub fn trial_from_wire(t: TrialW, study: &StudyRecord, limits: &Limits, at: &str) -> Result<Trial, DocumentError> {
    let spec = &study.spec;
    let id: i64 = t.id.parse().map_err(|_| bad(format!("{at}.id"), format!("{} is not a trial number", crate::wire::shown(&t.id))))?;
    // Below the bound, so the study's next id (one above its largest) is within it too.
    if !(1..MAX_COUNTER).contains(&id) {
        return Err(bad(format!("{at}.id"), format!("trial ids must be from 1 to {}, increasing; got {id}", MAX_COUNTER - 1)));
    }
    let revision = counter(&format!("{at}.searchSpaceRevision"), t.search_space_revision, 0)?;
    if revision > spec.space_revision {
        return Err(bad(
            format!("{at}.searchSpaceRevision"),
            format!("{revision} is after the study's own revision, {}", spec.space_revision),
        ));
    }
    let state = match t.state {
        TrialStateW::REQUESTED => TrialState::Requested,
        TrialStateW::ACTIVE => TrialState::Active,
        TrialStateW::STOPPING => TrialState::Stopping,
        TrialStateW::SUCCEEDED => TrialState::Succeeded,
        TrialStateW::INFEASIBLE => TrialState::Infeasible,
        TrialStateW::STATE_UNSPECIFIED => return Err(bad(format!("{at}.state"), "required")),
    };
    let assignment = assignment_from_wire(t.parameters, spec).map_err(|e| bad(format!("{at}.{}", e.path), e.reason))?;
    limits.check(bo_core::Limit::Measurements, t.measurements.len()).map_err(|e| bad(format!("{at}.measurements"), e.to_string()))?;
    let measurements = t
        .measurements
        .into_iter()
        .enumerate()
        .map(|(k, m)| measurement(m, spec, &format!("{at}.measurements[{k}]"), false))
        .collect::<Result<Vec<_>, _>>()?;
    let final_measurement = t.final_measurement.map(|m| measurement(m, spec, &format!("{at}.finalMeasurement"), true)).transpose()?;
    if state == TrialState::Succeeded && final_measurement.is_none() {
        return Err(bad(format!("{at}.finalMeasurement"), "a SUCCEEDED trial needs its final measurement"));
    }
    limits.check_text(&t.client_id, bo_core::limits::Text::Id).map_err(|e| bad(format!("{at}.clientId"), e.to_string()))?;
    limits
        .check_text(&t.infeasible_reason, bo_core::limits::Text::Free)
        .map_err(|e| bad(format!("{at}.infeasibleReason"), e.to_string()))?;
    Ok(Trial {
        id,
        state,
        assignment,
        measurements,
        final_measurement,
        client_id: t.client_id,
        infeasible_reason: t.infeasible_reason,
        start_time_ms: parse_time(&t.start_time, &format!("{at}.startTime"))?,
        end_time_ms: if t.end_time.is_empty() { None } else { Some(parse_time(&t.end_time, &format!("{at}.endTime"))?) },
        stop_time_ms: if t.stop_time.is_empty() { None } else { Some(parse_time(&t.stop_time, &format!("{at}.stopTime"))?) },
        resumed: resumed(&t.resumed_from, t.resumed_at, id, study, at)?,
        space_revision: revision,
        labels: {
            bo_core::trial::check_labels(&t.labels, limits).map_err(|e| bad(format!("{at}.{}", e.path), e.reason))?;
            t.labels
        },
    })
}

/// A trial's `resumedFrom` (the name of an earlier trial of the document's study:
/// `projects/P/locations/L/studies/S/trials/N`, P and L the study's own, N below `id`) and
/// `resumedAt` (a position from 0 to [`MAX_COUNTER`]): both, or neither.
fn resumed(from: &str, position: Option<f64>, id: i64, study: &StudyRecord, at: &str) -> Result<Option<bo_core::Resumed>, DocumentError> {
    match (from.is_empty(), position) {
        (true, None) => Ok(None),
        (false, Some(p)) if (0.0..=MAX_COUNTER as f64).contains(&p) => {
            let number = match from.split('/').collect::<Vec<_>>().as_slice() {
                ["projects", p, "locations", l, "studies", s, "trials", n]
                    if *p == study.project && *l == study.location && !s.is_empty() =>
                {
                    n.parse::<i64>().ok().filter(|n| (1..id).contains(n))
                }
                _ => None,
            };
            let from = number.ok_or_else(|| {
                bad(
                    format!("{at}.resumedFrom"),
                    format!(
                        "must name an earlier trial of the study (projects/{}/locations/{}/studies/S/trials/N, N below {id})",
                        study.project, study.location
                    ),
                )
            })?;
            Ok(Some(bo_core::Resumed { from, at: p }))
        }
        (false, Some(p)) => Err(bad(format!("{at}.resumedAt"), format!("must be a position from 0 to {MAX_COUNTER}, got {p:e}"))),
        (true, Some(_)) => Err(bad(format!("{at}.resumedFrom"), "is required with resumedAt")),
        (false, None) => Err(bad(format!("{at}.resumedAt"), "is required with resumedFrom")),
    }
}

fn measurement(m: MeasurementW, spec: &bo_core::StudySpec, path: &str, complete: bool) -> Result<Measurement, DocumentError> {
    measurement_from_wire(m, spec, path, complete).map_err(|e| bad(e.path, e.reason))
}

/// `projects/P/locations/L/studies/N` → (P, L).
fn parse_name(name: &str) -> Result<(String, String), DocumentError> {
    match name.split('/').collect::<Vec<_>>().as_slice() {
        ["projects", p, "locations", l, "studies", _] if !p.is_empty() && !l.is_empty() => Ok(((*p).to_owned(), (*l).to_owned())),
        _ => Err(bad("study.name", format!("{name:?} is not projects/P/locations/L/studies/N"))),
    }
}

/// RFC 3339 → milliseconds since the epoch.
pub fn parse_time(s: &str, path: &str) -> Result<i64, DocumentError> {
    DateTime::parse_from_rfc3339(s).map(|t| t.timestamp_millis()).map_err(|e| bad(path, format!("{s:?} is not an RFC 3339 time: {e}")))
}
