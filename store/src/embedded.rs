//! The embedded store: redb files in the data directory, one redb table per versioned
//! read-model table, keyed by `(partition, clustering)` (a file made by this build holds
//! its partitions packed: [`crate::partition_key`]). `store.redb` holds which versions
//! exist and which is active; each version made since lives in a file of its own under
//! `versions/` (tables of versions made before that stay in `store.redb`).

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition, TableError, TableHandle};

use crate::partition_key::KeyForm;
use crate::reopenable::ReopenableDb;
use crate::row_cache::{CachedRow, Gate, PartitionKeyRef, RowCache, RowKeyRef, Ticket, WriteGuard};
use crate::value::{decode_columns, encode_row};
use crate::{consumer_name, Batch, Columns, Op, Page, Row, Scan, Store, StoreError, TableRef, VersionState};

type RangeEntry<'a> = (redb::AccessGuard<'a, (&'static str, &'static [u8])>, redb::AccessGuard<'a, &'static [u8]>);
type ReadRows = redb::ReadOnlyTable<(&'static str, &'static [u8]), &'static [u8]>;
type RowTable<'a> = TableDefinition<'a, (&'static str, &'static [u8]), &'static [u8]>;

const CHECKPOINTS: TableDefinition<(&str, u32), u64> = TableDefinition::new("_checkpoints");
const VERSIONS: TableDefinition<(&str, u32), u8> = TableDefinition::new("_versions");
const ACTIVE: TableDefinition<&str, u32> = TableDefinition::new("_active");

/// The `_checkpoints` row that says a file's row keys hold their partitions packed
/// ([`KeyForm::Packed`]): a name no consumer has. Set when the file is made (a file made
/// before the packed form has none, and keeps its text keys); copied with the checkpoints.
const PACKED_KEYS: (&str, u32) = ("\0keys", 0);

/// The store file's name inside the data directory.
pub const STORE_FILE: &str = "store.redb";

/// The folder of the versions' files inside the data directory: `<model>.v<version>.redb`.
pub const VERSIONS_DIR: &str = "versions";

/// redb's page cache for `store.redb` (its default is 1 GiB per database). A catch-up
/// touches every page once and a full cache stays resident for the life of the process; the
/// pages queries re-read (interior nodes, recent rows) fit in far less, and the operating
/// system's file cache keeps the rest (docs/performance.md, "Memory after catch-up").
const PAGE_CACHE_BYTES: usize = 256 * 1024 * 1024;

/// redb's page cache for each version's file by default (a node has a dozen models' files
/// open), and for the copies `svc compact` makes.
const VERSION_PAGE_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// The longest a deferred batch ([`Batch::deferred`]) waits to be made durable: the first
/// deferred batch after it is committed durably. redb frees the pages a non-durable commit
/// replaces only once a durable commit follows, and keeps their records in memory until
/// then: a rebuild deferring everything to its end grew the file to 10 GB and slowed down
/// as it went (docs/performance.md, "Replay against live projection").
const MAX_DEFERRAL: Duration = Duration::from_secs(10);

/// The row cache's size by default: about 64 MiB of rows (a detail row is ~3 KB: some
/// 20,000 of them).
const ROW_CACHE_BYTES: u64 = 64 << 20;

/// How much memory the embedded store's caches may hold ([`EmbeddedStore::open_with`]).
/// Each fills as pages and rows are read and stays full: together they bound what the store
/// keeps in memory beyond a batch being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSizes {
    /// redb's page cache for `store.redb` (256 MiB by default).
    pub store_pages: usize,
    /// redb's page cache for each version's file (32 MiB by default).
    pub version_pages: usize,
    /// The models whose versions' files get [`CacheSizes::streamed_pages`] instead (none by
    /// default): those whose rows a stream of commands rewrites at every batch.
    pub streamed_models: &'static [&'static str],
    /// redb's page cache for the files of [`CacheSizes::streamed_models`]. Half of it holds
    /// the pages a transaction dirtied (redb's write buffer): a batch that dirties more
    /// writes the rest out during its commit and drops them, and the next batch reads them
    /// back.
    pub streamed_pages: usize,
    /// The row cache (64 MiB by default).
    pub rows: u64,
}

impl Default for CacheSizes {
    fn default() -> CacheSizes {
        CacheSizes {
            store_pages: PAGE_CACHE_BYTES,
            version_pages: VERSION_PAGE_CACHE_BYTES,
            streamed_models: &[],
            streamed_pages: VERSION_PAGE_CACHE_BYTES,
            rows: ROW_CACHE_BYTES,
        }
    }
}

impl CacheSizes {
    /// redb's page cache for a version's file of `model`.
    fn version_pages_of(&self, model: &str) -> usize {
        if self.streamed_models.contains(&model) {
            self.streamed_pages
        } else {
            self.version_pages
        }
    }
}

/// The embedded [`Store`] on redb files.
///
/// Each version of a model has a file of its own, so a rebuild never shares redb's one
/// write transaction, nor its commits' durability, with the live version it replaces: a
/// live commit does not wait for the rebuild's batches or flush them (it did when they
/// shared a file: a write made during an API reindex took up to 1.7 s to show, 40 × its
/// usual lag), and dropping a version deletes its file, its space back at once.
pub struct EmbeddedStore {
    dir: PathBuf,
    /// `store.redb`: versions, the active ones, and the tables of older versions.
    main: Arc<StoreFile>,
    /// The file of each version that has one, by its name ([`consumer_name`]).
    files: RwLock<HashMap<String, Arc<StoreFile>>>,
    /// The active version of every model, as in the `_active` table. redb lets one process
    /// at a time open the file and every change goes through [`Store::set_active_version`],
    /// so this copy is exact; it spares every query a read transaction.
    active: RwLock<HashMap<String, u32>>,
    /// Rows read recently, exact under writes (see [`RowCache`]).
    rows: RowCache,
    /// The caches' sizes it was opened with (new version files take theirs).
    caches: CacheSizes,
}

/// One redb file of the store, with its own write transaction and durability.
struct StoreFile {
    db: ReopenableDb,
    /// The size of its page cache, when it is opened again.
    cache_bytes: usize,
    /// When the last durable commit was made, and since when a deferred commit is not
    /// durable yet (`None`: every commit is).
    durability: Mutex<Durable>,
    /// Its writes, for the row cache.
    gate: Arc<Gate>,
    /// How its row keys hold partitions.
    form: KeyForm,
}

/// A file's durability: see [`StoreFile::durability`].
struct Durable {
    last: Instant,
    deferred_since: Option<Instant>,
}

impl StoreFile {
    fn open(path: PathBuf, cache_bytes: usize) -> Result<StoreFile, StoreError> {
        let db = open_db(&path, cache_bytes)?;
        let txn = db.begin_write()?;
        let fresh = txn.list_tables()?.next().is_none();
        let form = {
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            if fresh {
                checkpoints.insert(PACKED_KEYS, 1)?;
            }
            if checkpoints.get(PACKED_KEYS)?.is_some() {
                KeyForm::Packed
            } else {
                KeyForm::Text
            }
        };
        txn.commit()?;
        let durability = Mutex::new(Durable { last: Instant::now(), deferred_since: None });
        Ok(StoreFile { db: ReopenableDb::new(db, path), cache_bytes, durability, gate: Arc::default(), form })
    }

    /// Writes `ops` (of this file's tables and checkpoints) in one transaction, made
    /// durable unless `deferred` (and the last durable commit is recent); names each
    /// changed row to `write`.
    fn write(&self, ops: &[&Op], deferred: bool, write: &mut WriteGuard<'_>) -> Result<(), StoreError> {
        let db = self.db.get()?;
        let mut txn = db.begin_write()?;
        let deferred = deferred && self.durability.lock().is_ok_and(|d| d.last.elapsed() < MAX_DEFERRAL);
        if deferred {
            txn.set_durability(Durability::None).map_err(|e| StoreError::Unavailable(format!("cannot defer durability: {e}")))?;
        }
        {
            let mut names: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            for op in ops {
                match op {
                    Op::Put { table, .. } | Op::Delete { table, .. } => names.entry(table.physical_name()).or_default().push(op),
                    Op::Checkpoint { consumer, partition, next_offset } => {
                        checkpoints.insert((consumer.as_str(), *partition), *next_offset)?;
                    }
                    // One transaction: everything lands together, so order needs no barrier.
                    Op::Barrier => {}
                }
            }
            // Ops on different tables never touch the same row, and within one table a
            // stable sort by key keeps the order of ops on the same row: the batch lands in
            // key order, near-sequentially in the B-tree, whatever order the events had.
            for (name, mut ops) in names {
                ops.sort_by(|a, b| row_key(a).cmp(&row_key(b)));
                let mut t = txn.open_table(RowTable::new(name))?;
                for op in ops {
                    let (partition, clustering) = row_key(op);
                    write.touch(RowKeyRef(name, partition, clustering));
                    match op {
                        Op::Put { table, partition, clustering, columns, .. } => {
                            let bytes = encode_row(table, columns)?;
                            t.insert((&*self.form.partition(partition), clustering.as_slice()), bytes.as_slice())?;
                        }
                        Op::Delete { partition, clustering, .. } => {
                            t.remove((&*self.form.partition(partition), clustering.as_slice()))?;
                        }
                        Op::Checkpoint { .. } | Op::Barrier => {}
                    }
                }
            }
        }
        txn.commit()?;
        if deferred {
            if let Ok(mut d) = self.durability.lock() {
                d.deferred_since.get_or_insert_with(Instant::now);
            }
        } else {
            self.made_durable();
        }
        Ok(())
    }

    /// A durable commit makes the non-durable ones before it durable too.
    fn sync(&self) -> Result<(), StoreError> {
        self.db.get()?.begin_write()?.commit()?;
        self.made_durable();
        Ok(())
    }

    /// Makes the deferred commits durable if the oldest is `age` old or older.
    fn sync_older_than(&self, age: Duration) -> Result<(), StoreError> {
        let due = self.durability.lock().is_ok_and(|d| d.deferred_since.is_some_and(|at| at.elapsed() >= age));
        if due {
            self.sync()?;
        }
        Ok(())
    }

    fn made_durable(&self) {
        if let Ok(mut d) = self.durability.lock() {
            *d = Durable { last: Instant::now(), deferred_since: None };
        }
    }
}

fn state_code(state: VersionState) -> u8 {
    match state {
        VersionState::Building => 0,
        VersionState::Active => 1,
        VersionState::Retired => 2,
    }
}

/// The code of a dropped version: its entry stays so that its number is never reused.
const DROPPED: u8 = 3;

/// A version's state; `None` for a dropped one.
fn state_from(code: u8) -> Option<VersionState> {
    match code {
        0 => Some(VersionState::Building),
        1 => Some(VersionState::Active),
        2 => Some(VersionState::Retired),
        _ => None,
    }
}

/// Opens a row table for reading; `None` when nothing was ever written to it.
fn open_rows<'t>(txn: &'t redb::ReadTransaction, name: &'t str) -> Result<Option<ReadRows>, StoreError> {
    match txn.open_table(RowTable::new(name)) {
        Ok(t) => Ok(Some(t)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The number of rows of a partition of `name` in `file`, counted.
fn count_rows(file: &StoreFile, name: &str, partition: &str) -> Result<u64, StoreError> {
    let partition = &*file.form.partition(partition);
    let db = file.db.get()?;
    let txn = db.begin_read()?;
    let Some(t) = open_rows(&txn, name)? else { return Ok(0) };
    let end = partition_end(partition);
    let empty: &[u8] = &[];
    let range = t.range::<(&str, &[u8])>((Bound::Included((partition, empty)), Bound::Excluded((end.as_str(), empty))))?;
    let mut n = 0;
    for entry in range {
        entry?;
        n += 1;
    }
    Ok(n)
}

/// The page `scan` reads of a partition of `name` in `file`.
fn scan_rows(file: &StoreFile, name: &str, partition: &str, scan: &Scan) -> Result<Page, StoreError> {
    let partition = &*file.form.partition(partition);
    let db = file.db.get()?;
    let txn = db.begin_read()?;
    let Some(t) = open_rows(&txn, name)? else { return Ok(Page { rows: Vec::new(), next: None }) };
    let end = partition_end(partition);
    let empty: &[u8] = &[];
    let (lower, upper) = match (&scan.after, scan.reverse) {
        (None, _) => (Bound::Included((partition, empty)), Bound::Excluded((end.as_str(), empty))),
        (Some(after), false) => (Bound::Excluded((partition, after.as_slice())), Bound::Excluded((end.as_str(), empty))),
        (Some(after), true) => (Bound::Included((partition, empty)), Bound::Excluded((partition, after.as_slice()))),
    };
    let range = t.range::<(&str, &[u8])>((lower, upper))?;
    let mut rows = Vec::with_capacity(scan.limit.min(1024));
    let mut push = |entry: Result<RangeEntry<'_>, redb::StorageError>| -> Result<bool, StoreError> {
        let (k, v) = entry?;
        let (_, clustering) = k.value();
        rows.push(Row { clustering: clustering.to_vec(), columns: decode_columns(name, v.value())? });
        Ok(rows.len() < scan.limit)
    };
    if scan.limit > 0 {
        if scan.reverse {
            for entry in range.rev() {
                if !push(entry)? {
                    break;
                }
            }
        } else {
            for entry in range {
                if !push(entry)? {
                    break;
                }
            }
        }
    }
    let next = if rows.len() == scan.limit && scan.limit > 0 { rows.last().map(|r| r.clustering.clone()) } else { None };
    Ok(Page { rows, next })
}

/// The row at `key` (physical table, partition, clustering), read in `txn` of a file whose
/// keys have `form`.
fn read_row(txn: &redb::ReadTransaction, form: KeyForm, key: RowKeyRef<'_>) -> Result<Option<Columns>, StoreError> {
    let Some(t) = open_rows(txn, key.0)? else { return Ok(None) };
    match t.get((&*form.partition(key.1), key.2))? {
        Some(v) => Ok(Some(decode_columns(key.0, v.value())?)),
        None => Ok(None),
    }
}

/// The row an op writes; checkpoints sort first (they are never among a table's ops).
fn row_key(op: &Op) -> (&str, &[u8]) {
    match op {
        Op::Put { partition, clustering, .. } | Op::Delete { partition, clustering, .. } => (partition, clustering),
        Op::Checkpoint { .. } | Op::Barrier => ("", &[]),
    }
}

/// The smallest partition key greater than every `(partition, _)` key.
fn partition_end(partition: &str) -> String {
    format!("{partition}\0")
}

/// Opens (or creates) one of the store's files with a page cache of `cache_bytes`.
fn open_db(path: &Path, cache_bytes: usize) -> Result<Database, StoreError> {
    Ok(redb::Builder::new().set_cache_size(cache_bytes).create(path)?)
}

/// Rows copied per transaction by [`copy_tables`]: the copy's memory stays bounded.
const COPY_CHUNK: usize = 20_000;

/// Writes every table `txn` sees (row tables and checkpoints) into a new redb file at `to`,
/// written beside it and renamed once complete.
fn copy_tables(txn: &redb::ReadTransaction, to: &Path) -> Result<(), StoreError> {
    let partial = to.with_extension("redb.partial");
    match std::fs::remove_file(&partial) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_failed("remove", &partial, e)),
        _ => {}
    }
    if let Err(e) = write_tables(txn, &partial) {
        // A full disk, most likely: the partial copy goes.
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, to).map_err(|e| io_failed("rename", &partial, e))
}

/// Writes every table `txn` sees into a new redb file at `to`, a chunk of rows per
/// transaction, the last one durable.
fn write_tables(txn: &redb::ReadTransaction, to: &Path) -> Result<(), StoreError> {
    let out = redb::Builder::new().set_cache_size(VERSION_PAGE_CACHE_BYTES).create(to)?;
    let no_sync = |w: &mut redb::WriteTransaction| {
        w.set_durability(Durability::None).map_err(|e| StoreError::Unavailable(format!("cannot defer durability: {e}")))
    };
    let names: Vec<String> = txn.list_tables()?.map(|t| t.name().to_owned()).collect();
    for name in names {
        if name == CHECKPOINTS.name() {
            let mut w = out.begin_write()?;
            no_sync(&mut w)?;
            {
                let mut t = w.open_table(CHECKPOINTS)?;
                for entry in txn.open_table(CHECKPOINTS)?.iter()? {
                    let (k, v) = entry?;
                    t.insert(k.value(), v.value())?;
                }
            }
            w.commit()?;
            continue;
        }
        let source = txn.open_table(RowTable::new(&name))?;
        let mut rows = source.iter()?;
        loop {
            let mut w = out.begin_write()?;
            no_sync(&mut w)?;
            let mut copied = 0;
            {
                let mut t = w.open_table(RowTable::new(&name))?;
                for entry in rows.by_ref().take(COPY_CHUNK) {
                    let (k, v) = entry?;
                    t.insert(k.value(), &*crate::value::kept_form(&name, v.value())?)?;
                    copied += 1;
                }
            }
            w.commit()?;
            if copied < COPY_CHUNK {
                break;
            }
        }
    }
    // A durable commit makes the deferred ones durable.
    out.begin_write()?.commit()?;
    Ok(())
}

/// Writes the tables of `db` to a new file at `to`, each in key order, then compacts that.
/// redb fills a leaf to the brim when keys come in ascending order (a key past every other
/// starts a new leaf), where writes in any other order split full leaves in half: a version
/// file built by a catch-up or a replay holds its rows in leaves about 60 % full, and its
/// repacked copy in full ones (75,000 papers: the store 625 MB → docs/capacity.md).
fn repack(db: &Database, to: &Path) -> Result<(), StoreError> {
    copy_tables(&db.begin_read()?, to)?;
    // The copy's chunks were committed without waiting for the disk, so the pages each
    // freed stayed unused: compacting gives them back.
    let mut copy = redb::Builder::new().set_cache_size(VERSION_PAGE_CACHE_BYTES).open(to)?;
    while copy.compact().map_err(|e| StoreError::Unavailable(format!("could not compact {}: {e}", to.display())))? {}
    Ok(())
}

/// A file operation that failed, as the store reports it.
fn io_failed(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Unavailable(format!("failed to {what} {}: {e}", path.display()))
}

/// The model and version a version file's name (`<model>.v<version>.redb`) names.
fn version_of_file(path: &Path) -> Option<(String, u32)> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".redb")?;
    let (model, version) = stem.rsplit_once(".v")?;
    Some((model.to_owned(), version.parse().ok()?))
}

/// Every file of the embedded store in `dir` (the data directory): `store.redb` and the
/// versions' files.
///
/// # Errors
/// When the versions' folder exists but cannot be listed.
pub fn store_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = vec![dir.join(STORE_FILE)];
    files.extend(version_files(dir)?);
    Ok(files)
}

/// Removes what an interrupted compaction or adoption left in the versions' folder of
/// `dir`: the copies beside a version's file (`.redb.new`, `.redb.partial`), never renamed
/// over it, so the file beside them is as it was. Only a process holding the store makes
/// them, and it is the one opening it now.
fn remove_unfinished_copies(dir: &Path) -> Result<(), StoreError> {
    let folder = dir.join(VERSIONS_DIR);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_failed("list", &folder, e)),
    };
    for entry in entries {
        let path = entry.map_err(|e| io_failed("list", &folder, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.ends_with(".redb.new") || name.ends_with(".redb.partial") {
            tracing::warn!(file = %path.display(), "removing the copy an interrupted compaction or adoption left");
            std::fs::remove_file(&path).map_err(|e| io_failed("remove", &path, e))?;
        }
    }
    Ok(())
}

/// The versions' files in the data directory `dir`, by name.
fn version_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    match std::fs::read_dir(dir.join(VERSIONS_DIR)) {
        Ok(entries) => {
            for entry in entries {
                let path = entry?.path();
                if version_of_file(&path).is_some() {
                    files.push(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    files.sort();
    Ok(files)
}

impl EmbeddedStore {
    /// Opens the store in `dir`, creating it if needed. A version file whose version was
    /// dropped (or whose creation never committed) is deleted, and so are the copies an
    /// interrupted compaction or adoption left beside the files.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when a file cannot be opened.
    pub fn open(dir: &Path) -> Result<EmbeddedStore, StoreError> {
        EmbeddedStore::open_with(dir, CacheSizes::default())
    }

    /// Opens the store in `dir` as [`EmbeddedStore::open`] does, its caches of `caches`.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when a file cannot be opened.
    pub fn open_with(dir: &Path, caches: CacheSizes) -> Result<EmbeddedStore, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| io_failed("create", dir, e))?;
        let main = StoreFile::open(dir.join(STORE_FILE), caches.store_pages)?;
        let mut active = HashMap::new();
        let mut live = std::collections::HashSet::new();
        {
            let db = main.db.get()?;
            let txn = db.begin_write()?;
            txn.open_table(VERSIONS)?;
            txn.open_table(ACTIVE)?;
            txn.commit()?;
            let txn = db.begin_read()?;
            for entry in txn.open_table(ACTIVE)?.iter()? {
                let (model, version) = entry?;
                active.insert(model.value().to_owned(), version.value());
            }
            for entry in txn.open_table(VERSIONS)?.iter()? {
                let (key, state) = entry?;
                let (model, version) = key.value();
                if state_from(state.value()).is_some() {
                    live.insert(consumer_name(model, version));
                }
            }
        }
        remove_unfinished_copies(dir)?;
        let mut files = HashMap::new();
        for path in version_files(dir).map_err(|e| io_failed("list", &dir.join(VERSIONS_DIR), e))? {
            let Some((model, version)) = version_of_file(&path) else { continue };
            let name = consumer_name(&model, version);
            if live.contains(&name) {
                files.insert(name, Arc::new(StoreFile::open(path, caches.version_pages_of(&model))?));
            } else {
                std::fs::remove_file(&path).map_err(|e| io_failed("remove", &path, e))?;
            }
        }
        Ok(EmbeddedStore {
            dir: dir.to_owned(),
            main: Arc::new(main),
            files: RwLock::new(files),
            active: RwLock::new(active),
            rows: RowCache::new(caches.rows),
            caches,
        })
    }

    /// The file of `model`'s `version`, if it has one of its own (a version made before
    /// version files lives in `store.redb`). Its contents are consistent while no write is
    /// under way: copy it from a store no process writes to.
    pub fn version_file(&self, model: &str, version: u32) -> Option<PathBuf> {
        let files = self.files.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        files.get(&consumer_name(model, version)).map(|f| f.db.path().to_owned())
    }

    /// Makes a copy of `file`, another store's file of `model`'s `version`
    /// ([`EmbeddedStore::version_file`]), this store's active version of `model`: its
    /// tables and checkpoints as they were there. Refused when this store has a version of
    /// `model` already (the version's number names its tables, so it cannot be renumbered).
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when `model` has versions here, or on a file error.
    pub fn adopt_version(&self, model: &str, version: u32, file: &Path) -> Result<(), StoreError> {
        if !self.versions(model)?.is_empty() {
            return Err(StoreError::Unavailable(format!(
                "this store already has versions of {model}: adopt a version into a store without any"
            )));
        }
        let name = consumer_name(model, version);
        let path = self.version_path(&name)?;
        let partial = path.with_extension("redb.partial");
        std::fs::copy(file, &partial).map_err(|e| io_failed(&format!("copy {} to", file.display()), &partial, e))?;
        std::fs::rename(&partial, &path).map_err(|e| io_failed("rename", &partial, e))?;
        let adopted = Arc::new(StoreFile::open(path, self.caches.version_pages_of(model))?);
        let _write = self.rows.begin_write_all();
        let mut cached = self.active.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let db = self.main.db.get()?;
        let txn = db.begin_write()?;
        txn.open_table(VERSIONS)?.insert((model, version), state_code(VersionState::Active))?;
        txn.open_table(ACTIVE)?.insert(model, version)?;
        txn.commit()?;
        cached.insert(model.to_owned(), version);
        self.files.write().unwrap_or_else(std::sync::PoisonError::into_inner).insert(name, adopted);
        Ok(())
    }

    /// Where the file of the version named `name` ([`consumer_name`]) lives, its folder made.
    fn version_path(&self, name: &str) -> Result<PathBuf, StoreError> {
        let folder = self.dir.join(VERSIONS_DIR);
        std::fs::create_dir_all(&folder).map_err(|e| io_failed("create", &folder, e))?;
        Ok(folder.join(format!("{name}.redb")))
    }

    /// The file holding the tables and checkpoints of the version named `name`
    /// ([`consumer_name`]): its own, or `store.redb` for a version older than version files.
    fn file(&self, name: &str) -> Arc<StoreFile> {
        self.files.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(name).cloned().unwrap_or_else(|| self.main.clone())
    }

    /// Every file: `store.redb` and the versions'.
    fn all_files(&self) -> Vec<Arc<StoreFile>> {
        let files = self.files.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        std::iter::once(self.main.clone()).chain(files.values().cloned()).collect()
    }

    /// Writes a batch (see [`Store::apply`]): one transaction per file its ops go to (a
    /// projection's batch names one version, so one file).
    fn write(&self, batch: Batch) -> Result<(), StoreError> {
        let mut groups: Vec<(Arc<StoreFile>, Vec<&Op>)> = Vec::new();
        let mut last: Option<(&str, usize)> = None;
        for op in &batch.ops {
            let name = match op {
                Op::Put { table, .. } | Op::Delete { table, .. } => table.version_name(),
                Op::Checkpoint { consumer, .. } => consumer.as_str(),
                Op::Barrier => continue,
            };
            let group = match last {
                Some((last_name, group)) if last_name == name => group,
                _ => {
                    let file = self.file(name);
                    let group = groups.iter().position(|(f, _)| Arc::ptr_eq(f, &file)).unwrap_or_else(|| {
                        groups.push((file, Vec::new()));
                        groups.len() - 1
                    });
                    last = Some((name, group));
                    group
                }
            };
            groups[group].1.push(op);
        }
        // Announced before the transactions, ended (evicting the rows) after their commits.
        let mut write = self.rows.begin_write(groups.iter().map(|(file, _)| file.gate.clone()).collect());
        for (file, ops) in groups {
            file.write(&ops, batch.deferred, &mut write)?;
        }
        Ok(())
    }

    /// Reads each row of `keys` whose slot in `rows` is empty, in one read transaction per
    /// version; remembers them in the row cache under `ticket`, if given.
    fn read_missing(
        &self,
        keys: &[(&TableRef, &str, &[u8])],
        rows: &mut [Option<CachedRow>],
        ticket: Option<(Ticket, &Gate)>,
    ) -> Result<(), StoreError> {
        let mut pending: Vec<usize> = (0..keys.len()).filter(|i| rows[*i].is_none()).collect();
        while let Some(&first) = pending.first() {
            let version = keys[first].0.version_name();
            let file = self.file(version);
            let db = file.db.get()?;
            let txn = db.begin_read()?;
            let mut rest = Vec::new();
            for i in pending {
                let (table, partition, clustering) = keys[i];
                if table.version_name() != version {
                    rest.push(i);
                    continue;
                }
                let key = RowKeyRef(table.physical_name(), partition, clustering);
                let row = read_row(&txn, file.form, key)?.map(Arc::new);
                if let Some((ticket, gate)) = ticket {
                    self.rows.fill(ticket, gate, key.owned(), row.clone());
                }
                rows[i] = Some(row);
            }
            pending = rest;
        }
        Ok(())
    }
}

impl Store for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    /// Every write to this store is made by this process (one process per data directory),
    /// through [`EmbeddedStore::apply`] and the version calls, and each is counted.
    fn state_mark(&self) -> Option<u64> {
        self.rows.state_mark()
    }

    fn unchanged_since(&self, mark: u64) -> bool {
        self.rows.unchanged_since_mark(mark)
    }

    /// The mark of the file `table` is in: moved by writes to that file and by those that
    /// may change any (versions made, made active, dropped; every file reopened).
    fn state_mark_of(&self, table: &TableRef) -> Option<u64> {
        self.rows.file_mark(&self.file(table.version_name()).gate)
    }

    fn unchanged_since_of(&self, table: &TableRef, mark: u64) -> bool {
        self.rows.file_unchanged_since(&self.file(table.version_name()).gate, mark)
    }

    /// Reads come from redb's page cache or the local file: microseconds, cheaper than a
    /// hand-off to a blocking thread.
    fn reads_block(&self) -> bool {
        false
    }

    fn get(&self, table: &TableRef, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError> {
        let key = RowKeyRef(table.physical_name(), partition, clustering);
        let file = self.file(table.version_name());
        let ticket = self.rows.begin_read(&file.gate);
        if ticket.is_some() {
            if let Some(row) = self.rows.get(key) {
                return Ok(row.map(|c| (*c).clone()));
            }
        }
        let db = file.db.get()?;
        let txn = db.begin_read()?;
        let row = read_row(&txn, file.form, key)?;
        if let Some(ticket) = ticket {
            self.rows.fill(ticket, &file.gate, key.owned(), row.clone().map(Arc::new));
        }
        Ok(row)
    }

    fn get_many(&self, table: &TableRef, keys: &[(String, Vec<u8>)]) -> Result<Vec<Option<Columns>>, StoreError> {
        let name = table.physical_name();
        let file = self.file(table.version_name());
        let db = file.db.get()?;
        let txn = db.begin_read()?;
        let Some(t) = open_rows(&txn, name)? else { return Ok(vec![None; keys.len()]) };
        keys.iter()
            .map(|(p, c)| match t.get((&*file.form.partition(p), c.as_slice()))? {
                Some(v) => Ok(Some(decode_columns(name, v.value())?)),
                None => Ok(None),
            })
            .collect()
    }

    fn get_each(&self, keys: &[(&TableRef, &str, &[u8])]) -> Result<Vec<Option<Arc<Columns>>>, StoreError> {
        // The cache serves reads of one version's file: its gate says when.
        let version = keys.first().map(|(t, _, _)| t.version_name());
        let one_version = version.is_some_and(|v| keys.iter().all(|(t, _, _)| t.version_name() == v));
        let file = version.filter(|_| one_version).map(|v| self.file(v));
        if let Some((ticket, file)) = file.and_then(|f| Some((self.rows.begin_read(&f.gate)?, f))) {
            let mut rows: Vec<Option<CachedRow>> = keys.iter().map(|(t, p, c)| self.rows.get(RowKeyRef(t.physical_name(), p, c))).collect();
            self.read_missing(keys, &mut rows, Some((ticket, &file.gate)))?;
            // Cached rows are the state when the read began; the rest are too unless a
            // write started since.
            if self.rows.unchanged_since(ticket, &file.gate) {
                return Ok(rows.into_iter().map(Option::unwrap_or_default).collect());
            }
        }
        let mut rows = vec![None; keys.len()];
        self.read_missing(keys, &mut rows, None)?;
        Ok(rows.into_iter().map(Option::unwrap_or_default).collect())
    }

    fn count(&self, table: &TableRef, partition: &str) -> Result<u64, StoreError> {
        let name = table.physical_name();
        let file = self.file(table.version_name());
        let ticket = self.rows.begin_read(&file.gate);
        if ticket.is_some() {
            if let Some(n) = self.rows.count(PartitionKeyRef(name, partition)) {
                return Ok(n);
            }
        }
        let n = count_rows(&file, name, partition)?;
        if let Some(ticket) = ticket {
            self.rows.fill_count(ticket, &file.gate, PartitionKeyRef(name, partition), n);
        }
        Ok(n)
    }

    fn scan(&self, table: &TableRef, partition: &str, scan: &Scan) -> Result<Page, StoreError> {
        let name = table.physical_name();
        let file = self.file(table.version_name());
        let ticket = self.rows.begin_read(&file.gate);
        if ticket.is_some() {
            if let Some(page) = self.rows.page(PartitionKeyRef(name, partition), scan) {
                return Ok(page);
            }
        }
        let page = scan_rows(&file, name, partition, scan)?;
        if let Some(ticket) = ticket {
            self.rows.fill_page(ticket, &file.gate, PartitionKeyRef(name, partition), scan, &page);
        }
        Ok(page)
    }

    fn apply(&self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.write(batch)
    }

    fn sync(&self, model: &str, version: u32) -> Result<(), StoreError> {
        self.file(&consumer_name(model, version)).sync()
    }

    fn sync_older_than(&self, model: &str, version: u32, age: Duration) -> Result<(), StoreError> {
        self.file(&consumer_name(model, version)).sync_older_than(age)
    }

    fn checkpoints(&self, consumer: &str) -> Result<BTreeMap<u32, u64>, StoreError> {
        let file = self.file(consumer);
        let db = file.db.get()?;
        let txn = db.begin_read()?;
        let t = txn.open_table(CHECKPOINTS)?;
        let mut out = BTreeMap::new();
        for entry in t.range((consumer, 0u32)..=(consumer, u32::MAX))? {
            let (k, v) = entry?;
            out.insert(k.value().1, v.value());
        }
        Ok(out)
    }

    fn active_version(&self, model: &str) -> Result<Option<u32>, StoreError> {
        Ok(self.active.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(model).copied())
    }

    fn versions(&self, model: &str) -> Result<BTreeMap<u32, VersionState>, StoreError> {
        let db = self.main.db.get()?;
        let txn = db.begin_read()?;
        let t = txn.open_table(VERSIONS)?;
        let mut out = BTreeMap::new();
        for entry in t.range((model, 0u32)..=(model, u32::MAX))? {
            let (k, v) = entry?;
            if let Some(state) = state_from(v.value()) {
                out.insert(k.value().1, state);
            }
        }
        Ok(out)
    }

    /// Registers the version in `store.redb` and makes its file (before the registration
    /// commits: a file without one is deleted on the next open).
    fn create_version(&self, model: &str) -> Result<u32, StoreError> {
        // Rows of the new version read before its file exists were looked up in
        // `store.redb`: no such read may fill the cache once the file is there.
        let _write = self.rows.begin_write_all();
        let db = self.main.db.get()?;
        let txn = db.begin_write()?;
        let version = {
            let mut t = txn.open_table(VERSIONS)?;
            let last = t.range((model, 0u32)..=(model, u32::MAX))?.next_back().transpose()?.map(|(k, _)| k.value().1);
            let version = last.map_or(1, |v| v + 1);
            t.insert((model, version), state_code(VersionState::Building))?;
            version
        };
        let name = consumer_name(model, version);
        let path = self.version_path(&name)?;
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_failed("remove", &path, e)),
        }
        let file = StoreFile::open(path, self.caches.version_pages_of(model))?;
        txn.commit()?;
        self.files.write().unwrap_or_else(std::sync::PoisonError::into_inner).insert(name, Arc::new(file));
        Ok(version)
    }

    fn set_active_version(&self, model: &str, version: u32) -> Result<(), StoreError> {
        // A write for the marks: readers read another version from now on. (Rows are
        // cached by physical table, which names the version: none to evict.)
        let _write = self.rows.begin_write_all();
        // Held across the commit, so that no reader sees the copy disagree with the file.
        let mut cached = self.active.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let db = self.main.db.get()?;
        let txn = db.begin_write()?;
        {
            let mut versions = txn.open_table(VERSIONS)?;
            if versions.get((model, version))?.and_then(|code| state_from(code.value())).is_none() {
                return Err(StoreError::UnknownVersion { model: model.to_owned(), version });
            }
            let mut active = txn.open_table(ACTIVE)?;
            let previous = active.insert(model, version)?.map(|v| v.value());
            if let Some(prev) = previous.filter(|p| *p != version) {
                versions.insert((model, prev), state_code(VersionState::Retired))?;
            }
            versions.insert((model, version), state_code(VersionState::Active))?;
        }
        txn.commit()?;
        cached.insert(model.to_owned(), version);
        Ok(())
    }

    fn retire_version(&self, model: &str, version: u32) -> Result<(), StoreError> {
        let db = self.main.db.get()?;
        let txn = db.begin_write()?;
        {
            let mut versions = txn.open_table(VERSIONS)?;
            let state = versions.get((model, version))?.and_then(|code| state_from(code.value()));
            match state {
                Some(VersionState::Building) => {}
                Some(_) => return Err(StoreError::NotBuilding { model: model.to_owned(), version }),
                None => return Err(StoreError::UnknownVersion { model: model.to_owned(), version }),
            }
            versions.insert((model, version), state_code(VersionState::Retired))?;
        }
        txn.commit()?;
        Ok(())
    }

    /// Unregisters the version, then closes and deletes its file (a file left by a crash
    /// between the two is deleted on the next open); a version kept in `store.redb` has its
    /// tables deleted there.
    fn drop_version(&self, model: &str, version: u32, tables: &[&str]) -> Result<(), StoreError> {
        let mut write = self.rows.begin_write_all();
        write.touch_all();
        let db = self.main.db.get()?;
        let txn = db.begin_write()?;
        {
            for name in tables {
                let physical = TableRef::new(model, version, name).physical_name().to_owned();
                txn.delete_table(RowTable::new(&physical))?;
            }
            let consumer = consumer_name(model, version);
            let mut checkpoints = txn.open_table(CHECKPOINTS)?;
            checkpoints.retain_in((consumer.as_str(), 0u32)..=(consumer.as_str(), u32::MAX), |_, _| false)?;
            let mut versions = txn.open_table(VERSIONS)?;
            if versions.get((model, version))?.is_some() {
                versions.insert((model, version), DROPPED)?;
            }
        }
        txn.commit()?;
        drop(db);
        let file = self.files.write().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&consumer_name(model, version));
        if let Some(file) = file {
            file.db.close()?;
            let path = file.db.path();
            std::fs::remove_file(path).map_err(|e| io_failed("remove", path, e))?;
        }
        Ok(())
    }

    /// Reopens every file, which empties redb's page caches, and empties the row cache.
    fn release_caches(&self) -> Result<(), StoreError> {
        let mut write = self.rows.begin_write_all();
        write.touch_all();
        self.all_files().iter().try_for_each(|file| file.db.reopen(|path| open_db(path, file.cache_bytes)))
    }

    fn cache_bytes(&self) -> u64 {
        self.rows.bytes()
    }

    fn page_cache_bytes(&self) -> u64 {
        let used = |file: &Arc<StoreFile>| file.db.get().map_or(0, |db| db.cache_stats().used_bytes() as u64);
        self.all_files().iter().map(used).sum()
    }

    /// Compacts `store.redb`, and repacks each version's file ([`repack`]).
    fn compact(&self) -> Result<(), StoreError> {
        self.main.db.compact()?;
        let versions: Vec<_> = self.files.read().unwrap_or_else(std::sync::PoisonError::into_inner).values().cloned().collect();
        versions.iter().try_for_each(|file| file.db.replace(repack, |path| open_db(path, file.cache_bytes)))
    }

    fn copy_version(&self, model: &str, version: u32, to: &Path, frozen: &mut dyn FnMut()) -> Result<Option<u64>, StoreError> {
        let name = consumer_name(model, version);
        let file = self.files.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(&name).cloned().ok_or_else(|| {
            StoreError::Unavailable(format!(
                "{model} version {version} has no file of its own (made before versions had files): replay {model} first"
            ))
        })?;
        let db = file.db.get()?;
        let txn = db.begin_read()?;
        frozen();
        copy_tables(&txn, to)?;
        Ok(Some(std::fs::metadata(to).map_err(|e| io_failed("read", to, e))?.len()))
    }

    fn check(&self) -> Result<(), StoreError> {
        let db = self.main.db.get()?;
        let txn = db.begin_read()?;
        let t = txn.open_table(ACTIVE)?;
        let _ = t.name();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row_cache::CACHED_PAGE_ROWS;
    use crate::value::encode_columns;

    crate::store_test_suite!(embedded, {
        let dir = tempfile::tempdir().unwrap();
        (Box::new(EmbeddedStore::open(dir.path()).unwrap()) as Box<dyn Store>, dir)
    });

    /// Files made since hold their partitions packed (a `did:plc` in 19 bytes); a file made
    /// before (no packed-keys row) keeps its text keys, read and written as before, and a
    /// copy keeps the form of its source.
    #[test]
    fn new_files_pack_their_partitions_and_files_made_before_keep_their_text_keys() {
        let did = "did:plc:ewvi7nxzyoun6zhxrhs64oiz";
        let uri = format!("at://{did}/pub.svc.eprint.submission/3l4h2xq7zck2a");
        let t = TableRef::new("m", 1, "t");
        let value = |n: i64| Columns::from([("n".to_owned(), crate::Value::Int(n))]);
        let keys_in = |path: &Path| -> Vec<String> {
            let db = Database::open(path).unwrap();
            let txn = db.begin_read().unwrap();
            let rows = txn.open_table(RowTable::new(t.physical_name())).unwrap();
            rows.iter().unwrap().map(|e| e.unwrap().0.value().0.to_owned()).collect()
        };

        // Made before: the rows of version 1 of `m` in `store.redb`, keyed by their text.
        let old = tempfile::tempdir().unwrap();
        {
            let db = Database::create(old.path().join(STORE_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(CHECKPOINTS).unwrap();
            txn.open_table(VERSIONS).unwrap().insert(("m", 1), state_code(VersionState::Active)).unwrap();
            txn.open_table(ACTIVE).unwrap().insert("m", 1).unwrap();
            let mut rows = txn.open_table(RowTable::new(t.physical_name())).unwrap();
            rows.insert((did, &[1u8][..]), encode_columns(&value(1)).unwrap().as_slice()).unwrap();
            drop(rows);
            txn.commit().unwrap();
        }
        let made = tempfile::tempdir().unwrap();
        for (dir, form) in [(old.path(), KeyForm::Text), (made.path(), KeyForm::Packed)] {
            let store = EmbeddedStore::open(dir).unwrap();
            assert_eq!(store.main.form, form);
            let mut batch = Batch::default();
            batch.put(&t, did, vec![2], value(2), 1);
            batch.put(&t, &uri, Vec::new(), value(3), 1);
            store.apply(batch).unwrap();
            store.release_caches().unwrap();
            let rows = store.scan(&t, did, &Scan::first(10)).unwrap().rows;
            let held: Vec<_> = rows.iter().map(|r| (r.clustering.clone(), r.columns.clone())).collect();
            let expected = [(vec![1u8], value(1)), (vec![2u8], value(2))];
            let expected = if form == KeyForm::Text { expected.to_vec() } else { expected[1..].to_vec() };
            assert_eq!(held, expected, "{form:?}");
            assert_eq!(store.count(&t, did).unwrap(), expected.len() as u64);
            assert_eq!(store.get(&t, &uri, &[]).unwrap(), Some(value(3)));
            assert_eq!(store.get_many(&t, &[(uri.clone(), Vec::new())]).unwrap(), vec![Some(value(3))]);
            let mut batch = Batch::default();
            batch.delete(&t, did, vec![2], 1);
            store.apply(batch).unwrap();
            assert_eq!(store.count(&t, did).unwrap(), expected.len() as u64 - 1, "{form:?}: deleted");
            drop(store);
            let keys = keys_in(&dir.join(STORE_FILE));
            let longest = keys.iter().map(String::len).max().unwrap();
            match form {
                KeyForm::Text => assert_eq!(longest, uri.len(), "{keys:?}"),
                KeyForm::Packed => assert_eq!(longest, uri.len() - 18, "{keys:?}"),
            }
            // A repacked copy keeps the form.
            let store = EmbeddedStore::open(dir).unwrap();
            store.compact().unwrap();
            drop(store);
            let store = EmbeddedStore::open(dir).unwrap();
            assert_eq!(store.main.form, form);
            assert_eq!(store.get(&t, &uri, &[]).unwrap(), Some(value(3)), "{form:?}: after a compaction");
        }
    }

    #[test]
    fn a_files_state_mark_moves_with_writes_to_it_and_to_every_file_not_with_another_files() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let (a, b) = (store.create_version("a").unwrap(), store.create_version("b").unwrap());
        let (ta, tb) = (TableRef::new("a", a, "t"), TableRef::new("b", b, "t"));
        let write = |t: &TableRef| {
            let mut batch = Batch::default();
            batch.put(t, "p", Vec::new(), Columns::new(), 1);
            store.apply(batch).unwrap();
        };
        let first = store.state_mark_of(&ta).expect("no write under way");
        write(&tb);
        assert!(store.unchanged_since_of(&ta, first), "another version's file");
        assert!(!store.unchanged_since(store.state_mark().unwrap() - 1), "the store's own mark moved");
        assert_eq!(store.state_mark_of(&ta), Some(first));
        write(&ta);
        assert!(!store.unchanged_since_of(&ta, first), "its own file");
        let second = store.state_mark_of(&ta).unwrap();
        store.set_active_version("b", b).unwrap();
        assert!(!store.unchanged_since_of(&ta, second), "a version made active: any file may have changed");
    }

    #[test]
    fn every_change_readers_can_see_moves_the_state_mark() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let t = TableRef::new("m", 1, "t");
        let first = store.state_mark().expect("no write under way");
        assert!(store.unchanged_since(first));
        assert_eq!(store.state_mark(), Some(first), "reads move nothing");
        let _ = store.get(&t, "p", &[]).unwrap();
        assert!(store.unchanged_since(first));

        let mut batch = Batch::default();
        batch.put(&t, "p", Vec::new(), Columns::new(), 1);
        store.apply(batch).unwrap();
        assert!(!store.unchanged_since(first), "a batch");
        let second = store.state_mark().unwrap();

        let version = store.create_version("m").unwrap();
        store.set_active_version("m", version).unwrap();
        assert!(!store.unchanged_since(second), "another version made active");
        let third = store.state_mark().unwrap();
        store.drop_version("m", version, &["t"]).unwrap();
        assert!(!store.unchanged_since(third), "a version dropped");
    }

    #[test]
    fn cached_pages_and_counts_follow_every_write_to_their_partition() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let (t, other) = (TableRef::new("m", 1, "t"), TableRef::new("m", 1, "u"));
        let put = |table: &TableRef, partition: &str, key: u8, v: i64| {
            let mut batch = Batch::default();
            batch.put(table, partition, vec![key], n(v), 1);
            store.apply(batch).unwrap();
        };
        let newest = Scan { after: None, limit: 2, reverse: true };
        let keys = |page: Page| page.rows.into_iter().map(|r| r.clustering[0]).collect::<Vec<_>>();
        put(&t, "p", 1, 1);
        put(&t, "p", 2, 2);
        assert_eq!(keys(store.scan(&t, "p", &newest).unwrap()), [2, 1]);
        assert_eq!(store.count(&t, "p").unwrap(), 2);
        let cached = PartitionKeyRef(t.physical_name(), "p");
        assert!(store.rows.page(cached, &newest).is_some() && store.rows.count(cached) == Some(2), "both are cached");

        // Writes elsewhere (another partition, another table) leave them cached.
        put(&t, "q", 9, 9);
        put(&other, "p", 9, 9);
        assert!(store.rows.page(cached, &newest).is_some() && store.rows.count(cached) == Some(2));

        // A row added, changed or deleted in the partition shows at once.
        put(&t, "p", 3, 3);
        assert!(store.rows.page(cached, &newest).is_none(), "evicted");
        assert_eq!(keys(store.scan(&t, "p", &newest).unwrap()), [3, 2]);
        assert_eq!(store.count(&t, "p").unwrap(), 3);
        put(&t, "p", 3, 30);
        assert_eq!(store.scan(&t, "p", &newest).unwrap().rows[0].columns, n(30));
        let mut batch = Batch::default();
        batch.delete(&t, "p", vec![3], 2);
        store.apply(batch).unwrap();
        assert_eq!(keys(store.scan(&t, "p", &newest).unwrap()), [2, 1]);
        assert_eq!(store.count(&t, "p").unwrap(), 2);

        // A small partition is kept whole, whatever the limit; pages of many rows are not.
        let all = Scan::first(10_000);
        assert_eq!(keys(store.scan(&t, "p", &all).unwrap()), [1, 2]);
        assert!(store.rows.page(cached, &all).is_some());
        let mut batch = Batch::default();
        for key in 0..=CACHED_PAGE_ROWS {
            batch.put(&t, "big", (key as u32).to_be_bytes().to_vec(), n(1), 3);
        }
        store.apply(batch).unwrap();
        assert_eq!(store.scan(&t, "big", &all).unwrap().rows.len(), CACHED_PAGE_ROWS + 1);
        assert!(store.rows.page(PartitionKeyRef(t.physical_name(), "big"), &all).is_none());
    }

    #[test]
    fn compaction_repacks_a_version_file_written_in_any_order_into_full_leaves() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let version = store.create_version("m").unwrap();
        let path = store.version_file("m", version).unwrap();
        let size = || std::fs::metadata(&path).unwrap().len();
        let table = TableRef::new("m", version, "t");
        // Values of about a kilobyte that compress little, written in a scattered key order
        // over many batches, as a catch-up writes rows keyed by DIDs and URIs.
        let value = |i: u64| {
            let text: String = (0..64).map(|k| format!("{:016x}", (i * 64 + k).wrapping_mul(0x9E37_79B9_7F4A_7C15))).collect();
            Columns::from([("v".to_owned(), crate::Value::Text(text))])
        };
        let key = |i: u64| format!("{:016x}", i.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        // And rows of a hundred bytes, which live writes store as they are and a repack
        // compresses.
        let small_table = TableRef::new("m", version, "small");
        let small = |i: u64| {
            Columns::from([
                ("did".to_owned(), crate::Value::Text(format!("did:plc:{i:024}"))),
                ("n".to_owned(), crate::Value::Int(i as i64)),
            ])
        };
        for chunk in 0..40u64 {
            let mut batch = Batch::default();
            for i in chunk * 100..(chunk + 1) * 100 {
                batch.put(&table, &key(i), Vec::new(), value(i), i);
                batch.put(&small_table, "p", key(i).into_bytes(), small(i), i);
            }
            batch.checkpoint(&crate::consumer_name("m", version), 0, (chunk + 1) * 100);
            store.apply(batch).unwrap();
        }
        // What a crash during an earlier repack left beside the file.
        std::fs::write(path.with_extension("redb.new"), b"half a file").unwrap();
        let before = size();
        store.compact().unwrap();
        assert!(size() * 10 < before * 8, "{} bytes after repacking, {before} before", size());
        assert!(!path.with_extension("redb.new").exists());
        for i in (0..4000).step_by(7) {
            assert_eq!(store.get(&table, &key(i), &[]).unwrap(), Some(value(i)), "row {i}");
            assert_eq!(store.get(&small_table, "p", key(i).as_bytes()).unwrap(), Some(small(i)), "small row {i}");
        }
        assert_eq!(store.scan(&small_table, "p", &Scan::first(5_000)).unwrap().rows.len(), 4000);
        assert_eq!(store.checkpoints(&crate::consumer_name("m", version)).unwrap(), BTreeMap::from([(0, 4000)]));
        let mut batch = Batch::default();
        batch.put(&table, "after", Vec::new(), value(1), 1);
        store.apply(batch).unwrap();
        assert_eq!(store.get(&table, "after", &[]).unwrap(), Some(value(1)), "the repacked file takes writes");
    }

    /// A table whose rows are rewritten often stores them uncompressed, where any other
    /// compresses a large row; a repack compresses both; each reads alike in either form.
    #[test]
    fn rows_of_a_table_rewritten_often_are_stored_as_they_are_until_a_repack() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let version = store.create_version("m").unwrap();
        let path = store.version_file("m", version).unwrap();
        let often = TableRef::new("m", version, "often").rewritten_often();
        let other = TableRef::new("m", version, "other");
        assert_eq!(often, TableRef::new("m", version, "often"), "the same table, however it is named");
        let row = Columns::from([("text".to_owned(), crate::Value::Text("an abstract that repeats itself ".repeat(40)))]);
        let mut batch = Batch::default();
        batch.put(&often, "p", Vec::new(), row.clone(), 1);
        batch.put(&other, "p", Vec::new(), row.clone(), 1);
        store.apply(batch).unwrap();
        // Whether each table's row is stored compressed, read from the file itself.
        let packed_in = |path: &Path| -> Vec<bool> {
            let db = Database::open(path).unwrap();
            let txn = db.begin_read().unwrap();
            [&often, &other]
                .iter()
                .map(|t| {
                    let rows = txn.open_table(RowTable::new(t.physical_name())).unwrap();
                    let (_, value) = rows.iter().unwrap().next().unwrap().unwrap();
                    event_schema::packed::is_packed(value.value())
                })
                .collect()
        };
        drop(store);
        assert_eq!(packed_in(&path), [false, true], "as they are, and compressed");
        let store = EmbeddedStore::open(dir.path()).unwrap();
        for t in [&often, &other] {
            assert_eq!(store.get(t, "p", &[]).unwrap(), Some(row.clone()), "{}", t.name());
        }
        store.compact().unwrap();
        drop(store);
        assert_eq!(packed_in(&path), [true, true], "a repack compresses both");
        let store = EmbeddedStore::open(dir.path()).unwrap();
        for t in [&often, &other] {
            assert_eq!(store.get(t, "p", &[]).unwrap(), Some(row.clone()), "{} after the repack", t.name());
        }
    }

    /// A compaction killed while it copied a file (`svc compact` stopped, a full disk) leaves
    /// the copy beside it: the next open removes it and keeps the file as it was.
    #[test]
    fn copies_an_interrupted_compaction_left_are_removed_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let (table, path) = {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            let version = store.create_version("m").unwrap();
            let table = TableRef::new("m", version, "t");
            let mut batch = Batch::default();
            batch.put(&table, "p", Vec::new(), Columns::from([("v".to_owned(), crate::Value::Int(1))]), 1);
            store.apply(batch).unwrap();
            (table, store.version_file("m", version).unwrap())
        };
        let leftovers = [path.with_extension("redb.new"), path.with_extension("redb.redb.partial"), path.with_extension("redb.partial")];
        for leftover in &leftovers {
            std::fs::write(leftover, b"half a copy").unwrap();
        }
        let store = EmbeddedStore::open(dir.path()).unwrap();
        for leftover in &leftovers {
            assert!(!leftover.exists(), "{} is left", leftover.display());
        }
        assert_eq!(store.get(&table, "p", &[]).unwrap(), Some(Columns::from([("v".to_owned(), crate::Value::Int(1))])));
    }

    /// The caches hold no more than the store was opened with, however much is read: redb's
    /// page caches (every file's) and the row cache; a version made after the open and the
    /// files opened again by a compaction take the same sizes.
    #[test]
    fn the_caches_stay_within_the_sizes_the_store_was_opened_with() {
        use crate::Store as _;
        let dir = tempfile::tempdir().unwrap();
        let caches = CacheSizes { store_pages: 1 << 20, version_pages: 256 << 10, rows: 128 << 10, ..CacheSizes::default() };
        let store = EmbeddedStore::open_with(dir.path(), caches).unwrap();
        let models = ["m", "n"];
        let value = |i: u64| Columns::from([("v".to_owned(), crate::Value::Text(format!("{i:x}").repeat(100)))]);
        for model in models {
            let version = store.create_version(model).unwrap();
            let table = TableRef::new(model, version, "t");
            for chunk in 0..10u64 {
                let mut batch = Batch::default();
                for i in chunk * 500..(chunk + 1) * 500 {
                    batch.put(&table, &format!("p{i}"), Vec::new(), value(i), i);
                }
                store.apply(batch).unwrap();
            }
        }
        let bound = (caches.store_pages + models.len() * caches.version_pages) as u64;
        let read_all = || {
            for model in models {
                let table = TableRef::new(model, store.versions(model).unwrap().into_keys().next().unwrap(), "t");
                for i in 0..5_000u64 {
                    assert_eq!(store.get(&table, &format!("p{i}"), &[]).unwrap(), Some(value(i)));
                }
            }
            assert!(store.page_cache_bytes() <= bound, "{} bytes of pages, {bound} at most", store.page_cache_bytes());
            assert!(store.cache_bytes() <= caches.rows, "{} bytes of rows, {} at most", store.cache_bytes(), caches.rows);
        };
        read_all();
        // Both fill (the rows read are some 12 MB: with redb's default sizes every page would stay).
        assert!(store.cache_bytes() > caches.rows / 2, "the row cache fills: {} bytes", store.cache_bytes());
        assert!(store.page_cache_bytes() > (models.len() * caches.version_pages / 2) as u64, "{}", store.page_cache_bytes());
        store.compact().unwrap();
        read_all();
    }

    #[test]
    fn compaction_gives_the_space_of_dropped_tables_in_the_store_file_back() {
        // Versions made before version files keep their tables in `store.redb`.
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let size = || std::fs::metadata(dir.path().join(STORE_FILE)).unwrap().len();
        let text = |i: usize| crate::Value::Text(format!("row {i}: ").repeat(200));
        let (old, kept) = (TableRef::new("m", 1, "t"), TableRef::new("k", 1, "t"));
        for chunk in 0..20 {
            let mut batch = Batch::default();
            for i in chunk * 100..(chunk + 1) * 100 {
                batch.put(&old, &format!("p{i}"), Vec::new(), Columns::from([("v".to_owned(), text(i))]), 1);
            }
            batch.put(&kept, &format!("k{chunk}"), Vec::new(), Columns::from([("v".to_owned(), text(chunk))]), 1);
            store.apply(batch).unwrap();
        }
        store.drop_version("m", 1, &["t"]).unwrap();
        let before = size();
        store.compact().unwrap();
        assert!(size() < before / 2, "{} bytes after compaction, {before} before", size());
        for chunk in 0..20 {
            let row = store.get(&kept, &format!("k{chunk}"), &[]).unwrap().expect("a kept row");
            assert_eq!(row.get("v"), Some(&text(chunk)));
        }
    }

    #[test]
    fn each_version_lives_in_a_file_of_its_own_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let file = |v: u32| dir.path().join(VERSIONS_DIR).join(format!("m.v{v}.redb"));
        let (first, second) = {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            let first = store.create_version("m").unwrap();
            let second = store.create_version("m").unwrap();
            for v in [first, second] {
                let mut batch = Batch::default();
                batch.put(&TableRef::new("m", v, "t"), "p", Vec::new(), n(v.into()), 1);
                batch.checkpoint(&consumer_name("m", v), 0, u64::from(v) * 10);
                store.apply(batch).unwrap();
            }
            assert!(file(first).exists() && file(second).exists());
            store.set_active_version("m", second).unwrap();
            store.drop_version("m", first, &["t"]).unwrap();
            assert!(!file(first).exists(), "a dropped version's file is deleted");
            assert_eq!(store.get(&TableRef::new("m", first, "t"), "p", &[]).unwrap(), None);
            (first, second)
        };
        // A version file left behind (a crash between unregistering and deleting) goes on
        // the next open; the live version's rows and checkpoints stay.
        std::fs::copy(file(second), file(first)).unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        assert!(!file(first).exists());
        assert_eq!(store.get(&TableRef::new("m", second, "t"), "p", &[]).unwrap(), Some(n(second.into())));
        assert_eq!(store.checkpoints(&consumer_name("m", second)).unwrap(), BTreeMap::from([(0, u64::from(second) * 10)]));
        assert_eq!(store_files(dir.path()).unwrap(), vec![dir.path().join(STORE_FILE), file(second)]);
        // A version's number is never reused, so its file is new.
        assert_eq!(store.create_version("m").unwrap(), second + 1);
        assert_eq!(store.get(&TableRef::new("m", second + 1, "t"), "p", &[]).unwrap(), None);
    }

    #[test]
    fn a_version_file_copied_to_another_store_is_adopted_as_its_active_version() {
        let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let t = TableRef::new("m", 2, "t");
        let file = {
            let store = EmbeddedStore::open(from.path()).unwrap();
            store.create_version("m").unwrap();
            assert_eq!(store.create_version("m").unwrap(), 2);
            let mut batch = Batch::default();
            batch.put(&t, "p", Vec::new(), n(7), 1);
            batch.checkpoint("m.v2", 0, 42);
            store.apply(batch).unwrap();
            store.set_active_version("m", 2).unwrap();
            store.version_file("m", 2).unwrap()
        };
        let store = EmbeddedStore::open(to.path()).unwrap();
        store.adopt_version("m", 2, &file).unwrap();
        assert_eq!(store.active_version("m").unwrap(), Some(2));
        assert_eq!(store.get(&t, "p", &[]).unwrap(), Some(n(7)));
        assert_eq!(store.checkpoints("m.v2").unwrap(), BTreeMap::from([(0, 42)]));
        let err = store.adopt_version("m", 2, &file).unwrap_err().to_string();
        assert!(err.contains("already has versions of m"), "{err}");
        drop(store);
        let store = EmbeddedStore::open(to.path()).unwrap();
        assert_eq!((store.active_version("m").unwrap(), store.get(&t, "p", &[]).unwrap()), (Some(2), Some(n(7))), "kept on reopening");
        assert_eq!(store.create_version("m").unwrap(), 3, "later versions number on");
    }

    #[test]
    fn a_version_copied_from_a_store_in_use_holds_it_as_it_was_when_frozen() {
        let (from, to, copies) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (t, other) = (TableRef::new("m", 1, "t"), TableRef::new("m", 1, "other"));
        let store = Arc::new(EmbeddedStore::open(from.path()).unwrap());
        store.create_version("m").unwrap();
        store.set_active_version("m", 1).unwrap();
        // More rows than one copy transaction takes, in two tables, and checkpoints.
        let rows = COPY_CHUNK + 7;
        let mut batch = Batch::default();
        for i in 0..rows {
            batch.put(&t, &format!("p{}", i % 3), format!("{i:08}").into_bytes(), n(i as i64), 1);
        }
        batch.put(&other, "q", Vec::new(), n(1), 1);
        batch.checkpoint("m.v1", 0, 42);
        store.apply(batch).unwrap();

        let copy = copies.path().join("m.v1.redb");
        let writer = store.clone();
        let bytes = store
            .copy_version("m", 1, &copy, &mut || {
                // Written once the copy's moment is fixed, from another thread: not in it.
                let (writer, t, other) = (writer.clone(), t.clone(), other.clone());
                std::thread::spawn(move || {
                    let mut batch = Batch::default();
                    batch.put(&other, "q", Vec::new(), n(2), 2);
                    batch.put(&t, "late", Vec::new(), n(3), 2);
                    batch.checkpoint("m.v1", 0, 43);
                    writer.apply(batch).unwrap();
                })
                .join()
                .unwrap();
            })
            .unwrap()
            .unwrap();
        assert_eq!(bytes, std::fs::metadata(&copy).unwrap().len());
        assert!(!copies.path().join("m.v1.redb.partial").exists(), "the partial file is renamed");
        assert_eq!(store.get(&other, "q", &[]).unwrap(), Some(n(2)), "the store went on");

        let adopted = EmbeddedStore::open(to.path()).unwrap();
        adopted.adopt_version("m", 1, &copy).unwrap();
        assert_eq!(adopted.get(&other, "q", &[]).unwrap(), Some(n(1)), "the copy holds the row as it was");
        assert_eq!(adopted.get(&t, "late", &[]).unwrap(), None, "a row written after the moment is not in the copy");
        assert_eq!(adopted.checkpoints("m.v1").unwrap(), BTreeMap::from([(0, 42)]));
        let counted: u64 = (0..3).map(|p| adopted.count(&t, &format!("p{p}")).unwrap()).sum();
        assert_eq!(counted, rows as u64, "every row copied");
        let last = rows - 1;
        assert_eq!(adopted.get(&t, &format!("p{}", last % 3), format!("{last:08}").as_bytes()).unwrap(), Some(n(last as i64)));

        let old = EmbeddedStore::open(copies.path().join("old").as_path()).unwrap();
        let err = old.copy_version("m", 9, &copies.path().join("x.redb"), &mut || {}).unwrap_err().to_string();
        assert!(err.contains("no file of its own"), "{err}");
    }

    #[test]
    fn a_sync_makes_durable_only_the_version_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let (live, rebuilt) = (store.create_version("m").unwrap(), store.create_version("m").unwrap());
        for version in [live, rebuilt] {
            let mut batch = Batch::default();
            batch.put(&TableRef::new("m", version, "t"), "p", Vec::new(), Columns::new(), 1);
            batch.checkpoint(&consumer_name("m", version), 0, 2);
            batch.deferred = true;
            store.apply(batch).unwrap();
        }
        let deferred = |version| store.file(&consumer_name("m", version)).durability.lock().unwrap().deferred_since.is_some();
        assert!(deferred(live) && deferred(rebuilt));
        // A live projection's flush: its own version's batches are made durable, and the
        // other version's (a rebuild's, whose writes may be gigabytes) are left to it.
        store.sync_older_than("m", live, Duration::ZERO).unwrap();
        assert!(!deferred(live) && deferred(rebuilt));
        store.sync("m", rebuilt).unwrap();
        assert!(!deferred(rebuilt));
    }

    #[test]
    fn a_deferred_batch_is_read_at_once_and_kept_after_a_sync() {
        let dir = tempfile::tempdir().unwrap();
        let t = TableRef::new("m", 1, "t");
        let mut columns = Columns::new();
        columns.insert("n".into(), crate::Value::Int(7));
        {
            let store = EmbeddedStore::open(dir.path()).unwrap();
            let mut batch = Batch::default();
            batch.put(&t, "p", Vec::new(), columns.clone(), 1);
            batch.checkpoint("m.v1", 0, 2);
            batch.deferred = true;
            store.apply(batch).unwrap();
            assert_eq!(store.get(&t, "p", &[]).unwrap(), Some(columns.clone()));
            store.sync("m", 1).unwrap();
        }
        let store = EmbeddedStore::open(dir.path()).unwrap();
        assert_eq!(store.get(&t, "p", &[]).unwrap(), Some(columns));
        assert_eq!(store.checkpoints("m.v1").unwrap(), BTreeMap::from([(0, 2)]));
    }

    #[test]
    fn releasing_the_caches_keeps_every_answer_while_reads_and_writes_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(EmbeddedStore::open(dir.path()).unwrap());
        let t = TableRef::new("m", 1, "t");
        let mut batch = Batch::default();
        for i in 0..100 {
            batch.put(&t, &format!("p{i}"), Vec::new(), n(i), 1);
        }
        store.apply(batch).unwrap();
        let keys: Vec<String> = (0..100).map(|i| format!("p{i}")).collect();
        let read_all = |store: &EmbeddedStore| -> Vec<Option<Arc<Columns>>> {
            let keys: Vec<(&TableRef, &str, &[u8])> = keys.iter().map(|k| (&t, k.as_str(), &[][..])).collect();
            store.get_each(&keys).unwrap()
        };
        let before = read_all(&store);
        // Readers and a writer keep going while the caches are released, again and again.
        let busy = std::sync::atomic::AtomicBool::new(true);
        std::thread::scope(|s| {
            s.spawn(|| {
                while busy.load(std::sync::atomic::Ordering::Relaxed) {
                    assert_eq!(read_all(&store), before);
                }
            });
            s.spawn(|| {
                let mut i = 0;
                while busy.load(std::sync::atomic::Ordering::Relaxed) {
                    let mut batch = Batch::default();
                    batch.put(&t, "writes", Vec::new(), n(i), 1);
                    store.apply(batch).unwrap();
                    i += 1;
                }
            });
            for _ in 0..20 {
                store.release_caches().unwrap();
            }
            busy.store(false, std::sync::atomic::Ordering::Relaxed);
        });
        assert_eq!(read_all(&store), before);
        let mut batch = Batch::default();
        batch.put(&t, "after", Vec::new(), n(1), 1);
        store.apply(batch).unwrap();
        assert_eq!(store.get(&t, "after", &[]).unwrap(), Some(n(1)));
    }

    fn n(value: i64) -> Columns {
        Columns::from([("n".to_owned(), crate::Value::Int(value))])
    }

    fn put(store: &EmbeddedStore, rows: &[(&TableRef, &str, i64)]) {
        let mut batch = Batch::default();
        for (t, p, v) in rows {
            batch.put(t, p, Vec::new(), n(*v), 1);
        }
        store.apply(batch).unwrap();
    }

    #[test]
    fn cached_rows_follow_every_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let (t, u) = (TableRef::new("m", 1, "t"), TableRef::new("m", 1, "u"));
        // A cached absence, then a cached row, each replaced by the write after it.
        assert_eq!(store.get(&t, "p", &[]).unwrap(), None);
        put(&store, &[(&t, "p", 1), (&u, "q", 1)]);
        for _ in 0..2 {
            assert_eq!(store.get(&t, "p", &[]).unwrap(), Some(n(1)));
            assert_eq!(store.get_each(&[(&t, "p", &[]), (&u, "q", &[])]).unwrap(), vec![Some(Arc::new(n(1))), Some(Arc::new(n(1)))]);
        }
        put(&store, &[(&t, "p", 2)]);
        assert_eq!(store.get(&t, "p", &[]).unwrap(), Some(n(2)));
        assert_eq!(store.get_each(&[(&t, "p", &[]), (&u, "q", &[])]).unwrap(), vec![Some(Arc::new(n(2))), Some(Arc::new(n(1)))]);
        let mut batch = Batch::default();
        batch.delete(&t, "p", Vec::new(), 2);
        store.apply(batch).unwrap();
        assert_eq!(store.get(&t, "p", &[]).unwrap(), None);
        store.drop_version("m", 1, &["t", "u"]).unwrap();
        assert_eq!(store.get_each(&[(&u, "q", &[])]).unwrap(), vec![None]);
    }

    /// Readers racing a writer never see a row, page or size older than a write already
    /// acknowledged, and never half of a batch.
    #[test]
    fn reads_racing_writes_see_acknowledged_writes_and_whole_batches() {
        use std::sync::atomic::{AtomicI64, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
        let (t, u) = (TableRef::new("m", 1, "t"), TableRef::new("m", 1, "u"));
        put(&store, &[(&t, "p", 0), (&u, "q", 0)]);
        let acknowledged = AtomicI64::new(0);
        let value = |row: Option<&Columns>| row.and_then(|c| c.get("n")).and_then(crate::Value::as_int).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| loop {
                    let floor = acknowledged.load(Ordering::SeqCst);
                    let one = value(store.get(&t, "p", &[]).unwrap().as_ref());
                    assert!(one >= floor, "read {one} after write {floor} was acknowledged");
                    let both = store.get_each(&[(&t, "p", &[]), (&u, "q", &[])]).unwrap();
                    assert_eq!(value(both[0].as_deref()), value(both[1].as_deref()), "a read saw half of a batch");
                    // Pages and sizes of a partition, cached as rows are.
                    let newest = store.scan(&t, "log", &Scan { after: None, limit: 1, reverse: true }).unwrap();
                    let newest = newest.rows.first().map_or(0, |r| value(Some(&r.columns)));
                    assert!(newest >= floor, "paged {newest} after write {floor} was acknowledged");
                    let size = store.count(&t, "log").unwrap() as i64;
                    assert!(size >= floor, "counted {size} rows after write {floor} was acknowledged");
                    if floor == 500 {
                        break;
                    }
                });
            }
            for i in 1..=500 {
                let mut batch = Batch::default();
                batch.put(&t, "p", Vec::new(), n(i), 1);
                batch.put(&u, "q", Vec::new(), n(i), 1);
                batch.put(&t, "log", i.to_be_bytes().to_vec(), n(i), 1);
                store.apply(batch).unwrap();
                acknowledged.store(i, Ordering::SeqCst);
            }
        });
    }
}
