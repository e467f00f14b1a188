//! The whole store conformance suite against a real ScyllaDB (or Cassandra), which these
//! machines do not have; the tests run the subset the in-process CQL test server supports.
//!
//! ```sh
//! cargo run -p store --example scylla_conformance -- scylla://127.0.0.1:9042
//! ```
//!
//! Every test makes a keyspace of its own (`svc_conformance_<pid>_<n>`) and leaves it behind.

use std::sync::atomic::{AtomicUsize, Ordering};

use store::test_suite;
use store::{ScyllaConfig, ScyllaStore, Store};

fn main() {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: scylla_conformance scylla://HOST:PORT[,HOST:PORT]");
        std::process::exit(2);
    };
    let nodes = url.trim_start_matches("scylla://").split('/').next().unwrap_or_default().to_owned();
    let next = AtomicUsize::new(0);
    let factory = || -> (Box<dyn Store>, Box<dyn std::any::Any>) {
        let keyspace = format!("svc_conformance_{}_{}", std::process::id(), next.fetch_add(1, Ordering::Relaxed));
        let config = ScyllaConfig::from_url(&format!("scylla://{nodes}/{keyspace}")).expect("a valid URL");
        (Box::new(ScyllaStore::connect(&config).expect("the ScyllaDB answers")), Box::new(()))
    };
    test_suite::run(&factory, test_suite::ALL);
    test_suite::run(&factory, test_suite::BY_POSITION);
    println!("the store conformance suite passed against {url}");
}
