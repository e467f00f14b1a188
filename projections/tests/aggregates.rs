//! Rows written by the events of several keys (counts, rankings, sizes: a model's
//! aggregates) stay right on a store that orders writes by their stamp, as ScyllaDB does.
//!
//! ScyllaDB keeps, of two writes to a row, the one with the higher write timestamp. Rows
//! written by one key's events carry that event's log position, ordered within its
//! partition; a row written by events of several keys would see positions of several
//! partitions, which are not ordered, so the models declare such tables
//! (`ModelSpec::aggregates`) and their writes carry the projector's clock instead. The CQL
//! test server ignores timestamps, so the store here is the embedded one behind a filter
//! that keeps what ScyllaDB would: the seeded scholarly layer built through it must read
//! the same as built on the embedded store alone, and every row written from several
//! partitions must be in a declared table.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use eventlog::EmbeddedLog;
use projections::catalog::{self, Context, Mode};
use projections::catch_up;
use store::{Batch, Columns, EmbeddedStore, Op, Page, Scan, Store, StoreError, TableRef, VersionState};

type RowKey = (TableRef, String, Vec<u8>);

/// The embedded store behind ScyllaDB's rule for writes: one whose stamp is below the row's
/// last is dropped. It also notes which log partitions (an ordinal's low 8 bits) wrote each
/// row with a position.
struct ByStamp {
    inner: EmbeddedStore,
    stamps: Mutex<HashMap<RowKey, u64>>,
    writers: Mutex<HashMap<RowKey, BTreeSet<u64>>>,
}

/// Stamps at or above this are the projector's clock (µs since 1970, from 2001 on), not
/// log positions.
const CLOCK: u64 = 1_000_000_000_000_000;

impl Store for ByStamp {
    fn get(&self, t: &TableRef, p: &str, c: &[u8]) -> Result<Option<Columns>, StoreError> {
        self.inner.get(t, p, c)
    }
    fn get_many(&self, t: &TableRef, keys: &[(String, Vec<u8>)]) -> Result<Vec<Option<Columns>>, StoreError> {
        self.inner.get_many(t, keys)
    }
    fn count(&self, t: &TableRef, p: &str) -> Result<u64, StoreError> {
        self.inner.count(t, p)
    }
    fn scan(&self, t: &TableRef, p: &str, s: &Scan) -> Result<Page, StoreError> {
        self.inner.scan(t, p, s)
    }
    fn apply(&self, batch: Batch) -> Result<(), StoreError> {
        let (mut stamps, mut writers) = (self.stamps.lock().unwrap(), self.writers.lock().unwrap());
        let mut kept = Batch::default();
        for op in batch.ops {
            if let Op::Put { table, partition, clustering, position, .. } | Op::Delete { table, partition, clustering, position } = &op {
                let key = (table.clone(), partition.clone(), clustering.clone());
                if *position < CLOCK {
                    writers.entry(key.clone()).or_default().insert(position & 0xff);
                }
                let last = stamps.entry(key).or_insert(0);
                if *position < *last {
                    continue;
                }
                *last = *position;
            }
            kept.ops.push(op);
        }
        kept.deferred = batch.deferred;
        self.inner.apply(kept)
    }
    fn checkpoints(&self, consumer: &str) -> Result<BTreeMap<u32, u64>, StoreError> {
        self.inner.checkpoints(consumer)
    }
    fn active_version(&self, model: &str) -> Result<Option<u32>, StoreError> {
        self.inner.active_version(model)
    }
    fn versions(&self, model: &str) -> Result<BTreeMap<u32, VersionState>, StoreError> {
        self.inner.versions(model)
    }
    fn create_version(&self, model: &str) -> Result<u32, StoreError> {
        self.inner.create_version(model)
    }
    fn set_active_version(&self, model: &str, version: u32) -> Result<(), StoreError> {
        self.inner.set_active_version(model, version)
    }
    fn retire_version(&self, model: &str, version: u32) -> Result<(), StoreError> {
        self.inner.retire_version(model, version)
    }
    fn drop_version(&self, model: &str, version: u32, tables: &[&str]) -> Result<(), StoreError> {
        self.inner.drop_version(model, version, tables)
    }
    fn check(&self) -> Result<(), StoreError> {
        self.inner.check()
    }
    fn backend(&self) -> &'static str {
        "embedded, by stamp"
    }
}

/// Builds every shared model from `log` into `store`, in batches of `batch` events.
fn build(log: &EmbeddedLog, store: Arc<dyn Store>, search: &std::path::Path, batch: usize) {
    let ctx = Context::single(store, search);
    for model in catalog::SHARED_MODELS.iter() {
        let v = catalog::ensure_active(&ctx, model).unwrap();
        let mut p = catalog::open(&ctx, model, v, Mode::Live).unwrap();
        catch_up(log, p.as_mut(), batch).unwrap();
    }
}

fn all_rows(store: &dyn Store, table: &TableRef, partition: &str) -> Vec<(Vec<u8>, Columns)> {
    let mut rows = Vec::new();
    let mut scan = Scan::first(1_000);
    loop {
        let page = store.scan(table, partition, &scan).unwrap();
        rows.extend(page.rows.into_iter().map(|r| (r.clustering, r.columns)));
        match page.next {
            Some(next) => scan.after = Some(next),
            None => return rows,
        }
    }
}

#[test]
fn aggregates_stay_right_where_the_latest_stamp_wins() {
    let dir = tempfile::tempdir().unwrap();
    let log = EmbeddedLog::open(&dir.path().join("log"), 4).unwrap();
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/arxiv-sample-3k.jsonl.gz");
    let options = ingest::seed::SeedOptions {
        social: true,
        imports: true,
        taxonomy: Some("did:plc:graph".into()),
        limit: Some(400),
        ..Default::default()
    };
    ingest::seed::seed_file(&sample, &log, &options, &mut |_| {}).unwrap();

    let plain = Arc::new(EmbeddedStore::open(&dir.path().join("plain")).unwrap());
    // Batches of 7 events, on both: the partitions' events interleave otherwise than they
    // were appended (and the same batches give the same order where order depends on them:
    // a set's members are kept in the order they joined).
    build(&log, plain.clone(), &dir.path().join("plain-search"), 7);
    let by_stamp = Arc::new(ByStamp {
        inner: EmbeddedStore::open(&dir.path().join("by-stamp")).unwrap(),
        stamps: Default::default(),
        writers: Default::default(),
    });
    build(&log, by_stamp.clone(), &dir.path().join("by-stamp-search"), 7);

    let writers = by_stamp.writers.lock().unwrap();
    let mut undeclared: BTreeMap<String, usize> = BTreeMap::new();
    for (table, _, _) in writers.iter().filter(|(_, partitions)| partitions.len() > 1).map(|(key, _)| key) {
        if !catalog::aggregates(table.model()).contains(&table.name()) {
            *undeclared.entry(format!("{}.{}", table.model(), table.name())).or_default() += 1;
        }
    }
    assert!(undeclared.is_empty(), "rows written from several log partitions in tables not declared aggregates: {undeclared:?}");

    let partitions: BTreeSet<(TableRef, String)> = by_stamp.stamps.lock().unwrap().keys().map(|(t, p, _)| (t.clone(), p.clone())).collect();
    let mut differing = BTreeMap::<String, usize>::new();
    for (table, partition) in &partitions {
        if all_rows(plain.as_ref(), table, partition) != all_rows(by_stamp.as_ref(), table, partition) {
            *differing.entry(format!("{}.{}", table.model(), table.name())).or_default() += 1;
        }
    }
    assert!(differing.is_empty(), "partitions that read otherwise where the latest stamp wins: {differing:?}");
}
