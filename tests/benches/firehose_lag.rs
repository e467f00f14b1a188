//! The lag from a PDS write to its visibility in the API, through the firehose: a real PDS,
//! `svc up --firehose`, N records written one after another, each polled (every 2 ms) on
//! `getSubmission` until it answers 200. Prints p50, p90, p99 and max, measured from the
//! moment `createRecord` returned (the write is committed at the PDS).
//!
//! `SVC_BIN=target/release/svc cargo bench -p tests --bench firehose_lag` (N from
//! `LAG_WRITES`, default 200). Needs the PDS that `scripts/peers.sh` installs.

use std::time::{Duration, Instant};

use tests::pds::{submission, Pds};
use tests::{enc, Backend, Service};

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let writes: usize = std::env::var("LAG_WRITES").ok().and_then(|n| n.parse().ok()).unwrap_or(200);
    let pds = Pds::start()?;
    let alice = pds.create_account("alice").await?;
    let backend = Backend::embedded()
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url);
    let dir = tempfile::tempdir()?;
    let svc = Service::start_with(&dir.path().join("data"), tests::free_port(), &backend).await?;
    let http = reqwest::Client::new();
    let mut lags = Vec::with_capacity(writes);
    for i in 0..writes + 5 {
        let (uri, _) = pds.create_record(&alice, "pub.svc.eprint.submission", &submission(&format!("Lag probe {i}"), &alice, None)).await?;
        let written = Instant::now();
        let url = format!("{}/xrpc/pub.svc.eprint.getSubmission?uri={}", svc.base, enc(&uri));
        loop {
            if http.get(&url).send().await?.status().is_success() {
                break;
            }
            anyhow::ensure!(written.elapsed() < Duration::from_secs(30), "{uri} not visible after 30 s");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // The first writes warm the DID cache and the connection.
        if i >= 5 {
            lags.push(written.elapsed());
        }
    }
    lags.sort();
    let at = |q: f64| lags[((lags.len() as f64 * q).ceil() as usize).clamp(1, lags.len()) - 1].as_secs_f64() * 1000.0;
    println!(
        "firehose lag over {} writes (ms): p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
        lags.len(),
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0)
    );
    Ok(())
}
