//! The ScyllaDB store against real CQL servers.
//!
//! The kassandra test server (in-process, in-memory) speaks the CQL protocol but only a
//! subset of the language: no write timestamps, no clustering-key ranges, `ORDER BY`,
//! `LIMIT`, `COUNT` or `DROP TABLE`. The store finds out at connect that it reads no
//! ranges and then reads whole partitions for scans and counts, and empties a table row by
//! row when the server cannot drop it (paths a real ScyllaDB never takes). The conformance
//! tests that need no write timestamps run against it on every `cargo test`; the whole
//! suite runs against a real ScyllaDB with
//! `cargo run -p store --example scylla_conformance -- scylla://HOST:PORT`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};

use kassandra_tester::kassandra::session::KassandraSession;
use kassandra_tester::KassandraTester;
use store::{ScyllaConfig, ScyllaStore, Store};

/// Starts a kassandra server on its own thread for the rest of the test process.
fn kassandra() -> SocketAddr {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _ = runtime.block_on(KassandraTester::new(KassandraSession::new()).in_scope(move |addr| {
            tx.send(addr).unwrap();
            std::future::pending::<Result<(), ()>>()
        }));
    });
    rx.recv().expect("the CQL test server starts")
}

/// The CQL test server of this test process, started on first use.
fn server() -> SocketAddr {
    static SERVER: OnceLock<SocketAddr> = OnceLock::new();
    *SERVER.get_or_init(kassandra)
}

/// A fresh keyspace on the process's CQL test server.
fn fresh() -> (Box<dyn Store>, ()) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let keyspace = format!("svc_test_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let store = ScyllaStore::connect(&ScyllaConfig::from_url(&format!("scylla://{}/{keyspace}", server())).unwrap()).unwrap();
    (Box::new(store), ())
}

// What the kassandra test server supports of the suite: every store's cases, not the
// write-timestamp ones (`test_suite::BY_POSITION`).
store::store_test_suite!(cql, fresh());

#[test]
fn connecting_to_nothing_is_a_clear_error() {
    let config = ScyllaConfig::from_url("scylla://127.0.0.1:1/svc").unwrap();
    let err = ScyllaStore::connect(&config).err().expect("no server listens there").to_string();
    assert!(err.contains("cannot connect to 127.0.0.1:1"), "{err}");
}

#[test]
fn a_replaced_version_gets_no_new_tables() {
    let (store, ()) = fresh();
    let old = store.create_version("m").unwrap();
    store.set_active_version("m", old).unwrap();
    let new = store.create_version("m").unwrap();
    store.set_active_version("m", new).unwrap();
    // A worker that has not noticed the swap writes to a table of the old version.
    let mut batch = store::Batch::default();
    batch.put(&store::TableRef::new("m", old, "late"), "p", b"c".to_vec(), Default::default(), 1);
    let err = store.apply(batch).unwrap_err().to_string();
    assert!(err.contains(&format!("version {old} of m is retired")), "{err}");
    // The active version's tables are created as usual.
    let mut batch = store::Batch::default();
    batch.put(&store::TableRef::new("m", new, "late"), "p", b"c".to_vec(), Default::default(), 1);
    store.apply(batch).unwrap();
    assert!(store.get(&store::TableRef::new("m", new, "late"), "p", b"c").unwrap().is_some());
}

/// A reader that looked for a table before another process created it, then saw that
/// process's checkpoint pass a write to it, reads the write (read-your-writes across
/// processes: a query node waits for the projector's checkpoint, then reads). The reader's
/// list of tables, read a moment before, must not hide the new table.
#[test]
fn a_table_created_before_a_checkpoint_the_reader_saw_is_read_at_once() {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let keyspace = format!("svc_seen_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let config = ScyllaConfig::from_url(&format!("scylla://{}/{keyspace}", server())).unwrap();
    let (reader, writer) = (ScyllaStore::connect(&config).unwrap(), ScyllaStore::connect(&config).unwrap());
    let version = writer.create_version("access").unwrap();
    writer.set_active_version("access", version).unwrap();
    let sessions = store::TableRef::new("access", version, "sessions");
    assert_eq!(reader.get(&sessions, "s1", b"").unwrap(), None, "nobody wrote the table yet");

    let mut batch = store::Batch::default();
    batch.put(&sessions, "s1", Vec::new(), Default::default(), 1);
    batch.checkpoint(&store::consumer_name("access", version), 0, 2);
    writer.apply(batch).unwrap();

    assert_eq!(reader.checkpoints(&store::consumer_name("access", version)).unwrap().get(&0), Some(&2));
    assert!(reader.get(&sessions, "s1", b"").unwrap().is_some(), "the row the checkpoint passed is read");
}
