//! A bounded cache of decoded rows in front of the embedded store, exact under writes.
//!
//! Reading a row from redb costs a read transaction, a table lookup, a B-tree walk and
//! decoding; a hot row served from here costs a hash lookup and a copy. Writes keep it
//! exact with two counters: every write bumps `started` before it begins and `finished`
//! after it has evicted the rows it wrote. A read uses the cache only while no write is
//! under way (the counters are equal), fills it only if no write started since the read
//! began, and a read of several rows that saw a write start meanwhile is redone from one
//! snapshot without the cache.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::Columns;

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

/// The writes a read saw begun when it began.
#[derive(Clone, Copy)]
pub(crate) struct Ticket(u64);

impl Ticket {
    /// The number of writes begun, as a mark of the state ([`crate::Store::state_mark`]).
    pub fn mark(self) -> u64 {
        self.0
    }
}

#[derive(Clone)]
struct RowWeight;

impl Weighter<RowKey, CachedRow> for RowWeight {
    /// Approximate bytes: the key and the text of the columns (a row's big columns are text).
    fn weight(&self, key: &RowKey, row: &CachedRow) -> u64 {
        let columns: usize = row.as_deref().map_or(0, |c| c.iter().map(|(k, v)| k.len() + v.as_text().map_or(8, str::len) + 32).sum());
        (key.0.len() + key.1.len() + key.2.len() + columns + 64) as u64
    }
}

type Rows = Cache<RowKey, CachedRow, RowWeight>;

pub(crate) struct RowCache {
    /// Replaced, not cleared, when every row is evicted: a cleared cache keeps the slab it
    /// grew to (after a catch-up, some 14 MB of slots for an empty cache).
    rows: ArcSwap<Rows>,
    capacity_bytes: u64,
    started: AtomicU64,
    finished: AtomicU64,
    /// Held to fill the cache and to evict a write's rows, so that no fill of a row read
    /// before a write lands after the write evicted it. Readers only try it.
    fill: Mutex<()>,
}

impl RowCache {
    /// A cache of about `capacity_bytes` of rows.
    pub fn new(capacity_bytes: u64) -> RowCache {
        RowCache {
            rows: ArcSwap::from_pointee(Self::empty(capacity_bytes)),
            capacity_bytes,
            started: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            fill: Mutex::new(()),
        }
    }

    fn empty(capacity_bytes: u64) -> Rows {
        let estimated_rows = (capacity_bytes / 2048).max(16) as usize;
        Cache::with_weighter(estimated_rows, capacity_bytes.max(1), RowWeight)
    }

    /// Starts a read: `None` while a write is under way (the cache must not be used then).
    pub fn begin_read(&self) -> Option<Ticket> {
        let started = self.started.load(Ordering::SeqCst);
        (self.finished.load(Ordering::SeqCst) == started).then_some(Ticket(started))
    }

    /// The cached row at `key`: `None` on a miss, `Some(None)` for a cached absence.
    pub fn get(&self, key: RowKeyRef<'_>) -> Option<CachedRow> {
        self.rows.load().get(&key)
    }

    /// Remembers a row read from the store under `ticket`, unless a write started since.
    pub fn fill(&self, ticket: Ticket, key: RowKey, row: CachedRow) {
        if let Ok(_guard) = self.fill.try_lock() {
            if self.started.load(Ordering::SeqCst) == ticket.0 {
                self.rows.load().insert(key, row);
            }
        }
    }

    /// Whether no write started since `ticket`: rows read under it are one state.
    pub fn unchanged_since(&self, ticket: Ticket) -> bool {
        self.unchanged_since_mark(ticket.0)
    }

    /// Whether no write started since the state `mark` ([`Ticket::mark`]).
    pub fn unchanged_since_mark(&self, mark: u64) -> bool {
        self.started.load(Ordering::SeqCst) == mark
    }

    /// Announces a write, before its transaction begins. (No fill lands after this, so a
    /// cache empty now stays empty, and the write need not name its rows.)
    pub fn begin_write(&self) -> WriteGuard<'_> {
        self.started.fetch_add(1, Ordering::SeqCst);
        let empty = {
            let _guard = self.fill.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.rows.load().is_empty()
        };
        WriteGuard { cache: self, rows: Vec::new(), track: !empty, all: false }
    }
}

/// A write under way; dropping it (committed or not) evicts its rows and ends it.
pub(crate) struct WriteGuard<'a> {
    cache: &'a RowCache,
    rows: Vec<RowKey>,
    track: bool,
    all: bool,
}

impl WriteGuard<'_> {
    /// Names a row the write changes (`key` is only called when the cache holds rows).
    pub fn touch(&mut self, key: impl FnOnce() -> RowKey) {
        if self.track {
            self.rows.push(key());
        }
    }

    /// The write changes rows it does not name (it drops tables): evict every row.
    pub fn touch_all(&mut self) {
        self.all = true;
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        {
            let _guard = self.cache.fill.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if self.all {
                self.cache.rows.store(Arc::new(RowCache::empty(self.cache.capacity_bytes)));
            }
            let rows = self.cache.rows.load();
            for key in &self.rows {
                rows.remove(key);
            }
        }
        self.cache.finished.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::{RowCache, RowKeyRef};

    #[test]
    fn a_borrowed_key_finds_the_row_its_owned_key_filled() {
        let cache = RowCache::new(1 << 20);
        let ticket = cache.begin_read().unwrap();
        let key = RowKeyRef("listing_sizes_v1", "review@eprint:at://did:plc:x/c/1", b"\x00k");
        cache.fill(ticket, key.owned(), None);
        assert_eq!(cache.get(key), Some(None));
        assert_eq!(cache.get(RowKeyRef("listing_sizes_v1", "review@eprint:at://did:plc:x/c/1", b"\x00")), None);
        assert_eq!(cache.get(RowKeyRef("listing_sizes_v1", "review@eprint:at://did:plc:x/c/", b"1\x00k")), None);
    }

    #[test]
    fn a_write_that_evicts_every_row_leaves_an_empty_cache_that_fills_again() {
        let cache = RowCache::new(1 << 20);
        let key = RowKeyRef("t", "p", b"c");
        cache.fill(cache.begin_read().unwrap(), key.owned(), None);
        cache.begin_write().touch_all();
        assert_eq!(cache.get(key), None, "evicted");
        assert!(cache.rows.load().is_empty());
        cache.fill(cache.begin_read().unwrap(), key.owned(), None);
        assert_eq!(cache.get(key), Some(None), "the new cache is the one filled and read");
    }
}
