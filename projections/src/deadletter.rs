//! Dead letters: events a projection could not apply, with the reason, kept per read-model
//! version in the store so that admins can list them and a rebuild reproduces them.
//!
//! A parked event holds back the later events of its key (ARCHITECTURE.md, principle 4):
//! while a key has a dead letter of its own (its *head*, in `dead_letter_heads`), every
//! later event of that key the model would apply is parked too, *held* behind the head, and
//! other keys go on. Releasing the head lets the key's next events through; the API's retry
//! and dismissal append the held events again after it, so they are applied in their order.
//! Changes ingest refused (bad signatures) are dead letters that hold nothing back
//! ([`Parking::refused`]).

use event_schema::Envelope;
use serde::Serialize;
use store::{Columns, Scan, Store, StoreError, TableRef, Value};
use tracing::{debug, warn};

use crate::staged::Staged;
use crate::EventBatch;

/// The table of a model version's dead letters.
pub fn table(model: &str, version: u32) -> TableRef {
    TableRef::new(model, version, "dead_letters")
}

/// The table of a model version's heads: per key with a dead letter of its own, the
/// position of that letter (columns `partition`, `offset`).
pub fn heads_table(model: &str, version: u32) -> TableRef {
    TableRef::new(model, version, "dead_letter_heads")
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
    /// For an event held back behind an earlier dead letter of its key: that letter's
    /// `(partition, offset)`.
    pub held_behind: Option<(u32, u64)>,
}

impl DeadLetter {
    /// The position of the event, `(partition, offset)`.
    pub fn position(&self) -> (u32, u64) {
        (self.partition, self.offset)
    }
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

/// The dead letters of one model version as its projection stages them in a batch: parking,
/// holding back and releasing.
pub(crate) struct Parking<'a> {
    store: &'a dyn Store,
    model: &'static str,
    version: u32,
}

impl<'a> Parking<'a> {
    pub fn new(store: &'a dyn Store, model: &'static str, version: u32) -> Parking<'a> {
        Parking { store, model, version }
    }

    /// Reads the heads of the keys of `batch`'s events in one store read.
    pub fn prefetch(&self, st: &mut Staged, batch: &EventBatch) -> Result<(), StoreError> {
        let keys = batch.events().iter().map(|e| e.key.clone()).collect();
        st.prefetch(self.store, &heads_table(self.model, self.version), keys)
    }

    /// The dead letter the events of `key` wait behind, if any.
    pub fn head(&self, st: &mut Staged, key: &str) -> Result<Option<(u32, u64)>, StoreError> {
        let row = st.get(self.store, &heads_table(self.model, self.version), key, &[])?;
        Ok(row.map(|c| {
            let int = |k: &str| c.get(k).and_then(Value::as_int).unwrap_or_default();
            (int("partition") as u32, int("offset") as u64)
        }))
    }

    /// Holds `event` back when its key waits behind a dead letter: stages it as a dead letter
    /// held behind that one and returns `true`.
    pub fn hold(&self, st: &mut Staged, event: &Envelope, uri: Option<String>) -> Result<bool, StoreError> {
        let Some((partition, offset)) = self.head(st, &event.key)? else { return Ok(false) };
        debug!(model = self.model, key = event.key, offset = event.position.offset, "event held back behind a dead letter of its key");
        let reason = format!("held back: waits behind the dead letter of its key at partition {partition}, offset {offset}");
        let (clustering, mut c) = row(event, uri, &reason);
        c.insert("heldPartition".into(), Value::Int(i64::from(partition)));
        c.insert("heldOffset".into(), Value::Int(offset as i64));
        st.put(&table(self.model, self.version), PARTITION, clustering, c, event.position.ordinal());
        Ok(true)
    }

    /// Parks `event`, which could not be applied because of `reason`: the later events of
    /// its key wait behind it (or, if its key already waits, it is held back too).
    pub fn park(&self, st: &mut Staged, event: &Envelope, uri: Option<String>, reason: &str) -> Result<(), StoreError> {
        if self.hold(st, event, uri.clone())? {
            return Ok(());
        }
        let position = event.position.ordinal();
        self.put_letter(st, event, uri, reason);
        let mut head = Columns::new();
        head.insert("partition".into(), Value::Int(i64::from(event.position.partition)));
        head.insert("offset".into(), Value::Int(event.position.offset as i64));
        st.put(&heads_table(self.model, self.version), &event.key, Vec::new(), head, position);
        Ok(())
    }

    /// Records `event`, a change ingest refused, as a dead letter that holds nothing back: it
    /// is not proven to come from its repository (a bad signature, say), and holding the
    /// repository's later, verified events behind it would let whoever forged it stall them.
    pub fn refused(&self, st: &mut Staged, event: &Envelope, reason: &str) {
        self.put_letter(st, event, None, reason);
    }

    /// Stages the dead letter of `event`, logged at WARN.
    fn put_letter(&self, st: &mut Staged, event: &Envelope, uri: Option<String>, reason: &str) {
        warn!(
            model = self.model,
            partition = event.position.partition,
            offset = event.position.offset,
            key = event.key,
            kind = event.kind,
            uri = uri.as_deref(),
            reason,
            "dead letter: an event could not be applied"
        );
        let (clustering, c) = row(event, uri, reason);
        st.put(&table(self.model, self.version), PARTITION, clustering, c, event.position.ordinal());
    }

    /// When `event` releases a dead letter of this model (a dismissal or a retry): removes
    /// it, and when it is the one its key waits behind, lets the key's later events through.
    pub fn release(&self, st: &mut Staged, event: &Envelope) -> Result<(), StoreError> {
        let Some((partition, offset)) = released(self.model, event) else { return Ok(()) };
        let position = event.position.ordinal();
        st.delete(&table(self.model, self.version), PARTITION, clustering(partition, offset), position);
        if self.head(st, &event.key)? == Some((partition, offset)) {
            st.delete(&heads_table(self.model, self.version), &event.key, Vec::new(), position);
        }
        Ok(())
    }
}

/// The row that records `event` as dead with `reason`: `(clustering, columns)`.
fn row(event: &Envelope, uri: Option<String>, reason: &str) -> (Vec<u8>, Columns) {
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
                held_behind: r.columns.get("heldOffset").and_then(Value::as_int).map(|offset| (int("heldPartition") as u32, offset as u64)),
            }
        })
        .collect())
}
