//! A full disk on the embedded backend, mid-seed and mid-projection. It is simulated with a
//! file-size limit (`RLIMIT_FSIZE`, with `SIGXFSZ` ignored): a write past it fails with
//! `EFBIG` as a write to a full disk fails with `ENOSPC`, through the same paths. svc says
//! which file failed and why, exits without corrupting anything, and once the limit is
//! gone a restart loses nothing that was acknowledged.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use tests::topology::SvcProcess;
use tests::{sample_papers, svc, svc_bin, Service};

/// Runs `svc args` with files limited to `bytes`, to its end (at most 120 s).
fn svc_limited(bytes: u64, args: &[&str]) -> Output {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        // Ignored, SIGXFSZ stays ignored through both execs: the write fails instead.
        .arg(r#"trap "" XFSZ; exec prlimit --fsize="$0":unlimited "$@""#)
        .arg(bytes.to_string())
        .arg(svc_bin())
        .args(args)
        .env("RUST_LOG", "warn")
        .env("RUST_BACKTRACE", "0");
    let mut child = SvcProcess::spawn(command);
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("svc {args:?} did not stop within 120 s of its files reaching {bytes} bytes");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_stops_svc_cleanly_and_a_restart_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let papers = sample_papers();

    // Mid-seed: the log's file cannot grow past 3 MB (the whole seed needs about 17).
    let batch = 20;
    let out = svc_limited(3 << 20, &["seed", "--data-dir", data_s, "--batch", &batch.to_string(), papers.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the seed stopped at the limit: {stderr}");
    assert!(stderr.contains("event log file failed: File too large"), "it says what failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // The log is intact: every event decodes, offsets are contiguous, only whole appends.
    let tail = svc(&["log", "tail", "--data-dir", data_s]).unwrap();
    let events: Vec<Value> = tail.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["position"]["offset"], i as u64);
    }
    let records = events.iter().filter(|e| e["kind"] == "repo.record.create").count();
    assert!(records > 0 && records % batch == 0, "whole appends were kept up to the limit: {records} records");

    // Space returns: the seed runs to its end (the first papers a second time).
    let report: Value = serde_json::from_str(svc(&["seed", "--data-dir", data_s, papers.to_str().unwrap()]).unwrap().trim()).unwrap();
    let total = report["papers"].as_u64().unwrap();

    // Mid-projection: the store's file cannot grow past 2 MB.
    let port = tests::free_port();
    let listen = format!("127.0.0.1:{port}");
    let out = svc_limited(2 << 20, &["up", "--data-dir", data_s, "--listen", &listen]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("file failed: File too large"), "it says what failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Space returns: a restart projects everything, every paper once.
    let service = Service::start_on(&data, port).await.unwrap();
    service.wait_caught_up().await.unwrap();
    let (status, _, all) = service.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=1").await.unwrap();
    assert_eq!(status, 200, "{all}");
    assert_eq!(all["total"].as_u64(), Some(total), "every paper once after the restart");
    let (_, _, health) = service.get("/health/readiness").await.unwrap();
    assert_eq!(health["status"], "ok", "{health}");
}
