//! The admin surface in process: every admin operation refused to a non-admin, counts and
//! users, content listings, take-downs that every read model applies (and keeps through a
//! later write and a replay), the dead letters retried and dismissed, and backfill
//! operations (a full reindex to completion, `triggerBackfill` starting the work it names,
//! an operation whose node stopped reported failed).

use crate::support;

use axum::http::StatusCode;
use event_schema::{AdminAction, AdminCommand, IdentityChange, NewEvent, Payload, Source, OPERATIONS_KEY};
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";
const CAROL: &str = "did:plc:carol0000000000000000000";
const ADMIN: &str = "did:plc:admin000000000000000000";

fn identity(did: &str, handle: &str) -> NewEvent {
    NewEvent::repo(
        Source::Manual { note: "test".into() },
        Payload::Identity(IdentityChange { did: did.into(), handle: Some(handle.into()), display_name: None }),
    )
}

fn review(did: &str, rkey: &str, rev: &str, eprint: &str, text: &str) -> NewEvent {
    create(
        did,
        "pub.svc.review.comment",
        rkey,
        rev,
        json!({
        "eprintUri": eprint,
        "body": [{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}],
        "createdAt": "2024-07-01T00:00:00Z"}),
    )
}

/// Alice's two papers, Bob's review and endorsement, Carol's invalid review; an admin and
/// a plain user logged in.
async fn fixture() -> (Fixture, String, String) {
    let mut f = Fixture::new();
    let p1 = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    f.apply(vec![
        identity(ALICE, "alice.test"),
        identity(BOB, "bob.test"),
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Transformers", ALICE, "2024-05-01T00:00:00Z")),
        create(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000b", submission("Dense Retrieval", ALICE, "2024-06-01T00:00:00Z")),
        review(BOB, "r1", "3l0000000000c", &p1, "Convincing ablation."),
        create(
            BOB,
            "pub.svc.review.endorsement",
            "n1",
            "3l0000000000d",
            json!({
            "eprintUri": p1, "contributions": ["methodological"], "createdAt": "2024-07-07T00:00:00Z"}),
        ),
        create(CAROL, "pub.svc.review.comment", "bad", "3l0000000000e", json!({"body": "no eprint", "createdAt": "2024-07-01T00:00:00Z"})),
    ]);
    f.live();
    query_api::xrpc::admin::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    let admin = login(&f, ADMIN, "a").await;
    let user = login(&f, CAROL, "u").await;
    (f, admin, user)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_admin_operation_refuses_a_non_admin_and_an_anonymous_caller() {
    let (f, _, user) = fixture().await;
    let admin_ops: Vec<_> =
        query_api::xrpc::methods().methods().iter().filter(|m| m.nsid.starts_with("pub.svc.admin.")).map(|m| (m.nsid, m.kind)).collect();
    assert!(admin_ops.len() >= 30, "{admin_ops:?}");
    for (nsid, kind) in admin_ops {
        let path = format!("/xrpc/{nsid}");
        let (status, body) = match kind {
            query_api::xrpc::Kind::Query | query_api::xrpc::Kind::Subscription => f.get_as(&path, &user).await,
            query_api::xrpc::Kind::Procedure => f.post_as(&path, Some(&user), json!({})).await,
        };
        assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("AuthorizationError")), "{nsid}: {body}");
        let (status, _) = f.post_as(&path, None, json!({})).await;
        assert!(status == StatusCode::UNAUTHORIZED || status == StatusCode::METHOD_NOT_ALLOWED, "{nsid}: {status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_users_listings_and_take_downs() {
    let (f, admin, _) = fixture().await;
    let get = |path: String| {
        let (f, admin) = (&f, admin.clone());
        async move {
            let (status, body) = f.get_as(&path, &admin).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            body
        }
    };
    let overview = get("/xrpc/pub.svc.admin.getOverview".into()).await;
    assert_eq!(overview, json!({"eprints": 2, "authors": 3, "reviews": 1, "endorsements": 1, "collections": 0, "tags": 0, "reports": 0}));

    // Users, by handle or DID prefix.
    let users = get("/xrpc/pub.svc.admin.searchUsers?query=ALICE.t".into()).await;
    assert_eq!(users["users"].as_array().unwrap().len(), 1, "{users}");
    assert_eq!((users["users"][0]["did"].as_str(), users["users"][0]["eprintCount"].as_u64()), (Some(ALICE), Some(2)));
    let users = get("/xrpc/pub.svc.admin.searchUsers?query=did:plc:b".into()).await;
    assert_eq!((users["users"][0]["handle"].as_str(), users["users"][0]["reviewCount"].as_u64()), (Some("bob.test"), Some(1)));
    assert_eq!(users["users"][0]["endorsementCount"], 1);
    let users = get(format!("/xrpc/pub.svc.admin.searchUsers?query={}", enc("did:plc:admin"))).await;
    assert_eq!(users["users"].as_array().unwrap().len(), 0, "an admin who wrote nothing is not in the index: {users}");
    let detail = get(format!("/xrpc/pub.svc.admin.getUserDetail?did={BOB}")).await;
    assert_eq!((detail["reviewCount"].as_u64(), detail["handle"].as_str()), (Some(1), Some("bob.test")));
    let (status, e) = f.get_as("/xrpc/pub.svc.admin.getUserDetail?did=did:plc:nobody", &admin).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFoundError")));

    // Content listings.
    let eprints = get("/xrpc/pub.svc.admin.listEprints".into()).await;
    assert_eq!(eprints["total"], 2);
    assert_eq!(eprints["items"][0]["title"], "Dense Retrieval", "newest first: {eprints}");
    assert_eq!(eprints["items"][0]["authorDid"], ALICE);
    assert_eq!(get("/xrpc/pub.svc.admin.listEprints?q=sparse".into()).await["total"], 1);
    assert_eq!(get("/xrpc/pub.svc.admin.listEprints?offset=1&limit=1".into()).await["items"][0]["title"], "Sparse Transformers");
    let reviews = get("/xrpc/pub.svc.admin.listReviews".into()).await;
    assert_eq!((reviews["total"].as_u64(), reviews["items"][0]["reviewerDid"].as_str()), (Some(1), Some(BOB)));
    let endorsements = get("/xrpc/pub.svc.admin.listEndorsements?limit=1".into()).await;
    assert_eq!((endorsements["total"].as_u64(), endorsements["items"][0]["endorserDid"].as_str()), (Some(1), Some(BOB)));
    assert_eq!(f.get_as("/xrpc/pub.svc.admin.listReviews?cursor=x", &admin).await.0, StatusCode::BAD_REQUEST);

    // Take-downs.
    let p1 = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    let r1 = format!("at://{BOB}/pub.svc.review.comment/r1");
    let (status, e) =
        f.post_as("/xrpc/pub.svc.admin.deleteContent", Some(&admin), json!({"uri": r1, "collection": "pub.svc.eprint.userTag"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    let gone = format!("at://{BOB}/pub.svc.review.comment/never");
    let (status, e) =
        f.post_as("/xrpc/pub.svc.admin.deleteContent", Some(&admin), json!({"uri": gone, "collection": "pub.svc.review.comment"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFoundError")));
    let (status, done) = f
        .post_as(
            "/xrpc/pub.svc.admin.deleteContent",
            Some(&admin),
            json!({"uri": r1, "collection": "pub.svc.review.comment", "reason": "spam"}),
        )
        .await;
    assert_eq!((status, done), (StatusCode::OK, json!({"success": true, "uri": r1})));
    assert_eq!(get("/xrpc/pub.svc.admin.listReviews".into()).await["total"], 0);
    let listed = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}", enc(&p1))).await.1;
    assert_eq!(
        (&listed["total"], &listed["reviews"][0]["deleted"], &listed["reviews"][0]["content"]),
        (&json!(1), &json!(true), &json!("")),
        "a placeholder: {listed}"
    );
    // The repository writes the review again, newer: it stays down.
    f.log.append(&[review(BOB, "r1", "3l0000000000z", &p1, "Edited.")]).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (status, _) =
        f.post_as("/xrpc/pub.svc.admin.deleteContent", Some(&admin), json!({"uri": p1, "collection": "pub.svc.eprint.submission"})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(f.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&p1))).await.0, StatusCode::NOT_FOUND);
    assert_eq!(get("/xrpc/pub.svc.admin.listEprints".into()).await["total"], 1, "gone from the search index too");
    assert_eq!(get("/xrpc/pub.svc.admin.listReviews".into()).await["total"], 0, "a later write does not bring it back");
    let audit = get(format!("/xrpc/pub.svc.admin.getAuditLog?actorDid={ADMIN}")).await;
    let actions: Vec<&str> = audit["entries"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(actions.iter().filter(|a| **a == "delete").count(), 2, "{audit}");
    let deletion = audit["entries"].as_array().unwrap().iter().find(|e| e["details"]["uri"] == r1.as_str()).unwrap();
    assert_eq!((deletion["details"]["reason"].as_str(), deletion["targetDid"].as_str()), (Some("spam"), Some(BOB)));
    // In pages: the total counts every entry of the actor, a page its share.
    let total = audit["total"].as_u64().unwrap();
    assert_eq!(total, audit["entries"].as_array().unwrap().len() as u64, "{audit}");
    let second = get(format!("/xrpc/pub.svc.admin.getAuditLog?actorDid={ADMIN}&limit=1&cursor=1")).await;
    assert_eq!((second["total"].as_u64(), &second["entries"][0]), (Some(total), &audit["entries"][1]), "{second}");
    let everyone = get("/xrpc/pub.svc.admin.getAuditLog?limit=1".into()).await;
    assert!(everyone["total"].as_u64() > Some(total), "Carol's and Alice's logins too: {everyone}");

    // Violations are the take-downs; warnings the records the index refused.
    let violations = get(format!("/xrpc/pub.svc.admin.listViolations?did={BOB}")).await;
    assert_eq!(violations["violations"].as_array().unwrap().len(), 1, "{violations}");
    assert_eq!(
        (violations["violations"][0]["uri"].as_str(), violations["violations"][0]["reason"].as_str()),
        (Some(r1.as_str()), Some("spam"))
    );
    assert_eq!(get("/xrpc/pub.svc.admin.listViolations".into()).await["violations"].as_array().unwrap().len(), 2);
    let warnings = get(format!("/xrpc/pub.svc.admin.listWarnings?did={CAROL}")).await;
    assert_eq!(warnings["warnings"][0]["uri"], format!("at://{CAROL}/pub.svc.review.comment/bad"), "{warnings}");
    assert_eq!(get(format!("/xrpc/pub.svc.admin.listWarnings?did={BOB}")).await["warnings"], json!([]));
    assert_eq!(f.get_as("/xrpc/pub.svc.admin.listWarnings?did=nobody", &admin).await.0, StatusCode::BAD_REQUEST);

    // A host registered by hand.
    let (status, e) = f.post_as("/xrpc/pub.svc.admin.rescanPDS", Some(&admin), json!({"pdsUrl": "ftp://x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    let (_, out) = f.post_as("/xrpc/pub.svc.admin.rescanPDS", Some(&admin), json!({"pdsUrl": "https://pds.example/"})).await;
    assert_eq!(out, json!({"success": true, "pdsUrl": "https://pds.example"}));
    let hosts = get("/xrpc/pub.svc.admin.listPDSes".into()).await;
    assert_eq!(hosts["stats"]["total"], 1, "{hosts}");
    assert_eq!(
        (hosts["stats"]["items"][0]["pdsUrl"].as_str(), hosts["stats"]["withRecords"].as_u64()),
        (Some("https://pds.example"), Some(0))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_are_retried_and_dismissed() {
    let (f, admin, _) = fixture().await;
    let list = || async { f.get_as("/xrpc/pub.svc.admin.listDLQEntries", &admin).await.1 };
    let before = list().await;
    assert_eq!(before["total"], 1, "{before}");
    let reason = before["entries"][0]["error"].clone();
    assert_eq!(before["entries"][0]["errorType"], "VALIDATION_ERROR");
    let (_, out) = f.post_as("/xrpc/pub.svc.admin.retryDLQEntry", Some(&admin), json!({"index": 5})).await;
    assert_eq!(out["success"], false, "{out}");
    // Carol's valid review, written after her invalid one, does not wait behind it.
    let p2 = format!("at://{ALICE}/pub.svc.eprint.submission/p2");
    f.log.append(&[review(CAROL, "good", "3l0000000000f", &p2, "Not held.")]).unwrap();
    let reviews = || async { f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}", enc(&p2))).await.1["total"].clone() };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while reviews().await != 1 {
        assert!(std::time::Instant::now() < deadline, "the valid review never showed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(list().await["total"], 1, "one letter still");
    let (_, out) = f.post_as("/xrpc/pub.svc.admin.retryDLQEntry", Some(&admin), json!({"index": 0})).await;
    assert_eq!(out["success"], true, "{out}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let after = loop {
        let after = list().await;
        if after["entries"][0]["offset"] != before["entries"][0]["offset"] {
            break after;
        }
        assert!(std::time::Instant::now() < deadline, "the retried event never parked anew");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!((after["total"].as_u64(), &after["entries"][0]["error"]), (Some(1), &reason), "it fails again: {after}");
    let (_, out) = f.post_as("/xrpc/pub.svc.admin.retryAllDLQ", Some(&admin), json!({"errorType": "PROCESSING_ERROR"})).await;
    assert_eq!(out, json!({"success": true, "retriedCount": 0}));
    // The console's filters: by model and by key (nothing of the eprints model, nothing of
    // Bob's; Carol's letter is the attached model's).
    for filter in [json!({"model": "eprints"}), json!({"key": BOB}), json!({"model": "attached", "key": "did:plc:nobody"})] {
        let (_, out) = f.post_as("/xrpc/pub.svc.admin.retryAllDLQ", Some(&admin), filter.clone()).await;
        assert_eq!(out, json!({"success": true, "retriedCount": 0}), "{filter}");
    }
    let (_, out) = f.post_as("/xrpc/pub.svc.admin.purgeOldDLQ", Some(&admin), json!({"olderThanDays": 7})).await;
    assert_eq!(out, json!({"success": true, "purgedCount": 0}), "nothing that old");
    let (_, out) = f.post_as("/xrpc/pub.svc.admin.dismissDLQEntry", Some(&admin), json!({"index": 0})).await;
    assert_eq!(out["success"], true, "{out}");
    assert_eq!(list().await["total"], 0, "dismissed: released");
    // Another invalid record; purging what is older than 0 days releases it.
    let bad =
        create(CAROL, "pub.svc.review.comment", "bad2", "3l0000000000y", json!({"body": "no eprint", "createdAt": "2024-07-01T00:00:00Z"}));
    f.log.append(&[bad]).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while list().await["total"] != 1 {
        assert!(std::time::Instant::now() < deadline, "the second invalid record never parked");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Its author mends it: the letter is superseded, listed only when asked for.
    f.log.append(&[review(CAROL, "bad2", "3l0000000000z", &p2, "Mended.")]).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while list().await["total"] != 0 {
        assert!(std::time::Instant::now() < deadline, "the mended record never superseded its letter");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(reviews().await, 2, "the mended review shows");
    let all = f.get_as("/xrpc/pub.svc.admin.listDLQEntries?includeSuperseded=true", &admin).await.1;
    assert_eq!(all["total"], 1, "{all}");
    assert!(all["entries"][0]["supersededBy"]["offset"].as_u64() > all["entries"][0]["offset"].as_u64(), "{all}");
    assert_eq!(f.get_as("/xrpc/pub.svc.admin.listDLQEntries?includeSuperseded=maybe", &admin).await.0, StatusCode::BAD_REQUEST);
    let (_, out) = f.post_as("/xrpc/pub.svc.admin.purgeOldDLQ", Some(&admin), json!({"olderThanDays": 0})).await;
    assert_eq!(out, json!({"success": true, "purgedCount": 1}), "superseded letters are purged too");
    let all = f.get_as("/xrpc/pub.svc.admin.listDLQEntries?includeSuperseded=true", &admin).await.1;
    assert_eq!(all["total"], 0, "purged: released {all}");
    let status = f.get_as("/xrpc/pub.svc.admin.getFirehoseStatus", &admin).await.1;
    assert_eq!((status["dlqCount"].as_u64(), &status["cursor"]), (Some(0), &Value::Null), "{status}");
    let audit = f.get_as("/xrpc/pub.svc.admin.getAuditLog", &admin).await.1;
    let actions: Vec<&str> = audit["entries"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"dlq_retry") && actions.contains(&"dlq_dismiss"), "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_reindex_completes_and_trigger_backfill_starts_the_work_it_names() {
    let (f, admin, _) = fixture().await;
    let p2 = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&format!("at://{ALICE}/pub.svc.eprint.submission/p2")));
    let before = f.get(&p2).await;
    let old = f.state.store.active_version("eprints").unwrap();
    let (status, started) = f.post_as("/xrpc/pub.svc.admin.triggerFullReindex", Some(&admin), json!({})).await;
    assert_eq!((status, started["status"].as_str()), (StatusCode::OK, Some("running")), "{started}");
    let id = started["operationId"].as_str().unwrap().to_owned();
    let mut op = Value::Null;
    // Up to a minute: the suite's other tests share the cores with the rebuild.
    for _ in 0..1200 {
        op = f.get_as(&format!("/xrpc/pub.svc.admin.getBackfillStatus?id={id}"), &admin).await.1["operation"].clone();
        if op["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        (op["status"].as_str(), op["progress"].as_u64(), op["type"].as_str()),
        (Some("completed"), Some(100), Some("fullReindex")),
        "{op}"
    );
    assert!(op["recordsProcessed"].as_u64() > Some(0), "{op}");
    assert_ne!(f.state.store.active_version("eprints").unwrap(), old, "a new version was swapped in");
    assert_eq!(f.get(&p2).await, before, "the same answer from the rebuilt models");

    // triggerBackfill starts the work it names.
    let (status, started) = f.post_as("/xrpc/pub.svc.admin.triggerBackfill", Some(&admin), json!({"type": "citationExtraction"})).await;
    assert_eq!((status, started["operation"]["type"].as_str()), (StatusCode::OK, Some("citationExtraction")), "{started}");
    let extraction = started["operation"]["id"].as_str().unwrap().to_owned();
    let (status, e) = f.post_as("/xrpc/pub.svc.admin.triggerBackfill", Some(&admin), json!({"type": "didSync", "did": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    let before = f.state.store.active_version("eprints").unwrap();
    let (_, made) = f.post_as("/xrpc/pub.svc.admin.triggerBackfill", Some(&admin), json!({"type": "fullReindex", "note": "nightly"})).await;
    assert_eq!(made["operation"]["metadata"]["note"], "nightly", "{made}");
    let other = made["operation"]["id"].as_str().unwrap().to_owned();
    let mut op = Value::Null;
    for _ in 0..300 {
        op = op_status(&f, &admin, &other).await;
        if op["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(op["status"], "completed", "{op}");
    assert_ne!(f.state.store.active_version("eprints").unwrap(), before, "it ran: a new version was swapped in");
    let (_, late) = f.post_as("/xrpc/pub.svc.admin.cancelBackfill", Some(&admin), json!({"id": id})).await;
    assert_eq!(late, json!({"success": false, "id": id, "status": "completed"}), "too late: it says how it ended");
    let history = f.get_as("/xrpc/pub.svc.admin.getBackfillHistory", &admin).await.1;
    let ids: Vec<&str> = history["operations"].as_array().unwrap().iter().filter_map(|o| o["id"].as_str()).collect();
    assert_eq!(ids, vec![other.as_str(), extraction.as_str(), id.as_str()], "newest first: {history}");
    let (status, e) = f.get_as("/xrpc/pub.svc.admin.getBackfillStatus?id=nope", &admin).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFoundError")));
}

/// A governance sync reads the governance repository from its host first: one that cannot
/// be reached fails the operation, with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_governance_sync_whose_repository_cannot_be_read_fails_with_the_reason() {
    let (f, admin, _) = fixture().await;
    let (status, started) = f.post_as("/xrpc/pub.svc.admin.triggerGovernanceSync", Some(&admin), json!({})).await;
    assert_eq!((status, started["status"].as_str()), (StatusCode::OK, Some("running")), "{started}");
    let id = started["operationId"].as_str().unwrap();
    let mut op = Value::Null;
    for _ in 0..400 {
        op = op_status(&f, &admin, id).await;
        if op["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!((op["status"].as_str(), op["type"].as_str()), (Some("failed"), Some("governanceSync")), "{op}");
    assert!(op["error"].as_str().is_some_and(|e| e.contains("governance repository")), "{op}");
}

async fn op_status(f: &Fixture, admin: &str, id: &str) -> Value {
    f.get_as(&format!("/xrpc/pub.svc.admin.getBackfillStatus?id={id}"), admin).await.1["operation"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_whose_node_stopped_is_reported_failed_and_ended_in_the_log_and_one_reindex_runs_at_a_time() {
    let (f, admin, _) = fixture().await;
    // A node started a reindex and died: its start is in the log, nothing follows.
    let id = "0b6f2c1e-7f4e-4d38-9d53-5c1b8f0f9a11";
    let started = AdminAction::OperationStarted { id: id.into(), operation: "fullReindex".into(), runs: true, metadata: None };
    f.log
        .append(&[NewEvent {
            key: OPERATIONS_KEY.into(),
            source: Source::Manual { note: "a node that died".into() },
            payload: Payload::Admin(AdminCommand { actor: ADMIN.into(), action: started }),
        }])
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while op_status(&f, &admin, id).await["status"] != "running" {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // While it runs, no second reindex starts (through either trigger).
    for (path, body) in
        [("/xrpc/pub.svc.admin.triggerFullReindex", json!({})), ("/xrpc/pub.svc.admin.triggerBackfill", json!({"type": "fullReindex"}))]
    {
        let (status, refused) = f.post_as(path, Some(&admin), body).await;
        assert_eq!((status, refused["error"].as_str()), (StatusCode::CONFLICT, Some("OperationInProgress")), "{refused}");
        assert!(refused["message"].as_str().unwrap().contains(id), "names the running one: {refused}");
    }
    // A cancel waits for the end: this operation's node is gone, so it ends failed once
    // silent for too long, and the cancel says so.
    let (_, cancelled) = f.post_as("/xrpc/pub.svc.admin.cancelBackfill", Some(&admin), json!({"id": id})).await;
    assert_eq!(cancelled, json!({"success": false, "id": id, "status": "failed"}), "its node is gone");
    let op = op_status(&f, &admin, id).await;
    assert_eq!(op["status"], "failed", "{op}");
    assert!(op["error"].as_str().unwrap().starts_with("interrupted"), "{op}");
    // That read ended it in the log: the admin model holds it failed, and history lists it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let held = projections::admin::read::AdminReader::new(f.state.store.as_ref()).unwrap().operation(id).unwrap().unwrap();
        if held.status == "failed" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never ended in the log: {:?}", held.view);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let history = f.get_as("/xrpc/pub.svc.admin.getBackfillHistory", &admin).await.1;
    assert_eq!(history["operations"][0]["id"], id, "{history}");
    assert_eq!(f.post_as("/xrpc/pub.svc.admin.cancelBackfill", Some(&admin), json!({"id": id})).await.1["success"], false);
    // An operation whose node stopped holds nothing back.
    let (status, started) = f.post_as("/xrpc/pub.svc.admin.triggerFullReindex", Some(&admin), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{started}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_report_records_and_admins_see_the_reports() {
    let (f, admin, carol) = fixture().await;
    let report = "/xrpc/pub.svc.moderation.createReport";
    let r1 = format!("at://{BOB}/pub.svc.review.comment/r1");
    let body = json!({"targetUri": r1, "targetCollection": "pub.svc.review.comment", "reason": "spam", "description": "Sells pills."});
    let (status, made) = f.post_as(report, Some(&carol), body.clone()).await;
    assert_eq!((status, &made["success"]), (StatusCode::OK, &json!(true)), "{made}");
    // Seen at once (read your writes), by the record's repository too.
    let (_, listed) = f.get_as(&format!("/xrpc/pub.svc.admin.listViolations?did={BOB}"), &admin).await;
    let seen = &listed["violations"][0];
    assert_eq!(
        (&seen["type"], &seen["uri"], &seen["actorDid"], &seen["reason"], &seen["description"], &seen["id"]),
        (&json!("report"), &json!(r1), &json!(CAROL), &json!("spam"), &json!("Sells pills."), &made["id"]),
        "{listed}"
    );
    assert_eq!(f.get_as("/xrpc/pub.svc.admin.getOverview", &admin).await.1["reports"], 1);
    // A record svc has never seen, a collection that is not the URI's, a reason not in the
    // list, no caller.
    let never = json!({"targetUri": format!("at://{BOB}/pub.svc.review.comment/never"), "targetCollection": "pub.svc.review.comment", "reason": "spam"});
    let (status, e) = f.post_as(report, Some(&carol), never).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")), "{e}");
    for bad in [
        json!({"targetUri": r1, "targetCollection": "pub.svc.eprint.userTag", "reason": "spam"}),
        json!({"targetUri": r1, "targetCollection": "pub.svc.review.comment", "reason": "boring"}),
        json!({"targetUri": "nope", "targetCollection": "pub.svc.review.comment", "reason": "spam"}),
        json!({"targetUri": r1, "targetCollection": "pub.svc.review.comment", "reason": "other", "description": "x".repeat(2001)}),
    ] {
        let (status, e) = f.post_as(report, Some(&carol), bad.clone()).await;
        assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{bad}: {e}");
    }
    assert_eq!(f.post_as(report, None, body).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eprint_updates_and_deletes_are_pre_checked_for_their_authors() {
    let (mut f, _, carol) = fixture().await;
    let alice = login(&f, ALICE, "alice").await;
    let p1 = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    let (update, delete) = ("/xrpc/pub.svc.eprint.updateSubmission", "/xrpc/pub.svc.eprint.deleteSubmission");
    // Alice, the repository and listed author: the next version and the CID to swap.
    let (status, out) =
        f.post_as(update, Some(&alice), json!({"uri": p1, "versionBump": "minor", "changelog": {"summary": "More data."}})).await;
    assert_eq!(
        (status, &out["version"], &out["expectedCid"]),
        (StatusCode::OK, &json!({"major": 1, "minor": 1, "patch": 0}), &json!(CID)),
        "{out}"
    );
    assert!(out["changelogUri"].as_str().is_some_and(|u| u.starts_with(&format!("at://{ALICE}/pub.svc.eprint.changelog/"))), "{out}");
    assert_eq!(f.post_as(delete, Some(&alice), json!({"uri": p1})).await, (StatusCode::OK, json!({"success": true})));
    // Carol is none of those; an eprint svc does not index; replacement values it may not take.
    for path in [update, delete] {
        let (status, e) = f.post_as(path, Some(&carol), json!({"uri": p1, "versionBump": "major"})).await;
        assert_eq!((status, e["error"].as_str()), (StatusCode::FORBIDDEN, Some("Unauthorized")), "{path}: {e}");
        let (status, e) = f
            .post_as(path, Some(&alice), json!({"uri": format!("at://{ALICE}/pub.svc.eprint.submission/none"), "versionBump": "major"}))
            .await;
        assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")), "{path}: {e}");
        assert_eq!(f.post_as(path, None, json!({"uri": p1, "versionBump": "major"})).await.0, StatusCode::UNAUTHORIZED);
    }
    let (status, e) = f.post_as(update, Some(&alice), json!({"uri": p1, "versionBump": "patch", "title": "  "})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("ValidationError")), "{e}");
    let (status, e) = f.post_as(update, Some(&alice), json!({"uri": p1, "versionBump": "sideways"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{e}");
    // With a paper account, only it may change the eprint; its version bumps from 2.3.4.
    let mut owned = submission("Owned Paper", ALICE, "2024-05-01T00:00:00Z");
    owned["paperDid"] = json!(CAROL);
    owned["version"] = json!({"major": 2, "minor": 3, "patch": 4});
    f.apply(vec![create(ALICE, "pub.svc.eprint.submission", "p9", "3l0000000000z", owned)]);
    let p9 = format!("at://{ALICE}/pub.svc.eprint.submission/p9");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while f.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&p9))).await.0 != StatusCode::OK {
        assert!(std::time::Instant::now() < deadline, "never indexed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (status, out) = f.post_as(update, Some(&carol), json!({"uri": p9, "versionBump": "major"})).await;
    assert_eq!((status, &out["version"]), (StatusCode::OK, &json!({"major": 3, "minor": 0, "patch": 0})), "{out}");
    let (status, e) = f.post_as(update, Some(&alice), json!({"uri": p9, "versionBump": "patch"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::FORBIDDEN, Some("Unauthorized")), "{e}");
}

/// `traceRecord`: an eprint through the log, the eprints model and the search index; a
/// review through the attached model, then its delete (a placeholder as of the delete's
/// event); Carol's refused review as a dead letter with its event; URIs that name no record
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_is_traced_through_every_layer() {
    let (mut f, admin, _) = fixture().await;
    async fn trace(f: &Fixture, admin: &str, uri: String) -> (StatusCode, Value) {
        f.get_as(&format!("/xrpc/pub.svc.admin.traceRecord?uri={}", enc(&uri)), admin).await
    }
    let model = |t: &Value, name: &str| t["models"].as_array().unwrap().iter().find(|m| m["model"] == name).cloned().unwrap();

    let p1 = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    let (status, t) = trace(&f, &admin, p1.clone()).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    assert_eq!(
        (t["did"].as_str(), t["collection"].as_str(), t["rkey"].as_str()),
        (Some(ALICE), Some("pub.svc.eprint.submission"), Some("p1"))
    );
    let eprints = model(&t, "eprints");
    assert_eq!((eprints["state"].as_str(), eprints["rev"].as_str()), (Some("live"), Some("3l0000000000a")), "{t}");
    assert_eq!(eprints["record"]["title"], "Sparse Transformers", "{t}");
    let offset = eprints["offset"].as_u64().expect("the row names its event");
    assert!(eprints["readTo"].as_u64().unwrap() > offset && t["logEnd"].as_u64().unwrap() > offset, "{t}");
    assert_eq!(model(&t, "attached")["state"], "absent", "{t}");
    assert_eq!(t["search"]["indexed"], true, "{t}");
    assert!(t["search"]["document"]["offset"] == offset && t["search"]["readTo"].as_u64().unwrap() > offset, "made from the event: {t}");
    let events = t["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{t}");
    assert_eq!((events[0]["offset"].as_u64(), events[0]["source"]["type"].as_str()), (Some(offset), Some("manual")), "{t}");
    assert_eq!(events[0]["payload"]["rkey"], "p1", "the event read back: {t}");
    assert_eq!(t["deadLetters"], json!([]));

    let r1 = format!("at://{BOB}/pub.svc.review.comment/r1");
    let (_, t) = trace(&f, &admin, r1.clone()).await;
    let (attached, search) = (model(&t, "attached"), &t["search"]);
    assert_eq!(
        (attached["state"].as_str(), model(&t, "eprints")["state"].as_str(), &search["indexed"]),
        (Some("live"), Some("absent"), &json!(false)),
        "{t}"
    );
    let created = attached["offset"].as_u64().unwrap();
    f.apply(vec![delete(BOB, "pub.svc.review.comment", "r1", "3l0000000000f")]);
    f.settled("attached").await;
    let (_, t) = trace(&f, &admin, r1).await;
    let attached = model(&t, "attached");
    assert_eq!((attached["state"].as_str(), attached["rev"].as_str()), (Some("placeholder"), Some("3l0000000000f")), "{t}");
    assert!(attached["offset"].as_u64().unwrap() > created && attached.get("record").is_none(), "the delete's event, no content: {t}");

    let (_, t) = trace(&f, &admin, format!("at://{CAROL}/pub.svc.review.comment/bad")).await;
    let letters = t["deadLetters"].as_array().unwrap();
    assert_eq!((letters.len(), letters[0]["model"].as_str()), (1, Some("attached")), "{t}");
    assert_eq!(t["events"][0]["offset"], letters[0]["offset"], "the parked event read back: {t}");
    assert_eq!(model(&t, "attached")["state"], "absent", "{t}");

    for bad in [
        format!("at://{ALICE}"),
        format!("at://{ALICE}/pub.svc.eprint.submission"),
        "at://alice.test/pub.svc.eprint.submission/p1".into(),
        "p1".into(),
    ] {
        let (status, body) = trace(&f, &admin, bad.clone()).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{bad}: {body}");
    }
    let (status, body) = f.get_as("/xrpc/pub.svc.admin.traceRecord", &admin).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "uri is required: {body}");
}
