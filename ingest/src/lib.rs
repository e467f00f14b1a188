//! Turning what svc sees into events in the log.
//!
//! Today that is [`seed`]: papers in the arXiv JSON-lines format become
//! `pub.svc.eprint.submission` repository events, deterministically. The firehose and
//! Jetstream clients, repository backfill and record refresh come next and share the record
//! helpers of [`repo`].
#![warn(missing_docs)]

mod error;
pub mod repo;
pub mod seed;

pub use error::IngestError;
