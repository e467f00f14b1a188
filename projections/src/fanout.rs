//! Catching several projections up from one read of the log.
//!
//! Reading and decoding the log, and validating and normalizing its records, cost as much as
//! a projection's own work. For rebuilds, one reader thread reads and decodes each batch once
//! and hands it to every projection, each applying it on its own thread, while the reader
//! already reads the next batches (the live [`crate::Worker`] reads once for its group too,
//! but waits for a batch to be applied before reading the next).

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use eventlog::{EventLog, LogError};

use crate::worker::{all_partitions, join, lowest_checkpoints, read_batch};
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Batches read ahead of the slowest projection: enough to keep every thread busy, few
/// enough to bound memory.
const READ_AHEAD: usize = 2;

/// How many times a catch-up follows the head of the log after reaching it.
const MAX_HEAD_MOVES: u32 = 8;

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
/// batch (for progress displays); when it answers `false` the catch-up stops there and every
/// projection fails with [`ProjectionError::Cancelled`].
pub fn catch_up_all_reporting(
    log: &dyn EventLog,
    projections: Vec<&mut dyn Projection>,
    batch_size: usize,
    on_read: &(dyn Fn(u64) -> bool + Sync),
) -> Vec<Result<u64, ProjectionError>> {
    let mut read = 0u64;
    let mut cancelled = false;
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
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        for projection in projections {
            let (tx, rx) = sync_channel::<Arc<EventBatch>>(READ_AHEAD);
            senders.push(Some(tx));
            handles.push(scope.spawn(move || apply_all(projection, rx)));
        }
        let read_error = loop {
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
                // A projection that failed has dropped its receiver: stop feeding it.
                if sender.as_ref().is_some_and(|tx| tx.send(batch.clone()).is_err()) {
                    *sender = None;
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
        drop(senders);
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

fn apply_all(projection: &mut dyn Projection, batches: Receiver<Arc<EventBatch>>) -> Result<u64, ProjectionError> {
    let mut applied = 0u64;
    for batch in batches {
        projection.apply_batch(&batch)?;
        applied += batch.len() as u64;
    }
    projection.flush()?;
    Ok(applied)
}
