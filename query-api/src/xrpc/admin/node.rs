//! The node's own figures: `getNodeMetrics` (process and runtime), and the Prometheus
//! figures as JSON (`getPrometheusMetrics`, `getEndpointMetrics`).

use serde_json::json;

use crate::body::Body;
use crate::error::ApiError;
use crate::xrpc::method::{Answer, Call};

/// `getPrometheusMetrics`: every sample of `/metrics`, as JSON, with the time read.
pub(super) async fn prometheus_metrics(c: Call) -> Answer {
    let text = crate::metrics::render(&c.state).await;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    Body::json(&json!({"metrics": crate::metrics::as_json(&text), "timestamp": now}))
}

/// `getEndpointMetrics`: requests, errors and latency percentiles per operation.
pub(super) async fn endpoint_metrics(c: Call) -> Answer {
    Body::json(&json!({"metrics": crate::metrics::endpoint_metrics(&crate::metrics::render(&c.state).await)}))
}

/// `getNodeMetrics`: `{metrics: [{name, value, type, unit}], processInfo}`. The spec's
/// Node.js fields, mapped to what a Rust process has (docs/decisions.md, "Node metrics"):
/// `heapUsed` = the resident set and `heapTotal` = the virtual size (Rust has no separate
/// managed heap), `external` = 0, `cpuUser`/`cpuSystem` = CPU time in µs (`getrusage`),
/// `eventLoopLag` = how long a task spawned now waits for a tokio worker, in µs.
pub(super) async fn node_metrics(c: Call) -> Answer {
    let start = std::time::Instant::now();
    tokio::spawn(async {}).await.map_err(|e| ApiError::internal(e.to_string()))?;
    let lag_us = start.elapsed().as_micros() as u64;
    let status = crate::process::ProcessStatus::read();
    let (rss, vsz) = (status.resident_bytes().unwrap_or(0), status.field("VmSize:").unwrap_or(0) * 1024);
    // SAFETY: getrusage writes into the struct it is given and reads nothing else.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    let runtime = tokio::runtime::Handle::current().metrics();
    let mut metrics = vec![
        json!({"name": "tokio_workers", "value": runtime.num_workers().to_string(), "type": "gauge", "unit": "threads"}),
        json!({"name": "tokio_alive_tasks", "value": runtime.num_alive_tasks().to_string(), "type": "gauge", "unit": "tasks"}),
        json!({"name": "tokio_global_queue_depth", "value": runtime.global_queue_depth().to_string(), "type": "gauge", "unit": "tasks"}),
        json!({"name": "process_resident_memory_bytes", "value": rss.to_string(), "type": "gauge", "unit": "bytes"}),
        json!({"name": "process_virtual_memory_bytes", "value": vsz.to_string(), "type": "gauge", "unit": "bytes"}),
        json!({"name": "process_threads", "value": status.field("Threads:").unwrap_or(0).to_string(), "type": "gauge", "unit": "threads"}),
    ];
    for (model, rx) in c.state.progress.iter() {
        let p = rx.borrow().clone();
        metrics.push(json!({"name": format!("svc_projection_applied_events{{model=\"{model}\"}}"), "value": p.applied.to_string(), "type": "counter", "unit": "events"}));
        metrics.push(json!({"name": format!("svc_projection_caught_up{{model=\"{model}\"}}"), "value": u8::from(p.caught_up).to_string(), "type": "gauge", "unit": "boolean"}));
    }
    Body::json(&json!({
        "metrics": metrics,
        "processInfo": {
            "pid": std::process::id(),
            "uptime": c.state.started.elapsed().as_secs(),
            "heapUsed": rss,
            "heapTotal": vsz,
            "rss": rss,
            "external": 0,
            "cpuUser": micros(usage.ru_utime),
            "cpuSystem": micros(usage.ru_stime),
            "eventLoopLag": lag_us,
        },
    }))
}
