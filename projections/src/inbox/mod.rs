//! The inbox read model: per account, the reviews and endorsements others wrote on the
//! eprints it is listed on (as the eprint's repository or an author with a DID), with the
//! time it last marked them seen (`pub.svc.notification.updateSeen`) and how many arrived
//! since. Kept as events arrive, so a page of notifications or an unread count is a bounded
//! read, however many papers an author has.
//!
//! A notification is read when svc indexed it (its first write's log time) at or before the
//! recipient's `seenAt`. A deleted or taken-down review or endorsement leaves every inbox;
//! an eprint's recipients follow its latest revision (an author added later sees what was
//! written on it before).
//!
//! Tables of model `inbox` (partition key → clustering key: columns):
//! - `eprints`: eprint URI → ∅: rev, recipients (JSON array of DIDs), gone; from the first
//!   review or endorsement written on it, which reads it from the eprints model's row (an
//!   eprint nothing was written on costs this model nothing).
//! - `items`: record URI → ∅: kind (`review`, `endorsement`), eprint, did, rev, createdAt
//!   (µs), indexedAt (µs), view (the attached model's view, JSON), live.
//! - `on_eprint`: eprint URI → record URI: ∅ (for a change of the eprint's recipients).
//! - `by_writer`: DID → record URI: ∅ (for the deletion of the writer's account).
//! - `inbox`: `{recipient} {kind}` → createdAt ‖ record URI: uri, newest last.
//! - `papers`: the same, with the recipient's own records: everything written on the
//!   eprints an account is listed on (`endorsement.listForAuthorPapers`).
//! - `unread`: `{recipient} {kind}` → indexedAt (µs, big-endian) ‖ record URI: uri; the
//!   rows after the recipient's `seenAt` are the unread ones.
//! - `state`: recipient → ∅: seenAt (µs), the unread count of each kind (`review`,
//!   `endorsement`), and the size of each `papers` listing (`papers:{kind}`).

mod apply;
pub mod read;

pub use apply::InboxProjection;

use store::TableRef;

use crate::attached::collections::{Kind, ENDORSEMENT, REVIEW};

/// The model name.
pub const MODEL: &str = "inbox";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &["eprints", "items", "on_eprint", "by_writer", "inbox", "papers", "unread", "state"];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &["state"];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

/// What notifies: reviews and endorsements.
pub const KINDS: [Kind; 2] = [Kind::Review, Kind::Endorsement];

/// The kind of a collection that notifies.
pub(crate) fn kind_of(collection: &str) -> Option<Kind> {
    match collection {
        REVIEW => Some(Kind::Review),
        ENDORSEMENT => Some(Kind::Endorsement),
        _ => None,
    }
}

/// The partition of one recipient's inbox of one kind.
pub(crate) fn inbox_key(recipient: &str, kind: Kind) -> String {
    format!("{recipient} {kind}")
}

/// The clustering key of a notification in `unread`: its indexing time, then its URI.
pub(crate) fn unread_key(indexed_at: i64, uri: &str) -> Vec<u8> {
    let mut k = ((indexed_at as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(uri.as_bytes());
    k
}

/// The `unread` key after every notification indexed at or before `seen_at`.
pub(crate) fn after_seen(seen_at: i64) -> Vec<u8> {
    let mut k = ((seen_at as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.push(0xff);
    k
}
