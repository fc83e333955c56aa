//! The request bodies of the methods that take one, and the list responses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::measurement::MeasurementW;
use super::study::{MetricSpecW, StudyStateW, StudyW};
use super::trial::TrialW;

/// `SuggestTrialsRequest`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = SuggestTrialsRequest)]
pub struct SuggestTrialsRequestW {
    /// How many trials: at least 1, at most the server's `--max-suggestion-count` (default 100).
    #[serde(deserialize_with = "super::int64::deserialize")]
    #[schema(minimum = 1, maximum = 100, required = true)]
    pub suggestion_count: i64,
    /// Required: who evaluates them. The same client asking again while its trials are ACTIVE
    /// gets the same trials back.
    #[schema(min_length = 1, required = true)]
    pub client_id: String,
    /// None, or one per suggestion: each suggestion lies within its context (takes every value
    /// the context fixes), in the contexts' order; within each, the study's own acquisition
    /// (several objectives and safety metrics included) searches the rest of the space.
    #[schema(max_items = 100)]
    pub contexts: Vec<TrialContextW>,
    /// Ignored (Google's client may repeat the study's name).
    #[schema(ignore)]
    pub parent: String,
}

/// `TrialContext`: a slice of the search space a suggestion must lie in.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = TrialContext)]
pub struct TrialContextW {
    /// Free text, for the caller (not stored).
    pub description: String,
    /// The parameters the suggestion must take, with their values; a conditional parameter
    /// with its parent at a value that activates it.
    pub parameters: Vec<super::trial::ParameterW>,
}

/// `CompleteTrialRequest`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = CompleteTrialRequest)]
pub struct CompleteTrialRequestW {
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
#[schema(as = AddTrialMeasurementRequest)]
pub struct AddTrialMeasurementRequestW {
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
#[schema(as = EmptyRequest)]
pub struct EmptyRequestW {
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
#[schema(as = LookupStudyRequest)]
pub struct LookupStudyRequestW {
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
#[schema(as = ListStudiesResponse)]
pub struct ListStudiesResponseW {
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
#[schema(as = ListTrialsResponse)]
pub struct ListTrialsResponseW {
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
#[schema(as = ListOptimalTrialsResponse)]
pub struct ListOptimalTrialsResponseW {
    /// The best trial for one metric; the Pareto front for several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub optimal_trials: Vec<TrialW>,
}

/// What the overview shows of a study (bo extension): the study without its search space and
/// algorithm settings, so a page of them is small whatever the specs hold (GetStudy reads the
/// whole study).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = StudySummary)]
pub struct StudySummaryW {
    /// `projects/{project}/locations/{location}/studies/{study}`.
    pub name: String,
    /// Its display name.
    pub display_name: String,
    /// Its state.
    pub state: StudyStateW,
    /// Its algorithm (`ALGORITHM_UNSPECIFIED`: AUTO).
    pub algorithm: String,
    /// Its metrics, as in its spec.
    pub metrics: Vec<MetricSpecW>,
    /// When it was created.
    pub create_time: String,
    /// Why it is not active, if it is not.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub inactive_reason: String,
}

/// One study of the overview (bo extension).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = StudyOverview)]
pub struct StudyOverviewW {
    /// The study, summarised.
    pub study: StudySummaryW,
    /// Its trials by state (every state named, zeros included).
    pub trial_counts: BTreeMap<String, i64>,
    /// The best final value of its first objective among its safe SUCCEEDED trials: the value of
    /// the first of `listOptimalTrials` (except under `observationNoise: HIGH`, where the model
    /// chooses that trial); absent with none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_value: Option<f64>,
    /// When a trial last started, ended or was seen; absent with no trials.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub last_activity_time: String,
}

/// Response of the studies' overview (bo extension).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ListStudyOverviewResponse)]
pub struct ListStudyOverviewResponseW {
    /// A page of studies with their counts.
    pub studies: Vec<StudyOverviewW>,
    /// Pass as `pageToken` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next_page_token: String,
}

/// The projects and locations that hold studies (bo extension).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ListLocationsResponse)]
pub struct ListLocationsResponseW {
    /// Each with its number of studies, in name order (at most 1,000).
    pub locations: Vec<LocationW>,
}

/// A project's location.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Location)]
pub struct LocationW {
    /// The project.
    pub project: String,
    /// The location.
    pub location: String,
    /// Its studies.
    pub studies: i64,
}
