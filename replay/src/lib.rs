//! Rebuilds: replay the log from position 0 into a fresh version of each read model beside
//! the live one, then swap the active-version pointer.
//!
//! The new version is invisible to queries until it has caught up with the log; the swap is
//! one atomic write of the pointer; the old version is dropped after the swap. Run with the
//! service stopped for now: the same machinery serves an online rebuild, which also has to
//! hand the live workers over to the new version.
#![warn(missing_docs)]

use std::time::{Duration, Instant};

use eventlog::EventLog;
use projections::catalog::{self, Context};
use projections::{catch_up, ProjectionError};
use tracing::info;

/// What a rebuild of one read model did.
#[derive(Debug, Clone, PartialEq)]
pub struct RebuildReport {
    /// The read model.
    pub model: String,
    /// The version that was active before, if any.
    pub old_version: Option<u32>,
    /// The version built and activated.
    pub new_version: u32,
    /// Events replayed.
    pub events: u64,
    /// Time spent replaying.
    pub elapsed: Duration,
}

/// Errors of a rebuild.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A projection, the log or the store failed; the new version was not activated.
    #[error("rebuild of {model} failed: {source}")]
    Projection {
        /// The read model.
        model: String,
        /// What failed.
        source: ProjectionError,
    },
}

/// Events per batch during a rebuild: large, since nobody waits for visibility.
const REBUILD_BATCH: usize = 65536;

/// Rebuilds one read model from position 0 and swaps it in.
///
/// # Errors
/// [`ReplayError`] when building fails; the old version stays active and the partial new
/// version is dropped.
pub fn rebuild(log: &dyn EventLog, ctx: &Context, model: &str) -> Result<RebuildReport, ReplayError> {
    let wrap = |source| ReplayError::Projection { model: model.to_owned(), source };
    let old_version = ctx.store.active_version(model).map_err(|e| wrap(e.into()))?;
    let new_version = ctx.store.create_version(model).map_err(|e| wrap(e.into()))?;
    info!(model, new_version, "rebuilding read model from position 0");
    let started = Instant::now();
    let built = catalog::open(ctx, model, new_version, catalog::Mode::Rebuild)
        .and_then(|mut projection| catch_up(log, projection.as_mut(), REBUILD_BATCH));
    let events = match built {
        Ok(n) => n,
        Err(e) => {
            let _ = catalog::drop_version(ctx, model, new_version);
            return Err(wrap(e));
        }
    };
    ctx.store.set_active_version(model, new_version).map_err(|e| wrap(e.into()))?;
    if let Some(old) = old_version {
        catalog::drop_version(ctx, model, old).map_err(wrap)?;
    }
    let elapsed = started.elapsed();
    info!(model, new_version, events, elapsed_ms = elapsed.as_millis() as u64, "read model rebuilt and swapped in");
    Ok(RebuildReport { model: model.to_owned(), old_version, new_version, events, elapsed })
}

/// Rebuilds every read model, each on its own thread (they share nothing but the log).
///
/// # Errors
/// The first failing rebuild; the models that succeeded stay swapped in.
pub fn rebuild_all(log: &dyn EventLog, ctx: &Context) -> Result<Vec<RebuildReport>, ReplayError> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = catalog::MODELS.iter().map(|m| scope.spawn(move || rebuild(log, ctx, m))).collect();
        handles
            .into_iter()
            .zip(catalog::MODELS)
            .map(|(h, m)| {
                h.join().unwrap_or_else(|_| {
                    Err(ReplayError::Projection {
                        model: (*m).to_owned(),
                        source: ProjectionError::Panicked("rebuild thread panicked".into()),
                    })
                })
            })
            .collect()
    })
}
