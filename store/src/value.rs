use std::borrow::Cow;
use std::collections::BTreeMap;

use event_schema::packed;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::{StoreError, TableRef};

/// A column value. The set is small on purpose: each maps onto a CQL type
/// (`boolean`, `bigint`, `double`, `text`, `blob`).
#[derive(Debug, Clone, PartialEq)]
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
    /// Bytes, for values made to be read by a program alone (a sketch, packed numbers):
    /// stored as they are, not in base64.
    Bytes(Vec<u8>),
}

impl Value {
    /// The text, if this is a text value.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The bytes, if this is a bytes value.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
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

/// Each value as its own type: null, a boolean, an integer, a float, a string or bytes
/// (CBOR's byte string in the stored form).
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Int(i) => serializer.serialize_i64(*i),
            Value::Float(f) => serializer.serialize_f64(*f),
            Value::Text(s) => serializer.serialize_str(s),
            Value::Bytes(b) => serializer.serialize_bytes(b),
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
                f.write_str("null, a boolean, an integer, a float, a string or bytes")
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
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
                Ok(Value::Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Value, E> {
                Ok(Value::Bytes(v))
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
    Ok(packed::pack_live(cbor(columns)?, packed::ROW_THRESHOLD))
}

/// The stored form of a row of `table`: [`encode_columns`], or its CBOR as it is for a table
/// whose rows are rewritten often ([`TableRef::rewritten_often`]), which a repack
/// ([`kept_form`]) compresses like any other. [`decode_columns`] reads either.
pub(crate) fn encode_row(table: &TableRef, columns: &Columns) -> Result<Vec<u8>, StoreError> {
    if table.is_rewritten_often() {
        cbor(columns)
    } else {
        encode_columns(columns)
    }
}

fn cbor(columns: &Columns) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(256);
    ciborium::into_writer(columns, &mut out).map_err(|e| StoreError::Unavailable(format!("failed to encode row: {e}")))?;
    Ok(out)
}

/// Rows of at least this many bytes are compressed when a file is repacked
/// ([`kept_form`]), if that makes them shorter.
const KEPT_ROW_THRESHOLD: usize = 32;

/// A stored row as a repacked file keeps it (an offline copy: `svc compact`, the end of
/// `svc replay`): compressed harder when large ([`packed::pack_small`]), and compressed when
/// small too ([`packed::pack`], from [`KEPT_ROW_THRESHOLD`] bytes). Live writes leave rows
/// under [`packed::ROW_THRESHOLD`] as they are, the hot counters among them; a row rewritten
/// after the repack is stored as live writes store it. `table` names it in the error.
pub(crate) fn kept_form<'a>(table: &str, stored: &'a [u8]) -> Result<Cow<'a, [u8]>, StoreError> {
    let row = packed::unpack(stored).map_err(|reason| StoreError::Corrupt { table: table.to_owned(), reason })?;
    if row.len() < KEPT_ROW_THRESHOLD {
        return Ok(Cow::Borrowed(stored));
    }
    let kept = if row.len() >= packed::ROW_THRESHOLD { packed::pack_small(row.into_owned(), 0) } else { packed::pack(row.into_owned(), 0) };
    Ok(if kept.len() < stored.len() { Cow::Owned(kept) } else { Cow::Borrowed(stored) })
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
    fn a_repack_keeps_rows_compressed_when_that_is_shorter_and_they_decode_alike() {
        let row = |text: &str| {
            Columns::from([
                ("handle".to_owned(), Value::Text("alice-smith.arxiv.example".to_owned())),
                ("displayName".to_owned(), Value::Text(text.to_owned())),
                ("firstSeen".to_owned(), Value::Int(1_764_547_200_000_000)),
            ])
        };
        let small = row("Alice Smith");
        let stored = encode_columns(&small).unwrap();
        assert!(!packed::is_packed(&stored), "live writes leave a small row as it is");
        let kept = kept_form("t", &stored).unwrap();
        assert!(packed::is_packed(&kept) && kept.len() < stored.len(), "{} of {}", kept.len(), stored.len());
        assert_eq!(decode_columns("t", &kept).unwrap(), small);
        let large = row(&"an abstract of words ".repeat(60));
        let stored = encode_columns(&large).unwrap();
        let kept = kept_form("t", &stored).unwrap();
        assert!(kept.len() <= stored.len());
        assert_eq!(decode_columns("t", &kept).unwrap(), large);
        let tiny = encode_columns(&Columns::new()).unwrap();
        assert_eq!(kept_form("t", &tiny).unwrap(), tiny.as_slice(), "too small to gain");
        assert!(kept_form("t", &[0, 1, 2]).is_err(), "a damaged frame is an error");
    }

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
            Value::Bytes(Vec::new()),
            Value::Bytes(vec![0, 1, 255]),
            Value::Bytes((0..5000).map(|i| (i % 7) as u8).collect()),
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
