//! The soak: svc on the embedded default, seeded with the committed sample and its
//! scholarly layer, follows a real PDS's firehose for a while (30 minutes by default) while
//! accounts on that PDS write reviews, annotations and eprints and readers run a mixed query
//! load. It reports, per 5-minute window, each write's lag (from `createRecord`'s answer to
//! svc serving the record: p50, p99, max), the reads answered and failed, and the resident
//! set; the resident set once a minute, with what `/metrics` says holds it (the allocator's
//! statistics, the caches); and the ERROR lines svc logged. Not part of CI: its
//! figures go in docs/performance.md.
//!
//! ```sh
//! cargo build --release --bin svc
//! SVC_BIN=target/release/svc cargo run --release -p tests --example soak -- [MINUTES] [WRITES/S] [READS/S]
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::pds::{submission, Account, Pds};
use tests::{enc, free_port, workspace_root, Backend, Service};

/// The length of a reporting window.
const WINDOW: Duration = Duration::from_secs(300);
/// Reader tasks sharing the read rate.
const READERS: usize = 4;
/// How long a write may take to show before it counts as never shown.
const GIVE_UP: Duration = Duration::from_secs(60);

/// What one window saw.
#[derive(Default)]
struct Window {
    lags_ms: Vec<f64>,
    unseen: u64,
    write_errors: u64,
    rss_mb: Vec<u64>,
}

struct Shared {
    started: Instant,
    windows: Mutex<Vec<Window>>,
    reads_ok: Vec<AtomicU64>,
    reads_failed: Vec<AtomicU64>,
}

impl Shared {
    fn window(&self) -> usize {
        (self.started.elapsed().as_secs() / WINDOW.as_secs()) as usize
    }

    fn record(&self, f: impl FnOnce(&mut Window)) {
        let i = self.window();
        let mut windows = self.windows.lock().unwrap();
        while windows.len() <= i {
            windows.push(Window::default());
        }
        f(&mut windows[i]);
    }
}

fn arg(n: usize, default: f64) -> f64 {
    std::env::args().nth(n).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn rich(text: &str) -> Value {
    json!([{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}])
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// What svc's `/metrics` says its memory holds, in MB: the allocator's statistics and the
/// caches' sizes.
async fn memory_parts(svc: &Service) -> Vec<(&'static str, f64)> {
    let text = match svc.get_bytes("/metrics").await {
        Ok((200, body)) => String::from_utf8_lossy(&body).into_owned(),
        _ => String::new(),
    };
    let sample = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok()).unwrap_or(f64::NAN) / 1e6;
    [
        ("allocated", "svc_allocator_bytes{stat=\"allocated\"}"),
        ("allocator resident", "svc_allocator_bytes{stat=\"resident\"}"),
        ("allocator metadata", "svc_allocator_bytes{stat=\"metadata\"}"),
        ("row cache", "svc_cache_bytes{cache=\"rows\"}"),
        ("page caches", "svc_cache_bytes{cache=\"pages\"}"),
        ("kept answers", "svc_cache_bytes{cache=\"answers\"}"),
        ("search answers", "svc_cache_bytes{cache=\"search_answers\"}"),
    ]
    .into_iter()
    .map(|(label, name)| (label, sample(name)))
    .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Writes one record through the PDS and waits until svc serves it; the lag in ms.
async fn write_and_watch(svc: &str, pds: &Pds, who: &Account, n: u64, eprints: &[String]) -> anyhow::Result<Option<f64>> {
    let eprint = &eprints[n as usize % eprints.len()];
    let (collection, record, view) = match n % 3 {
        0 => (
            "pub.svc.review.comment",
            json!({"eprintUri": eprint, "body": rich(&format!("Soak review {n}.")), "createdAt": now()}),
            "review.getThread",
        ),
        1 => (
            "pub.svc.annotation.comment",
            json!({"eprintUri": eprint, "body": rich(&format!("Soak note {n}.")), "motivationFallback": "commenting",
                   "target": {"selector": {"type": "TextQuoteSelector", "exact": "the"}}, "createdAt": now()}),
            "annotation.getThread",
        ),
        _ => ("pub.svc.eprint.submission", submission(&format!("Soak paper {n} on message passing"), who, None), "eprint.getSubmission"),
    };
    let (uri, _) = pds.create_record(who, collection, &record).await?;
    let written = Instant::now();
    let url = format!("{svc}/xrpc/pub.svc.{view}?uri={}", enc(&uri));
    let http = reqwest::Client::new();
    while written.elapsed() < GIVE_UP {
        if http.get(&url).send().await.is_ok_and(|r| r.status().is_success()) {
            return Ok(Some(written.elapsed().as_secs_f64() * 1000.0));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(None)
}

/// The read mix: an eprint, its reviews and endorsements, a search, the trending list.
fn read_path(n: u64, eprints: &[String]) -> String {
    let e = enc(&eprints[(n / 5) as usize % eprints.len()]);
    let words = ["graph", "neural networks", "attention", "quantum", "learning"];
    match n % 5 {
        0 => format!("/xrpc/pub.svc.eprint.getSubmission?uri={e}"),
        1 => format!("/xrpc/pub.svc.review.listForEprint?eprintUri={e}"),
        2 => format!("/xrpc/pub.svc.endorsement.getSummary?uri={e}"),
        3 => format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}&limit=10", enc(words[(n / 5) as usize % words.len()])),
        _ => "/xrpc/pub.svc.metrics.getTrending?window=7d&limit=10".to_owned(),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let minutes = arg(1, 30.0);
    let writes_per_s = arg(2, 2.0);
    let reads_per_s = arg(3, 200.0);
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let sample = workspace_root().join("fixtures/arxiv-sample-3k.jsonl.gz");
    println!("seeding {} with its scholarly layer", sample.display());
    tests::svc(&["seed", "--social", "--data-dir", data.to_str().unwrap(), sample.to_str().unwrap()])?;
    let pds = Arc::new(Pds::start()?);
    let mut writers = Vec::new();
    for i in 0..8 {
        writers.push(pds.create_account(&format!("soak{i}")).await?);
    }
    let backend = Backend::embedded()
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url);
    let svc = Service::start_with(&data, free_port(), &backend).await?;
    let caught_up = Instant::now();
    svc.wait_caught_up().await?;
    println!("caught up with the seed in {:.1} s; soaking for {minutes} min", caught_up.elapsed().as_secs_f64());
    let page: Value = reqwest::get(format!("{}/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=100", svc.base)).await?.json().await?;
    let eprints: Arc<Vec<String>> =
        Arc::new(page["submissions"].as_array().into_iter().flatten().filter_map(|s| s["uri"].as_str().map(str::to_owned)).collect());
    anyhow::ensure!(!eprints.is_empty(), "no seeded eprint found: {page}");

    let shared = Arc::new(Shared {
        started: Instant::now(),
        windows: Mutex::new(Vec::new()),
        reads_ok: (0..(minutes * 60.0 / WINDOW.as_secs_f64()).ceil() as usize + 1).map(|_| AtomicU64::new(0)).collect(),
        reads_failed: (0..(minutes * 60.0 / WINDOW.as_secs_f64()).ceil() as usize + 1).map(|_| AtomicU64::new(0)).collect(),
    });
    let end = shared.started + Duration::from_secs_f64(minutes * 60.0);

    let mut tasks = Vec::new();
    for r in 0..READERS {
        let (base, eprints, shared) = (svc.base.clone(), eprints.clone(), shared.clone());
        let interval = Duration::from_secs_f64(READERS as f64 / reads_per_s);
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut tick = tokio::time::interval(interval);
            let mut n = r as u64;
            while Instant::now() < end {
                tick.tick().await;
                let ok = http.get(format!("{base}{}", read_path(n, &eprints))).send().await.is_ok_and(|r| r.status().is_success());
                let w = shared.window().min(shared.reads_ok.len() - 1);
                if ok { &shared.reads_ok[w] } else { &shared.reads_failed[w] }.fetch_add(1, Ordering::Relaxed);
                n += READERS as u64;
            }
        }));
    }
    {
        let (base, eprints, shared, pds) = (svc.base.clone(), eprints.clone(), shared.clone(), pds.clone());
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / writes_per_s));
            let mut watching = Vec::new();
            let mut n = 0u64;
            while Instant::now() < end {
                tick.tick().await;
                let (base, eprints, shared, pds, who) =
                    (base.clone(), eprints.clone(), shared.clone(), pds.clone(), writers[n as usize % writers.len()].clone());
                watching.push(tokio::spawn(async move {
                    match write_and_watch(&base, &pds, &who, n, &eprints).await {
                        Ok(Some(lag)) => shared.record(|w| w.lags_ms.push(lag)),
                        Ok(None) => shared.record(|w| w.unseen += 1),
                        Err(e) => {
                            eprintln!("write {n}: {e}");
                            shared.record(|w| w.write_errors += 1);
                        }
                    }
                }));
                n += 1;
            }
            for w in watching {
                let _ = w.await;
            }
        }));
    }
    let mut rss_curve = Vec::new();
    let mut sample = tokio::time::interval(Duration::from_secs(10));
    sample.tick().await;
    for n in 1u64.. {
        if Instant::now() >= end {
            break;
        }
        sample.tick().await;
        let rss = svc.resident_mb().unwrap_or(0);
        shared.record(|w| w.rss_mb.push(rss));
        if n % 6 == 0 {
            let parts = memory_parts(&svc).await;
            println!(
                "{:>3} min: resident {rss} MB; {}",
                n / 6,
                parts.iter().map(|(k, mb)| format!("{k} {mb:.1}")).collect::<Vec<_>>().join(", ")
            );
            rss_curve.push((n / 6, rss, parts));
        }
    }
    for t in tasks {
        let _ = t.await;
    }

    println!("\n| window | writes shown | lag p50 ms | lag p99 ms | lag max ms | not shown | write errors | reads ok | reads failed | resident MB (min–max) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let windows = shared.windows.lock().unwrap();
    for (i, w) in windows.iter().enumerate() {
        let mut lags = w.lags_ms.clone();
        lags.sort_by(f64::total_cmp);
        let (lo, hi) = (w.rss_mb.iter().min().copied().unwrap_or(0), w.rss_mb.iter().max().copied().unwrap_or(0));
        println!(
            "| {}–{} min | {} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {} | {lo}–{hi} |",
            i * 5,
            (i + 1) * 5,
            lags.len(),
            percentile(&lags, 0.5),
            percentile(&lags, 0.99),
            lags.last().copied().unwrap_or(f64::NAN),
            w.unseen,
            w.write_errors,
            shared.reads_ok.get(i).map_or(0, |c| c.load(Ordering::Relaxed)),
            shared.reads_failed.get(i).map_or(0, |c| c.load(Ordering::Relaxed)),
        );
    }
    println!("\nresident MB per minute: {}", rss_curve.iter().map(|(m, r, _)| format!("{m}:{r}")).collect::<Vec<_>>().join(" "));
    if let Some((_, _, parts)) = rss_curve.first() {
        println!("\n| minute | resident MB | {} |", parts.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(" | "));
        println!("|---|---|{}", "---|".repeat(parts.len()));
        for (m, r, parts) in &rss_curve {
            println!("| {m} | {r} | {} |", parts.iter().map(|(_, mb)| format!("{mb:.1}")).collect::<Vec<_>>().join(" | "));
        }
    }
    let log = svc.log();
    let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ") || l.contains("panicked")).collect();
    println!("svc logged {} ERROR lines{}", errors.len(), errors.first().map(|l| format!("; the first: {l}")).unwrap_or_default());
    svc.stop()?;
    Ok(())
}
