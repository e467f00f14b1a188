//! Crashes lose nothing and double nothing: `kill -9` during seeding and during projection,
//! then restart; the read models end with every paper exactly once.

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use tests::{enc, sample_papers, svc, svc_bin, Service};

#[tokio::test(flavor = "multi_thread")]
async fn kill_during_seed_and_projection_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let papers = sample_papers();

    // Seed in small appends and kill the process in the middle.
    let batch = 20;
    let mut child = Command::new(svc_bin())
        .args(["seed", "--data-dir", data_s, "--batch", &batch.to_string(), papers.to_str().unwrap()])
        .env("RUST_LOG", "warn")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let _ = child.kill();
    let finished_before_kill = child.wait().unwrap().success();

    // The log is intact: every event decodes, offsets are contiguous, and only whole appends
    // are there (each append holds `batch` papers).
    let tail = svc(&["log", "tail", "--data-dir", data_s]).unwrap();
    let events: Vec<Value> = tail.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["position"]["offset"], i as u64);
    }
    let records = events.iter().filter(|e| e["kind"] == "repo.record.create").count();
    assert!(finished_before_kill || records % batch == 0, "a partial append survived: {records} records");
    eprintln!("killed seeding after {records} papers ({} events)", events.len());

    // Seed again to the end: the first papers are appended a second time.
    let report: Value = serde_json::from_str(svc(&["seed", "--data-dir", data_s, papers.to_str().unwrap()]).unwrap().trim()).unwrap();
    let total_papers = report["papers"].as_u64().unwrap();

    // Start projecting and kill in the middle, then restart and let it finish.
    let service = Service::start(&data).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let port = service.port();
    service.kill9();
    let service = Service::start_on(&data, port).await.unwrap();
    service.wait_caught_up().await.unwrap();

    // Every paper exactly once in search…
    let (_, _, all) = service.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=1").await.unwrap();
    assert_eq!(all["total"].as_u64().unwrap(), total_papers);

    // …and in the by-author listings, checked against the papers themselves.
    let text = {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&papers).unwrap()).read_to_string(&mut s).unwrap();
        s
    };
    let mut expected: HashMap<String, usize> = HashMap::new();
    for line in text.lines() {
        let p: Value = serde_json::from_str(line).unwrap();
        let dids: HashSet<String> =
            p["authors"].as_array().unwrap().iter().take(100).map(|a| ingest::seed::account_for(a.as_str().unwrap()).did).collect();
        for did in dids {
            *expected.entry(did).or_default() += 1;
        }
    }
    let mut prolific: Vec<(&String, &usize)> = expected.iter().collect();
    prolific.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (did, count) in prolific.into_iter().take(15) {
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/xrpc/pub.svc.eprint.listByAuthor?author={}&limit=3", enc(did));
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={}", enc(c)));
            }
            let (status, _, page) = service.get(&path).await.unwrap();
            assert_eq!(status, 200, "{page}");
            assert_eq!(page["total"].as_u64(), Some(*count as u64), "{did}");
            for e in page["eprints"].as_array().unwrap() {
                assert!(seen.insert(e["uri"].as_str().unwrap().to_owned()), "listed twice");
            }
            match page["cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(seen.len(), *count, "{did}");
    }
}
