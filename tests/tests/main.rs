//! The end-to-end tests, one binary: svc's binary and the real peers (PDS, tansu, the CQL server, Chromium).
//! One test binary per crate: each file here is a module (`cargo test -p tests --test integration <module>::`),
//! linked once rather than once per file.

mod admin;
mod auth;
mod bad_input;
mod browser;
mod compose;
mod crash;
mod disk_full;
mod e2e;
mod faults;
mod firehose;
mod first_hour;
mod log_export;
mod log_stream;
mod openapi_fuzz;
mod restart;
mod scholarly;
mod similar_quality;
mod snapshot;
mod sync;
mod topology;
