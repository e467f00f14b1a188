//! The scale-out topology as separate processes, as a user would run it from
//! `docker-compose.yml`, here against a tansu broker (with the producers' real batching,
//! under which its watermarks lag behind its records) and the CQL test server, with 3,030
//! papers in three seeds: `svc ingest`, two `svc project`, two `svc serve`. Both query nodes answer the same; a projector killed
//! mid-stream is replaced by the other and nothing is lost or doubled; `svc replay` rebuilds
//! a new version while the old one serves, swaps it in, and the projectors follow it. Then
//! the admin surface across the nodes: a take-down (a paper, a review) through one query node is gone from both,
//! and a full reindex runs through the API.
//!
//! The CQL test server has no clustering ranges, `ORDER BY`, `LIMIT`, `COUNT` or
//! `DROP TABLE` (see `store/tests/scylla.rs`): the store reads whole partitions for scans and
//! counts there, and empties a dropped version's tables row by row (a real ScyllaDB never
//! takes those paths).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::topology::{assert_complete_and_equal, details, papers, spawn_svc, wait_owns_partitions, write_parts};
use tests::{enc, Backend, Projector, Service};

const SERVICE_DID: &str = "did:web:svc.test";
const ADMIN: &str = "did:plc:topologyadmin00000000000";

/// An admin session on `node`, minted with the query nodes' shared key.
async fn admin_session(node: &Service, keys: &Path) -> String {
    tests::admin_session(node, keys, SERVICE_DID, ADMIN).await
}

/// GET with a bearer token.
async fn get_as(node: &Service, token: &str, path: &str) -> (u16, Value) {
    let r = reqwest::Client::new().get(format!("{}{path}", node.base)).bearer_auth(token).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// Polls `path` on `node` until it answers `status`.
async fn until_status(node: &Service, path: &str, status: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while node.get(path).await.unwrap().0 != status {
        assert!(Instant::now() < deadline, "{path} never answered {status} on {}", node.base);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Papers of the first seed, of the second (during which a projector dies), and of a third
/// appended after the online replay.
const SEEDS: [(usize, usize); 3] = [(0, 1500), (1500, 3000), (3000, 3030)];

#[tokio::test(flavor = "multi_thread")]
async fn ingest_two_projectors_two_query_nodes_takeover_and_online_replay() {
    // The producers' real batching, under which the broker's watermarks lag its records.
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    // The query nodes share their token keys and know the admin.
    let keys = work.join("auth-keys.json");
    let backend = Backend::kafka_scylla_batched()
        .with_env("SVC_AUTH_KEYS", keys.to_str().unwrap())
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_ADMIN_DIDS", ADMIN);
    let all = papers(SEEDS[2].1);
    let parts = write_parts(&all, work, &SEEDS);
    let ingest_dir = work.join("ingest");
    let ingest =
        |part: &Path| spawn_svc(&backend, &["ingest", "--data-dir", ingest_dir.to_str().unwrap(), "--seed", part.to_str().unwrap()]);

    // The first part, then the projectors and query nodes.
    assert!(ingest(&parts[0]).wait_with_output().unwrap().status.success());
    let a = Projector::start("project-a", work, &backend).unwrap();
    let b = Projector::start("project-b", work, &backend).unwrap();
    let q1 = Service::start_role("serve", &work.join("q1"), tests::free_port(), &backend).await.unwrap();
    let q2 = Service::start_role("serve", &work.join("q2"), tests::free_port(), &backend).await.unwrap();
    wait_owns_partitions(&a);
    wait_owns_partitions(&b);
    q1.wait_caught_up().await.unwrap();
    q2.wait_caught_up().await.unwrap();
    assert_complete_and_equal(&q1, &q2, SEEDS[0].1).await;

    // The second part; one projector dies while it is being projected.
    let second = ingest(&parts[1]);
    std::thread::sleep(Duration::from_millis(700));
    let a_log = a.log();
    a.kill9();
    assert!(second.wait_with_output().unwrap().status.success());
    q1.wait_caught_up().await.unwrap();
    q2.wait_caught_up().await.unwrap();
    let uris = assert_complete_and_equal(&q1, &q2, SEEDS[1].1).await;
    assert!(b.log().contains("partitions={0, 1, 2, 3}"), "the survivor took every partition over; its log:\n{}", b.log());
    assert!(a_log.contains("now owns these partitions"), "the killed projector had partitions: {a_log}");

    // Rebuild while both query nodes serve: the old version answers until the swap.
    let probe = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&uris[17]));
    let (_, before) = q1.get_bytes(&probe).await.unwrap();
    let old_answers = details(&q1, &uris).await;
    let replay_dir = work.join("replay");
    let mut replay = spawn_svc(&backend, &["replay", "--data-dir", replay_dir.to_str().unwrap(), "--grace-seconds", "2"]);
    let mut probes = 0;
    while replay.try_wait().unwrap().is_none() {
        let (status, body) = q1.get_bytes(&probe).await.unwrap();
        assert_eq!((status, &body), (200, &before), "the paper is served unchanged during the rebuild");
        probes += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = replay.wait_with_output().unwrap();
    assert!(out.status.success(), "svc replay failed: {}", String::from_utf8_lossy(&out.stderr));
    // One report line per shared model (the query nodes rebuild their own search index).
    let reports: Vec<Value> = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let models: Vec<&str> = reports.iter().filter_map(|r| r["model"].as_str()).collect();
    assert_eq!(models, *projections::catalog::SHARED_MODELS, "{reports:?}");
    for report in &reports {
        assert!(report["newVersion"].as_u64() > report["oldVersion"].as_u64(), "{report}");
    }
    assert!(probes > 0, "the rebuild was probed while it ran");

    // The projectors follow the new version: what is appended now shows up there (the
    // third part with its reviews, annotations, tags and the rest of the scholarly layer).
    let social =
        spawn_svc(&backend, &["ingest", "--data-dir", ingest_dir.to_str().unwrap(), "--seed", parts[2].to_str().unwrap(), "--social"]);
    assert!(social.wait_with_output().unwrap().status.success());
    q1.wait_caught_up().await.unwrap();
    q2.wait_caught_up().await.unwrap();
    assert_complete_and_equal(&q1, &q2, SEEDS[2].1).await;
    assert!(b.log().contains("a new version was swapped in; following it"), "the projector moved to the new version: {}", b.log());
    let (_, after) = q2.get_bytes(&probe).await.unwrap();
    assert_eq!(after, before, "the rebuilt version answers byte for byte the same");
    for ((uri, old), new) in uris.iter().zip(&old_answers).zip(details(&q2, &uris).await) {
        assert_eq!(&new, old, "the rebuilt version answers {uri} as the old one did");
    }

    // The admin surface across nodes: a session started on one node works on the other; a
    // paper taken down through one is gone from both; a full reindex through the API.
    let token = admin_session(&q1, &keys).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while get_as(&q2, &token, "/xrpc/pub.svc.actor.getMyRoles").await.1["isAdmin"] != true {
        assert!(Instant::now() < deadline, "the session never reached the second node");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let down = &uris[5];
    let detail = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(down));
    let body = serde_json::json!({"uri": down, "collection": "pub.svc.eprint.submission", "reason": "duplicate"});
    let (status, out) = q1.post("/xrpc/pub.svc.admin.deleteContent", Some(&token), &body).await.unwrap();
    assert_eq!((status, &out["success"]), (200, &Value::Bool(true)), "{out}");
    until_status(&q1, &detail, 404).await;
    until_status(&q2, &detail, 404).await;
    q1.wait_caught_up().await.unwrap();
    q2.wait_caught_up().await.unwrap();
    let kept = assert_complete_and_equal(&q1, &q2, SEEDS[2].1 - 1).await;
    assert!(!kept.contains(down), "gone from both nodes' search");

    // A review taken down through q2 is a placeholder on both nodes: listed and in its
    // thread with `deleted`, without its text; gone from the admins' listing.
    let (_, listed) = get_as(&q1, &token, "/xrpc/pub.svc.admin.listReviews?limit=100").await;
    let items = listed["items"].as_array().unwrap_or_else(|| panic!("{listed}")).clone();
    assert!(!items.is_empty(), "the scholarly layer has reviews: {listed}");
    let (review, eprint) = (items[0]["uri"].as_str().unwrap().to_owned(), items[0]["eprintUri"].as_str().unwrap().to_owned());
    let on_paper = format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}&limit=100", enc(&eprint));
    let thread = format!("/xrpc/pub.svc.review.getThread?uri={}", enc(&review));
    let listed = |body: &Value| body["reviews"].as_array().and_then(|r| r.iter().find(|r| r["uri"] == review.as_str()).cloned());
    let lists = |body: &Value| listed(body).is_some();
    for q in [&q1, &q2] {
        let (status, _, body) = q.get(&on_paper).await.unwrap();
        assert!(status == 200 && lists(&body), "{status} {body}");
        assert_eq!(q.get(&thread).await.unwrap().0, 200);
    }
    let body = serde_json::json!({"uri": review, "collection": "pub.svc.review.comment", "reason": "abuse"});
    let (status, out) = q2.post("/xrpc/pub.svc.admin.deleteContent", Some(&token), &body).await.unwrap();
    assert_eq!((status, &out["success"]), (200, &Value::Bool(true)), "{out}");
    for q in [&q1, &q2] {
        let deadline = Instant::now() + Duration::from_secs(30);
        while q.get(&thread).await.unwrap().2["parent"]["deleted"] != true {
            assert!(Instant::now() < deadline, "{thread} never became a placeholder on {}", q.base);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (status, _, body) = q.get(&on_paper).await.unwrap();
        let placeholder = listed(&body).unwrap_or_else(|| panic!("no longer listed after the take-down: {body}"));
        assert_eq!((status, &placeholder["deleted"], &placeholder["content"]), (200, &Value::Bool(true), &Value::from("")), "{body}");
        let (_, all) = get_as(q, &token, "/xrpc/pub.svc.admin.listReviews?limit=100").await;
        assert!(!all["items"].as_array().unwrap().iter().any(|i| i["uri"] == review.as_str()), "{all}");
    }

    let (status, started) = q2.post("/xrpc/pub.svc.admin.triggerFullReindex", Some(&token), &serde_json::json!({})).await.unwrap();
    assert_eq!(status, 200, "{started}");
    let id = started["operationId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(300);
    let op = loop {
        // Operations live in a shared model: the other node reports them as well.
        let (_, body) = get_as(&q1, &token, &format!("/xrpc/pub.svc.admin.getBackfillStatus?id={id}")).await;
        if body["operation"]["status"] != "running" {
            break body["operation"].clone();
        }
        assert!(Instant::now() < deadline, "the reindex did not end: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(op["status"], "completed", "{op}");
    q1.wait_caught_up().await.unwrap();
    q2.wait_caught_up().await.unwrap();
    until_status(&q2, &detail, 404).await;
    assert_eq!(q1.get(&detail).await.unwrap().0, 404, "still gone after the reindex");
    for q in [&q1, &q2] {
        let (status, _, body) = q.get(&thread).await.unwrap();
        assert!(status == 200 && body["parent"]["deleted"] == true, "still a placeholder after the reindex: {body}");
        assert_eq!(listed(&q.get(&on_paper).await.unwrap().2).map(|r| r["deleted"].clone()), Some(Value::Bool(true)));
    }
    assert_eq!(assert_complete_and_equal(&q1, &q2, SEEDS[2].1 - 1).await, kept);

    // A third query node joins from a snapshot of q2's search index, taken while q2 serves
    // and papers are taken down through q1, instead of reading the log from position 0; a
    // fourth from position 0, for comparison.
    let joining = serde_json::json!({"name": "joining"});
    let snapshot_taken = q2.post("/xrpc/pub.svc.admin.createSnapshot", Some(&token), &joining);
    let taken_down = &uris[6..9];
    let take_downs = async {
        for uri in taken_down {
            let body = serde_json::json!({"uri": uri, "collection": "pub.svc.eprint.submission", "reason": "duplicate"});
            let (status, out) = q1.post("/xrpc/pub.svc.admin.deleteContent", Some(&token), &body).await.unwrap();
            assert_eq!(status, 200, "{out}");
        }
    };
    let ((status, taken), ()) = tokio::join!(async { snapshot_taken.await.unwrap() }, take_downs);
    assert_eq!(status, 200, "{taken}");
    assert_eq!((&taken["model"], &taken["linked"]), (&Value::from("search"), &Value::Bool(true)), "{taken}");
    let snapshot = std::path::PathBuf::from(taken["path"].as_str().unwrap());
    assert!(snapshot.starts_with(work.join("q2").join("snapshots")), "in q2's snapshot folder: {taken}");
    println!("a snapshot of a serving query node: {taken}");
    let (status, again) = q2.post("/xrpc/pub.svc.admin.createSnapshot", Some(&token), &joining).await.unwrap();
    assert_eq!((status, &again["error"]), (400, &Value::from("InvalidRequest")), "{again}");
    // q2 went on after the snapshot: the take-downs reach its search index too.
    q1.wait_caught_up().await.unwrap();
    q2.wait_caught_up().await.unwrap();
    let kept = assert_complete_and_equal(&q1, &q2, SEEDS[2].1 - 1 - taken_down.len()).await;
    assert!(taken_down.iter().all(|uri| !kept.contains(uri)), "taken down on both nodes");
    let (q3_dir, q4_dir) = (work.join("q3"), work.join("q4"));
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let restored = backend.svc(&["snapshot", "restore", "--data-dir", &path(&q3_dir), "--from", &path(&snapshot)]).unwrap();
    let restored: Value = serde_json::from_str(restored.trim()).unwrap();
    let held: Vec<Value> = restored["checkpoints"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(p, o)| serde_json::json!({"partition": p.parse::<u64>().unwrap(), "offset": o}))
        .collect();
    assert_eq!(Value::from(held), taken["checkpoints"], "{restored}");
    let started = Instant::now();
    let q3 = Service::start_role("serve", &q3_dir, tests::free_port(), &backend).await.unwrap();
    q3.wait_caught_up().await.unwrap();
    let from_snapshot = started.elapsed();
    let started = Instant::now();
    let q4 = Service::start_role("serve", &q4_dir, tests::free_port(), &backend).await.unwrap();
    q4.wait_caught_up().await.unwrap();
    let from_zero = started.elapsed();
    assert_eq!(assert_complete_and_equal(&q1, &q3, SEEDS[2].1 - 1 - taken_down.len()).await, kept);
    assert_eq!(assert_complete_and_equal(&q1, &q4, SEEDS[2].1 - 1 - taken_down.len()).await, kept);
    // The snapshot's node read only what was appended after the snapshot's checkpoints.
    let ((read_q3, took_q3), (read_q4, took_q4)) = (search_catch_up(&q3.log()), search_catch_up(&q4.log()));
    println!(
        "a query node from a snapshot: search caught up in {took_q3} s reading {read_q3} events, ready after {from_snapshot:?}; \
         from position 0: {took_q4} s reading {read_q4} events, ready after {from_zero:?}"
    );
    assert!(read_q3 < read_q4 / 10, "from the snapshot {read_q3} events read, from position 0 {read_q4}");
    let again = backend.svc(&["snapshot", "restore", "--data-dir", &path(&q4_dir), "--from", &path(&snapshot)]);
    assert!(again.is_err_and(|e| format!("{e:#}").contains("is svc running on it?")), "q4 runs: refused");
}

/// The events the search worker of a query node read before its first catch-up ended, and
/// the seconds it took, from its log line.
fn search_catch_up(log: &str) -> (u64, f64) {
    let line = log
        .lines()
        .find(|l| l.contains("the read model is complete") && l.contains("model=\"search\""))
        .unwrap_or_else(|| panic!("no catch-up of search in {log}"));
    let field = |name: &str| line.split_whitespace().find_map(|w| w.strip_prefix(name)).unwrap_or_else(|| panic!("{line}"));
    (field("events=").parse().unwrap(), field("seconds=").parse().unwrap())
}
