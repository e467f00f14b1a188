//! Faults under a running deployment: tansu on its PostgreSQL engine (durable, with truthful
//! watermarks), `svc ingest` seeding, two `svc project` and two `svc serve`.
//! - The broker killed (`kill -9`) mid-seed and restarted 5 s later: the seed's producer
//!   retries and finishes, the projectors and query nodes resume, and every acknowledged event
//!   is applied exactly once: the query nodes serve each paper of the log once, and the log
//!   holds each record write once, as an independent Kafka client reads it.
//! - A query node killed (`kill -9`) under load on both: the other answers every request
//!   meanwhile, and the killed one restarts, catches up and answers as the other does.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use event_schema::{codec, Payload, Position};
use tests::topology::{assert_complete_and_equal, papers, spawn_svc, wait_owns_partitions, write_parts};
use tests::{Backend, Projector, Service, TOPIC};

/// Papers seeded before the deployment starts, and during which the broker dies.
const SEEDS: [(usize, usize); 2] = [(0, 300), (300, 1_500)];

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_killed_mid_seed_and_a_query_node_killed_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    let mut backend = Backend::kafka_scylla_durable();
    let all = papers(SEEDS[1].1);
    let parts = write_parts(&all, work, &SEEDS);
    let ingest_dir = work.join("ingest");
    let ingest = |backend: &Backend, part: &std::path::Path| {
        spawn_svc(backend, &["ingest", "--data-dir", ingest_dir.to_str().unwrap(), "--seed", part.to_str().unwrap()])
    };

    assert!(ingest(&backend, &parts[0]).wait_with_output().unwrap().status.success());
    let a = Projector::start("project-a", work, &backend).unwrap();
    let b = Projector::start("project-b", work, &backend).unwrap();
    let mut q1 = Service::start_role("serve", &work.join("q1"), tests::free_port(), &backend).await.unwrap();
    let mut q2 = Service::start_role("serve", &work.join("q2"), tests::free_port(), &backend).await.unwrap();
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

    for q in [&mut q1, &mut q2] {
        if let Err(e) = q.wait_caught_up().await {
            let tail = |log: String| tests::last_lines(&log, 80);
            let exited = q.exit_status();
            panic!(
                "{e}\nthe query node on {} (exited: {exited:?}):\n{}\nprojector a:\n{}\nprojector b:\n{}",
                q.base,
                tail(q.log()),
                tail(a.log()),
                tail(b.log())
            );
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
    let mut sorted = served.clone();
    sorted.sort();
    assert_eq!(papers_in_log, sorted, "the query nodes serve exactly the papers of the log");
    // A query node dies under load on both; the other answers every request meanwhile.
    let load: Vec<String> = served
        .iter()
        .take(200)
        .map(|uri| format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", tests::enc(uri)))
        .chain(["/xrpc/pub.svc.eprint.searchSubmissions?query=quantum&limit=10".to_owned()])
        .collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = [&q1.base, &q2.base]
        .into_iter()
        .flat_map(|base| (0..4).map(move |i| (base.clone(), i)))
        .map(|(base, i)| {
            let (load, stop) = (load.clone(), stop.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let (mut ok, mut failed) = (0u64, Vec::new());
                let mut n = i;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n = (n + 7) % load.len();
                    match client.get(format!("{base}{}", load[n])).send().await {
                        Ok(r) if r.status() == 200 => ok += 1,
                        Ok(r) => failed.push(format!("{} {}", r.status(), load[n])),
                        Err(e) => {
                            failed.push(e.to_string());
                            // A node that is down refuses at once: no busy loop.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
                (base, ok, failed)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (q2_dir, q2_port) = (work.join("q2"), q2.port());
    q2.kill9();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answered = BTreeMap::new();
    for client in clients {
        let (base, ok, failed) = client.await.unwrap();
        let entry = answered.entry(base.clone()).or_insert((0, 0));
        entry.0 += ok;
        entry.1 += failed.len();
        if base == q1.base {
            assert!(failed.is_empty(), "the surviving node failed requests: {failed:?}");
        }
    }
    let (q1_ok, _) = answered[&q1.base];
    assert!(q1_ok > 100, "the surviving node was under load: {answered:?}");
    let q2 = Service::start_role("serve", &q2_dir, q2_port, &backend).await.unwrap();
    q2.wait_caught_up().await.unwrap();
    let again = assert_complete_and_equal(&q1, &q2, SEEDS[1].1).await;
    assert_eq!(again.len(), served.len());
    eprintln!("requests answered while a query node was killed (ok, failed) by node: {answered:?}");

    for projector in [&a, &b] {
        let log = projector.log();
        assert!(log.contains("projection batch failed; retrying"), "the projector waited for the broker: {log}");
        assert!(!log.contains("stopping worker"), "the projector kept running: {log}");
    }
}
