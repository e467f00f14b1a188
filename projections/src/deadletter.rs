//! Dead letters: events a projection could not apply, with the reason, kept per read-model
//! version in the store so that admins can list them and a rebuild reproduces them.
//!
//! Nothing waits behind a dead letter (ARCHITECTURE.md, principle 4): every record event
//! carries the whole record at a revision, so the later events of the same repository are
//! applied as they come. A later revision of the parked record that is applied, its delete,
//! its take-down or its account's deletion *supersedes* the letter: it moves to a table of
//! its own ([`superseded_table`]), marked with the position of the event that superseded
//! it. Retrying or dismissing a letter releases it (an admin command, [`released`]).
//!
//! An earlier svc held the later events of a parked event's key back behind it; such held
//! letters ([`DeadLetter::held_behind`]) are released on upgrade ([`held_releases`]).

use event_schema::{AdminAction, AdminCommand, Envelope, NewEvent, Payload, Source};
use eventlog::EventLog;
use serde::Serialize;
use store::{Columns, Store, StoreError, TableRef, Value};
use tracing::{debug, warn};

use crate::rows::text;
use crate::staged::Staged;
use crate::ProjectionError;

/// The table of a model version's dead letters.
pub fn table(model: &str, version: u32) -> TableRef {
    TableRef::new(model, version, "dead_letters")
}

/// The table of a model version's superseded dead letters (the same rows, with
/// `supersededAt`).
pub fn superseded_table(model: &str, version: u32) -> TableRef {
    TableRef::new(model, version, "superseded_letters")
}

/// The table of a model version's parked records: per record URI with a dead letter that
/// nothing has superseded yet, the letter's position and the parked revision (columns
/// `partition`, `offset`, `rev`).
fn parked_table(model: &str, version: u32) -> TableRef {
    TableRef::new(model, version, "dead_letter_records")
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
    /// The event that superseded the parked one, `(partition, offset)`: a later revision of
    /// the record, its delete or take-down, or its account's deletion. (Kept as the event's
    /// ordinal, which holds the low 8 bits of its partition.)
    pub superseded_by: Option<(u32, u64)>,
    /// For an event an earlier svc held back behind an earlier dead letter of its key: that
    /// letter's `(partition, offset)`. Such letters are released on upgrade ([`held_releases`]).
    pub held_behind: Option<(u32, u64)>,
}

impl DeadLetter {
    /// The position of the event, `(partition, offset)`.
    pub fn position(&self) -> (u32, u64) {
        (self.partition, self.offset)
    }
}

/// How many dead letters a model version holds (superseded ones aside).
pub fn count(store: &dyn Store, model: &str, version: u32) -> Result<u64, StoreError> {
    store.count(&table(model, version), PARTITION)
}

/// The clustering key of the dead letter of the event at `partition`/`offset`.
fn clustering(partition: u32, offset: u64) -> Vec<u8> {
    let mut k = offset.to_be_bytes().to_vec();
    k.extend_from_slice(&partition.to_be_bytes());
    k
}

/// A position read from the integer columns `partition` and `offset`.
fn position_of(c: &Columns, partition: &str, offset: &str) -> Option<(u32, u64)> {
    let int = |k: &str| c.get(k).and_then(Value::as_int);
    Some((int(partition)? as u32, int(offset)? as u64))
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

/// The dead letters of one model version as its projection stages them in a batch:
/// parking, superseding and releasing.
#[derive(Clone, Copy)]
pub(crate) struct Parking<'a> {
    store: &'a dyn Store,
    model: &'static str,
    version: u32,
}

impl<'a> Parking<'a> {
    pub fn new(store: &'a dyn Store, model: &'static str, version: u32) -> Parking<'a> {
        Parking { store, model, version }
    }

    /// Reads the parked records among `uris` (those a batch writes or deletes) in one
    /// store read.
    pub fn prefetch(&self, st: &mut Staged, uris: Vec<String>) -> Result<(), StoreError> {
        st.prefetch(self.store, &parked_table(self.model, self.version), uris)
    }

    /// Parks `event`, which could not be applied because of `reason`. Nothing waits behind
    /// it; a record event's letter is superseded by the next change of its record.
    pub fn park(&self, st: &mut Staged, event: &Envelope, uri: Option<String>, rev: Option<&str>, reason: &str) {
        if let Some(uri) = &uri {
            let mut c = Columns::new();
            c.insert("partition".into(), Value::Int(i64::from(event.position.partition)));
            c.insert("offset".into(), Value::Int(event.position.offset as i64));
            c.insert("rev".into(), rev.map_or(Value::Null, |r| Value::Text(r.to_owned())));
            st.put(&parked_table(self.model, self.version), uri, Vec::new(), c, event.position.ordinal());
        }
        self.put_letter(st, event, uri, reason);
    }

    /// Records `event`, a change ingest refused, as a dead letter: it is not proven to come
    /// from its repository (a bad signature, say), so it stands for no record.
    pub fn refused(&self, st: &mut Staged, event: &Envelope, reason: &str) {
        self.put_letter(st, event, None, reason);
    }

    /// Marks the letter parked for `uri`, if any, superseded by the event at `position`
    /// (an ordinal), which changed the record: a write or delete at `rev` (when the parked
    /// revision is older), or a take-down or an account's deletion (`rev` is `None`).
    pub fn supersede(&self, st: &mut Staged, uri: &str, rev: Option<&str>, position: u64) -> Result<(), StoreError> {
        let parked_table = parked_table(self.model, self.version);
        let Some(parked) = st.get(self.store, &parked_table, uri, &[])? else { return Ok(()) };
        if let (Some(rev), Some(parked_rev)) = (rev, text(&parked, "rev")) {
            if parked_rev.as_str() >= rev {
                return Ok(());
            }
        }
        st.delete(&parked_table, uri, Vec::new(), position);
        let Some((partition, offset)) = position_of(&parked, "partition", "offset") else { return Ok(()) };
        let letters = table(self.model, self.version);
        let Some(mut letter) = st.get(self.store, &letters, PARTITION, &clustering(partition, offset))? else { return Ok(()) };
        debug!(model = self.model, uri, offset, "a dead letter superseded by a later change of its record");
        letter.insert("supersededAt".into(), Value::Int(position as i64));
        st.delete(&letters, PARTITION, clustering(partition, offset), position);
        st.put(&superseded_table(self.model, self.version), PARTITION, clustering(partition, offset), letter, position);
        Ok(())
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
    /// it (superseded or not), and its record's parked entry when it is the letter's.
    pub fn release(&self, st: &mut Staged, event: &Envelope) -> Result<(), StoreError> {
        let Some((partition, offset)) = released(self.model, event) else { return Ok(()) };
        let position = event.position.ordinal();
        let letters = table(self.model, self.version);
        let letter = st.get(self.store, &letters, PARTITION, &clustering(partition, offset))?;
        st.delete(&letters, PARTITION, clustering(partition, offset), position);
        st.delete(&superseded_table(self.model, self.version), PARTITION, clustering(partition, offset), position);
        if let Some(uri) = letter.as_ref().and_then(|l| text(l, "uri")) {
            let parked_table = parked_table(self.model, self.version);
            let parked = st.get(self.store, &parked_table, &uri, &[])?;
            if parked.as_ref().and_then(|p| position_of(p, "partition", "offset")) == Some((partition, offset)) {
                st.delete(&parked_table, &uri, Vec::new(), position);
            }
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

/// Lists dead letters in log order, up to `limit` (read page by page).
pub fn list(store: &dyn Store, model: &str, version: u32, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
    let rows = crate::rows::scan_partition(store, &table(model, version), PARTITION, limit)?;
    Ok(rows.iter().take(limit).map(|r| letter(&r.columns)).collect())
}

/// The dead letter parked for the record at `uri` that nothing superseded, if any.
pub fn parked(store: &dyn Store, model: &str, version: u32, uri: &str) -> Result<Option<DeadLetter>, StoreError> {
    let Some(row) = store.get(&parked_table(model, version), uri, &[])? else { return Ok(None) };
    let Some((partition, offset)) = position_of(&row, "partition", "offset") else { return Ok(None) };
    Ok(store.get(&table(model, version), PARTITION, &clustering(partition, offset))?.map(|c| letter(&c)))
}

/// Lists superseded dead letters in log order, up to `limit` (read page by page).
pub fn list_superseded(store: &dyn Store, model: &str, version: u32, limit: usize) -> Result<Vec<DeadLetter>, StoreError> {
    let rows = crate::rows::scan_partition(store, &superseded_table(model, version), PARTITION, limit)?;
    Ok(rows.iter().take(limit).map(|r| letter(&r.columns)).collect())
}

/// How many superseded dead letters a model version holds.
pub fn count_superseded(store: &dyn Store, model: &str, version: u32) -> Result<u64, StoreError> {
    store.count(&superseded_table(model, version), PARTITION)
}

/// The letters an earlier svc held back behind another of their key, in log order: on
/// upgrade their events are appended again after their release, so that they apply.
pub fn held(store: &dyn Store, model: &str, version: u32) -> Result<Vec<DeadLetter>, StoreError> {
    let rows = crate::rows::scan_partition(store, &table(model, version), PARTITION, usize::MAX)?;
    Ok(rows.iter().map(|r| letter(&r.columns)).filter(|l| l.held_behind.is_some()).collect())
}

/// A dead letter as its row holds it.
fn letter(c: &Columns) -> DeadLetter {
    let text = |k: &str| text(c, k).unwrap_or_default();
    let (partition, offset) = position_of(c, "partition", "offset").unwrap_or_default();
    let superseded_by = c.get("supersededAt").and_then(Value::as_int).map(|o| {
        let at = event_schema::Position::from_ordinal(o as u64);
        (at.partition, at.offset)
    });
    DeadLetter {
        partition,
        offset,
        key: text("key"),
        kind: text("kind"),
        uri: crate::rows::text(c, "uri"),
        reason: text("reason"),
        superseded_by,
        held_behind: position_of(c, "heldPartition", "heldOffset"),
    }
}

/// The events that release the letters an earlier svc held back, in the active versions of
/// those of `models` that park events: for each held event, in log order, the release of
/// each of its letters, then the event again, so that the projections apply it (it was
/// valid: it only waited). Returns how many events were held, and the events to append.
/// Appended twice (before the projections applied the first), the second copies are stale.
pub fn held_releases(store: &dyn Store, log: &dyn EventLog, models: &[&str]) -> Result<(usize, Vec<NewEvent>), ProjectionError> {
    let mut held = std::collections::BTreeMap::<(u64, u32), Vec<(&str, DeadLetter)>>::new();
    for model in models.iter().filter(|m| crate::catalog::DEAD_LETTER_MODELS.contains(m)) {
        let Some(version) = store.active_version(model)? else { continue };
        for letter in self::held(store, model, version)? {
            held.entry((letter.offset, letter.partition)).or_default().push((model, letter));
        }
    }
    let source = || Source::Manual { note: "svc upgrade: an event held back behind a dead letter, released".into() };
    let mut events = Vec::new();
    for ((offset, partition), letters) in &held {
        for (model, letter) in letters {
            let action =
                AdminAction::DeadLetterReleased { model: model.to_string(), partition: *partition, offset: *offset, retried: true };
            let payload = Payload::Admin(AdminCommand { actor: "svc".into(), action });
            events.push(NewEvent { key: letter.key.clone(), source: source(), payload });
        }
        if let Some(event) = log.read(*partition, *offset, 1)?.into_iter().next().filter(|e| e.position.offset == *offset) {
            events.push(NewEvent { key: event.key, source: source(), payload: event.payload });
        }
    }
    Ok((held.len(), events))
}
