use std::collections::BTreeMap;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// A column value. The set is small on purpose: each maps onto a CQL type
/// (`boolean`, `bigint`, `double`, `text`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// No value.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string; JSON documents are stored as text.
    Text(String),
}

impl Value {
    /// The text, if this is a text value.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is an integer value.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The boolean, if this is a boolean value.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// Decodes by the type the data says it is. (An untagged derive would try each variant in
/// turn and format an error for every miss, which costs more than the decoding itself.)
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = Value;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("null, a boolean, an integer, a float or a string")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
                i64::try_from(v).map(Value::Int).map_err(|_| E::custom("integer out of range"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
                Ok(Value::Text(v))
            }
        }
        deserializer.deserialize_any(ValueVisitor)
    }
}

/// The columns of a row, by name.
pub type Columns = BTreeMap<String, Value>;

/// Encodes a row's columns as CBOR, the stored form of a row in every backend.
pub(crate) fn encode_columns(columns: &Columns) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(256);
    ciborium::into_writer(columns, &mut out).map_err(|e| StoreError::Unavailable(format!("failed to encode row: {e}")))?;
    Ok(out)
}

/// Decodes a row stored by [`encode_columns`]; `table` names it in the error.
pub(crate) fn decode_columns(table: &str, bytes: &[u8]) -> Result<Columns, StoreError> {
    ciborium::from_reader(bytes).map_err(|e| StoreError::Corrupt { table: table.to_owned(), reason: e.to_string() })
}
