//! Ingest from a real PDS's firehose, as a new user would run it: `svc up --firehose
//! ws://… --plc-url http://…` against `@atproto/pds` with an in-memory did:plc directory.
//! Authors write, update, delete, write two records in one commit and change a handle; each
//! change shows in the API within seconds; a deleted account's content is removed. Then svc is killed, more is written while it is
//! down, and on restart it catches up to what a fresh svc that followed the stream from
//! cursor 0 shows.

use std::time::{Duration, Instant};

use serde_json::Value;
use tests::pds::{submission, Pds};
use tests::{enc, Backend, Service};

const SUBMISSION: &str = "pub.svc.eprint.submission";

/// Polls `path` on `svc` until `check` accepts the answer; returns it and how long it took.
async fn until(svc: &Service, path: &str, what: &str, check: impl Fn(u16, &Value) -> bool) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        let (status, _, body) = svc.get(path).await.unwrap();
        if check(status, &body) {
            return (body, started.elapsed());
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{what}: still {status} {body} after 20 s");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn detail(uri: &str) -> String {
    format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri))
}

fn rkey(uri: &str) -> &str {
    uri.rsplit('/').next().unwrap()
}

/// What a detail answer says about the record, without the time it was indexed (a fresh svc
/// indexes later).
fn content(body: &Value) -> Value {
    let mut body = body.clone();
    body.as_object_mut().unwrap().remove("indexedAt");
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn follows_a_real_pds_and_catches_up_after_a_crash() {
    let pds = Pds::start().unwrap();
    let mut alice = pds.create_account("alice").await.unwrap();
    let bob = pds.create_account("bob").await.unwrap();
    let backend = Backend::embedded()
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url);
    let dir = tempfile::tempdir().unwrap();
    let svc = Service::start_with(&dir.path().join("data"), tests::free_port(), &backend).await.unwrap();
    let mut lags = Vec::new();

    // A submission with an uploaded document.
    let blob = pds.upload_blob(&alice, b"%PDF-1.4 a tiny document".to_vec(), "application/pdf").await.unwrap();
    let (first, first_cid) =
        pds.create_record(&alice, SUBMISSION, &submission("Quantum widgets", &alice, Some(blob.clone()))).await.unwrap();
    let (body, lag) = until(&svc, &detail(&first), "the new submission", |s, _| s == 200).await;
    lags.push(lag);
    assert_eq!(body["cid"], first_cid.as_str());
    assert_eq!(body["record"]["title"], "Quantum widgets");
    // The contract's shape keeps a PDF document as `pdfBlob`.
    let document = if body["record"]["document"].is_null() { &body["record"]["pdfBlob"] } else { &body["record"]["document"] };
    assert_eq!(document["ref"]["$link"], blob["ref"]["$link"], "the blob ref is kept: {body}");
    assert_eq!(body["author"]["did"], alice.did.as_str());

    // putRecord replaces it.
    pds.put_record(&alice, SUBMISSION, rkey(&first), &submission("Quantum widgets, revised", &alice, Some(blob))).await.unwrap();
    let (_, lag) = until(&svc, &detail(&first), "the update", |_, b| b["record"]["title"] == "Quantum widgets, revised").await;
    lags.push(lag);

    // Two records in one commit.
    pds.create_many(
        &bob,
        &[
            (SUBMISSION, "3kbobone000a2", submission("Bob's first", &bob, None)),
            (SUBMISSION, "3kbobtwo000a2", submission("Bob's second", &bob, None)),
        ],
    )
    .await
    .unwrap();
    let bob_one = format!("at://{}/{SUBMISSION}/3kbobone000a2", bob.did);
    let bob_two = format!("at://{}/{SUBMISSION}/3kbobtwo000a2", bob.did);
    let (_, lag) = until(&svc, &detail(&bob_two), "the second record of one commit", |s, _| s == 200).await;
    lags.push(lag);
    until(&svc, &detail(&bob_one), "the first record of one commit", |s, _| s == 200).await;

    // A deletion.
    pds.delete_record(&bob, SUBMISSION, "3kbobone000a2").await.unwrap();
    let (_, lag) = until(&svc, &detail(&bob_one), "the deletion", |s, b| s == 404 && b["error"] == "RecordNotFound").await;
    lags.push(lag);

    // Handles are checked both ways: one that resolves to another DID is not shown.
    let handles = ingest::handle::HandleResolver::new(Some(&pds.url), Duration::from_secs(60));
    assert_eq!(handles.verified(&alice.did, Some("alice.test")).await, "alice.test");
    assert_eq!(handles.verified(&bob.did, Some("alice.test")).await, ingest::handle::INVALID_HANDLE);
    assert_eq!(handles.verified(&bob.did, Some("nobody.test")).await, ingest::handle::INVALID_HANDLE);
    assert_eq!(body["author"]["handle"], "alice.test", "the handle the PDS resolves back to alice");

    // A handle change shows wherever the author is shown.
    pds.update_handle(&mut alice, "alice-renamed").await.unwrap();
    let (_, lag) = until(&svc, &detail(&first), "the new handle", |_, b| b["author"]["handle"] == "alice-renamed.test").await;
    lags.push(lag);
    // A takedown hides the account's content from every query; restoring shows it again.
    let search_bob = format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}", enc("Bob's second"));
    let found = |b: &Value| b["submissions"].as_array().is_some_and(|s| s.iter().any(|h| h["uri"] == bob_two.as_str()));
    until(&svc, &search_bob, "bob's paper in search", |_, b| found(b)).await;
    pds.set_takedown(&bob.did, true).await.unwrap();
    let (_, lag) = until(&svc, &detail(&bob_two), "the takedown", |s, _| s == 404).await;
    lags.push(lag);
    until(&svc, &search_bob, "the takedown in search", |_, b| !found(b)).await;
    let (_, _, listed) = svc.get(&format!("/xrpc/pub.svc.eprint.listByAuthor?author={}", enc(&bob.did))).await.unwrap();
    assert_eq!(listed["eprints"], serde_json::json!([]), "{listed}");
    pds.set_takedown(&bob.did, false).await.unwrap();
    until(&svc, &detail(&bob_two), "the restored account", |s, _| s == 200).await;
    until(&svc, &search_bob, "the restored account in search", |_, b| found(b)).await;
    // A deleted account's content is removed.
    let carol = pds.create_account("carol").await.unwrap();
    let (carols, _) = pds.create_record(&carol, SUBMISSION, &submission("Carol's vanishing paper", &carol, None)).await.unwrap();
    let search_carol = format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}", enc("vanishing"));
    until(&svc, &search_carol, "carol's paper in search", |_, b| b["total"] == 1).await;
    pds.delete_account(&carol.did).await.unwrap();
    let (_, lag) = until(&svc, &detail(&carols), "the account deletion", |s, _| s == 404).await;
    lags.push(lag);
    until(&svc, &search_carol, "the account deletion in search", |_, b| b["total"] == 0).await;

    let lag_ms: Vec<u128> = lags.iter().map(Duration::as_millis).collect();
    eprintln!("lag from a PDS write to the API, ms: {lag_ms:?}");

    // Killed; more is written while it is down; on restart it catches up.
    let port = svc.port();
    svc.kill9();
    let (while_down, _) = pds.create_record(&alice, SUBMISSION, &submission("Written while svc was down", &alice, None)).await.unwrap();
    pds.delete_record(&bob, SUBMISSION, "3kbobtwo000a2").await.unwrap();
    let svc = Service::start_with(&dir.path().join("data"), port, &backend).await.unwrap();
    until(&svc, &detail(&while_down), "a record written while svc was down", |s, _| s == 200).await;
    until(&svc, &detail(&bob_two), "a deletion made while svc was down", |s, _| s == 404).await;

    // A fresh svc that follows the stream from cursor 0 ends with the same read models.
    let fresh = Service::start_with(&dir.path().join("fresh"), tests::free_port(), &backend).await.unwrap();
    until(&fresh, &detail(&while_down), "the fresh svc catching up", |s, _| s == 200).await;
    svc.wait_caught_up().await.unwrap();
    fresh.wait_caught_up().await.unwrap();
    for uri in [&first, &bob_one, &bob_two, &while_down, &carols] {
        let (s1, _, a) = svc.get(&detail(uri)).await.unwrap();
        let (s2, _, b) = fresh.get(&detail(uri)).await.unwrap();
        assert_eq!((s1, content(&a)), (s2, content(&b)), "{uri}: the restarted and the fresh svc differ");
    }
    let search = "/xrpc/pub.svc.eprint.searchSubmissions?query=*&sortBy=date";
    let (_, _, a) = svc.get(search).await.unwrap();
    let (_, _, b) = fresh.get(search).await.unwrap();
    let uris = |v: &Value| v["submissions"].as_array().unwrap().iter().map(|s| s["uri"].clone()).collect::<Vec<_>>();
    assert_eq!(uris(&a), uris(&b));
    assert_eq!(uris(&a).len(), 2, "alice's two submissions; bob's are deleted: {a}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commit_with_a_broken_signature_is_rejected_and_listed_in_the_dead_letters() {
    let pds = Pds::start().unwrap();
    let alice = pds.create_account("alice").await.unwrap();
    let proxy = tests::tamper::start(pds.ws_url(), "3ktampered0a2".into()).await;
    let backend = Backend::embedded()
        .with_env("SVC_FIREHOSE", &proxy)
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let svc = Service::start_with(&data, tests::free_port(), &backend).await.unwrap();

    let (before, _) = pds.create_record(&alice, SUBMISSION, &submission("Before", &alice, None)).await.unwrap();
    // Frames are applied in stream order, so once "Before" shows, alice's `#sync` (sent when
    // the account was created) has been handled. Its backfill reads the repository as it is
    // when svc gets to it: written any earlier, the record would arrive there, genuinely
    // signed, and not through the tampered frame this test is about.
    until(&svc, &detail(&before), "the commit before", |s, _| s == 200).await;
    pds.put_record(&alice, SUBMISSION, "3ktampered0a2", &submission("Tampered on the way", &alice, None)).await.unwrap();
    let (after, _) = pds.create_record(&alice, SUBMISSION, &submission("After", &alice, None)).await.unwrap();
    until(&svc, &detail(&after), "the commit after the tampered one", |s, _| s == 200).await;
    let tampered = format!("at://{}/{SUBMISSION}/3ktampered0a2", alice.did);
    let (status, _, body) = svc.get(&detail(&tampered)).await.unwrap();
    assert_eq!(status, 404, "the tampered commit was applied: {body}");

    svc.stop().unwrap();
    let out = tests::svc_with_env(&["dead-letters", "--data-dir", data.to_str().unwrap()], &backend.env()).unwrap();
    let letters: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        letters
            .iter()
            .any(|l| l["kind"] == "repo.rejected" && l["key"] == alice.did.as_str() && l["reason"].as_str().unwrap().contains("signature")),
        "no dead letter for the tampered commit: {out}"
    );
    // Nothing else: the account's `#sync` (sent on creation) was verified and backfilled.
    assert_eq!(letters.len(), 1, "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn backfill_brings_the_read_models_to_the_repositories_state() {
    let pds = Pds::start().unwrap();
    let alice = pds.create_account("alice").await.unwrap();
    let bob = pds.create_account("bob").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();

    // svc follows the stream for a while, then stops.
    let following = Backend::embedded()
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url);
    let svc = Service::start_with(&data, tests::free_port(), &following).await.unwrap();
    let (kept, _) = pds.create_record(&alice, SUBMISSION, &submission("Kept", &alice, None)).await.unwrap();
    let (gone, _) = pds.create_record(&alice, SUBMISSION, &submission("Deleted while svc was away", &alice, None)).await.unwrap();
    until(&svc, &detail(&gone), "the records before the break", |s, _| s == 200).await;
    svc.stop().unwrap();

    // While it is away: a deletion and a new repository's record.
    pds.delete_record(&alice, SUBMISSION, rkey(&gone)).await.unwrap();
    let (bobs, _) = pds.create_record(&bob, SUBMISSION, &submission("Bob's paper", &bob, None)).await.unwrap();

    let offline = Backend::embedded().with_env("SVC_PLC_URL", &pds.plc_url).with_env("SVC_HANDLE_RESOLVER", &pds.url);
    let out = offline.svc(&["backfill", "did", &alice.did, "--data-dir", data_s]).unwrap();
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!((report["records"].as_u64(), report["deletes"].as_u64()), (Some(1), Some(1)), "{report}");
    let out = offline.svc(&["backfill", "pds", &pds.url, "--data-dir", data_s]).unwrap();
    let reports: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(reports.len(), 2, "both repositories of the PDS: {out}");
    assert!(reports.iter().all(|r| r["error"].is_null()), "{out}");
    let err = offline.svc(&["backfill", "did", "not-a-did", "--data-dir", data_s]).unwrap_err().to_string();
    assert!(err.contains("is not a valid DID"), "{err}");

    let svc = Service::start_with(&data, tests::free_port(), &offline).await.unwrap();
    svc.wait_caught_up().await.unwrap();
    assert_eq!(svc.get(&detail(&kept)).await.unwrap().0, 200);
    assert_eq!(svc.get(&detail(&gone)).await.unwrap().0, 404, "the deletion the stream missed is applied");
    let (status, _, body) = svc.get(&detail(&bobs)).await.unwrap();
    assert_eq!((status, body["record"]["title"].as_str()), (200, Some("Bob's paper")));
}
