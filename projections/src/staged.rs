//! Writes staged for one batch, readable before they are applied.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use rustc_hash::FxBuildHasher;
use store::{Batch, Columns, Op, Scan, Store, StoreError, TableRef};

use crate::Checkpoints;

type Key = (TableRef, String, Vec<u8>);

/// A [`Batch`] under construction that answers reads with its own pending writes first.
///
/// Rows of the tables it reads from are the ones the projection makes decisions on (the
/// record's `rev`, the listing keys it owns). They are put behind a [`Batch::barrier`], after
/// the rows derived from them: on a store without atomic batches, a crash mid-batch then
/// leaves decision rows only where everything they imply has landed, and re-applying the
/// batch from the old checkpoint rewrites the same rows.
///
/// Only rows of tables read from are remembered for reads (the listing rows, most of a
/// batch, are written and never read back); a table's first read looks through the writes
/// staged before it. A row of such a table written again in the batch (a counter bumped by
/// each of its events) is written once, with its last value: the later write replaces the
/// earlier one in place.
#[derive(Default)]
pub(crate) struct Staged {
    derived: Batch,
    decisions: Batch,
    read_tables: HashSet<TableRef, FxBuildHasher>,
    cache: HashMap<Key, Cached, FxBuildHasher>,
}

/// A row of a table read from, as the batch sees it.
struct Cached {
    row: Option<Columns>,
    /// Where in `decisions` the batch writes it, once it has.
    op: Option<usize>,
}

impl Cached {
    fn read(row: Option<Columns>) -> Cached {
        Cached { row, op: None }
    }
}

impl Staged {
    /// Reads the rows of `partitions` (empty clustering key) of `table` in one store read,
    /// so that the batch's later [`Staged::get`]s of them cost no store round trip. Rows the
    /// batch already wrote keep their staged value.
    pub fn prefetch(&mut self, store: &dyn Store, table: &TableRef, mut partitions: Vec<String>) -> Result<(), StoreError> {
        self.start_reading(table);
        partitions.sort_unstable();
        partitions.dedup();
        let keys: Vec<(String, Vec<u8>)> = partitions.into_iter().map(|p| (p, Vec::new())).collect();
        let rows = store.get_many(table, &keys)?;
        for ((partition, clustering), row) in keys.into_iter().zip(rows) {
            self.cache.entry((table.clone(), partition, clustering)).or_insert(Cached::read(row));
        }
        Ok(())
    }

    pub fn get(&mut self, store: &dyn Store, table: &TableRef, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, StoreError> {
        self.start_reading(table);
        let key = (table.clone(), partition.to_owned(), clustering.to_vec());
        if let Some(v) = self.cache.get(&key) {
            return Ok(v.row.clone());
        }
        let v = store.get(table, partition, clustering)?;
        self.cache.insert(key, Cached::read(v.clone()));
        Ok(v)
    }

    /// Treats `table` as read from (its writes are decision rows, see the type's docs), for a
    /// projection that holds its rows from an earlier batch instead of reading them.
    pub fn read_from(&mut self, table: &TableRef) {
        self.start_reading(table);
    }

    /// Marks `table` as read from; on its first read, remembers the writes staged to it so far.
    fn start_reading(&mut self, table: &TableRef) {
        if self.read_tables.contains(table) {
            return;
        }
        self.read_tables.insert(table.clone());
        for op in &self.derived.ops {
            match op {
                Op::Put { table: t, partition, clustering, columns, .. } if t == table => {
                    self.cache.insert((t.clone(), partition.clone(), clustering.clone()), Cached::read(Some(columns.clone())));
                }
                Op::Delete { table: t, partition, clustering, .. } if t == table => {
                    self.cache.insert((t.clone(), partition.clone(), clustering.clone()), Cached::read(None));
                }
                _ => {}
            }
        }
    }

    pub fn put(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, columns: Columns, position: u64) {
        if self.read_tables.contains(table) {
            let key = (table.clone(), partition.to_owned(), clustering.clone());
            let row = Some(columns.clone());
            self.decide(key, row, Op::Put { table: table.clone(), partition: partition.to_owned(), clustering, columns, position });
        } else {
            self.derived.put(table, partition, clustering, columns, position);
        }
    }

    pub fn delete(&mut self, table: &TableRef, partition: &str, clustering: Vec<u8>, position: u64) {
        if self.read_tables.contains(table) {
            let key = (table.clone(), partition.to_owned(), clustering.clone());
            self.decide(key, None, Op::Delete { table: table.clone(), partition: partition.to_owned(), clustering, position });
        } else {
            self.derived.delete(table, partition, clustering, position);
        }
    }

    /// Stages `op`, the write of the row `key` of a table read from (its new value `row`):
    /// in place of the batch's earlier write of the row, if there is one.
    fn decide(&mut self, key: Key, row: Option<Columns>, op: Op) {
        let cached = self.cache.entry(key).or_insert(Cached { row: None, op: None });
        cached.row = row;
        match cached.op {
            Some(i) => self.decisions.ops[i] = op,
            None => {
                cached.op = Some(self.decisions.ops.len());
                self.decisions.ops.push(op);
            }
        }
    }

    /// The rows put (not deleted since) in this batch in one partition of a table.
    pub fn staged_in(&self, table: &TableRef, partition: &str) -> Vec<Columns> {
        let mut rows: HashMap<&[u8], Option<&Columns>> = HashMap::new();
        for op in self.derived.ops.iter().chain(&self.decisions.ops) {
            match op {
                Op::Put { table: t, partition: p, clustering, columns, .. } if t == table && p == partition => {
                    rows.insert(clustering, Some(columns));
                }
                Op::Delete { table: t, partition: p, clustering, .. } if t == table && p == partition => {
                    rows.insert(clustering, None);
                }
                _ => {}
            }
        }
        rows.into_values().flatten().cloned().collect()
    }

    /// The rows of one partition whose clustering key follows `after` (all of them for
    /// `None`), in clustering order: the store's, with this batch's writes over them.
    pub fn rows_in(
        &self,
        store: &dyn Store,
        table: &TableRef,
        partition: &str,
        after: Option<&[u8]>,
    ) -> Result<BTreeMap<Vec<u8>, Columns>, StoreError> {
        let mut rows = BTreeMap::new();
        let mut scan = Scan { after: after.map(<[u8]>::to_vec), limit: 1000, reverse: false };
        loop {
            let page = store.scan(table, partition, &scan)?;
            rows.extend(page.rows.into_iter().map(|r| (r.clustering, r.columns)));
            match page.next {
                Some(next) => scan.after = Some(next),
                None => break,
            }
        }
        let follows = |c: &[u8]| after.is_none_or(|a| c > a);
        for op in self.derived.ops.iter().chain(&self.decisions.ops) {
            match op {
                Op::Put { table: t, partition: p, clustering, columns, .. } if t == table && p == partition && follows(clustering) => {
                    rows.insert(clustering.clone(), columns.clone());
                }
                Op::Delete { table: t, partition: p, clustering, .. } if t == table && p == partition => {
                    rows.remove(clustering);
                }
                _ => {}
            }
        }
        Ok(rows)
    }

    /// The URI of every row of one partition of a listing table as `uri_of` reads it from
    /// the row's key and columns, with this batch's writes over the store's (to find an
    /// account's records when it is deleted).
    pub fn listed_uris(
        &self,
        store: &dyn Store,
        table: &TableRef,
        partition: &str,
        uri_of: fn(&[u8], &Columns) -> Option<String>,
    ) -> Result<BTreeSet<String>, StoreError> {
        let rows = self.rows_in(store, table, partition, None)?;
        Ok(rows.iter().filter_map(|(clustering, c)| uri_of(clustering, c)).collect())
    }

    /// Writes the batch with the checkpoints that follow it, atomically where the store can;
    /// Deferred ([`store::Batch::deferred`]): the log gives the batch again if a crash loses
    /// it, and [`settle`] bounds how long it stays so.
    ///
    /// The writes to the model's aggregates ([`crate::catalog::ModelSpec::aggregates`]) are
    /// stamped with [`clock`] instead of their events' log positions: a row written by the
    /// events of several keys sees positions of several partitions, which a store that keeps
    /// the write with the highest stamp (ScyllaDB) would not keep in the order applied.
    pub fn commit(self, store: &dyn Store, consumer: &str, next: &Checkpoints) -> Result<(), StoreError> {
        let mut writes = self.into_batch();
        stamp_aggregates(&mut writes);
        for (partition, offset) in next {
            writes.checkpoint(consumer, *partition, *offset);
        }
        writes.deferred = true;
        store.apply(writes)
    }

    /// The derived rows, a barrier, then the decision rows.
    pub fn into_batch(self) -> Batch {
        let mut batch = self.derived;
        if !self.decisions.is_empty() {
            batch.barrier();
            batch.ops.extend(self.decisions.ops);
        }
        batch
    }
}

/// Stamps the writes of `batch` to aggregates with the clock, in batch order.
fn stamp_aggregates(batch: &mut Batch) {
    for op in &mut batch.ops {
        let (Op::Put { table, position, .. } | Op::Delete { table, position, .. }) = op else { continue };
        if crate::catalog::aggregates(table.model()).contains(&table.name()) {
            *position = clock();
        }
    }
}

/// The projector's write clock: microseconds since 1970, and past every stamp it gave
/// before in this process (a hybrid clock), so the writes of one projector are stamped in
/// the order it makes them. Far above any log position (`offset << 8 | partition` stays
/// below 10^15 for logs of fewer than 4 · 10^12 events a partition), so a clock stamp
/// supersedes a position stamp. The projector's host clock must not step back between runs
/// (ScyllaDB's usual requirement of client timestamps).
fn clock() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
    let previous = LAST.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| Some(now.max(last + 1))).unwrap_or_default();
    now.max(previous + 1)
}

/// What every model built from [`Staged`] batches holds: where it writes, which version,
/// and whether durability waits for the end of a rebuild.
pub(crate) struct ModelBase {
    pub(crate) name: &'static str,
    pub(crate) store: std::sync::Arc<dyn Store>,
    pub(crate) version: u32,
    /// Rebuild mode: the flush makes every batch durable ([`settle`]).
    pub(crate) rebuild: bool,
}

impl ModelBase {
    pub(crate) fn new(name: &'static str, store: std::sync::Arc<dyn Store>, version: u32, mode: crate::catalog::Mode) -> ModelBase {
        ModelBase { name, store, version, rebuild: mode == crate::catalog::Mode::Rebuild }
    }
}

/// How long a live model's batches may stay deferred once its worker is idle: what a crash
/// makes it apply again from the log. A durable commit per batch was an `fsync` per model
/// for every few events under a steady stream of procedures (docs/performance.md,
/// "recordView through the journal").
pub(crate) const LIVE_DEFERRAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Makes a model's batches durable when its worker flushes (it has caught up): all of them
/// after a rebuild, a live model's once the oldest deferred one is [`LIVE_DEFERRAL`] old.
/// Under a steady stream the store makes a batch durable every 10 s by itself.
/// Only `model`'s `version` is made durable: the other versions' files are their own
/// projections' to settle.
pub(crate) fn settle(store: &dyn Store, model: &str, version: u32, rebuild: bool) -> Result<(), StoreError> {
    if rebuild {
        store.sync(model, version)
    } else {
        store.sync_older_than(model, version, LIVE_DEFERRAL)
    }
}

/// A read model whose events each stage rows: [`StagedProjection`] runs it, committing a
/// batch's rows with its checkpoints in one write (principle 3). A model says only what an
/// event changes.
pub(crate) trait StagedModel: Send {
    /// Where and what it builds.
    fn base(&self) -> &ModelBase;

    /// Stages what `event` changes.
    fn stage(&mut self, st: &mut Staged, event: &event_schema::Envelope) -> Result<(), crate::ProjectionError>;
}

/// The [`crate::Projection`] of a [`StagedModel`].
pub(crate) struct StagedProjection<M>(pub(crate) M);

impl<M: StagedModel> crate::Projection for StagedProjection<M> {
    fn model(&self) -> &'static str {
        self.0.base().name
    }

    fn version(&self) -> u32 {
        self.0.base().version
    }

    fn checkpoints(&self) -> Result<Checkpoints, crate::ProjectionError> {
        let base = self.0.base();
        Ok(base.store.checkpoints(&store::consumer_name(base.name, base.version))?)
    }

    fn apply_batch(&mut self, batch: &crate::EventBatch) -> Result<(), crate::ProjectionError> {
        let mut st = Staged::default();
        for event in batch.events() {
            self.0.stage(&mut st, event)?;
        }
        let base = self.0.base();
        st.commit(base.store.as_ref(), &store::consumer_name(base.name, base.version), batch.next())?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), crate::ProjectionError> {
        let base = self.0.base();
        crate::staged::settle(base.store.as_ref(), base.name, base.version, base.rebuild)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::{EmbeddedStore, Value};

    fn row(n: i64) -> Columns {
        [("n".to_owned(), Value::Int(n))].into()
    }

    #[test]
    fn the_clock_stamps_in_order_above_every_log_position() {
        let stamps: Vec<u64> = (0..1_000).map(|_| clock()).collect();
        assert!(stamps.windows(2).all(|w| w[0] < w[1]), "the clock gave a stamp twice or went back");
        // (A log of 3.9 · 10^12 events a partition.)
        let highest_position = event_schema::Position { partition: 255, offset: 3_900_000_000_000 }.ordinal();
        assert!(stamps[0] > highest_position);
    }

    #[test]
    fn writes_to_aggregates_are_stamped_by_the_clock_and_others_by_position() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("store")).unwrap();
        let sizes = TableRef::new(crate::attached::MODEL, 1, "sizes");
        let records = TableRef::new(crate::attached::MODEL, 1, "records");
        let before = clock();
        let mut st = Staged::default();
        st.put(&records, "r", Vec::new(), row(1), 7);
        st.get(&store, &sizes, "s", &[]).unwrap();
        st.put(&sizes, "s", Vec::new(), row(1), 8);
        st.delete(&sizes, "t", Vec::new(), 9);
        let mut batch = st.into_batch();
        stamp_aggregates(&mut batch);
        let stamps: Vec<u64> = batch
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::Put { position, .. } | Op::Delete { position, .. } => Some(*position),
                _ => None,
            })
            .collect();
        assert_eq!(stamps[0], 7, "a record keeps its event's position");
        assert!(stamps[1] > before && stamps[2] > stamps[1], "{stamps:?}");
    }

    #[test]
    fn a_row_read_and_written_again_in_a_batch_is_written_once_with_its_last_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(&dir.path().join("store")).unwrap();
        let counters = TableRef::new("m", 1, "counters");
        let listing = TableRef::new("m", 1, "listing");
        let mut st = Staged::default();
        for i in 1..=3 {
            let n = st.get(&store, &counters, "a", &[]).unwrap().map_or(0, |c| c.get("n").and_then(Value::as_int).unwrap());
            st.put(&counters, "a", Vec::new(), row(n + 1), i);
            st.put(&listing, "a", vec![i as u8], row(0), i);
        }
        st.get(&store, &counters, "b", &[]).unwrap();
        st.put(&counters, "b", Vec::new(), row(1), 4);
        st.delete(&counters, "b", Vec::new(), 5);
        let ops = st.into_batch().ops;
        // Three listing rows, the barrier, then each counter once: a's last value, b's delete.
        assert_eq!(ops.len(), 6, "{ops:?}");
        assert!(matches!(&ops[4], Op::Put { partition, columns, position: 3, .. } if partition == "a" && *columns == row(3)));
        assert!(matches!(&ops[5], Op::Delete { partition, position: 5, .. } if partition == "b"));
    }
}
