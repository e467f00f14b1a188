//! Rebuilds: replay the log from position 0 into a fresh version of each read model beside
//! the live one, then swap the active-version pointer.
//!
//! The new version is invisible to queries until it has caught up with the log; the swap is
//! one atomic write of the pointer. Live projection workers follow the pointer
//! ([`projections::catalog::FollowActive`]): within about a second of the swap they go on
//! from the new version's checkpoints, so a rebuild can run while the service runs, in
//! another process, against a log and store the service shares (Kafka and ScyllaDB). The old
//! version is dropped after a grace period that lets those workers move over; a drop that
//! fails leaves the old version retired, and the next rebuild drops it.
//!
//! A live worker that goes on applying to the old version after the rebuild's last read
//! would leave the new version, once swapped in, behind what queries read a moment before.
//! A rebuild in the serving process closes that gap with a [`Pause`]: it holds the workers
//! of this process, brings every new version to the log's end, swaps, and lets them go; they
//! then go on from the new versions at once. Workers of other processes (`svc project`) are
//! not held: until they move, about a second, the new version may lag a few events.
#![warn(missing_docs)]

use std::time::{Duration, Instant};

use eventlog::EventLog;
use projections::catalog::{self, Context};
use projections::{catch_up, catch_up_all_reporting, catch_up_to, Projection, ProjectionError};
use store::VersionState;
use tracing::{info, warn};

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
    /// Whether the old version was dropped (false when there was none, or dropping it
    /// failed: it then stays retired until the next rebuild).
    pub old_dropped: bool,
}

/// How to rebuild.
#[derive(Debug, Clone)]
pub struct RebuildOptions {
    /// The read models to rebuild, by name.
    pub models: Vec<&'static str>,
    /// How long the old version is kept after the swap before it is dropped: zero when no
    /// other process can be reading or writing it.
    pub grace: Duration,
    /// Events per batch: large for speed; smaller ones let an online rebuild report
    /// progress and stop on a cancel sooner.
    pub batch_size: usize,
}

impl RebuildOptions {
    /// Every read model, dropping old versions at once (the service is stopped).
    pub fn offline() -> RebuildOptions {
        RebuildOptions { models: catalog::MODELS.to_vec(), grace: Duration::ZERO, batch_size: REBUILD_BATCH }
    }
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

/// Holds the live workers of this process (each flushed, applying nothing) until what it
/// answers is dropped: a rebuild calls it once its new versions are built, brings them to
/// the log's end and swaps them in while held (see the crate docs). [`NO_PAUSE`] where no
/// worker runs in the process.
pub type Pause<'a> = &'a (dyn Fn() -> Vec<projections::Held> + Sync);

/// A [`Pause`] that holds nothing.
pub const NO_PAUSE: Pause<'static> = &Vec::new;

/// Events per batch during a rebuild: large, since nobody waits for visibility.
pub const REBUILD_BATCH: usize = 16384;

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
    let registry = ctx.registry(model);
    drop_retired(ctx, model);
    let old_version = registry.active_version(model).map_err(|e| wrap(e.into()))?;
    let new_version = catalog::create_version(ctx, model).map_err(wrap)?;
    info!(model, new_version, "rebuilding read model from position 0");
    match catalog::open(ctx, model, new_version, catalog::Mode::Rebuild) {
        Ok(projection) => Ok(Build { model, old_version, new_version, projection }),
        Err(e) => {
            let _ = catalog::drop_version(ctx, model, new_version);
            Err(wrap(e))
        }
    }
}

/// Drops the retired versions of each of `models`: those a stopped or failed rebuild
/// abandoned, and old ones a rebuild could not drop. Not while a rebuild's grace period runs
/// (it would drop the old versions early); every rebuild calls it as it begins.
pub fn drop_retired_versions(ctx: &Context, models: &[&str]) {
    for model in models {
        drop_retired(ctx, model);
    }
}

/// Drops the versions of `model` that an earlier rebuild retired but could not drop.
fn drop_retired(ctx: &Context, model: &str) {
    let retired = match ctx.registry(model).versions(model) {
        Ok(versions) => versions.into_iter().filter(|(_, s)| *s == VersionState::Retired).map(|(v, _)| v).collect::<Vec<_>>(),
        Err(e) => return warn!(model, error = %e, "could not list the versions to drop"),
    };
    for version in retired {
        match catalog::drop_version(ctx, model, version) {
            Ok(()) => info!(model, version, "dropped a retired version (abandoned by a stopped rebuild, or one a rebuild could not drop)"),
            Err(e) => warn!(model, version, error = %e, "could not drop a retired version; it stays retired"),
        }
    }
}

/// Swaps a built version in; a failed or cancelled build is abandoned instead.
fn swap(ctx: &Context, build: Build, built: Result<u64, ProjectionError>, started: Instant) -> Result<RebuildReport, ReplayError> {
    let model = build.model;
    let wrap = |source| ReplayError::Projection { model: model.to_owned(), source };
    let events = match built {
        Ok(n) => n,
        Err(e) => {
            abandon(ctx, build);
            return Err(wrap(e));
        }
    };
    let Build { old_version, new_version, projection, .. } = build;
    drop(projection);
    ctx.registry(model).set_active_version(model, new_version).map_err(|e| wrap(e.into()))?;
    let elapsed = started.elapsed();
    info!(model, new_version, events, elapsed_ms = elapsed.as_millis() as u64, "read model rebuilt and swapped in");
    Ok(RebuildReport { model: model.to_owned(), old_version, new_version, events, elapsed, old_dropped: false })
}

/// Retires a version that will not be swapped in (one write: its tables are dropped later,
/// by [`drop_retired_versions`]); one that cannot be retired is dropped at once.
fn abandon(ctx: &Context, build: Build) {
    let Build { model, new_version, projection, .. } = build;
    drop(projection);
    if let Err(e) = ctx.registry(model).retire_version(model, new_version) {
        warn!(model, version = new_version, error = %e, "could not retire an abandoned version; dropping it now");
        let _ = catalog::drop_version(ctx, model, new_version);
    }
}

/// After the grace period, drops the versions the swaps replaced. A failed drop leaves the
/// version retired (the next rebuild drops it) and is reported, not an error: the rebuild
/// itself succeeded.
fn drop_old(ctx: &Context, reports: &mut [RebuildReport], grace: Duration) {
    if reports.iter().any(|r| r.old_version.is_some()) && !grace.is_zero() {
        info!(grace_ms = grace.as_millis() as u64, "waiting for live workers to move to the new versions before dropping the old ones");
        std::thread::sleep(grace);
    }
    for report in reports {
        let Some(old) = report.old_version else { continue };
        match catalog::drop_version(ctx, &report.model, old) {
            Ok(()) => report.old_dropped = true,
            Err(e) => warn!(model = report.model, version = old, error = %e, "could not drop the old version; it stays retired"),
        }
    }
}

/// Rebuilds one read model from position 0 and swaps it in.
///
/// # Errors
/// [`ReplayError`] when building fails; the old version stays active and the partial new
/// version is dropped.
pub fn rebuild(log: &dyn EventLog, ctx: &Context, model: &str) -> Result<RebuildReport, ReplayError> {
    let model = catalog::model(model).map_err(|source| ReplayError::Projection { model: model.to_owned(), source })?;
    let started = Instant::now();
    let mut build = begin(ctx, model)?;
    let built = catch_up(log, build.projection.as_mut(), REBUILD_BATCH);
    let swapped = swap(ctx, build, built, started);
    if swapped.is_err() {
        drop_retired(ctx, model);
    }
    let mut report = [swapped?];
    drop_old(ctx, &mut report, Duration::ZERO);
    let [report] = report;
    Ok(report)
}

/// Rebuilds the chosen read models together: one reader reads and decodes the log once for
/// all of them, and each model applies it on its own thread. Every model is swapped in as
/// soon as all are built; the old versions are dropped after the grace period.
///
/// # Errors
/// The first failing rebuild; the models that succeeded stay swapped in (and their old
/// versions are dropped), the partial versions of the others are dropped.
pub fn rebuild_all(log: &dyn EventLog, ctx: &Context, options: &RebuildOptions) -> Result<Vec<RebuildReport>, ReplayError> {
    let rebuilt = rebuild_all_reporting(log, ctx, options, &|_| true, NO_PAUSE);
    if rebuilt.is_err() {
        drop_retired_versions(ctx, &options.models);
    }
    rebuilt
}

/// [`rebuild_all`], calling `on_read` with the number of events replayed so far (for
/// progress displays; the log's end offsets give the total): with 0 before each model's new
/// version is made, then after each batch read and while the slowest model applies one.
/// When `on_read` answers `false` the rebuild stops within the batch being applied: the old
/// versions stay active, and every half-built one is retired, for the caller to drop with
/// [`drop_retired_versions`] once it has reported the end (the next rebuild drops them
/// too), so that a stop does not wait for their tables to be dropped
/// ([`ReplayError::Projection`] with [`ProjectionError::Cancelled`]). A failed rebuild
/// retires them alike. `pause` holds this process's live workers while the built versions
/// are brought to the log's end and swapped in.
///
/// # Errors
/// As [`rebuild_all`].
pub fn rebuild_all_reporting(
    log: &dyn EventLog,
    ctx: &Context,
    options: &RebuildOptions,
    on_read: &(dyn Fn(u64) -> bool + Sync),
    pause: Pause<'_>,
) -> Result<Vec<RebuildReport>, ReplayError> {
    let started = Instant::now();
    // Every name is checked before any version is made: none is left building by a bad one.
    let models = options
        .models
        .iter()
        .map(|model| catalog::model(model).map_err(|source| ReplayError::Projection { model: (*model).to_owned(), source }))
        .collect::<Result<Vec<_>, _>>()?;
    let mut builds = Vec::new();
    for model in models {
        // Making a version takes a few writes (schema changes, on ScyllaDB): a stop asked
        // meanwhile is seen before the next.
        let begun = if on_read(0) {
            begin(ctx, model)
        } else {
            Err(ReplayError::Projection { model: model.to_owned(), source: ProjectionError::Cancelled })
        };
        match begun {
            Ok(build) => builds.push(build),
            Err(e) => {
                builds.into_iter().for_each(|b| abandon(ctx, b));
                return Err(e);
            }
        }
    }
    let results = catch_up_all_reporting(
        log,
        builds.iter_mut().map(|b| b.projection.as_mut() as &mut dyn Projection).collect(),
        options.batch_size,
        on_read,
    );
    // Held, the live workers cannot move past what the new versions reach below.
    let held = if results.iter().any(Result::is_ok) { pause() } else { Vec::new() };
    let held_since = Instant::now();
    let mut reports = Vec::new();
    let mut failed = None;
    for (mut build, built) in builds.into_iter().zip(results) {
        // Nothing held (`svc replay`, or no worker here): the log may never stop moving, and
        // the rebuild ends where its reading did, as the workers of other processes follow.
        let built = if held.is_empty() {
            built
        } else {
            built.and_then(|n| {
                // To the log's end as this catch-up starts: other processes may append all
                // along, and a catch-up to a moving end might never finish; what they append
                // after it, the let-go workers apply to the new version.
                let ends = log.end_offsets()?;
                Ok(n + catch_up_to(log, build.projection.as_mut(), options.batch_size, &ends)?)
            })
        };
        match swap(ctx, build, built, started) {
            Ok(report) => reports.push(report),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    if !held.is_empty() {
        drop(held);
        info!(held_ms = held_since.elapsed().as_millis() as u64, "the live workers were held for the last catch-up and the swap");
    }
    drop_old(ctx, &mut reports, options.grace);
    // The new versions' files keep the pages the rebuild wrote in their caches; a store
    // serving after an online reindex holds what a freshly opened one would.
    for store in ctx.stores() {
        if let Err(e) = store.release_caches() {
            warn!(error = %e, "could not release the store's caches after the rebuild");
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(reports),
    }
}
