//! The attached read model: every record people attach to an eprint or to their account
//! (reviews, annotations, entity links, endorsements, tags, citations, related works,
//! versions, changelogs, profiles), through one runtime; what differs per collection is
//! its normalization, in [`collections`].
//!
//! Tables of model `attached` (partition key → clustering key: columns):
//! - `records`: record URI → empty: uri, did, collection, cid, rev, view (the record in the
//!   contract's view shape, JSON), indexedAt, createdAt (µs), lists (JSON array of the
//!   `listing` partitions it appears in), deleted, ordinal. A deletion leaves a tombstone
//!   with its `rev`, so an older write replayed later is skipped.
//! - `listing`: a listing ([`collections::Listing`], e.g. the reviews of one eprint) →
//!   createdAt (µs, order-preserving big-endian) ‖ record URI: uri. Scanned backwards for
//!   newest first. Besides the listings of its collection, every record is in `repo:{did}`
//!   (its repository's) and `all:{collection}` (its collection's).
//! - `sizes`: a listing (or `backlink@{target}[@{type}]`: the live backlinks to a target) →
//!   empty: n, its number of rows, kept with every row listed and
//!   unlisted, so a total is one row read on every store (the CQL test server has no
//!   `COUNT`); for a set whose members are counted in pairs, also members (a JSON array of
//!   its keys). A pair's count (`collections::pairs`) is a size too. On ScyllaDB a batch
//!   cut short and applied again may count twice: see docs/decisions.md.
//! - `backlinks`: target URI → source URI: id, sourceUri, sourceType, targetUri, context,
//!   indexedAt, deleted. Backlinks are command events (`pub.svc.backlink.create`,
//!   `delete`), not records; `id` is the log position of the event that first made it, so
//!   a replay gives the same ids. A delete marks the row deleted (soft).
//! - `backlink_sources`: source URI → target URI: the same row, to find what one source
//!   links to.
//! - `dead_letters`, `superseded_letters`, `dead_letter_records`: see [`crate::deadletter`]
//!   (`dead_letter_heads`, of an earlier svc, is dropped with a version).

mod apply;
pub mod collections;
pub mod read;

pub use apply::AttachedProjection;

use store::TableRef;

/// The model name.
pub const MODEL: &str = "attached";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &[
    "records",
    "listing",
    "sizes",
    "backlinks",
    "backlink_sources",
    "dead_letters",
    "superseded_letters",
    "dead_letter_records",
    "dead_letter_heads",
];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &["sizes", "listing"];

pub(crate) fn records(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "records")
}

pub(crate) fn listing(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "listing")
}

pub(crate) fn backlinks(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "backlinks")
}

pub(crate) fn backlink_sources(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "backlink_sources")
}

/// The `sizes` partition counting the live backlinks to `target` (of one source type).
pub(crate) fn backlink_count(target: &str, source_type: Option<&str>) -> String {
    match source_type {
        Some(kind) => format!("backlink@{target}@{kind}"),
        None => format!("backlink@{target}"),
    }
}

pub(crate) fn sizes(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "sizes")
}
