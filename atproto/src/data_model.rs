//! Records as the AT Protocol data model's JSON form: DAG-CBOR links become
//! `{"$link": cid}` and bytes `{"$bytes": base64}`, so a record read from a repository
//! looks as a PDS's `getRecord` shows it (and blob refs keep their `ref.$link`).

use data_encoding::BASE64_NOPAD;
use ipld_core::ipld::Ipld;
use serde_json::{json, Map, Value};

/// What a DAG-CBOR value cannot be in the data model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not in the AT Protocol data model: {0}")]
pub struct DataModelError(pub String);

/// Converts a decoded DAG-CBOR value into its JSON form.
///
/// # Errors
/// [`DataModelError`] for floats (the data model has none) and integers beyond 64 bits.
pub fn to_json(value: &Ipld) -> Result<Value, DataModelError> {
    Ok(match value {
        Ipld::Null => Value::Null,
        Ipld::Bool(b) => Value::Bool(*b),
        Ipld::Integer(i) => {
            let i = i64::try_from(*i).map_err(|_| DataModelError(format!("integer {i} does not fit 64 bits")))?;
            Value::from(i)
        }
        Ipld::Float(f) => return Err(DataModelError(format!("float {f}"))),
        Ipld::String(s) => Value::String(s.clone()),
        Ipld::Bytes(b) => json!({ "$bytes": BASE64_NOPAD.encode(b) }),
        Ipld::List(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Ipld::Map(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(k.clone(), to_json(v)?);
            }
            Value::Object(out)
        }
        Ipld::Link(cid) => json!({ "$link": cid.to_string() }),
    })
}

/// Converts a record's JSON form back into DAG-CBOR's value (the inverse of [`to_json`]), so
/// that its CID can be computed.
///
/// # Errors
/// [`DataModelError`] for numbers that are not 64-bit integers, and malformed `$link` or
/// `$bytes` objects.
pub fn from_json(value: &Value) -> Result<Ipld, DataModelError> {
    Ok(match value {
        Value::Null => Ipld::Null,
        Value::Bool(b) => Ipld::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Ipld::Integer(i.into()),
            None => return Err(DataModelError(format!("number {n} is not a 64-bit integer"))),
        },
        Value::String(s) => Ipld::String(s.clone()),
        Value::Array(items) => Ipld::List(items.iter().map(from_json).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            if let (1, Some(link)) = (map.len(), map.get("$link")) {
                let text = link.as_str().ok_or_else(|| DataModelError("$link is not a string".into()))?;
                return text.parse().map(Ipld::Link).map_err(|e| DataModelError(format!("$link {text:?}: {e}")));
            }
            if let (1, Some(bytes)) = (map.len(), map.get("$bytes")) {
                let text = bytes.as_str().ok_or_else(|| DataModelError("$bytes is not a string".into()))?;
                let decoded = BASE64_NOPAD
                    .decode(text.trim_end_matches('=').as_bytes())
                    .map_err(|e| DataModelError(format!("$bytes is not base64: {e}")))?;
                return Ok(Ipld::Bytes(decoded));
            }
            Ipld::Map(map.iter().map(|(k, v)| Ok((k.clone(), from_json(v)?))).collect::<Result<_, DataModelError>>()?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_forms_convert_back() {
        let cid: cid::Cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm".parse().unwrap();
        let value = Ipld::Map(
            [
                ("ref".to_owned(), Ipld::Link(cid)),
                ("raw".to_owned(), Ipld::Bytes(vec![1, 2, 3, 4])),
                ("list".to_owned(), Ipld::List(vec![Ipld::Integer(-3), Ipld::Null, Ipld::Bool(true), Ipld::String("x".into())])),
            ]
            .into(),
        );
        assert_eq!(from_json(&to_json(&value).unwrap()).unwrap(), value);
        assert!(from_json(&json!({"n": 1.5})).is_err());
        assert!(from_json(&json!({"$link": "nope"})).is_err());
    }

    #[test]
    fn links_and_bytes_take_their_json_forms() {
        let cid: cid::Cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm".parse().unwrap();
        let blob = Ipld::Map(
            [
                ("$type".to_owned(), Ipld::String("blob".into())),
                ("ref".to_owned(), Ipld::Link(cid)),
                ("size".to_owned(), Ipld::Integer(12)),
                ("raw".to_owned(), Ipld::Bytes(vec![1, 2, 3])),
            ]
            .into(),
        );
        let v = to_json(&blob).unwrap();
        assert_eq!(v["ref"]["$link"], cid.to_string());
        assert_eq!(v["raw"]["$bytes"], "AQID");
        assert_eq!(v["size"], 12);
        assert!(to_json(&Ipld::Float(1.5)).is_err());
    }
}
