//! The broker dies under a running deployment: tansu on its PostgreSQL engine (durable, with
//! truthful watermarks), `svc ingest` seeding, two `svc project` and two `svc serve`, and the
//! broker killed (`kill -9`) mid-seed and restarted 5 s later. The seed's producer retries
//! and finishes, the projectors and query nodes resume, and every acknowledged event is
//! applied exactly once: the query nodes serve each paper of the log once, and the log holds
//! each record write once, as an independent Kafka client reads it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use event_schema::{codec, Payload, Position};
use tests::topology::{assert_complete_and_equal, papers, spawn_svc, wait_owns_partitions, write_slice};
use tests::{Backend, Projector, Service, TOPIC};

/// Papers seeded before the deployment starts, and during which the broker dies.
const SEEDS: [(usize, usize); 2] = [(0, 300), (300, 1_500)];

#[tokio::test(flavor = "multi_thread")]
async fn the_broker_killed_mid_seed_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    let mut backend = Backend::kafka_scylla_durable();
    let all = papers(SEEDS[1].1);
    let parts: Vec<_> = SEEDS
        .iter()
        .enumerate()
        .map(|(i, (from, to))| {
            let path = work.join(format!("part{i}.jsonl"));
            write_slice(&all, &path, *from, *to);
            path
        })
        .collect();
    let ingest_dir = work.join("ingest");
    let ingest = |backend: &Backend, part: &std::path::Path| {
        spawn_svc(backend, &["ingest", "--data-dir", ingest_dir.to_str().unwrap(), "--seed", part.to_str().unwrap()])
    };

    assert!(ingest(&backend, &parts[0]).wait().unwrap().success());
    let a = Projector::start("project-a", work, &backend).unwrap();
    let b = Projector::start("project-b", work, &backend).unwrap();
    let q1 = Service::start_role("serve", &work.join("q1"), tests::free_port(), &backend).await.unwrap();
    let q2 = Service::start_role("serve", &work.join("q2"), tests::free_port(), &backend).await.unwrap();
    wait_owns_partitions(&a);
    wait_owns_partitions(&b);
    q1.wait_caught_up().await.unwrap();
    q2.wait_caught_up().await.unwrap();
    assert_complete_and_equal(&q1, &q2, SEEDS[0].1).await;

    // The broker dies while the second part is appended, and comes back 5 s later.
    let seed = ingest(&backend, &parts[1]);
    std::thread::sleep(Duration::from_millis(1_500));
    backend.broker().kill();
    let killed_at = Instant::now();
    // Meanwhile the query nodes say what failed.
    let mut named = None;
    while killed_at.elapsed() < Duration::from_secs(5) {
        let (status, _, health) = q1.get("/health/readiness").await.unwrap();
        if health["checks"]["log"]["error"].is_string() {
            named = Some((status, health));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (status, health) = named.expect("the query node's readiness named the log's failure while the broker was down");
    assert_eq!(status, 503, "{health}");
    backend.broker().restart();
    let out = seed.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the seed finishes across the broker's restart: {stderr}");
    assert!(killed_at.elapsed() > Duration::from_secs(5), "the seed ended before the broker died: nothing was tested");

    for q in [&q1, &q2] {
        if let Err(e) = q.wait_caught_up().await {
            panic!("{e}\nprojector a:\n{}\nprojector b:\n{}", a.log(), b.log());
        }
    }
    let served = assert_complete_and_equal(&q1, &q2, SEEDS[1].1).await;

    // What an independent client reads of the topic: each record write once, and the
    // papers the query nodes serve are exactly those of the log.
    let records = backend.broker().independent_read(TOPIC, 4);
    let mut writes: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut papers_in_log = Vec::new();
    for (partition, offset, value) in &records {
        let envelope = codec::decode(Position { partition: *partition, offset: *offset }, value).unwrap();
        if let Payload::RecordCreate(w) | Payload::RecordUpdate(w) = &envelope.payload {
            *writes.entry((w.uri(), w.rev.clone())).or_default() += 1;
            if w.collection == "pub.svc.eprint.submission" {
                papers_in_log.push(w.uri());
            }
        }
    }
    let doubled: Vec<_> = writes.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "record writes in the log twice: {doubled:?}");
    papers_in_log.sort();
    let mut served = served;
    served.sort();
    assert_eq!(papers_in_log, served, "the query nodes serve exactly the papers of the log");
    for projector in [&a, &b] {
        let log = projector.log();
        assert!(log.contains("projection batch failed; retrying"), "the projector waited for the broker: {log}");
        assert!(!log.contains("stopping worker"), "the projector kept running: {log}");
    }
}
