//! Where one record stands in the read models (`pub.svc.admin.traceRecord`): each record
//! model's row for it, and the search document's source. Reads one row per model; what
//! the log holds is read by the caller at the positions these rows name.

use store::{Columns, Store, StoreError, TableRef};

use crate::rows::{is_deleted, is_placeholder, text};
use crate::{attached, eprints, search};

/// The models whose `records` table holds each record they apply by its URI.
pub const RECORD_MODELS: &[&str] = &[eprints::MODEL, attached::MODEL];

/// What a record model holds for a record.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordRow {
    /// The model.
    pub model: &'static str,
    /// Its active version (`None`: the model was never built).
    pub version: Option<u32>,
    /// The row (`None`: the model holds nothing for the record).
    pub row: Option<Columns>,
}

impl RecordRow {
    /// `live`, `deleted` (a tombstone), `placeholder` (deleted, keeping its place in
    /// threads), `takenDown` or `absent`.
    pub fn state(&self) -> &'static str {
        match &self.row {
            None => "absent",
            Some(row) if row.get("takenDown").and_then(store::Value::as_bool) == Some(true) => "takenDown",
            Some(row) if is_placeholder(row) => "placeholder",
            Some(row) if is_deleted(row) => "deleted",
            Some(_) => "live",
        }
    }

    /// A text column of the row.
    pub fn text(&self, column: &str) -> Option<String> {
        self.row.as_ref().and_then(|r| text(r, column))
    }

    /// The ordinal of the log position of the event the row is as of
    /// ([`event_schema::Position::ordinal`]).
    pub fn ordinal(&self) -> Option<u64> {
        self.row.as_ref().and_then(|r| r.get("ordinal")).and_then(store::Value::as_int).map(|o| o as u64)
    }
}

/// Each record model's row for `uri`, in [`RECORD_MODELS`] order.
pub fn record_rows(store: &dyn Store, uri: &str) -> Result<Vec<RecordRow>, StoreError> {
    RECORD_MODELS
        .iter()
        .map(|&model| {
            let Some(version) = store.active_version(model)? else { return Ok(RecordRow { model, version: None, row: None }) };
            let row = store.get(&TableRef::new(model, version, "records"), uri, &[])?;
            Ok(RecordRow { model, version: Some(version), row })
        })
        .collect()
}

/// The search document of `uri` in `index` (`None`: no document; only eprints are
/// indexed): the revision it was made from and the log position of the event that wrote
/// that revision (`seq`, and its `offset` in its partition).
pub fn search_document(index: &search::SearchIndex, uri: &str) -> Result<Option<serde_json::Value>, crate::ProjectionError> {
    Ok(index
        .document(uri)?
        .map(|(rev, seq)| serde_json::json!({"rev": rev, "seq": seq, "offset": event_schema::Position::from_ordinal(seq).offset})))
}
