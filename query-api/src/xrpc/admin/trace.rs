//! `pub.svc.admin.traceRecord` (beyond the contract): where one record stands in every
//! layer. The log partition its repository's events go to and that partition's end; each
//! record model's row (its state, revision and the log offset of the event it is as of)
//! and how far the model has read the partition; the node's search document; a dead letter
//! parked for it; and the log events those name, read back with their source (the
//! firehose frame, backfill, seed or command that brought them).
//!
//! A row as of offset `o` in a model that has read to `r > o` is applied; events of the
//! partition at or past `r` are not yet, whatever they hold. Reads one row per model and
//! one log event per position named: bounded whatever the size of the log.

use std::collections::BTreeSet;

use projections::trace::{self, RecordRow};
use serde_json::{json, Value};

use crate::body::Body;
use crate::error::ApiError;
use crate::xrpc::method::{Answer, Call};

/// `traceRecord`: the reads (the log's among them, a broker round trip each on Kafka) run on
/// a blocking thread.
pub(super) async fn trace_record(c: Call) -> Answer {
    tokio::task::spawn_blocking(move || trace(&c)).await.map_err(|e| ApiError::internal(e.to_string()))?
}

fn trace(c: &Call) -> Answer {
    let uri = c.str("uri");
    let parsed = lexicons::formats::parse_at_uri(uri).filter(|u| lexicons::formats::is_did(u.authority));
    let Some((did, Some(collection), Some(rkey))) = parsed.map(|u| (u.authority, u.collection, u.rkey)) else {
        return Err(ApiError::invalid_param("uri", "a record's AT URI: at://<did>/<collection>/<rkey>"));
    };
    let state = &c.state;
    let partition = eventlog::partition_for(did, state.log.partitions());
    let log_end = state.log.end_offset(partition).map_err(ApiError::from_error)?;

    let rows = trace::record_rows(state.store.as_ref(), uri).map_err(ApiError::from_error)?;
    let mut offsets = BTreeSet::new();
    let mut models = Vec::new();
    for row in &rows {
        let read_to = match row.version {
            Some(v) => state.store.checkpoints(&store::consumer_name(row.model, v)).map_err(ApiError::from_error)?.get(&partition).copied(),
            None => None,
        };
        let offset =
            row.ordinal().map(event_schema::Position::from_ordinal).filter(|at| at.partition == partition & 0xff).map(|at| at.offset);
        offsets.extend(offset);
        models.push(model_json(row, offset, read_to.unwrap_or(0)));
    }

    let search = match state.node.active_version(projections::search::MODEL).map_err(ApiError::from_error)? {
        Some(version) => {
            let index = state.search.open(version).map_err(ApiError::from_error)?;
            let read_to = index.committed().map_err(ApiError::from_error)?.get(&partition).copied().unwrap_or(0);
            let document = trace::search_document(&index, uri).map_err(ApiError::from_error)?;
            json!({"version": version, "indexed": document.is_some(), "readTo": read_to, "document": document})
        }
        None => json!({"indexed": false, "readTo": 0}),
    };

    let mut dead_letters = Vec::new();
    for model in projections::catalog::DEAD_LETTER_MODELS.iter() {
        let Some(version) = state.store.active_version(model).map_err(ApiError::from_error)? else { continue };
        if let Some(letter) = projections::deadletter::parked(state.store.as_ref(), model, version, uri).map_err(ApiError::from_error)? {
            offsets.insert(letter.offset);
            dead_letters.push(json!({"model": model, "offset": letter.offset, "kind": letter.kind, "reason": letter.reason}));
        }
    }

    let mut events = Vec::new();
    for offset in offsets {
        let read = state.log.read(partition, offset, 1).map_err(ApiError::from_error)?;
        if let Some(event) = read.into_iter().find(|e| e.position.offset == offset) {
            events.push(json!({
                "offset": offset, "kind": event.kind, "appendedAt": event.appended_at.to_rfc3339(),
                "source": event.source, "payload": event.payload,
            }));
        }
    }

    Body::json(&json!({
        "uri": uri, "did": did, "collection": collection, "rkey": rkey,
        "partition": partition, "logEnd": log_end,
        "models": models, "search": search, "deadLetters": dead_letters, "events": events,
    }))
}

/// One model's row as the answer shows it.
fn model_json(row: &RecordRow, offset: Option<u64>, read_to: u64) -> Value {
    let mut out = json!({"model": row.model, "state": row.state(), "readTo": read_to});
    if let Some(v) = row.version {
        out["version"] = json!(v);
    }
    for (field, column) in [("rev", "rev"), ("cid", "cid"), ("indexedAt", "indexedAt")] {
        if let Some(text) = row.text(column) {
            out[field] = json!(text);
        }
    }
    if let Some(offset) = offset {
        out["offset"] = json!(offset);
    }
    if row.state() == "live" {
        if let Some(record) = row.text("record").and_then(|r| serde_json::from_str::<Value>(&r).ok()) {
            out["record"] = record;
        }
    }
    out
}
