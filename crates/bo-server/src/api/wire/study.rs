//! Wire shapes of `Study`, `StudySpec` and `MetricSpec`, with their conversions to bo-core's
//! `StudySpec` (the parameter tree is `parameter.rs`'s).

use bo_core::stopping::convex;
use bo_core::stopping::spec::{self, Promotion, SuccessiveHalving};
use bo_core::{
    ConvexStopping, Goal, MeasurementSelection, MetricSpec, ObservationNoise, Safety, SearchSpace, SpaceError, StoppingSpec, StudySpec,
    Transfer,
};
use bo_store::{StudyRecord, StudyState};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::parameter::{ParameterSpecW, param_from_wire, param_to_wire};
use super::{format_time, is_default, opt_int64, wire_enum};
use bo_core::Limits;
use bo_core::designer::gp::transfer::MAX_PRIOR_STUDIES;
use bo_core::limits::Text;
use bo_core::study_stopping::{StudyStoppingConfig, TimeConstraint};

wire_enum! {
    /// `Study.State`.
    #[schema(as = StudyState)]
    StudyStateW { #[default] STATE_UNSPECIFIED = 0, ACTIVE = 1, INACTIVE = 2, COMPLETED = 3 }
}
wire_enum! {
    /// `StudySpec.MetricSpec.GoalType`; unspecified means MAXIMIZE.
    #[schema(as = GoalType)]
    GoalTypeW { #[default] GOAL_TYPE_UNSPECIFIED = 0, MAXIMIZE = 1, MINIMIZE = 2 }
}
wire_enum! {
    /// `StudySpec.ObservationNoise`.
    #[schema(as = ObservationNoise)]
    ObservationNoiseW { #[default] OBSERVATION_NOISE_UNSPECIFIED = 0, LOW = 1, HIGH = 2 }
}
wire_enum! {
    /// `StudySpec.MeasurementSelectionType`; unspecified means LAST_MEASUREMENT.
    #[schema(as = MeasurementSelectionType)]
    MeasurementSelectionTypeW { #[default] MEASUREMENT_SELECTION_TYPE_UNSPECIFIED = 0, LAST_MEASUREMENT = 1, BEST_MEASUREMENT = 2 }
}
wire_enum! {
    /// `successiveHalvingStoppingSpec.promotion` (bo extension): which trials at a rung go on.
    /// `QUANTILE` (Ray Tune's ASHA): those at least as good as the `1 − 1/reductionFactor`
    /// quantile of the other trials' values at the rung. `TOP_K` (ASHA's paper, Optuna's
    /// successive-halving pruner): those among the best `max(1, ⌊n/reductionFactor⌋)` of the `n`
    /// values at the rung, their own included; stricter while few trials have reached it.
    /// Unspecified means QUANTILE.
    #[schema(as = SuccessiveHalvingPromotion)]
    PromotionW { #[default] PROMOTION_UNSPECIFIED = 0, QUANTILE = 1, TOP_K = 2 }
}

/// The algorithm of a study: Vertex's enum names (or numbers) and bo's own names, as a string.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
#[schema(as = AlgorithmName, value_type = String, example = "GRID_SEARCH")]
pub struct AlgorithmW(pub String);

impl<'de> Deserialize<'de> for AlgorithmW {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(AlgorithmW(s)),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(0) => Ok(AlgorithmW("ALGORITHM_UNSPECIFIED".into())),
                Some(2) => Ok(AlgorithmW("GRID_SEARCH".into())),
                Some(3) => Ok(AlgorithmW("RANDOM_SEARCH".into())),
                _ => Err(serde::de::Error::custom(format!("{n} is not an algorithm number; Vertex's are 0, 2 and 3"))),
            },
            other => Err(serde::de::Error::custom(format!("{other} is not an algorithm name"))),
        }
    }
}

/// A study (Vertex `Study`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = Study)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct StudyW {
    /// Output only: `projects/{project}/locations/{location}/studies/{study}`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Required; unique within the project and location; at most 128 characters.
    #[schema(min_length = 1, max_length = 128, pattern = r"\S", required = true)]
    pub display_name: String,
    /// Required.
    pub study_spec: StudySpecW,
    /// Output only.
    #[serde(skip_serializing_if = "is_default")]
    pub state: StudyStateW,
    /// Output only, RFC 3339.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub create_time: String,
    /// Output only: why the study is not active.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub inactive_reason: String,
}

/// How a study is optimised (Vertex `StudySpec`, with bo's `algorithm` names and
/// `algorithmConfig`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = StudySpec)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct StudySpecW {
    /// Required: at least one.
    #[schema(min_items = 1, required = true)]
    pub metrics: Vec<MetricSpecW>,
    /// Required: at least one.
    #[schema(min_items = 1, required = true)]
    pub parameters: Vec<ParameterSpecW>,
    /// `ALGORITHM_UNSPECIFIED` (= `AUTO`), `RANDOM_SEARCH`, `QUASI_RANDOM_SEARCH`, `GRID_SEARCH`,
    /// `GP_BANDIT`, `ADD_TREE`, `BRANCHING_NESTED`, `ADD_GP_UCB`, `OVERLAP_ADD_GP`, `REMBO`.
    #[serde(skip_serializing_if = "algorithm_is_default")]
    pub algorithm: AlgorithmW,
    /// Settings of the algorithm (bo extension), plus `trialLease`: how long an ACTIVE trial's
    /// client may go unseen before the trial goes to the next client (`"600s"`; `"0s"`: never;
    /// absent: the server's `--trial-lease`), and `reproducible`: `true` makes suggestions
    /// depend only on the study's data, its seed and the order of calls, never on timing
    /// (absent: the server's `--reproducible`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithm_config: Option<serde_json::Value>,
    /// How noisy the objective is.
    #[serde(skip_serializing_if = "is_default")]
    pub observation_noise: ObservationNoiseW,
    /// Which measurement completes a trial that is completed without a final one.
    #[serde(skip_serializing_if = "is_default")]
    pub measurement_selection_type: MeasurementSelectionTypeW,
    /// The median stopping rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_automated_stopping_spec: Option<MedianAutomatedStoppingSpecW>,
    /// The decay-curve rule: a GP over parameters and steps predicts each trial's final value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decay_curve_stopping_spec: Option<DecayCurveAutomatedStoppingSpecW>,
    /// The convex rule: the curve's extrapolation against the best, with a predicted last
    /// measurement for a stopped trial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convex_automated_stopping_spec: Option<ConvexAutomatedStoppingSpecW>,
    /// bo extension: asynchronous successive halving (ASHA's promotion rule): at rungs
    /// `minStepCount · reductionFactor^k` below `maxStepCount`, a trial goes on when it is among
    /// the best `1/reductionFactor` of the trials that reached its rung.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub successive_halving_stopping_spec: Option<SuccessiveHalvingStoppingSpecW>,
    /// v1beta1's deprecated form of `convexAutomatedStoppingSpec`; accepted, and echoed as that.
    #[serde(skip_serializing)]
    pub convex_stop_config: Option<ConvexStopConfigW>,
    /// When the whole study stops: its rules are checked before each suggestion; a stopped
    /// study is COMPLETED (its `inactiveReason` names the rule) and suggests nothing more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub study_stopping_config: Option<StudyStoppingConfigW>,
    /// Transfer learning (v1beta1's field, read on both routes): unless disabled, the service
    /// stands the new study's model on the COMPLETED studies of its location with the same
    /// parameters and objective (the most recent 3), or on those `algorithmConfig.priorStudies`
    /// names; `priorStudyNames` says which (output only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer_learning_config: Option<TransferLearningConfigW>,
}

/// `StudySpec.TransferLearningConfig` (v1beta1).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = TransferLearningConfig)]
pub struct TransferLearningConfigW {
    /// No prior study is chosen for the study.
    #[serde(skip_serializing_if = "is_default")]
    pub disable_transfer_learning: bool,
    /// Output only: the prior studies the study's model stands on, the base of the stack first
    /// (ignored in a request, as output-only fields are).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prior_study_names: Vec<String>,
}

fn algorithm_is_default(a: &AlgorithmW) -> bool {
    a.0.is_empty() || a.0 == "ALGORITHM_UNSPECIFIED"
}

/// `StudySpec.MedianAutomatedStoppingSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = MedianAutomatedStoppingSpec)]
pub struct MedianAutomatedStoppingSpecW {
    /// Compare trials at equal elapsed time rather than equal step count.
    #[serde(skip_serializing_if = "is_default")]
    pub use_elapsed_duration: bool,
}

/// `StudySpec.DecayCurveAutomatedStoppingSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = DecayCurveAutomatedStoppingSpec)]
pub struct DecayCurveAutomatedStoppingSpecW {
    /// Curves over elapsed time rather than step count.
    #[serde(skip_serializing_if = "is_default")]
    pub use_elapsed_duration: bool,
}

/// `StudySpec.ConvexAutomatedStoppingSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = ConvexAutomatedStoppingSpec)]
pub struct ConvexAutomatedStoppingSpecW {
    /// The position a trial's final value is predicted at (seconds with `useElapsedDuration`);
    /// unset: the furthest a completed trial reached.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub max_step_count: Option<i64>,
    /// Trials are judged only past this position; unset: a tenth of the maximum.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub min_step_count: Option<i64>,
    /// Measurements a trial needs before it is judged; the rule also waits for one more completed
    /// trial than this. Unset: 5.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub min_measurement_count: Option<i64>,
    /// The DOUBLE parameter that is the learning rate, used by the prediction.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub learning_rate_parameter_name: String,
    /// Positions are elapsed seconds rather than steps.
    #[serde(skip_serializing_if = "is_default")]
    pub use_elapsed_duration: bool,
    /// Not supported: `true` is refused with a 400.
    #[serde(skip_serializing_if = "is_default")]
    pub update_all_stopped_trials: bool,
}

/// `successiveHalvingStoppingSpec` (bo extension; see bo-core's `stopping::successive_halving`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = SuccessiveHalvingStoppingSpec)]
pub struct SuccessiveHalvingStoppingSpecW {
    /// The lowest rung: trials are not judged before it. Unset: 1.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub min_step_count: Option<i64>,
    /// Required: a full training's position; rungs sit below it and a trial at it is not judged.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub max_step_count: Option<i64>,
    /// The factor between rungs; `1/reductionFactor` of the trials at a rung go on. Unset: 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduction_factor: Option<f64>,
    /// Positions are elapsed seconds rather than steps.
    #[serde(skip_serializing_if = "is_default")]
    pub use_elapsed_duration: bool,
    /// Asynchronous Hyperband: bracket `b` (from 0) starts at the `b`-th rung, and each trial is
    /// judged within its bracket; trials are spread over brackets as Hyperband spreads them. From
    /// 1 (plain successive halving) to the number of rungs. Unset: 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 64)]
    pub brackets: Option<u32>,
    /// Which trials at a rung go on. Unset: `QUANTILE`, or `TOP_K` with `resume`.
    #[serde(skip_serializing_if = "is_default")]
    pub promotion: PromotionW,
    /// ASHA with checkpoints (Li et al. 2020, Algorithm 2): every trial pauses at each rung
    /// (asked to stop, its client saves a checkpoint and completes it), and `suggestTrials`
    /// hands out a paused trial that becomes one of the best `⌊n/η⌋` at its rung again, as a
    /// new trial with its parameters and measurements and `resumedFrom` naming it, before any
    /// new configuration. For clients that can resume from a checkpoint; one bracket, `TOP_K`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resume: bool,
}

impl SuccessiveHalvingStoppingSpecW {
    fn into_domain(self, path: &str) -> Result<SuccessiveHalving, SpaceError> {
        let Some(max) = self.max_step_count else {
            return Err(SpaceError::new(format!("{path}.maxStepCount"), "is required: the position of a full training"));
        };
        let rule = SuccessiveHalving {
            min_step_count: self.min_step_count.map_or(spec::DEFAULT_MIN_STEP, |v| v as f64),
            max_step_count: max as f64,
            reduction_factor: self.reduction_factor.unwrap_or(spec::DEFAULT_REDUCTION_FACTOR),
            use_elapsed_duration: self.use_elapsed_duration,
            brackets: self.brackets.unwrap_or(spec::DEFAULT_BRACKETS),
            promotion: match self.promotion {
                PromotionW::PROMOTION_UNSPECIFIED if self.resume => Promotion::TopK,
                PromotionW::PROMOTION_UNSPECIFIED | PromotionW::QUANTILE => Promotion::Quantile,
                PromotionW::TOP_K => Promotion::TopK,
            },
            resume: self.resume,
        };
        rule.check(path)?;
        Ok(rule)
    }

    fn from_domain(h: &SuccessiveHalving) -> SuccessiveHalvingStoppingSpecW {
        SuccessiveHalvingStoppingSpecW {
            min_step_count: Some(h.min_step_count.round() as i64),
            max_step_count: Some(h.max_step_count.round() as i64),
            reduction_factor: Some(h.reduction_factor),
            use_elapsed_duration: h.use_elapsed_duration,
            brackets: Some(h.brackets),
            promotion: match h.promotion {
                Promotion::Quantile => PromotionW::QUANTILE,
                Promotion::TopK => PromotionW::TOP_K,
            },
            resume: h.resume,
        }
    }
}

/// v1beta1's deprecated `StudySpec.ConvexStopConfig`: `convexAutomatedStoppingSpec` under older
/// names (`autoregressiveOrder` is `minMeasurementCount`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = ConvexStopConfig)]
pub struct ConvexStopConfigW {
    /// `maxStepCount`.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub max_num_steps: Option<i64>,
    /// `minStepCount`.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub min_num_steps: Option<i64>,
    /// `minMeasurementCount`.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub autoregressive_order: Option<i64>,
    /// `learningRateParameterName`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub learning_rate_parameter_name: String,
    /// `useElapsedDuration`.
    #[serde(skip_serializing_if = "is_default")]
    pub use_seconds: bool,
}

impl From<ConvexStopConfigW> for ConvexAutomatedStoppingSpecW {
    fn from(c: ConvexStopConfigW) -> Self {
        ConvexAutomatedStoppingSpecW {
            max_step_count: c.max_num_steps,
            min_step_count: c.min_num_steps,
            min_measurement_count: c.autoregressive_order,
            learning_rate_parameter_name: c.learning_rate_parameter_name,
            use_elapsed_duration: c.use_seconds,
            update_all_stopped_trials: false,
        }
    }
}

impl ConvexAutomatedStoppingSpecW {
    /// The domain settings, checked against `space`; errors name fields under `path`.
    fn into_domain(self, space: &SearchSpace, limits: &Limits, path: &str) -> Result<ConvexStopping, SpaceError> {
        limits
            .check_text(&self.learning_rate_parameter_name, Text::Id)
            .map_err(|e| SpaceError::text(format!("{path}.learningRateParameterName"), e))?;
        if self.update_all_stopped_trials {
            return Err(SpaceError::new(
                format!("{path}.updateAllStoppedTrials"),
                "is not supported: bo predicts the last measurement of each trial once, when it stops; leave it false",
            ));
        }
        if let Some(k) = self.min_measurement_count
            && !(1..=i64::from(convex::MAX_MIN_MEASUREMENTS)).contains(&k)
        {
            return Err(SpaceError::new(
                format!("{path}.minMeasurementCount"),
                format!("must be from 1 to {}, got {k}", convex::MAX_MIN_MEASUREMENTS),
            ));
        }
        let spec = ConvexStopping {
            max_step_count: self.max_step_count.map(|v| v as f64),
            min_step_count: self.min_step_count.map(|v| v as f64),
            min_measurement_count: self.min_measurement_count.map(|k| k as u32),
            learning_rate_parameter_name: (!self.learning_rate_parameter_name.is_empty()).then_some(self.learning_rate_parameter_name),
            use_elapsed_duration: self.use_elapsed_duration,
        };
        spec.check(space, path)?;
        Ok(spec)
    }

    fn from_domain(c: &ConvexStopping) -> ConvexAutomatedStoppingSpecW {
        ConvexAutomatedStoppingSpecW {
            max_step_count: c.max_step_count.map(|v| v.round() as i64),
            min_step_count: c.min_step_count.map(|v| v.round() as i64),
            min_measurement_count: c.min_measurement_count.map(i64::from),
            learning_rate_parameter_name: c.learning_rate_parameter_name.clone().unwrap_or_default(),
            use_elapsed_duration: c.use_elapsed_duration,
            update_all_stopped_trials: false,
        }
    }
}

/// `StudySpec.StudyStoppingConfig`: the rules are read top to bottom before each suggestion and
/// the first that holds decides (see bo-core's `study_stopping`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = StudyStoppingConfig)]
pub struct StudyStoppingConfigW {
    /// Once the study stops, every trial's early-stopping check answers `shouldStop: true`.
    #[serde(skip_serializing_if = "is_default")]
    pub should_stop_asap: bool,
    /// Before this the study does not stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum_runtime_constraint: Option<StudyTimeConstraintW>,
    /// After this the study stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_runtime_constraint: Option<StudyTimeConstraintW>,
    /// With fewer COMPLETED trials the study does not stop.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2147483647)]
    pub min_num_trials: Option<i64>,
    /// At this many trials the study stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2147483647)]
    pub max_num_trials: Option<i64>,
    /// After this many completed trials without a better objective the study stops (one
    /// metric only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 2147483647)]
    pub max_num_trials_no_progress: Option<i64>,
    /// After this long without a better objective the study stops (one metric only), e.g.
    /// `"3600s"`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub max_duration_no_progress: String,
}

/// `StudyTimeConstraint`: exactly one of a duration since the study's creation and a moment.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = StudyTimeConstraint)]
pub struct StudyTimeConstraintW {
    /// E.g. `"86400s"`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub max_duration: String,
    /// RFC 3339.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub end_time: String,
}

impl StudyStoppingConfigW {
    fn into_domain(self, path: &str) -> Result<StudyStoppingConfig, SpaceError> {
        let count = |v: Option<i64>, field: &str| -> Result<Option<i64>, SpaceError> {
            match v {
                Some(n) if !(0..=i64::from(i32::MAX)).contains(&n) => {
                    Err(SpaceError::new(format!("{path}.{field}"), format!("must be 0 to 2147483647 (an Int32Value), got {n}")))
                }
                other => Ok(other),
            }
        };
        let duration = |text: &str, field: &str| -> Result<Option<f64>, SpaceError> {
            if text.is_empty() {
                return Ok(None);
            }
            match super::parse_duration(text) {
                Some(s) if s >= 0.0 => Ok(Some(s)),
                _ => Err(SpaceError::new(
                    format!("{path}.{field}"),
                    format!(
                        "{} is not a non-negative duration like \"3600s\" (at most {}s, 9 fractional digits)",
                        super::shown(text),
                        super::MAX_DURATION_SECS
                    ),
                )),
            }
        };
        let constraint = |c: Option<StudyTimeConstraintW>, field: &str| -> Result<Option<TimeConstraint>, SpaceError> {
            let Some(c) = c else { return Ok(None) };
            match (c.max_duration.is_empty(), c.end_time.is_empty()) {
                (false, true) => Ok(duration(&c.max_duration, &format!("{field}.maxDuration"))?.map(TimeConstraint::MaxDurationSecs)),
                (true, false) => chrono::DateTime::parse_from_rfc3339(&c.end_time)
                    .map(|t| Some(TimeConstraint::EndTimeMs(t.timestamp_millis())))
                    .map_err(|_| {
                        SpaceError::new(format!("{path}.{field}.endTime"), format!("{} is not an RFC 3339 time", super::shown(&c.end_time)))
                    }),
                _ => Err(SpaceError::new(format!("{path}.{field}"), "give exactly one of maxDuration and endTime")),
            }
        };
        Ok(StudyStoppingConfig {
            should_stop_asap: self.should_stop_asap,
            minimum_runtime: constraint(self.minimum_runtime_constraint, "minimumRuntimeConstraint")?,
            maximum_runtime: constraint(self.maximum_runtime_constraint, "maximumRuntimeConstraint")?,
            min_num_trials: count(self.min_num_trials, "minNumTrials")?,
            max_num_trials: count(self.max_num_trials, "maxNumTrials")?,
            max_num_trials_no_progress: count(self.max_num_trials_no_progress, "maxNumTrialsNoProgress")?,
            max_duration_no_progress_secs: duration(&self.max_duration_no_progress, "maxDurationNoProgress")?,
        })
    }

    fn from_domain(c: &StudyStoppingConfig) -> StudyStoppingConfigW {
        let constraint = |t: Option<TimeConstraint>| {
            t.map(|t| match t {
                TimeConstraint::MaxDurationSecs(s) => {
                    StudyTimeConstraintW { max_duration: super::format_duration(s), end_time: String::new() }
                }
                TimeConstraint::EndTimeMs(ms) => StudyTimeConstraintW { max_duration: String::new(), end_time: super::format_time(ms) },
            })
        };
        StudyStoppingConfigW {
            should_stop_asap: c.should_stop_asap,
            minimum_runtime_constraint: constraint(c.minimum_runtime),
            maximum_runtime_constraint: constraint(c.maximum_runtime),
            min_num_trials: c.min_num_trials,
            max_num_trials: c.max_num_trials,
            max_num_trials_no_progress: c.max_num_trials_no_progress,
            max_duration_no_progress: c.max_duration_no_progress_secs.map(super::format_duration).unwrap_or_default(),
        }
    }
}

/// `StudySpec.MetricSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = MetricSpec)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetricSpecW {
    /// Required; unique, no whitespace.
    #[schema(pattern = r"^\S+$", required = true)]
    pub metric_id: String,
    /// MAXIMIZE or MINIMIZE.
    pub goal: GoalTypeW,
    /// Makes this a safety metric: not optimised, kept on the safe side of its threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_config: Option<SafetyConfigW>,
}

impl MetricSpecW {
    /// The wire form of a domain metric.
    pub fn from_domain(m: &MetricSpec) -> MetricSpecW {
        MetricSpecW {
            metric_id: m.id.clone(),
            goal: match m.goal {
                Goal::Maximize => GoalTypeW::MAXIMIZE,
                Goal::Minimize => GoalTypeW::MINIMIZE,
            },
            safety_config: m.safety.map(|s| SafetyConfigW {
                safety_threshold: Some(s.threshold),
                desired_min_safe_trials_fraction: (s.desired_min_safe_fraction > 0.0).then_some(s.desired_min_safe_fraction),
            }),
        }
    }
}

/// `StudySpec.MetricSpec.SafetyMetricConfig`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = SafetyMetricConfig)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SafetyConfigW {
    /// The boundary between safe and unsafe: a trial is safe when the metric is at least this
    /// (goal MAXIMIZE) or at most this (MINIMIZE). Unset: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_threshold: Option<f64>,
    /// The fraction of trials, from 0 to 1, the designer keeps safe at any time in the study
    /// (best effort). Unset or 0: no target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired_min_safe_trials_fraction: Option<f64>,
}

/// The key of `algorithmConfig` that is the service's, not the designer's: seconds an ACTIVE
/// trial's client may go unseen before the trial goes to another client.
pub const TRIAL_LEASE_KEY: &str = "trialLease";

/// Longest trial lease accepted: a year.
const MAX_TRIAL_LEASE_SECS: f64 = 365.0 * 86_400.0;

/// Shortest trial lease accepted (other than 0, never): a second. A shorter one would take every
/// ACTIVE trial back at the next suggest, before its client could say it is alive.
const MIN_TRIAL_LEASE_SECS: f64 = 1.0;

/// Lifts `trialLease` (a proto3 duration `"600s"` or a number of seconds; 0: never) out of the
/// algorithm's settings, so the designer never sees it.
fn take_trial_lease(config: &mut serde_json::Value) -> Result<Option<f64>, SpaceError> {
    let Some(object) = config.as_object_mut() else { return Ok(None) };
    let Some(raw) = object.remove(TRIAL_LEASE_KEY) else { return Ok(None) };
    if object.is_empty() {
        *config = serde_json::Value::Null;
    }
    let secs = match &raw {
        serde_json::Value::String(s) => super::parse_duration(s),
        serde_json::Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match secs {
        Some(v) if v == 0.0 || (MIN_TRIAL_LEASE_SECS..=MAX_TRIAL_LEASE_SECS).contains(&v) => Ok(Some(v)),
        _ => Err(SpaceError::new(
            format!("studySpec.algorithmConfig.{TRIAL_LEASE_KEY}"),
            format!(
                "{} is not a lease: a duration such as \"600s\" (or a number of seconds) from 1 s to a year, or 0 for never",
                super::shown_value(&raw)
            ),
        )),
    }
}

/// The key of `algorithmConfig` that is the service's: whether the study's suggestions depend
/// only on its data, its seed and the order of calls (see docs/settings.md, "Reproducible studies").
pub const REPRODUCIBLE_KEY: &str = "reproducible";

/// Lifts `reproducible` (a boolean) out of the algorithm's settings, so the designer never sees
/// it.
fn take_reproducible(config: &mut serde_json::Value) -> Result<Option<bool>, SpaceError> {
    let Some(object) = config.as_object_mut() else { return Ok(None) };
    let Some(raw) = object.remove(REPRODUCIBLE_KEY) else { return Ok(None) };
    if object.is_empty() {
        *config = serde_json::Value::Null;
    }
    match raw {
        serde_json::Value::Bool(b) => Ok(Some(b)),
        other => Err(SpaceError::new(
            format!("studySpec.algorithmConfig.{REPRODUCIBLE_KEY}"),
            format!("{} is not a boolean: true or false", super::shown_value(&other)),
        )),
    }
}

/// The key of `algorithmConfig` that names the prior studies (transfer learning), the service's.
pub const PRIOR_STUDIES_KEY: &str = "priorStudies";

/// Lifts `priorStudies` (study names, the base of the stack first) out of the algorithm's
/// settings: 1 to [`MAX_PRIOR_STUDIES`] distinct names, each an id within the limits.
fn take_prior_studies(config: &mut serde_json::Value, limits: &Limits) -> Result<Option<Vec<String>>, SpaceError> {
    let Some(object) = config.as_object_mut() else { return Ok(None) };
    let Some(raw) = object.remove(PRIOR_STUDIES_KEY) else { return Ok(None) };
    if object.is_empty() {
        *config = serde_json::Value::Null;
    }
    let field = format!("studySpec.algorithmConfig.{PRIOR_STUDIES_KEY}");
    let serde_json::Value::Array(items) = raw else {
        return Err(SpaceError::new(field, "must be a list of study names (\"projects/…/locations/…/studies/…\")"));
    };
    if items.is_empty() || items.len() > MAX_PRIOR_STUDIES {
        return Err(SpaceError::new(field, format!("{} names; from 1 to {MAX_PRIOR_STUDIES} prior studies", items.len())));
    }
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("{field}[{i}]");
        let serde_json::Value::String(name) = item else { return Err(SpaceError::new(at, "must be a study name (a string)")) };
        limits.check_text(&name, Text::Id).map_err(|e| SpaceError::text(&at, e))?;
        if names.contains(&name) {
            return Err(SpaceError::new(at, format!("{} is named twice", super::shown(&name))));
        }
        names.push(name);
    }
    Ok(Some(names))
}

/// The wire `algorithmConfig`: the designer's settings with the service's keys (the trial lease,
/// `reproducible`, the named prior studies) put back.
fn config_with_service_keys(spec: &StudySpec) -> Option<serde_json::Value> {
    let mut config = spec.algorithm_config.clone();
    let mut put = |key: &str, value: serde_json::Value| {
        if !config.is_object() {
            config = serde_json::Value::Object(Default::default());
        }
        if let Some(object) = config.as_object_mut() {
            object.insert(key.to_owned(), value);
        }
    };
    if let Some(secs) = spec.trial_lease_secs {
        put(TRIAL_LEASE_KEY, serde_json::Value::String(super::format_duration(secs)));
    }
    if let Some(reproducible) = spec.reproducible {
        put(REPRODUCIBLE_KEY, serde_json::Value::Bool(reproducible));
    }
    if spec.transfer.explicit {
        put(PRIOR_STUDIES_KEY, serde_json::json!(spec.transfer.priors));
    }
    (!config.is_null()).then_some(config)
}

impl StudySpecW {
    /// The domain spec, validated. Errors are paths under `studySpec`.
    pub fn into_domain(self, limits: &Limits) -> Result<StudySpec, SpaceError> {
        let at = |e: SpaceError| e.under("studySpec");
        let rules: Vec<&str> = [
            (self.median_automated_stopping_spec.is_some(), "medianAutomatedStoppingSpec"),
            (self.decay_curve_stopping_spec.is_some(), "decayCurveStoppingSpec"),
            (self.convex_automated_stopping_spec.is_some(), "convexAutomatedStoppingSpec"),
            (self.convex_stop_config.is_some(), "convexStopConfig"),
            (self.successive_halving_stopping_spec.is_some(), "successiveHalvingStoppingSpec"),
        ]
        .into_iter()
        .filter_map(|(present, field)| present.then_some(field))
        .collect();
        if rules.len() > 1 {
            return Err(SpaceError::new(
                format!("studySpec.{}", rules[1]),
                format!("a study has one automated stopping rule (a oneof); {} is set too", rules[0]),
            ));
        }
        let mut algorithm_config = self.algorithm_config.unwrap_or(serde_json::Value::Null);
        let trial_lease_secs = take_trial_lease(&mut algorithm_config)?;
        let reproducible = take_reproducible(&mut algorithm_config)?;
        let named_priors = take_prior_studies(&mut algorithm_config, limits)?;
        let disabled = self.transfer_learning_config.as_ref().is_some_and(|c| c.disable_transfer_learning);
        if disabled && named_priors.is_some() {
            return Err(SpaceError::new(
                "studySpec.transferLearningConfig.disableTransferLearning",
                format!(
                    "transfer learning is disabled, yet algorithmConfig.{PRIOR_STUDIES_KEY} names prior studies; ask for one or the other"
                ),
            ));
        }
        let transfer = Transfer { disabled, explicit: named_priors.is_some(), priors: named_priors.unwrap_or_default() };
        let mut metrics = Vec::with_capacity(self.metrics.len());
        for m in self.metrics {
            let goal = if m.goal == GoalTypeW::MINIMIZE { Goal::Minimize } else { Goal::Maximize };
            let safety = m.safety_config.map(|c| Safety {
                threshold: c.safety_threshold.unwrap_or(0.0),
                desired_min_safe_fraction: c.desired_min_safe_trials_fraction.unwrap_or(0.0),
            });
            metrics.push(MetricSpec { id: m.metric_id, goal, safety });
        }
        StudySpec::validate_metrics(&metrics, limits).map_err(at)?;
        let roots = self
            .parameters
            .into_iter()
            .enumerate()
            .map(|(i, p)| param_from_wire(p, &format!("parameters[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(at)?;
        let space = SearchSpace::with_limits(roots, limits).map_err(at)?;
        let stopping = if let Some(m) = self.median_automated_stopping_spec {
            Some(StoppingSpec::Median { use_elapsed_duration: m.use_elapsed_duration })
        } else if let Some(d) = self.decay_curve_stopping_spec {
            Some(StoppingSpec::DecayCurve { use_elapsed_duration: d.use_elapsed_duration })
        } else if let Some(c) = self.convex_automated_stopping_spec {
            Some(StoppingSpec::Convex(c.into_domain(&space, limits, "studySpec.convexAutomatedStoppingSpec")?))
        } else if let Some(c) = self.convex_stop_config {
            Some(StoppingSpec::Convex(ConvexAutomatedStoppingSpecW::from(c).into_domain(&space, limits, "studySpec.convexStopConfig")?))
        } else if let Some(h) = self.successive_halving_stopping_spec {
            Some(StoppingSpec::SuccessiveHalving(h.into_domain("studySpec.successiveHalvingStoppingSpec")?))
        } else {
            None
        };
        let study_stopping = self.study_stopping_config.map(|c| c.into_domain("studySpec.studyStoppingConfig")).transpose()?;
        if let Some(rules) = &study_stopping {
            let objectives = metrics.iter().filter(|m| m.safety.is_none()).count();
            rules.check(objectives).map_err(|(field, reason)| SpaceError::new(format!("studySpec.studyStoppingConfig.{field}"), reason))?;
        }
        limits.check_text(&self.algorithm.0, Text::Token).map_err(|e| SpaceError::text("studySpec.algorithm", e))?;
        let algorithm = if self.algorithm.0.is_empty() { "ALGORITHM_UNSPECIFIED".to_owned() } else { self.algorithm.0 };
        Ok(StudySpec {
            trial_lease_secs,
            reproducible,
            metrics,
            space,
            algorithm,
            algorithm_config,
            observation_noise: match self.observation_noise {
                ObservationNoiseW::LOW => ObservationNoise::Low,
                ObservationNoiseW::HIGH => ObservationNoise::High,
                ObservationNoiseW::OBSERVATION_NOISE_UNSPECIFIED => ObservationNoise::Unspecified,
            },
            measurement_selection: match self.measurement_selection_type {
                MeasurementSelectionTypeW::BEST_MEASUREMENT => MeasurementSelection::Best,
                _ => MeasurementSelection::Last,
            },
            stopping,
            study_stopping,
            transfer,
        })
    }

    /// The wire form of a domain spec.
    pub fn from_domain(spec: &StudySpec) -> StudySpecW {
        StudySpecW {
            metrics: spec.metrics.iter().map(MetricSpecW::from_domain).collect(),
            parameters: spec.space.roots().iter().map(param_to_wire).collect(),
            algorithm: AlgorithmW(spec.algorithm.clone()),
            algorithm_config: config_with_service_keys(spec),
            observation_noise: match spec.observation_noise {
                ObservationNoise::Low => ObservationNoiseW::LOW,
                ObservationNoise::High => ObservationNoiseW::HIGH,
                ObservationNoise::Unspecified => ObservationNoiseW::OBSERVATION_NOISE_UNSPECIFIED,
            },
            measurement_selection_type: match spec.measurement_selection {
                MeasurementSelection::Best => MeasurementSelectionTypeW::BEST_MEASUREMENT,
                MeasurementSelection::Last => MeasurementSelectionTypeW::LAST_MEASUREMENT,
            },
            study_stopping_config: spec.study_stopping.as_ref().map(StudyStoppingConfigW::from_domain),
            median_automated_stopping_spec: match spec.stopping {
                Some(StoppingSpec::Median { use_elapsed_duration }) => Some(MedianAutomatedStoppingSpecW { use_elapsed_duration }),
                _ => None,
            },
            decay_curve_stopping_spec: match spec.stopping {
                Some(StoppingSpec::DecayCurve { use_elapsed_duration }) => Some(DecayCurveAutomatedStoppingSpecW { use_elapsed_duration }),
                _ => None,
            },
            convex_automated_stopping_spec: match &spec.stopping {
                Some(StoppingSpec::Convex(c)) => Some(ConvexAutomatedStoppingSpecW::from_domain(c)),
                _ => None,
            },
            successive_halving_stopping_spec: match &spec.stopping {
                Some(StoppingSpec::SuccessiveHalving(h)) => Some(SuccessiveHalvingStoppingSpecW::from_domain(h)),
                _ => None,
            },
            transfer_learning_config: (spec.transfer != Transfer::default()).then(|| TransferLearningConfigW {
                disable_transfer_learning: spec.transfer.disabled,
                prior_study_names: spec.transfer.priors.clone(),
            }),
            ..Default::default()
        }
    }
}

/// The resource name of a study.
pub fn study_name(s: &StudyRecord) -> String {
    format!("projects/{}/locations/{}/studies/{}", s.project, s.location, s.number)
}

/// The wire form of a stored study.
pub fn study_to_wire(s: &StudyRecord) -> StudyW {
    StudyW {
        name: study_name(s),
        display_name: s.display_name.clone(),
        study_spec: StudySpecW::from_domain(&s.spec),
        state: state_to_wire(s.state),
        create_time: format_time(s.create_time_ms),
        inactive_reason: s.inactive_reason.clone(),
    }
}

/// The wire form of a study state.
pub fn state_to_wire(s: StudyState) -> StudyStateW {
    match s {
        StudyState::Active => StudyStateW::ACTIVE,
        StudyState::Inactive => StudyStateW::INACTIVE,
        StudyState::Completed => StudyStateW::COMPLETED,
    }
}
