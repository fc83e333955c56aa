//! The Vertex AI Vizier v1 wire format: the JSON shapes of `VERTEX_API.md` and their explicit
//! conversions to and from bo-core's domain types. Only this module knows the proto3 JSON
//! quirks: lowerCamelCase names (snake_case accepted too, see [`normalize_keys`]), enums as
//! names on output and names or numbers on input, int64 as strings on output and strings or
//! numbers on input, durations as `"12.5s"`, RFC 3339 timestamps, defaults omitted.

pub mod columns;
pub mod measurement;
pub mod model;
pub mod operation;
pub mod parameter;
pub mod request;
pub mod stopping;
pub mod strict;
pub mod study;
pub mod trial;

#[cfg(test)]
mod round_trips;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// Declares a proto enum: variants spelled as on the wire, each with its proto number.
/// Serialises as the name; deserialises from the name or the number (Google's client sends
/// numbers under `$alt=json;enum-encoding=int`).
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $number:literal),+ $(,)? }) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, utoipa::ToSchema)]
        $(#[$meta])*
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every variant with its wire name and proto number.
            pub const VARIANTS: &'static [($name, &'static str, i64)] = &[$(($name::$variant, stringify!($variant), $number)),+];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                Self::VARIANTS.iter().find(|(v, _, _)| *v == self).map(|(_, s, _)| *s).unwrap_or_default()
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = serde_json::Value::deserialize(d)?;
                let found = match &raw {
                    serde_json::Value::String(s) => Self::VARIANTS.iter().find(|(_, n, _)| n == s),
                    serde_json::Value::Number(n) => Self::VARIANTS.iter().find(|(_, _, k)| Some(*k) == n.as_i64()),
                    _ => None,
                };
                found.map(|(v, _, _)| *v).ok_or_else(|| {
                    let known: Vec<&str> = Self::VARIANTS.iter().map(|(_, n, _)| *n).collect();
                    serde::de::Error::custom(format!("{raw} is not one of {}", known.join(", ")))
                })
            }
        }
    };
}
pub(crate) use wire_enum;

/// Renames snake_case object keys to lowerCamelCase, recursively, as proto3 JSON parsers accept
/// both. Keys inside `algorithmConfig` and under `state` (an import's model state; every other
/// `state` is an enum's name) are the designer's own, and those of a trial's `labels` the
/// client's: left alone.
pub fn normalize_keys(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut v) in old {
                let key = if k.contains('_') { camel(&k) } else { k };
                if key != "algorithmConfig" && key != "state" && key != "labels" {
                    normalize_keys(&mut v);
                }
                map.insert(key, v);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(normalize_keys),
        _ => {}
    }
}

fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `serde(with)` for int64 fields: a string on output, a string or number on input.
pub mod int64 {
    use super::*;

    /// Writes the string form.
    pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    /// Reads a string or a number.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => s.trim().parse().map_err(|_| serde::de::Error::custom(format!("{s:?} is not an int64"))),
            serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Ok(i),
                (None, Some(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
                _ => Err(serde::de::Error::custom(format!("{n} is not an int64"))),
            },
            other => Err(serde::de::Error::custom(format!("{other} is not an int64"))),
        }
    }
}

/// The schema of an int64 field: a decimal string, as written on output; on input an integer
/// is accepted too, as proto3 JSON parsers do.
pub fn int64_schema() -> utoipa::openapi::schema::Schema {
    int64_schema_from(None, false)
}

/// [`int64_schema`], not negative (step counts).
pub fn count_schema() -> utoipa::openapi::schema::Schema {
    int64_schema_from(Some(0), false)
}

/// [`int64_schema`] or null (an optional field).
pub fn opt_int64_schema() -> utoipa::openapi::schema::Schema {
    int64_schema_from(None, true)
}

/// The output-only revision of an open study's space (bo extension), as in [`int64_schema`]
/// (`schema_with` takes no doc comment: the description is here).
pub fn revision_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{OneOf, Schema};
    let Schema::OneOf(one_of) = int64_schema_from(Some(0), false) else { unreachable!("int64_schema_from makes a oneOf") };
    Schema::OneOf(OneOf {
        description: Some(
            "Output only (bo extension): the revision of an open study's search space (`openSearchSpace`) — for a study, how \
             many times it has grown; for a trial, when its parameters were last given. Absent while 0."
                .into(),
        ),
        ..one_of
    })
}

/// A list of int64 values (each as in [`int64_schema`]).
pub fn int64_list_schema() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new().items(utoipa::openapi::RefOr::T(int64_schema())).build()
}

fn int64_schema_from(min: Option<i64>, nullable: bool) -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type};
    // ±2^63: the int64 range, as near as a JSON Schema bound can say it.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    let pattern = if min == Some(0) { r"^[0-9]{1,19}$" } else { r"^-?[0-9]{1,19}$" };
    let mut one_of = OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .pattern(Some(pattern)),
        )
        .item(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(min.map_or(-LIMIT, |m| m as f64))).maximum(Some(LIMIT)));
    if nullable {
        one_of = one_of.item(ObjectBuilder::new().schema_type(Type::Null));
    }
    utoipa::openapi::schema::Schema::OneOf(one_of.build())
}

/// `serde(with)` for `Option<i64>` int64 fields.
pub mod opt_int64 {
    use super::*;

    /// Writes the string form.
    pub fn serialize<S: Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&v.to_string()),
            None => s.serialize_none(),
        }
    }

    /// Reads a string or a number.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        int64::deserialize(d).map(Some)
    }
}

/// `serde(with)` for lists of int64.
pub mod vec_int64 {
    use super::*;

    /// Writes the string forms.
    pub fn serialize<S: Serializer>(v: &[i64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(i64::to_string))
    }

    /// Reads strings or numbers.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
        #[derive(Deserialize)]
        struct One(#[serde(with = "int64")] i64);
        Ok(Vec::<One>::deserialize(d)?.into_iter().map(|o| o.0).collect())
    }
}

/// `deserialize_with` for doubles: a number, or proto3's strings `"NaN"`, `"Infinity"`,
/// `"-Infinity"` and numbers written as strings. Non-finite values pass through so that the
/// validation that follows can name the field.
pub fn lenient_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n.as_f64().ok_or_else(|| serde::de::Error::custom("not a double")),
        serde_json::Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            other => other.trim().parse().map_err(|_| serde::de::Error::custom(format!("{s:?} is not a double"))),
        },
        other => Err(serde::de::Error::custom(format!("{other} is not a double"))),
    }
}

/// `deserialize_with` for optional doubles.
pub fn lenient_opt_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    lenient_f64(d).map(Some)
}

/// `deserialize_with` for lists of doubles.
pub fn lenient_vec_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    #[derive(Deserialize)]
    struct One(#[serde(deserialize_with = "lenient_f64")] f64);
    Ok(Vec::<One>::deserialize(d)?.into_iter().map(|o| o.0).collect())
}

/// Formats seconds as a proto3 Duration: `"3600s"`, `"1.500s"` (0, 3, 6 or 9 fractional digits).
pub fn format_duration(secs: f64) -> String {
    let nanos = (secs * 1e9).round() as i128;
    let (whole, frac) = (nanos / 1_000_000_000, (nanos % 1_000_000_000).unsigned_abs());
    let sign = if nanos < 0 && whole == 0 { "-" } else { "" };
    if frac == 0 {
        format!("{sign}{whole}s")
    } else if frac % 1_000_000 == 0 {
        format!("{sign}{whole}.{:03}s", frac / 1_000_000)
    } else if frac % 1000 == 0 {
        format!("{sign}{whole}.{:06}s", frac / 1000)
    } else {
        format!("{sign}{whole}.{frac:09}s")
    }
}

/// The largest proto3 Duration, in whole seconds (about 10,000 years): the proto's own range.
pub const MAX_DURATION_SECS: i64 = 315_576_000_000;

/// Parses a proto3 Duration (`"12.5s"`) into seconds: at most 9 fractional digits and within
/// ±[`MAX_DURATION_SECS`], as the proto's JSON form allows.
pub fn parse_duration(s: &str) -> Option<f64> {
    let number = s.strip_suffix('s')?;
    let unsigned = number.strip_prefix('-').unwrap_or(number);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, "0"));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || fraction.len() > 9 || whole.len() > 12 {
        return None;
    }
    let secs: f64 = number.parse().ok()?;
    (secs.is_finite() && secs.abs() <= MAX_DURATION_SECS as f64).then_some(secs)
}

/// Formats milliseconds since the epoch as RFC 3339 UTC with milliseconds.
pub fn format_time(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `text` quoted for a message, cut to its first 64 characters: an error never echoes a
/// megabyte back.
pub fn shown(text: &str) -> String {
    const MAX: usize = 64;
    match text.char_indices().nth(MAX) {
        None => format!("{text:?}"),
        Some((cut, _)) => format!("{:?}… ({} characters)", &text[..cut], text.chars().count()),
    }
}

/// A JSON value for a message: a string as [`shown`] quotes it (once), anything else as its
/// JSON text, cut the same way.
pub fn shown_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => shown(s),
        other => {
            let text = other.to_string();
            match text.char_indices().nth(64) {
                None => text,
                Some((cut, _)) => format!("{}… ({} characters)", &text[..cut], text.chars().count()),
            }
        }
    }
}

/// For `skip_serializing_if`: proto3 omits default values.
pub fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_once() {
        assert_eq!(shown_value(&serde_json::json!("0.5s")), r#""0.5s""#);
        assert_eq!(shown_value(&serde_json::json!(2.5)), "2.5");
        assert_eq!(shown_value(&serde_json::json!([1, "a"])), r#"[1,"a"]"#);
        assert!(shown_value(&serde_json::json!(vec![1; 1000])).ends_with("(2001 characters)"));
    }

    #[test]
    fn durations_follow_proto3() {
        assert_eq!(format_duration(3600.0), "3600s");
        assert_eq!(format_duration(1.5), "1.500s");
        assert_eq!(format_duration(0.000_001), "0.000001s");
        assert_eq!(parse_duration("12.5s"), Some(12.5));
        assert_eq!(parse_duration("12.5"), None);
        assert_eq!(parse_duration("-2s"), Some(-2.0));
        assert_eq!(parse_duration("315576000000s"), Some(315_576_000_000.0));
        assert_eq!(parse_duration("0.123456789s"), Some(0.123_456_789));
        for bad in ["1e3s", "+1s", ".5s", "1.s", "s", "infs", "NaNs", "315576000001s", "1000000000000000013.287555072s", "1.0000000001s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn snake_case_keys_become_camel_case_except_in_algorithm_config() {
        let mut v = serde_json::json!({"display_name": "x", "study_spec": {"metrics": [{"metric_id": "m"}], "algorithm_config": {"grid_resolution": 3}}});
        normalize_keys(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"displayName": "x", "studySpec": {"metrics": [{"metricId": "m"}], "algorithmConfig": {"grid_resolution": 3}}})
        );
    }

    #[test]
    fn times_are_rfc3339_utc_with_millis() {
        assert_eq!(format_time(1_714_564_800_123), "2024-05-01T12:00:00.123Z");
    }
}
