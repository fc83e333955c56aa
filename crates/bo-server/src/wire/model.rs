//! Wire shapes of bo's model extensions: what a study's model learned (`GET …/model`) and
//! `:predict`'s request and response.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::trial::ParameterW;

/// What a study's model learned.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ModelSummary)]
pub struct ModelSummaryW {
    /// The study's algorithm.
    pub algorithm: String,
    /// The study's data version now (it grows with every completed, added or deleted trial).
    pub data_version: i64,
    /// The data version the model was fitted on.
    pub fitted_data_version: i64,
    /// Completed trials the model has seen.
    pub trials: usize,
    /// Completed trials the model was fitted on: every one up to 2,048; beyond, 1,024 chosen by
    /// relevance (each objective's best, the newest, a spread of the rest), so a large study's
    /// fits and suggestions cost what a study of 1,024 trials does. 0 for a designer that learns
    /// nothing, and while a failed designer's stand-in (quasi-random) answers.
    pub fitted_on_trials: usize,
    /// Suggestions computed in advance that the next suggest calls can take at once.
    pub precomputed_suggestions: usize,
    /// The designer's description: hyperparameters, structure.
    pub model: serde_json::Value,
}

/// `:predict` request: `trials`, or `embedded`.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = PredictRequest)]
pub struct PredictRequestW {
    /// The points, each a trial's parameters (exactly the active ones): 1 to 1,000; none when
    /// `embedded` is given.
    #[serde(default)]
    #[schema(max_items = 1000)]
    pub trials: Vec<PredictPointW>,
    /// Instead of `trials`: points along one of the model's random embeddings, for REMBO's
    /// `LOW_DIM` kernel, whose GPs live in them and which predicts at a trial's parameters only
    /// where they are a point of an embedding.
    #[serde(default)]
    pub embedded: Option<EmbeddedPointsW>,
}

/// Points of one random embedding's box.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = EmbeddedPoints)]
pub struct EmbeddedPointsW {
    /// Which embedding: its index, from 0, in `GET …/model`'s `model.embeddings`.
    pub embedding: usize,
    /// Points of its box `[−h, h]^d` (`model.searchBox`, `model.d`), each d finite numbers: 1 to
    /// 1,000 points.
    #[schema(min_items = 1, max_items = 1000)]
    pub points: Vec<Vec<f64>>,
}

/// One point to predict at.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = PredictPoint)]
pub struct PredictPointW {
    /// The parameters.
    pub parameters: Vec<ParameterW>,
}

/// `:predict` response.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = PredictResponse)]
pub struct PredictResponseW {
    /// One per point, in order: the model's predictive distribution of the objective there.
    pub predictions: Vec<PredictionW>,
}

/// A prediction: the model's predictive distribution of the objective (the first metric) at one
/// point, in its units — of the latent objective, without observation noise. Under an output
/// warp (`GET …/model`'s `outputWarp`) the distribution is the warp's inverse image of a
/// normal, skewed: its quantiles are exact, and its mean and standard deviation are given only
/// where they are finite. A GP's spread is calibrated: widened or narrowed by how far off its own
/// leave-one-out predictions of the study's trials were, near the data and away from it (and a
/// large study's subset model widened by the trials it left out).
#[derive(Serialize, ToSchema)]
pub struct PredictionW {
    /// The objective's distribution.
    #[serde(flatten)]
    pub objective: MetricPredictionW,
    /// For a study of several metrics, once each has a model: every metric's prediction by
    /// metric id (the first is this one again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<std::collections::BTreeMap<String, MetricPredictionW>>,
}

/// One metric's predictive distribution at a point: the median, the central 90 % interval, and
/// the mean and standard deviation where finite. A number beyond a 64-bit float's range (an
/// objective near ±1.8e308) is null or absent.
#[derive(Serialize, ToSchema)]
pub struct MetricPredictionW {
    /// The median, in the metric's units.
    #[schema(required = true)]
    pub median: Option<f64>,
    /// The 5 % quantile: the lower end of the central 90 % interval.
    #[schema(required = true)]
    pub lower: Option<f64>,
    /// The 95 % quantile: the upper end of the central 90 % interval.
    #[schema(required = true)]
    pub upper: Option<f64>,
    /// The mean; absent where it is not finite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// The standard deviation; absent where it is not finite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
}

impl From<&bo_core::Prediction> for MetricPredictionW {
    fn from(p: &bo_core::Prediction) -> MetricPredictionW {
        let finite = |v: f64| v.is_finite().then_some(v);
        MetricPredictionW {
            median: finite(p.median),
            lower: finite(p.lower),
            upper: finite(p.upper),
            mean: p.mean.and_then(finite),
            stddev: p.stddev.and_then(finite),
        }
    }
}

/// Which parameters matter (bo extension).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Importance)]
pub struct ImportanceW {
    /// The study's data version now.
    pub data_version: i64,
    /// The data version these numbers were computed at (older while `computing`).
    pub computed_data_version: Option<i64>,
    /// A background job is computing the current numbers (large studies): ask again.
    pub computing: bool,
    /// The metric judged: the study's first.
    pub metric_id: String,
    /// Completed trials with a value of it.
    pub trials: usize,
    /// Base points of the Sobol estimate (it costs base × (parameters + 2) predictions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sobol_base_points: Option<usize>,
    /// Why there are no Sobol indices, when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sobol_absent: Option<String>,
    /// One per parameter of the space, in its order.
    pub parameters: Vec<ParameterImportanceW>,
    /// For an additive model (ADD_GP_UCB's groups, OVERLAP_ADD_GP's cliques, ADD_TREE's
    /// vertices): each term's share of the variation of the model's mean.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<TermShareW>,
}

/// One additive term's share.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TermShare)]
pub struct TermShareW {
    /// What the term covers: its parameters joined by ` + `, or its tree vertex.
    pub name: String,
    /// Its share of the summed variances of the terms' means (the shares sum to 1).
    pub share: f64,
}

/// One parameter's importance.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ParameterImportance)]
pub struct ParameterImportanceW {
    /// The parameter.
    pub parameter_id: String,
    /// PED-ANOVA: its share (the shares sum to 1) of how differently the best 10% of trials
    /// are spread from all; absent with fewer than 4 trials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ped_anova: Option<f64>,
    /// Trials where it is active (PED-ANOVA judges it on those).
    pub active_trials: usize,
    /// First-order Sobol index of the model's posterior mean: the share of its variance this
    /// parameter explains alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sobol_first: Option<f64>,
    /// Total-order Sobol index: alone and in every interaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sobol_total: Option<f64>,
}
