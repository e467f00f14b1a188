//! The conformance suite every [`Store`] implementation must pass. Each backend's tests call
//! [`run_all`] with a factory that makes a fresh, empty store (and a guard that keeps its
//! resources alive for the test).

use crate::{Batch, Columns, Scan, Store, TableRef, Value, VersionState};

/// Makes a fresh store for one test, with a guard to drop after it.
pub type StoreFactory<'a> = dyn Fn() -> (Box<dyn Store>, Box<dyn std::any::Any>) + 'a;

/// Runs every conformance test.
pub fn run_all(make: &StoreFactory<'_>) {
    for test in [put_get_delete, scans_page_in_clustering_order, batch_is_atomic_with_checkpoints, versions_swap_atomically] {
        let (store, _guard) = make();
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
    b.put(&t, "p", b"k".to_vec(), cols(1));
    b.put(&t, "p2", b"k".to_vec(), cols(2));
    b.put(&other, "p", b"k".to_vec(), cols(3));
    store.apply(b).unwrap();
    assert_eq!(store.get(&t, "p", b"k").unwrap(), Some(cols(1)));
    assert_eq!(store.get(&t, "p", b"x").unwrap(), None);
    assert_eq!(store.get(&TableRef::new("m", 9, "t"), "p", b"k").unwrap(), None);
    let keys = vec![("p2".to_owned(), b"k".to_vec()), ("nope".to_owned(), b"k".to_vec()), ("p".to_owned(), b"k".to_vec())];
    assert_eq!(store.get_many(&t, &keys).unwrap(), vec![Some(cols(2)), None, Some(cols(1))]);
    assert_eq!(store.get_many(&TableRef::new("m", 9, "t"), &keys).unwrap(), vec![None, None, None]);
    let mut b = Batch::default();
    b.delete(&t, "p", b"k".to_vec());
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
        b.put(&t, "a", format!("{i:04}").into_bytes(), cols(i));
        b.put(&t, "a\u{1}", format!("{i:04}").into_bytes(), cols(100 + i));
    }
    b.put(&t, "", b"0".to_vec(), cols(-1));
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
    b.put(&t, "p", b"1".to_vec(), cols(1));
    b.checkpoint("m.v1", 0, 11);
    b.checkpoint("m.v1", 3, 7);
    b.delete(&t, "p", b"1".to_vec());
    store.apply(b).unwrap();
    let cps = store.checkpoints("m.v1").unwrap();
    assert_eq!(cps.get(&0), Some(&11));
    assert_eq!(cps.get(&3), Some(&7));
    assert!(store.checkpoints("m.v2").unwrap().is_empty());
    assert_eq!(store.get(&t, "p", b"1").unwrap(), None);
}

/// A new version is built beside the active one and swapped in atomically; dropping a
/// version removes its rows and checkpoints.
pub fn versions_swap_atomically(store: &dyn Store) {
    assert_eq!(store.active_version("m").unwrap(), None);
    let v1 = store.create_version("m").unwrap();
    store.set_active_version("m", v1).unwrap();
    let v2 = store.create_version("m").unwrap();
    assert_eq!(v2, v1 + 1);
    assert_eq!(store.active_version("m").unwrap(), Some(v1));
    let t2 = TableRef::new("m", v2, "t");
    let mut b = Batch::default();
    b.put(&t2, "p", b"k".to_vec(), cols(5));
    b.checkpoint(&crate::consumer_name("m", v2), 0, 3);
    store.apply(b).unwrap();
    store.set_active_version("m", v2).unwrap();
    assert_eq!(store.active_version("m").unwrap(), Some(v2));
    let versions = store.versions("m").unwrap();
    assert_eq!(versions[&v1], VersionState::Retired);
    assert_eq!(versions[&v2], VersionState::Active);
    store.drop_version("m", v2, &["t"]).unwrap();
    assert_eq!(store.get(&t2, "p", b"k").unwrap(), None);
    assert!(store.checkpoints(&crate::consumer_name("m", v2)).unwrap().is_empty());
    assert!(store.set_active_version("m", 99).is_err());
}
