//! The projection worker: feeds a group of projections batches from the log, read once for
//! all of them, retries failures and reports progress.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use event_schema::{ClassifiedError, ErrorClass};
use eventlog::{EventLog, GroupMember};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::hold::{hold_here, HoldHandle, HoldRequest};
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Events per batch, spread over the log's partitions, once caught up. Larger batches
    /// mean fewer commits (throughput) and more work redone after a crash.
    pub batch_size: usize,
    /// Under a stream of events the batch size follows what comes in, up to this: it doubles
    /// while the worker is behind (a partition had more than its share of the batch) and
    /// otherwise leaves room for twice what the last batch read ([`next_batch_size`]).
    pub max_batch_size: usize,
    /// Attempts of a batch failing for a reason other than an unavailable log or store
    /// before the worker stops. A log or store that cannot serve (a broker restarting, a
    /// ScyllaDB node down) is waited for, however long it takes; an embedded file that
    /// failed (a full disk) stops the worker at once.
    pub max_attempts: u32,
    /// The first retry's delay; each retry doubles it.
    pub retry_base: Duration,
    /// The longest delay between retries.
    pub max_retry_delay: Duration,
    /// Under a stream, batches start at most this often: after a batch of at least
    /// [`WorkerConfig::pace_from`] events that took all there was, the worker waits until
    /// this long after that batch began before it reads again, and at least as long as the
    /// batch took ([`pause_after`]). A batch's
    /// work per eprint, per account, per row it rewrites is the same for two events as for
    /// two hundred, so batches applied back to back as fast as events come take a core
    /// whatever the rate; spaced, they leave it to the requests. 500 ms by default: under
    /// a stream of recordViews the usage model then took 17 % of the machine instead of 38 %
    /// (docs/performance.md), and a procedure appended meanwhile waits up to that much more
    /// for its read model.
    pub pace: Duration,
    /// The smallest batch that paces the next ([`WorkerConfig::pace`]): a trickle of writes
    /// (an author's command waiting to read its own write) is applied at once.
    pub pace_from: usize,
    /// A pause ([`WorkerConfig::pace`]) ends early once nothing was appended for this long:
    /// the stream has stopped, and its last events are applied now rather than when the
    /// pause would have ended. 50 ms by default (a stream of recordViews appends every few
    /// microseconds), or twice the log's [`EventLog::appended_notice_delay`] if longer (a
    /// Kafka log sees other nodes' appends when it polls the broker).
    pub pace_quiet: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            batch_size: 2000,
            max_batch_size: 32_768,
            max_attempts: 5,
            retry_base: Duration::from_millis(100),
            max_retry_delay: Duration::from_secs(5),
            pace: Duration::from_millis(500),
            pace_from: 1_000,
            pace_quiet: Duration::from_millis(50),
        }
    }
}

/// What a worker has made durable and visible.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The next offset per partition whose effects are visible.
    pub checkpoints: Checkpoints,
    /// Events applied since the worker started.
    pub applied: u64,
    /// The worker has read the log to its end at least once since it started: the model is
    /// complete as of some moment after the start (it may lag behind new events since).
    pub caught_up: bool,
    /// Why the worker's batches are failing while it retries them (the log or store being
    /// unavailable); `None` once a batch succeeds.
    pub failing: Option<String>,
}

/// Every partition of the log.
pub(crate) fn all_partitions(log: &dyn EventLog) -> BTreeSet<u32> {
    (0..log.partitions()).collect()
}

/// Reads the next batch of `partitions` after `checkpoints`, spread over them; `None` when
/// nothing follows them.
pub(crate) fn read_batch(
    log: &dyn EventLog,
    partitions: &BTreeSet<u32>,
    checkpoints: &Checkpoints,
    batch_size: usize,
) -> Result<Option<EventBatch>, ProjectionError> {
    let per_partition = (batch_size / partitions.len().max(1)).max(1);
    let mut events = Vec::new();
    let mut next = Checkpoints::new();
    let mut more_to_come = false;
    for &partition in partitions {
        let from = checkpoints.get(&partition).copied().unwrap_or(0);
        let read = log.read(partition, from, per_partition)?;
        more_to_come |= read.len() == per_partition;
        if let Some(last) = read.last() {
            next.insert(partition, last.position.offset + 1);
        }
        events.extend(read);
    }
    Ok((!events.is_empty()).then(|| EventBatch::new(events, next).with_more_to_come(more_to_come)))
}

/// Where a group of projections reads next: per partition, the lowest of their checkpoints.
pub(crate) fn lowest_checkpoints(partitions: &BTreeSet<u32>, each: &[Checkpoints]) -> Checkpoints {
    partitions
        .iter()
        .map(|&partition| (partition, each.iter().map(|c| c.get(&partition).copied().unwrap_or(0)).min().unwrap_or(0)))
        .collect()
}

/// Waits for a projection thread; a panic becomes [`ProjectionError::Panicked`].
pub(crate) fn join<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T, ProjectionError>>) -> Result<T, ProjectionError> {
    handle.join().unwrap_or_else(|_| Err(ProjectionError::Panicked("projection thread panicked".into())))
}

/// The threads a worker applies its batches on, kept for the worker's life: one per
/// projection, up to one per core (each takes the next projection of a batch when it is
/// done with one). Threads made per batch would cost more than their start: the allocator
/// keeps what a thread allocated in that thread's pages, and the pages of whatever outlives
/// the batch (cached rows and pages of the store) stay stranded, mostly empty, once the
/// thread exits (docs/performance.md, "Memory after catch-up"). More threads than cores
/// only spin: an idle pool thread yields in a loop a while before it sleeps, and eleven on
/// two cores took 11 % of svc's time under a steady stream of small batches
/// (docs/performance.md, "recordView through the journal").
fn appliers(projections: usize) -> Result<rayon::ThreadPool, ProjectionError> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    rayon::ThreadPoolBuilder::new()
        .num_threads(projections.clamp(1, cores))
        .thread_name(|i| format!("projection-{i}"))
        .build()
        .map_err(|e| ProjectionError::Panicked(format!("failed to start the projection threads: {e}")))
}

/// A handle on the threads of a [`Worker`], which outlive batches (see `appliers`).
#[derive(Clone)]
pub struct WorkerThreads(Arc<rayon::ThreadPool>);

impl WorkerThreads {
    /// Runs `f` once on each of the threads, when each is free, and returns when all have.
    /// (For what only a thread can do for itself, such as handing its allocator's free
    /// pages back.)
    pub fn run_on_each(&self, f: impl Fn() + Sync) {
        self.0.broadcast(|_| f());
    }
}

/// Applies one batch to every projection, each on a thread of the worker's pool; the first
/// error (a panic becomes [`ProjectionError::Panicked`]).
fn apply_to_all(projections: &mut [Box<dyn Projection>], batch: &EventBatch) -> Result<(), ProjectionError> {
    use rayon::prelude::*;
    let results: Vec<Result<(), ProjectionError>> = projections
        .par_iter_mut()
        .with_max_len(1)
        .map(|p| {
            let started = Instant::now();
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.apply_batch(batch)))
                .unwrap_or_else(|_| Err(ProjectionError::Panicked("projection thread panicked".into())));
            tracing::trace!(
                model = p.model(),
                events = batch.len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "applied a batch to a model"
            );
            result
        })
        .collect();
    // Models fail together when the store does: the error named is the cause, not an echo.
    let mut errors: Vec<ProjectionError> = results.into_iter().filter_map(Result::err).collect();
    errors.sort_by_key(ProjectionError::repeats_an_earlier_failure);
    errors.into_iter().next().map_or(Ok(()), Err)
}

/// What one [`step`] read.
#[derive(Debug, Clone, Copy, Default)]
struct Read {
    /// Events applied (0 when every projection has caught up with the log).
    events: usize,
    /// A partition had more than the batch took from it: the worker is behind.
    more_to_come: bool,
}

/// Reads the next batch of `partitions` after the group's lowest checkpoints and applies it
/// to every projection of the group. A projection ahead of the others re-applies the
/// events it already has, which projections make harmless (see [`Projection`]). With
/// `refresh_now` (after a hold) every projection looks for a new active version first.
fn step(
    log: &dyn EventLog,
    partitions: &BTreeSet<u32>,
    projections: &mut [Box<dyn Projection>],
    batch_size: usize,
    refresh_now: bool,
) -> Result<Read, ProjectionError> {
    projections.iter_mut().try_for_each(|p| if refresh_now { p.refresh_now() } else { p.refresh() })?;
    let each = projections.iter().map(|p| p.checkpoints()).collect::<Result<Vec<_>, _>>()?;
    let from = lowest_checkpoints(partitions, &each);
    let Some(batch) = read_batch(log, partitions, &from, batch_size)? else { return Ok(Read::default()) };
    apply_to_all(projections, &batch)?;
    Ok(Read { events: batch.len(), more_to_come: batch.more_to_come() })
}

/// The size of the batch after one of `current` events that read `last`: twice `current`
/// while the worker is behind, otherwise room for twice what `last` read, within the
/// configured bounds. So under a steady stream a batch takes what came in while the one
/// before was applied, rather than falling back to `batch_size` at the first batch that
/// was not full: a model's work per event falls steeply with the batch (rows of one eprint
/// written once for all its uses in it; the usage model spent 149 µs a distinct-viewer view
/// in batches of 2,000 and 53 µs in batches of 8,192, `examples/usage_views.rs`).
fn next_batch_size(config: &WorkerConfig, current: usize, last: Read) -> usize {
    let wanted = if last.more_to_come { current.saturating_mul(2) } else { last.events.saturating_mul(2) };
    wanted.clamp(config.batch_size, config.max_batch_size.max(config.batch_size))
}

/// How long after a batch that began at `started` and read `last` the worker waits before it
/// reads again: after a batch of a stream (at least `pace_from` events, none left behind),
/// until `started + pace`, and at least as long as the batch took (so under a stream the
/// worker works at most half the time, however long its batches grow); not at all otherwise.
fn pause_after(config: &WorkerConfig, started: Instant, last: Read) -> Option<Instant> {
    if last.more_to_come || last.events < config.pace_from {
        return None;
    }
    let now = Instant::now();
    let until = (started + config.pace).max(now + now.duration_since(started));
    (until > now).then_some(until)
}

/// Applies every event appended so far, then flushes. For rebuilds and tests; returns the
/// number of events applied.
///
/// # Errors
/// The first error of the log or the projection.
pub fn catch_up(log: &dyn EventLog, projection: &mut dyn Projection, batch_size: usize) -> Result<u64, ProjectionError> {
    catch_up_until(log, projection, batch_size, None)
}

/// Applies the events up to `ends` (one end offset per partition, as
/// [`EventLog::end_offsets`] answers), then flushes; a batch may take a few events past
/// them. Unlike [`catch_up`] it ends on a log others keep appending to. Returns the number
/// of events applied.
///
/// # Errors
/// The first error of the log or the projection.
pub fn catch_up_to(log: &dyn EventLog, projection: &mut dyn Projection, batch_size: usize, ends: &[u64]) -> Result<u64, ProjectionError> {
    catch_up_until(log, projection, batch_size, Some(ends))
}

fn catch_up_until(
    log: &dyn EventLog,
    projection: &mut dyn Projection,
    batch_size: usize,
    ends: Option<&[u64]>,
) -> Result<u64, ProjectionError> {
    let mut total = 0u64;
    let mut partitions = all_partitions(log);
    loop {
        let checkpoints = projection.checkpoints()?;
        if let Some(ends) = ends {
            partitions.retain(|p| checkpoints.get(p).copied().unwrap_or(0) < ends.get(*p as usize).copied().unwrap_or(0));
        }
        let batch = if partitions.is_empty() { None } else { read_batch(log, &partitions, &checkpoints, batch_size)? };
        let Some(batch) = batch else {
            projection.flush()?;
            return Ok(total);
        };
        projection.apply_batch(&batch)?;
        total += batch.len() as u64;
    }
}

/// Runs a group of projections against the log until cancelled: one reader reads and decodes
/// each batch once, and every projection applies it on its own thread.
///
/// A worker reads every partition, or, [in a work group](Worker::in_group), only the
/// partitions the group assigns it right now.
pub struct Worker {
    log: Arc<dyn EventLog>,
    projections: Vec<Box<dyn Projection>>,
    threads: WorkerThreads,
    config: WorkerConfig,
    progress: Vec<watch::Sender<Progress>>,
    member: Option<GroupMember>,
    holds: (mpsc::Sender<HoldRequest>, mpsc::Receiver<HoldRequest>),
}

impl Worker {
    /// A worker for `projections`.
    ///
    /// # Errors
    /// [`ProjectionError::Panicked`] if its threads cannot be started.
    pub fn new(log: Arc<dyn EventLog>, projections: Vec<Box<dyn Projection>>, config: WorkerConfig) -> Result<Worker, ProjectionError> {
        let progress = projections
            .iter()
            .map(|p| {
                watch::channel(Progress {
                    checkpoints: p.durable_checkpoints().unwrap_or_default(),
                    applied: 0,
                    caught_up: false,
                    failing: None,
                })
                .0
            })
            .collect();
        let threads = WorkerThreads(Arc::new(appliers(projections.len())?));
        Ok(Worker { log, projections, threads, config, progress, member: None, holds: mpsc::channel(4) })
    }

    /// The threads the worker applies its batches on.
    pub fn threads(&self) -> WorkerThreads {
        self.threads.clone()
    }

    /// Makes the worker read only the partitions `member` owns, following it as they change.
    pub fn in_group(mut self, member: GroupMember) -> Worker {
        self.member = Some(member);
        self
    }

    /// Asks this worker, once running, to hold between batches ([`HoldHandle::hold`]).
    pub fn hold_handle(&self) -> HoldHandle {
        HoldHandle(self.holds.0.clone())
    }

    /// Progress updates per read model, published after every batch.
    pub fn progress(&self) -> Vec<(&'static str, watch::Receiver<Progress>)> {
        self.projections.iter().zip(&self.progress).map(|(p, tx)| (p.model(), tx.subscribe())).collect()
    }

    /// Applies events as they arrive until `cancel` fires; flushes before returning.
    ///
    /// # Errors
    /// A batch that still fails after the configured attempts stops the worker: its error is
    /// returned, and the durable checkpoints stay before the failed batch.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), ProjectionError> {
        let Worker { log, mut projections, threads: WorkerThreads(appliers), config, progress, member, holds: (_, mut holds) } = self;
        let models: Vec<_> = projections.iter().map(|p| p.model()).collect();
        info!(?models, "projection worker started");
        let started_at = Instant::now();
        let mut applied_total = 0u64;
        let mut attempt = 0u32;
        let mut batch_size = config.batch_size;
        let mut owned = member.as_ref().map(GroupMember::changes);
        let mut partitions = all_partitions(log.as_ref());
        // Set by a hold: whoever held the worker may have swapped in new versions meanwhile
        // (a reindex does), which the next batch must go to, not to the versions they replaced.
        let mut held = false;
        loop {
            while let Ok(request) = holds.try_recv() {
                projections = hold_here(projections, request, &cancel).await?;
                held = true;
            }
            let mut appended = log.appended();
            appended.borrow_and_update();
            if let Some(owned) = owned.as_mut() {
                let now = owned.borrow_and_update().clone();
                if now != partitions {
                    info!(?models, partitions = ?now, "projection worker now owns these partitions");
                    partitions = now;
                }
            }
            let log2 = log.clone();
            let reading = partitions.clone();
            let started = Instant::now();
            let threads = appliers.clone();
            let (back, result) = tokio::task::spawn_blocking(move || {
                let result = threads.install(|| step(log2.as_ref(), &reading, &mut projections, batch_size, held)).and_then(|read| {
                    if read.events == 0 {
                        projections.iter_mut().try_for_each(|p| p.flush())?;
                    }
                    Ok(read)
                });
                (projections, result)
            })
            .await
            .map_err(|e| ProjectionError::Panicked(e.to_string()))?;
            projections = back;
            match result {
                Ok(read) => {
                    let n = read.events;
                    attempt = 0;
                    held = false;
                    applied_total += n as u64;
                    batch_size = next_batch_size(&config, batch_size, read);
                    if n > 0 {
                        tracing::debug!(events = n, elapsed_ms = started.elapsed().as_millis() as u64, "applied batch");
                    }
                    for (projection, progress) in projections.iter().zip(&progress) {
                        let checkpoints = projection.durable_checkpoints()?;
                        let caught_up_now = n == 0 && !progress.borrow().caught_up;
                        if caught_up_now {
                            info!(
                                model = projection.model(),
                                version = projection.version(),
                                events = applied_total,
                                seconds = started_at.elapsed().as_secs_f64(),
                                "caught up with the log: the read model is complete"
                            );
                        }
                        progress.send_if_modified(|p| {
                            let changed = p.checkpoints != checkpoints || caught_up_now || p.failing.is_some();
                            p.checkpoints = checkpoints;
                            p.applied = applied_total;
                            p.caught_up |= caught_up_now;
                            p.failing = None;
                            changed
                        });
                    }
                    if n == 0 {
                        let reassigned = async {
                            match owned.as_mut() {
                                Some(owned) => {
                                    let _ = owned.changed().await;
                                }
                                None => std::future::pending().await,
                            }
                        };
                        tokio::select! {
                            _ = appended.changed() => {}
                            Some(request) = holds.recv() => {
                                projections = hold_here(projections, request, &cancel).await?;
                                held = true;
                            }
                            _ = reassigned => {}
                            _ = cancel.cancelled() => break,
                            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                        }
                    } else if cancel.is_cancelled() {
                        break;
                    } else if let Some(until) = pause_after(&config, started, read) {
                        // Paused in slices of `pace_quiet`: a slice with no append means the
                        // stream stopped, and what it left is applied now.
                        appended.borrow_and_update();
                        let quiet = config.pace_quiet.max(log.appended_notice_delay() * 2);
                        loop {
                            let slice = (Instant::now() + quiet).min(until);
                            tokio::select! {
                                _ = tokio::time::sleep_until(slice.into()) => {}
                                Some(request) = holds.recv() => {
                                    projections = hold_here(projections, request, &cancel).await?;
                                    held = true;
                                    break;
                                }
                                _ = cancel.cancelled() => break,
                            }
                            if Instant::now() >= until || !appended.has_changed().unwrap_or(false) {
                                break;
                            }
                            appended.borrow_and_update();
                        }
                        if cancel.is_cancelled() {
                            break;
                        }
                    }
                }
                Err(e) => {
                    attempt += 1;
                    let waits = e.error_class() == ErrorClass::Unavailable && !e.needs_restart();
                    if e.needs_restart() || (!waits && attempt >= config.max_attempts) {
                        warn!(?models, error = %e, attempt, "projection batch failed; stopping worker");
                        return Err(e);
                    }
                    let delay = config.retry_base.saturating_mul(2u32.saturating_pow(attempt - 1)).min(config.max_retry_delay);
                    warn!(?models, error = %e, attempt, delay_ms = delay.as_millis() as u64, "projection batch failed; retrying");
                    let why = e.to_string();
                    for progress in &progress {
                        progress.send_if_modified(|p| {
                            let changed = p.failing.as_deref() != Some(why.as_str());
                            p.failing = Some(why.clone());
                            changed
                        });
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = cancel.cancelled() => break,
                    }
                }
            }
        }
        tokio::task::spawn_blocking(move || projections.iter_mut().try_for_each(|p| p.flush()))
            .await
            .map_err(|e| ProjectionError::Panicked(e.to_string()))??;
        info!(?models, "projection worker stopped");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A projection that counts the batches it applies in `applied`, or panics on them.
    struct Counting {
        applied: Arc<AtomicUsize>,
        panics: bool,
    }

    impl Projection for Counting {
        fn model(&self) -> &'static str {
            "counting"
        }
        fn version(&self) -> u32 {
            1
        }
        fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
            Ok(Checkpoints::new())
        }
        fn apply_batch(&mut self, _: &EventBatch) -> Result<(), ProjectionError> {
            assert!(!self.panics, "a projection bug");
            self.applied.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
    }

    #[test]
    fn the_batch_size_follows_the_stream_within_its_bounds() {
        let config = WorkerConfig { batch_size: 2_000, max_batch_size: 32_768, ..WorkerConfig::default() };
        let next = |current, events, more_to_come| next_batch_size(&config, current, Read { events, more_to_come });
        // Behind: doubles, up to the bound.
        assert_eq!(next(2_000, 2_000, true), 4_000);
        assert_eq!(next(16_384, 16_384, true), 32_768);
        assert_eq!(next(32_768, 32_768, true), 32_768);
        // A batch that took all there was leaves room for twice as much, not the floor: the
        // next one takes what came in while it was applied.
        assert_eq!(next(8_000, 5_000, false), 10_000);
        assert_eq!(next(32_768, 20_000, false), 32_768);
        // A trickle, or nothing: the floor.
        assert_eq!(next(8_000, 300, false), 2_000);
        assert_eq!(next(8_000, 0, false), 2_000);
        // Behind on one partition only (its share was full): still behind.
        assert_eq!(next(8_000, 1_500, true), 16_000);
    }

    #[test]
    fn a_batch_of_a_stream_paces_the_next_and_a_trickle_or_a_backlog_does_not() {
        let config = WorkerConfig { pace: Duration::from_millis(250), pace_from: 1_000, ..WorkerConfig::default() };
        let started = Instant::now();
        let pause = |events, more_to_come| pause_after(&config, started, Read { events, more_to_come });
        assert_eq!(pause(5_000, false), Some(started + Duration::from_millis(250)));
        assert_eq!(pause(1_000, false), Some(started + Duration::from_millis(250)));
        assert_eq!(pause(999, false), None, "a trickle is applied at once");
        assert_eq!(pause(32_768, true), None, "a worker behind reads on");
        // A batch that took longer than the pace: a pause as long as it took.
        let long_ago = Instant::now() - Duration::from_secs(1);
        let until = pause_after(&config, long_ago, Read { events: 5_000, more_to_come: false }).unwrap();
        let rest = until.duration_since(Instant::now());
        assert!(rest > Duration::from_millis(900) && rest < Duration::from_millis(1_100), "{rest:?}");
    }

    /// A projection that keeps its checkpoints in memory and counts events and batches.
    #[derive(Clone, Default)]
    struct Following(Arc<std::sync::Mutex<(Checkpoints, usize, usize)>>);

    impl Projection for Following {
        fn model(&self) -> &'static str {
            "following"
        }
        fn version(&self) -> u32 {
            1
        }
        fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
            Ok(self.0.lock().unwrap().0.clone())
        }
        fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
            let mut state = self.0.lock().unwrap();
            state.0.extend(batch.next().iter().map(|(p, o)| (*p, *o)));
            state.1 += batch.len();
            state.2 += 1;
            Ok(())
        }
    }

    /// `n` events of a stream, for the pace tests.
    fn stream_events(n: usize) -> Vec<event_schema::NewEvent> {
        let event = || {
            let delete =
                event_schema::RecordDelete { did: "did:plc:a".into(), collection: "c.d.e".into(), rkey: "k".into(), rev: "r".into() };
            event_schema::NewEvent::repo(
                event_schema::Source::Manual { note: "pace test".into() },
                event_schema::Payload::RecordDelete(delete),
            )
        };
        (0..n).map(|_| event()).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_paced_stream_that_stops_is_applied_without_waiting_out_the_pace() {
        let dir = tempfile::tempdir().unwrap();
        let log: Arc<dyn EventLog> = Arc::new(eventlog::EmbeddedLog::open(&dir.path().join("log"), 1).unwrap());
        let following = Following::default();
        let pace = Duration::from_secs(5);
        let config =
            WorkerConfig { batch_size: 10, pace, pace_from: 10, pace_quiet: Duration::from_millis(200), ..WorkerConfig::default() };
        let worker = Worker::new(log.clone(), vec![Box::new(following.clone())], config).unwrap();
        let cancel = CancellationToken::new();
        let running = tokio::spawn(worker.run(cancel.clone()));
        // A stream: 20 events every 10 ms for 600 ms.
        for _ in 0..60 {
            log.append(&stream_events(20)).unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let stopped = Instant::now();
        let batches_under_the_stream = following.0.lock().unwrap().2;
        while following.0.lock().unwrap().1 < 1_200 {
            assert!(stopped.elapsed() < pace / 2, "the stream's last events waited for the pace");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(batches_under_the_stream <= 10, "{batches_under_the_stream} batches: the pace held under the stream");
        cancel.cancel();
        running.await.unwrap().unwrap();
    }

    /// A log that, like Kafka's, hears of appends made elsewhere only when it polls the
    /// log's end (every 100 ms); the appends go to `inner` directly, as another node's would.
    struct Polled {
        inner: Arc<dyn EventLog>,
        appended: watch::Sender<u64>,
    }

    impl Polled {
        fn new(inner: Arc<dyn EventLog>) -> Arc<Polled> {
            let log = Arc::new(Polled { inner, appended: watch::channel(0).0 });
            let weak = Arc::downgrade(&log);
            std::thread::spawn(move || {
                while let Some(log) = weak.upgrade() {
                    let end = log.inner.end_offset(0).unwrap_or(0);
                    log.appended.send_if_modified(|seen| std::mem::replace(seen, end) != end);
                    drop(log);
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
            log
        }
    }

    impl EventLog for Polled {
        fn partitions(&self) -> u32 {
            self.inner.partitions()
        }
        fn append(&self, events: &[event_schema::NewEvent]) -> Result<Vec<event_schema::Position>, eventlog::LogError> {
            self.inner.append(events)
        }
        fn read(&self, partition: u32, from: u64, max: usize) -> Result<Vec<event_schema::Envelope>, eventlog::LogError> {
            self.inner.read(partition, from, max)
        }
        fn end_offset(&self, partition: u32) -> Result<u64, eventlog::LogError> {
            self.inner.end_offset(partition)
        }
        fn commit_checkpoint(&self, consumer: &str, partition: u32, next_offset: u64) -> Result<(), eventlog::LogError> {
            self.inner.commit_checkpoint(consumer, partition, next_offset)
        }
        fn checkpoint(&self, consumer: &str, partition: u32) -> Result<Option<u64>, eventlog::LogError> {
            self.inner.checkpoint(consumer, partition)
        }
        fn appended(&self) -> watch::Receiver<u64> {
            self.appended.subscribe()
        }
        fn appended_notice_delay(&self) -> Duration {
            Duration::from_millis(100)
        }
        fn check(&self) -> Result<(), eventlog::LogError> {
            self.inner.check()
        }
        fn backend(&self) -> &'static str {
            "polled"
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_a_log_hears_of_late_still_paces_the_batches() {
        let dir = tempfile::tempdir().unwrap();
        let inner: Arc<dyn EventLog> = Arc::new(eventlog::EmbeddedLog::open(&dir.path().join("log"), 1).unwrap());
        let log: Arc<dyn EventLog> = Polled::new(inner.clone());
        let following = Following::default();
        let pace = Duration::from_secs(5);
        let config = WorkerConfig { batch_size: 10, pace, pace_from: 10, pace_quiet: Duration::from_millis(20), ..WorkerConfig::default() };
        let worker = Worker::new(log.clone(), vec![Box::new(following.clone())], config).unwrap();
        let cancel = CancellationToken::new();
        let running = tokio::spawn(worker.run(cancel.clone()));
        // A stream appended elsewhere: 20 events every 10 ms for 1.2 s, heard of every 100 ms.
        for _ in 0..120 {
            inner.append(&stream_events(20)).unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let batches_under_the_stream = following.0.lock().unwrap().2;
        let stopped = Instant::now();
        while following.0.lock().unwrap().1 < 2_400 {
            assert!(stopped.elapsed() < pace / 2, "the stream's last events waited for the pace");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Quiet slices of 20 ms would each end a pause before the next poll told of more.
        assert!(batches_under_the_stream <= 10, "{batches_under_the_stream} batches: the pace held under the stream");
        cancel.cancel();
        running.await.unwrap().unwrap();
    }

    #[test]
    fn batches_apply_on_the_pool_and_a_panicking_projection_is_an_error() {
        let batch = EventBatch::new(Vec::new(), Checkpoints::new());
        let applied = Arc::new(AtomicUsize::new(0));
        let counting = |panics| Box::new(Counting { applied: applied.clone(), panics }) as Box<dyn Projection>;
        let mut projections: Vec<Box<dyn Projection>> = (0..3).map(|_| counting(false)).collect();
        let pool = appliers(projections.len()).unwrap();
        for _ in 0..5 {
            pool.install(|| apply_to_all(&mut projections, &batch)).unwrap();
        }
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(pool.current_num_threads(), cores.min(3), "a thread per projection, up to one per core");
        assert_eq!(applied.load(Ordering::Relaxed), 15, "each of 3 projections applied 5 batches");
        projections.push(counting(true));
        let failed = pool.install(|| apply_to_all(&mut projections, &batch));
        assert!(matches!(failed, Err(ProjectionError::Panicked(_))), "{failed:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_held_worker_applies_nothing_until_let_go_and_a_stopped_one_cannot_be_held() {
        let dir = tempfile::tempdir().unwrap();
        let log: Arc<dyn EventLog> = Arc::new(eventlog::EmbeddedLog::open(&dir.path().join("log"), 1).unwrap());
        let applied = Arc::new(AtomicUsize::new(0));
        let counting = Box::new(Counting { applied: applied.clone(), panics: false }) as Box<dyn Projection>;
        let worker = Worker::new(log.clone(), vec![counting], WorkerConfig::default()).unwrap();
        let handle = worker.hold_handle();
        let cancel = CancellationToken::new();
        let running = tokio::spawn(worker.run(cancel.clone()));

        let held = handle.hold().await.unwrap();
        assert_eq!(held.models, vec![crate::HeldModel { model: "counting", version: 1, checkpoints: Checkpoints::new() }]);
        assert_eq!(held.model("counting").map(|m| m.version), Some(1));
        let delete = event_schema::RecordDelete { did: "did:plc:a".into(), collection: "c.d.e".into(), rkey: "k".into(), rev: "r".into() };
        let source = event_schema::Source::Manual { note: "hold test".into() };
        log.append(&[event_schema::NewEvent::repo(source, event_schema::Payload::RecordDelete(delete))]).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(applied.load(Ordering::Relaxed), 0, "nothing applied while held");

        drop(held);
        let deadline = Instant::now() + Duration::from_secs(10);
        while applied.load(Ordering::Relaxed) == 0 {
            assert!(Instant::now() < deadline, "the worker never went on once let go");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let again = handle.hold().await.unwrap();
        drop(again);
        cancel.cancel();
        running.await.unwrap().unwrap();
        assert!(matches!(handle.hold().await, Err(ProjectionError::Stopped)), "a stopped worker cannot be held");
    }

    #[test]
    fn run_on_each_runs_once_on_every_thread_of_the_pool() {
        let threads = WorkerThreads(Arc::new(appliers(3).unwrap()));
        let seen = std::sync::Mutex::new(std::collections::HashSet::new());
        threads.run_on_each(|| {
            seen.lock().unwrap().insert(std::thread::current().id());
        });
        assert_eq!(seen.lock().unwrap().len(), threads.0.current_num_threads());
    }
}
