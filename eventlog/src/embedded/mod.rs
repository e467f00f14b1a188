//! The embedded log: one redb file in the data directory.
//!
//! Events live in one table keyed by `(partition, offset)`. Offsets come from one counter
//! shared by all partitions, so they are unique across the log and an offset alone orders
//! events globally. Each append is one redb write transaction, committed durably before
//! the call returns: after a crash the log holds exactly the acknowledged appends.
//!
//! One process writes the file; others may open it read-only while it does
//! ([`EmbeddedLog::open_read_only`], redb's single-writer mode) and read up to its latest
//! commit: `svc log tail` and `svc log export` beside a running svc.

use std::path::Path;
use std::sync::Arc;

use chrono::Utc;
use event_schema::{codec, packed, CodecError, Envelope, NewEvent, Position};
use redb::{
    ConcurrencyMode, Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};
use tokio::sync::watch;

use crate::{partition_for, EventLog, LogError};

const EVENTS: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("events");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const CHECKPOINTS: TableDefinition<(&str, u32), u64> = TableDefinition::new("checkpoints");

const META_PARTITIONS: &str = "partitions";
const META_NEXT_OFFSET: &str = "next_offset";

/// The log file's name inside the data directory.
pub const LOG_FILE: &str = "log.redb";

/// redb's page cache for the log (its default is 1 GiB per database). Readers go through
/// the log front to back once; caching the pages they passed would only hold memory: a
/// catch-up left its 64 MiB full for the life of the process, and 4 MiB seeds and catches
/// up as fast (docs/performance.md, "Memory after catch-up").
const PAGE_CACHE_BYTES: usize = 4 * 1024 * 1024;

/// The embedded [`EventLog`]: durable, partitioned, on one redb file.
pub struct EmbeddedLog {
    db: Arc<Handle>,
    partitions: u32,
    appended_tx: watch::Sender<u64>,
}

impl EmbeddedLog {
    /// Opens the log in `dir`, creating it with `partitions` partitions if it does not exist.
    /// An existing log keeps the partition count it was created with.
    ///
    /// # Errors
    /// [`LogError::Unavailable`] when the directory or file cannot be opened.
    pub fn open(dir: &Path, partitions: u32) -> Result<EmbeddedLog, LogError> {
        std::fs::create_dir_all(dir).map_err(|e| LogError::Unavailable(format!("failed to create {}: {e}", dir.display())))?;
        let db = redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .set_concurrency_mode(ConcurrencyMode::SingleWriter)
            .create(dir.join(LOG_FILE))?;
        let txn = db.begin_write()?;
        let (stored_partitions, next_offset) = {
            let _ = txn.open_table(EVENTS)?;
            let _ = txn.open_table(CHECKPOINTS)?;
            let mut meta = txn.open_table(META)?;
            let stored = meta.get(META_PARTITIONS)?.map(|v| v.value());
            let parts = match stored {
                Some(p) => p as u32,
                None => {
                    let p = partitions.max(1);
                    meta.insert(META_PARTITIONS, u64::from(p))?;
                    p
                }
            };
            let next = meta.get(META_NEXT_OFFSET)?.map(|v| v.value()).unwrap_or(0);
            (parts, next)
        };
        txn.commit()?;
        let (appended_tx, _) = watch::channel(next_offset);
        Ok(EmbeddedLog { db: Arc::new(Handle::Writer(db)), partitions: stored_partitions, appended_tx })
    }

    /// Opens the log in `dir` to read only, beside the process that writes it: every read
    /// sees the writer's latest commit. Appends and checkpoints are refused.
    ///
    /// # Errors
    /// [`LogError::Unavailable`] when there is no log in `dir` or it cannot be opened.
    pub fn open_read_only(dir: &Path) -> Result<EmbeddedLog, LogError> {
        let db = redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .set_concurrency_mode(ConcurrencyMode::SingleWriter)
            .open_read_only(dir.join(LOG_FILE))?;
        let partitions = {
            let txn = db.begin_read()?;
            let meta = txn.open_table(META)?;
            meta.get(META_PARTITIONS)?
                .map(|v| v.value() as u32)
                .ok_or_else(|| LogError::Unavailable(format!("no event log in {}", dir.display())))?
        };
        let (appended_tx, _) = watch::channel(0);
        let log = EmbeddedLog { db: Arc::new(Handle::Reader(db)), partitions, appended_tx };
        log.appended_tx.send_replace(log.next_offset()?);
        Ok(log)
    }

    fn check_partition(&self, partition: u32) -> Result<(), LogError> {
        if partition >= self.partitions {
            return Err(LogError::UnknownPartition { partition, partitions: self.partitions });
        }
        Ok(())
    }

    fn next_offset(&self) -> Result<u64, LogError> {
        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        Ok(meta.get(META_NEXT_OFFSET)?.map(|v| v.value()).unwrap_or(0))
    }
}

/// The open file: the one writer's handle or a reader's.
enum Handle {
    Writer(Database),
    Reader(ReadOnlyDatabase),
}

impl Handle {
    fn begin_read(&self) -> Result<ReadTransaction, redb::TransactionError> {
        match self {
            Handle::Writer(db) => db.begin_read(),
            Handle::Reader(db) => db.begin_read(),
        }
    }

    fn begin_write(&self) -> Result<WriteTransaction, LogError> {
        match self {
            Handle::Writer(db) => Ok(db.begin_write()?),
            Handle::Reader(_) => Err(LogError::Unavailable("the event log was opened to read only".into())),
        }
    }
}

impl EventLog for EmbeddedLog {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn partitions(&self) -> u32 {
        self.partitions
    }

    fn append(&self, events: &[NewEvent]) -> Result<Vec<Position>, LogError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let txn = self.db.begin_write()?;
        let mut positions = Vec::with_capacity(events.len());
        let next = {
            let mut meta = txn.open_table(META)?;
            let mut table = txn.open_table(EVENTS)?;
            let mut next = meta.get(META_NEXT_OFFSET)?.map(|v| v.value()).unwrap_or(0);
            let now = Utc::now();
            for event in events {
                let bytes = packed::pack(codec::encode(event, now).map_err(LogError::Encode)?);
                let position = Position { partition: partition_for(&event.key, self.partitions), offset: next };
                table.insert((position.partition, position.offset), bytes.as_slice())?;
                positions.push(position);
                next += 1;
            }
            meta.insert(META_NEXT_OFFSET, next)?;
            next
        };
        txn.commit()?;
        self.appended_tx.send_replace(next);
        Ok(positions)
    }

    fn read(&self, partition: u32, from: u64, max: usize) -> Result<Vec<Envelope>, LogError> {
        self.check_partition(partition)?;
        let txn = self.db.begin_read()?;
        let table = txn.open_table(EVENTS)?;
        let mut out = Vec::with_capacity(max.min(4096));
        for entry in table.range((partition, from)..=(partition, u64::MAX))?.take(max) {
            let (key, value) = entry?;
            let (partition, offset) = key.value();
            let position = Position { partition, offset };
            let corrupt = |source| LogError::Corrupt { partition, offset, source };
            let bytes = packed::unpack(value.value()).map_err(|reason| corrupt(CodecError::Decode(reason)))?;
            let envelope = codec::decode(position, &bytes).map_err(corrupt)?;
            out.push(envelope);
        }
        Ok(out)
    }

    /// The offset after the partition's last event (offsets are global here, so the next
    /// event of this partition gets this offset or a later one). Against a reader's
    /// checkpoint it says 0 once the partition is read to its end, whatever the other
    /// partitions received since.
    fn end_offset(&self, partition: u32) -> Result<u64, LogError> {
        self.check_partition(partition)?;
        let txn = self.db.begin_read()?;
        let table = txn.open_table(EVENTS)?;
        let last = table.range((partition, 0)..=(partition, u64::MAX))?.next_back().transpose()?;
        Ok(last.map_or(0, |(key, _)| key.value().1 + 1))
    }

    fn commit_checkpoint(&self, consumer: &str, partition: u32, next_offset: u64) -> Result<(), LogError> {
        self.check_partition(partition)?;
        let txn = self.db.begin_write()?;
        txn.open_table(CHECKPOINTS)?.insert((consumer, partition), next_offset)?;
        txn.commit()?;
        Ok(())
    }

    fn checkpoint(&self, consumer: &str, partition: u32) -> Result<Option<u64>, LogError> {
        self.check_partition(partition)?;
        let txn = self.db.begin_read()?;
        let table = txn.open_table(CHECKPOINTS)?;
        Ok(table.get((consumer, partition))?.map(|v| v.value()))
    }

    fn appended(&self) -> watch::Receiver<u64> {
        self.appended_tx.subscribe()
    }

    fn check(&self) -> Result<(), LogError> {
        self.next_offset().map(|_| ())
    }

    fn read_merged(&self, from: u64, max: usize) -> Result<Vec<Envelope>, LogError> {
        // Offsets are global here, so merging by offset is exact append order.
        let mut all = Vec::new();
        for p in 0..self.partitions {
            all.extend(self.read(p, from, max)?);
        }
        all.sort_by_key(|e| e.position.offset);
        all.truncate(max);
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::eventlog_test_suite!(embedded, {
        let dir = tempfile::tempdir().unwrap();
        (Box::new(EmbeddedLog::open(dir.path(), 4).unwrap()) as Box<dyn EventLog>, dir)
    });

    #[test]
    fn reopen_keeps_events_offsets_and_partition_count() {
        let dir = tempfile::tempdir().unwrap();
        let events = crate::test_suite::identity_events(10);
        let first = {
            let log = EmbeddedLog::open(dir.path(), 4).unwrap();
            log.append(&events).unwrap()
        };
        let log = EmbeddedLog::open(dir.path(), 8).unwrap();
        assert_eq!(log.partitions(), 4);
        let more = log.append(&events[..1]).unwrap();
        assert_eq!(more[0].offset, first.last().unwrap().offset + 1);
        assert_eq!(log.read_merged(0, 100).unwrap().len(), 11);
    }
}
