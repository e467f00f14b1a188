//! Row helpers every store-backed model shares: text columns, the stale-revision rule and
//! listing keys ordered by the data.

use std::sync::Arc;

use store::{Columns, Row, Scan, Store, StoreError, TableRef, Value};

/// A text column.
pub(crate) fn text(c: &Columns, k: &str) -> Option<String> {
    c.get(k).and_then(Value::as_text).map(str::to_owned)
}

/// Whether a write or delete at `rev` is not newer than what the model holds. (A batch
/// re-applied after a crash on a store without atomic batches finds its own decision rows
/// only where all their derived rows have landed: see `Staged`.)
pub(crate) fn is_stale(existing: Option<&Columns>, rev: &str) -> bool {
    existing.and_then(|c| text(c, "rev")).is_some_and(|held| held.as_str() >= rev)
}

/// Whether a record row is a tombstone (a placeholder included).
pub(crate) fn is_deleted(row: &Columns) -> bool {
    row.get("deleted").and_then(Value::as_bool) == Some(true)
}

/// Whether a record row is the placeholder of a deleted record, which keeps its place in
/// its listings ([`crate::records::Listings::placeholder`]).
pub(crate) fn is_placeholder(row: &Columns) -> bool {
    row.get("placeholder").and_then(Value::as_bool) == Some(true)
}

/// The clustering key of a record in a listing: its `createdAt` (order-preserving
/// big-endian), then its URI. Listings are ordered by the data alone, so a live svc and one
/// rebuilt from the same repositories list records in the same order however the events
/// arrived. Newest sorts last, so a backwards scan is newest first.
pub fn listing_key(created_at_micros: i64, uri: &str) -> Vec<u8> {
    let mut k = ((created_at_micros as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(uri.as_bytes());
    k
}

/// The URI of a listing's row: the one its value names (rows written before listings left
/// it to the key, and those keyed by the log instead), else the one its [`listing_key`] ends
/// with.
pub fn listed_uri<'r>(clustering: &'r [u8], columns: &'r Columns) -> Option<&'r str> {
    match columns.get("uri").and_then(Value::as_text) {
        Some(uri) => Some(uri),
        None => std::str::from_utf8(clustering.get(8..)?).ok().filter(|u| u.starts_with("at://")),
    }
}

/// Whether `key` has the shape of a [`listing_key`] (a cursor handed back by a client),
/// its URI whole or short (a DID, as text or compact, `/`, a record key: an author's listing
/// of eprints).
pub fn is_listing_key(key: &[u8]) -> bool {
    let Some(uri) = key.get(8..) else { return false };
    if uri.starts_with(b"at://") {
        return std::str::from_utf8(uri).is_ok();
    }
    crate::did_key::decode(uri, b'/').is_some_and(|(_, rest)| rest.starts_with(b"/") && std::str::from_utf8(rest).is_ok())
}

/// A tombstone row: the record is gone as of `rev`, so an older write replayed later is
/// skipped.
pub(crate) fn tombstone(uri: &str, rev: Value, position: u64) -> Columns {
    let mut c = Columns::new();
    c.insert("uri".into(), Value::Text(uri.to_owned()));
    c.insert("rev".into(), rev);
    c.insert("ordinal".into(), Value::Int(position as i64));
    c.insert("deleted".into(), Value::Bool(true));
    c
}

/// The revision of a record an admin took down (`pub.svc.admin.deleteContent`): above
/// every real revision (TIDs use `2-7a-z`), so its tombstone makes every later write and
/// delete of the record stale, live and in a replay.
pub const TAKEN_DOWN_REV: &str = "~taken-down";

/// The tombstone of a record an admin took down (see [`TAKEN_DOWN_REV`]).
pub(crate) fn taken_down(uri: &str, position: u64) -> Columns {
    let mut c = tombstone(uri, Value::Text(TAKEN_DOWN_REV.to_owned()), position);
    c.insert("takenDown".into(), Value::Bool(true));
    c
}

/// The rows of one partition, in clustering order, up to `max`, read page by page.
pub(crate) fn scan_partition(store: &dyn Store, table: &TableRef, partition: &str, max: usize) -> Result<Vec<Row>, StoreError> {
    let mut rows = Vec::new();
    let mut scan = Scan::first(max.clamp(1, 1000));
    loop {
        let page = store.scan(table, partition, &scan)?;
        rows.extend(page.rows);
        match page.next {
            Some(next) if rows.len() < max => scan.after = Some(next),
            _ => return Ok(rows),
        }
    }
}

/// The rows of `table` whose partitions are `partitions` (empty clustering keys), in their
/// order, for a page of a listing: shared rows through [`Store::get_each`], which the
/// embedded store serves from its row cache, so a listing's hot records are decoded once
/// and not on every page read.
pub(crate) fn rows_of(store: &dyn Store, table: &TableRef, partitions: &[&str]) -> Result<Vec<Option<Arc<Columns>>>, StoreError> {
    let keys: Vec<(&TableRef, &str, &[u8])> = partitions.iter().map(|p| (table, *p, &[][..])).collect();
    store.get_each(&keys)
}

/// The row of `table` at `partition` (an empty clustering key), shared: the embedded store
/// hands out its cached row instead of a copy, for readers that use a few of its columns.
pub(crate) fn shared_row(store: &dyn Store, table: &TableRef, partition: &str) -> Result<Option<Arc<Columns>>, StoreError> {
    Ok(store.get_each(&[(table, partition, &[][..])])?.pop().flatten())
}

/// Cuts `rows`, read with one row more than `limit`, to a page: the key the next page
/// starts after, when that extra row says one follows.
pub(crate) fn cut_page(rows: &mut Vec<Row>, limit: usize) -> Option<Vec<u8>> {
    if rows.len() <= limit {
        return None;
    }
    rows.truncate(limit);
    rows.last().map(|r| r.clustering.clone())
}
