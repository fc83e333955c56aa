//! Wire shape of `google.longrunning.Operation` (suggest and early-stopping operations, pending,
//! done or failed) and `google.rpc.Status`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::study::StudyStateW;
use super::trial::TrialW;

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

/// The Vertex API version a call came through: an Operation names that version's message types
/// (`google.cloud.aiplatform.v1beta1.SuggestTrialsResponse`), which a client unpacks only from its
/// own version's. bo serves `/v1beta1/…` as an alias of `/v1/…`; the messages it uses are the
/// same in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiVersion {
    /// `v1`.
    V1,
    /// `v1beta1`.
    V1beta1,
}

impl ApiVersion {
    /// Its name in paths and type names.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1 => "v1",
            ApiVersion::V1beta1 => "v1beta1",
        }
    }

    /// The version a stored label names (`v1` for anything else: the default).
    pub fn parse(label: &str) -> ApiVersion {
        if label == "v1beta1" { ApiVersion::V1beta1 } else { ApiVersion::V1 }
    }

    /// The version a request path names (`/v1/…`, `/v1beta1/…`); `None` for another path, such
    /// as `/ui/…`, where Google's clients of either version poll operations.
    pub fn of_path(path: &str) -> Option<ApiVersion> {
        if path.starts_with("/v1beta1/") {
            Some(ApiVersion::V1beta1)
        } else if path.starts_with("/v1/") {
            Some(ApiVersion::V1)
        } else {
            None
        }
    }
}

impl OperationW {
    /// The operation as `version` names its messages (they are made as v1's).
    pub fn in_version(mut self, version: ApiVersion) -> OperationW {
        if version != ApiVersion::V1 {
            let to = format!("type.googleapis.com/google.cloud.aiplatform.{}.", version.as_str());
            for value in [Some(&mut self.metadata), self.response.as_mut()].into_iter().flatten() {
                if let Some(serde_json::Value::String(t)) = value.get_mut("@type") {
                    *t = t.replace(TYPE_PREFIX, &to);
                }
            }
        }
        self
    }
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
