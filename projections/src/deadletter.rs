//! Dead letters: events a projection could not apply, with the reason, kept per read-model
//! version in the store so that admins can list them and a rebuild reproduces them.

use event_schema::Envelope;
use serde::Serialize;
use store::{Columns, Scan, Store, StoreError, TableRef, Value};
use tracing::warn;

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

/// Parks `event` as a dead letter of `model` with `reason`: logs it at WARN and returns the
/// row that records it, `(clustering, columns)`, for the caller to write with its batch.
pub fn park(model: &str, event: &Envelope, uri: Option<String>, reason: &str) -> (Vec<u8>, Columns) {
    warn!(
        model,
        partition = event.position.partition,
        offset = event.position.offset,
        key = event.key,
        kind = event.kind,
        uri = uri.as_deref(),
        reason,
        "dead letter: an event could not be applied"
    );
    row(event, uri, reason)
}

/// How many dead letters a model version holds.
pub fn count(store: &dyn Store, model: &str, version: u32) -> Result<u64, StoreError> {
    store.count(&table(model, version), PARTITION)
}

/// The clustering key of the dead letter of the event at `partition`/`offset`.
fn clustering(partition: u32, offset: u64) -> Vec<u8> {
    let mut k = offset.to_be_bytes().to_vec();
    k.extend_from_slice(&partition.to_be_bytes());
    k
}

/// The dead letter a [`AdminAction::DeadLetterReleased`] of `model` releases, if the
/// event is one: `(partition, offset)`.
///
/// [`AdminAction::DeadLetterReleased`]: event_schema::AdminAction::DeadLetterReleased
pub fn released(model: &str, event: &Envelope) -> Option<(u32, u64)> {
    match &event.payload {
        event_schema::Payload::Admin(event_schema::AdminCommand {
            action: event_schema::AdminAction::DeadLetterReleased { model: m, partition, offset, .. },
            ..
        }) if m == model => Some((*partition, *offset)),
        _ => None,
    }
}

/// When `event` releases a dead letter of `model` (a dismissal or a retry), stages the
/// removal of its row from `version`'s dead letters.
pub(crate) fn release(st: &mut crate::staged::Staged, model: &str, version: u32, event: &Envelope) {
    if let Some((partition, offset)) = released(model, event) {
        let (part, clustering) = key(partition, offset);
        st.delete(&table(model, version), part, clustering, event.position.ordinal());
    }
}

/// The row that records `event` as dead with `reason`: `(clustering, columns)`.
pub fn row(event: &Envelope, uri: Option<String>, reason: &str) -> (Vec<u8>, Columns) {
    let clustering = clustering(event.position.partition, event.position.offset);
    let mut c = Columns::new();
    c.insert("partition".into(), Value::Int(i64::from(event.position.partition)));
    c.insert("offset".into(), Value::Int(event.position.offset as i64));
    c.insert("key".into(), Value::Text(event.key.clone()));
    c.insert("kind".into(), Value::Text(event.kind.clone()));
    c.insert("uri".into(), uri.map_or(Value::Null, Value::Text));
    c.insert("reason".into(), Value::Text(reason.to_owned()));
    (clustering, c)
}

/// The key `(partition, clustering)` of the dead letter of the event at
/// `partition`/`offset`, for deleting it.
pub fn key(partition: u32, offset: u64) -> (&'static str, Vec<u8>) {
    (PARTITION, clustering(partition, offset))
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
