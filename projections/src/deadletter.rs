//! Dead letters: events a projection could not apply, with the reason, kept per read-model
//! version in the store so that admins can list them and a rebuild reproduces them.

use event_schema::Envelope;
use serde::Serialize;
use store::{Columns, Scan, Store, StoreError, TableRef, Value};

/// The table of a model version's dead letters.
pub fn table(model: &str, version: u32) -> TableRef {
    TableRef::new(model, version, "dead_letters")
}

const PARTITION: &str = "all";

/// One dead letter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
    /// The log partition of the event.
    pub partition: u32,
    /// The log offset of the event.
    pub offset: u64,
    /// The event's key.
    pub key: String,
    /// The event's kind.
    pub kind: String,
    /// The record URI, when the event is about a record.
    pub uri: Option<String>,
    /// Why the event was not applied.
    pub reason: String,
}

/// The row that records `event` as dead with `reason`: `(clustering, columns)`.
pub fn row(event: &Envelope, uri: Option<String>, reason: &str) -> (Vec<u8>, Columns) {
    let mut clustering = event.position.offset.to_be_bytes().to_vec();
    clustering.extend_from_slice(&event.position.partition.to_be_bytes());
    let mut c = Columns::new();
    c.insert("partition".into(), Value::Int(i64::from(event.position.partition)));
    c.insert("offset".into(), Value::Int(event.position.offset as i64));
    c.insert("key".into(), Value::Text(event.key.clone()));
    c.insert("kind".into(), Value::Text(event.kind.clone()));
    c.insert("uri".into(), uri.map_or(Value::Null, Value::Text));
    c.insert("reason".into(), Value::Text(reason.to_owned()));
    (clustering, c)
}

/// The partition key all dead letters of a model version live under.
pub fn partition() -> &'static str {
    PARTITION
}

/// Lists dead letters in log order.
pub fn list(store: &dyn Store, model: &str, version: u32, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
    let page = store.scan(&table(model, version), PARTITION, &Scan::first(limit))?;
    Ok(page
        .rows
        .into_iter()
        .map(|r| {
            let text = |k: &str| r.columns.get(k).and_then(Value::as_text).unwrap_or_default().to_owned();
            let int = |k: &str| r.columns.get(k).and_then(Value::as_int).unwrap_or_default();
            DeadLetter {
                partition: int("partition") as u32,
                offset: int("offset") as u64,
                key: text("key"),
                kind: text("kind"),
                uri: r.columns.get("uri").and_then(Value::as_text).map(str::to_owned),
                reason: text("reason"),
            }
        })
        .collect())
}
