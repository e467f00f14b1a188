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
use projections::{catch_up, catch_up_all, Projection, ProjectionError};
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
const REBUILD_BATCH: usize = 16384;

/// A version of one read model being built.
struct Build {
    model: &'static str,
    old_version: Option<u32>,
    new_version: u32,
    projection: Box<dyn Projection>,
}

/// Creates the next version of `model` and opens its projection in rebuild mode.
fn begin(ctx: &Context, model: &'static str) -> Result<Build, ReplayError> {
    let wrap = |source| ReplayError::Projection { model: model.to_owned(), source };
    let old_version = ctx.store.active_version(model).map_err(|e| wrap(e.into()))?;
    let new_version = ctx.store.create_version(model).map_err(|e| wrap(e.into()))?;
    info!(model, new_version, "rebuilding read model from position 0");
    match catalog::open(ctx, model, new_version, catalog::Mode::Rebuild) {
        Ok(projection) => Ok(Build { model, old_version, new_version, projection }),
        Err(e) => {
            let _ = catalog::drop_version(ctx, model, new_version);
            Err(wrap(e))
        }
    }
}

/// Swaps a built version in and drops the old one; a failed build is dropped instead.
fn finish(ctx: &Context, build: Build, built: Result<u64, ProjectionError>, started: Instant) -> Result<RebuildReport, ReplayError> {
    let Build { model, old_version, new_version, projection } = build;
    drop(projection);
    let wrap = |source| ReplayError::Projection { model: model.to_owned(), source };
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

/// Rebuilds one read model from position 0 and swaps it in.
///
/// # Errors
/// [`ReplayError`] when building fails; the old version stays active and the partial new
/// version is dropped.
pub fn rebuild(log: &dyn EventLog, ctx: &Context, model: &str) -> Result<RebuildReport, ReplayError> {
    let Some(model) = catalog::MODELS.iter().copied().find(|m| *m == model) else {
        return Err(ReplayError::Projection {
            model: model.to_owned(),
            source: ProjectionError::Corrupt(format!("unknown read model {model}")),
        });
    };
    let started = Instant::now();
    let mut build = begin(ctx, model)?;
    let built = catch_up(log, build.projection.as_mut(), REBUILD_BATCH);
    finish(ctx, build, built, started)
}

/// Rebuilds every read model together: one reader reads and decodes the log once for all of
/// them, and each model applies it on its own thread.
///
/// # Errors
/// The first failing rebuild; the models that succeeded stay swapped in.
pub fn rebuild_all(log: &dyn EventLog, ctx: &Context) -> Result<Vec<RebuildReport>, ReplayError> {
    let started = Instant::now();
    let mut builds = catalog::MODELS.iter().map(|m| begin(ctx, m)).collect::<Result<Vec<_>, _>>()?;
    let results = catch_up_all(log, builds.iter_mut().map(|b| b.projection.as_mut() as &mut dyn Projection).collect(), REBUILD_BATCH);
    builds.into_iter().zip(results).map(|(build, built)| finish(ctx, build, built, started)).collect()
}
