//! The conformance suite every [`Store`] implementation must pass: one public function per
//! case, and [`store_test_suite!`](crate::store_test_suite) to instantiate them for a
//! backend as one `#[test]` each, in a module named after the backend. So
//! `cargo test put_get_delete` runs one case on every backend, and a failure names its
//! backend (`embedded::put_get_delete`).
//!
//! ```ignore
//! store::store_test_suite!(embedded, {
//!     let dir = tempfile::tempdir().unwrap();
//!     (Box::new(EmbeddedStore::open(dir.path()).unwrap()) as Box<dyn Store>, dir)
//! });
//! ```

use std::sync::Arc;

use crate::{Batch, Columns, Scan, Store, TableRef, Value, VersionState};

/// Instantiates the conformance suite for one backend: `store_test_suite!(name, make)`
/// defines `mod name` with one `#[test]` per case of every store; `store_test_suite!(name,
/// make, [case, …])` only the cases named (a test server that lacks a feature). `make` is
/// an expression evaluated afresh for each test, in the module's scope (it sees the items of
/// the module that invokes the macro), giving `(Box<dyn Store>, guard)`: a fresh, empty
/// store and what keeps its resources alive until the test ends.
#[macro_export]
macro_rules! store_test_suite {
    ($backend:ident, $make:expr) => {
        $crate::store_test_suite!(
            $backend,
            $make,
            [
                put_get_delete,
                scans_page_in_clustering_order,
                batch_is_atomic_with_checkpoints,
                versions_swap_atomically,
                dropping_a_version_removes_it,
                an_abandoned_version_is_retired,
                later_ops_on_a_row_win,
            ]
        );
    };
    ($backend:ident, $make:expr, [$($case:ident),* $(,)?]) => {
        mod $backend {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $case() {
                    let (store, _guard) = $make;
                    let store: Box<dyn $crate::Store> = store;
                    $crate::test_suite::$case(store.as_ref());
                }
            )*
        }
    };
}

/// A conformance case.
pub type Test = fn(&dyn Store);

/// Every store's cases, by name (what [`store_test_suite!`](crate::store_test_suite)
/// instantiates), for runners outside `cargo test` (`examples/scylla_conformance.rs`).
pub const ALL: &[(&str, Test)] = &[
    ("put_get_delete", put_get_delete),
    ("scans_page_in_clustering_order", scans_page_in_clustering_order),
    ("batch_is_atomic_with_checkpoints", batch_is_atomic_with_checkpoints),
    ("versions_swap_atomically", versions_swap_atomically),
    ("dropping_a_version_removes_it", dropping_a_version_removes_it),
    ("an_abandoned_version_is_retired", an_abandoned_version_is_retired),
    ("later_ops_on_a_row_win", later_ops_on_a_row_win),
];

/// The cases for stores that are not atomic across partitions and order writes by log
/// position instead (ScyllaDB): an older position never overwrites a newer row.
pub const BY_POSITION: &[(&str, Test)] = &[("older_positions_never_overwrite", older_positions_never_overwrite)];

/// Runs `tests`, each on a fresh store from `make` (dropped with its guard after the test).
pub fn run(make: &dyn Fn() -> (Box<dyn Store>, Box<dyn std::any::Any>), tests: &[(&str, Test)]) {
    for (name, test) in tests {
        let (store, _guard) = make();
        eprintln!("store conformance: {name}");
        test(store.as_ref());
    }
}

fn cols(n: i64) -> Columns {
    let mut c = Columns::new();
    c.insert("n".into(), Value::Int(n));
    c.insert("s".into(), Value::Text(format!("row {n}")));
    c.insert("b".into(), Value::Bool(n % 2 == 0));
    c.insert("none".into(), Value::Null);
    c
}

/// A put is read back; a delete removes it; other partitions and tables are untouched.
pub fn put_get_delete(store: &dyn Store) {
    let t = TableRef::new("m", 1, "t");
    let other = TableRef::new("m", 1, "u");
    let mut b = Batch::default();
    b.put(&t, "p", b"k".to_vec(), cols(1), 1);
    b.put(&t, "p2", b"k".to_vec(), cols(2), 1);
    b.put(&other, "p", b"k".to_vec(), cols(3), 1);
    store.apply(b).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), Some(cols(1)));
    assert_eq!(store.get(&t, "p", b"x").unwrap(), None);
    assert_eq!(store.get(&TableRef::new("m", 9, "t"), "p", b"k").unwrap(), None);
    let keys = vec![("p2".to_owned(), b"k".to_vec()), ("nope".to_owned(), b"k".to_vec()), ("p".to_owned(), b"k".to_vec())];
    assert_eq!(store.get_many(&t, &keys).unwrap(), vec![Some(cols(2)), None, Some(cols(1))]);
    assert_eq!(store.get_many(&TableRef::new("m", 9, "t"), &keys).unwrap(), vec![None, None, None]);
    let missing = TableRef::new("m", 9, "t");
    let each: [(&TableRef, &str, &[u8]); 4] = [(&other, "p", b"k"), (&t, "p", b"k"), (&missing, "p", b"k"), (&t, "p", b"x")];
    assert_eq!(store.get_each(&each).unwrap(), vec![Some(Arc::new(cols(3))), Some(Arc::new(cols(1))), None, None]);
    let mut b = Batch::default();
    b.delete(&t, "p", b"k".to_vec(), 2);
    store.apply(b).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), None);
    assert_eq!(store.get(&t, "p2", b"k").unwrap(), Some(cols(2)));
    assert_eq!(store.get(&other, "p", b"k").unwrap(), Some(cols(3)));
}

/// Scans return one partition's rows in clustering order, forwards and backwards, in pages
/// that resume exactly after the previous page.
pub fn scans_page_in_clustering_order(store: &dyn Store) {
    let t = TableRef::new("m", 1, "t");
    let mut b = Batch::default();
    for i in 0..25i64 {
        b.put(&t, "a", format!("{i:04}").into_bytes(), cols(i), 1);
        b.put(&t, "a\u{1}", format!("{i:04}").into_bytes(), cols(100 + i), 1);
    }
    b.put(&t, "", b"0".to_vec(), cols(-1), 1);
    store.apply(b).unwrap();
    for reverse in [false, true] {
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = store.scan(&t, "a", &Scan { after: after.clone(), limit: 10, reverse }).unwrap();
            seen.extend(page.rows.iter().map(|r| r.columns["n"].as_int().unwrap()));
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let mut expected: Vec<i64> = (0..25).collect();
        if reverse {
            expected.reverse();
        }
        assert_eq!(seen, expected);
    }
    assert!(store.scan(&t, "zz", &Scan::first(5)).unwrap().rows.is_empty());
    assert_eq!(store.count(&t, "a").unwrap(), 25);
    assert_eq!(store.count(&t, "a\u{1}").unwrap(), 25);
    assert_eq!(store.count(&t, "zz").unwrap(), 0);
    assert_eq!(store.count(&TableRef::new("m", 7, "t"), "a").unwrap(), 0);
}

/// Rows and checkpoints of one batch land together.
pub fn batch_is_atomic_with_checkpoints(store: &dyn Store) {
    let t = TableRef::new("m", 1, "t");
    let mut b = Batch::default();
    b.put(&t, "p", b"0".to_vec(), cols(0), 1);
    store.apply(b).unwrap();
    let mut b = Batch::default();
    b.put(&t, "p", b"1".to_vec(), cols(1), 2);
    b.checkpoint("m.v1", 0, 11);
    b.checkpoint("m.v1", 3, 7);
    b.delete(&t, "p", b"1".to_vec(), 3);
    b.put(&t, "p", b"2".to_vec(), cols(2), 3);
    store.apply(b).unwrap();
    let cps = store.checkpoints("m.v1").unwrap();
    assert_eq!(cps.get(&0), Some(&11));
    assert_eq!(cps.get(&3), Some(&7));
    assert!(store.checkpoints("m.v2").unwrap().is_empty());
    assert_eq!(store.get(&t, "p", b"1").unwrap(), None);
    assert_eq!(store.get(&t, "p", b"2").unwrap(), Some(cols(2)));
    let mut b = Batch::default();
    b.checkpoint("m.v1", 0, 12);
    store.apply(b).unwrap();
    assert_eq!(store.checkpoints("m.v1").unwrap().get(&0), Some(&12));
}

/// A new version is built beside the active one and swapped in atomically.
pub fn versions_swap_atomically(store: &dyn Store) {
    assert_eq!(store.active_version("m").unwrap(), None);
    let v1 = store.create_version("m").unwrap();
    store.set_active_version("m", v1).unwrap();
    let v2 = store.create_version("m").unwrap();
    assert_eq!(v2, v1 + 1);
    assert_eq!(store.active_version("m").unwrap(), Some(v1));
    let t2 = TableRef::new("m", v2, "t");
    let mut b = Batch::default();
    b.put(&t2, "p", b"k".to_vec(), cols(5), 1);
    b.checkpoint(&crate::consumer_name("m", v2), 0, 3);
    store.apply(b).unwrap();
    store.set_active_version("m", v2).unwrap();
    assert_eq!(store.active_version("m").unwrap(), Some(v2));
    let versions = store.versions("m").unwrap();
    assert_eq!(versions[&v1], VersionState::Retired);
    assert_eq!(versions[&v2], VersionState::Active);
    assert_eq!(store.get(&t2, "p", b"k").unwrap(), Some(cols(5)));
    assert!(store.set_active_version("m", 99).is_err());
}

/// Dropping a version removes its rows and checkpoints, and its number is never reused.
pub fn dropping_a_version_removes_it(store: &dyn Store) {
    let v1 = store.create_version("m").unwrap();
    store.set_active_version("m", v1).unwrap();
    let v2 = store.create_version("m").unwrap();
    let t2 = TableRef::new("m", v2, "t");
    let mut b = Batch::default();
    b.put(&t2, "p", b"k".to_vec(), cols(5), 1);
    b.checkpoint(&crate::consumer_name("m", v2), 0, 3);
    store.apply(b).unwrap();
    store.drop_version("m", v2, &["t"]).unwrap();
    assert_eq!(store.get(&t2, "p", b"k").unwrap(), None);
    assert!(store.checkpoints(&crate::consumer_name("m", v2)).unwrap().is_empty());
    assert!(!store.versions("m").unwrap().contains_key(&v2));
    assert_eq!(store.active_version("m").unwrap(), Some(v1));
    assert!(store.create_version("m").unwrap() > v2);
}

/// A version being built that a stopped rebuild abandons is retired, and the active one
/// stays; only a version being built can be retired.
pub fn an_abandoned_version_is_retired(store: &dyn Store) {
    let v1 = store.create_version("m").unwrap();
    store.set_active_version("m", v1).unwrap();
    let v2 = store.create_version("m").unwrap();
    let mut b = Batch::default();
    b.put(&TableRef::new("m", v2, "t"), "p", b"k".to_vec(), cols(5), 1);
    b.checkpoint(&crate::consumer_name("m", v2), 0, 3);
    store.apply(b).unwrap();
    store.retire_version("m", v2).unwrap();
    let versions = store.versions("m").unwrap();
    assert_eq!((versions[&v1], versions[&v2]), (VersionState::Active, VersionState::Retired));
    assert_eq!(store.active_version("m").unwrap(), Some(v1));
    assert!(matches!(store.retire_version("m", v1), Err(crate::StoreError::NotBuilding { .. })));
    assert!(matches!(store.retire_version("m", v2), Err(crate::StoreError::NotBuilding { .. })));
    assert!(matches!(store.retire_version("m", 99), Err(crate::StoreError::UnknownVersion { .. })));
    assert_eq!(store.get(&TableRef::new("m", v2, "t"), "p", b"k").unwrap(), Some(cols(5)), "kept until dropped");
    store.drop_version("m", v2, &["t"]).unwrap();
    assert!(!store.versions("m").unwrap().contains_key(&v2));
    assert_eq!(store.active_version("m").unwrap(), Some(v1));
}

/// Within one batch, the last op on a row wins, a delete followed by a put of the same row
/// at the same position included.
pub fn later_ops_on_a_row_win(store: &dyn Store) {
    let t = TableRef::new("m", 1, "t");
    let mut b = Batch::default();
    b.put(&t, "p", b"k".to_vec(), cols(1), 5);
    b.delete(&t, "p", b"k".to_vec(), 5);
    b.put(&t, "p", b"k".to_vec(), cols(2), 5);
    b.put(&t, "p", b"gone".to_vec(), cols(3), 5);
    b.barrier();
    b.delete(&t, "p", b"gone".to_vec(), 6);
    store.apply(b).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), Some(cols(2)));
    assert_eq!(store.get(&t, "p", b"gone").unwrap(), None);
    // On a table nothing was written to yet, a row put and deleted in one batch.
    let fresh = TableRef::new("m", 1, "fresh");
    let mut b = Batch::default();
    b.put(&fresh, "p", b"k".to_vec(), cols(1), 7);
    b.delete(&fresh, "p", b"k".to_vec(), 8);
    store.apply(b).unwrap();
    assert_eq!(store.get(&fresh, "p", b"k").unwrap(), None);
}

/// A write or delete from an older log position than the row's never overwrites it, and
/// applying the same batch twice gives the same rows as once.
pub fn older_positions_never_overwrite(store: &dyn Store) {
    let t = TableRef::new("m", 1, "t");
    let batch = |n: i64, position: u64| {
        let mut b = Batch::default();
        b.put(&t, "p", b"k".to_vec(), cols(n), position);
        b
    };
    store.apply(batch(2, 20)).unwrap();
    store.apply(batch(1, 10)).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), Some(cols(2)));
    let mut old_delete = Batch::default();
    old_delete.delete(&t, "p", b"k".to_vec(), 15);
    store.apply(old_delete).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), Some(cols(2)));
    let mut delete = Batch::default();
    delete.delete(&t, "p", b"k".to_vec(), 30);
    store.apply(delete.clone()).unwrap();
    store.apply(batch(2, 20)).unwrap();
    store.apply(delete).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), None);
    store.apply(batch(3, 40)).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), Some(cols(3)));
}
