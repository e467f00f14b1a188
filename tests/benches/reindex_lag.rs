//! The lag from a PDS write to its visibility in the API while an admin's full reindex runs,
//! against the same lag just before it: a real PDS, `svc up --firehose` on the embedded
//! backend over a seeded data directory, submissions written one after another, each polled
//! (every 2 ms) on `getSubmission` until it answers 200; then `admin.triggerFullReindex`,
//! and the same writes until the reindex has ended. Prints p50, p90 and max of each and
//! their ratio (docs/performance.md, "Reindex"), and the resident set before the reindex and
//! 10 s after it.
//!
//! `SVC_BIN=target/release/svc cargo bench -p tests --bench reindex_lag`; `LAG_PAPERS`: a
//! JSON-lines file (gzip or plain) to seed, default the committed sample;
//! `LAG_WRITES`: writes before the reindex (default 40); `LAG_SERIES`: a file to write each
//! write's time since the reindex began and its lag to (CSV, ms); `LAG_RUST_LOG`: svc's log
//! filter, and `LAG_SVC_LOG`: a file to copy svc's log to at the end. Needs the PDS that
//! `scripts/peers.sh` installs.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use data_encoding::BASE64URL_NOPAD;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tests::pds::{submission, Account, Pds};
use tests::{enc, Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";
const VERIFIER: &str = "M25iVXpKU3puUjFaYWg3T1NDTDQtcW1ROUY5YXlwalNoc0hhakxifmZHag";

/// An admin's access token, the AT Protocol way (a service-auth proof from the PDS).
async fn login(svc: &Service, pds: &Pds, who: &Account) -> anyhow::Result<String> {
    let proof = pds.service_auth(who, SERVICE_DID, query_api::auth::oauth::AUTHORIZE_LXM, None).await?;
    let challenge = BASE64URL_NOPAD.encode(&Sha256::digest(VERIFIER.as_bytes()));
    let (_, code) =
        svc.post("/oauth/authorize", Some(&proof), &json!({"code_challenge": challenge, "code_challenge_method": "S256"})).await?;
    let body = json!({"grant_type": "authorization_code", "code": code["code"], "code_verifier": VERIFIER});
    let (status, tokens) = svc.post("/oauth/token", None, &body).await?;
    anyhow::ensure!(status == 200, "login: {tokens}");
    Ok(tokens["access_token"].as_str().unwrap_or_default().to_owned())
}

/// Writes one submission and waits until `getSubmission` serves it: the lag.
async fn probe(pds: &Pds, svc: &Service, alice: &Account, i: usize) -> anyhow::Result<Duration> {
    let http = reqwest::Client::new();
    let (uri, _) = pds.create_record(alice, "pub.svc.eprint.submission", &submission(&format!("Lag probe {i}"), alice, None)).await?;
    let written = Instant::now();
    let url = format!("{}/xrpc/pub.svc.eprint.getSubmission?uri={}", svc.base, enc(&uri));
    loop {
        if http.get(&url).send().await?.status().is_success() {
            return Ok(written.elapsed());
        }
        anyhow::ensure!(written.elapsed() < Duration::from_secs(120), "{uri} not visible after 120 s");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn summary(mut lags: Vec<Duration>) -> (f64, f64, f64) {
    lags.sort();
    let at = |q: f64| lags[((lags.len() as f64 * q).ceil() as usize).clamp(1, lags.len()) - 1].as_secs_f64() * 1000.0;
    (at(0.5), at(0.9), at(1.0))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let writes: usize = std::env::var("LAG_WRITES").ok().and_then(|n| n.parse().ok()).unwrap_or(40);
    let papers = std::env::var("LAG_PAPERS").map(PathBuf::from).unwrap_or_else(|_| tests::sample_papers());
    let pds = Pds::start()?;
    let alice = pds.create_account("alice").await?;
    let adam = pds.create_account("adam").await?;
    let backend = Backend::embedded()
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url)
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_ADMIN_DIDS", &adam.did)
        .with_env("SVC_RATE_LIMITS", "off");
    let backend = match std::env::var("LAG_RUST_LOG") {
        Ok(filter) => backend.with_env("RUST_LOG", &filter),
        Err(_) => backend,
    };
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let seeded = Instant::now();
    backend.svc(&["seed", "--data-dir", data.to_str().unwrap_or_default(), papers.to_str().unwrap_or_default()])?;
    println!("seeded {} in {:.1} s", papers.display(), seeded.elapsed().as_secs_f64());
    let svc = Service::start_with(&data, tests::free_port(), &backend).await?;
    svc.wait_caught_up().await?;
    let token = login(&svc, &pds, &adam).await?;

    // The first writes warm the DID cache and the connection.
    for i in 0..5 {
        probe(&pds, &svc, &alice, i).await?;
    }
    let mut before = Vec::new();
    for i in 0..writes {
        before.push(probe(&pds, &svc, &alice, 100 + i).await?);
    }
    let resident_before = svc.resident_mb();
    let (status, started) = svc.post("/xrpc/pub.svc.admin.triggerFullReindex", Some(&token), &json!({})).await?;
    anyhow::ensure!(status == 200, "triggerFullReindex: {started}");
    let id = started["operationId"].as_str().unwrap_or_default().to_owned();
    let reindexing = Instant::now();
    let http = reqwest::Client::new();
    let running = || async {
        let url = format!("{}/xrpc/pub.svc.admin.getBackfillStatus?id={id}", svc.base);
        let body: Value = http.get(url).bearer_auth(&token).send().await?.json().await?;
        anyhow::Ok(body["operation"]["status"] == "running")
    };
    let mut during = Vec::new();
    let mut series = String::from("since_reindex_ms,lag_ms\n");
    while running().await? {
        let at = reindexing.elapsed();
        let lag = probe(&pds, &svc, &alice, 10_000 + during.len()).await?;
        series.push_str(&format!("{},{:.1}\n", at.as_millis(), lag.as_secs_f64() * 1000.0));
        during.push(lag);
    }
    if let Ok(path) = std::env::var("LAG_SERIES") {
        std::fs::write(path, series)?;
    }
    anyhow::ensure!(!during.is_empty(), "the reindex ended before a write could be made during it");
    let reindex = reindexing.elapsed().as_secs_f64();
    let (b50, b90, bmax) = summary(before.clone());
    let (d50, d90, dmax) = summary(during.clone());
    println!("write lag before the reindex ({} writes), ms: p50 {b50:.1}  p90 {b90:.1}  max {bmax:.1}", before.len());
    println!("write lag during the reindex ({} writes over {reindex:.1} s), ms: p50 {d50:.1}  p90 {d90:.1}  max {dmax:.1}", during.len());
    println!("during / before: p50 {:.2}×  p90 {:.2}×  max {:.2}×", d50 / b50, d90 / b90, dmax / bmax);
    let log = svc.log();
    let held = log.lines().find(|l| l.contains("held for the last catch-up and the swap")).unwrap_or("(not logged)");
    println!("the live workers' hold for the swap: {held}");
    tokio::time::sleep(Duration::from_secs(10)).await;
    println!("resident before the reindex {resident_before:?} MB, 10 s after it ended {:?} MB", svc.resident_mb());
    if let Ok(path) = std::env::var("LAG_SVC_LOG") {
        std::fs::write(path, svc.log())?;
    }
    Ok(())
}
