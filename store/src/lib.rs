//! Read-model storage over wide-row semantics, the way ScyllaDB models data.
//!
//! A read model owns tables; a table holds rows addressed by a partition key and a
//! clustering key, each row a map of named [`Value`] columns. Within a partition, rows are
//! ordered by clustering key (bytes, compared lexicographically) and scanned in pages.
//! Tables belong to a version of their read model ([`TableRef`]), so that a rebuild writes
//! version N+1 beside N and [`Store::set_active_version`] swaps it in atomically.
//!
//! Guarantees:
//! - [`Store::apply`] writes a [`Batch`] (rows, deletions and projection checkpoints)
//!   atomically and durably: after a crash, either all of it or none of it is there.
//! - A projection's checkpoint therefore never runs ahead of, or behind, its rows.
//!
//! ```
//! use store::{Batch, Columns, EmbeddedStore, Store, TableRef, Value};
//! let dir = tempfile::tempdir().unwrap();
//! let store = EmbeddedStore::open(dir.path()).unwrap();
//! let table = TableRef::new("eprints", 1, "by_author");
//! let mut batch = Batch::default();
//! let mut cols = Columns::new();
//! cols.insert("title".into(), Value::Text("On Rows".into()));
//! batch.put(&table, "did:plc:a", b"0001".to_vec(), cols, 7);
//! batch.checkpoint("eprints.v1", 0, 10);
//! store.apply(batch).unwrap();
//! let page = store.scan(&table, "did:plc:a", &store::Scan::first(10)).unwrap();
//! assert_eq!(page.rows.len(), 1);
//! assert_eq!(store.checkpoints("eprints.v1").unwrap().get(&0), Some(&10));
//! ```
#![warn(missing_docs)]
#![doc(test(attr(deny(warnings))))]

mod batch;
mod embedded;
mod error;
mod partition_key;
mod reopenable;
mod row_cache;
mod scylla;
pub mod test_suite;
mod value;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use batch::{Batch, Op};
pub use embedded::{store_files, CacheSizes, EmbeddedStore, STORE_FILE, VERSIONS_DIR};
pub use error::{StoreError, EARLIER_WRITE_FAILED};
pub use scylla::{ScyllaConfig, ScyllaStore, DEFAULT_KEYSPACE};
pub use value::{Columns, Value};

/// A table of one version of one read model. It is made once with its physical name, which
/// every store operation uses as the table's key (and which is not formatted per read).
/// Two refs are the same table when their physical names are.
#[derive(Debug, Clone)]
pub struct TableRef {
    /// `<model>.v<version>.<name>`.
    physical: String,
    model_len: usize,
    name_start: usize,
    version: u32,
    /// Its rows are rewritten often ([`TableRef::rewritten_often`]).
    rewritten_often: bool,
}

impl PartialEq for TableRef {
    fn eq(&self, other: &TableRef) -> bool {
        self.physical == other.physical
    }
}

impl Eq for TableRef {}

impl std::hash::Hash for TableRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.physical.hash(state);
    }
}

impl TableRef {
    /// Names a table.
    pub fn new(model: &str, version: u32, name: &str) -> TableRef {
        let mut physical = String::with_capacity(model.len() + name.len() + 12);
        physical.push_str(model);
        physical.push_str(".v");
        push_decimal(&mut physical, version);
        physical.push('.');
        let name_start = physical.len();
        physical.push_str(name);
        TableRef { physical, model_len: model.len(), name_start, version, rewritten_often: false }
    }

    /// The same table, its rows rewritten often (a busy eprint's day of usage, rewritten by
    /// every batch that counts a view of it): they are stored as they are, not compressed,
    /// since a row rewritten within the second is not worth compressing (its compression
    /// was an eighth of the usage model's time under a stream of views); a repack (`svc
    /// compact`, the end of `svc replay`) compresses them like any other. Every ref to the
    /// table that writes rows should say so.
    pub fn rewritten_often(mut self) -> TableRef {
        self.rewritten_often = true;
        self
    }

    /// Whether its rows are rewritten often ([`TableRef::rewritten_often`]).
    pub fn is_rewritten_often(&self) -> bool {
        self.rewritten_often
    }

    /// The read model, e.g. `eprints`.
    pub fn model(&self) -> &str {
        &self.physical[..self.model_len]
    }

    /// The read model's version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The table within the model, e.g. `by_author`.
    pub fn name(&self) -> &str {
        &self.physical[self.name_start..]
    }

    /// The physical name: `<model>.v<version>.<name>`.
    pub fn physical_name(&self) -> &str {
        &self.physical
    }

    /// The model's version this table belongs to, named as its consumer is
    /// ([`consumer_name`]): `<model>.v<version>`.
    pub fn version_name(&self) -> &str {
        &self.physical[..self.name_start - 1]
    }
}

/// Ordered by model, version, then table.
impl Ord for TableRef {
    fn cmp(&self, other: &TableRef) -> std::cmp::Ordering {
        (self.model(), self.version, self.name()).cmp(&(other.model(), other.version, other.name()))
    }
}

impl PartialOrd for TableRef {
    fn partial_cmp(&self, other: &TableRef) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Appends `n` in decimal (without the formatting machinery: tables are named on hot paths).
fn push_decimal(out: &mut String, n: u32) {
    if n >= 10 {
        push_decimal(out, n / 10);
    }
    out.push(char::from(b'0' + (n % 10) as u8));
}

/// One row returned by a scan.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The row's clustering key.
    pub clustering: Vec<u8>,
    /// The row's columns.
    pub columns: Columns,
}

/// Which rows of a partition a scan returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Start strictly after this clustering key (the previous page's last row).
    pub after: Option<Vec<u8>>,
    /// At most this many rows.
    pub limit: usize,
    /// Descending clustering order instead of ascending.
    pub reverse: bool,
}

impl Scan {
    /// The first `limit` rows in ascending order.
    pub fn first(limit: usize) -> Scan {
        Scan { after: None, limit, reverse: false }
    }
}

/// A page of rows and where the next page starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The rows, in scan order.
    pub rows: Vec<Row>,
    /// The clustering key to pass as [`Scan::after`] for the next page, when there may be one.
    pub next: Option<Vec<u8>>,
}

/// The state of one version of a read model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionState {
    /// Being built; not served.
    Building,
    /// The one served.
    Active,
    /// Replaced by a newer version; kept until dropped.
    Retired,
}

/// Read-model storage. Calls may block on I/O: async callers ask [`Store::reads_block`]
/// and run reads that do on a blocking thread.
pub trait Store: Send + Sync {
    /// Whether a read waits on I/O that can take milliseconds (a network round trip), so an
    /// async caller should move it off the runtime's worker threads. `false` for a store
    /// whose reads are served from local pages in microseconds, where handing the read to
    /// another thread would cost more than the read itself.
    fn reads_block(&self) -> bool {
        true
    }

    /// The row at `(partition, clustering)`, if any.
    fn get(&self, table: &TableRef, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError>;

    /// The rows at several `(partition, clustering)` keys of one table, read at one
    /// snapshot, in the order of `keys`, each decoded afresh and owned: for projections,
    /// which change the rows they read (the embedded store's row cache is not used);
    /// readers use [`Store::get_each`].
    fn get_many(&self, table: &TableRef, keys: &[(String, Vec<u8>)]) -> Result<Vec<Option<Columns>>, StoreError>;

    /// One row from each of several tables, `(table, partition, clustering)`, in the order
    /// of `keys`: at one snapshot where the store has snapshots (the embedded store: one
    /// read transaction instead of one per row), row by row otherwise. The rows are shared:
    /// the embedded store hands out the rows of its cache without copying them.
    fn get_each(&self, keys: &[(&TableRef, &str, &[u8])]) -> Result<Vec<Option<Arc<Columns>>>, StoreError> {
        keys.iter().map(|(table, partition, clustering)| Ok(self.get(table, partition, clustering)?.map(Arc::new))).collect()
    }

    /// The number of rows in one partition.
    fn count(&self, table: &TableRef, partition: &str) -> Result<u64, StoreError>;

    /// A page of rows of one partition.
    fn scan(&self, table: &TableRef, partition: &str, scan: &Scan) -> Result<Page, StoreError>;

    /// Applies a batch atomically (the ops of each model version together: a projection's
    /// batch writes one version and its checkpoints), and durably unless it is
    /// [`Batch::deferred`].
    fn apply(&self, batch: Batch) -> Result<(), StoreError>;

    /// Makes every batch applied so far to one model version durable (the deferred ones
    /// too). Other versions' deferred batches stay as they are: a live projection's flush
    /// must not wait for the disk to take a rebuild's (docs/performance.md, "Reindex: a
    /// live flush no longer syncs the rebuild").
    fn sync(&self, model: &str, version: u32) -> Result<(), StoreError> {
        let _ = (model, version);
        Ok(())
    }

    /// Makes one model version's deferred batches durable if the oldest of them was applied
    /// `age` ago or earlier: a live projection's bound on what a crash makes it apply again.
    fn sync_older_than(&self, model: &str, version: u32, age: std::time::Duration) -> Result<(), StoreError> {
        let _ = (model, version, age);
        Ok(())
    }

    /// A consumer's checkpoints: the next log offset to read, per log partition.
    fn checkpoints(&self, consumer: &str) -> Result<BTreeMap<u32, u64>, StoreError>;

    /// The active version of a read model, if one was ever activated.
    fn active_version(&self, model: &str) -> Result<Option<u32>, StoreError>;

    /// Every version of a read model that exists, with its state.
    fn versions(&self, model: &str) -> Result<BTreeMap<u32, VersionState>, StoreError>;

    /// Registers a new version of a model in state [`VersionState::Building`] and returns
    /// its number (one more than any version the model ever had).
    fn create_version(&self, model: &str) -> Result<u32, StoreError>;

    /// Makes `version` the active version of `model` in one atomic step; the previously
    /// active version becomes [`VersionState::Retired`].
    fn set_active_version(&self, model: &str, version: u32) -> Result<(), StoreError>;

    /// Retires a version being built that will not be swapped in (its rebuild stopped or
    /// failed): one quick write, so that the rebuild can end at once and the version's
    /// tables be dropped afterwards, by whoever drops retired versions (a crash in between
    /// leaves it retired, not building for ever). A version that is not being built is
    /// refused: [`StoreError::UnknownVersion`], or [`StoreError::NotBuilding`].
    fn retire_version(&self, model: &str, version: u32) -> Result<(), StoreError>;

    /// Deletes every table, row and checkpoint of one version of a model.
    fn drop_version(&self, model: &str, version: u32, tables: &[&str]) -> Result<(), StoreError>;

    /// Checks that the store can serve reads (for readiness probes).
    fn check(&self) -> Result<(), StoreError>;

    /// Lets go of the memory caches hold after bulk work (a catch-up), as a freshly opened
    /// store holds none. Reads and writes wait while it runs; answers stay the same.
    fn release_caches(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The bytes of decoded rows and pages this store keeps in memory (its row cache, as
    /// its weigher counts them); 0 where it keeps none. For `/metrics`.
    fn cache_bytes(&self) -> u64 {
        0
    }

    /// The bytes of file pages this store keeps in memory (redb's page caches and write
    /// buffers, every file together); 0 where it keeps none. For `/metrics`.
    fn page_cache_bytes(&self) -> u64 {
        0
    }

    /// Gives the space of dropped versions and deleted rows back to the file system (the
    /// embedded store's file keeps it for later writes otherwise; ScyllaDB compacts on its
    /// own). Reads and writes wait while it runs, so it is for offline commands.
    fn compact(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Writes `model`'s `version` (its tables and checkpoints) as they are at one moment into
    /// a new store file at `to`, for another node to adopt
    /// ([`EmbeddedStore::adopt_version`]). Calls `frozen` as soon as that moment is fixed:
    /// writes made after it go on (they are not in the copy) while the copy is written.
    /// The bytes written; `None` where versions have no files of this node's (ScyllaDB).
    fn copy_version(
        &self,
        _model: &str,
        _version: u32,
        _to: &std::path::Path,
        _frozen: &mut dyn FnMut(),
    ) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// The backend's name (`embedded`, `scylladb`), for health reports.
    fn backend(&self) -> &'static str;

    /// A mark of the state reads see now, for answers kept outside the store: `None` while
    /// a write is under way, and always where writes made elsewhere are not seen (another
    /// process's: the default). An answer computed from reads begun after taking the mark
    /// is the answer of that state if [`Store::unchanged_since`] holds once it is computed,
    /// and stays right for as long as it holds.
    fn state_mark(&self) -> Option<u64> {
        None
    }

    /// Whether no write began since `mark` was taken ([`Store::state_mark`]).
    fn unchanged_since(&self, _mark: u64) -> bool {
        false
    }

    /// As [`Store::state_mark`], for the rows of `table` and of the tables kept with it (the
    /// embedded store: the tables of its model version's file): moved only by the writes
    /// that may change them, not by every write to the store. An answer read from those
    /// tables alone can be kept while another model writes. Marks of different versions of
    /// a model are not comparable: keep the version beside the mark.
    fn state_mark_of(&self, _table: &TableRef) -> Option<u64> {
        None
    }

    /// Whether no write that may change the rows of `table` began since `mark` was taken
    /// ([`Store::state_mark_of`]).
    fn unchanged_since_of(&self, _table: &TableRef, _mark: u64) -> bool {
        false
    }
}

/// The consumer name under which a version of a model keeps its checkpoints.
pub fn consumer_name(model: &str, version: u32) -> String {
    format!("{model}.v{version}")
}

#[cfg(test)]
mod tests {
    use super::TableRef;

    #[test]
    fn a_table_ref_names_its_parts_and_orders_by_them() {
        for (model, version, name) in
            [("eprints", 0, "records"), ("search", 7, "tombstones"), ("a.b", 1234567890, "c.d"), ("m", u32::MAX, "")]
        {
            let t = TableRef::new(model, version, name);
            assert_eq!((t.model(), t.version(), t.name()), (model, version, name));
            assert_eq!(t.physical_name(), format!("{model}.v{version}.{name}"));
            assert_eq!(t.version_name(), super::consumer_name(model, version));
        }
        let mut tables = [TableRef::new("m", 10, "a"), TableRef::new("m", 9, "b"), TableRef::new("l", 99, "z"), TableRef::new("m", 9, "a")];
        tables.sort();
        let order: Vec<(&str, u32, &str)> = tables.iter().map(|t| (t.model(), t.version(), t.name())).collect();
        assert_eq!(order, [("l", 99, "z"), ("m", 9, "a"), ("m", 9, "b"), ("m", 10, "a")]);
    }
}
