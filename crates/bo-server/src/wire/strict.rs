//! A JSON value as a serde `Deserializer` that will not read an array as a struct.
//!
//! serde's derived `Deserialize` for a struct accepts a sequence of its fields in order, so
//! `[]` — or `[2, "w"]` — would be taken for a request object through `serde_json::Value`. Proto3
//! JSON has no such form: every message is an object. [`Strict`] refuses anything but an object
//! where a struct is expected, at any depth, and otherwise behaves as `serde_json::Value`.

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::Value;

/// A value read strictly: structs only from objects.
pub struct Strict(pub Value);

impl<'de> IntoDeserializer<'de, serde_json::Error> for Strict {
    type Deserializer = Strict;

    fn into_deserializer(self) -> Strict {
        self
    }
}

impl<'de> de::Deserializer<'de> for Strict {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.into_iter().map(Strict));
                let value = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(value)
            }
            Value::Object(entries) => {
                let mut map = MapDeserializer::new(entries.into_iter().map(|(k, v)| (k, Strict(v))));
                let value = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(value)
            }
            other => de::Deserializer::deserialize_any(other, visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(_) => self.deserialize_any(visitor),
            other => Err(de::Error::invalid_type(unexpected(&other), &"an object")),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        de::Deserializer::deserialize_enum(self.0, name, variants, visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => n.as_f64().map_or(de::Unexpected::Other("a number"), de::Unexpected::Float),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::Strict;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    struct Inner {
        step: i64,
    }

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    struct Outer {
        count: i64,
        name: String,
        inner: Option<Inner>,
        list: Vec<Inner>,
    }

    fn read(v: serde_json::Value) -> Result<Outer, serde_json::Error> {
        Outer::deserialize(Strict(v))
    }

    #[test]
    fn objects_read_as_before_and_arrays_are_not_structs() {
        let ok = read(serde_json::json!({"count": 2, "name": "w", "inner": {"step": 3}, "list": [{"step": 1}]})).unwrap();
        assert_eq!(ok, Outer { count: 2, name: "w".into(), inner: Some(Inner { step: 3 }), list: vec![Inner { step: 1 }] });
        assert_eq!(read(serde_json::json!({"inner": null})).unwrap(), Outer::default());
        for bad in
            [serde_json::json!([]), serde_json::json!([2, "w"]), serde_json::json!({"inner": []}), serde_json::json!({"list": [[1]]})]
        {
            let e = read(bad.clone()).unwrap_err().to_string();
            assert!(e.contains("expected an object"), "{bad}: {e}");
        }
        assert!(read(serde_json::json!({"nope": 1})).unwrap_err().to_string().contains("unknown field"));
    }
}
