//! `svc snapshot` on the embedded backend: what it refuses, each with a message naming why,
//! and a node restored from a snapshot (beside a copy of the log, as a new node beside a
//! shared log) that searches as the node it came from; a snapshot taken of a running node
//! (`pub.svc.admin.createSnapshot`, and through `svc admin`) while it is searched. The join
//! of a query node on Kafka and ScyllaDB is in the topology test.

use serde_json::{json, Value};
use tests::{admin_session, sample_papers, svc, Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";
const ADMIN: &str = "did:plc:snapshotadmin0000000000000";

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
    // Author search reads the index of users the snapshot carries beside the search index.
    let authors = "/xrpc/pub.svc.author.searchAuthors?q=a&limit=5";
    let found = node.get_bytes(authors).await.unwrap();
    let listed: Value = serde_json::from_slice(&found.1).unwrap();
    assert_eq!(listed["authors"].as_array().map(Vec::len), Some(5), "{listed}");
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
    assert_eq!(node.get_bytes(authors).await.unwrap(), found, "the restored index finds the same authors");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_node_is_snapshotted_while_it_serves_and_a_node_restored_from_it_searches_alike() {
    let dir = tempfile::tempdir().unwrap();
    let (source, fresh) = (dir.path().join("source"), dir.path().join("fresh"));
    svc(&["seed", "--data-dir", source.to_str().unwrap(), sample_papers().to_str().unwrap()]).unwrap();
    let args = ["--service-did", SERVICE_DID, "--admin-dids", ADMIN];
    let node = Service::start_args("up", &source, tests::free_port(), &Backend::embedded(), &args).await.unwrap();
    node.wait_caught_up().await.unwrap();
    let token = admin_session(&node, &source.join("auth-keys.json"), SERVICE_DID, ADMIN).await;
    let create = "/xrpc/pub.svc.admin.createSnapshot";

    assert_eq!(node.post(create, None, &json!({})).await.unwrap().0, 401, "admins only");
    for bad in ["../escape", ".hidden", "a/b", ""] {
        let (status, body) = node.post(create, Some(&token), &json!({"name": bad})).await.unwrap();
        assert_eq!((status, &body["error"]), (400, &Value::from("InvalidRequest")), "{bad:?}: {body}");
    }

    // Searched all the while it is taken: every search answers, as before.
    let query = "/xrpc/pub.svc.eprint.searchSubmissions?q=quantum&limit=5";
    let answer = node.get_bytes(query).await.unwrap();
    let searching = async {
        let mut answered = 0;
        for _ in 0..40 {
            assert_eq!(node.get_bytes(query).await.unwrap(), answer);
            answered += 1;
        }
        answered
    };
    let live = json!({"name": "live"});
    let (taken, answered) = tokio::join!(node.post(create, Some(&token), &live), searching);
    let (status, taken) = taken.unwrap();
    assert_eq!(status, 200, "{taken}");
    println!("a snapshot of a running node: {taken}");
    assert_eq!(answered, 40);
    assert_eq!((&taken["name"], &taken["model"], &taken["linked"]), (&json!("live"), &json!("search"), &json!(true)), "{taken}");
    let snapshot = source.join("snapshots").join("live");
    assert_eq!(taken["path"], snapshot.to_str().unwrap(), "{taken}");
    assert!(snapshot.join("snapshot.json").is_file() && taken["bytes"].as_u64().unwrap() > 0, "{taken}");
    assert!(!taken["checkpoints"].as_array().unwrap().is_empty(), "{taken}");
    let (status, body) = node.post(create, Some(&token), &json!({"name": "live"})).await.unwrap();
    assert_eq!((status, &body["error"]), (400, &Value::from("InvalidRequest")), "the name is taken: {body}");

    // The worker was let go: a procedure that waits for its event to be applied answers.
    let grant = json!({"did": "did:plc:snapshotgrantee00000000000", "role": "moderator"});
    let (status, granted) = node.post("/xrpc/pub.svc.admin.assignRole", Some(&token), &grant).await.unwrap();
    assert_eq!((status, &granted["success"]), (200, &Value::Bool(true)), "{granted}");
    // `svc admin` takes one too, with a default name.
    let printed = svc(&["admin", "--url", &node.base, "--token", &token, "createSnapshot"]).unwrap();
    let printed: Value = serde_json::from_str(&printed).unwrap_or_else(|e| panic!("{e}: {printed}"));
    assert!(printed["name"].as_str().unwrap().starts_with("search-v"), "{printed}");
    node.stop().unwrap();

    // A new node beside a copy of the log (with the event appended after the snapshot)
    // starts from it and searches alike.
    std::fs::create_dir_all(&fresh).unwrap();
    for file in ["log.redb", "auth-keys.json"] {
        std::fs::copy(source.join(file), fresh.join(file)).unwrap();
    }
    svc(&["snapshot", "restore", "--data-dir", fresh.to_str().unwrap(), "--from", snapshot.to_str().unwrap()]).unwrap();
    let restored = Service::start(&fresh).await.unwrap();
    restored.wait_caught_up().await.unwrap();
    assert_eq!(restored.get_bytes(query).await.unwrap(), answer, "the restored index searches as its source did");
}
