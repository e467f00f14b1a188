//! The projection tests, one binary: each model applied and read on the embedded log and store.
//! One test binary per crate: each file here is a module (`cargo test -p projections --test integration <module>::`),
//! linked once rather than once per file.

mod support;

mod activity;
mod aggregates;
mod at_scale;
mod attached;
mod authors;
mod catch_up;
mod inbox;
mod pipeline;
mod ranking;
mod search;
mod usage;
