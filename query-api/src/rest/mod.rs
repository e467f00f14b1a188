//! REST routes under `/api/v1`, answering errors in the REST envelope.

mod eprints;

pub use eprints::routes;
