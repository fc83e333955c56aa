//! Wire shapes of `Study`, `StudySpec` and `MetricSpec`, with their conversions to bo-core's
//! `StudySpec` (the parameter tree is `parameter.rs`'s).

use bo_core::{
    FieldError, Goal, MeasurementSelection, MetricSpec, ObservationNoise, Safety, SearchSpace, StoppingSpec, StudySpec, Transfer,
};
use bo_store::{StudyRecord, StudySettings, StudyState};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::parameter::{ParameterSpecW, param_from_wire, param_to_wire};
use super::stopping::{
    ConvexAutomatedStoppingSpecW, ConvexStopConfigW, DecayCurveAutomatedStoppingSpecW, MedianAutomatedStoppingSpecW, StudyStoppingConfigW,
    SuccessiveHalvingStoppingSpecW,
};
use super::{format_time, is_default, wire_enum};
use bo_core::Limits;
use bo_core::designer::gp::priors::MAX_PRIOR_STUDIES;
use bo_core::limits::Text;

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
    /// Required: at least one, unless `openSearchSpace` (then any number, none included).
    #[schema(required = true)]
    pub parameters: Vec<ParameterSpecW>,
    /// bo extension: the search space grows as trials ask for parameters — a define-by-run
    /// client (Optuna's `BoSampler`) adds each parameter its objective asks for with
    /// `…/trials/{trial}:addTrialParameters` (or `…/studies/{study}:addParameters`), placed
    /// under the parent value it was asked under. A trial then holds the parameters it was
    /// given; one added after it ran is inactive in it. Not with `GRID_SEARCH`.
    #[serde(skip_serializing_if = "is_default")]
    pub open_search_space: bool,
    /// Output only (bo extension), int64 as a string: how many times an open study's search
    /// space has grown; absent while 0.
    #[serde(with = "super::int64", skip_serializing_if = "is_default")]
    #[schema(schema_with = super::revision_schema)]
    pub search_space_revision: i64,
    /// `ALGORITHM_UNSPECIFIED` (= `AUTO`), `RANDOM_SEARCH`, `QUASI_RANDOM_SEARCH`, `GRID_SEARCH`,
    /// `GP_BANDIT`, `ADD_TREE`, `BRANCHING_NESTED`, `ADD_GP_UCB`, `OVERLAP_ADD_GP`, `REMBO`.
    #[serde(skip_serializing_if = "algorithm_is_default")]
    pub algorithm: AlgorithmW,
    /// Settings of the algorithm (bo extension), plus `trialLease`: how long an ACTIVE trial's
    /// client may go unseen before the trial goes to the next client (`"600s"`; `"0s"`: never;
    /// absent: the server's `--trial-lease`), `reproducible`: `true` makes suggestions
    /// depend only on the study's data, its seed and the order of calls, never on timing
    /// (absent: the server's `--reproducible`), and `seed`: the seed of the study's random
    /// choices, an integer from 0 to 2^53 (absent: one from the study's number and name), and
    /// `expectedNumTrials`: how many trials the study expects to run, from 1 to 2^31 − 1 — the
    /// initial design is sized to it as to `studyStoppingConfig.maxNumTrials`, but the study
    /// does not stop there.
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
    /// the best `1/reductionFactor` of the trials that reached its rung (at the last rung, of
    /// those started before it: a newcomer never stops the leader there).
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
fn take_trial_lease(config: &mut serde_json::Value) -> Result<Option<f64>, FieldError> {
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
        _ => Err(FieldError::new(
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
fn take_reproducible(config: &mut serde_json::Value) -> Result<Option<bool>, FieldError> {
    let Some(object) = config.as_object_mut() else { return Ok(None) };
    let Some(raw) = object.remove(REPRODUCIBLE_KEY) else { return Ok(None) };
    if object.is_empty() {
        *config = serde_json::Value::Null;
    }
    match raw {
        serde_json::Value::Bool(b) => Ok(Some(b)),
        other => Err(FieldError::new(
            format!("studySpec.algorithmConfig.{REPRODUCIBLE_KEY}"),
            format!("{} is not a boolean: true or false", super::shown_value(&other)),
        )),
    }
}

/// The key of `algorithmConfig` that seeds the study's random choices, the service's: the same
/// seed, data and calls give the same suggestions (with `reproducible`, whatever the timing).
pub const SEED_KEY: &str = "seed";

/// Lifts `seed` (an integer from 0 to 2^53, as scikit-learn's `random_state` or Optuna's `seed`)
/// out of the algorithm's settings, so the designer never sees it.
fn take_seed(config: &mut serde_json::Value) -> Result<Option<i64>, FieldError> {
    let Some(object) = config.as_object_mut() else { return Ok(None) };
    let Some(raw) = object.remove(SEED_KEY) else { return Ok(None) };
    if object.is_empty() {
        *config = serde_json::Value::Null;
    }
    let max = bo_core::space::MAX_SAFE_INTEGER;
    match raw.as_i64().or_else(|| raw.as_str().and_then(|s| s.trim().parse().ok())) {
        Some(seed) if (0..=max).contains(&seed) => Ok(Some(seed)),
        _ => Err(FieldError::new(
            format!("studySpec.algorithmConfig.{SEED_KEY}"),
            format!("{} is not a seed: an integer from 0 to {max}", super::shown_value(&raw)),
        )),
    }
}

/// The key of `algorithmConfig` that says how many trials the study expects to run, without
/// stopping it there (a bo extension; docs/api.md, beside `studyStoppingConfig`).
pub const EXPECTED_TRIALS_KEY: &str = "expectedNumTrials";

/// The most trials a study may expect: `maxNumTrials`'s bound (an `Int32Value`).
const MAX_EXPECTED_TRIALS: u64 = 2_147_483_647;

/// Lifts `expectedNumTrials` (an integer from 1 to 2^31 − 1, as `maxNumTrials`) out of the
/// algorithm's settings into the spec, where every designer with an initial design reads it.
fn take_expected_trials(config: &mut serde_json::Value) -> Result<Option<u32>, FieldError> {
    let Some(object) = config.as_object_mut() else { return Ok(None) };
    let Some(raw) = object.remove(EXPECTED_TRIALS_KEY) else { return Ok(None) };
    if object.is_empty() {
        *config = serde_json::Value::Null;
    }
    match raw.as_u64().filter(|n| (1..=MAX_EXPECTED_TRIALS).contains(n)).and_then(|n| u32::try_from(n).ok()) {
        Some(n) => Ok(Some(n)),
        None => Err(FieldError::new(
            format!("studySpec.algorithmConfig.{EXPECTED_TRIALS_KEY}"),
            format!("{} is not a number of trials: an integer from 1 to {MAX_EXPECTED_TRIALS}", super::shown_value(&raw)),
        )),
    }
}

/// The key of `algorithmConfig` that names the prior studies (transfer learning), the service's.
pub const PRIOR_STUDIES_KEY: &str = "priorStudies";

/// Lifts `priorStudies` (study names, the base of the stack first) out of the algorithm's
/// settings: 1 to [`MAX_PRIOR_STUDIES`] distinct names, each an id within the limits.
fn take_prior_studies(config: &mut serde_json::Value, limits: &Limits) -> Result<Option<Vec<String>>, FieldError> {
    let Some(object) = config.as_object_mut() else { return Ok(None) };
    let Some(raw) = object.remove(PRIOR_STUDIES_KEY) else { return Ok(None) };
    if object.is_empty() {
        *config = serde_json::Value::Null;
    }
    let field = format!("studySpec.algorithmConfig.{PRIOR_STUDIES_KEY}");
    let serde_json::Value::Array(items) = raw else {
        return Err(FieldError::new(field, "must be a list of study names (\"projects/…/locations/…/studies/…\")"));
    };
    if items.is_empty() || items.len() > MAX_PRIOR_STUDIES {
        return Err(FieldError::new(field, format!("{} names; from 1 to {MAX_PRIOR_STUDIES} prior studies", items.len())));
    }
    let mut names = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = format!("{field}[{i}]");
        let serde_json::Value::String(name) = item else { return Err(FieldError::new(at, "must be a study name (a string)")) };
        limits.check_text(&name, Text::Id).map_err(|e| FieldError::text(&at, e))?;
        if names.contains(&name) {
            return Err(FieldError::new(at, format!("{} is named twice", super::shown(&name))));
        }
        names.push(name);
    }
    Ok(Some(names))
}

/// The wire `algorithmConfig`: the designer's settings with the service's keys (the trial lease,
/// `reproducible`, the seed, the named prior studies, the expected number of trials) put back.
fn config_with_service_keys(spec: &StudySpec, settings: &StudySettings) -> Option<serde_json::Value> {
    let mut config = spec.algorithm_config.clone();
    let mut put = |key: &str, value: serde_json::Value| {
        if !config.is_object() {
            config = serde_json::Value::Object(Default::default());
        }
        if let Some(object) = config.as_object_mut() {
            object.insert(key.to_owned(), value);
        }
    };
    if let Some(secs) = settings.trial_lease_secs {
        put(TRIAL_LEASE_KEY, serde_json::Value::String(super::format_duration(secs)));
    }
    if let Some(reproducible) = settings.reproducible {
        put(REPRODUCIBLE_KEY, serde_json::Value::Bool(reproducible));
    }
    if let Some(seed) = settings.seed {
        put(SEED_KEY, serde_json::json!(seed));
    }
    if spec.transfer.explicit {
        put(PRIOR_STUDIES_KEY, serde_json::json!(spec.transfer.priors));
    }
    if let Some(n) = spec.expected_trials {
        put(EXPECTED_TRIALS_KEY, serde_json::json!(n));
    }
    (!config.is_null()).then_some(config)
}

impl StudySpecW {
    /// The domain spec, validated, and the service's settings the client put in its
    /// `algorithmConfig`. Errors are paths under `studySpec`.
    pub fn into_domain(self, limits: &Limits) -> Result<(StudySpec, StudySettings), FieldError> {
        let at = |e: FieldError| e.under("studySpec");
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
            return Err(FieldError::new(
                format!("studySpec.{}", rules[1]),
                format!("a study has one automated stopping rule (a oneof); {} is set too", rules[0]),
            ));
        }
        let mut algorithm_config = self.algorithm_config.unwrap_or(serde_json::Value::Null);
        let trial_lease_secs = take_trial_lease(&mut algorithm_config)?;
        let reproducible = take_reproducible(&mut algorithm_config)?;
        let seed = take_seed(&mut algorithm_config)?;
        let named_priors = take_prior_studies(&mut algorithm_config, limits)?;
        let expected_trials = take_expected_trials(&mut algorithm_config)?;
        let disabled = self.transfer_learning_config.as_ref().is_some_and(|c| c.disable_transfer_learning);
        if disabled && named_priors.is_some() {
            return Err(FieldError::new(
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
        let open_space = self.open_search_space;
        let roots = self
            .parameters
            .into_iter()
            .enumerate()
            .map(|(i, p)| param_from_wire(p, &format!("parameters[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(at)?;
        let space =
            if open_space && roots.is_empty() { SearchSpace::empty() } else { SearchSpace::with_limits(roots, limits).map_err(at)? };
        let stopping = if let Some(m) = self.median_automated_stopping_spec {
            Some(StoppingSpec::Median(m.into_domain("studySpec.medianAutomatedStoppingSpec")?))
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
            rules.check(objectives).map_err(|(field, reason)| FieldError::new(format!("studySpec.studyStoppingConfig.{field}"), reason))?;
        }
        limits.check_text(&self.algorithm.0, Text::Token).map_err(|e| FieldError::text("studySpec.algorithm", e))?;
        let algorithm = if self.algorithm.0.is_empty() { "ALGORITHM_UNSPECIFIED".to_owned() } else { self.algorithm.0 };
        if open_space && algorithm == "GRID_SEARCH" {
            return Err(FieldError::new(
                "studySpec.openSearchSpace",
                "GRID_SEARCH enumerates a fixed space; an open search space takes any other algorithm",
            ));
        }
        let spec = StudySpec {
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
            expected_trials,
            transfer,
            open_space,
            space_revision: 0,
        };
        Ok((spec, StudySettings { trial_lease_secs, reproducible, seed }))
    }

    /// The wire form of a domain spec and the service's settings of its study.
    pub fn from_domain(spec: &StudySpec, settings: &StudySettings) -> StudySpecW {
        StudySpecW {
            metrics: spec.metrics.iter().map(MetricSpecW::from_domain).collect(),
            parameters: spec.space.roots().iter().map(param_to_wire).collect(),
            open_search_space: spec.open_space,
            search_space_revision: spec.space_revision,
            algorithm: AlgorithmW(spec.algorithm.clone()),
            algorithm_config: config_with_service_keys(spec, settings),
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
            median_automated_stopping_spec: match &spec.stopping {
                Some(StoppingSpec::Median(m)) => Some(MedianAutomatedStoppingSpecW::from_domain(m)),
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
        study_spec: StudySpecW::from_domain(&s.spec, &s.settings),
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
