//! The embedded log: a journal and one redb file in the data directory.
//!
//! Events live in one redb table keyed by `(partition, offset)`. Offsets come from one
//! counter shared by all partitions, so they are unique across the log and an offset alone
//! orders events globally.
//!
//! An append is written to the journal ([`journal`]: append-only segment files, one write
//! per append) and acknowledged once the kernel holds it (or the disk, with
//! [`LogAck::Synced`]); until then nothing of it is kept. The events are readable at once,
//! from memory, while a flusher thread moves them into redb in large durable transactions,
//! then deletes the journal segments redb holds. Opening the log moves what the journal
//! holds beyond redb into redb first: after a crash the log holds exactly the acknowledged
//! appends. A durable redb commit per append capped procedures at one `fsync` each
//! (docs/performance.md, "recordView through the journal").
//!
//! The journal and the memory hold events as encoded; the flusher packs each one
//! ([`packed::pack_live`]: compressed with the built-in dictionary) as it moves a batch into
//! redb. Packed one after another, a batch's events find the dictionary's tables in the
//! cache; packed by each append, between requests, a small event cost some 7 µs instead of
//! 2 (docs/performance.md, "recordView: events packed by the flusher, batches paced,
//! appends on the request's thread").
//!
//! One process writes the files; others may open them read-only while it does
//! ([`EmbeddedLog::open_read_only`], redb's single-writer mode) and read up to the writer's
//! latest redb commit and what the journal held when they opened: `svc log tail` and
//! `svc log export` beside a running svc.

mod block;
mod journal;
mod ranks;
mod repack;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::Utc;
use event_schema::{codec, packed, CodecError, Envelope, NewEvent, Position};
use redb::{
    ConcurrencyMode, Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition, WriteTransaction,
};
use tokio::sync::watch;
use tracing::{error, info, warn};

use journal::{Entry, Journal};
pub use journal::{LogAck, JOURNAL_DIR};
use ranks::Ranks;
pub use repack::{repack, Repacked};

use crate::{partition_for, EventLog, LogError};

/// The events table of the log file: `(partition, offset)` → the packed event
/// ([`event_schema::packed`]), or `(partition, offset of the last)` → a block of
/// consecutive events of the partition compressed together ([`block`]; read them with
/// [`stored_events`]). Public for the tools that measure the file.
pub const EVENTS: TableDefinition<(u32, u64), &[u8]> = TableDefinition::new("events");
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

/// The most journaled bytes waiting for redb: an append past it waits for the flusher, so
/// a writer faster than redb (a seed) is held to redb's pace with bounded memory.
const PENDING_MAX_BYTES: usize = 32 * 1024 * 1024;

/// The flusher commits at most this often, unless [`FLUSH_BYTES`] are pending: fewer,
/// larger redb transactions (each is an `fsync`), while reads see pending events at once.
/// A power loss with [`LogAck::Written`] may lose what came in during the last of these.
/// At 10 ms the flusher took 5.6–6.9 µs of CPU per event under a stream of views; at 50 ms
/// 2.4–3.5 (docs/performance.md).
const FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// Pending bytes that make the flusher commit without waiting for [`FLUSH_INTERVAL`].
const FLUSH_BYTES: usize = 4 * 1024 * 1024;

/// A log file at least this big is compacted on opening when a quarter of it or more is
/// free pages ([`compact_if_sparse`]).
const COMPACT_MIN_BYTES: u64 = 16 * 1024 * 1024;

/// How long the flusher waits before trying again after a failed redb commit.
const FLUSH_RETRY: Duration = Duration::from_secs(1);

/// The embedded [`EventLog`]: durable, partitioned, on a journal and one redb file.
pub struct EmbeddedLog {
    db: Arc<Handle>,
    partitions: u32,
    /// The journal and the offset counter; `None` when opened to read only.
    writer: Option<Mutex<Writer>>,
    pending: Arc<Pending>,
    appended_tx: watch::Sender<u64>,
    flusher: Option<JoinHandle<()>>,
    /// When appends are acknowledged.
    ack: LogAck,
}

/// What appends hold while they write: the journal and the next offset.
struct Writer {
    journal: Journal,
    next: u64,
}

/// Journaled events not yet in redb, shared by appends, reads and the flusher.
struct Pending {
    state: Mutex<PendingState>,
    /// Signalled when the flusher has work: the first events after none, [`FLUSH_BYTES`]
    /// reached, the log closing.
    work: Condvar,
    /// Signalled when events leave for redb or a flush fails (appends waiting for room).
    room: Condvar,
}

struct PendingState {
    /// Per partition, in offset order.
    events: Vec<VecDeque<Entry>>,
    bytes: usize,
    /// The offset after the last event redb holds: every event from it on is pending.
    flushed: u64,
    /// How many events of each partition redb holds, and where ([`ranks`]).
    ranks: Ranks,
    /// Why the last flush failed, while it does: appends are refused.
    failure: Option<Failure>,
    closing: bool,
}

/// A failed flush, kept to answer appends with.
#[derive(Clone)]
struct Failure {
    io: bool,
    why: String,
}

impl Failure {
    fn of(e: &LogError) -> Failure {
        match e {
            LogError::Io(why) => Failure { io: true, why: why.clone() },
            e => Failure { io: false, why: e.to_string() },
        }
    }

    fn error(&self) -> LogError {
        if self.io {
            LogError::Io(self.why.clone())
        } else {
            LogError::Unavailable(self.why.clone())
        }
    }
}

impl Pending {
    fn new(partitions: u32, flushed: u64, ranks: Ranks) -> Pending {
        let events = (0..partitions).map(|_| VecDeque::new()).collect();
        let state = PendingState { events, bytes: 0, flushed, ranks, failure: None, closing: false };
        Pending { state: Mutex::new(state), work: Condvar::new(), room: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, PendingState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn push(&self, entries: Vec<Entry>) {
        let mut state = self.lock();
        let before = state.bytes;
        for entry in entries {
            state.bytes += entry.bytes.len();
            state.events[entry.partition as usize].push_back(entry);
        }
        if before == 0 || (before < FLUSH_BYTES && state.bytes >= FLUSH_BYTES) {
            self.work.notify_one();
        }
    }

    /// Up to `max` pending events of `partition` from `from`.
    fn read(&self, partition: u32, from: u64, max: usize) -> Vec<Entry> {
        let state = self.lock();
        let events = &state.events[partition as usize];
        let start = events.partition_point(|e| e.offset < from);
        events.range(start..).take(max).cloned().collect()
    }

    fn last_offset(&self, partition: u32) -> Option<u64> {
        self.lock().events[partition as usize].back().map(|e| e.offset)
    }
}

impl EmbeddedLog {
    /// Opens the log in `dir`, creating it with `partitions` partitions if it does not exist,
    /// acknowledging appends once written ([`LogAck::Written`]). An existing log keeps the
    /// partition count it was created with.
    ///
    /// # Errors
    /// [`LogError::Unavailable`] when the directory or file cannot be opened.
    pub fn open(dir: &Path, partitions: u32) -> Result<EmbeddedLog, LogError> {
        EmbeddedLog::open_with(dir, partitions, LogAck::default())
    }

    /// Opens the log in `dir` as [`EmbeddedLog::open`] does, acknowledging appends as `ack`
    /// says. What a stopped process left in the journal is moved into redb first.
    ///
    /// # Errors
    /// As [`EmbeddedLog::open`]; [`LogError::Io`] when the journal cannot be read or written.
    pub fn open_with(dir: &Path, partitions: u32, ack: LogAck) -> Result<EmbeddedLog, LogError> {
        std::fs::create_dir_all(dir).map_err(|e| LogError::Unavailable(format!("failed to create {}: {e}", dir.display())))?;
        let db = redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .set_concurrency_mode(ConcurrencyMode::SingleWriter)
            .create(dir.join(LOG_FILE))?;
        let journal_dir = dir.join(JOURNAL_DIR);
        let recovered = journal::recover(&journal_dir)?;
        let txn = db.begin_write()?;
        let (stored_partitions, next_offset, ranks) = {
            let _ = txn.open_table(CHECKPOINTS)?;
            let (parts, stored) = {
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
            let mut ranks = ranks::open_for_writing(&txn, parts, stored)?;
            let mut next = stored;
            let mut table = txn.open_table(EVENTS)?;
            let recovered: Vec<&Entry> = recovered.iter().filter(|e| e.offset >= stored).collect();
            if let Some(entry) = recovered.iter().find(|e| e.partition >= parts) {
                return Err(LogError::Unavailable(format!(
                    "the journal holds an event of partition {} (the log has {parts})",
                    entry.partition
                )));
            }
            let mut by_partition: Vec<&Entry> = recovered.clone();
            by_partition.sort_by_key(|e| (e.partition, e.offset));
            insert_events(&mut table, by_partition)?;
            next = recovered.last().map_or(next, |e| e.offset + 1);
            let mut meta = txn.open_table(META)?;
            let mut counts = ranks.counts.clone();
            let started = Ranks::count(&mut counts, recovered.iter().map(|e| (e.partition, e.offset)));
            Ranks::write(&mut meta, &mut txn.open_table(ranks::RANKS)?, &counts, &started, next)?;
            ranks.extend(counts, started);
            meta.insert(META_NEXT_OFFSET, next)?;
            (parts, next, ranks)
        };
        txn.commit()?;
        let mut db = db;
        compact_if_sparse(&mut db, &dir.join(LOG_FILE));
        let journal = Journal::create(&journal_dir, next_offset, ack)?;
        let db = Arc::new(Handle::Writer(db));
        let pending = Arc::new(Pending::new(stored_partitions, next_offset, ranks));
        let (appended_tx, _) = watch::channel(next_offset);
        let flusher = {
            let (db, pending) = (db.clone(), pending.clone());
            std::thread::Builder::new()
                .name("log-flusher".into())
                .spawn(move || flush(&db, &pending))
                .map_err(|e| LogError::Unavailable(format!("failed to start the log's flusher: {e}")))?
        };
        Ok(EmbeddedLog {
            db,
            partitions: stored_partitions,
            writer: Some(Mutex::new(Writer { journal, next: next_offset })),
            pending,
            appended_tx,
            flusher: Some(flusher),
            ack,
        })
    }

    /// Opens the log in `dir` to read only, beside the process that writes it: every read
    /// sees the writer's latest redb commit and what its journal held at this call.
    /// Appends and checkpoints are refused.
    ///
    /// # Errors
    /// [`LogError::Unavailable`] when there is no log in `dir` or it cannot be opened.
    pub fn open_read_only(dir: &Path) -> Result<EmbeddedLog, LogError> {
        let db = redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .set_concurrency_mode(ConcurrencyMode::SingleWriter)
            .open_read_only(dir.join(LOG_FILE))?;
        let (partitions, stored_next, ranks) = {
            let txn = db.begin_read()?;
            let meta = txn.open_table(META)?;
            let partitions = meta
                .get(META_PARTITIONS)?
                .map(|v| v.value() as u32)
                .ok_or_else(|| LogError::Unavailable(format!("no event log in {}", dir.display())))?;
            let table = match txn.open_table(ranks::RANKS) {
                Ok(t) => Some(t),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(e.into()),
            };
            let ranks = Ranks::of_file(&meta, table.as_ref(), &txn.open_table(EVENTS)?, partitions)?.0;
            (partitions, meta.get(META_NEXT_OFFSET)?.map(|v| v.value()).unwrap_or(0), ranks)
        };
        let journaled: Vec<Entry> =
            journal::recover(&dir.join(JOURNAL_DIR))?.into_iter().filter(|e| e.offset >= stored_next && e.partition < partitions).collect();
        let next = journaled.last().map_or(stored_next, |e| e.offset + 1);
        let pending = Arc::new(Pending::new(partitions, stored_next, ranks));
        pending.push(journaled);
        let (appended_tx, _) = watch::channel(next);
        Ok(EmbeddedLog {
            db: Arc::new(Handle::Reader(db)),
            partitions,
            writer: None,
            pending,
            appended_tx,
            flusher: None,
            ack: LogAck::default(),
        })
    }

    fn check_partition(&self, partition: u32) -> Result<(), LogError> {
        if partition >= self.partitions {
            return Err(LogError::UnknownPartition { partition, partitions: self.partitions });
        }
        Ok(())
    }

    /// The redb file's last committed offset counter.
    fn stored_next_offset(&self) -> Result<u64, LogError> {
        let txn = self.db.begin_read()?;
        let meta = txn.open_table(META)?;
        Ok(meta.get(META_NEXT_OFFSET)?.map(|v| v.value()).unwrap_or(0))
    }
}

/// Gives the free pages of the log file at `path` back to the file system when they are a
/// quarter of it or more. Appends leave them: each of the flusher's commits rewrites the
/// table's last pages, and redb reuses the pages it freed only a commit later, so a file
/// filled by appends alone is about 30 % free pages. Opening is when nothing else of this
/// process reads it; a reader in another process (`svc log tail`) that is in a transaction
/// makes redb refuse, which leaves the file as it is until the next open.
fn compact_if_sparse(db: &mut Database, path: &Path) {
    let Ok(len) = std::fs::metadata(path).map(|m| m.len()) else { return };
    let used = match db.begin_write().map_err(redb::Error::from).and_then(|txn| Ok(txn.stats()?)) {
        Ok(stats) => stats.allocated_pages() * stats.page_size() as u64,
        Err(e) => return warn!(error = %e, "could not read the log file's page counts; not compacting it"),
    };
    if len < COMPACT_MIN_BYTES || used.saturating_mul(4) > len.saturating_mul(3) {
        return;
    }
    let started = Instant::now();
    match db.compact() {
        Ok(_) => {
            let after = std::fs::metadata(path).map(|m| m.len()).unwrap_or(len);
            info!(bytes_before = len, bytes_after = after, seconds = started.elapsed().as_secs_f64(), "compacted the log file");
        }
        Err(e) => warn!(error = %e, "could not compact the log file; it keeps its free pages until the next open"),
    }
}

fn decode(partition: u32, offset: u64, stored: &[u8]) -> Result<Envelope, LogError> {
    let bytes = packed::unpack(stored).map_err(|reason| undecodable(partition, offset, reason))?;
    codec::decode(Position { partition, offset }, &bytes).map_err(|source| LogError::Corrupt { partition, offset, source })
}

/// The error of a stored event or row at `(partition, offset)` that does not decompress.
fn undecodable(partition: u32, offset: u64, reason: String) -> LogError {
    LogError::Corrupt { partition, offset, source: CodecError::Decode(reason) }
}

/// The flusher: moves pending events into redb, a durable transaction at a time, until the
/// log closes and nothing is pending.
fn flush(db: &Handle, pending: &Pending) {
    let mut last_flush = Instant::now();
    loop {
        let (batch, through, counts) = {
            let mut state = pending.lock();
            while !state.closing {
                if state.bytes == 0 {
                    state = pending.work.wait(state).unwrap_or_else(|p| p.into_inner());
                    continue;
                }
                let due = last_flush + FLUSH_INTERVAL;
                let now = Instant::now();
                if state.bytes >= FLUSH_BYTES || now >= due {
                    break;
                }
                state = pending.work.wait_timeout(state, due - now).unwrap_or_else(|p| p.into_inner()).0;
            }
            if state.bytes == 0 {
                return;
            }
            let batch: Vec<Entry> = state.events.iter().flat_map(|p| p.iter().cloned()).collect();
            // Pending offsets run on from `flushed` without a gap.
            let through = state.flushed + batch.len() as u64;
            (batch, through, state.ranks.counts.clone())
        };
        let mut counts = counts;
        let started = Ranks::count(&mut counts, batch.iter().map(|e| (e.partition, e.offset)));
        last_flush = Instant::now();
        match write_batch(db, &batch, through, &counts, &started) {
            Ok(()) => {
                let mut state = pending.lock();
                state.ranks.extend(counts, started);
                let mut freed = 0;
                for events in &mut state.events {
                    while events.front().is_some_and(|e| e.offset < through) {
                        freed += events.pop_front().map_or(0, |e| e.bytes.len());
                    }
                    if events.is_empty() && events.capacity() > 4096 {
                        events.shrink_to_fit();
                    }
                }
                state.bytes -= freed;
                state.flushed = through;
                state.failure = None;
                pending.room.notify_all();
            }
            Err(e) => {
                error!(error = %e, "the event log could not move journaled events into its file; they stay in the journal");
                let mut state = pending.lock();
                state.failure = Some(Failure::of(&e));
                pending.room.notify_all();
                if state.closing {
                    // The next open moves them from the journal.
                    return;
                }
                let _ = pending.work.wait_timeout(state, FLUSH_RETRY);
            }
        }
    }
}

/// Writes journaled events (sorted by partition, then offset) into the events table: each
/// partition's consecutive events in [`block`]s, an event alone packed ([`packed::pack_live`]).
fn insert_events<'e>(table: &mut redb::Table<(u32, u64), &[u8]>, entries: impl IntoIterator<Item = &'e Entry>) -> Result<(), LogError> {
    let mut writer = BlockWriter::default();
    for entry in entries {
        // A journal written before the flusher packed events holds them packed.
        let encoded = packed::unpack(&entry.bytes).map_err(|reason| undecodable(entry.partition, entry.offset, reason))?;
        writer.push(table, entry.partition, entry.offset, &encoded)?;
    }
    writer.finish(table)
}

/// Gathers a partition's consecutive events into rows of the events table: [`block`]s of
/// about [`block::ROW_BYTES`] once compressed, or an event alone, packed.
struct BlockWriter {
    partition: u32,
    events: Vec<(u64, Vec<u8>)>,
    bytes: usize,
    /// The compressed size of the blocks written so far over their events' size: how many
    /// bytes of events the next block takes to reach [`block::ROW_BYTES`].
    ratio: f64,
    /// How rows are compressed.
    pack: fn(Vec<u8>, usize) -> Vec<u8>,
}

impl Default for BlockWriter {
    fn default() -> BlockWriter {
        // About what the arXiv sample's events come to.
        BlockWriter { partition: 0, events: Vec::new(), bytes: 0, ratio: 0.35, pack: packed::pack_live }
    }
}

impl BlockWriter {
    /// A writer for offline work (a repack), which compresses harder ([`packed::pack_small`]).
    fn offline() -> BlockWriter {
        BlockWriter { pack: packed::pack_small, ..BlockWriter::default() }
    }

    /// Adds the event at `(partition, offset)`, after every event added before.
    fn push(&mut self, table: &mut redb::Table<(u32, u64), &[u8]>, partition: u32, offset: u64, encoded: &[u8]) -> Result<(), LogError> {
        // Aimed a little under, as a block's ratio varies from the last ones'; never so many
        // events that reading one decompresses a megabyte.
        let aim = ((block::ROW_BYTES as f64 * 0.95 / self.ratio) as usize).min(1 << 20);
        if !self.events.is_empty() && (partition != self.partition || self.bytes + encoded.len() > aim) {
            self.finish(table)?;
        }
        self.partition = partition;
        self.bytes += encoded.len();
        self.events.push((offset, encoded.to_vec()));
        Ok(())
    }

    /// Writes what was added since the last row.
    fn finish(&mut self, table: &mut redb::Table<(u32, u64), &[u8]>) -> Result<(), LogError> {
        let events = std::mem::take(&mut self.events);
        if let Some(ratio) = self.write(table, &events)? {
            self.ratio = (self.ratio + ratio) / 2.0;
        }
        self.bytes = 0;
        Ok(())
    }

    /// Writes `events` as one row, or as two halves when their block would be larger than
    /// [`block::ROW_BYTES`]; the block's compression ratio.
    fn write(&self, table: &mut redb::Table<(u32, u64), &[u8]>, events: &[(u64, Vec<u8>)]) -> Result<Option<f64>, LogError> {
        let Some((last, _)) = events.last() else { return Ok(None) };
        let row = match events {
            [(_, event)] => (self.pack)(event.clone(), packed::EVENT_THRESHOLD),
            events => block::encode(&events.iter().map(|(o, e)| (*o, e.as_slice())).collect::<Vec<_>>(), self.pack),
        };
        if row.len() > block::ROW_BYTES && events.len() > 1 {
            let (first, second) = events.split_at(events.len() / 2);
            self.write(table, first)?;
            self.write(table, second)?;
        } else {
            table.insert((self.partition, *last), row.as_slice())?;
        }
        let encoded: usize = events.iter().map(|(_, e)| e.len()).sum();
        Ok((events.len() > 1).then(|| row.len() as f64 / encoded as f64))
    }
}

/// The events a row of the events table holds, `(offset, encoded)`: a block's, or the one
/// at its key.
///
/// # Errors
/// [`LogError::Corrupt`] when the row does not decode.
pub fn stored_events(partition: u32, offset: u64, stored: &[u8]) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
    let corrupt = |reason| undecodable(partition, offset, reason);
    if block::is_block(stored) {
        return block::decode(stored).map_err(corrupt);
    }
    Ok(vec![(offset, packed::unpack(stored).map_err(corrupt)?.into_owned())])
}

/// The offsets of the events a row of the events table holds, without decompressing them.
fn stored_offsets(partition: u32, offset: u64, stored: &[u8]) -> Result<Vec<u64>, LogError> {
    if block::is_block(stored) {
        return block::offsets(stored).map_err(|reason| undecodable(partition, offset, reason));
    }
    Ok(vec![offset])
}

/// Writes `batch` into redb with the offset counter at `through` and the partitions'
/// ranks after it, durably.
fn write_batch(db: &Handle, batch: &[Entry], through: u64, counts: &[u64], started: &ranks::NewBlocks) -> Result<(), LogError> {
    let txn = db.begin_write()?;
    {
        let mut table = txn.open_table(EVENTS)?;
        insert_events(&mut table, batch)?;
        let mut meta = txn.open_table(META)?;
        meta.insert(META_NEXT_OFFSET, through)?;
        Ranks::write(&mut meta, &mut txn.open_table(ranks::RANKS)?, counts, started, through)?;
    }
    txn.commit()?;
    Ok(())
}

impl Drop for EmbeddedLog {
    /// Flushes what is pending into redb and stops the flusher; the journal then holds
    /// nothing redb lacks.
    fn drop(&mut self) {
        self.pending.lock().closing = true;
        self.pending.work.notify_all();
        if let Some(flusher) = self.flusher.take() {
            if flusher.join().is_err() {
                warn!("the event log's flusher panicked; the next open moves the journal into the log");
            }
        }
        let flushed = self.pending.lock().bytes == 0;
        if let Some(writer) = self.writer.take().filter(|_| flushed) {
            writer.into_inner().unwrap_or_else(|p| p.into_inner()).journal.remove();
        }
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
            Handle::Reader(_) => Err(read_only()),
        }
    }
}

fn read_only() -> LogError {
    LogError::Unavailable("the event log was opened to read only".into())
}

impl EventLog for EmbeddedLog {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn partitions(&self) -> u32 {
        self.partitions
    }

    /// Only when each append waits for the disk ([`LogAck::Synced`]): otherwise an append is a
    /// copy into the journal's mapped segment, taking a microsecond or two. (An append also waits while the
    /// flusher is 32 MB behind (`PENDING_MAX_BYTES`), which a seed or an import reaches and a
    /// server's procedures, a few hundred bytes each, do not.)
    fn appends_block(&self) -> bool {
        self.ack == LogAck::Synced
    }

    fn page_cache_bytes(&self) -> u64 {
        let stats = match self.db.as_ref() {
            Handle::Writer(db) => db.cache_stats(),
            Handle::Reader(db) => db.cache_stats(),
        };
        stats.used_bytes() as u64
    }

    fn append(&self, events: &[NewEvent]) -> Result<Vec<Position>, LogError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let mut writer = self.writer.as_ref().ok_or_else(read_only)?.lock().unwrap_or_else(|p| p.into_inner());
        let flushed = {
            let mut state = self.pending.lock();
            while state.bytes >= PENDING_MAX_BYTES && state.failure.is_none() {
                state = self.pending.room.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            if let Some(failure) = &state.failure {
                return Err(failure.error());
            }
            state.flushed
        };
        let now = Utc::now();
        let mut entries = Vec::with_capacity(events.len());
        let mut next = writer.next;
        for event in events {
            // Packed by the flusher ([`write_batch`]), not here (see the module docs).
            let bytes = codec::encode(event, now).map_err(LogError::Encode)?;
            entries.push(Entry { partition: partition_for(&event.key, self.partitions), offset: next, bytes: bytes.into() });
            next += 1;
        }
        writer.journal.write(&entries)?;
        writer.next = next;
        for path in writer.journal.release(flushed) {
            if let Err(e) = std::fs::remove_file(&path) {
                warn!(error = %e, path = %path.display(), "failed to delete a journal segment the log file holds");
            }
        }
        let positions = entries.iter().map(|e| Position { partition: e.partition, offset: e.offset }).collect();
        self.pending.push(entries);
        self.appended_tx.send_replace(next);
        Ok(positions)
    }

    /// Reads redb, then the events still pending: a flush between the two only makes
    /// them appear in both, and the pending copy taken first has every event redb lacks.
    fn read(&self, partition: u32, from: u64, max: usize) -> Result<Vec<Envelope>, LogError> {
        self.check_partition(partition)?;
        let pending = self.pending.read(partition, from, max);
        let mut out = Vec::with_capacity(max.min(4096));
        // Pending from `from` on: redb holds nothing of this partition in between.
        if pending.first().is_none_or(|first| first.offset > from) {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(EVENTS)?;
            // A block's row is keyed by its last event: the first row at or after `from` is
            // the one that holds it.
            'rows: for entry in table.range((partition, from)..=(partition, u64::MAX))? {
                let (key, value) = entry?;
                let (partition, last) = key.value();
                for (offset, encoded) in stored_events(partition, last, value.value())?.into_iter().filter(|(offset, _)| *offset >= from) {
                    if out.len() == max || pending.first().is_some_and(|first| offset >= first.offset) {
                        break 'rows;
                    }
                    out.push(codec::decode(Position { partition, offset }, &encoded).map_err(|source| LogError::Corrupt {
                        partition,
                        offset,
                        source,
                    })?);
                }
            }
        }
        for entry in pending.iter().take(max - out.len()) {
            out.push(decode(entry.partition, entry.offset, &entry.bytes)?);
        }
        Ok(out)
    }

    /// The offset after the partition's last event (offsets are global here, so the next
    /// event of this partition gets this offset or a later one). Against a reader's
    /// checkpoint it says 0 once the partition is read to its end, whatever the other
    /// partitions received since.
    fn end_offset(&self, partition: u32) -> Result<u64, LogError> {
        self.check_partition(partition)?;
        if let Some(last) = self.pending.last_offset(partition) {
            return Ok(last + 1);
        }
        let txn = self.db.begin_read()?;
        let table = txn.open_table(EVENTS)?;
        let last = table.range((partition, 0)..=(partition, u64::MAX))?.next_back().transpose()?;
        Ok(last.map_or(0, |(key, _)| key.value().1 + 1))
    }

    /// Counted: the pending events of the partition at or after `from`, and those of the
    /// file from the last block start before `from` on ([`ranks`]: at most a block's keys
    /// read). A read-only log counts the file as it was when opened.
    fn events_from(&self, partition: u32, from: u64) -> Result<u64, LogError> {
        self.check_partition(partition)?;
        let (pending, in_file, start) = {
            let state = self.pending.lock();
            let events = &state.events[partition as usize];
            let pending = (events.len() - events.partition_point(|e| e.offset < from)) as u64;
            if from >= state.flushed {
                return Ok(pending);
            }
            (pending, state.ranks.counts[partition as usize], state.ranks.block_before(partition, from))
        };
        // The file's events before `flushed` never change: counting them outside the lock
        // is as of the moment above.
        let Some((rank, offset)) = start else { return Ok(pending + in_file) };
        let txn = self.db.begin_read()?;
        let before = rank + ranks::count_between(&txn.open_table(EVENTS)?, partition, offset, from)?;
        Ok(pending + in_file.saturating_sub(before))
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

    /// Fails while the flusher cannot write the log file (a full disk): appends are
    /// refused then.
    fn check(&self) -> Result<(), LogError> {
        if let Some(failure) = &self.pending.lock().failure {
            return Err(failure.error());
        }
        self.stored_next_offset().map(|_| ())
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
    fn only_an_append_that_waits_for_the_disk_blocks_its_caller() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!EmbeddedLog::open(dir.path(), 2).unwrap().appends_block());
        let dir = tempfile::tempdir().unwrap();
        assert!(EmbeddedLog::open_with(dir.path(), 2, LogAck::Synced).unwrap().appends_block());
    }

    /// Set in the child process [`a_killed_writer_loses_no_acknowledged_append`] starts.
    const CRASH_CHILD: &str = "EVENTLOG_CRASH_CHILD_DIR";

    #[test]
    fn a_killed_writer_loses_no_acknowledged_append() {
        if let Ok(dir) = std::env::var(CRASH_CHILD) {
            // The child: append, then die at once, with the last appends still on their
            // way from the journal to the log file.
            let log = EmbeddedLog::open(Path::new(&dir), 4).unwrap();
            for events in crate::test_suite::identity_events(600).chunks(3) {
                log.append(events).unwrap();
            }
            std::process::abort();
        }
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "embedded::tests::a_killed_writer_loses_no_acknowledged_append", "--test-threads=1"])
            .env(CRASH_CHILD, dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "the child aborted");
        let journaled = journal::recover(&dir.path().join(JOURNAL_DIR)).unwrap();
        assert_eq!(journaled.len(), 600, "the aborted writer's journal holds every append");

        let log = EmbeddedLog::open(dir.path(), 4).unwrap();
        let events = log.read_merged(0, 1_000).unwrap();
        let offsets: Vec<u64> = events.iter().map(|e| e.position.offset).collect();
        assert_eq!(offsets, (0..600).collect::<Vec<_>>(), "every acknowledged append, once, in order");
        assert_eq!(log.append(&crate::test_suite::identity_events(1)).unwrap()[0].offset, 600);
        drop(log);
        assert!(journal::recover(&dir.path().join(JOURNAL_DIR)).unwrap().is_empty(), "a clean close leaves no journal");
        let log = EmbeddedLog::open_read_only(dir.path()).unwrap();
        assert_eq!(log.read_merged(0, 1_000).unwrap().len(), 601, "the log file holds them all");
        drop(log);
        // The journal held them as encoded; the file holds them compressed, in blocks (those
        // the open moved from the journal) and alone (the one the flusher moved).
        assert!(journaled.iter().all(|e| !packed::is_packed(&e.bytes)));
        let db = redb::Database::open(dir.path().join(LOG_FILE)).unwrap();
        let table = db.begin_read().unwrap().open_table(EVENTS).unwrap();
        let rows: Vec<(u32, u64, Vec<u8>)> = table
            .iter()
            .unwrap()
            .map(|row| {
                let (key, value) = row.unwrap();
                (key.value().0, key.value().1, value.value().to_vec())
            })
            .collect();
        assert!(rows.iter().all(|(_, _, v)| block::is_block(v) || packed::is_packed(v)));
        assert!(rows.len() < 20, "blocks of a partition's events: {} rows", rows.len());
        let stored: usize = rows.iter().map(|(p, o, v)| stored_events(*p, *o, v).unwrap().len()).sum();
        assert_eq!(stored, 601);
    }

    /// Counts of each partition's events from offsets spread over it and between its
    /// events, against the events read.
    fn assert_counts(log: &EmbeddedLog, when: &str) {
        let mut total = 0;
        for p in 0..log.partitions() {
            let offsets: Vec<u64> = log.read(p, 0, usize::MAX).unwrap().iter().map(|e| e.position.offset).collect();
            total += offsets.len() as u64;
            for (i, offset) in offsets.iter().enumerate().filter(|(i, _)| i % 97 == 0 || *i + 1 == offsets.len()) {
                let from = |o: u64| offsets.iter().filter(|x| **x >= o).count() as u64;
                assert_eq!(log.events_from(p, *offset).unwrap(), (offsets.len() - i) as u64, "{when}: partition {p}, offset {offset}");
                assert_eq!(log.events_from(p, offset + 1).unwrap(), from(offset + 1), "{when}: partition {p}, after {offset}");
            }
            assert_eq!(log.events_from(p, 0).unwrap(), offsets.len() as u64, "{when}");
        }
        assert_eq!(log.events_behind(&Default::default()).unwrap(), total, "{when}");
    }

    #[test]
    fn events_are_counted_per_partition_pending_written_reopened_and_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let log = EmbeddedLog::open(dir.path(), 4).unwrap();
        // More than a few blocks of each partition, in appends of various sizes.
        let events = crate::test_suite::identity_events(9_000);
        for chunk in events.chunks(700) {
            log.append(chunk).unwrap();
        }
        assert_counts(&log, "appended");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(log.pending.lock().bytes, 0, "flushed");
        assert_counts(&log, "written");
        log.append(&events[..300]).unwrap();
        assert_counts(&log, "written and pending");
        drop(log);
        let log = EmbeddedLog::open(dir.path(), 4).unwrap();
        assert_counts(&log, "reopened");
        let held = log.page_cache_bytes();
        assert!(held > 0 && held <= PAGE_CACHE_BYTES as u64, "the pages read are held, within the cap: {held}");
        drop(log);
        assert_counts(&EmbeddedLog::open_read_only(dir.path()).unwrap(), "read only");
    }

    #[test]
    fn a_log_file_written_before_ranks_is_ranked_on_opening() {
        let dir = tempfile::tempdir().unwrap();
        drop(EmbeddedLog::open(dir.path(), 4).unwrap().append(&crate::test_suite::identity_events(5_000)).unwrap());
        {
            let db = Database::open(dir.path().join(LOG_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            txn.delete_table(ranks::RANKS).unwrap();
            let mut meta = txn.open_table(META).unwrap();
            let keys: Vec<String> = meta
                .iter()
                .unwrap()
                .map(|r| r.unwrap().0.value().to_owned())
                .filter(|k| k.starts_with("events.") || k == "ranked_through")
                .collect();
            assert_eq!(keys.len(), 5, "{keys:?}");
            for k in keys {
                meta.remove(k.as_str()).unwrap();
            }
            drop(meta);
            txn.commit().unwrap();
        }
        assert_counts(&EmbeddedLog::open_read_only(dir.path()).unwrap(), "read only, unranked");
        let log = EmbeddedLog::open(dir.path(), 4).unwrap();
        assert_counts(&log, "ranked on opening");
        log.append(&crate::test_suite::identity_events(2_000)).unwrap();
        drop(log);
        assert_counts(&EmbeddedLog::open(dir.path(), 4).unwrap(), "appended after");
    }

    /// A build that kept no ranks appends to a ranked file (a downgrade, then an upgrade):
    /// its events are ranked on opening.
    #[test]
    fn events_appended_without_ranks_are_ranked_on_opening() {
        let dir = tempfile::tempdir().unwrap();
        drop(EmbeddedLog::open(dir.path(), 4).unwrap().append(&crate::test_suite::identity_events(3_000)).unwrap());
        let older = EmbeddedLog::open(&dir.path().join("older"), 4).unwrap();
        older.append(&crate::test_suite::identity_events(2_500)).unwrap();
        let appended = older.read_merged(0, 10_000).unwrap();
        drop(older);
        {
            // As the older build wrote: events and the offset counter, no ranks.
            let db = Database::open(dir.path().join(LOG_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut meta = txn.open_table(META).unwrap();
                let next = meta.get(META_NEXT_OFFSET).unwrap().unwrap().value();
                let source = Database::open(dir.path().join("older").join(LOG_FILE)).unwrap();
                let read = source.begin_read().unwrap();
                let from = read.open_table(EVENTS).unwrap();
                let mut events = txn.open_table(EVENTS).unwrap();
                // One packed event a row, as builds before blocks wrote them.
                for row in from.iter().unwrap() {
                    let (key, value) = row.unwrap();
                    let (partition, last) = key.value();
                    for (offset, encoded) in stored_events(partition, last, value.value()).unwrap() {
                        let packed = packed::pack(encoded, packed::EVENT_THRESHOLD);
                        events.insert((partition, next + offset), packed.as_slice()).unwrap();
                    }
                }
                meta.insert(META_NEXT_OFFSET, next + appended.len() as u64).unwrap();
            }
            txn.commit().unwrap();
        }
        let log = EmbeddedLog::open(dir.path(), 4).unwrap();
        assert_eq!(log.events_behind(&Default::default()).unwrap(), 5_500);
        assert_counts(&log, "appended without ranks, reopened");
        log.append(&crate::test_suite::identity_events(100)).unwrap();
        drop(log);
        assert_counts(&EmbeddedLog::open_read_only(dir.path()).unwrap(), "read only after");
    }

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

    #[test]
    fn opening_a_sparse_log_file_compacts_it_and_keeps_every_event() {
        let dir = tempfile::tempdir().unwrap();
        let events = crate::test_suite::identity_events(50);
        drop(EmbeddedLog::open(dir.path(), 4).unwrap().append(&events).unwrap());
        // Free pages: a table of 32 MB written and dropped (appends leave fewer, spread out).
        {
            let db = Database::open(dir.path().join(LOG_FILE)).unwrap();
            let scratch: TableDefinition<u64, &[u8]> = TableDefinition::new("scratch");
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(scratch).unwrap();
                for i in 0..10_000u64 {
                    table.insert(i, [7u8; 4_000].as_slice()).unwrap();
                }
            }
            txn.commit().unwrap();
            let txn = db.begin_write().unwrap();
            txn.delete_table(scratch).unwrap();
            txn.commit().unwrap();
        }
        let len = || std::fs::metadata(dir.path().join(LOG_FILE)).unwrap().len();
        assert!(len() > 32_000_000, "{}", len());
        let log = EmbeddedLog::open(dir.path(), 4).unwrap();
        assert!(len() < 4_000_000, "compacted: {} bytes", len());
        let read = log.read_merged(0, 100).unwrap();
        assert_eq!(read.len(), 50);
        assert_eq!(log.append(&events[..1]).unwrap()[0].offset, 50, "appends go on after it");
    }

    #[test]
    fn a_repacked_log_file_is_smaller_and_holds_the_same_events() {
        let dir = tempfile::tempdir().unwrap();
        let events = crate::test_suite::identity_events(30_000);
        let everything = |log: &EmbeddedLog| -> Vec<Vec<Envelope>> { (0..4).map(|p| log.read(p, 0, usize::MAX).unwrap()).collect() };
        let before = {
            let log = EmbeddedLog::open(dir.path(), 4).unwrap();
            for chunk in events.chunks(1_000) {
                log.append(chunk).unwrap();
            }
            log.commit_checkpoint("reader", 2, 17).unwrap();
            everything(&log)
        };
        // What a crash during an earlier repack left beside the file.
        std::fs::write(dir.path().join(LOG_FILE).with_extension("redb.new"), b"half a file").unwrap();
        let sizes = repack(dir.path()).unwrap();
        assert!(sizes.after * 10 < sizes.before * 9, "{sizes:?}");
        assert_eq!(std::fs::metadata(dir.path().join(LOG_FILE)).unwrap().len(), sizes.after);
        assert!(!dir.path().join(LOG_FILE).with_extension("redb.new").exists());
        {
            // The flusher's blocks held what its batches held; the copy's are full.
            let db = Database::open(dir.path().join(LOG_FILE)).unwrap();
            let rows = redb::ReadableTableMetadata::len(&db.begin_read().unwrap().open_table(EVENTS).unwrap()).unwrap();
            assert!(rows < 200, "{rows} rows for 30,000 events");
        }
        let log = EmbeddedLog::open(dir.path(), 4).unwrap();
        assert_eq!(everything(&log), before);
        // Read from inside blocks, a few events at a time, and counted from there.
        for (p, events) in before.iter().enumerate() {
            for at in (0..events.len()).step_by(997) {
                let from = events[at].position.offset;
                assert_eq!(log.read(p as u32, from, 3).unwrap(), events[at..(at + 3).min(events.len())]);
                assert_eq!(log.read(p as u32, from + 1, 1).unwrap(), events[at + 1..(at + 2).min(events.len())]);
                assert_eq!(log.events_from(p as u32, from).unwrap(), (events.len() - at) as u64);
            }
        }
        assert_eq!(log.checkpoint("reader", 2).unwrap(), Some(17));
        assert_eq!(log.append(&events[..1]).unwrap()[0].offset, 30_000, "appends go on after it");
    }
}
