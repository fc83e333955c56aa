//! Wire shapes of the automated stopping specs — a trial's (`medianAutomatedStoppingSpec`,
//! `decayCurveStoppingSpec`, `convexAutomatedStoppingSpec` and bo's
//! `successiveHalvingStoppingSpec`) and the study's (`studyStoppingConfig`) — with their
//! conversions to bo-core's `StoppingSpec` and `StudyStoppingConfig`.

use bo_core::limits::Text;
use bo_core::stopping::convex;
use bo_core::stopping::spec::{self, Promotion, SuccessiveHalving};
use bo_core::study_stopping::{StudyStoppingConfig, TimeConstraint};
use bo_core::{ConvexStopping, FieldError, Limits, SearchSpace};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{is_default, opt_int64, wire_enum};

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

wire_enum! {
    /// `medianAutomatedStoppingSpec.medianOf` (bo extension): what of each completed trial the
    /// median is taken of at a trial's step. `RUNNING_AVERAGE` (Vizier's rule): its running
    /// average up to the step, which trails the value there on a climbing curve, so fewer trials
    /// stop, later. `VALUE_AT_POSITION` (Optuna's `MedianPruner`): its value at the step itself,
    /// among the trials measured there. Unspecified means RUNNING_AVERAGE.
    #[schema(as = MedianOf)]
    MedianOfW { #[default] MEDIAN_OF_UNSPECIFIED = 0, RUNNING_AVERAGE = 1, VALUE_AT_POSITION = 2 }
}

/// `StudySpec.MedianAutomatedStoppingSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = MedianAutomatedStoppingSpec)]
pub struct MedianAutomatedStoppingSpecW {
    /// Compare trials at equal elapsed time rather than equal step count.
    #[serde(skip_serializing_if = "is_default")]
    pub use_elapsed_duration: bool,
    /// bo extension: how many completed trials must have reached a position before a trial is
    /// judged there (Optuna's `n_startup_trials`); absent: 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 100000)]
    pub min_completed_trials: Option<u32>,
    /// bo extension: a trial is judged from this step (or elapsed second) on (Optuna's
    /// `n_warmup_steps`); absent: from its first measurement.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "super::lenient_opt_f64")]
    pub min_step_count: Option<f64>,
    /// bo extension: a trial is judged only at its first measurement at or past each
    /// `minStepCount + k · intervalSteps` (Optuna's `interval_steps`); absent: at every one.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "super::lenient_opt_f64")]
    pub interval_steps: Option<f64>,
    /// bo extension: what of each completed trial the median is of.
    #[serde(skip_serializing_if = "is_default")]
    pub median_of: MedianOfW,
}

impl MedianAutomatedStoppingSpecW {
    /// The rule's settings, checked; errors name the field under `path`.
    pub fn into_domain(self, path: &str) -> Result<spec::MedianStopping, FieldError> {
        let rule = spec::MedianStopping {
            use_elapsed_duration: self.use_elapsed_duration,
            min_completed_trials: self.min_completed_trials,
            min_step_count: self.min_step_count,
            interval_steps: self.interval_steps,
            median_of: match self.median_of {
                MedianOfW::VALUE_AT_POSITION => spec::MedianOf::ValueAtPosition,
                _ => spec::MedianOf::RunningAverage,
            },
        };
        rule.check(path)?;
        Ok(rule)
    }

    /// The wire form of the rule's settings.
    pub fn from_domain(rule: &spec::MedianStopping) -> MedianAutomatedStoppingSpecW {
        MedianAutomatedStoppingSpecW {
            use_elapsed_duration: rule.use_elapsed_duration,
            min_completed_trials: rule.min_completed_trials,
            min_step_count: rule.min_step_count,
            interval_steps: rule.interval_steps,
            median_of: match rule.median_of {
                spec::MedianOf::ValueAtPosition => MedianOfW::VALUE_AT_POSITION,
                spec::MedianOf::RunningAverage => MedianOfW::MEDIAN_OF_UNSPECIFIED,
            },
        }
    }
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
    pub(super) fn into_domain(self, path: &str) -> Result<SuccessiveHalving, FieldError> {
        let Some(max) = self.max_step_count else {
            return Err(FieldError::new(format!("{path}.maxStepCount"), "is required: the position of a full training"));
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

    pub(super) fn from_domain(h: &SuccessiveHalving) -> SuccessiveHalvingStoppingSpecW {
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
    pub(super) fn into_domain(self, space: &SearchSpace, limits: &Limits, path: &str) -> Result<ConvexStopping, FieldError> {
        limits
            .check_text(&self.learning_rate_parameter_name, Text::Id)
            .map_err(|e| FieldError::text(format!("{path}.learningRateParameterName"), e))?;
        if self.update_all_stopped_trials {
            return Err(FieldError::new(
                format!("{path}.updateAllStoppedTrials"),
                "is not supported: bo predicts the last measurement of each trial once, when it stops; leave it false",
            ));
        }
        if let Some(k) = self.min_measurement_count
            && !(1..=i64::from(convex::MAX_MIN_MEASUREMENTS)).contains(&k)
        {
            return Err(FieldError::new(
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

    pub(super) fn from_domain(c: &ConvexStopping) -> ConvexAutomatedStoppingSpecW {
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
    pub(super) fn into_domain(self, path: &str) -> Result<StudyStoppingConfig, FieldError> {
        let count = |v: Option<i64>, field: &str| -> Result<Option<i64>, FieldError> {
            match v {
                Some(n) if !(0..=i64::from(i32::MAX)).contains(&n) => {
                    Err(FieldError::new(format!("{path}.{field}"), format!("must be 0 to 2147483647 (an Int32Value), got {n}")))
                }
                other => Ok(other),
            }
        };
        let duration = |text: &str, field: &str| -> Result<Option<f64>, FieldError> {
            if text.is_empty() {
                return Ok(None);
            }
            match super::parse_duration(text) {
                Some(s) if s >= 0.0 => Ok(Some(s)),
                _ => Err(FieldError::new(
                    format!("{path}.{field}"),
                    format!(
                        "{} is not a non-negative duration like \"3600s\" (at most {}s, 9 fractional digits)",
                        super::shown(text),
                        super::MAX_DURATION_SECS
                    ),
                )),
            }
        };
        let constraint = |c: Option<StudyTimeConstraintW>, field: &str| -> Result<Option<TimeConstraint>, FieldError> {
            let Some(c) = c else { return Ok(None) };
            match (c.max_duration.is_empty(), c.end_time.is_empty()) {
                (false, true) => Ok(duration(&c.max_duration, &format!("{field}.maxDuration"))?.map(TimeConstraint::MaxDurationSecs)),
                (true, false) => chrono::DateTime::parse_from_rfc3339(&c.end_time)
                    .map(|t| Some(TimeConstraint::EndTimeMs(t.timestamp_millis())))
                    .map_err(|_| {
                        FieldError::new(format!("{path}.{field}.endTime"), format!("{} is not an RFC 3339 time", super::shown(&c.end_time)))
                    }),
                _ => Err(FieldError::new(format!("{path}.{field}"), "give exactly one of maxDuration and endTime")),
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

    pub(super) fn from_domain(c: &StudyStoppingConfig) -> StudyStoppingConfigW {
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
