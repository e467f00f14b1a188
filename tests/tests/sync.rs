//! `pub.svc.sync.*` against a real PDS, with tokens the PDS signs through
//! `com.atproto.server.getServiceAuth`. svc runs without a firehose here, so only the sync
//! operations bring repository changes into the index.
//!
//! A repository's own token refreshes its record (indexed at once, visible on return) and
//! deletes it once the repository no longer holds it; an approved service's token refreshes
//! anyone's. Refused: no token, a malformed or tampered token, a token for another `aud` or
//! another `lxm`, a replayed token (also after a crash and restart), an expired token, and a
//! repository's token for another repository's record.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tests::pds::{submission, Pds};
use tests::{enc, Backend, Service};

const SUBMISSION: &str = "pub.svc.eprint.submission";
const REFRESH: &str = "/xrpc/pub.svc.sync.refreshRecord";
const DELETE: &str = "/xrpc/pub.svc.sync.deleteRecord";
const INDEX: &str = "/xrpc/pub.svc.sync.indexRecord";
const SERVICE_DID: &str = "did:web:svc.test";

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn detail(uri: &str) -> String {
    format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri))
}

fn refusal(status: u16, body: &Value) -> (u16, String) {
    (status, body["error"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn sync_operations_prove_records_and_check_service_auth() {
    let pds = Pds::start().unwrap();
    let alice = pds.create_account("alice").await.unwrap();
    let bob = pds.create_account("bob").await.unwrap();
    let carol = pds.create_account("carol").await.unwrap();
    let (paper, cid) = pds.create_record(&alice, SUBMISSION, &submission("Refreshable widgets", &alice, None)).await.unwrap();
    let (bobs, _) = pds.create_record(&bob, SUBMISSION, &submission("Bob's paper", &bob, None)).await.unwrap();
    let rkey = paper.rsplit('/').next().unwrap().to_owned();
    // Taken now, used at the end, once it has expired.
    let expiring = pds.service_auth(&alice, SERVICE_DID, "pub.svc.sync.refreshRecord", Some(now() + 2)).await.unwrap();
    let expired_after = Instant::now() + Duration::from_secs(2 + query_api::identity::CLOCK_SKEW as u64 + 1);

    let backend = Backend::embedded()
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_APPROVED_SERVICES", &carol.did);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let svc = Service::start_with(&data, tests::free_port(), &backend).await.unwrap();
    let token = |who, lxm: &'static str| pds.service_auth(who, SERVICE_DID, lxm, None);

    // Open queries: not indexed yet.
    let (status, body) = svc.get(&format!("/xrpc/pub.svc.sync.verify?uri={}", enc(&paper))).await.map(|(s, _, b)| (s, b)).unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["indexed"].clone(), body["inSync"].clone(), body["pdsCid"].clone()), (json!(false), json!(false), json!(cid)));
    let (status, body) = svc.get(&format!("/xrpc/pub.svc.sync.checkStaleness?uri={}", enc(&paper))).await.map(|(s, _, b)| (s, b)).unwrap();
    assert_eq!(refusal(status, &body), (404, "NotFound".into()), "{body}");

    // The repository's own token refreshes its record: indexed and readable on return.
    let alices = token(&alice, "pub.svc.sync.refreshRecord").await.unwrap();
    let (status, body) = svc.post(REFRESH, Some(&alices), &json!({"uri": paper})).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["refreshed"].clone(), body["changed"].clone(), body["newCid"].clone()), (json!(true), json!(true), json!(cid)));
    let (status, _, shown) = svc.get(&detail(&paper)).await.unwrap();
    assert_eq!((status, shown["record"]["title"].clone()), (200, json!("Refreshable widgets")));

    // The same token again: its jti is spent.
    let (status, body) = svc.post(REFRESH, Some(&alices), &json!({"uri": paper})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "InvalidToken".into()), "{body}");
    // Alice's token for Bob's record.
    let (status, body) =
        svc.post(REFRESH, Some(&token(&alice, "pub.svc.sync.refreshRecord").await.unwrap()), &json!({"uri": bobs})).await.unwrap();
    assert_eq!(refusal(status, &body), (403, "Forbidden".into()), "{body}");
    assert_eq!(svc.get(&detail(&bobs)).await.unwrap().0, 404);
    // A token for another method, and one for another service.
    let (status, body) =
        svc.post(REFRESH, Some(&token(&alice, "pub.svc.sync.deleteRecord").await.unwrap()), &json!({"uri": paper})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "InvalidToken".into()), "{body}");
    let elsewhere = pds.service_auth(&alice, "did:web:other.test", "pub.svc.sync.refreshRecord", None).await.unwrap();
    let (status, body) = svc.post(REFRESH, Some(&elsewhere), &json!({"uri": paper})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "InvalidToken".into()), "{body}");
    // No token, a malformed one, a tampered one.
    let (status, body) = svc.post(REFRESH, None, &json!({"uri": paper})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "AuthRequired".into()), "{body}");
    let (status, body) = svc.post(REFRESH, Some("not.a.jwt"), &json!({"uri": paper})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "InvalidToken".into()), "{body}");
    let genuine = token(&alice, "pub.svc.sync.refreshRecord").await.unwrap();
    let (signed, sig) = genuine.rsplit_once('.').unwrap();
    let mid = sig.len() / 2;
    let flipped = format!("{}{}{}", &sig[..mid], if sig.as_bytes()[mid] == b'A' { 'B' } else { 'A' }, &sig[mid + 1..]);
    let (status, body) = svc.post(REFRESH, Some(&format!("{signed}.{flipped}")), &json!({"uri": paper})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "InvalidToken".into()), "{body}");
    // A forged token did not burn the genuine one's jti.
    let (status, body) = svc.post(REFRESH, Some(&genuine), &json!({"uri": paper})).await.unwrap();
    assert_eq!((status, body["changed"].clone()), (200, json!(false)), "{body}");
    // A bad body, with a good token.
    let (status, body) =
        svc.post(REFRESH, Some(&token(&alice, "pub.svc.sync.refreshRecord").await.unwrap()), &json!({"uri": "nope"})).await.unwrap();
    assert_eq!(refusal(status, &body), (400, "InvalidRequest".into()), "{body}");
    // A body over 64 KiB, with a good token: refused before it is read whole.
    let padded = json!({"uri": paper, "padding": "x".repeat(70_000)});
    let (status, body) = svc.post(REFRESH, Some(&token(&alice, "pub.svc.sync.refreshRecord").await.unwrap()), &padded).await.unwrap();
    assert_eq!(refusal(status, &body), (400, "InvalidRequest".into()), "{body}");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("larger than 65536 bytes")), "{body}");

    // An approved service refreshes anyone's record.
    let (status, body) =
        svc.post(REFRESH, Some(&token(&carol, "pub.svc.sync.refreshRecord").await.unwrap()), &json!({"uri": bobs})).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(svc.get(&detail(&bobs)).await.unwrap().0, 200);

    // The repository changes behind svc's back: stale, then refreshed.
    pds.put_record(&alice, SUBMISSION, &rkey, &submission("Refreshable widgets, revised", &alice, None)).await.unwrap();
    let (_, _, body) = svc.get(&format!("/xrpc/pub.svc.sync.checkStaleness?uri={}", enc(&paper))).await.unwrap();
    assert_eq!(body["isStale"], true, "{body}");
    assert_ne!(body["pdsCid"], body["indexedCid"]);
    let (_, _, body) = svc.get(&format!("/xrpc/pub.svc.sync.verify?uri={}", enc(&paper))).await.unwrap();
    assert_eq!((body["indexed"].clone(), body["inSync"].clone()), (json!(true), json!(false)), "{body}");
    let (status, body) =
        svc.post(REFRESH, Some(&token(&alice, "pub.svc.sync.refreshRecord").await.unwrap()), &json!({"uri": paper})).await.unwrap();
    assert_eq!((status, body["changed"].clone()), (200, json!(true)), "{body}");
    assert_eq!(svc.get(&detail(&paper)).await.unwrap().2["record"]["title"], "Refreshable widgets, revised");
    let (_, _, body) = svc.get(&format!("/xrpc/pub.svc.sync.verify?uri={}", enc(&paper))).await.unwrap();
    assert_eq!(body["inSync"], true, "{body}");

    // deleteRecord: refused while the repository still holds the record, done once it does not.
    let delete_body = json!({"uri": paper, "collection": SUBMISSION});
    let (status, body) = svc.post(DELETE, Some(&token(&alice, "pub.svc.sync.deleteRecord").await.unwrap()), &delete_body).await.unwrap();
    assert_eq!(refusal(status, &body), (400, "InvalidRequest".into()), "{body}");
    pds.delete_record(&alice, SUBMISSION, &rkey).await.unwrap();
    let (status, body) = svc.post(DELETE, Some(&token(&bob, "pub.svc.sync.deleteRecord").await.unwrap()), &delete_body).await.unwrap();
    assert_eq!(refusal(status, &body), (403, "Forbidden".into()), "{body}");
    let (status, body) = svc.post(DELETE, Some(&token(&alice, "pub.svc.sync.deleteRecord").await.unwrap()), &delete_body).await.unwrap();
    assert_eq!((status, body["success"].clone(), body["uri"].clone()), (200, json!(true), json!(paper)), "{body}");
    assert!(body["deletedAt"].is_string());
    assert_eq!(svc.get(&detail(&paper)).await.unwrap().0, 404);

    // indexRecord (beyond the contract): a record written now is visible on return; one
    // its collection's rules refuse answers why; another repository's is refused.
    let (fresh, fresh_cid) = pds.create_record(&bob, SUBMISSION, &submission("Indexed on request", &bob, None)).await.unwrap();
    let (status, body) =
        svc.post(INDEX, Some(&token(&bob, "pub.svc.sync.indexRecord").await.unwrap()), &json!({"uri": fresh})).await.unwrap();
    assert_eq!((status, &body["indexed"], &body["cid"]), (200, &json!(true), &json!(fresh_cid)), "{body}");
    assert_eq!(svc.get(&detail(&fresh)).await.unwrap().2["record"]["title"], "Indexed on request");
    let (bad, _) = pds.create_record(&bob, SUBMISSION, &json!({"title": "No authors", "createdAt": "2025-01-01T00:00:00Z"})).await.unwrap();
    let (status, body) =
        svc.post(INDEX, Some(&token(&bob, "pub.svc.sync.indexRecord").await.unwrap()), &json!({"uri": bad})).await.unwrap();
    assert_eq!((status, &body["indexed"]), (200, &json!(false)), "{body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    let (status, body) =
        svc.post(INDEX, Some(&token(&alice, "pub.svc.sync.indexRecord").await.unwrap()), &json!({"uri": fresh})).await.unwrap();
    assert_eq!(refusal(status, &body), (403, "Forbidden".into()), "{body}");
    let gone = format!("at://{}/{SUBMISSION}/3kaaaaaaaaaaa", bob.did);
    let (status, body) =
        svc.post(INDEX, Some(&token(&bob, "pub.svc.sync.indexRecord").await.unwrap()), &json!({"uri": gone})).await.unwrap();
    assert_eq!(refusal(status, &body), (404, "NotFound".into()), "{body}");
    let (status, body) = svc.post(INDEX, None, &json!({"uri": fresh})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "AuthRequired".into()), "{body}");

    // registerPDS (beyond the contract): a host that describes itself is registered; one
    // that does not answer is unavailable; a URL that is no host's origin is refused.
    let register = "/xrpc/pub.svc.sync.registerPDS";
    let (status, body) = svc.post(register, None, &json!({"pdsUrl": format!("{}/", pds.url)})).await.unwrap();
    assert_eq!((status, &body["registered"], &body["pdsUrl"]), (200, &json!(true), &json!(pds.url)), "{body}");
    let silent = format!("http://127.0.0.1:{}", tests::free_port());
    let (status, body) = svc.post(register, None, &json!({"pdsUrl": silent})).await.unwrap();
    assert_eq!(refusal(status, &body), (503, "ServiceUnavailable".into()), "{body}");
    for bad in [json!({"pdsUrl": "ftp://x"}), json!({"pdsUrl": format!("{}/xrpc", pds.url)}), json!({})] {
        let (status, body) = svc.post(register, None, &bad).await.unwrap();
        assert_eq!(refusal(status, &body), (400, "InvalidRequest".into()), "{bad}: {body}");
    }

    // Spent tokens stay spent across a crash.
    svc.kill9();
    let svc = Service::start_with(&data, tests::free_port(), &backend).await.unwrap();
    let (status, body) = svc.post(REFRESH, Some(&alices), &json!({"uri": paper})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "InvalidToken".into()), "{body}");
    assert_eq!(svc.get(&detail(&paper)).await.unwrap().0, 404, "the deletion survived the crash");

    // The token taken at the start has expired by now.
    tokio::time::sleep(expired_after.saturating_duration_since(Instant::now())).await;
    let (status, body) = svc.post(REFRESH, Some(&expiring), &json!({"uri": bobs})).await.unwrap();
    assert_eq!(refusal(status, &body), (401, "ExpiredToken".into()), "{body}");
}
