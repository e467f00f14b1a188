//! Response bodies: JSON serialized once, and [`JsonWriter`], which writes an object around
//! JSON text the projections stored, without parsing it again.

use axum::body::Bytes;
use axum::http::header::{self, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;

/// A response body, already serialized: JSON, or the bytes of a document svc passes on.
#[derive(Debug, Clone)]
pub struct Body(Bytes, &'static str);

impl Body {
    /// Serializes `value`.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Body, ApiError> {
        serde_json::to_vec(value).map(|v| Body(v.into(), "application/json")).map_err(|e| ApiError::internal(e.to_string()))
    }

    /// A PDF document.
    pub fn pdf(bytes: Bytes) -> Body {
        Body(bytes, "application/pdf")
    }

    /// The bytes of the body.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Its media type.
    pub fn content_type(&self) -> &'static str {
        self.1
    }
}

impl IntoResponse for Body {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, HeaderValue::from_static(self.1))], self.0).into_response()
    }
}

/// Writes one JSON object, field by field. Stored JSON text (records and summaries the
/// projections wrote, valid JSON by construction) goes out as it is: the read path neither
/// parses nor copies it twice.
pub struct JsonWriter {
    out: Vec<u8>,
    empty: bool,
}

impl JsonWriter {
    /// An object about `capacity` bytes long.
    pub fn object(capacity: usize) -> JsonWriter {
        let mut out = Vec::with_capacity(capacity + 2);
        out.push(b'{');
        JsonWriter { out, empty: true }
    }

    fn key(&mut self, name: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        // Field names are identifiers of the contract: nothing to escape.
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    /// A field holding `value`, serialized.
    pub fn field<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<&mut JsonWriter, ApiError> {
        self.key(name);
        serde_json::to_writer(&mut self.out, value).map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(self)
    }

    /// A field holding stored JSON text (`null` when the text is empty).
    pub fn stored(&mut self, name: &str, json: &str) -> &mut JsonWriter {
        self.key(name);
        self.out.extend_from_slice(if json.is_empty() { b"null" } else { json.as_bytes() });
        self
    }

    /// A field holding an array of stored JSON texts.
    pub fn stored_array<'a>(&mut self, name: &str, items: impl IntoIterator<Item = &'a str>) -> &mut JsonWriter {
        self.key(name);
        self.out.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(if item.is_empty() { b"null" } else { item.as_bytes() });
        }
        self.out.push(b']');
        self
    }

    /// The finished object.
    pub fn finish(mut self) -> Body {
        self.out.push(b'}');
        Body(self.out.into(), "application/json")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_json_around_stored_text() {
        let mut w = JsonWriter::object(64);
        w.field("uri", "at://x\"y").unwrap();
        w.stored("record", r#"{"a":[1,2]}"#).stored("missing", "");
        w.stored_array("hits", [r#"{"b":1}"#, "2"]);
        w.field("total", &3).unwrap();
        let body = w.finish();
        let v: serde_json::Value = serde_json::from_slice(body.as_bytes()).unwrap();
        assert_eq!(v, serde_json::json!({"uri": "at://x\"y", "record": {"a": [1, 2]}, "missing": null, "hits": [{"b": 1}, 2], "total": 3}));
        assert_eq!(JsonWriter::object(0).finish().as_bytes(), b"{}");
    }
}
