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
    /// bo extension: labels for the trials this call creates (held and REQUESTED trials keep
    /// theirs), such as Optuna's trial number; at most 16, keys without whitespace.
    pub labels: BTreeMap<String, String>,
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
    /// bo extension, instead of `measurement`: several measurements appended in order, all or
    /// none (a client sending the steps it queued in one request).
    #[schema(max_items = 1000)]
    pub measurements: Vec<MeasurementW>,
    /// bo extension: answer, in the returned trial's `earlyStopping`, what the study's stopping
    /// rule says of the trial at its newest measurement and, under the median rule, its
    /// thresholds at the next positions. Advice: the trial is not stopped (a client that acts on
    /// it calls `:stop`; `:checkTrialEarlyStoppingState` stops it as it answers).
    pub check_early_stopping: bool,
    /// The trial's name, which Google's client repeats in the body; ignored.
    #[schema(ignore)]
    pub trial_name: String,
}

/// bo extension: the body of `…/studies/{study}:addParameters` and
/// `…/trials/{trial}:addTrialParameters`, which grow a study with `openSearchSpace`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = AddParametersRequest)]
pub struct AddParametersRequestW {
    /// The parameters asked for, in the order the objective asked: at least one, at most the
    /// server's `--max-parameters`.
    #[schema(min_items = 1)]
    pub parameters: Vec<AddedParameterW>,
}

/// A parameter a define-by-run objective asked for.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = AddedParameter)]
pub struct AddedParameterW {
    /// The parameter as asked: its id, one value spec and its scale, without
    /// `conditionalParameterSpecs`. A parameter the study has must be asked with the same
    /// domain and scale (they are fixed at first use).
    #[schema(required = true)]
    pub parameter_spec: super::parameter::ParameterSpecW,
    /// The CATEGORICAL, INTEGER or DISCRETE parameter it was asked under: a new parameter is
    /// placed under the value the trial (or, for `:addParameters`, an earlier entry) holds for
    /// it; absent: at the root. A known parameter asked where it is not active is widened
    /// until it is, whatever this says.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub parent_parameter_id: String,
    /// Its value, when the caller fixes it; absent (`:addTrialParameters` only): the study's
    /// model chooses it given the trial's other values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<super::trial::ValueW>,
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
    /// bo extension: of its SUCCEEDED trials, those stopped early (asked to stop before they
    /// completed — Optuna's pruned trials): partial results.
    pub stopped_early_count: i64,
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

impl AddParametersRequestW {
    /// The parameters asked for, each checked as a parameter of a created study is (its domain,
    /// its scale, its default) and its value read against it, within `limits`. Errors are paths
    /// under `parameters[i]`.
    pub fn into_asked(self, limits: &bo_core::Limits) -> Result<Vec<bo_core::space::grow::Asked>, bo_core::FieldError> {
        use bo_core::{FieldError, Limit, SearchSpace};
        if self.parameters.is_empty() {
            return Err(FieldError::new("parameters", "name at least one parameter"));
        }
        limits.check(Limit::Parameters, self.parameters.len()).map_err(|o| FieldError::over("parameters", o))?;
        let mut asked = Vec::with_capacity(self.parameters.len());
        for (i, p) in self.parameters.into_iter().enumerate() {
            let at = format!("parameters[{i}]");
            if !p.parameter_spec.conditional_parameter_specs.is_empty() {
                return Err(FieldError::new(
                    format!("{at}.parameterSpec.conditionalParameterSpecs"),
                    "a parameter added to an open study comes alone: its children are added as the objective asks for them",
                ));
            }
            let spec = super::parameter::param_from_wire(p.parameter_spec, "parameterSpec").map_err(|e| e.under(&at))?;
            // Checked as the one parameter of a space, its errors moved under this entry.
            SearchSpace::with_limits(vec![spec.clone()], limits).map_err(|e| {
                let path = e.path.strip_prefix("parameters[0]").map_or(e.path.clone(), |rest| format!("{at}.parameterSpec{rest}"));
                FieldError { path, ..e }
            })?;
            let value = match &p.value {
                Some(v) => Some(super::trial::value_from_wire(v, &spec).map_err(|why| FieldError::new(format!("{at}.value"), why))?),
                None => None,
            };
            let parent = (!p.parent_parameter_id.is_empty()).then_some(p.parent_parameter_id);
            asked.push(bo_core::space::grow::Asked { spec, parent, value });
        }
        Ok(asked)
    }
}
