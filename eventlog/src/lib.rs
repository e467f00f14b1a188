//! The event log: the source of truth of svc.
//!
//! One [`EventLog`] interface with an embedded implementation ([`EmbeddedLog`], on redb) and
//! a Kafka one ([`KafkaLog`], on rdkafka). The log is partitioned by key: every event of one key lands in one
//! partition, so a key's events are read in the order they were appended, and keys spread
//! over partitions can be processed in parallel.
//!
//! Guarantees of every implementation:
//! - [`EventLog::append`] returns only once the events are durable; every acknowledged
//!   event survives a crash of the process, exactly once. Against a power loss: Kafka as its
//!   replicas and `acks` say; the embedded log with [`LogAck::Synced`], or within
//!   milliseconds of the acknowledgement with its default [`LogAck::Written`].
//! - Offsets grow strictly within a partition; a reader resumes from any offset.
//! - Consumers keep checkpoints (the next offset to read) per partition.
//!
//! The log does not interpret payloads: it stores and returns [`event_schema::Envelope`]s.
//!
//! ```
//! use event_schema::{IdentityChange, NewEvent, Payload, Source};
//! use eventlog::{EmbeddedLog, EventLog};
//! let dir = tempfile::tempdir().unwrap();
//! let log = EmbeddedLog::open(dir.path(), 4).unwrap();
//! let event = NewEvent::repo(
//!     Source::Manual { note: "doc".into() },
//!     Payload::Identity(IdentityChange { did: "did:plc:abc".into(), handle: None, display_name: None }),
//! );
//! let positions = log.append(&[event]).unwrap();
//! let read = log.read(positions[0].partition, 0, 10).unwrap();
//! assert_eq!(read[0].position, positions[0]);
//! ```
#![warn(missing_docs)]
#![doc(test(attr(deny(warnings))))]

pub mod cursor;
mod embedded;
mod error;
mod group;
mod kafka;
pub mod tansu;
pub mod test_suite;

use event_schema::{Envelope, NewEvent, Position};

pub use embedded::{repack, stored_events, EmbeddedLog, LogAck, Repacked, EVENTS, JOURNAL_DIR, LOG_FILE};
pub use error::{LogError, EARLIER_WRITE_FAILED};
pub use group::GroupMember;
pub use kafka::{KafkaConfig, KafkaLog};

/// A durable, partitioned, append-only log of events.
///
/// Calls block on I/O: async callers run them on a blocking thread.
pub trait EventLog: Send + Sync {
    /// The number of partitions, fixed when the log was created.
    fn partitions(&self) -> u32;

    /// Whether an append waits on I/O that can take milliseconds (a broker's
    /// acknowledgement, an `fsync`), so an async caller should run it on a blocking thread
    /// and gather concurrent calls into one append; `false` for a log whose appends return
    /// in microseconds, where handing each to another thread costs more than the append.
    fn appends_block(&self) -> bool {
        true
    }

    /// Bytes of the log's pages this process holds in memory (0 for a log that keeps none
    /// here, as a broker's).
    fn page_cache_bytes(&self) -> u64 {
        0
    }

    /// Appends events durably, in order, and returns their positions.
    ///
    /// # Errors
    /// [`LogError`] when the log cannot store the events. The embedded log then stored none of
    /// them; on Kafka a prefix may have been stored, which a retry appends again (projections
    /// skip what they already hold).
    fn append(&self, events: &[NewEvent]) -> Result<Vec<Position>, LogError>;

    /// Reads up to `max` events of `partition` from offset `from` (inclusive), in order.
    ///
    /// # Errors
    /// [`LogError::UnknownPartition`] for a partition the log does not have; a stored event
    /// that cannot be decoded is [`LogError::Corrupt`].
    fn read(&self, partition: u32, from: u64, max: usize) -> Result<Vec<Envelope>, LogError>;

    /// The offset the next event appended to `partition` will get at the earliest: reading
    /// from it returns nothing yet.
    fn end_offset(&self, partition: u32) -> Result<u64, LogError>;

    /// Stores a consumer's checkpoint: the next offset it will read from `partition`.
    fn commit_checkpoint(&self, consumer: &str, partition: u32, next_offset: u64) -> Result<(), LogError>;

    /// A consumer's stored checkpoint for `partition`, if it has one.
    fn checkpoint(&self, consumer: &str, partition: u32) -> Result<Option<u64>, LogError>;

    /// A receiver that changes whenever events are appended; readers wait on it instead of
    /// polling.
    fn appended(&self) -> tokio::sync::watch::Receiver<u64>;

    /// How late [`EventLog::appended`] may tell of an append made by another process: zero
    /// where every append goes through this process (the embedded log), the interval at
    /// which the broker's end offsets are polled otherwise.
    fn appended_notice_delay(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Checks that the log can serve reads (for readiness probes).
    fn check(&self) -> Result<(), LogError>;

    /// The backend's name (`embedded`, `kafka`), for health reports.
    fn backend(&self) -> &'static str;

    /// Joins the work group `group`: the returned member owns some of the partitions and is
    /// told when that changes (see [`GroupMember`]). Leaving is dropping it. A log only one
    /// process can open gives its one member every partition.
    fn join_group(&self, group: &str) -> Result<GroupMember, LogError> {
        let _ = group;
        Ok(GroupMember::fixed(0..self.partitions()))
    }

    /// Reads up to `max` events of every partition from offset `from`, merged in append
    /// order. For tools that tap the whole log, such as `svc log tail`.
    fn read_merged(&self, from: u64, max: usize) -> Result<Vec<Envelope>, LogError> {
        let mut all = Vec::new();
        for p in 0..self.partitions() {
            all.extend(self.read(p, from, max)?);
        }
        all.sort_by_key(|e| (e.appended_at, e.position.offset, e.position.partition));
        all.truncate(max);
        Ok(all)
    }

    /// A reader of every partition from `from` (the next offset of each) that waits for
    /// new events: for taps that follow the live log. `None` where reading pages
    /// ([`EventLog::read`]) from the ends [`EventLog::appended`] signals is as good (the
    /// embedded log); Kafka streams from a consumer of its own.
    fn follow(&self, from: &[u64]) -> Result<Option<Box<dyn Follower>>, LogError> {
        let _ = from;
        Ok(None)
    }

    /// How many events of `partition` lie at offset `from` or after it: what a reader whose
    /// next offset there is `from` has left to read. A partition's offsets are consecutive
    /// on Kafka, so this is its end offset less `from`; the embedded log's offsets are
    /// shared by every partition, so it counts them.
    fn events_from(&self, partition: u32, from: u64) -> Result<u64, LogError> {
        Ok(self.end_offset(partition)?.saturating_sub(from))
    }

    /// How many events lie at or after `next` (a next offset per partition; a partition it
    /// does not name counts from its start): a reader's lag, or with an empty `next` every
    /// event the log holds.
    fn events_behind(&self, next: &std::collections::BTreeMap<u32, u64>) -> Result<u64, LogError> {
        (0..self.partitions()).map(|p| self.events_from(p, next.get(&p).copied().unwrap_or(0))).sum()
    }

    /// The end offsets of all partitions (see [`EventLog::end_offset`]).
    fn end_offsets(&self) -> Result<Vec<u64>, LogError> {
        (0..self.partitions()).map(|p| self.end_offset(p)).collect()
    }
}

/// Follows every partition of a log ([`EventLog::follow`]).
pub trait Follower: Send {
    /// The next events, up to `max`, waiting up to `wait` for the first: in order within
    /// each partition. Empty when none came.
    ///
    /// # Errors
    /// [`LogError`] when the log cannot be read.
    fn next_events(&mut self, max: usize, wait: std::time::Duration) -> Result<Vec<Envelope>, LogError>;
}

/// The partition an ordering key belongs to: a stable hash (FNV-1a, 32 bits) modulo the
/// partition count. Stable across builds and platforms, since it decides where data lives.
pub fn partition_for(key: &str, partitions: u32) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in key.as_bytes() {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash % partitions.max(1)
}
