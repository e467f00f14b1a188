//! The XRPC mechanism, in process: routing by NSID, the shared call steps (HTTP method,
//! parameters, auth, body), the derived served and 501 sets, and the error envelopes.

use crate::support;

use axum::http::{Method, StatusCode};
use serde_json::json;
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";

fn seeded() -> Fixture {
    let mut f = Fixture::new();
    f.apply(vec![create(
        ALICE,
        "pub.svc.eprint.submission",
        "p1",
        "3l0000000000a",
        submission("Sparse Transformers", ALICE, "2024-05-01T00:00:00Z"),
    )]);
    f
}

#[tokio::test]
async fn a_registered_query_answers_from_the_read_model() {
    let f = seeded();
    let uri = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    let (status, body) = f.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&uri))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["record"]["title"], "Sparse Transformers");
    // The alias `did` of listByAuthor.
    let (status, body) = f.get(&format!("/xrpc/pub.svc.eprint.listByAuthor?did={ALICE}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["total"], 1);
}

#[tokio::test]
async fn a_kept_answer_follows_every_write() {
    let mut f = seeded();
    let uri = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    let path = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&uri));
    let (_, first) = f.get(&path).await;
    let (_, again) = f.get(&path).await;
    assert_eq!(first, again, "the same state, the same answer");
    assert_eq!(again["record"]["title"], "Sparse Transformers");
    let listing = format!("/xrpc/pub.svc.eprint.listByAuthor?did={ALICE}");
    assert_eq!(f.get(&listing).await.1["total"], 1);

    let title = "Sparse Transformers, revised";
    f.apply(vec![update(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000b", submission(title, ALICE, "2024-05-01T00:00:00Z"))]);
    let (status, body) = f.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["record"]["title"], title, "an update is served at once");

    f.apply(vec![delete(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000c")]);
    let (status, body) = f.get(&path).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a delete is served at once: {body}");
    // The listing kept beside it follows too.
    assert_eq!(f.get(&listing).await.1["total"], 0);
}

/// A kept answer goes gzipped to a client that accepts gzip (compressed once, when kept),
/// as it is to one that does not; both say `Vary: Accept-Encoding`.
#[tokio::test]
async fn a_kept_answer_is_sent_gzipped_to_those_that_accept_it() {
    use std::io::Read;
    use tower::ServiceExt;
    let mut f = Fixture::new();
    let mut record = submission("Sparse Transformers", ALICE, "2024-05-01T00:00:00Z");
    record["abstract"] = json!("Attention over long sequences, made sparse. ".repeat(40));
    f.apply(vec![create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", record)]);
    let path = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&format!("at://{ALICE}/pub.svc.eprint.submission/p1")));
    let raw = |encoding: Option<&'static str>| {
        let (app, path) = (f.app.clone(), path.clone());
        async move {
            let mut request = axum::http::Request::get(path);
            if let Some(e) = encoding {
                request = request.header("accept-encoding", e);
            }
            let response = app.oneshot(request.body(axum::body::Body::empty()).unwrap()).await.unwrap();
            let headers = response.headers().clone();
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
            (headers, bytes.to_vec())
        }
    };
    let (plain_headers, plain) = raw(None).await;
    assert!(plain.len() > 1024, "long enough to be kept gzipped: {} bytes", plain.len());
    assert_eq!(plain_headers["vary"], "accept-encoding");
    assert!(plain_headers.get("content-encoding").is_none());
    for accepted in ["gzip, deflate, br", "br;q=1.0, gzip;q=0.5"] {
        let (headers, compressed) = raw(Some(accepted)).await;
        assert!(compressed.len() < plain.len() / 3, "{} of {} bytes", compressed.len(), plain.len());
        assert_eq!(
            (headers["content-encoding"].to_str().unwrap(), headers["content-type"].to_str().unwrap()),
            ("gzip", "application/json")
        );
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&compressed[..]).read_to_end(&mut unzipped).unwrap();
        assert_eq!(unzipped, plain, "{accepted}");
    }
    let (headers, body) = raw(Some("gzip;q=0, identity")).await;
    assert!(headers.get("content-encoding").is_none(), "gzip refused");
    assert_eq!(body, plain);
}

#[tokio::test]
async fn served_and_unserved_sets_are_derived_from_registration() {
    let f = Fixture::new();
    let served = query_api::xrpc::served();
    assert!(served.contains(&"pub.svc.eprint.getSubmission"));
    for nsid in &served {
        let known = query_api::xrpc::catalog::is_named(nsid) || query_api::xrpc::catalog::is_beyond(nsid);
        assert!(known, "{nsid} is served but neither the contract nor the catalog beyond it names it");
        let (status, body) = f.get(&format!("/xrpc/{nsid}")).await;
        assert_ne!(status, StatusCode::NOT_IMPLEMENTED, "{nsid}: {body}");
        assert_ne!(status, StatusCode::NOT_FOUND, "{nsid} is served but not routed: {body}");
    }
    let known = query_api::xrpc::catalog::OPERATIONS.iter().chain(query_api::xrpc::catalog::BEYOND);
    for nsid in known.filter(|n| !served.contains(n)) {
        let (status, body) = f.get(&format!("/xrpc/{nsid}")).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::NOT_IMPLEMENTED, Some("NotImplemented")), "{nsid}");
    }
    let (status, body) = f.get("/xrpc/pub.svc.nothing.here").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")));
}

#[tokio::test]
async fn every_call_goes_through_the_same_steps() {
    let f = Fixture::new();
    // A query over POST, a procedure over GET: 405 in the XRPC envelope.
    let (status, body) = f.call(Method::POST, "/xrpc/pub.svc.eprint.getSubmission", Some(json!({}))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::METHOD_NOT_ALLOWED, Some("InvalidRequest")));
    let (status, _) = f.get("/xrpc/pub.svc.sync.deleteRecord").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    // Parameters are validated against the lexicon.
    let (status, body) = f.get("/xrpc/pub.svc.eprint.listByAuthor?author=did:plc:x&limit=0").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{body}");
    assert_eq!(body["details"]["field"], "limit");
    let (status, _) = f.get("/xrpc/pub.svc.eprint.getSubmission").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A procedure checks credentials before it reads the body.
    let (status, body) = f.call(Method::POST, "/xrpc/pub.svc.sync.deleteRecord", Some(json!({"nonsense": true}))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")), "{body}");
    let request = axum::http::Request::post("/xrpc/pub.svc.sync.refreshRecord")
        .header("authorization", "Bearer not.a.jwt")
        .body(axum::body::Body::from("{}"))
        .unwrap();
    let response = tower::ServiceExt::oneshot(query_api::app(f.state.clone()), request).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_unknown_record_is_not_found_in_the_envelope() {
    let f = seeded();
    let uri = format!("at://{ALICE}/pub.svc.eprint.submission/missing");
    let (status, body) = f.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&uri))).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::NOT_FOUND, Some("RecordNotFound")));
    assert!(body["message"].as_str().is_some_and(|m| m.contains("missing")));
}

/// Marks the active version of `model` as built with row format 0 (by an older svc).
fn built_by_an_older_svc(f: &Fixture, model: &str) {
    let v = f.state.store.active_version(model).unwrap().unwrap();
    let mut batch = store::Batch::default();
    let format = [("format".to_owned(), store::Value::Int(0))].into_iter().collect();
    batch.put(&store::TableRef::new(model, v, "meta"), "format", Vec::new(), format, 1);
    f.state.store.apply(batch).unwrap();
}

/// The contract's probes: `/health` always answers, `/ready` names each backend with its
/// latency, and a read model that needs a replay makes the node degraded, not unhealthy.
#[tokio::test]
async fn the_contracts_health_and_ready_routes() {
    let f = seeded();
    let (status, health) = f.get("/health").await;
    assert_eq!((status, &health["status"], &health["version"]), (StatusCode::OK, &json!("healthy"), &json!(env!("CARGO_PKG_VERSION"))));
    assert!(health["uptime"].is_u64() && health["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{health}");
    let (status, ready) = f.get("/ready").await;
    assert_eq!((status, &ready["status"]), (StatusCode::OK, &json!("healthy")), "{ready}");
    for backend in ["log", "store", "search"] {
        let check = &ready["checks"][backend];
        assert_eq!(check["status"], "healthy", "{ready}");
        assert!(check["latencyMs"].as_f64().is_some_and(|ms| ms >= 0.0) && check["message"].is_string(), "{ready}");
    }
    assert_eq!(ready["checks"]["projections"]["status"], "healthy", "{ready}");

    built_by_an_older_svc(&f, "attached");
    let (status, ready) = f.get("/ready").await;
    assert_eq!((status, &ready["status"]), (StatusCode::OK, &json!("degraded")), "{ready}");
    let projections = &ready["checks"]["projections"];
    assert!(projections["status"] == "degraded" && projections["message"].as_str().unwrap().contains("replay"), "{ready}");
}

/// `/docs`: a page with no inline script under its own policy, its assets from the binary
/// (only those listed), the icon; none needs a credential. (Rendered in Chromium by
/// `tests/tests/browser.rs`.)
#[tokio::test]
async fn the_api_reference_page_and_its_assets() {
    let f = seeded();
    let get = |uri: &str| f.send(axum::http::Request::builder().uri(uri).body(axum::body::Body::empty()).unwrap());
    let (status, headers, page) = get("/docs").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-security-policy"], "default-src 'self'; img-src 'self' data:");
    assert_eq!(headers["x-frame-options"], "DENY", "the other security headers as on every response");
    let page = page.as_str().unwrap();
    assert!(page.contains(r#"<script src="/docs/start.js"></script>"#) && !page.contains("<script>"), "{page}");
    for (asset, kind) in [
        ("/docs/start.js", "text/javascript"),
        ("/docs/assets/swagger-ui-bundle.js", "text/javascript"),
        ("/docs/assets/swagger-ui.css", "text/css"),
        ("/favicon.svg", "image/svg+xml"),
    ] {
        let (status, headers, body) = get(asset).await;
        assert_eq!(status, StatusCode::OK, "{asset}");
        assert!(headers["content-type"].to_str().unwrap().starts_with(kind), "{asset}: {:?}", headers["content-type"]);
        assert!(body.as_str().is_some_and(|b| !b.is_empty()), "{asset}");
    }
    assert!(get("/docs/start.js").await.2.as_str().unwrap().contains("\"/openapi.json\""));
    let (status, _, body) = get("/docs/assets/index.html").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")), "{body}");
    let (status, _, body) = get("/docs/assets/..%2Fstart.js").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")), "{body}");
}

/// `/console`: the page, its script and style sheet, without a credential; scripts only from
/// svc (no inline script or style, no eval); the page is never cached.
#[tokio::test]
async fn the_console_page_and_its_assets() {
    let f = seeded();
    let get = |uri: &str| f.send(axum::http::Request::builder().uri(uri).body(axum::body::Body::empty()).unwrap());
    let (status, headers, page) = get("/console").await;
    assert_eq!((status, &headers["cache-control"]), (StatusCode::OK, &"no-store".parse::<axum::http::HeaderValue>().unwrap()));
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.starts_with("default-src 'self';") && !policy.contains("unsafe") && policy.contains("frame-ancestors 'none'"),
        "{policy}"
    );
    let page = page.as_str().unwrap();
    assert!(page.contains(r#"<script type="module" src="/console/console.js"></script>"#), "{page}");
    assert!(!page.contains("<script>") && !page.contains("style=") && !page.contains("<style"), "nothing inline: {page}");
    for (asset, kind) in [("/console/console.js", "text/javascript"), ("/console/console.css", "text/css")] {
        let (status, headers, body) = get(asset).await;
        assert_eq!(status, StatusCode::OK, "{asset}");
        assert!(headers["content-type"].to_str().unwrap().starts_with(kind), "{asset}");
        assert!(body.as_str().is_some_and(|b| !b.contains("innerHTML") && !b.contains("eval(")), "{asset}: text only");
    }
    assert_eq!(get("/console/other.js").await.0, StatusCode::NOT_FOUND);
}

/// A shared model built by an older svc with another row format keeps the node unready and
/// says which model needs a replay.
#[tokio::test]
async fn readiness_names_a_model_that_needs_a_replay() {
    let f = seeded();
    let (_, before) = f.get("/health/readiness").await;
    assert!(before.get("needsReplay").is_none(), "{before}");
    built_by_an_older_svc(&f, "attached");
    let (status, body) = f.get("/health/readiness").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let current = projections::catalog::CATALOG.iter().find(|m| m.name == "attached").unwrap().format;
    assert_eq!(body["needsReplay"], json!([{"model": "attached", "builtFormat": 0, "currentFormat": current}]), "{body}");
}
