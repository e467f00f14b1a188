//! The admin surface as an operator uses it, against a real PDS, on the embedded backend and
//! on Kafka with the ScyllaDB store (the CQL test server): an admin from `ADMIN_DIDS` logs in
//! the AT Protocol way; an invalid record written on the PDS shows in the dead letters, holds
//! back its writer's next record, fails again when retried and is released, with the record
//! behind it, when dismissed; a review taken down with `deleteContent` leaves every
//! operation and stays gone through a full reindex; the full reindex runs through the API
//! while searches run (none fails, progress to completion, answers byte-identical after);
//! a second reindex cancelled at once leaves the old versions serving and no half-built one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::browser::Browser;
use tests::pds::{submission, Account, Pds};
use tests::{enc, Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";
/// Papers seeded before the scenario, so that a reindex has work to report on.
const PAPERS: usize = 1500;

async fn login(svc: &Service, pds: &Pds, who: &Account) -> String {
    pds.svc_session(svc, who, SERVICE_DID).await
}

async fn get_as(svc: &Service, token: &str, path: &str) -> (u16, Value) {
    let r = reqwest::Client::new().get(format!("{}{path}", svc.base)).bearer_auth(token).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// Polls an admin query until `check` accepts it (20 s at most).
async fn until(svc: &Service, token: &str, path: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let (status, body) = get_as(svc, token, path).await;
        if status == 200 && check(&body) {
            return body;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{what}: still {status} {body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn rich(text: &str) -> Value {
    json!([{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}])
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The dead letter of `uri`, if listed: `(index, entry)`.
fn letter_of(list: &Value, uri: &str) -> Option<(usize, Value)> {
    list["entries"].as_array().unwrap().iter().enumerate().find(|(_, e)| e["uri"] == uri).map(|(i, e)| (i, e.clone()))
}

/// Searches in a loop until `stop`; the latencies (µs) and the answers that were not 200.
async fn search_load(base: String, stop: Arc<AtomicBool>) -> (Vec<u64>, Vec<String>) {
    let http = reqwest::Client::new();
    let words = ["graph", "neural", "quantum", "learning", "spectral", "model"];
    let (mut latencies, mut failures) = (Vec::new(), Vec::new());
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let url = format!("{base}/xrpc/pub.svc.eprint.searchSubmissions?query={}&limit=10", words[i % words.len()]);
        match http.get(&url).send().await {
            Ok(r) if r.status() == 200 => latencies.push(started.elapsed().as_micros() as u64),
            Ok(r) => failures.push(format!("{}: {}", r.status(), r.text().await.unwrap_or_default())),
            Err(e) => failures.push(e.to_string()),
        }
        i += 1;
    }
    (latencies, failures)
}

fn p99(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get((v.len() * 99 / 100).min(v.len().saturating_sub(1))).copied().unwrap_or(0)
}

/// Polls the operation `id` until it is no longer running; every view seen.
async fn follow(svc: &Service, token: &str, id: &str) -> Vec<Value> {
    let started = Instant::now();
    let mut seen = Vec::new();
    loop {
        let (status, body) = get_as(svc, token, &format!("/xrpc/pub.svc.admin.getBackfillStatus?id={id}")).await;
        assert_eq!(status, 200, "{body}");
        let op = body["operation"].clone();
        seen.push(op.clone());
        if op["status"] != "running" {
            return seen;
        }
        if started.elapsed() > Duration::from_secs(180) {
            panic!("the operation did not end: {op}\n{}", tests::last_lines(&svc.log(), 40));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn versions(svc: &Service, token: &str) -> Value {
    get_as(svc, token, "/xrpc/pub.svc.admin.getSystemHealth").await.1["readModels"].clone()
}

/// `carl` writes the invalid record.
async fn scenario(pds: &Pds, alice: &Account, bob: &Account, carl: &Account, admin: &Account, backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let papers = dir.path().join("papers.jsonl");
    tests::write_papers(&papers, PAPERS).unwrap();
    backend.svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    let svc = Service::start_with(&data, tests::free_port(), backend).await.unwrap();
    svc.wait_caught_up().await.unwrap();
    let token = login(&svc, pds, admin).await;
    let user = login(&svc, pds, bob).await;
    assert_eq!(get_as(&svc, &user, "/xrpc/pub.svc.admin.listDLQEntries").await.0, 403, "a non-admin");

    // Carl replies to a paper, then writes an endorsement his lexicon refuses (no
    // contributions): a dead letter, listed.
    let (early, _) = pds.create_record(alice, "pub.svc.eprint.submission", &submission("Held Reviews", alice, None)).await.unwrap();
    let early_reviews = format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}", enc(&early));
    let (reply, _) = pds
        .create_record(
            carl,
            "pub.svc.review.comment",
            &json!({"eprintUri": early, "body": rich("A reply to retract."), "createdAt": now()}),
        )
        .await
        .unwrap();
    until(&svc, &token, &early_reviews, "carl's reply", |b| b["total"] == 1).await;
    let endorsement = |contributions: Value| json!({"eprintUri": early, "contributions": contributions, "createdAt": now()});
    let (bad, _) = pds.create_record(carl, "pub.svc.review.endorsement", &endorsement(json!([]))).await.unwrap();
    let list = "/xrpc/pub.svc.admin.listDLQEntries?limit=100";
    // The firehose svc follows, with the cursor ingest stored.
    let status = until(&svc, &token, "/xrpc/pub.svc.admin.getFirehoseStatus", "a source", |s| s["cursor"].is_string()).await;
    assert_eq!(
        (status["sources"][0]["type"].as_str(), status["sources"][0]["url"].as_str()),
        (Some("firehose"), Some(pds.ws_url().as_str())),
        "{status}"
    );
    let listed = until(&svc, &token, list, "the invalid record's dead letter", |l| letter_of(l, &bad).is_some()).await;
    let (index, first) = letter_of(&listed, &bad).unwrap();
    assert_eq!(first["errorType"], "VALIDATION_ERROR", "{first}");

    // Traced: the paper through the firehose frame that brought it, the eprints model and
    // the search index; the refused endorsement to its dead letter and its frame.
    let trace = |uri: &str| format!("/xrpc/pub.svc.admin.traceRecord?uri={}", enc(uri));
    let paper = until(&svc, &token, &trace(&early), "the paper indexed", |t| t["search"]["indexed"] == true).await;
    let eprints = paper["models"].as_array().unwrap().iter().find(|m| m["model"] == "eprints").unwrap();
    assert_eq!((eprints["state"].as_str(), &paper["events"][0]["offset"]), (Some("live"), &eprints["offset"]), "{paper}");
    let frame = &paper["events"][0]["source"];
    assert_eq!((frame["type"].as_str(), frame["url"].as_str()), (Some("firehose"), Some(pds.ws_url().as_str())), "{paper}");
    assert!(frame["seq"].as_i64().is_some_and(|s| s > 0), "the frame's sequence number: {paper}");
    let (status, refused) = get_as(&svc, &token, &trace(&bad)).await;
    assert_eq!((status, refused["deadLetters"][0]["offset"].clone()), (200, first["offset"].clone()), "{refused}");
    assert_eq!(refused["events"][0]["source"]["type"], "firehose", "{refused}");
    assert_eq!(get_as(&svc, &user, &trace(&bad)).await.0, 403, "a non-admin");

    // Nothing of his waits behind it (principle 4): his tag and the deletion of his reply
    // apply as they come.
    let started = Instant::now();
    pds.create_record(carl, "pub.svc.eprint.userTag", &json!({"eprintUri": early, "tag": "wavelets", "createdAt": now()})).await.unwrap();
    pds.delete_record(carl, "pub.svc.review.comment", reply.rsplit('/').next().unwrap()).await.unwrap();
    let tags = format!("/xrpc/pub.svc.tag.listForEprint?eprintUri={}", enc(&early));
    until(&svc, &token, &tags, "carl's tag", |b| b.to_string().contains("wavelets")).await;
    until(&svc, &token, &early_reviews, "the reply's deletion", |b| !b.to_string().contains("A reply to retract")).await;
    let lag = started.elapsed();
    assert!(lag < Duration::from_secs(5), "the tag and the deletion took {lag:?}");
    assert!(letter_of(&get_as(&svc, &token, list).await.1, &bad).is_some(), "the letter stays until an admin acts");

    // Retried, it fails again with the same reason.
    let (status, out) = svc.post("/xrpc/pub.svc.admin.retryDLQEntry", Some(&token), &json!({"index": index})).await.unwrap();
    assert_eq!((status, &out["success"]), (200, &json!(true)), "{out}");
    let listed = until(&svc, &token, list, "the retried record parked again", |l| {
        letter_of(l, &bad).is_some_and(|(_, e)| e["offset"] != first["offset"])
    })
    .await;
    let (_, again) = letter_of(&listed, &bad).unwrap();
    assert_eq!(again["error"], first["error"], "the same reason");

    // Dismissed, it is gone.
    let (index, _) = letter_of(&listed, &bad).unwrap();
    let (_, out) = svc.post("/xrpc/pub.svc.admin.dismissDLQEntry", Some(&token), &json!({"index": index})).await.unwrap();
    assert_eq!(out["success"], true, "{out}");
    until(&svc, &token, &format!("{list}&includeSuperseded=true"), "the letter dismissed", |l| letter_of(l, &bad).is_none()).await;

    // Another refused endorsement, which Carl mends: the valid revision supersedes its
    // letter, which leaves the listing.
    let (bad, _) = pds.create_record(carl, "pub.svc.review.endorsement", &endorsement(json!([]))).await.unwrap();
    let parked = until(&svc, &token, list, "the second letter", |l| letter_of(l, &bad).is_some()).await;
    let (_, parked) = letter_of(&parked, &bad).unwrap();
    pds.put_record(carl, "pub.svc.review.endorsement", bad.rsplit('/').next().unwrap(), &endorsement(json!(["analytical"]))).await.unwrap();
    until(&svc, &token, list, "the letter superseded", |l| letter_of(l, &bad).is_none()).await;
    let all = get_as(&svc, &token, &format!("{list}&includeSuperseded=true")).await.1;
    let (_, superseded) = letter_of(&all, &bad).unwrap();
    assert!(superseded["supersededBy"]["offset"].as_u64() > parked["offset"].as_u64(), "{superseded}");

    // A review taken down.
    let (paper, _) =
        pds.create_record(alice, "pub.svc.eprint.submission", &submission("Spectral Graph Wavelets", alice, None)).await.unwrap();
    let (review, _) = pds
        .create_record(bob, "pub.svc.review.comment", &json!({"eprintUri": paper, "body": rich("Rude words."), "createdAt": now()}))
        .await
        .unwrap();
    let reviews = format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}", enc(&paper));
    until(&svc, &token, &reviews, "the review", |b| b["reviews"].as_array().is_some_and(|r| r.len() == 1)).await;
    let body = json!({"uri": review, "collection": "pub.svc.review.comment", "reason": "abuse"});
    assert_eq!(
        svc.post("/xrpc/pub.svc.admin.deleteContent", Some(&token), &body).await.unwrap(),
        (200, json!({"success": true, "uri": review}))
    );
    let placeholder =
        |b: &Value| (b["reviews"].as_array().map(Vec::len), b["reviews"][0]["deleted"].clone(), b["reviews"][0]["content"].clone());
    assert_eq!(placeholder(&svc.get(&reviews).await.unwrap().2), (Some(1), json!(true), json!("")), "a placeholder after deleteContent");
    let thread = svc.get(&format!("/xrpc/pub.svc.review.getThread?uri={}", enc(&review))).await.unwrap().2;
    assert!(thread["parent"]["deleted"] == true && !thread.to_string().contains("Rude words"), "{thread}");
    let listed = get_as(&svc, &token, "/xrpc/pub.svc.admin.listReviews?limit=100").await.1;
    assert!(!listed["items"].as_array().unwrap().iter().any(|i| i["uri"] == review.as_str()), "{listed}");
    let traced = get_as(&svc, &token, &trace(&review)).await.1;
    let attached = traced["models"].as_array().unwrap().iter().find(|m| m["model"] == "attached").unwrap();
    assert!(attached["state"] == "takenDown" && !traced.to_string().contains("Rude words"), "the take-down, no content: {traced}");
    assert_eq!(traced["events"][0]["source"]["type"], "command", "the take-down's command event: {traced}");

    // A full reindex through the API, under a load of searches.
    let queries = [
        "/xrpc/pub.svc.eprint.searchSubmissions?query=graph&limit=20".to_owned(),
        format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&paper)),
        reviews.clone(),
        "/xrpc/pub.svc.eprint.searchSubmissions?query=*&sortBy=date&limit=50".to_owned(),
    ];
    let mut before = Vec::new();
    for q in &queries {
        before.push(svc.get_bytes(q).await.unwrap());
    }
    let baseline_stop = Arc::new(AtomicBool::new(false));
    let baseline = tokio::spawn(search_load(svc.base.clone(), baseline_stop.clone()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    baseline_stop.store(true, Ordering::Relaxed);
    let (baseline, failures) = baseline.await.unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    let old = versions(&svc, &token).await;
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(search_load(svc.base.clone(), stop.clone()));
    let (status, started) = svc.post("/xrpc/pub.svc.admin.triggerFullReindex", Some(&token), &json!({})).await.unwrap();
    assert_eq!((status, &started["status"]), (200, &json!("running")), "{started}");
    let id = started["operationId"].as_str().unwrap().to_owned();
    let seen = follow(&svc, &token, &id).await;
    stop.store(true, Ordering::Relaxed);
    let (during, failures) = load.await.unwrap();
    assert!(failures.is_empty(), "searches failed during the reindex: {failures:?}");
    let last = seen.last().unwrap();
    assert_eq!((last["status"].as_str(), last["progress"].as_u64()), (Some("completed"), Some(100)), "{last}");
    assert!(last["recordsProcessed"].as_u64() >= Some(PAPERS as u64), "{last}");
    let progress: Vec<u64> = seen.iter().filter_map(|o| o["progress"].as_u64()).collect();
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "progress only grows: {progress:?}");
    println!(
        "{}: search p99 {} µs without a reindex ({} searches), {} µs during one ({} searches, {} progress reads: {progress:?})",
        backend.name,
        p99(baseline.clone()),
        baseline.len(),
        p99(during.clone()),
        during.len(),
        seen.len()
    );
    let new = versions(&svc, &token).await;
    assert_ne!(old, new, "new versions were swapped in");
    let mut rebuilt = Vec::new();
    for (q, (status, bytes)) in queries.iter().zip(&before) {
        let (status2, bytes2) = svc.get_bytes(q).await.unwrap();
        rebuilt.push((status2, bytes2.clone()));
        if q.contains("query=graph") {
            // Relevance scores (and so the cursor) weigh the index's statistics, which count
            // a rewritten document's old copy until its segment is merged (Carl's tag rewrote
            // one): the same papers in the same order, not the same bytes.
            let uris = |b: &[u8]| -> Vec<Value> {
                let v: Value = serde_json::from_slice(b).unwrap();
                v["submissions"].as_array().unwrap().iter().map(|s| s["uri"].clone()).collect()
            };
            assert_eq!((status2, uris(&bytes2)), (*status, uris(bytes)), "{q}: other papers after the reindex");
            continue;
        }
        if (status2, &bytes2) != (*status, bytes) {
            let (a, b) = (String::from_utf8_lossy(bytes), String::from_utf8_lossy(&bytes2));
            let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
            let around = |s: &str| s.get(at.saturating_sub(200)..(at + 200).min(s.len())).unwrap_or_default().to_owned();
            panic!(
                "{q}: not byte-identical after the reindex ({status} then {status2}), from byte {at}:\n{}\nthen\n{}",
                around(&a),
                around(&b)
            );
        }
    }
    assert_eq!(
        placeholder(&svc.get(&reviews).await.unwrap().2),
        (Some(1), json!(true), json!("")),
        "the same placeholder after the reindex (a replay)"
    );

    // Another, cancelled at once: the old versions serve on, the half-built ones are gone.
    let (_, started) = svc.post("/xrpc/pub.svc.admin.triggerFullReindex", Some(&token), &json!({})).await.unwrap();
    let id2 = started["operationId"].as_str().unwrap().to_owned();
    let asked = Instant::now();
    let (_, cancelled) = svc.post("/xrpc/pub.svc.admin.cancelBackfill", Some(&token), &json!({"id": id2})).await.unwrap();
    println!("{}: the cancel answered in {} ms", backend.name, asked.elapsed().as_millis());
    assert_eq!(cancelled, json!({"success": true, "id": id2, "status": "cancelled"}), "the cancel waits for the end and says how it ended");
    let last = follow(&svc, &token, &id2).await.pop().unwrap();
    assert_eq!(last["status"], "cancelled", "{last}");
    // The cancelled rebuild's versions are retired as it stops and dropped after it has
    // ended; wait for that, and for the old ones too.
    let settled = until(&svc, &token, "/xrpc/pub.svc.admin.getSystemHealth", "one version per model", |h| {
        h["readModels"].as_array().unwrap().iter().all(|m| m["versions"].as_array().unwrap().len() == 1)
    })
    .await;
    // (Versions only: a model's lag moves with every event the operations append.)
    let versions_only = |models: &Value| -> Vec<Value> {
        models.as_array().unwrap().iter().map(|m| json!([m["name"], m["activeVersion"], m["versions"]])).collect()
    };
    assert_eq!(versions_only(&settled["readModels"]), versions_only(&versions(&svc, &token).await));
    let after: Vec<_> = settled["readModels"].as_array().unwrap().iter().map(|m| m["activeVersion"].clone()).collect();
    let expected: Vec<_> = new.as_array().unwrap().iter().map(|m| m["activeVersion"].clone()).collect();
    assert_eq!(after, expected, "the cancelled reindex swapped nothing in");
    for (q, answer) in queries.iter().zip(&rebuilt) {
        assert!(svc.get_bytes(q).await.unwrap() == *answer, "{q}: changed by a cancelled reindex");
    }
    let history = get_as(&svc, &token, "/xrpc/pub.svc.admin.getBackfillHistory").await.1;
    let statuses: Vec<&str> = history["operations"].as_array().unwrap().iter().filter_map(|o| o["status"].as_str()).collect();
    assert_eq!(statuses, vec!["cancelled", "completed"], "{history}");
    let audit = get_as(&svc, &token, &format!("/xrpc/pub.svc.admin.getAuditLog?actorDid={}&limit=100", admin.did)).await.1;
    let actions: Vec<&str> = audit["entries"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for wanted in ["login", "dlq_retry", "dlq_dismiss", "delete", "backfill_start", "backfill_cancel"] {
        assert!(actions.contains(&wanted), "{wanted} missing from the audit log: {actions:?}");
    }

    // The same through the operator's command line: a login the AT Protocol way, a count, a
    // reindex followed to its end.
    let env = [("SVC_URL", svc.base.as_str()), ("SVC_ADMIN_PASSWORD", "password")];
    let tokens: Value = serde_json::from_str(
        tests::svc_with_env(&["admin", "login", "--pds", &pds.url, "--identifier", &admin.handle], &env).unwrap().trim(),
    )
    .unwrap();
    let cli_token = tokens["access_token"].as_str().unwrap();
    let overview: Value =
        serde_json::from_str(&tests::svc_with_env(&["admin", "--token", cli_token, "getOverview"], &env).unwrap()).unwrap();
    assert!(overview["eprints"].as_u64() > Some(PAPERS as u64), "{overview}");
    let out = tests::svc_with_env(&["admin", "--token", cli_token, "triggerFullReindex"], &env).unwrap();
    assert!(out.contains("\"status\": \"completed\""), "{out}");
    let refused = tests::svc_with_env(&["admin", "--token", &user, "getOverview"], &env).unwrap_err().to_string();
    assert!(refused.contains("AuthorizationError"), "{refused}");
    svc.stop().unwrap();
}

/// The PDS with Alice, Bob, Carl and the admin Adam, and a backend following it.
async fn peers(backend: Backend) -> (Pds, [Account; 4], Backend) {
    let pds = Pds::start().unwrap();
    let names = ["alice", "bob", "carl", "adam"];
    let mut accounts = Vec::new();
    for name in names {
        accounts.push(pds.create_account(name).await.unwrap());
    }
    let accounts: [Account; 4] = accounts.try_into().unwrap();
    let backend = backend
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url)
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_ADMIN_DIDS", &accounts[3].did);
    (pds, accounts, backend)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_runs_svc_through_the_admin_api_on_the_embedded_backend() {
    let _serial = tests::serial().await;
    let (pds, [alice, bob, carl, admin], backend) = peers(Backend::embedded()).await;
    scenario(&pds, &alice, &bob, &carl, &admin, &backend).await;
    repositories(&pds, &alice, &bob, &admin).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_runs_svc_through_the_admin_api_on_kafka_and_cql() {
    let _serial = tests::serial().await;
    // (The backend owns the broker and the CQL server: they live as long as the scenario.)
    let (pds, [alice, bob, carl, admin], backend) = peers(Backend::kafka_scylla()).await;
    scenario(&pds, &alice, &bob, &carl, &admin, &backend).await;
}

/// The repository operations: a freshness scan brings back a record changed while svc did
/// not follow the PDS; a DID sync indexes an account's records; a PDS scan every account
/// of the hosts svc knows.
async fn repositories(pds: &Pds, alice: &Account, bob: &Account, admin: &Account) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let peers = |b: Backend| {
        b.with_env("SVC_PLC_URL", &pds.plc_url)
            .with_env("SVC_HANDLE_RESOLVER", &pds.url)
            .with_env("SVC_SERVICE_DID", SERVICE_DID)
            .with_env("SVC_ADMIN_DIDS", &admin.did)
    };
    let following = peers(Backend::embedded()).with_env("SVC_FIREHOSE", &pds.ws_url());
    let svc = Service::start_with(&data, tests::free_port(), &following).await.unwrap();
    let (paper, _) = pds.create_record(alice, "pub.svc.eprint.submission", &submission("Before the edit", alice, None)).await.unwrap();
    let detail = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&paper));
    let token = login(&svc, pds, admin).await;
    until(&svc, &token, &detail, "the paper", |b| b["record"]["title"] == "Before the edit").await;
    svc.stop().unwrap();

    // Written while svc does not follow the PDS.
    let rkey = paper.rsplit('/').next().unwrap();
    pds.put_record(alice, "pub.svc.eprint.submission", rkey, &submission("After the edit", alice, None)).await.unwrap();
    let (late, _) = pds.create_record(bob, "pub.svc.eprint.submission", &submission("Unseen by svc", bob, None)).await.unwrap();
    let carol = pds.create_account("carol").await.unwrap();
    let (carols, _) = pds.create_record(&carol, "pub.svc.eprint.submission", &submission("Carol's first", &carol, None)).await.unwrap();

    let svc = Service::start_with(&data, tests::free_port(), &peers(Backend::embedded())).await.unwrap();
    let token = login(&svc, pds, admin).await;
    assert_eq!(svc.get(&detail).await.unwrap().2["record"]["title"], "Before the edit", "stale");
    let run = |nsid: &'static str, body: Value| {
        let (svc, token) = (&svc, token.clone());
        async move {
            let (status, started) = svc.post(&format!("/xrpc/pub.svc.admin.{nsid}"), Some(&token), &body).await.unwrap();
            assert_eq!(status, 200, "{nsid}: {started}");
            let last = follow(svc, &token, started["operationId"].as_str().unwrap()).await.pop().unwrap();
            assert_eq!(last["status"], "completed", "{nsid}: {last}");
            last
        }
    };
    let scan = run("triggerFreshnessScan", json!({})).await;
    assert!(scan["recordsProcessed"].as_u64() >= Some(1), "{scan}");
    until(&svc, &token, &detail, "the refreshed paper", |b| b["record"]["title"] == "After the edit").await;

    let of = |uri: &str| format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri));
    assert_eq!(svc.get(&of(&late)).await.unwrap().0, 404);
    let (_, started) = svc.post("/xrpc/pub.svc.admin.triggerDIDSync", Some(&token), &json!({"did": bob.did})).await.unwrap();
    assert_eq!(started["did"], bob.did.as_str(), "{started}");
    let last = follow(&svc, &token, started["operationId"].as_str().unwrap()).await.pop().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    until(&svc, &token, &of(&late), "bob's paper, synced", |b| b["record"]["title"] == "Unseen by svc").await;

    let hosts = get_as(&svc, &token, "/xrpc/pub.svc.admin.listPDSes").await.1;
    assert!(hosts["stats"]["withRecords"].as_u64() >= Some(1), "{hosts}");
    run("triggerPDSScan", json!({})).await;
    until(&svc, &token, &of(&carols), "carol's paper, scanned", |b| b["record"]["title"] == "Carol's first").await;
    svc.stop().unwrap();
}

/// Waits (up to 60 s) for an element the XPath names, in the page the browser shows; when
/// none comes, fails with what the page shows and logged.
async fn element(browser: &Browser, xpath: &str) -> fantoccini::elements::Element {
    match browser.client.wait().at_most(Duration::from_secs(60)).for_element(fantoccini::Locator::XPath(xpath)).await {
        Ok(found) => found,
        Err(e) => {
            let shown = browser.client.execute("return document.body.innerText", vec![]).await.unwrap_or_default();
            panic!("no {xpath}: {e}\nthe page shows: {shown}\nthe console: {:#?}", browser.console().await)
        }
    }
}

/// Waits (up to 60 s) until no element matches the XPath.
async fn gone(browser: &Browser, xpath: &str) {
    let started = Instant::now();
    while !browser.client.find_all(fantoccini::Locator::XPath(xpath)).await.unwrap().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "{xpath} is still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Logs in through the console's form as `who` (password `password`).
async fn console_login(browser: &Browser, svc: &Service, pds: &Pds, who: &Account) {
    browser.client.goto(&format!("{}/console", svc.base)).await.unwrap();
    for (id, value) in [("login-pds", pds.url.as_str()), ("login-handle", who.handle.as_str()), ("login-password", "password")] {
        let input = element(browser, &format!("//input[@id='{id}']")).await;
        input.clear().await.unwrap();
        input.send_keys(value).await.unwrap();
    }
    element(browser, "//button[@id='login-submit']").await.click().await.unwrap();
}

/// The operator console in Chromium, against the real PDS: a non-admin is refused; the
/// admin logs in the AT Protocol way, sees every read model, retries a dead letter (parked
/// again: its record is still invalid) and dismisses it (it leaves the list), traces a
/// paper to the firehose frame that brought it, runs a full reindex to 100 % and cancels a
/// second one; no page logs a console error or violates its Content-Security-Policy.
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_uses_the_console_in_a_real_browser() {
    let (pds, [alice, _bob, carl, admin], backend) = peers(Backend::embedded()).await;
    let dir = tempfile::tempdir().unwrap();
    let (data, papers) = (dir.path().join("data"), dir.path().join("papers.jsonl"));
    tests::write_papers(&papers, PAPERS).unwrap();
    backend.svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    let svc = Service::start_with(&data, tests::free_port(), &backend).await.unwrap();
    svc.wait_caught_up().await.unwrap();
    let token = login(&svc, &pds, &admin).await;
    let (paper, _) = pds.create_record(&alice, "pub.svc.eprint.submission", &submission("Console Wavelets", &alice, None)).await.unwrap();
    let endorsement = json!({"eprintUri": paper, "contributions": [], "createdAt": now()});
    let (bad, _) = pds.create_record(&carl, "pub.svc.review.endorsement", &endorsement).await.unwrap();
    until(&svc, &token, "/xrpc/pub.svc.admin.listDLQEntries", "the dead letter", |l| letter_of(l, &bad).is_some()).await;

    let browser = Browser::start().await.unwrap_or_else(|e| panic!("{e:#}"));
    console_login(&browser, &svc, &pds, &carl).await;
    let refusal = element(&browser, "//p[@id='login-error'][contains(., 'is not an admin')]").await.text().await.unwrap();
    assert!(refusal.contains(&carl.handle), "{refusal}");
    browser.screenshot("console-refused").await.unwrap();

    console_login(&browser, &svc, &pds, &admin).await;
    element(&browser, "//span[@id='who'][contains(., 'adam')]").await;
    for model in ["eprints", "attached", "search"] {
        element(&browser, &format!("//table[@id='models']//tr[@data-model='{model}']/td[@class='behind'][.='0 s']")).await;
    }
    element(&browser, "//*[local-name()='svg'][@id='lag-chart']//*[local-name()='polyline'][@data-model='eprints']").await;
    let cursor = element(&browser, &format!("//table[@id='sources']//tr[@data-url='{}']/td[@class='cursor']", pds.ws_url())).await;
    assert!(cursor.text().await.unwrap().parse::<u64>().is_ok(), "the firehose's stored cursor");
    element(&browser, "//table[@id='hosts']//tr").await;
    browser.screenshot("console-overview").await.unwrap();

    // Dead letters: retried, the record parks again (a new offset); dismissed, it leaves.
    browser.client.goto(&format!("{}/console#dead-letters", svc.base)).await.unwrap();
    let row = format!("//table[@id='letters']//tr[@data-uri='{bad}'][.//button[contains(@class,'retry')]]");
    let offset = element(&browser, &row).await.attr("data-offset").await.unwrap().unwrap();
    element(&browser, &format!("{row}//button[contains(@class,'show-event')]")).await.click().await.unwrap();
    let event = element(&browser, &format!("//table[@id='letters']//tr[@class='event'][@data-offset='{offset}']//pre")).await;
    let event = event.text().await.unwrap();
    browser.screenshot("console-dead-letters").await.unwrap();
    assert!(event.contains("\"contributions\": []") && event.contains("firehose"), "the parked event as the log holds it: {event}");
    element(&browser, &format!("{row}//button[contains(@class,'retry')]")).await.click().await.unwrap();
    element(&browser, &format!("//table[@id='letters']//tr[@data-uri='{bad}'][not(@data-offset='{offset}')][.//button]")).await;
    gone(&browser, &format!("//table[@id='letters']//tr[@data-offset='{offset}'][.//button[contains(@class,'retry')]]")).await;
    let again = format!("//table[@id='letters']//tr[@data-uri='{bad}'][.//button[contains(@class,'dismiss')]]");
    element(&browser, &format!("{again}//button[contains(@class,'dismiss')]")).await.click().await.unwrap();
    gone(&browser, &format!("//table[@id='letters']//tr[@data-uri='{bad}'][.//button]")).await;

    // Trace the paper.
    browser.client.goto(&format!("{}/console#trace", svc.base)).await.unwrap();
    element(&browser, "//input[@id='trace-uri']").await.send_keys(&paper).await.unwrap();
    element(&browser, "//form[@id='trace-form']//button").await.click().await.unwrap();
    let state = element(&browser, "//table[@id='trace']//tr[starts-with(@data-layer,'model eprints')]/td[@class='state']").await;
    assert_eq!(state.text().await.unwrap(), "live");
    element(&browser, "//table[@id='trace']//tr[starts-with(@data-layer,'search index')]/td[@class='state'][.='indexed']").await;
    let source = element(&browser, "//table[@id='trace-events']//td[@class='source']").await.text().await.unwrap();
    assert!(source.starts_with(&format!("firehose {} frame ", pds.ws_url())), "{source}");
    browser.screenshot("console-trace").await.unwrap();
    let errors = browser.console_errors().await.unwrap();
    assert!(errors.is_empty(), "the console logged errors: {errors:#?}");
    // A URI the form accepts but the API refuses (a handle, not a DID): its message shown
    // (and the browser logs the refused request, the only error it may log).
    let field = element(&browser, "//input[@id='trace-uri']").await;
    field.clear().await.unwrap();
    field.send_keys("at://alice.test/pub.svc.eprint.submission/x").await.unwrap();
    element(&browser, "//form[@id='trace-form']//button").await.click().await.unwrap();
    element(&browser, "//p[contains(@class,'notice')][contains(@class,'error')][contains(., 'InvalidRequest')][contains(., 'at://<did>/<collection>/<rkey>')]").await;
    let errors = browser.console_errors().await.unwrap();
    assert!(errors.iter().all(|e| e.contains("pub.svc.admin.traceRecord") && e.contains("400")), "{errors:#?}");

    // A review taken down with a reason: it leaves the content page, the audit log names it.
    let (review, _) = pds
        .create_record(&carl, "pub.svc.review.comment", &json!({"eprintUri": paper, "body": rich("Off-topic rant."), "createdAt": now()}))
        .await
        .unwrap();
    until(&svc, &token, "/xrpc/pub.svc.admin.listReviews?limit=100", "the review", |l| l.to_string().contains(&review)).await;
    browser.client.goto(&format!("{}/console#content", svc.base)).await.unwrap();
    let row = format!("//table[@id='reviews']//tr[@data-uri='{review}']");
    element(&browser, &format!("{row}//input[@class='reason']")).await.send_keys("off-topic").await.unwrap();
    element(&browser, &format!("{row}//button[@class='take-down']")).await.click().await.unwrap();
    element(&browser, &format!("//p[contains(@class,'notice')][contains(., 'Took down {review}')]")).await;
    gone(&browser, &row).await;
    browser.screenshot("console-content").await.unwrap();
    browser.client.goto(&format!("{}/console#audit", svc.base)).await.unwrap();
    element(&browser, &format!("//table[@id='audit']//td[contains(., '{review}')]")).await;
    browser.screenshot("console-audit").await.unwrap();
    browser.client.goto(&format!("{}/console#people", svc.base)).await.unwrap();
    element(&browser, "//button[@id='assign-role']").await;
    // A DID the form refuses before sending: nothing is granted, the field says why.
    element(&browser, "//input[@id='role-did']").await.send_keys("alice").await.unwrap();
    element(&browser, "//button[@id='assign-role']").await.click().await.unwrap();
    let invalid = browser.client.execute("return !document.getElementById('role-did').validity.valid", vec![]).await.unwrap();
    assert_eq!(invalid, json!(true), "the form refuses a malformed DID");
    browser.screenshot("console-roles").await.unwrap();
    browser.client.goto(&format!("{}/console#latency", svc.base)).await.unwrap();
    element(&browser, "//table[@id='latency']//tr[@data-path='pub.svc.admin.deleteContent' or contains(@data-path, 'deleteContent')]")
        .await;
    browser.screenshot("console-latencies").await.unwrap();

    // A full reindex to 100 %, then a second one cancelled.
    browser.client.goto(&format!("{}/console#operations", svc.base)).await.unwrap();
    let started = Instant::now();
    element(&browser, "//button[@id='trigger-reindex']").await.click().await.unwrap();
    let done = element(&browser, "//table[@id='operations']//tr[@data-status='completed'][.//span[@class='percent'][.='100 %']]").await;
    let first = done.attr("data-id").await.unwrap().unwrap();
    eprintln!("the first reindex: 100 % shown {:?} after the click", started.elapsed());
    element(&browser, "//button[@id='trigger-reindex']").await.click().await.unwrap();
    element(
        &browser,
        &format!("//table[@id='operations']//tr[@data-status='running'][not(@data-id='{first}')]//button[contains(@class,'cancel')]"),
    )
    .await
    .click()
    .await
    .unwrap();
    let told = element(&browser, "//p[contains(@class,'notice')][contains(., 'Cancelled') or contains(., 'Not cancelled')]").await;
    let told = told.text().await.unwrap();
    element(
        &browser,
        &format!("//table[@id='operations']//tr[not(@data-id='{first}')][@data-status='cancelled' or @data-status='completed']"),
    )
    .await;
    eprintln!("the second reindex: {told}");
    browser.screenshot("console-operations").await.unwrap();

    let errors = browser.console_errors().await.unwrap();
    assert!(errors.is_empty(), "the console logged errors: {errors:#?}");

    // A stale session: the page's svc is replaced by one that never issued its token (a new
    // data directory, new signing keys); the next call sends the operator to the login.
    // (From a page that does not refresh itself, so no call meets the node while it is down.)
    browser.client.goto(&format!("{}/console#trace", svc.base)).await.unwrap();
    element(&browser, "//form[@id='trace-form']").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let errors = browser.console_errors().await.unwrap();
    assert!(errors.iter().all(|e| e.contains("pub.svc.admin.traceRecord") && e.contains("400")), "{errors:#?}");
    let port = svc.port();
    svc.stop().unwrap();
    let svc = Service::start_with(&dir.path().join("other"), port, &backend).await.unwrap();
    svc.wait_caught_up().await.unwrap();
    browser.client.goto(&format!("{}/console#dead-letters", svc.base)).await.unwrap_or(());
    element(&browser, "//p[@id='login-error'][contains(., 'Your session ended')]").await;
    let errors = browser.console_errors().await.unwrap();
    assert!(errors.iter().all(|e| e.contains("401")), "only the refused call: {errors:#?}");
    browser.close().await.unwrap();
    svc.stop().unwrap();
}
