//! Catching up on a log others keep appending to: `catch_up_to` ends where it was told.

use std::sync::Arc;

use event_schema::{Envelope, NewEvent, Position};
use eventlog::{EmbeddedLog, EventLog, LogError};
use projections::EventBatch;
use projections::{catch_up_to, Checkpoints, Projection, ProjectionError};

use crate::support::{submission, write};

/// A log that gains one event every time it is read, like a log under a steady stream of
/// appends from other processes.
struct Growing(Arc<EmbeddedLog>);

impl Growing {
    /// A log of four partitions in `dir`, holding `events` submissions.
    fn with(dir: &tempfile::TempDir, events: usize) -> Growing {
        let log = Growing(Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap()));
        for _ in 0..events {
            log.append_one();
        }
        log
    }

    fn append_one(&self) {
        let n = self.0.end_offsets().unwrap().iter().sum::<u64>();
        let rkey = format!("grow{n}");
        self.0.append(&[write("did:plc:grower", &rkey, "1", submission(&rkey, &[("A", "did:plc:grower")], 1), false)]).unwrap();
    }
}

impl EventLog for Growing {
    fn partitions(&self) -> u32 {
        self.0.partitions()
    }
    fn append(&self, events: &[NewEvent]) -> Result<Vec<Position>, LogError> {
        self.0.append(events)
    }
    fn read(&self, partition: u32, from: u64, max: usize) -> Result<Vec<Envelope>, LogError> {
        self.append_one();
        self.0.read(partition, from, max)
    }
    fn end_offset(&self, partition: u32) -> Result<u64, LogError> {
        self.0.end_offset(partition)
    }
    fn commit_checkpoint(&self, consumer: &str, partition: u32, next_offset: u64) -> Result<(), LogError> {
        self.0.commit_checkpoint(consumer, partition, next_offset)
    }
    fn checkpoint(&self, consumer: &str, partition: u32) -> Result<Option<u64>, LogError> {
        self.0.checkpoint(consumer, partition)
    }
    fn appended(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.appended()
    }
    fn check(&self) -> Result<(), LogError> {
        self.0.check()
    }
    fn backend(&self) -> &'static str {
        "growing"
    }
}

/// Keeps the checkpoints of the batches it applied, and counts their events.
#[derive(Default)]
struct Following {
    checkpoints: Checkpoints,
    events: u64,
}

impl Projection for Following {
    fn model(&self) -> &'static str {
        "following"
    }
    fn version(&self) -> u32 {
        1
    }
    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(self.checkpoints.clone())
    }
    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        self.checkpoints.extend(batch.next().iter().map(|(p, o)| (*p, *o)));
        self.events += batch.len() as u64;
        Ok(())
    }
}

#[test]
fn a_catch_up_to_the_ends_it_was_given_ends_on_a_log_that_keeps_growing() {
    let dir = tempfile::tempdir().unwrap();
    let log = Growing::with(&dir, 200);
    let ends = log.end_offsets().unwrap();
    let mut projection = Following::default();
    let applied = catch_up_to(&log, &mut projection, 16, &ends).unwrap();

    let checkpoints = projection.checkpoints().unwrap();
    for (partition, end) in ends.iter().enumerate() {
        assert!(checkpoints.get(&(partition as u32)).copied().unwrap_or(0) >= *end, "partition {partition} reached its end {end}");
    }
    assert_eq!(applied, projection.events);
    // Each read appended one event: the catch-up read a batch past its ends at most.
    let grown = log.end_offsets().unwrap().iter().sum::<u64>() - 200;
    assert!(applied < 200 + 16 + grown, "{applied} events applied of 200 asked for");
    assert!(log.end_offsets().unwrap().iter().sum::<u64>() > 200, "the log grew while it was read");
}

/// Records the scheduling priority of the thread each batch is applied on.
#[derive(Default)]
struct Niceness {
    following: Following,
    seen: Vec<i32>,
}

impl Projection for Niceness {
    fn model(&self) -> &'static str {
        "niceness"
    }
    fn version(&self) -> u32 {
        1
    }
    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        self.following.checkpoints()
    }
    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        // SAFETY: `getpriority` reads nothing from memory; `who` 0 is the calling thread.
        self.seen.push(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) });
        self.following.apply_batch(batch)
    }
}

/// A rebuild's threads yield the cores to the live projection's: they run at a lower
/// priority, and the thread that asked for the catch-up keeps its own.
#[cfg(target_os = "linux")]
#[test]
fn a_catch_up_of_several_models_runs_at_a_lower_priority_than_its_caller() {
    let dir = tempfile::tempdir().unwrap();
    let log = Growing::with(&dir, 50);
    // SAFETY: as above.
    let caller = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let (mut a, mut b) = (Niceness::default(), Niceness::default());
    let results = projections::catch_up_all(log.0.as_ref(), vec![&mut a as &mut dyn Projection, &mut b], 16);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    for seen in [&a.seen, &b.seen] {
        assert!(!seen.is_empty());
        assert!(seen.iter().all(|n| *n == caller.max(10)), "applied at niceness {seen:?}, the caller at {caller}");
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }, caller, "the caller's priority is its own");
}

/// Takes `per_batch` over each batch, and counts the batches and flushes.
struct Slow {
    following: Following,
    per_batch: std::time::Duration,
    batches: u32,
    flushed: bool,
}

impl Projection for Slow {
    fn model(&self) -> &'static str {
        "slow"
    }
    fn version(&self) -> u32 {
        1
    }
    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        self.following.checkpoints()
    }
    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        std::thread::sleep(self.per_batch);
        self.batches += 1;
        self.following.apply_batch(batch)
    }
    fn flush(&mut self) -> Result<(), ProjectionError> {
        self.flushed = true;
        Ok(())
    }
}

/// A cancel is seen while the reader waits for a slow projection, not after the batches it
/// read ahead: each projection ends the batch it is applying, applies none of those queued,
/// is not flushed, and fails `Cancelled`.
#[test]
fn a_cancelled_catch_up_stops_after_the_batch_being_applied() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let log = Growing::with(&dir, 200);
    let per_batch = Duration::from_millis(400);
    let (mut slow, mut fast) = (
        Slow { following: Following::default(), per_batch, batches: 0, flushed: false },
        Slow { following: Following::default(), per_batch: Duration::ZERO, batches: 0, flushed: false },
    );
    let (calls, cancel) = (AtomicU32::new(0), AtomicBool::new(false));
    let asked = std::sync::Mutex::new(None::<Instant>);
    let on_read = |_read: u64| {
        // Cancelled with the fourth batch read: the slow projection applies the first, the
        // second and third wait in its queue, and the reader waits to queue the fourth.
        if calls.fetch_add(1, Ordering::Relaxed) == 3 {
            cancel.store(true, Ordering::Relaxed);
            *asked.lock().unwrap() = Some(Instant::now());
            return true;
        }
        !cancel.load(Ordering::Relaxed)
    };
    let results = projections::catch_up_all_reporting(log.0.as_ref(), vec![&mut slow as &mut dyn Projection, &mut fast], 16, &on_read);
    let took = asked.lock().unwrap().expect("cancelled").elapsed();

    assert!(results.iter().all(|r| matches!(r, Err(ProjectionError::Cancelled))), "{results:?}");
    assert!(took < per_batch * 2, "stopped {took:?} after the cancel, with {per_batch:?} batches");
    assert_eq!(slow.batches, 1, "the slow projection applied none of the queued batches");
    assert!(!slow.flushed && !fast.flushed, "what a cancelled catch-up built is not flushed");
}
