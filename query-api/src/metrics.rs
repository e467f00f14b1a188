//! Prometheus metrics: one recorder per process (`metrics-exporter-prometheus`), fed by the
//! request layer ([`layer`]: a count by method, operation and status, and a duration
//! histogram by method and operation; it also traces each request) and, when scraped, by the read models' state (each
//! projection's applied events, lag, readiness and active version, the log's end offsets,
//! the dead letters). `/metrics` serves the text exposition format; the admin operations
//! `getPrometheusMetrics` and `getEndpointMetrics` read the same figures.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::{Counter, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use rustc_hash::FxHashMap as HashMap;
use serde_json::{json, Value};
use tracing::Instrument;

use crate::state::AppState;

/// Requests, by `method`, `path` (the operation) and `status`.
pub const REQUESTS: &str = "svc_requests_total";
/// Request durations in seconds, by `method` and `path`.
pub const DURATION: &str = "svc_request_duration_seconds";
/// The duration histogram's buckets (seconds).
const BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The process's recorder handle (installed as the global recorder on first use).
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(DURATION.into()), BUCKETS)
            .expect("the buckets are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics shows only what svc records through it");
        }
        handle
    })
}

/// The XRPC methods requests are counted under by name (the ones served and the ones the
/// contract or svc names), and the counter and histogram handles registered so far.
/// [`crate::app`] hands them to [`layer`].
#[derive(Debug, Default)]
pub struct Operations {
    /// `/xrpc/{nsid}` by NSID.
    xrpc: HashMap<&'static str, Box<str>>,
    /// By operation, then by method and status: the request counter and the duration
    /// histogram. A request finds its handles with two hash lookups under a read lock
    /// instead of building and hashing a labelled key per metric.
    handles: RwLock<HashMap<Box<str>, ByMethodAndStatus>>,
}

/// The handles of one operation's requests, by method and status.
type ByMethodAndStatus = HashMap<(&'static str, u16), (Counter, Histogram)>;

impl Operations {
    /// The operations named `nsids`.
    pub fn new(nsids: impl IntoIterator<Item = &'static str>) -> Operations {
        Operations { xrpc: nsids.into_iter().map(|n| (n, format!("/xrpc/{n}").into_boxed_str())).collect(), handles: RwLock::default() }
    }

    /// The operation a request is counted under: the XRPC method's path when it is one of
    /// these, the route's template otherwise, `other` for what no route matches (so a
    /// client cannot make up label values).
    fn of(&self, request: &Request) -> Operation<'_> {
        if let Some(nsid) = request.uri().path().strip_prefix("/xrpc/") {
            return Operation::Named(self.xrpc.get(nsid).map_or("/xrpc/other", |p| p));
        }
        request.extensions().get::<MatchedPath>().map_or(Operation::Named("other"), |m| Operation::Route(m.clone()))
    }

    /// Counts one answer and records its duration.
    fn record(&self, method: &'static str, operation: &str, status: u16, seconds: f64) {
        {
            let handles = self.handles.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((counter, histogram)) = handles.get(operation).and_then(|h| h.get(&(method, status))) {
                counter.increment(1);
                histogram.record(seconds);
                return;
            }
        }
        let counter = metrics::counter!(REQUESTS, "method" => method, "path" => operation.to_owned(), "status" => status.to_string());
        let histogram = metrics::histogram!(DURATION, "method" => method, "path" => operation.to_owned());
        counter.increment(1);
        histogram.record(seconds);
        let mut handles = self.handles.write().unwrap_or_else(PoisonError::into_inner);
        handles.entry(operation.into()).or_default().insert((method, status), (counter, histogram));
    }
}

/// The operation label of a request.
enum Operation<'a> {
    Named(&'a str),
    Route(MatchedPath),
}

impl Operation<'_> {
    fn as_str(&self) -> &str {
        match self {
            Operation::Named(name) => name,
            Operation::Route(route) => route.as_str(),
        }
    }
}

/// The method label: the method's name, `other` for an extension method (so a client
/// cannot make up label values).
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Counts, times and traces every request: a span per request (`request`, at DEBUG) with
/// its method and operation, closed by an event with the status and the duration. The
/// span costs next to nothing while DEBUG is filtered out for this target.
pub async fn layer(State(operations): State<Arc<Operations>>, request: Request, next: Next) -> Response {
    let (method, operation) = (method_label(request.method()), operations.of(&request));
    let span = tracing::debug_span!("request", method, operation = operation.as_str());
    let start = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let elapsed = start.elapsed();
    let status = response.status().as_u16();
    span.in_scope(|| tracing::debug!(status, duration_ms = elapsed.as_secs_f64() * 1000.0, "answered"));
    operations.record(method, operation.as_str(), status, elapsed.as_secs_f64());
    response
}

/// Sets the gauges of the read models and the log from their state now.
fn refresh_gauges(state: &AppState) {
    let ends = state.log.end_offsets().ok();
    for (model, rx) in state.progress.iter() {
        let p = rx.borrow().clone();
        metrics::gauge!("svc_projection_applied_events", "model" => *model).set(p.applied as f64);
        metrics::gauge!("svc_projection_caught_up", "model" => *model).set(f64::from(u8::from(p.caught_up)));
        if let Ok(lag) = state.log.events_behind(&p.checkpoints) {
            metrics::gauge!("svc_projection_lag_events", "model" => *model).set(lag as f64);
        }
    }
    for (partition, end) in ends.iter().flatten().enumerate() {
        metrics::gauge!("svc_log_end_offset", "partition" => partition.to_string()).set(*end as f64);
    }
    // Pages: of the store's files, the node's, and the log's (a capped 4 MiB).
    let (mut rows, mut pages) = (state.store.cache_bytes(), state.store.page_cache_bytes() + state.log.page_cache_bytes());
    if !Arc::ptr_eq(&state.store, &state.node) {
        rows += state.node.cache_bytes();
        pages += state.node.page_cache_bytes();
    }
    metrics::gauge!("svc_cache_bytes", "cache" => "rows").set(rows as f64);
    metrics::gauge!("svc_cache_bytes", "cache" => "pages").set(pages as f64);
    if let Ok(Some(index)) = state.search_index() {
        metrics::gauge!("svc_cache_bytes", "cache" => "search_answers").set(index.kept_answers().1 as f64);
    }
    if let Some(bytes) = crate::process::ProcessStatus::read().resident_bytes() {
        metrics::gauge!("svc_memory_resident_bytes").set(bytes as f64);
    }
    for model in projections::catalog::MODELS.iter() {
        let registry = if projections::catalog::NODE_MODELS.contains(model) { &state.node } else { &state.store };
        if let Ok(Some(v)) = registry.active_version(model) {
            metrics::gauge!("svc_model_active_version", "model" => *model).set(f64::from(v));
            if projections::catalog::DEAD_LETTER_MODELS.contains(model) {
                if let Ok(n) = projections::deadletter::count(state.store.as_ref(), model, v) {
                    metrics::gauge!("svc_dead_letters", "model" => *model).set(n as f64);
                }
            }
        }
    }
}

/// What refreshes gauges kept outside the read models before each scrape (the binary's
/// memory figures: [`refresh_on_scrape`]).
static REFRESHERS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());

/// Runs `refresh` before each rendering of the exposition, to set gauges of what the
/// process knows and this crate does not (its allocator's statistics), as of the scrape.
pub fn refresh_on_scrape(refresh: fn()) {
    REFRESHERS.lock().unwrap_or_else(PoisonError::into_inner).push(refresh);
}

/// The exposition text, with the gauges refreshed.
pub async fn render(state: &AppState) -> String {
    let s = state.clone();
    let _ = tokio::task::spawn_blocking(move || {
        refresh_gauges(&s);
        let refreshers = REFRESHERS.lock().unwrap_or_else(PoisonError::into_inner).clone();
        refreshers.iter().for_each(|refresh| refresh());
    })
    .await;
    handle().run_upkeep();
    handle().render()
}

/// `GET /metrics`: the Prometheus text exposition format.
pub async fn scrape(State(state): State<AppState>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], render(&state).await).into_response()
}

/// A sample's labels, in order.
type Labels = Vec<(String, String)>;

/// One sample of the exposition text: name, labels, value.
fn parse_sample(line: &str) -> Option<(String, Labels, f64)> {
    let (head, value) = line.rsplit_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let (name, labels) = match head.split_once('{') {
        Some((name, rest)) => (name, rest.strip_suffix('}')?),
        None => (head, ""),
    };
    let mut out = Vec::new();
    let mut rest = labels;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut end = 0;
        let bytes = after.as_bytes();
        while end < bytes.len() && !(bytes[end] == b'"' && (end == 0 || bytes[end - 1] != b'\\')) {
            end += 1;
        }
        out.push((key.trim_start_matches(',').to_owned(), after[..end].replace("\\\"", "\"")));
        rest = after.get(end + 1..).unwrap_or_default();
    }
    Some((name.to_owned(), out, value))
}

/// The exposition text as `[{name, type, values: [{labels, value}]}]`.
pub fn as_json(text: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let name = parts.next().unwrap_or_default();
            let kind = parts.next().unwrap_or("untyped");
            out.push(json!({"name": name, "type": kind, "values": []}));
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some((name, labels, value)) = parse_sample(line) else { continue };
        let labels: serde_json::Map<String, Value> = labels.into_iter().map(|(k, v)| (k, json!(v))).collect();
        let sample = json!({"sample": name, "labels": labels, "value": value});
        match out.last_mut() {
            Some(last) if name.starts_with(last["name"].as_str().unwrap_or_default()) => {
                last["values"].as_array_mut().expect("array").push(sample)
            }
            _ => out.push(json!({"name": name, "type": "untyped", "values": [sample]})),
        }
    }
    out
}

/// Per operation: `{method, path, requestCount, errorCount, errorRate (basis points), p50,
/// p95, p99 (µs, by linear interpolation within the histogram's buckets)}`, most requested
/// first. Errors are answers of 500 and above.
pub fn endpoint_metrics(text: &str) -> Vec<Value> {
    use std::collections::BTreeMap;
    type Key = (String, String);
    let mut buckets: BTreeMap<Key, Vec<(f64, f64)>> = BTreeMap::new();
    let mut counts: BTreeMap<Key, f64> = BTreeMap::new();
    let mut errors: BTreeMap<Key, f64> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, labels, value)) = parse_sample(line) else { continue };
        let label = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
        let key = (label("method"), label("path"));
        if name == format!("{DURATION}_bucket") {
            let le = label("le");
            let bound = if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap_or(f64::INFINITY) };
            buckets.entry(key).or_default().push((bound, value));
        } else if name == format!("{DURATION}_count") {
            counts.insert(key, value);
        } else if name == REQUESTS && label("status").parse::<u16>().is_ok_and(|s| s >= 500) {
            *errors.entry(key).or_default() += value;
        }
    }
    let mut out: Vec<Value> = counts
        .iter()
        .map(|(key, &n)| {
            let mut b = buckets.get(key).cloned().unwrap_or_default();
            b.sort_by(|x, y| x.0.total_cmp(&y.0));
            let quantile = |q: f64| -> u64 {
                let rank = q * n;
                let mut previous = (0.0, 0.0);
                for &(bound, cumulative) in &b {
                    if cumulative >= rank {
                        let upper = if bound.is_finite() { bound } else { previous.0 };
                        let within = if cumulative > previous.1 { (rank - previous.1) / (cumulative - previous.1) } else { 0.0 };
                        return ((previous.0 + (upper - previous.0) * within) * 1e6).round() as u64;
                    }
                    previous = (bound, cumulative);
                }
                (previous.0 * 1e6).round() as u64
            };
            let e = errors.get(key).copied().unwrap_or(0.0);
            json!({
                "method": key.0, "path": key.1, "requestCount": n as u64, "errorCount": e as u64,
                "errorRate": if n > 0.0 { (e * 10_000.0 / n).round() as u64 } else { 0 },
                "p50": quantile(0.5), "p95": quantile(0.95), "p99": quantile(0.99),
            })
        })
        .collect();
    out.sort_by(|a, b| b["requestCount"].as_u64().cmp(&a["requestCount"].as_u64()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_labelled_only_with_values_svc_names() {
        let ops = Operations::new(["pub.svc.eprint.getSubmission"]);
        let label = |path: &str| ops.of(&Request::builder().uri(path).body(axum::body::Body::empty()).unwrap()).as_str().to_owned();
        assert_eq!(label("/xrpc/pub.svc.eprint.getSubmission?uri=x"), "/xrpc/pub.svc.eprint.getSubmission");
        assert_eq!(label("/xrpc/made.up.method"), "/xrpc/other");
        assert_eq!(label("/no/route"), "other");
        assert_eq!(method_label(&axum::http::Method::GET), "GET");
        assert_eq!(method_label(&axum::http::Method::from_bytes(b"BREW").unwrap()), "other");
    }

    #[test]
    fn percentiles_interpolate_within_buckets_and_errors_are_5xx() {
        let text = r#"# TYPE svc_requests_total counter
svc_requests_total{method="GET",path="/xrpc/a",status="200"} 90
svc_requests_total{method="GET",path="/xrpc/a",status="503"} 10
# TYPE svc_request_duration_seconds histogram
svc_request_duration_seconds_bucket{method="GET",path="/xrpc/a",le="0.001"} 50
svc_request_duration_seconds_bucket{method="GET",path="/xrpc/a",le="0.002"} 100
svc_request_duration_seconds_bucket{method="GET",path="/xrpc/a",le="+Inf"} 100
svc_request_duration_seconds_sum{method="GET",path="/xrpc/a"} 0.1
svc_request_duration_seconds_count{method="GET",path="/xrpc/a"} 100
"#;
        let m = endpoint_metrics(text);
        assert_eq!(m.len(), 1);
        assert_eq!(
            (m[0]["requestCount"].as_u64(), m[0]["errorCount"].as_u64(), m[0]["errorRate"].as_u64()),
            (Some(100), Some(10), Some(1000))
        );
        assert_eq!((m[0]["p50"].as_u64(), m[0]["p95"].as_u64(), m[0]["p99"].as_u64()), (Some(1000), Some(1900), Some(1980)));
        let j = as_json(text);
        assert_eq!(j[0]["name"], "svc_requests_total");
        assert_eq!(j[0]["values"][1]["labels"]["status"], "503");
        assert_eq!(j[1]["type"], "histogram");
        assert_eq!(j[1]["values"].as_array().unwrap().len(), 5);
    }
}
