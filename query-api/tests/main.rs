//! The router tests, one binary: the whole application called in process on an embedded log and store.
//! One test binary per crate: each file here is a module (`cargo test -p query-api --test integration <module>::`),
//! linked once rather than once per file.

mod support;

mod activity;
mod admin;
mod auth;
mod claiming;
mod collection;
mod governance;
mod graph;
mod integrations;
mod log_stream;
mod metrics;
mod mfa;
mod notifications;
mod registries;
mod resolve;
mod router;
mod scholarly;
mod settings;
mod similar;
