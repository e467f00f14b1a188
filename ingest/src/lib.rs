//! Turning what svc sees into events in the log.
//!
//! - [`seed`]: papers in the arXiv JSON-lines format become `pub.svc.eprint.submission`
//!   repository events, deterministically.
//! - [`firehose`]: a relay's or PDS's `subscribeRepos` stream, verified ([`frame`], [`car`],
//!   [`commit`], [`identity`]), becomes record, identity and account events.
//! - [`backfill`]: a repository fetched whole and verified brings the read models to its state.
#![warn(missing_docs)]

pub mod arxiv;
pub mod backfill;
pub mod commit;
mod cursor;
mod error;
pub mod fetch;
pub mod firehose;
pub mod frame;
pub mod host;
pub mod jetstream;
pub mod repo;
mod revs;
pub mod seed;
pub mod social;
pub mod taxonomy;
pub mod testing;
pub mod usage;
pub mod verify;

pub use atproto::{car, data_model, handle, identity};
pub use error::IngestError;
