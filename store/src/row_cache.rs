//! A bounded cache of decoded rows in front of the embedded store, exact under writes:
//! single rows, and what reads of a partition found (its first pages, its size).
//!
//! Reading a row from redb costs a read transaction, a table lookup, a B-tree walk and
//! decoding; a hot row served from here costs a hash lookup and a copy. A page of a
//! partition costs a B-tree seek besides (a listing's newest rows, read backwards), so hot
//! pages and partition sizes are kept too, per partition: a write to any row of the
//! partition evicts them all. Writes keep it
//! exact with two counters per file of the store (a [`Gate`]): a write bumps `started` of
//! every file it writes before it begins and `finished` after it has evicted the rows it
//! wrote. A read uses the cache only while no write to the row's file is under way (its
//! counters are equal), fills it only if no such write started since the read began, and a
//! read of several rows that saw a write start meanwhile is redone without the cache. A
//! write that names no file (dropping a version, reopening every file) closes the cache to
//! every read while it runs. One gate for the whole store had every read of a paper skip
//! the cache while the usage model wrote views (docs/performance.md, "recordView through
//! the journal").

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::{Columns, Page, Scan};

/// A row's key: physical table name, partition key, clustering key.
pub(crate) type RowKey = (String, String, Vec<u8>);

/// A row's key, borrowed: looks a row up without copying its key (a hit allocates nothing).
/// It hashes as the [`RowKey`] it names, field by field.
#[derive(Debug, Clone, Copy, Hash)]
pub(crate) struct RowKeyRef<'a>(pub &'a str, pub &'a str, pub &'a [u8]);

impl RowKeyRef<'_> {
    /// The owned key, to fill the cache with.
    pub fn owned(self) -> RowKey {
        (self.0.to_owned(), self.1.to_owned(), self.2.to_vec())
    }
}

impl quick_cache::Equivalent<RowKey> for RowKeyRef<'_> {
    fn equivalent(&self, key: &RowKey) -> bool {
        self.0 == key.0 && self.1 == key.1 && self.2 == key.2.as_slice()
    }
}

/// A cached row; `None` caches its absence.
pub(crate) type CachedRow = Option<Arc<Columns>>;

/// A partition's key: physical table name, partition key.
type PartitionKey = (String, String);

/// A partition's key, borrowed; it hashes as the [`PartitionKey`] it names.
#[derive(Debug, Clone, Copy, Hash)]
pub(crate) struct PartitionKeyRef<'a>(pub &'a str, pub &'a str);

impl quick_cache::Equivalent<PartitionKey> for PartitionKeyRef<'_> {
    fn equivalent(&self, key: &PartitionKey) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

/// Pages of at most this many rows are cached: a reader's page (and the row after it), or
/// the whole of a small partition, not a pass over a large one.
pub(crate) const CACHED_PAGE_ROWS: usize = 256;

/// The pages kept per partition, the newest read last (a listing's first pages, in the
/// sizes its readers ask for).
const PAGES_PER_PARTITION: usize = 8;

/// What reads of one partition found: pages by the scan that read them, and its size.
#[derive(Default)]
pub(crate) struct PartitionReads {
    pages: Vec<(Scan, Arc<Page>)>,
    count: Option<u64>,
}

impl PartitionReads {
    /// A copy of these reads with `page` (read by `scan`) added.
    fn with_page(&self, scan: &Scan, page: Arc<Page>) -> PartitionReads {
        let mut pages: Vec<_> = self.pages.iter().filter(|(s, _)| s != scan).cloned().collect();
        if pages.len() == PAGES_PER_PARTITION {
            pages.remove(0);
        }
        pages.push((scan.clone(), page));
        PartitionReads { pages, count: self.count }
    }
}

/// Writes begun and ended, on one file or on the whole store.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    started: AtomicU64,
    finished: AtomicU64,
}

impl Gate {
    /// The writes begun, if none is under way.
    fn idle(&self) -> Option<u64> {
        let started = self.started.load(Ordering::SeqCst);
        (self.finished.load(Ordering::SeqCst) == started).then_some(started)
    }

    fn unchanged_since(&self, mark: u64) -> bool {
        self.started.load(Ordering::SeqCst) == mark
    }
}

/// The writes a read saw begun when it began: on the whole store and on the row's file.
#[derive(Clone, Copy)]
pub(crate) struct Ticket {
    whole: u64,
    file: u64,
}

#[derive(Clone)]
struct RowWeight;

impl Weighter<RowKey, CachedRow> for RowWeight {
    /// Approximate bytes: the key and the text of the columns (a row's big columns are text).
    fn weight(&self, key: &RowKey, row: &CachedRow) -> u64 {
        let columns = row.as_deref().map_or(0, columns_weight);
        (key.0.len() + key.1.len() + key.2.len() + columns + 64) as u64
    }
}

type Rows = Cache<RowKey, CachedRow, RowWeight>;

/// Approximate bytes of a row's columns (its big columns are text).
fn columns_weight(columns: &Columns) -> usize {
    columns.iter().map(|(k, v)| k.len() + v.as_text().map_or(8, str::len) + 32).sum()
}

#[derive(Clone)]
struct PartitionWeight;

impl Weighter<PartitionKey, Arc<PartitionReads>> for PartitionWeight {
    /// Approximate bytes: the key, and each page's rows.
    fn weight(&self, key: &PartitionKey, reads: &Arc<PartitionReads>) -> u64 {
        let pages: usize = reads
            .pages
            .iter()
            .map(|(scan, page)| {
                let rows: usize = page.rows.iter().map(|r| r.clustering.len() + columns_weight(&r.columns) + 48).sum();
                rows + scan.after.as_ref().map_or(0, Vec::len) + 64
            })
            .sum();
        (key.0.len() + key.1.len() + pages + 64) as u64
    }
}

type Partitions = Cache<PartitionKey, Arc<PartitionReads>, PartitionWeight>;

pub(crate) struct RowCache {
    /// Replaced, not cleared, when every row is evicted: a cleared cache keeps the slab it
    /// grew to (after a catch-up, some 14 MB of slots for an empty cache).
    rows: ArcSwap<Rows>,
    /// What reads of partitions found; replaced with `rows`.
    partitions: ArcSwap<Partitions>,
    capacity_bytes: u64,
    /// Writes that name no file: every read waits for them.
    whole: Gate,
    /// Every write: the store's state marks ([`crate::Store::state_mark`]).
    marks: Gate,
    /// Held to fill the cache, and by a write as it begins, so that no fill of a row read
    /// before a write lands once the write has begun (and evicts its rows). Readers only
    /// try it.
    fill: Mutex<()>,
}

impl RowCache {
    /// A cache of about `capacity_bytes` of rows, and a quarter of that of partitions'
    /// pages besides.
    pub fn new(capacity_bytes: u64) -> RowCache {
        RowCache {
            rows: ArcSwap::from_pointee(Self::empty(capacity_bytes)),
            partitions: ArcSwap::from_pointee(Self::no_partitions(capacity_bytes)),
            capacity_bytes,
            whole: Gate::default(),
            marks: Gate::default(),
            fill: Mutex::new(()),
        }
    }

    fn empty(capacity_bytes: u64) -> Rows {
        let estimated_rows = (capacity_bytes / 2048).max(16) as usize;
        Cache::with_weighter(estimated_rows, capacity_bytes.max(1), RowWeight)
    }

    fn no_partitions(capacity_bytes: u64) -> Partitions {
        let bytes = (capacity_bytes / 4).max(1);
        Cache::with_weighter((bytes / 4096).max(16) as usize, bytes, PartitionWeight)
    }

    /// What the cache holds, in the bytes its weighers count: rows, pages and sizes.
    pub fn bytes(&self) -> u64 {
        self.rows.load().weight() + self.partitions.load().weight()
    }

    /// Starts a read of rows of the file `file` guards: `None` while a write to it (or to
    /// the whole store) is under way (the cache must not be used then).
    pub fn begin_read(&self, file: &Gate) -> Option<Ticket> {
        let whole = self.whole.idle()?;
        let file = file.idle()?;
        Some(Ticket { whole, file })
    }

    /// The writes begun on the store, if none is under way: a mark of its state.
    pub fn state_mark(&self) -> Option<u64> {
        self.marks.idle()
    }

    /// Whether no write started since the state `mark` ([`RowCache::state_mark`]).
    pub fn unchanged_since_mark(&self, mark: u64) -> bool {
        self.marks.unchanged_since(mark)
    }

    /// The writes begun on the file `file` guards and on the whole store, if none is under
    /// way: a mark of the state of that file's rows (both counters only grow, so their sum
    /// moves with either).
    pub fn file_mark(&self, file: &Gate) -> Option<u64> {
        Some(self.whole.idle()? + file.idle()?)
    }

    /// Whether no write to the file `file` guards, nor to the whole store, started since the
    /// state `mark` ([`RowCache::file_mark`]).
    pub fn file_unchanged_since(&self, file: &Gate, mark: u64) -> bool {
        self.whole.started.load(Ordering::SeqCst) + file.started.load(Ordering::SeqCst) == mark
    }

    /// The cached row at `key`: `None` on a miss, `Some(None)` for a cached absence.
    pub fn get(&self, key: RowKeyRef<'_>) -> Option<CachedRow> {
        self.rows.load().get(&key)
    }

    /// Remembers a row of `file` read under `ticket`, unless a write to it started since.
    pub fn fill(&self, ticket: Ticket, file: &Gate, key: RowKey, row: CachedRow) {
        if let Ok(_guard) = self.fill.try_lock() {
            if self.unchanged_since(ticket, file) {
                self.rows.load().insert(key, row);
            }
        }
    }

    /// The cached page `scan` read of a partition, if any.
    pub fn page(&self, partition: PartitionKeyRef<'_>, scan: &Scan) -> Option<Page> {
        let reads = self.partitions.load().get(&partition)?;
        reads.pages.iter().find(|(s, _)| s == scan).map(|(_, page)| (**page).clone())
    }

    /// Remembers the page `scan` read of a partition of `file` under `ticket`, unless a write
    /// to it started since (or the page holds more than [`CACHED_PAGE_ROWS`] rows).
    pub fn fill_page(&self, ticket: Ticket, file: &Gate, partition: PartitionKeyRef<'_>, scan: &Scan, page: &Page) {
        if page.rows.len() > CACHED_PAGE_ROWS {
            return;
        }
        self.fill_partition(ticket, file, partition, |reads| reads.with_page(scan, Arc::new(page.clone())));
    }

    /// The cached number of rows of a partition, if known.
    pub fn count(&self, partition: PartitionKeyRef<'_>) -> Option<u64> {
        self.partitions.load().get(&partition)?.count
    }

    /// Remembers the number of rows of a partition of `file` counted under `ticket`, unless a
    /// write to it started since.
    pub fn fill_count(&self, ticket: Ticket, file: &Gate, partition: PartitionKeyRef<'_>, count: u64) {
        self.fill_partition(ticket, file, partition, |reads| PartitionReads { pages: reads.pages.clone(), count: Some(count) });
    }

    fn fill_partition(
        &self,
        ticket: Ticket,
        file: &Gate,
        partition: PartitionKeyRef<'_>,
        with: impl FnOnce(&PartitionReads) -> PartitionReads,
    ) {
        if let Ok(_guard) = self.fill.try_lock() {
            if self.unchanged_since(ticket, file) {
                let partitions = self.partitions.load();
                let reads = with(partitions.get(&partition).as_deref().unwrap_or(&PartitionReads::default()));
                partitions.insert((partition.0.to_owned(), partition.1.to_owned()), Arc::new(reads));
            }
        }
    }

    /// Whether no write to `file` or the whole store started since `ticket`: rows read
    /// under it are one state.
    pub fn unchanged_since(&self, ticket: Ticket, file: &Gate) -> bool {
        self.whole.unchanged_since(ticket.whole) && file.unchanged_since(ticket.file)
    }

    /// Announces a write to the files `files` guard, before its transactions begin. (No
    /// fill lands after this, so a cache empty now stays empty, and the write need not name
    /// its rows.)
    pub fn begin_write(&self, files: Vec<Arc<Gate>>) -> WriteGuard<'_> {
        self.begin(files, false)
    }

    /// Announces a write that may change any row of any file.
    pub fn begin_write_all(&self) -> WriteGuard<'_> {
        self.begin(Vec::new(), true)
    }

    fn begin(&self, files: Vec<Arc<Gate>>, whole: bool) -> WriteGuard<'_> {
        self.marks.started.fetch_add(1, Ordering::SeqCst);
        if whole {
            self.whole.started.fetch_add(1, Ordering::SeqCst);
        }
        for file in &files {
            file.started.fetch_add(1, Ordering::SeqCst);
        }
        let empty = {
            let _guard = self.fill.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.rows.load().is_empty() && self.partitions.load().is_empty()
        };
        WriteGuard { cache: self, files, whole, track: !empty, all: false }
    }
}

/// A write under way: it evicts the rows it names as it writes them; dropping it
/// (committed or not) ends it.
pub(crate) struct WriteGuard<'a> {
    cache: &'a RowCache,
    files: Vec<Arc<Gate>>,
    whole: bool,
    track: bool,
    all: bool,
}

impl WriteGuard<'_> {
    /// Names a row the write changes, evicting it at once: no fill lands while the write
    /// is under way ([`RowCache::begin_write`]) and no read uses the cache meanwhile, so
    /// the row is as well gone now as when the write ends, and its key is borrowed, not
    /// copied (three allocations a row were a twentieth of the usage model's time under views).
    pub fn touch(&mut self, key: RowKeyRef<'_>) {
        if self.track {
            self.cache.rows.load().remove(&key);
            self.cache.partitions.load().remove(&PartitionKeyRef(key.0, key.1));
        }
    }

    /// The write changes rows it does not name (it drops tables): evict every row.
    pub fn touch_all(&mut self) {
        self.all = true;
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        if self.all {
            let _guard = self.cache.fill.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.cache.rows.store(Arc::new(RowCache::empty(self.cache.capacity_bytes)));
            self.cache.partitions.store(Arc::new(RowCache::no_partitions(self.cache.capacity_bytes)));
        }
        for file in &self.files {
            file.finished.fetch_add(1, Ordering::SeqCst);
        }
        if self.whole {
            self.cache.whole.finished.fetch_add(1, Ordering::SeqCst);
        }
        self.cache.marks.finished.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{Gate, RowCache, RowKeyRef};

    #[test]
    fn a_borrowed_key_finds_the_row_its_owned_key_filled() {
        let cache = RowCache::new(1 << 20);
        let file = Gate::default();
        let ticket = cache.begin_read(&file).unwrap();
        let key = RowKeyRef("listing_sizes_v1", "review@eprint:at://did:plc:x/c/1", b"\x00k");
        cache.fill(ticket, &file, key.owned(), None);
        assert_eq!(cache.get(key), Some(None));
        assert_eq!(cache.get(RowKeyRef("listing_sizes_v1", "review@eprint:at://did:plc:x/c/1", b"\x00")), None);
        assert_eq!(cache.get(RowKeyRef("listing_sizes_v1", "review@eprint:at://did:plc:x/c/", b"1\x00k")), None);
    }

    #[test]
    fn a_written_row_is_evicted_as_it_is_named_and_a_read_begun_before_does_not_fill_it_again() {
        let cache = RowCache::new(1 << 20);
        let file = Arc::new(Gate::default());
        let (written, kept) = (RowKeyRef("t", "p", b"c"), RowKeyRef("t", "p2", b"c"));
        let before = cache.begin_read(&file).unwrap();
        cache.fill(before, &file, written.owned(), None);
        cache.fill(before, &file, kept.owned(), None);
        let mut write = cache.begin_write(vec![file.clone()]);
        write.touch(written);
        assert_eq!(cache.get(written), None, "evicted while the write is under way");
        assert_eq!(cache.get(kept), Some(None), "a row the write does not name stays");
        cache.fill(before, &file, written.owned(), None);
        drop(write);
        assert_eq!(cache.get(written), None, "a read begun before the write does not fill it");
        cache.fill(cache.begin_read(&file).unwrap(), &file, written.owned(), None);
        assert_eq!(cache.get(written), Some(None), "a read begun after the write fills it");
    }

    #[test]
    fn a_write_that_evicts_every_row_leaves_an_empty_cache_that_fills_again() {
        let cache = RowCache::new(1 << 20);
        let file = Gate::default();
        let key = RowKeyRef("t", "p", b"c");
        cache.fill(cache.begin_read(&file).unwrap(), &file, key.owned(), None);
        cache.begin_write_all().touch_all();
        assert_eq!(cache.get(key), None, "evicted");
        assert!(cache.rows.load().is_empty());
        cache.fill(cache.begin_read(&file).unwrap(), &file, key.owned(), None);
        assert_eq!(cache.get(key), Some(None), "the new cache is the one filled and read");
    }

    #[test]
    fn a_write_to_one_file_closes_the_cache_to_reads_of_that_file_only() {
        let cache = RowCache::new(1 << 20);
        let (written, other) = (Arc::new(Gate::default()), Gate::default());
        let before = cache.begin_read(&written).unwrap();
        let mark = cache.state_mark().unwrap();
        let write = cache.begin_write(vec![written.clone()]);
        assert!(cache.begin_read(&written).is_none(), "the file being written");
        assert!(cache.begin_read(&other).is_some(), "another file");
        assert!(cache.state_mark().is_none(), "the store's state is changing");
        let key = RowKeyRef("t", "p", b"c");
        cache.fill(before, &written, key.owned(), None);
        assert_eq!(cache.get(key), None, "a read begun before the write does not fill");
        drop(write);
        assert!(!cache.unchanged_since(before, &written));
        assert!(!cache.unchanged_since_mark(mark));
        assert!(cache.begin_read(&written).is_some());
        let _all = cache.begin_write_all();
        assert!(cache.begin_read(&other).is_none(), "a write to the whole store closes every file");
    }
}
