//! `pub.svc.activity.*` in process: a logged write pending until its record arrives
//! (confirmed, with the latency), marked failed, a delete confirmed by a delete; the feed's
//! filters and pages; the correlation figures for users and admins; bad input refused.

use crate::support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const REVIEW: &str = "pub.svc.review.comment";
const FEED: &str = "/xrpc/pub.svc.activity.getFeed";

fn eprint() -> String {
    format!("at://{ALICE}/pub.svc.eprint.submission/p1")
}

fn review_record() -> Value {
    json!({"eprintUri": eprint(), "body": [{"type": "text", "content": "Fine."}], "createdAt": "2025-01-03T00:00:00Z"})
}

async fn feed(f: &Fixture, token: &str, query: &str) -> Value {
    let (status, body) = f.get_as(&format!("{FEED}{query}"), token).await;
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    body
}

async fn until_status(f: &Fixture, token: &str, id: &str, status: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let page = feed(f, token, "").await;
        if let Some(a) = page["activities"].as_array().and_then(|a| a.iter().find(|a| a["id"] == id)) {
            if a["status"] == status {
                return a.clone();
            }
        }
        assert!(std::time::Instant::now() < deadline, "{id} never {status}: {page}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activities_are_confirmed_by_their_records_or_marked_failed_and_counted() {
    let mut f = Fixture::new();
    f.apply(vec![create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse", ALICE, "2025-01-01T00:00:00Z"))]);
    f.live();
    let alice = login(&f, ALICE, "alice-1").await;
    async fn log(f: &Fixture, token: &str, body: Value) -> String {
        let (status, answer) = f.post_as("/xrpc/pub.svc.activity.log", Some(token), body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}: {answer}");
        answer["activityId"].as_str().unwrap().to_owned()
    }

    // Logged, pending; the record arrives: confirmed, with where and how long.
    let first = log(&f, &alice, json!({"collection": REVIEW, "rkey": "r1", "action": "create", "category": "review_create", "targetUri": eprint(), "targetTitle": "Sparse", "traceId": "t-1"})).await;
    let listed = feed(&f, &alice, "").await;
    assert_eq!(
        (&listed["activities"][0]["id"], &listed["activities"][0]["status"], &listed["hasMore"]),
        (&json!(first), &json!("pending"), &json!(false)),
        "{listed}"
    );
    f.log.append(&[create(ALICE, REVIEW, "r1", "3l0000000000b", review_record())]).unwrap();
    let confirmed = until_status(&f, &alice, &first, "confirmed").await;
    assert_eq!(
        (&confirmed["firehoseUri"], &confirmed["firehoseCid"], &confirmed["targetTitle"], &confirmed["category"], &confirmed["actorDid"]),
        (&json!(format!("at://{ALICE}/{REVIEW}/r1")), &json!(CID), &json!("Sparse"), &json!("review_create"), &json!(ALICE)),
        "{confirmed}"
    );
    assert!(confirmed["latencyMs"].as_i64().is_some_and(|l| l >= 0) && confirmed["confirmedAt"].is_string(), "{confirmed}");

    // Another, marked failed by the client; a record never logged cannot be.
    let second = log(&f, &alice, json!({"collection": REVIEW, "rkey": "r2", "action": "create", "category": "review_create"})).await;
    let (status, answer) = f
        .post_as(
            "/xrpc/pub.svc.activity.markFailed",
            Some(&alice),
            json!({"collection": REVIEW, "rkey": "r2", "errorCode": "PdsDown", "errorMessage": "the PDS answered 503"}),
        )
        .await;
    assert_eq!((status, answer), (StatusCode::OK, json!({"success": true})));
    let failed = until_status(&f, &alice, &second, "failed").await;
    assert_eq!((&failed["errorCode"], &failed["errorMessage"]), (&json!("PdsDown"), &json!("the PDS answered 503")));
    let (status, _) = f
        .post_as(
            "/xrpc/pub.svc.activity.markFailed",
            Some(&alice),
            json!({"collection": REVIEW, "rkey": "nope", "errorCode": "x", "errorMessage": "y"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Its record arriving later changes nothing.
    f.log.append(&[create(ALICE, REVIEW, "r2", "3l0000000000c", review_record())]).unwrap();

    // A delete is confirmed by the record's delete, not by another write.
    let third = log(&f, &alice, json!({"collection": REVIEW, "rkey": "r1", "action": "delete", "category": "review_delete"})).await;
    f.log.append(&[update(ALICE, REVIEW, "r1", "3l0000000000d", review_record())]).unwrap();
    f.log.append(&[delete(ALICE, REVIEW, "r1", "3l0000000000e")]).unwrap();
    let deleted = until_status(&f, &alice, &third, "confirmed").await;
    assert!(deleted.get("firehoseCid").is_none(), "{deleted}");
    let fourth =
        log(&f, &alice, json!({"collection": "pub.svc.eprint.userTag", "rkey": "t1", "action": "create", "category": "tag_create"})).await;

    // Filters and pages, newest first.
    let ids = |v: &Value| v["activities"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(ids(&feed(&f, &alice, "").await), [fourth.clone(), third.clone(), second.clone(), first.clone()]);
    assert_eq!(ids(&feed(&f, &alice, "?status=confirmed").await), [third.clone(), first.clone()]);
    assert_eq!(ids(&feed(&f, &alice, "?status=confirmed&category=review_create").await), vec![first.clone()]);
    assert_eq!(ids(&feed(&f, &alice, "?status=pending").await), vec![fourth.clone()]);
    assert_eq!(ids(&feed(&f, &alice, "?status=timeout").await), Vec::<String>::new());
    assert_eq!(ids(&feed(&f, &alice, "?status=failed").await), vec![second.clone()]);
    let page = feed(&f, &alice, "?limit=3").await;
    assert_eq!((ids(&page).len(), &page["hasMore"]), (3, &json!(true)));
    let rest = feed(&f, &alice, &format!("?limit=3&cursor={}", page["cursor"].as_str().unwrap())).await;
    assert_eq!((ids(&rest), &rest["hasMore"]), (vec![first.clone()], &json!(false)));
    // Another user sees only theirs.
    let bob = login(&f, "did:plc:bob00000000000000000000", "bob-1").await;
    assert_eq!(feed(&f, &bob, "").await["activities"], json!([]));

    // Correlation: for any signed-in user, and for admins with the time.
    let (status, m) = f.get_as("/xrpc/pub.svc.activity.getCorrelationMetrics", &bob).await;
    assert_eq!(status, StatusCode::OK, "{m}");
    let all = &m["metrics"][0];
    assert_eq!(
        (&all["category"], &all["total"], &all["confirmed"], &all["failed"], &all["pending"], &all["timeout"], &m["pendingCount"]),
        (&json!("*"), &json!(4), &json!(2), &json!(1), &json!(1), &json!(0), &json!(1)),
        "{m}"
    );
    assert_eq!(all["confirmationRate"], json!(0.5));
    let reviews = m["metrics"].as_array().unwrap().iter().find(|r| r["category"] == "review_create").unwrap();
    assert_eq!((&reviews["total"], &reviews["confirmed"], &reviews["failed"]), (&json!(2), &json!(1), &json!(1)), "{m}");
    query_api::xrpc::admin::bootstrap(&f.state, &[ALICE.to_owned()]).await.unwrap();
    let admin = login(&f, ALICE, "alice-admin").await;
    let (status, a) = f.get_as("/xrpc/pub.svc.admin.getActivityCorrelation", &admin).await;
    assert_eq!((status, &a["metrics"], a["timestamp"].is_string()), (StatusCode::OK, &m["metrics"], true), "{a}");
    let (status, _) = f.get_as("/xrpc/pub.svc.admin.getActivityCorrelation", &bob).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused() {
    let mut f = Fixture::new();
    f.live();
    let alice = login(&f, ALICE, "alice-1").await;
    for body in [
        json!({"collection": REVIEW, "rkey": "r1", "action": "create"}),
        json!({"collection": REVIEW, "rkey": "r1", "action": "publish", "category": "review_create"}),
        json!({"collection": REVIEW, "rkey": "r1", "action": "create", "category": "gossip"}),
        json!({"collection": "not an nsid", "rkey": "r1", "action": "create", "category": "review_create"}),
        json!({"collection": REVIEW, "rkey": "r/1", "action": "create", "category": "review_create"}),
    ] {
        let (status, answer) = f.post_as("/xrpc/pub.svc.activity.log", Some(&alice), body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert!(answer["error"].is_string(), "{answer}");
    }
    let (status, _) = f
        .post_as(
            "/xrpc/pub.svc.activity.log",
            None,
            json!({"collection": REVIEW, "rkey": "r1", "action": "create", "category": "review_create"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(f.get(FEED).await.0, StatusCode::UNAUTHORIZED);
    for query in ["?status=lost", "?limit=0", "?cursor=%25", "?cursor=AAAA"] {
        let (status, answer) = f.get_as(&format!("{FEED}{query}"), &alice).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {answer}");
    }
}
