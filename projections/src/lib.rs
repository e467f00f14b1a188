//! The projection runtime and the projections that build svc's read models from the log.
//!
//! A [`Projection`] turns events into one read model and persists its effects together with
//! its checkpoints (the next log offset per partition), so a crash at any moment resumes
//! exactly where the durable state ends. The [`Worker`] feeds it batches from the log,
//! retries failures, and reports progress. Records that fail lexicon validation go to the
//! model's dead letters with their reason; everything else goes on.
//!
//! Projections:
//! - [`eprints::EprintsProjection`]: eprint detail, by-author listing and accounts, in the store.
//! - [`attached::AttachedProjection`]: reviews, annotations, endorsements, tags, citations
//!   and the other records attached to eprints and accounts, in the store.
//! - [`access::AccessProjection`]: roles, sessions, second factors and the audit trail.
//! - [`admin::AdminProjection`]: backfill operations, event sources, repository hosts.
//! - [`inbox::InboxProjection`]: per account, the reviews and endorsements on its papers.
//! - [`usage::UsageProjection`]: views, downloads and trending, by COUNTER's rules.
//! - [`activity::ActivityProjection`]: the writes users announce, and whether they arrived.
//! - [`search::SearchProjection`]: the tantivy full-text index.
//!
//! Every read model is versioned: a rebuild builds version N+1 beside N (see the `replay`
//! crate). `indexedAt` is the time the event entered the log, so a replay reproduces it.
#![warn(missing_docs)]

pub mod access;
pub mod activity;
pub mod admin;
pub mod attached;
mod batch;
pub mod catalog;
pub mod deadletter;
pub mod did_key;
pub mod eprints;
mod error;
mod fanout;
pub mod governance;
mod hold;
pub mod imports;
pub mod inbox;
pub mod interactions;
mod projection;
mod records;
pub mod rows;
pub mod search;
mod staged;
pub mod submission;
pub mod trace;
pub mod usage;
mod worker;

pub use batch::{BatchEvent, EventBatch};
pub use error::ProjectionError;
pub use fanout::{catch_up_all, catch_up_all_reporting};
pub use hold::{Held, HeldModel, HoldHandle};
pub use projection::{Checkpoints, Projection};
pub use worker::{catch_up, catch_up_to, Progress, Worker, WorkerConfig, WorkerThreads};
