//! The activity read model: what users said they were about to write (`pub.svc.activity.log`)
//! and whether it arrived (details.md §9). An activity is `pending` when logged; `confirmed`
//! when the matching record write reaches svc (a create or update for `create` and `update`,
//! a delete for `delete`), with the latency from the log to the write; `failed` when the
//! client marks it so; `timeout` when still pending an hour after it was logged. The timeout
//! is a matter of time, not of an event: a pending activity reads as `timeout` once its hour
//! has passed, and a write arriving later does not confirm it (the projection compares the
//! write's log time with the activity's).
//!
//! Clients log an activity before they write the record (details.md: it is "initiated");
//! a write that reached svc before its activity was logged does not confirm it, and the
//! activity times out. A deleted account's activities leave the model (the counts stay).
//!
//! Tables of model `activity` (partition key → clustering key: columns):
//! - `items`: DID → activity id (u64): the activity's fields, `status`, `initiatedAt` (µs)…
//! - `open`: `{did} {collection} {rkey}` → ∅: `id` of the record's pending activity.
//! - `feed`: `{did}`, `{did} c:{category}`, `{did} s:{status}`, `{did} s:{status} c:{category}`
//!   → initiatedAt ‖ id: ∅. A user's activities, newest last.
//! - `pending`: `*` and `{category}` → initiatedAt ‖ id: ∅. Every pending activity.
//! - `stats`: `*` and `{category}` → ∅: `logged`, `confirmed`, `failed`, `latencyMs` (the
//!   sum over confirmed ones).

mod apply;
pub mod read;

pub use apply::ActivityProjection;

use store::TableRef;

/// The model name.
pub const MODEL: &str = "activity";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &["items", "open", "feed", "pending", "stats"];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &["stats"];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

/// How long an activity may stay pending (µs): an hour (details.md §9).
pub const TIMEOUT_MICROS: i64 = 3_600_000_000;

/// The categories of activity (details.md §9).
pub const CATEGORIES: [&str; 13] = [
    "eprint_submit",
    "eprint_update",
    "eprint_delete",
    "review_create",
    "review_update",
    "review_delete",
    "endorsement_create",
    "endorsement_delete",
    "tag_create",
    "tag_delete",
    "profile_update",
    "proposal_create",
    "vote_create",
];

/// The partition of `stats` and `pending` that counts every category.
pub const ALL: &str = "*";

pub(crate) fn record_key(did: &str, collection: &str, rkey: &str) -> String {
    format!("{did} {collection} {rkey}")
}

/// The clustering key of `feed` and `pending`: the time, then the id.
pub(crate) fn feed_key(initiated_at: i64, id: u64) -> Vec<u8> {
    let mut k = ((initiated_at as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(&id.to_be_bytes());
    k
}

/// The id in a `feed` key.
pub(crate) fn id_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.get(8..16)?.try_into().ok()?))
}

/// The `feed` partitions an activity of `category` in `status` is listed in.
pub(crate) fn feed_partitions(did: &str, category: &str, status: &str) -> [String; 4] {
    [did.to_owned(), format!("{did} c:{category}"), format!("{did} s:{status}"), format!("{did} s:{status} c:{category}")]
}
