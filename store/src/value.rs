use std::collections::BTreeMap;

use event_schema::packed;
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

    /// The number, if this is a float (or an integer) value.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
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

/// Encodes a row's columns as CBOR, compressed when large ([`packed`]): the stored form of a
/// row in every backend.
pub(crate) fn encode_columns(columns: &Columns) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(256);
    ciborium::into_writer(columns, &mut out).map_err(|e| StoreError::Unavailable(format!("failed to encode row: {e}")))?;
    Ok(packed::pack(out, packed::ROW_THRESHOLD))
}

/// Decodes a row stored by [`encode_columns`]; `table` names it in the error. cbor4ii reads
/// from the slice (ciborium reads byte by byte through `io::Read`), which makes reads of
/// rows with long text columns several times faster.
pub(crate) fn decode_columns(table: &str, bytes: &[u8]) -> Result<Columns, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { table: table.to_owned(), reason };
    let bytes = packed::unpack(bytes).map_err(corrupt)?;
    cbor4ii::serde::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_the_stored_form() {
        let long = "é ∑ ".repeat(2000);
        for value in [
            Value::Null,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(-1),
            Value::Int(23),
            Value::Int(24),
            Value::Int(i64::MAX),
            Value::Int(i64::MIN),
            Value::Float(1.0),
            Value::Float(0.5),
            Value::Float(-2.75e300),
            Value::Float(f64::MIN_POSITIVE),
            Value::Text(String::new()),
            Value::Text("at://did:plc:abc/pub.svc.eprint.submission/3k".into()),
            Value::Text(long.clone()),
        ] {
            let mut row = Columns::new();
            row.insert("a".into(), value.clone());
            row.insert("record".into(), Value::Text("{\"title\":\"x\"}".into()));
            let bytes = encode_columns(&row).unwrap();
            assert_eq!(decode_columns("t", &bytes).unwrap(), row, "{value:?}");
        }
    }

    #[test]
    fn a_corrupt_row_is_an_error_naming_its_table() {
        let bytes = encode_columns(&Columns::from([("a".to_owned(), Value::Text("abc".into()))])).unwrap();
        for cut in 0..bytes.len() {
            match decode_columns("eprints.v1.records", &bytes[..cut]) {
                Err(StoreError::Corrupt { table, .. }) => assert_eq!(table, "eprints.v1.records"),
                other => panic!("{cut}: {other:?}"),
            }
        }
    }
}
