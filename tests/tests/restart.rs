//! A node that caught up with a large log restarts itself in place (`--restart-after-catch-up`):
//! the same process, still listening throughout, answering the same afterwards.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tests::{free_port, sample_papers, svc, Backend, Service};

#[tokio::test(flavor = "multi_thread")]
async fn a_node_restarts_in_place_after_a_large_catch_up_and_refuses_no_connection() {
    // Not beside a real-PDS scenario: a catch-up and a client in a loop on two cores would
    // stretch that scenario's write-to-visible lags past their bound.
    let _one_at_a_time = tests::serial().await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let seeded: serde_json::Value =
        serde_json::from_str(svc(&["seed", "--data-dir", data.to_str().unwrap(), sample_papers().to_str().unwrap()]).unwrap().trim())
            .unwrap();
    let papers = seeded["papers"].as_u64().unwrap();

    let port = free_port();
    let mut service = Service::start_args("up", &data, port, &Backend::embedded(), &["--restart-after-catch-up", "1000"]).await.unwrap();
    let pid = service.pid();

    // A client that opens a new connection for every request, all through the restart.
    let (stop, answered, failed) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let client = {
        let (stop, answered, failed, base) = (stop.clone(), answered.clone(), failed.clone(), service.base.clone());
        tokio::spawn(async move {
            let http = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
            let mut errors = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                // A request every 10 ms or so: a few dozen in the restart's fraction of a second.
                tokio::time::sleep(Duration::from_millis(10)).await;
                match http.get(format!("{base}/health/liveness")).send().await {
                    Ok(r) if r.status().is_success() => answered.fetch_add(1, Ordering::Relaxed),
                    Ok(r) => {
                        errors.push(format!("answered {}", r.status()));
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(e) => {
                        errors.push(format!("{e:?}"));
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
            errors
        })
    };

    let deadline = Instant::now() + Duration::from_secs(120);
    while !service.log().contains("restarted in place after the catch-up") {
        assert!(Instant::now() < deadline, "no restart after the catch-up; the log:\n{}", service.log());
        assert!(service.running(), "svc exited; its log:\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    service.wait_caught_up().await.unwrap();
    let before_stop = answered.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let errors = client.await.unwrap();

    // The same process, never without its socket: every request was answered.
    assert!(service.running());
    assert_eq!(service.pid(), pid);
    assert_eq!(failed.load(Ordering::Relaxed), 0, "requests failed through the restart: {errors:?}");
    assert!(answered.load(Ordering::Relaxed) > before_stop, "nothing was answered after the restart");
    let log = service.log();
    assert_eq!(log.matches("restarting in place").count(), 1, "restarted more than once:\n{log}");

    // The fresh image serves the read models the first one built.
    let (status, _, all) = service.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=1").await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(all["total"].as_u64().unwrap(), papers);
    service.stop().unwrap();
}
