//! Notifications in process: the inbox model delivers the reviews and endorsements others
//! write on an account's eprints (to its co-authors too, as the eprint's authors change),
//! withdraws deleted ones, and keeps a read state: `updateSeen`, `isRead`, `unreadOnly`,
//! `unreadCount` and `getUnreadCount`, with bad input refused.

use crate::support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";
const CAROL: &str = "did:plc:carol0000000000000000000";

fn paper() -> String {
    format!("at://{ALICE}/pub.svc.eprint.submission/p1")
}

fn review(did: &str, rkey: &str, rev: &str, text: &str) -> event_schema::NewEvent {
    let body = json!([{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}]);
    create(did, "pub.svc.review.comment", rkey, rev, json!({"eprintUri": paper(), "body": body, "createdAt": "2025-01-02T00:00:00Z"}))
}

/// Waits until `check` holds of the answer to `path` for `token`.
async fn until(f: &Fixture, token: &str, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (status, body) = f.get_as(path, token).await;
        if status == StatusCode::OK && check(&body) {
            return body;
        }
        assert!(std::time::Instant::now() < deadline, "{path}: {status} {body}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

const REVIEWS: &str = "/xrpc/pub.svc.notification.listReviewsOnMyPapers";
const COUNT: &str = "/xrpc/pub.svc.notification.getUnreadCount";
const SEEN: &str = "/xrpc/pub.svc.notification.updateSeen";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_delivered_withdrawn_and_marked_seen() {
    let mut f = Fixture::new();
    f.apply(vec![
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Transformers", ALICE, "2025-01-01T00:00:00Z")),
        review(BOB, "r1", "3l0000000000b", "Convincing."),
        review(ALICE, "r0", "3l0000000000b", "My own note."),
        create(
            BOB,
            "pub.svc.review.endorsement",
            "n1",
            "3l0000000000c",
            json!({
            "eprintUri": paper(), "contributions": ["empirical"], "createdAt": "2025-01-03T00:00:00Z"}),
        ),
    ]);
    f.live();
    let alice = login(&f, ALICE, "alice-1").await;

    // Bob's review and endorsement, unread; Alice's own review is no news.
    let listed = f.get_as(REVIEWS, &alice).await.1;
    assert_eq!(listed["notifications"].as_array().map(Vec::len), Some(1), "{listed}");
    let first = &listed["notifications"][0];
    assert_eq!(
        (&first["reviewer"]["did"], &first["isRead"], &first["eprintTitle"]),
        (&json!(BOB), &json!(false), &json!("Sparse Transformers"))
    );
    assert_eq!((&first["preview"], &listed["unreadCount"]), (&json!("Convincing."), &json!(1)));
    assert_eq!(f.get_as(COUNT, &alice).await.1, json!({"count": 2, "reviews": 1, "endorsements": 1}));

    // Seen now: all read.
    let now = chrono::Utc::now().to_rfc3339();
    let (status, seen) = f.post_as(SEEN, Some(&alice), json!({"seenAt": now})).await;
    assert_eq!((status, &seen["count"]), (StatusCode::OK, &json!(0)), "{seen}");
    let listed = f.get_as(REVIEWS, &alice).await.1;
    assert_eq!((&listed["notifications"][0]["isRead"], &listed["unreadCount"]), (&json!(true), &json!(0)), "{listed}");
    assert_eq!(f.get_as(&format!("{REVIEWS}?unreadOnly=true"), &alice).await.1["notifications"], json!([]));
    let counted = f.get_as(COUNT, &alice).await.1;
    assert_eq!((&counted["count"], counted["seenAt"].is_string()), (&json!(0), true), "{counted}");

    // A new review is unread; an earlier seenAt changes nothing.
    f.apply(vec![review(BOB, "r2", "3l0000000000d", "One more thing.")]);
    let unread =
        until(&f, &alice, &format!("{REVIEWS}?unreadOnly=true"), |b| b["notifications"].as_array().is_some_and(|n| n.len() == 1)).await;
    assert_eq!((&unread["notifications"][0]["preview"], &unread["unreadCount"]), (&json!("One more thing."), &json!(1)));
    let (_, seen) = f.post_as(SEEN, Some(&alice), json!({"seenAt": "2020-01-01T00:00:00Z"})).await;
    assert_eq!(seen["count"], 1, "{seen}");
    assert_eq!(f.get_as(REVIEWS, &alice).await.1["notifications"].as_array().map(Vec::len), Some(2));

    // Deleted, it leaves the inbox and the count.
    f.apply(vec![delete(BOB, "pub.svc.review.comment", "r2", "3l0000000000e")]);
    until(&f, &alice, COUNT, |b| b["reviews"] == 0).await;
    assert_eq!(f.get_as(REVIEWS, &alice).await.1["notifications"].as_array().map(Vec::len), Some(1));

    // Carol, added as a co-author, is notified of what was written before.
    let mut with_carol = submission("Sparse Transformers", ALICE, "2025-01-01T00:00:00Z");
    with_carol["authors"].as_array_mut().unwrap().push(json!({"name": "Carol", "did": CAROL, "order": 2}));
    f.apply(vec![update(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000f", with_carol)]);
    let carol = login(&f, CAROL, "carol-1").await;
    // (Alice's own review is news to Carol.)
    until(&f, &carol, COUNT, |b| b == &json!({"count": 3, "reviews": 2, "endorsements": 1})).await;

    // Bad input: 400 in the XRPC envelope; no caller: 401.
    for body in [json!({"seenAt": "2999-01-01T00:00:00Z"}), json!({"seenAt": "yesterday"}), json!({}), json!({"seenAt": 5})] {
        let (status, e) = f.post_as(SEEN, Some(&alice), body.clone()).await;
        assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{body}: {e}");
    }
    assert_eq!(f.post_as(SEEN, None, json!({"seenAt": now})).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(f.get(COUNT).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(f.get_as(&format!("{REVIEWS}?unreadOnly=perhaps"), &alice).await.0, StatusCode::BAD_REQUEST);
}
