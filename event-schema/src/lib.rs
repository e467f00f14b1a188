//! The event envelope and payload types of svc, their versions and upcasters,
//! the CBOR codec used on disk and the JSON view used by tooling.
//!
//! Every change svc knows about is an [`Envelope`]: a versioned header (position, key,
//! kind, schema version, time appended, source) around a [`Payload`]. Producers build a
//! [`NewEvent`]; the log assigns its [`Position`] and append time.
//!
//! Guarantees:
//! - [`codec::encode`] and [`codec::decode`] round-trip every payload.
//! - Events written with an older schema version decode through [`codec::upcast`] into the
//!   current types; a version newer than this build knows is an error, never a guess.
//!
//! This crate does no I/O and depends on no other crate of the workspace. It also holds the
//! error classes ([`ErrorClass`]) every library error maps to, so that only the query API
//! turns them into HTTP.
#![warn(missing_docs)]
#![doc(test(attr(deny(warnings))))]

pub mod codec;
mod envelope;
mod error;
pub mod events;
pub mod packed;

pub use envelope::{Envelope, EventKind, NewEvent, Position, Source};
pub use error::{ClassifiedError, CodecError, ErrorClass};
pub use events::{
    AccessAction, AccessChange, AccountChange, AccountStatus, AdminAction, AdminCommand, BacklinkChange, CitedWork, Enrichment,
    ExternalAuthor, ExternalPaper, IdentityChange, LoggedActivity, OnceProof, Payload, RecordDelete, RecordWrite, Rejected,
    SearchImpression, Topic, UsageAction, UsageEvent, UserAction, UserCommand, OPERATIONS_KEY,
};

/// The schema version this build writes.
pub const CURRENT_SCHEMA_VERSION: u16 = 1;

/// A field of a variant read from a map of every variant's fields (`Source`, `UsageAction`):
/// `missing_field` when the variant's field is absent.
pub(crate) fn given<T, E: serde::de::Error>(value: Option<T>, field: &'static str) -> Result<T, E> {
    value.ok_or_else(|| E::missing_field(field))
}
