//! Reading the admin read model (its active version).

use serde_json::{json, Value as Json};
use store::{Columns, Store, Value};

use super::{table, ALL, MODEL};
use crate::rows::{scan_partition, text};
use crate::ProjectionError;

/// The most rows read from one of the model's partitions.
const MAX_ROWS: usize = 100_000;

/// A backfill operation as the model holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Its id.
    pub id: String,
    /// Its type (`fullReindex`, `didSync`, …).
    pub kind: String,
    /// running, completed, failed or cancelled.
    pub status: String,
    /// Whether a node runs it (`false` for a `triggerBackfill` record).
    pub runs: bool,
    /// An admin asked it to stop.
    pub cancel_requested: bool,
    /// When it started, RFC 3339.
    pub started_at: String,
    /// When its last event entered the log, RFC 3339.
    pub updated_at: String,
    /// The row as the API shows it.
    pub view: Json,
}

fn int(c: &Columns, k: &str) -> i64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0)
}

fn operation_of(c: &Columns) -> Operation {
    let mut view = json!({
        "id": text(c, "id"),
        "type": text(c, "type"),
        "status": text(c, "status"),
        "startedAt": text(c, "startedAt"),
        "progress": int(c, "progress"),
        "recordsProcessed": int(c, "processed"),
    });
    if let Some(done) = text(c, "completedAt") {
        view["completedAt"] = json!(done);
    }
    if c.contains_key("total") {
        view["recordsTotal"] = json!(int(c, "total"));
    }
    if let Some(e) = text(c, "error") {
        view["error"] = json!(e);
    }
    if let Some(m) = text(c, "metadata").and_then(|m| serde_json::from_str::<Json>(&m).ok()) {
        view["metadata"] = m;
    }
    if let Some(actor) = text(c, "actor") {
        view["triggeredBy"] = json!(actor);
    }
    Operation {
        id: text(c, "id").unwrap_or_default(),
        kind: text(c, "type").unwrap_or_default(),
        status: text(c, "status").unwrap_or_default(),
        runs: c.get("runs").and_then(Value::as_bool) == Some(true),
        cancel_requested: c.get("cancelRequested").and_then(Value::as_bool) == Some(true),
        started_at: text(c, "startedAt").unwrap_or_default(),
        updated_at: text(c, "updatedAt").unwrap_or_default(),
        view,
    }
}

/// Reads the active version of the admin model.
pub struct AdminReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

impl<'a> AdminReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<AdminReader<'a>, ProjectionError> {
        Ok(AdminReader { store, version: store.active_version(MODEL)? })
    }

    /// The operation `id`, if there is one.
    pub fn operation(&self, id: &str) -> Result<Option<Operation>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        Ok(self.store.get(&table(v, "operations"), ALL, id.as_bytes())?.map(|c| operation_of(&c)))
    }

    /// What svc published to the governance repository for `proposal`, if it did (or found
    /// it could not): `{uri, cid?, error?, at}`.
    pub fn published(&self, proposal: &str) -> Result<Option<Json>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        Ok(self.store.get(&table(v, "published"), proposal, &[])?.map(|c| {
            let mut out = json!({"uri": text(&c, "uri"), "at": text(&c, "at")});
            for field in ["cid", "error"] {
                if let Some(value) = text(&c, field) {
                    out[field] = Json::String(value);
                }
            }
            out
        }))
    }

    /// Every operation, newest start first.
    pub fn operations(&self) -> Result<Vec<Operation>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let mut all: Vec<Operation> =
            scan_partition(self.store, &table(v, "operations"), ALL, MAX_ROWS)?.iter().map(|r| operation_of(&r.columns)).collect();
        all.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.id.cmp(&a.id)));
        Ok(all)
    }

    /// Every event source ingest appended from: `{url, type, cursor, lastEventAt, events}`.
    pub fn sources(&self) -> Result<Vec<Json>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        Ok(scan_partition(self.store, &table(v, "sources"), ALL, MAX_ROWS)?
            .iter()
            .map(|r| {
                let c = &r.columns;
                json!({"url": text(c, "url"), "type": text(c, "type"), "cursor": c.get("cursor").and_then(Value::as_int),
                       "lastEventAt": text(c, "lastEventAt"), "events": int(c, "events")})
            })
            .collect())
    }

    /// Every repository host seen or registered: `{pdsUrl, recordCount, userCount,
    /// firstSeen, lastSeen, rescannedAt, lastScanAt}`, in URL order.
    pub fn hosts(&self) -> Result<Vec<Json>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        Ok(scan_partition(self.store, &table(v, "hosts"), ALL, MAX_ROWS)?
            .iter()
            .map(|r| {
                let c = &r.columns;
                let last_scan = [text(c, "lastSeen"), text(c, "rescannedAt")].into_iter().flatten().max();
                json!({"pdsUrl": text(c, "url"), "recordCount": int(c, "records"), "userCount": int(c, "users"),
                       "firstSeen": text(c, "firstSeen"), "lastSeen": text(c, "lastSeen"), "rescannedAt": text(c, "rescannedAt"),
                       "lastScanAt": last_scan})
            })
            .collect())
    }

    /// The violations, newest first, up to `limit`: the take-downs and the users' reports,
    /// of every record or of one repository's. A bounded read.
    pub fn violations(&self, did: Option<&str>, limit: usize) -> Result<Vec<Json>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let (name, partition) = match did {
            Some(d) => ("violations_by_did", d),
            None => ("violations", ALL),
        };
        let rows = self.store.scan(&table(v, name), partition, &store::Scan { after: None, limit, reverse: true })?.rows;
        Ok(rows
            .iter()
            .map(|r| {
                let c = &r.columns;
                let mut out = json!({"id": text(c, "id"), "type": text(c, "type"), "actorDid": text(c, "actor"), "uri": text(c, "uri"),
                       "collection": text(c, "collection"), "did": text(c, "did"), "reason": text(c, "reason"),
                       "createdAt": text(c, "createdAt")});
                if let Some(d) = text(c, "description") {
                    out["description"] = json!(d);
                }
                out
            })
            .collect())
    }

    /// How many reports users made.
    pub fn report_count(&self) -> Result<u64, ProjectionError> {
        let Some(v) = self.version else { return Ok(0) };
        let row = self.store.get(&table(v, "violation_counts"), "report", &[])?;
        Ok(row.and_then(|c| c.get("n").and_then(Value::as_int)).unwrap_or(0).max(0) as u64)
    }
}
