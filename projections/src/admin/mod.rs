//! The admin read model: what operators see of svc itself, from the log: the backfill
//! operations (`command.admin` operation events), the event sources ingest follows, and
//! the registry of repository hosts (PDSes) learned from the events' sources.
//!
//! Tables of model `admin` (partition key → clustering key: columns):
//! - `operations`: `all` → operation id: id, type, status (running, completed, failed,
//!   cancelled), runs (a node runs it), startedAt, updatedAt, completedAt, processed,
//!   total, progress (0 to 100), metadata (JSON text), error, cancelRequested, actor.
//! - `sources`: `all` → source URL: url, type (firehose, jetstream), cursor (the stream's
//!   seq or time of the last event appended from it), lastEventAt, events.
//! - `hosts`: `all` → host URL: url, firstSeen, lastSeen, records (record events from it),
//!   users (DIDs seen from it), rescannedAt (when an admin registered it again).
//! - `host_users`: host URL → DID: empty, to count a host's users once each.
//! - `reports`: `all` → log position (big-endian): id, reporter, targetUri,
//!   targetCollection, targetDid, reason, description, createdAt (`moderation.createReport`).
//! - `reports_by_did`: the reported record's repository DID → log position: the same row.

mod apply;
pub mod read;

pub use apply::AdminProjection;

use store::TableRef;

/// The model name.
pub const MODEL: &str = "admin";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &["operations", "sources", "hosts", "host_users", "reports", "reports_by_did"];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

/// The one partition of `operations`, `sources` and `hosts`.
pub(crate) const ALL: &str = "all";
