//! `svc snapshot` on the embedded backend: what it refuses, each with a message naming why,
//! and a node restored from a snapshot (beside a copy of the log, as a new node beside a
//! shared log) that searches as the node it came from. The join of a query node on Kafka
//! and ScyllaDB is in the topology test.

use tests::{sample_papers, svc, Service};

#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_is_refused_where_it_cannot_be_made_and_restores_a_node_that_searches_alike() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (source, snap, fresh) = (path("source"), path("snap"), path("fresh"));
    let refused = |args: &[&str], why: &str| {
        let err = format!("{:#}", svc(args).expect_err(why));
        assert!(err.contains(why), "svc {args:?}: {err}");
    };

    refused(&["snapshot", "create", "--data-dir", &source, "--to", &snap], "does not exist");
    svc(&["seed", "--data-dir", &source, sample_papers().to_str().unwrap()]).unwrap();
    let node = Service::start(dir.path().join("source").as_path()).await.unwrap();
    node.wait_caught_up().await.unwrap();
    let query = "/xrpc/pub.svc.eprint.searchSubmissions?q=quantum&limit=5";
    let answer = node.get_bytes(query).await.unwrap();
    refused(&["snapshot", "create", "--data-dir", &source, "--to", &snap], "is svc running on it?");
    node.stop().unwrap();

    svc(&["snapshot", "create", "--data-dir", &source, "--to", &snap]).unwrap();
    refused(&["snapshot", "create", "--data-dir", &source, "--to", &snap], "a snapshot is written to a new folder");
    refused(&["snapshot", "restore", "--data-dir", &fresh, "--from", &source], "is not a complete snapshot");
    refused(&["snapshot", "restore", "--data-dir", &source, "--from", &snap], "has a search index already");

    std::fs::create_dir_all(&fresh).unwrap();
    for file in ["log.redb", "auth-keys.json"] {
        std::fs::copy(dir.path().join("source").join(file), dir.path().join("fresh").join(file)).unwrap();
    }
    svc(&["snapshot", "restore", "--data-dir", &fresh, "--from", &snap]).unwrap();
    let node = Service::start(dir.path().join("fresh").as_path()).await.unwrap();
    node.wait_caught_up().await.unwrap();
    assert_eq!(node.get_bytes(query).await.unwrap(), answer, "the restored index searches as its source did");
}
