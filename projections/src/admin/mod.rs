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
//! - `violations`: `all` → log position (big-endian): id, type (`takedown`: an admin's
//!   `deleteContent`; `report`: a user's `moderation.createReport`), actor, uri, collection,
//!   did (the record's repository), reason, description, createdAt.
//! - `violations_by_did`: the record's repository DID → log position: the same row.
//! - `violation_counts`: a type → ∅: n.
//! - `published`: a governance proposal's AT URI → ∅: uri (the record svc wrote for it to
//!   the governance repository), cid, error (why it could not), at, actor; the first
//!   report of a proposal (`command.admin` `governancePublished`).

mod apply;
pub mod read;

pub use apply::AdminProjection;

use store::TableRef;

/// The model name.
pub const MODEL: &str = "admin";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] =
    &["operations", "sources", "hosts", "host_users", "violations", "violations_by_did", "violation_counts", "published"];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &["violation_counts", "sources", "hosts"];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

/// The one partition of `operations`, `sources` and `hosts`.
pub(crate) const ALL: &str = "all";
