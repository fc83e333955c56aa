//! Wire shapes of `Study`, `StudySpec`, `MetricSpec`, `ParameterSpec` and
//! `ConditionalParameterSpec`, with their conversions to bo-core's `StudySpec`.

use bo_core::{
    Conditional, Domain, Goal, MeasurementSelection, MetricSpec, ObservationNoise, ParamSpec, ParamValue, ParentValues, Scale, SearchSpace,
    SpaceError, StoppingSpec, StudySpec,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{int64, is_default, lenient_f64, lenient_opt_f64, lenient_vec_f64, opt_int64, vec_int64, wire_enum};
use bo_core::Limits;
use bo_core::limits::Text;

wire_enum! {
    /// `Study.State`.
    #[schema(as = StudyState)]
    StudyStateW { #[default] STATE_UNSPECIFIED = 0, ACTIVE = 1, INACTIVE = 2, COMPLETED = 3 }
}
wire_enum! {
    /// `StudySpec.MetricSpec.GoalType`; unspecified means MAXIMIZE.
    GoalType { #[default] GOAL_TYPE_UNSPECIFIED = 0, MAXIMIZE = 1, MINIMIZE = 2 }
}
wire_enum! {
    /// `StudySpec.ParameterSpec.ScaleType`; unspecified means linear.
    ScaleType { #[default] SCALE_TYPE_UNSPECIFIED = 0, UNIT_LINEAR_SCALE = 1, UNIT_LOG_SCALE = 2, UNIT_REVERSE_LOG_SCALE = 3 }
}
wire_enum! {
    /// `StudySpec.ObservationNoise`.
    #[schema(as = ObservationNoise)]
    ObservationNoiseW { #[default] OBSERVATION_NOISE_UNSPECIFIED = 0, LOW = 1, HIGH = 2 }
}
wire_enum! {
    /// `StudySpec.MeasurementSelectionType`; unspecified means LAST_MEASUREMENT.
    MeasurementSelectionType { #[default] MEASUREMENT_SELECTION_TYPE_UNSPECIFIED = 0, LAST_MEASUREMENT = 1, BEST_MEASUREMENT = 2 }
}

/// The algorithm of a study: Vertex's enum names (or numbers) and bo's own names, as a string.
#[derive(Clone, Debug, Default, PartialEq, Serialize, ToSchema)]
#[schema(value_type = String, example = "GRID_SEARCH")]
pub struct AlgorithmName(pub String);

impl<'de> Deserialize<'de> for AlgorithmName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(AlgorithmName(s)),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(0) => Ok(AlgorithmName("ALGORITHM_UNSPECIFIED".into())),
                Some(2) => Ok(AlgorithmName("GRID_SEARCH".into())),
                Some(3) => Ok(AlgorithmName("RANDOM_SEARCH".into())),
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
    pub algorithm: AlgorithmName,
    /// Settings of the algorithm (bo extension), plus `trialLease`: how long an ACTIVE trial's
    /// client may go unseen before the trial goes to the next client (`"600s"`; `"0s"`: never;
    /// absent: the server's `--trial-lease`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithm_config: Option<serde_json::Value>,
    /// How noisy the objective is.
    #[serde(skip_serializing_if = "is_default")]
    pub observation_noise: ObservationNoiseW,
    /// Which measurement completes a trial that is completed without a final one.
    #[serde(skip_serializing_if = "is_default")]
    pub measurement_selection_type: MeasurementSelectionType,
    /// The median stopping rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_automated_stopping_spec: Option<MedianAutomatedStoppingSpec>,
    /// Not supported: rejected with a 400.
    #[serde(skip_serializing)]
    pub decay_curve_stopping_spec: Option<serde_json::Value>,
    /// Not supported: rejected with a 400.
    #[serde(skip_serializing)]
    pub convex_automated_stopping_spec: Option<serde_json::Value>,
    /// Not supported: rejected with a 400.
    #[serde(skip_serializing)]
    pub convex_stop_config: Option<serde_json::Value>,
    /// Not supported: rejected with a 400.
    #[serde(skip_serializing)]
    pub study_stopping_config: Option<serde_json::Value>,
}

fn algorithm_is_default(a: &AlgorithmName) -> bool {
    a.0.is_empty() || a.0 == "ALGORITHM_UNSPECIFIED"
}

/// `StudySpec.MedianAutomatedStoppingSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MedianAutomatedStoppingSpec {
    /// Compare trials at equal elapsed time rather than equal step count.
    #[serde(skip_serializing_if = "is_default")]
    pub use_elapsed_duration: bool,
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
    pub goal: GoalType,
    /// Not supported: rejected with a 400.
    #[serde(skip_serializing)]
    pub safety_config: Option<serde_json::Value>,
}

/// `StudySpec.ParameterSpec`: exactly one of the four value specs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = ParameterSpec)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ParameterSpecW {
    /// Required; unique across the whole tree, no whitespace.
    #[schema(pattern = r"^\S+$", required = true)]
    pub parameter_id: String,
    /// A real in [minValue, maxValue].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub double_value_spec: Option<DoubleValueSpec>,
    /// An integer in [minValue, maxValue].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integer_value_spec: Option<IntegerValueSpec>,
    /// One of a list of strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub categorical_value_spec: Option<CategoricalValueSpec>,
    /// One of an increasing list of numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discrete_value_spec: Option<DiscreteValueSpec>,
    /// How a numeric parameter is spread; leave unset for CATEGORICAL.
    #[serde(skip_serializing_if = "is_default")]
    pub scale_type: ScaleType,
    /// Children active under some values of this parameter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(no_recursion)]
    pub conditional_parameter_specs: Vec<ConditionalParameterSpec>,
}

/// `DoubleValueSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DoubleValueSpec {
    /// Smallest value.
    #[serde(deserialize_with = "lenient_f64", skip_serializing_if = "is_default")]
    pub min_value: f64,
    /// Largest value.
    #[serde(deserialize_with = "lenient_f64", skip_serializing_if = "is_default")]
    pub max_value: f64,
    /// The value to try first.
    #[serde(deserialize_with = "lenient_opt_f64", skip_serializing_if = "Option::is_none")]
    pub default_value: Option<f64>,
}

/// `IntegerValueSpec` (int64 as strings).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct IntegerValueSpec {
    /// Smallest value.
    #[serde(with = "int64", skip_serializing_if = "is_default")]
    #[schema(schema_with = super::int64_schema)]
    pub min_value: i64,
    /// Largest value.
    #[serde(with = "int64", skip_serializing_if = "is_default")]
    #[schema(schema_with = super::int64_schema)]
    pub max_value: i64,
    /// The value to try first.
    #[serde(with = "opt_int64", skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = super::opt_int64_schema)]
    pub default_value: Option<i64>,
}

/// `CategoricalValueSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CategoricalValueSpec {
    /// The values.
    pub values: Vec<String>,
    /// The value to try first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
}

/// `DiscreteValueSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DiscreteValueSpec {
    /// The values, increasing.
    #[serde(deserialize_with = "lenient_vec_f64")]
    pub values: Vec<f64>,
    /// The value to try first.
    #[serde(deserialize_with = "lenient_opt_f64", skip_serializing_if = "Option::is_none")]
    pub default_value: Option<f64>,
}

/// `ConditionalParameterSpec`: a child and the parent values that activate it (exactly one of
/// the three conditions, matching the parent's type).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ConditionalParameterSpec {
    /// The child.
    #[schema(no_recursion)]
    pub parameter_spec: Box<ParameterSpecW>,
    /// For a CATEGORICAL parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_categorical_values: Option<CategoricalValueCondition>,
    /// For an INTEGER parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_int_values: Option<IntValueCondition>,
    /// For a DISCRETE parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_discrete_values: Option<DiscreteValueCondition>,
}

/// Parent values of a CATEGORICAL parent.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CategoricalValueCondition {
    /// The values.
    pub values: Vec<String>,
}

/// Parent values of an INTEGER parent (int64 as strings).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IntValueCondition {
    /// The values.
    #[serde(with = "vec_int64")]
    #[schema(schema_with = super::int64_list_schema)]
    pub values: Vec<i64>,
}

/// Parent values of a DISCRETE parent.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DiscreteValueCondition {
    /// The values.
    #[serde(deserialize_with = "lenient_vec_f64")]
    pub values: Vec<f64>,
}

fn unsupported(path: &str, what: &str) -> SpaceError {
    SpaceError::new(
        path,
        format!(
            "{what} is not supported; bo supports medianAutomatedStoppingSpec for automated stopping and stops a study when its search space is exhausted"
        ),
    )
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
                super::shown(&raw.to_string())
            ),
        )),
    }
}

/// The wire `algorithmConfig`: the designer's settings with the trial lease put back.
fn config_with_trial_lease(spec: &StudySpec) -> Option<serde_json::Value> {
    let mut config = spec.algorithm_config.clone();
    if let Some(secs) = spec.trial_lease_secs {
        if !config.is_object() {
            config = serde_json::Value::Object(Default::default());
        }
        if let Some(object) = config.as_object_mut() {
            object.insert(TRIAL_LEASE_KEY.to_owned(), serde_json::Value::String(super::format_duration(secs)));
        }
    }
    (!config.is_null()).then_some(config)
}

impl StudySpecW {
    /// The domain spec, validated. Errors are paths under `studySpec`.
    pub fn into_domain(self, limits: &Limits) -> Result<StudySpec, SpaceError> {
        let at = |e: SpaceError| e.under("studySpec");
        for (present, field) in [
            (self.decay_curve_stopping_spec.is_some(), "decayCurveStoppingSpec"),
            (self.convex_automated_stopping_spec.is_some(), "convexAutomatedStoppingSpec"),
            (self.convex_stop_config.is_some(), "convexStopConfig"),
            (self.study_stopping_config.is_some(), "studyStoppingConfig"),
        ] {
            if present {
                return Err(unsupported(&format!("studySpec.{field}"), field));
            }
        }
        let mut algorithm_config = self.algorithm_config.unwrap_or(serde_json::Value::Null);
        let trial_lease_secs = take_trial_lease(&mut algorithm_config)?;
        let mut metrics = Vec::with_capacity(self.metrics.len());
        for (i, m) in self.metrics.into_iter().enumerate() {
            if m.safety_config.is_some() {
                return Err(SpaceError::new(format!("studySpec.metrics[{i}].safetyConfig"), "safety constraints are not supported yet"));
            }
            let goal = if m.goal == GoalType::MINIMIZE { Goal::Minimize } else { Goal::Maximize };
            metrics.push(MetricSpec { id: m.metric_id, goal });
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
        limits.check_text(&self.algorithm.0, Text::Token).map_err(|e| SpaceError::text("studySpec.algorithm", e))?;
        let algorithm = if self.algorithm.0.is_empty() { "ALGORITHM_UNSPECIFIED".to_owned() } else { self.algorithm.0 };
        Ok(StudySpec {
            trial_lease_secs,
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
                MeasurementSelectionType::BEST_MEASUREMENT => MeasurementSelection::Best,
                _ => MeasurementSelection::Last,
            },
            stopping: self.median_automated_stopping_spec.map(|m| StoppingSpec::Median { use_elapsed_duration: m.use_elapsed_duration }),
        })
    }

    /// The wire form of a domain spec.
    pub fn from_domain(spec: &StudySpec) -> StudySpecW {
        StudySpecW {
            metrics: spec
                .metrics
                .iter()
                .map(|m| MetricSpecW {
                    metric_id: m.id.clone(),
                    goal: match m.goal {
                        Goal::Maximize => GoalType::MAXIMIZE,
                        Goal::Minimize => GoalType::MINIMIZE,
                    },
                    safety_config: None,
                })
                .collect(),
            parameters: spec.space.roots().iter().map(param_to_wire).collect(),
            algorithm: AlgorithmName(spec.algorithm.clone()),
            algorithm_config: config_with_trial_lease(spec),
            observation_noise: match spec.observation_noise {
                ObservationNoise::Low => ObservationNoiseW::LOW,
                ObservationNoise::High => ObservationNoiseW::HIGH,
                ObservationNoise::Unspecified => ObservationNoiseW::OBSERVATION_NOISE_UNSPECIFIED,
            },
            measurement_selection_type: match spec.measurement_selection {
                MeasurementSelection::Best => MeasurementSelectionType::BEST_MEASUREMENT,
                MeasurementSelection::Last => MeasurementSelectionType::LAST_MEASUREMENT,
            },
            median_automated_stopping_spec: spec.stopping.map(|s| match s {
                StoppingSpec::Median { use_elapsed_duration } => MedianAutomatedStoppingSpec { use_elapsed_duration },
            }),
            ..Default::default()
        }
    }
}

fn param_from_wire(p: ParameterSpecW, path: &str) -> Result<ParamSpec, SpaceError> {
    let n_specs = [
        p.double_value_spec.is_some(),
        p.integer_value_spec.is_some(),
        p.categorical_value_spec.is_some(),
        p.discrete_value_spec.is_some(),
    ]
    .into_iter()
    .filter(|b| *b)
    .count();
    if n_specs != 1 {
        return Err(SpaceError::new(
            path,
            format!(
                "parameter {:?} needs exactly one of doubleValueSpec, integerValueSpec, categoricalValueSpec, discreteValueSpec; {n_specs} given",
                p.parameter_id
            ),
        ));
    }
    let (domain, default) = if let Some(d) = p.double_value_spec {
        (Domain::Double { min: d.min_value, max: d.max_value }, d.default_value.map(ParamValue::Float))
    } else if let Some(i) = p.integer_value_spec {
        (Domain::Integer { min: i.min_value, max: i.max_value }, i.default_value.map(ParamValue::Int))
    } else if let Some(c) = p.categorical_value_spec {
        (Domain::Categorical { values: c.values }, c.default_value.map(ParamValue::Categorical))
    } else {
        let d = p.discrete_value_spec.expect("one spec is set");
        (Domain::Discrete { values: d.values }, d.default_value.map(ParamValue::Float))
    };
    let scale = match p.scale_type {
        ScaleType::UNIT_LOG_SCALE => Scale::Log,
        ScaleType::UNIT_REVERSE_LOG_SCALE => Scale::ReverseLog,
        ScaleType::UNIT_LINEAR_SCALE | ScaleType::SCALE_TYPE_UNSPECIFIED => Scale::Linear,
    };
    let mut children = Vec::with_capacity(p.conditional_parameter_specs.len());
    for (j, c) in p.conditional_parameter_specs.into_iter().enumerate() {
        let cpath = format!("{path}.conditionalParameterSpecs[{j}]");
        let conditions = [c.parent_categorical_values.is_some(), c.parent_int_values.is_some(), c.parent_discrete_values.is_some()];
        if conditions.iter().filter(|b| **b).count() != 1 {
            return Err(SpaceError::new(cpath, "needs exactly one of parentCategoricalValues, parentIntValues, parentDiscreteValues"));
        }
        let parent_values = if let Some(v) = c.parent_categorical_values {
            ParentValues::Categorical(v.values)
        } else if let Some(v) = c.parent_int_values {
            ParentValues::Integer(v.values)
        } else {
            ParentValues::Discrete(c.parent_discrete_values.expect("one condition is set").values)
        };
        let spec = param_from_wire(*c.parameter_spec, &format!("{cpath}.parameterSpec"))?;
        children.push(Conditional { parent_values, spec });
    }
    Ok(ParamSpec { id: p.parameter_id, domain, scale, default, children })
}

fn param_to_wire(p: &ParamSpec) -> ParameterSpecW {
    let mut w = ParameterSpecW { parameter_id: p.id.clone(), ..Default::default() };
    let float_default = || match p.default {
        Some(ParamValue::Float(x)) => Some(x),
        _ => None,
    };
    match &p.domain {
        Domain::Double { min, max } => {
            w.double_value_spec = Some(DoubleValueSpec { min_value: *min, max_value: *max, default_value: float_default() })
        }
        Domain::Integer { min, max } => {
            let default_value = match p.default {
                Some(ParamValue::Int(i)) => Some(i),
                _ => None,
            };
            w.integer_value_spec = Some(IntegerValueSpec { min_value: *min, max_value: *max, default_value })
        }
        Domain::Discrete { values } => {
            w.discrete_value_spec = Some(DiscreteValueSpec { values: values.clone(), default_value: float_default() })
        }
        Domain::Categorical { values } => {
            let default_value = match &p.default {
                Some(ParamValue::Categorical(s)) => Some(s.clone()),
                _ => None,
            };
            w.categorical_value_spec = Some(CategoricalValueSpec { values: values.clone(), default_value })
        }
    }
    if !matches!(p.domain, Domain::Categorical { .. }) {
        w.scale_type = match p.scale {
            Scale::Linear => ScaleType::UNIT_LINEAR_SCALE,
            Scale::Log => ScaleType::UNIT_LOG_SCALE,
            Scale::ReverseLog => ScaleType::UNIT_REVERSE_LOG_SCALE,
        };
    }
    w.conditional_parameter_specs = p
        .children
        .iter()
        .map(|c| {
            let mut cw = ConditionalParameterSpec { parameter_spec: Box::new(param_to_wire(&c.spec)), ..Default::default() };
            match &c.parent_values {
                ParentValues::Categorical(v) => cw.parent_categorical_values = Some(CategoricalValueCondition { values: v.clone() }),
                ParentValues::Integer(v) => cw.parent_int_values = Some(IntValueCondition { values: v.clone() }),
                ParentValues::Discrete(v) => cw.parent_discrete_values = Some(DiscreteValueCondition { values: v.clone() }),
            }
            cw
        })
        .collect();
    w
}
