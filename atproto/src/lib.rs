//! The AT Protocol client pieces svc uses, apart from what it does with them: resolving DIDs
//! and handles, the `#atproto` signing keys, CAR files, signed commits, the DAG-CBOR data
//! model, the compact JWTs of service auth, and writing one repository as its owner
//! ([`repo_writer`]: svc's governance repository). Ingest (the firehose, backfill, record
//! fetches) and the query API's identity layer both build on it.
#![warn(missing_docs)]

pub mod car;
pub mod commit;
pub mod data_model;
pub mod handle;
pub mod identity;
pub mod jwt;
pub mod repo_writer;
