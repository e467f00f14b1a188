//! Reading the read models from a request: off the async workers when the store reads
//! over the network, in place when it answers from local pages.

use projections::attached::read::AttachedReader;
use projections::ProjectionError;

use crate::error::ApiError;
use crate::state::AppState;

/// Runs store reads: in place when the store answers from local pages, and otherwise (a
/// network round trip on ScyllaDB) without stalling the other tasks of a multi-threaded
/// runtime (`block_in_place` is refused by a current-thread one).
pub fn blocking<T>(state: &AppState, read: impl FnOnce() -> T) -> T {
    if !state.store.reads_block() {
        return read();
    }
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(read),
        _ => read(),
    }
}

/// Runs `f` on a reader of the attached model (and the eprints model's accounts).
pub fn attached<T>(state: &AppState, f: impl FnOnce(&AttachedReader) -> Result<T, ProjectionError>) -> Result<T, ApiError> {
    Ok(blocking(state, || f(&AttachedReader::new(state.store.as_ref())?))?)
}
