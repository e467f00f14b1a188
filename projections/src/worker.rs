//! The projection worker: feeds a projection batches from the log, retries failures and
//! reports progress.

use std::sync::Arc;
use std::time::{Duration, Instant};

use eventlog::EventLog;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::{Checkpoints, Projection, ProjectionError};

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Events per batch, spread over the log's partitions, once caught up. Larger batches
    /// mean fewer commits (throughput) and more work redone after a crash.
    pub batch_size: usize,
    /// While the worker is behind (its batches come back full), the batch size doubles up
    /// to this, and drops back to `batch_size` once caught up.
    pub max_batch_size: usize,
    /// Attempts of a failing batch before the worker stops.
    pub max_attempts: u32,
    /// The first retry's delay; each retry doubles it.
    pub retry_base: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig { batch_size: 2000, max_batch_size: 32_768, max_attempts: 5, retry_base: Duration::from_millis(100) }
    }
}

/// What a worker has made durable and visible.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The next offset per partition whose effects are visible.
    pub checkpoints: Checkpoints,
    /// Events applied since the worker started.
    pub applied: u64,
}

/// Reads the next batch after the projection's checkpoints and applies it. Returns how many
/// events it applied (0 when the projection has caught up with the log).
fn step(log: &dyn EventLog, projection: &mut dyn Projection, batch_size: usize) -> Result<usize, ProjectionError> {
    let checkpoints = projection.checkpoints()?;
    let per_partition = (batch_size / log.partitions().max(1) as usize).max(1);
    let mut events = Vec::new();
    let mut next = Checkpoints::new();
    for partition in 0..log.partitions() {
        let from = checkpoints.get(&partition).copied().unwrap_or(0);
        let read = log.read(partition, from, per_partition)?;
        if let Some(last) = read.last() {
            next.insert(partition, last.position.offset + 1);
        }
        events.extend(read);
    }
    if events.is_empty() {
        return Ok(0);
    }
    projection.apply_batch(&events, &next)?;
    Ok(events.len())
}

/// Applies every event appended so far, then flushes. For rebuilds and tests; returns the
/// number of events applied.
///
/// # Errors
/// The first error of the log or the projection.
pub fn catch_up(log: &dyn EventLog, projection: &mut dyn Projection, batch_size: usize) -> Result<u64, ProjectionError> {
    let mut total = 0u64;
    loop {
        let n = step(log, projection, batch_size)?;
        if n == 0 {
            projection.flush()?;
            return Ok(total);
        }
        total += n as u64;
    }
}

/// Runs one projection against the log until cancelled.
pub struct Worker {
    log: Arc<dyn EventLog>,
    projection: Box<dyn Projection>,
    config: WorkerConfig,
    progress: watch::Sender<Progress>,
}

impl Worker {
    /// A worker for `projection`.
    pub fn new(log: Arc<dyn EventLog>, projection: Box<dyn Projection>, config: WorkerConfig) -> Worker {
        let checkpoints = projection.durable_checkpoints().unwrap_or_default();
        let (progress, _) = watch::channel(Progress { checkpoints, applied: 0 });
        Worker { log, projection, config, progress }
    }

    /// Progress updates, published after every batch.
    pub fn progress(&self) -> watch::Receiver<Progress> {
        self.progress.subscribe()
    }

    /// Applies events as they arrive until `cancel` fires; flushes before returning.
    ///
    /// # Errors
    /// A batch that still fails after the configured attempts stops the worker: its error is
    /// returned, and the durable checkpoints stay before the failed batch.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), ProjectionError> {
        let Worker { log, mut projection, config, progress } = self;
        let model = projection.model();
        let version = projection.version();
        info!(model, version, "projection worker started");
        let mut applied_total = 0u64;
        let mut attempt = 0u32;
        let mut batch_size = config.batch_size;
        loop {
            let mut appended = log.appended();
            appended.borrow_and_update();
            let log2 = log.clone();
            let started = Instant::now();
            let (back, result) = tokio::task::spawn_blocking(move || {
                let result = step(log2.as_ref(), projection.as_mut(), batch_size).and_then(|n| {
                    if n == 0 {
                        projection.flush()?;
                    }
                    Ok(n)
                });
                (projection, result)
            })
            .await
            .map_err(|e| ProjectionError::Panicked(e.to_string()))?;
            projection = back;
            match result {
                Ok(n) => {
                    attempt = 0;
                    applied_total += n as u64;
                    batch_size = if n >= batch_size {
                        (batch_size * 2).min(config.max_batch_size.max(config.batch_size))
                    } else {
                        config.batch_size
                    };
                    if n > 0 {
                        tracing::debug!(model, version, events = n, elapsed_ms = started.elapsed().as_millis() as u64, "applied batch");
                    }
                    let checkpoints = projection.durable_checkpoints()?;
                    progress.send_if_modified(|p| {
                        let changed = p.checkpoints != checkpoints;
                        p.checkpoints = checkpoints;
                        p.applied = applied_total;
                        changed
                    });
                    if n == 0 {
                        tokio::select! {
                            _ = appended.changed() => {}
                            _ = cancel.cancelled() => break,
                            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                        }
                    } else if cancel.is_cancelled() {
                        break;
                    }
                }
                Err(e) => {
                    attempt += 1;
                    if attempt >= config.max_attempts {
                        warn!(model, version, error = %e, attempt, "projection batch failed; stopping worker");
                        return Err(e);
                    }
                    let delay = config.retry_base * 2u32.saturating_pow(attempt - 1);
                    warn!(model, version, error = %e, attempt, delay_ms = delay.as_millis() as u64, "projection batch failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = cancel.cancelled() => break,
                    }
                }
            }
        }
        tokio::task::spawn_blocking(move || projection.flush()).await.map_err(|e| ProjectionError::Panicked(e.to_string()))??;
        info!(model, version, "projection worker stopped");
        Ok(())
    }
}
