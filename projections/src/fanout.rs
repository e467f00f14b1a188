//! Catching several projections up from one read of the log.
//!
//! Reading and decoding the log, and validating and normalizing its records, cost as much as
//! a projection's own work. For rebuilds, one reader thread reads and decodes each batch once
//! and hands it to every projection, each applying it on its own thread, while the reader
//! already reads the next batches (the live [`crate::Worker`] reads once for its group too,
//! but waits for a batch to be applied before reading the next).
//!
//! These threads run at a lower scheduling priority than the rest of the process
//! ([`REBUILD_NICENESS`]): a rebuild in a serving process runs a thread per model besides
//! the reader, and at equal priority they took most of the cores from the live projection
//! the API's writes wait for (docs/performance.md, "Reindex: live writes and the rebuild's
//! threads"). With nothing else to run, they run as fast as before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use eventlog::{EventLog, LogError};

use crate::worker::{all_partitions, join, lowest_checkpoints, read_batch};
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Batches read ahead of the slowest projection: enough to keep every thread busy, few
/// enough to bound memory.
const READ_AHEAD: usize = 2;

/// How often the reader asks `on_read` again while it waits for a projection a full
/// read-ahead behind: a cancel is seen within this, not after the slowest batch.
const WAITING_ASKS_EVERY: Duration = Duration::from_millis(50);

/// How many times a catch-up follows the head of the log after reaching it.
const MAX_HEAD_MOVES: u32 = 8;

/// The niceness of a catch-up's threads (Linux; 0 is the default, 19 the lowest priority):
/// at 10 a thread weighs about a tenth of a default one when both want a core.
const REBUILD_NICENESS: i32 = 10;

/// Lowers the calling thread's scheduling priority to [`REBUILD_NICENESS`]. On Linux,
/// `setpriority(PRIO_PROCESS, 0, …)` applies to the calling thread alone; an unprivileged
/// thread cannot raise it again, so it is called only on threads that end with the catch-up.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: `setpriority` reads nothing from memory; `who` 0 is the calling thread.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, REBUILD_NICENESS) };
    #[cfg(target_os = "linux")]
    if rc != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "a catch-up thread kept its priority");
    }
}

/// Applies every event appended so far to each projection, then flushes it; returns, per
/// projection in order, the number of events read for it or its error. Reading starts at the
/// lowest of their checkpoints (a projection ahead re-applies what it has, harmlessly). A
/// projection that fails stops alone; the others go on.
///
/// # Errors
/// A failed log read fails every projection that had not failed before it.
pub fn catch_up_all(log: &dyn EventLog, projections: Vec<&mut dyn Projection>, batch_size: usize) -> Vec<Result<u64, ProjectionError>> {
    catch_up_all_reporting(log, projections, batch_size, &|_| true)
}

/// [`catch_up_all`], calling `on_read` with the number of events read so far after every
/// batch (for progress displays), and again every [`WAITING_ASKS_EVERY`] while the reader
/// waits for the slowest projection; when it answers `false` the catch-up stops: each
/// projection ends the batch it is applying, applies none of those read ahead, is not
/// flushed, and fails with [`ProjectionError::Cancelled`].
pub fn catch_up_all_reporting(
    log: &dyn EventLog,
    projections: Vec<&mut dyn Projection>,
    batch_size: usize,
    on_read: &(dyn Fn(u64) -> bool + Sync),
) -> Vec<Result<u64, ProjectionError>> {
    let each = match projections.iter().map(|p| p.checkpoints()).collect::<Result<Vec<_>, _>>() {
        Ok(each) => each,
        Err(e) => {
            return projections.iter().map(|_| Err(LogError::Unavailable(format!("failed to read checkpoints: {e}")).into())).collect()
        }
    };
    let partitions = all_partitions(log);
    let mut checkpoints = lowest_checkpoints(&partitions, &each);
    // Reading goes to the head of the log, then follows it while it moves, a few times at
    // most: a version swapped in then holds what was appended during the rebuild, and a
    // live service that never stops appending cannot keep the rebuild from ending (its live
    // projection goes on from the version's checkpoints).
    let mut head = log.end_offsets().ok();
    let mut head_moves = 0;
    let reached = |head: &Option<Vec<u64>>, checkpoints: &Checkpoints| {
        head.as_ref().is_some_and(|ends| ends.iter().enumerate().all(|(p, end)| checkpoints.get(&(p as u32)).copied().unwrap_or(0) >= *end))
    };
    // Set when the reader stops early (a cancel, a read error): the appliers then drop what
    // is queued for them instead of applying it.
    let stopped = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for projection in projections {
            let (tx, rx) = sync_channel::<Arc<EventBatch>>(READ_AHEAD);
            senders.push(Some(tx));
            let stopped = &stopped;
            handles.push(scope.spawn(move || {
                lower_priority();
                apply_all(projection, rx, stopped)
            }));
        }
        // The reader runs on a thread of its own too, so that the caller's (a pooled thread,
        // in a serving process) keeps its priority.
        let stopped = &stopped;
        let reader = scope.spawn(move || {
            lower_priority();
            let (mut read, mut cancelled) = (0u64, false);
            let read_error = 'reading: loop {
                let batch = match read_batch(log, &partitions, &checkpoints, batch_size) {
                    Ok(Some(batch)) => Arc::new(batch),
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                };
                checkpoints.extend(batch.next().iter().map(|(p, o)| (*p, *o)));
                read += batch.len() as u64;
                if !on_read(read) {
                    cancelled = true;
                    break None;
                }
                for sender in &mut senders {
                    let Some(tx) = sender else { continue };
                    match send(tx, &batch, &|| on_read(read)) {
                        Sent::Queued => {}
                        // A projection that failed has dropped its receiver: stop feeding it.
                        Sent::Gone => *sender = None,
                        Sent::Stopped => {
                            cancelled = true;
                            break 'reading None;
                        }
                    }
                }
                if senders.iter().all(Option::is_none) {
                    break None;
                }
                if reached(&head, &checkpoints) {
                    let now = log.end_offsets().ok();
                    if now == head || head_moves >= MAX_HEAD_MOVES {
                        break None;
                    }
                    head = now;
                    head_moves += 1;
                }
            };
            if cancelled || read_error.is_some() {
                stopped.store(true, Ordering::Relaxed);
            }
            drop(senders);
            (read_error, cancelled)
        });
        let (read_error, cancelled) =
            reader.join().unwrap_or_else(|_| (Some(ProjectionError::Panicked("the log reader panicked".into())), false));
        handles
            .into_iter()
            .map(|h| {
                let applied = join(h);
                match (&read_error, applied) {
                    (_, Ok(_)) if cancelled => Err(ProjectionError::Cancelled),
                    (Some(e), Ok(_)) => Err(LogError::Unavailable(format!("the shared log reader failed: {e}")).into()),
                    (_, result) => result,
                }
            })
            .collect()
    })
}

/// How [`send`] ended.
enum Sent {
    /// The batch is queued for the projection.
    Queued,
    /// The projection failed and takes no more.
    Gone,
    /// The caller asked to stop while the projection's queue was full.
    Stopped,
}

/// Queues `batch` for one projection, asking `go_on` every [`WAITING_ASKS_EVERY`] while its
/// queue is full.
fn send(tx: &SyncSender<Arc<EventBatch>>, batch: &Arc<EventBatch>, go_on: &dyn Fn() -> bool) -> Sent {
    let mut batch = batch.clone();
    loop {
        match tx.try_send(batch) {
            Ok(()) => return Sent::Queued,
            Err(TrySendError::Disconnected(_)) => return Sent::Gone,
            Err(TrySendError::Full(back)) => {
                std::thread::sleep(WAITING_ASKS_EVERY);
                if !go_on() {
                    return Sent::Stopped;
                }
                batch = back;
            }
        }
    }
}

/// Applies the batches as they come and flushes at their end; once `stopped` is set it
/// applies no more and does not flush (what it built is dropped).
fn apply_all(projection: &mut dyn Projection, batches: Receiver<Arc<EventBatch>>, stopped: &AtomicBool) -> Result<u64, ProjectionError> {
    let mut applied = 0u64;
    for batch in batches {
        if stopped.load(Ordering::Relaxed) {
            return Ok(applied);
        }
        projection.apply_batch(&batch)?;
        applied += batch.len() as u64;
    }
    if !stopped.load(Ordering::Relaxed) {
        projection.flush()?;
    }
    Ok(applied)
}
