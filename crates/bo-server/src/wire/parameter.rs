//! Wire shape of `StudySpec.ParameterSpec` — the parameter tree with its value specs and
//! `ConditionalParameterSpec` children — with conversions to and from bo-core's `ParamSpec`.

use bo_core::{Conditional, Domain, FieldError, ParamSpec, ParamValue, ParentValues, Scale};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{int64, is_default, lenient_f64, lenient_opt_f64, lenient_vec_f64, opt_int64, vec_int64, wire_enum};

wire_enum! {
    /// `StudySpec.ParameterSpec.ScaleType`; unspecified means linear.
    #[schema(as = ScaleType)]
    ScaleTypeW { #[default] SCALE_TYPE_UNSPECIFIED = 0, UNIT_LINEAR_SCALE = 1, UNIT_LOG_SCALE = 2, UNIT_REVERSE_LOG_SCALE = 3 }
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
    pub double_value_spec: Option<DoubleValueSpecW>,
    /// An integer in [minValue, maxValue].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integer_value_spec: Option<IntegerValueSpecW>,
    /// One of a list of strings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub categorical_value_spec: Option<CategoricalValueSpecW>,
    /// One of an increasing list of numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discrete_value_spec: Option<DiscreteValueSpecW>,
    /// How a numeric parameter is spread; leave unset for CATEGORICAL.
    #[serde(skip_serializing_if = "is_default")]
    pub scale_type: ScaleTypeW,
    /// Children active under some values of this parameter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(no_recursion)]
    pub conditional_parameter_specs: Vec<ConditionalParameterSpecW>,
}

/// `DoubleValueSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = DoubleValueSpec)]
pub struct DoubleValueSpecW {
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
#[schema(as = IntegerValueSpec)]
pub struct IntegerValueSpecW {
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
#[schema(as = CategoricalValueSpec)]
pub struct CategoricalValueSpecW {
    /// The values.
    pub values: Vec<String>,
    /// The value to try first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
}

/// `DiscreteValueSpec`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[schema(as = DiscreteValueSpec)]
pub struct DiscreteValueSpecW {
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
#[schema(as = ConditionalParameterSpec)]
pub struct ConditionalParameterSpecW {
    /// The child.
    #[schema(no_recursion)]
    pub parameter_spec: Box<ParameterSpecW>,
    /// For a CATEGORICAL parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_categorical_values: Option<CategoricalValueConditionW>,
    /// For an INTEGER parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_int_values: Option<IntValueConditionW>,
    /// For a DISCRETE parent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_discrete_values: Option<DiscreteValueConditionW>,
}

/// Parent values of a CATEGORICAL parent.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
#[schema(as = CategoricalValueCondition)]
pub struct CategoricalValueConditionW {
    /// The values.
    pub values: Vec<String>,
}

/// Parent values of an INTEGER parent (int64 as strings).
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
#[schema(as = IntValueCondition)]
pub struct IntValueConditionW {
    /// The values.
    #[serde(with = "vec_int64")]
    #[schema(schema_with = super::int64_list_schema)]
    pub values: Vec<i64>,
}

/// Parent values of a DISCRETE parent.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, default)]
#[schema(as = DiscreteValueCondition)]
pub struct DiscreteValueConditionW {
    /// The values.
    #[serde(deserialize_with = "lenient_vec_f64")]
    pub values: Vec<f64>,
}

pub(super) fn param_from_wire(p: ParameterSpecW, path: &str) -> Result<ParamSpec, FieldError> {
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
        return Err(FieldError::new(
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
        (Domain::Categorical { values: c.values }, c.default_value.map(|v| ParamValue::categorical(&v)))
    } else {
        let d = p.discrete_value_spec.expect("one spec is set");
        (Domain::Discrete { values: d.values }, d.default_value.map(ParamValue::Float))
    };
    let scale = match p.scale_type {
        ScaleTypeW::UNIT_LOG_SCALE => Scale::Log,
        ScaleTypeW::UNIT_REVERSE_LOG_SCALE => Scale::ReverseLog,
        ScaleTypeW::UNIT_LINEAR_SCALE | ScaleTypeW::SCALE_TYPE_UNSPECIFIED => Scale::Linear,
    };
    let mut children = Vec::with_capacity(p.conditional_parameter_specs.len());
    for (j, c) in p.conditional_parameter_specs.into_iter().enumerate() {
        let cpath = format!("{path}.conditionalParameterSpecs[{j}]");
        let conditions = [c.parent_categorical_values.is_some(), c.parent_int_values.is_some(), c.parent_discrete_values.is_some()];
        if conditions.iter().filter(|b| **b).count() != 1 {
            return Err(FieldError::new(cpath, "needs exactly one of parentCategoricalValues, parentIntValues, parentDiscreteValues"));
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

pub(super) fn param_to_wire(p: &ParamSpec) -> ParameterSpecW {
    let mut w = ParameterSpecW { parameter_id: p.id.clone(), ..Default::default() };
    let float_default = || match p.default {
        Some(ParamValue::Float(x)) => Some(x),
        _ => None,
    };
    match &p.domain {
        Domain::Double { min, max } => {
            w.double_value_spec = Some(DoubleValueSpecW { min_value: *min, max_value: *max, default_value: float_default() })
        }
        Domain::Integer { min, max } => {
            let default_value = match p.default {
                Some(ParamValue::Int(i)) => Some(i),
                _ => None,
            };
            w.integer_value_spec = Some(IntegerValueSpecW { min_value: *min, max_value: *max, default_value })
        }
        Domain::Discrete { values } => {
            w.discrete_value_spec = Some(DiscreteValueSpecW { values: values.clone(), default_value: float_default() })
        }
        Domain::Categorical { values } => {
            let default_value = match &p.default {
                Some(ParamValue::Categorical(s)) => Some(s.to_string()),
                _ => None,
            };
            w.categorical_value_spec = Some(CategoricalValueSpecW { values: values.clone(), default_value })
        }
    }
    if !matches!(p.domain, Domain::Categorical { .. }) {
        w.scale_type = match p.scale {
            Scale::Linear => ScaleTypeW::UNIT_LINEAR_SCALE,
            Scale::Log => ScaleTypeW::UNIT_LOG_SCALE,
            Scale::ReverseLog => ScaleTypeW::UNIT_REVERSE_LOG_SCALE,
        };
    }
    w.conditional_parameter_specs = p
        .children
        .iter()
        .map(|c| {
            let mut cw = ConditionalParameterSpecW { parameter_spec: Box::new(param_to_wire(&c.spec)), ..Default::default() };
            match &c.parent_values {
                ParentValues::Categorical(v) => cw.parent_categorical_values = Some(CategoricalValueConditionW { values: v.clone() }),
                ParentValues::Integer(v) => cw.parent_int_values = Some(IntValueConditionW { values: v.clone() }),
                ParentValues::Discrete(v) => cw.parent_discrete_values = Some(DiscreteValueConditionW { values: v.clone() }),
            }
            cw
        })
        .collect();
    w
}
