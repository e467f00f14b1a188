//! A query node joining from a snapshot, at any size: the embedded backend seeded with a
//! corpus, `svc up` until caught up (a node built from the log), then `pub.svc.admin.createSnapshot` while searches run against the node (the
//! worker's hold, the snapshot's bytes and time, and the searches' latency before and during
//! it), then a new data directory beside a copy of the log restored from the snapshot
//! (`svc snapshot restore`) and started until caught up, and the restored node's
//! search answers against the source's; last, the search index rebuilt from the log (`svc
//! replay --model search`), what a node that builds only its index pays without a snapshot.
//! On the embedded backend a node builds every model, so the restored node's readiness is
//! bound by the others' catch-up. Prints the figures of docs/performance.md, "A query
//! node from a snapshot, at 75,000 papers".
//!
//! `SVC_BIN=target/release/svc cargo bench -p tests --bench snapshot_join`; `SNAP_PAPERS`: a
//! JSON-lines file (gzip or plain) to seed, default the committed sample; `SNAP_SEED_ARGS`:
//! more arguments of `svc seed` (`--social`); `SNAP_SEARCHERS`: concurrent searchers
//! (default 8).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::{admin_session, Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";
const ADMIN: &str = "did:plc:snapshotbenchadmin000000000";
const QUERIES: &[&str] = &["quantum", "neural network", "dark matter", "graph", "protein folding", "black hole", "optimization", "entropy"];
/// Words the searchers combine in threes, so that few of their searches repeat (a repeated
/// answer is kept, and would measure the kept answers instead of the index).
const WORDS: &[&str] = &[
    "quantum",
    "neural",
    "matter",
    "graph",
    "protein",
    "black",
    "optimization",
    "entropy",
    "field",
    "spin",
    "learning",
    "galaxy",
    "random",
    "network",
    "energy",
    "model",
    "theory",
    "phase",
    "lattice",
    "gauge",
    "stochastic",
    "algorithm",
    "magnetic",
    "dynamics",
    "spectrum",
    "boundary",
    "symmetry",
    "inference",
    "cosmic",
    "particle",
    "wave",
    "signal",
    "surface",
    "topological",
    "sparse",
    "estimation",
    "gravity",
    "thermal",
    "operator",
    "equation",
];

/// Starts `svc up` on `data` and waits until every model has caught up; prints how long.
async fn start(who: &str, data: &Path, backend: &Backend) -> anyhow::Result<Service> {
    let started = Instant::now();
    let args = ["--service-did", SERVICE_DID, "--admin-dids", ADMIN];
    let node = Service::start_args("up", data, tests::free_port(), backend, &args).await?;
    node.wait_caught_up_within(Duration::from_secs(3600)).await?;
    println!("{who}: every model caught up after {:.1} s", started.elapsed().as_secs_f64());
    Ok(node)
}

/// Search latencies (ms) with the time each began, from `searchers` loops until `stop`,
/// and how many searches failed.
async fn search_while(node: &Service, searchers: usize, stop: Arc<AtomicBool>, t0: Instant) -> (Vec<(f64, f64)>, usize) {
    let tasks: Vec<_> = (0..searchers as u64)
        .map(|s| {
            let (base, stop) = (node.base.clone(), stop.clone());
            tokio::spawn(async move {
                let (http, mut seen, mut failed) = (reqwest::Client::new(), Vec::new(), 0);
                let mut i = s * 7_919;
                while !stop.load(Ordering::Relaxed) {
                    i = i.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    let word = |shift: u32| WORDS[((i >> shift) % WORDS.len() as u64) as usize];
                    let q = format!("{} {} {}", word(33), word(43), word(53));
                    let began = t0.elapsed().as_secs_f64();
                    let url = format!("{base}/xrpc/pub.svc.eprint.searchSubmissions?q={}&limit=10", tests::enc(&q));
                    match http.get(&url).send().await {
                        Ok(r) if r.status().is_success() => seen.push((began, (t0.elapsed().as_secs_f64() - began) * 1000.0)),
                        _ => failed += 1,
                    }
                }
                (seen, failed)
            })
        })
        .collect();
    let (mut seen, mut failed) = (Vec::new(), 0);
    for task in tasks {
        let (s, f) = task.await.unwrap_or_default();
        seen.extend(s);
        failed += f;
    }
    (seen, failed)
}

fn latency(label: &str, mut ms: Vec<f64>) {
    if ms.is_empty() {
        println!("{label}: no search");
        return;
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
    println!("{label}: {} searches, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms", ms.len(), at(0.5), at(0.99), at(1.0));
}

async fn answers(node: &Service) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    for q in QUERIES {
        let (status, body) = node.get_bytes(&format!("/xrpc/pub.svc.eprint.searchSubmissions?q={}&limit=25", tests::enc(q))).await?;
        anyhow::ensure!(status == 200, "search {q:?}: {status}");
        out.push(body);
    }
    Ok(out)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let papers = std::env::var("SNAP_PAPERS").map(PathBuf::from).unwrap_or_else(|_| tests::sample_papers());
    let seed_args = std::env::var("SNAP_SEED_ARGS").unwrap_or_default();
    let searchers: usize = std::env::var("SNAP_SEARCHERS").ok().and_then(|n| n.parse().ok()).unwrap_or(8);
    let backend = Backend::embedded();
    let dir = tempfile::tempdir()?;
    let (source, fresh) = (dir.path().join("source"), dir.path().join("fresh"));

    let mut seed = vec!["seed", "--data-dir", source.to_str().unwrap_or_default()];
    seed.extend(seed_args.split_whitespace());
    seed.push(papers.to_str().unwrap_or_default());
    let seeded = Instant::now();
    backend.svc(&seed)?;
    println!("seeded {} ({seed_args}) in {:.1} s", papers.display(), seeded.elapsed().as_secs_f64());

    let node = start("the source, from the log", &source, &backend).await?;
    let token = admin_session(&node, &source.join("auth-keys.json"), SERVICE_DID, ADMIN).await;
    let expected = answers(&node).await?;

    // Searched before and while the snapshot is taken.
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let searching = search_while(&node, searchers, stop.clone(), t0);
    let snapshotting = async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let began = t0.elapsed().as_secs_f64();
        let taken = node.post("/xrpc/pub.svc.admin.createSnapshot", Some(&token), &json!({"name": "bench"})).await;
        let ended = t0.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_secs(2)).await;
        stop.store(true, Ordering::Relaxed);
        (taken, began, ended)
    };
    let ((searched, failed), (taken, began, ended)) = tokio::join!(searching, snapshotting);
    let (status, taken): (u16, Value) = taken?;
    anyhow::ensure!(status == 200, "createSnapshot: {taken}");
    println!(
        "createSnapshot answered in {:.2} s: the worker held {} ms, {} bytes ({:.1} MB), linked {}",
        ended - began,
        taken["heldMs"],
        taken["bytes"],
        taken["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        taken["linked"]
    );
    latency("searches in the 5 s before it", searched.iter().filter(|(s, _)| *s < began).map(|(_, ms)| *ms).collect());
    latency(
        "searches while it was taken",
        searched.iter().filter(|(s, ms)| *s + ms / 1000.0 > began && *s < ended).map(|(_, ms)| *ms).collect(),
    );
    println!("searches that failed: {failed}");
    node.stop()?;

    // A new node beside a copy of the log, restored from the snapshot.
    std::fs::create_dir_all(&fresh)?;
    for file in ["log.redb", "auth-keys.json"] {
        std::fs::copy(source.join(file), fresh.join(file))?;
    }
    let snapshot = source.join("snapshots").join("bench");
    let restoring = Instant::now();
    backend.svc(&[
        "snapshot",
        "restore",
        "--data-dir",
        fresh.to_str().unwrap_or_default(),
        "--from",
        snapshot.to_str().unwrap_or_default(),
    ])?;
    println!("svc snapshot restore: {:.2} s", restoring.elapsed().as_secs_f64());
    let restored = start("the restored node", &fresh, &backend).await?;
    let alike = answers(&restored).await? == expected;
    println!("the restored node's searches answer as the source's: {alike}");
    anyhow::ensure!(alike, "the restored node answers differently");
    restored.stop()?;

    // What the snapshot spares a node that builds only its search index (a query node on
    // Kafka and ScyllaDB): the index rebuilt from the whole log.
    let rebuilding = Instant::now();
    backend.svc(&["replay", "--data-dir", source.to_str().unwrap_or_default(), "--model", "search"])?;
    println!("svc replay --model search (the index from the log): {:.1} s", rebuilding.elapsed().as_secs_f64());
    Ok(())
}
