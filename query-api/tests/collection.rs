//! `pub.svc.collection.*` in process: Alice's collection of two eprints with a subcollection,
//! an edge between two of its items, a foreign edge claiming to add to it (ignored), Bob's
//! review of an item and his follow; every operation answers from what was written.

use crate::support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";
const NODE: &str = "pub.svc.graph.node";
const EDGE: &str = "pub.svc.graph.edge";

fn node(did: &str, id: &str, subkind: &str, label: &str, at: &str) -> event_schema::NewEvent {
    let record = json!({"id": id, "kind": "object", "subkind": subkind, "label": label, "status": "established", "createdAt": at});
    create(did, NODE, id, "3l0000000000a", record)
}

fn edge(did: &str, id: &str, source: &str, target: &str, relation: &str, at: &str) -> event_schema::NewEvent {
    let record =
        json!({"id": id, "sourceUri": source, "targetUri": target, "relationSlug": relation, "status": "established", "createdAt": at});
    create(did, EDGE, id, "3l0000000000a", record)
}

async fn ok(f: &Fixture, path: &str) -> Value {
    let (status, body) = f.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

fn uris(list: &Value, key: &str) -> Vec<String> {
    list[key].as_array().unwrap().iter().map(|n| n["uri"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collections_answer_from_the_owners_nodes_and_edges() {
    let mut f = Fixture::new();
    let at = |rkey: &str| format!("at://{ALICE}/{NODE}/{rkey}");
    let (list, sub) = (at("c1"), at("c2"));
    let (p1, p2, p3) = (
        format!("at://{ALICE}/pub.svc.eprint.submission/p1"),
        format!("at://{ALICE}/pub.svc.eprint.submission/p2"),
        format!("at://{BOB}/pub.svc.eprint.submission/p3"),
    );
    f.apply(vec![
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Attention", ALICE, "2025-01-01T00:00:00Z")),
        create(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000a", submission("Planning Agents", ALICE, "2025-01-02T00:00:00Z")),
        create(BOB, "pub.svc.eprint.submission", "p3", "3l0000000000a", submission("Graph Colourings", BOB, "2025-01-03T00:00:00Z")),
        node(ALICE, "c1", "collection", "Reading list: attention", "2025-02-01T00:00:00Z"),
        node(ALICE, "c2", "collection", "Agents", "2025-02-02T00:00:00Z"),
        node(ALICE, "t1", "topic", "Not a collection", "2025-02-02T00:00:00Z"),
        edge(ALICE, "e1", &list, &p1, "contains", "2025-02-03T00:00:00Z"),
        edge(ALICE, "e2", &sub, &p2, "contains", "2025-02-04T00:00:00Z"),
        edge(ALICE, "e3", &sub, &list, "subcollection-of", "2025-02-05T00:00:00Z"),
        edge(ALICE, "e4", &p1, &p2, "related", "2025-02-06T00:00:00Z"),
        // Bob cannot add to Alice's collection from his repository.
        edge(BOB, "x1", &list, &p3, "contains", "2025-02-07T00:00:00Z"),
        edge(BOB, "f1", &format!("at://{BOB}"), &list, "follows", "2025-02-08T00:00:00Z"),
        create(
            BOB,
            "pub.svc.review.comment",
            "r1",
            "3l0000000000b",
            json!({"eprintUri": p1, "body": [{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": "Good."}],
                   "createdAt": "2025-02-09T00:00:00Z"}),
        ),
    ]);

    // The collection with its items (its subcollection's too), its subcollection, the
    // edge between two items; Bob's edge is not Alice's.
    let got = ok(&f, &format!("/xrpc/pub.svc.collection.get?uri={}", enc(&list))).await;
    assert_eq!((got["collection"]["label"].as_str(), got["collection"]["itemCount"].as_u64()), (Some("Reading list: attention"), Some(1)));
    assert_eq!(got["collection"]["subcollectionCount"], 1, "{got}");
    let items: Vec<(&str, &str)> =
        got["items"].as_array().unwrap().iter().map(|i| (i["uri"].as_str().unwrap(), i["collectionUri"].as_str().unwrap())).collect();
    assert_eq!(items, vec![(p1.as_str(), list.as_str()), (p2.as_str(), sub.as_str())], "{got}");
    assert_eq!(got["items"][0]["title"], "Sparse Attention");
    assert_eq!(uris(&got, "subcollections"), vec![sub.clone()]);
    assert_eq!(got["interItemEdges"][0]["relationSlug"], "related", "{got}");
    let only = ok(&f, &format!("/xrpc/pub.svc.collection.get?uri={}&excludeSubcollectionItems=true", enc(&list))).await;
    assert_eq!(only["items"].as_array().unwrap().len(), 1, "{only}");

    // Where an item is, and the tree.
    let containing = ok(&f, &format!("/xrpc/pub.svc.collection.getContaining?itemUri={}", enc(&p2))).await;
    assert_eq!(uris(&containing, "collections"), vec![sub.clone()]);
    let none = ok(&f, &format!("/xrpc/pub.svc.collection.getContaining?itemUri={}", enc(&p3))).await;
    assert_eq!(none["collections"], json!([]), "Bob's foreign edge holds nothing");
    let found = ok(&f, &format!("/xrpc/pub.svc.collection.findContainsEdge?collectionUri={}&itemUri={}", enc(&list), enc(&p2))).await;
    assert_eq!(found, json!({"found": true, "edgeUri": format!("at://{ALICE}/{EDGE}/e2"), "parentCollectionUri": sub}));
    let missing = ok(&f, &format!("/xrpc/pub.svc.collection.findContainsEdge?collectionUri={}&itemUri={}", enc(&list), enc(&p3))).await;
    assert_eq!(missing, json!({"found": false}));
    assert_eq!(ok(&f, &format!("/xrpc/pub.svc.collection.getParent?uri={}", enc(&sub))).await["parent"]["uri"], json!(list));
    assert_eq!(ok(&f, &format!("/xrpc/pub.svc.collection.getParent?uri={}", enc(&list))).await, json!({}));
    let subs = ok(&f, &format!("/xrpc/pub.svc.collection.getSubcollections?uri={}", enc(&list))).await;
    assert_eq!(uris(&subs, "subcollections"), vec![sub.clone()]);

    // Listings: by owner (newest first, paged), public, by tag, by search.
    let mine = ok(&f, &format!("/xrpc/pub.svc.collection.listByOwner?did={ALICE}&limit=1")).await;
    assert_eq!((uris(&mine, "collections"), mine["total"].as_u64(), mine["hasMore"].as_bool()), (vec![sub.clone()], Some(2), Some(true)));
    let next =
        ok(&f, &format!("/xrpc/pub.svc.collection.listByOwner?did={ALICE}&limit=1&cursor={}", mine["cursor"].as_str().unwrap())).await;
    assert_eq!(uris(&next, "collections"), vec![list.clone()]);
    assert_eq!(uris(&ok(&f, "/xrpc/pub.svc.collection.listPublic").await, "collections"), vec![sub.clone(), list.clone()]);
    assert_eq!(uris(&ok(&f, "/xrpc/pub.svc.collection.listPublic?tag=attention").await, "collections"), vec![list.clone()]);
    let searched = ok(&f, "/xrpc/pub.svc.collection.search?query=read%20att").await;
    assert_eq!((uris(&searched, "collections"), searched["total"].as_u64()), (vec![list.clone()], Some(1)));
    assert_eq!(ok(&f, "/xrpc/pub.svc.collection.search?query=topic").await["total"], 0, "a topic node is no collection");

    // The feed: Bob's review of an item, the items added, newest first, paged.
    let feed = ok(&f, &format!("/xrpc/pub.svc.collection.getFeed?uri={}&limit=1", enc(&list))).await;
    assert_eq!((feed["events"][0]["type"].as_str(), feed["events"][0]["actor"].as_str()), (Some("review"), Some(BOB)), "{feed}");
    let rest = ok(&f, &format!("/xrpc/pub.svc.collection.getFeed?uri={}&cursor={}", enc(&list), feed["cursor"].as_str().unwrap())).await;
    let kinds: Vec<&str> = rest["events"].as_array().unwrap().iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!((kinds, rest["hasMore"].as_bool()), (vec!["itemAdded"], Some(false)), "{rest}");

    // Follows.
    let status = ok(&f, &format!("/xrpc/pub.svc.collection.getFollowStatus?followerDid={BOB}&subject={}", enc(&list))).await;
    assert_eq!(status["followUri"], json!(format!("at://{BOB}/{EDGE}/f1")));
    let status = ok(&f, &format!("/xrpc/pub.svc.collection.getFollowStatus?followerDid={ALICE}&subject={}", enc(&list))).await;
    assert_eq!(status, json!({}));
    assert_eq!(ok(&f, &format!("/xrpc/pub.svc.collection.getFollowerCount?uri={}", enc(&list))).await, json!({"count": 1}));

    // Bad input: the envelope, never a 500.
    let topic = at("t1");
    for (path, code, error) in [
        (format!("/xrpc/pub.svc.collection.get?uri={}", enc(&topic)), StatusCode::NOT_FOUND, "NotFound"),
        ("/xrpc/pub.svc.collection.get?uri=not-a-uri".to_owned(), StatusCode::BAD_REQUEST, "InvalidRequest"),
        ("/xrpc/pub.svc.collection.listByOwner?did=alice".to_owned(), StatusCode::BAD_REQUEST, "InvalidRequest"),
        ("/xrpc/pub.svc.collection.search?query=%20-%20".to_owned(), StatusCode::BAD_REQUEST, "InvalidRequest"),
        (format!("/xrpc/pub.svc.collection.getFeed?uri={}&cursor=x", enc(&list)), StatusCode::BAD_REQUEST, "InvalidRequest"),
        ("/xrpc/pub.svc.collection.listPublic?limit=0".to_owned(), StatusCode::BAD_REQUEST, "InvalidRequest"),
    ] {
        let (status, body) = f.get(&path).await;
        assert_eq!((status, body["error"].as_str()), (code, Some(error)), "{path}: {body}");
    }
}

const CAROL: &str = "did:plc:carol0000000000000000000";
const DAVE: &str = "did:plc:dave00000000000000000000";
const EVE: &str = "did:plc:eve000000000000000000000";
const INVITE: &str = "pub.svc.collaboration.invite";
const ACCEPTANCE: &str = "pub.svc.collaboration.inviteAcceptance";
const CID: &str = "bafyreib2rxk3rh6kzwq3z5b5kpmbzg2hzk3rh6kzwq3z5b5kpmbzg2hzk4";

fn invite(from: &str, rkey: &str, subject: &str, to: &str, role: &str, expires: &str) -> event_schema::NewEvent {
    let record = json!({"subject": {"uri": subject, "cid": CID}, "invitee": to, "role": role, "createdAt": "2025-03-01T00:00:00Z", "expiresAt": expires});
    create(from, INVITE, rkey, "3l0000000000c", record)
}

fn accept(by: &str, rkey: &str, invite: &str, subject: &str) -> event_schema::NewEvent {
    let record =
        json!({"invite": {"uri": invite, "cid": CID}, "subject": {"uri": subject, "cid": CID}, "createdAt": "2025-03-02T00:00:00Z"});
    create(by, ACCEPTANCE, rkey, "3l0000000000d", record)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collaborators_are_the_invitees_who_accepted_the_owners_invites() {
    let mut f = Fixture::new();
    let list = format!("at://{ALICE}/{NODE}/c1");
    let sent = |from: &str, rkey: &str| format!("at://{from}/{INVITE}/{rkey}");
    f.apply(vec![
        node(ALICE, "c1", "collection", "Reading list", "2025-02-01T00:00:00Z"),
        invite(ALICE, "i1", &list, BOB, "editor", "2999-01-01T00:00:00Z"),
        invite(ALICE, "i2", &list, CAROL, "viewer", "2020-01-01T00:00:00Z"),
        invite(ALICE, "i3", &list, DAVE, "collaborator", "2999-01-01T00:00:00Z"),
        // Bob is not the owner: his invite makes no collaborator, accepted or not.
        invite(BOB, "i4", &list, CAROL, "editor", "2999-01-01T00:00:00Z"),
        accept(BOB, "a1", &sent(ALICE, "i1"), &list),
        accept(CAROL, "a2", &sent(BOB, "i4"), &list),
        // Eve cannot accept Dave's invite.
        accept(EVE, "a3", &sent(ALICE, "i3"), &list),
    ]);
    let collaborators = ok(&f, &format!("/xrpc/pub.svc.collaboration.listCollaborators?subjectUri={}", enc(&list))).await;
    assert_eq!(
        collaborators["collaborators"],
        json!([{"did": BOB, "role": "editor", "inviteUri": sent(ALICE, "i1"), "acceptanceUri": format!("at://{BOB}/{ACCEPTANCE}/a1"),
                "invitedAt": "2025-03-01T00:00:00Z", "acceptedAt": "2025-03-02T00:00:00Z"}])
    );

    let (status, body) = f.get("/xrpc/pub.svc.collaboration.listInvites").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")));
    f.live();
    let alice = login(&f, ALICE, "collab-alice").await;
    let (all, body) = invites(&f, &alice, "").await;
    assert_eq!(all.len(), 3, "Alice's own invites: {body}");
    assert_eq!(body["total"], 3);
    let (pending, _) = invites(&f, &alice, "?state=pending").await;
    assert_eq!(pending, vec![(DAVE.to_owned(), "pending".to_owned())]);
    let (expired, _) = invites(&f, &alice, "?state=expired").await;
    assert_eq!(expired, vec![(CAROL.to_owned(), "expired".to_owned())]);
    let (accepted, body) = invites(&f, &alice, "?state=accepted&subjectCollection=pub.svc.graph.node").await;
    assert_eq!(accepted, vec![(BOB.to_owned(), "accepted".to_owned())]);
    assert_eq!(body["invites"][0]["acceptedAt"], "2025-03-02T00:00:00Z");
    assert_eq!(invites(&f, &alice, "?state=rejected").await.0, vec![]);
    let carol = login(&f, CAROL, "collab-carol").await;
    let (received, _) = invites(&f, &carol, "").await;
    assert_eq!(received.len(), 2, "Carol received two: {received:?}");
    let (from_bob, _) = invites(&f, &carol, "?inviter=did:plc:bob00000000000000000000").await;
    assert_eq!(from_bob, vec![(CAROL.to_owned(), "accepted".to_owned())]);
    for bad in ["?state=maybe", "?invitee=bob", "?limit=500"] {
        let (status, body) = f.get_as(&format!("/xrpc/pub.svc.collaboration.listInvites{bad}"), &carol).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{bad}: {body}");
    }
}

/// `listInvites` with `query` as the holder of `token`: (invitee, state) of each, and the answer.
async fn invites(f: &Fixture, token: &str, query: &str) -> (Vec<(String, String)>, Value) {
    let (status, body) = f.get_as(&format!("/xrpc/pub.svc.collaboration.listInvites{query}"), token).await;
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    let states = body["invites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["invitee"].as_str().unwrap().to_owned(), i["state"].as_str().unwrap().to_owned()))
        .collect();
    (states, body)
}

fn margin(did: &str, collection: &str, rkey: &str, rev: &str, source: &str, extra: Value, at: &str) -> event_schema::NewEvent {
    let mut record = json!({"target": {"source": source, "title": "A page"}, "createdAt": at});
    record.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    create(did, collection, rkey, rev, record)
}

/// Margin's annotations and highlights of an eprint: by its AT-URI and by its web page,
/// newest first, paged; a record about another page or a review is listed on no eprint; an
/// update that points elsewhere leaves, a delete leaves, an invalid record is not listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn margin_annotations_are_listed_on_the_eprint_they_target() {
    let mut f = Fixture::new();
    let paper = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    let page = format!("https://app.example/eprints/{}?tab=annotations", enc(&paper));
    let (ann, hl) = ("at.margin.annotation", "at.margin.highlight");
    let quote = json!({"type": "TextQuoteSelector", "exact": "sparse attention", "prefix": "we use "});
    f.apply(vec![
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Attention", ALICE, "2025-01-01T00:00:00Z")),
        margin(
            BOB,
            ann,
            "3m0000000000a",
            "3l0000000000a",
            &paper,
            json!({"body": {"value": "Which sparsity pattern?", "format": "text/plain"}, "motivation": "questioning", "tags": ["attention"]}),
            "2025-03-01T00:00:00Z",
        ),
        margin(BOB, hl, "3m0000000000b", "3l0000000000a", &page, json!({"color": "#ffeb3b"}), "2025-03-02T00:00:00Z"),
        margin(ALICE, ann, "3m0000000000c", "3l0000000000a", &page, json!({"body": {"value": "Erratum: eq. 3"}}), "2025-03-03T00:00:00Z"),
        margin(BOB, ann, "3m0000000000d", "3l0000000000a", "https://example.com/blog/post", json!({}), "2025-03-04T00:00:00Z"),
        // A selector and an invalid record (no target).
        margin(BOB, ann, "3m0000000000e", "3l0000000000a", &paper, json!({"target": {"source": paper, "selector": quote}}), "2025-03-05T00:00:00Z"),
        create(BOB, ann, "3m0000000000f", "3l0000000000a", json!({"body": {"value": "no target"}, "createdAt": "2025-03-06T00:00:00Z"})),
    ]);
    f.live();
    let path = format!("/xrpc/pub.svc.collection.getMarginAnnotations?eprintUri={}", enc(&paper));
    let all = ok(&f, &path).await;
    let at = |did: &str, c: &str, rkey: &str| format!("at://{did}/{c}/{rkey}");
    assert_eq!(
        uris(&all, "annotations"),
        [at(BOB, ann, "3m0000000000e"), at(ALICE, ann, "3m0000000000c"), at(BOB, hl, "3m0000000000b"), at(BOB, ann, "3m0000000000a")],
        "{all}"
    );
    assert_eq!(all["total"], 4);
    assert_eq!(all["annotations"][0]["selector"], quote);
    let first = &all["annotations"][3];
    assert_eq!(first["recordType"], "annotation");
    assert_eq!(first["authorDid"], BOB);
    assert_eq!(first["author"]["did"], BOB);
    assert_eq!(first["body"], "Which sparsity pattern?");
    assert_eq!(first["bodyFormat"], "text/plain");
    assert_eq!(first["motivation"], "questioning");
    assert_eq!(first["tags"], json!(["attention"]));
    assert_eq!(first["pageTitle"], "A page");
    assert_eq!(first["source"], paper.as_str());
    assert_eq!(all["annotations"][2]["recordType"], "highlight");
    assert_eq!(all["annotations"][2]["color"], "#ffeb3b");

    // Pages of one.
    let one = ok(&f, &format!("{path}&limit=1")).await;
    assert_eq!(one["hasMore"], true);
    let next = ok(&f, &format!("{path}&limit=1&cursor={}", one["cursor"].as_str().unwrap())).await;
    assert_eq!(uris(&next, "annotations"), [at(ALICE, ann, "3m0000000000c")]);

    // An update that points at another page leaves; a delete leaves.
    f.log
        .append(&[
            update(
                ALICE,
                ann,
                "3m0000000000c",
                "3l0000000000b",
                json!({"target": {"source": "https://example.com/x"}, "createdAt": "2025-03-03T00:00:00Z"}),
            ),
            delete(BOB, hl, "3m0000000000b", "3l0000000000b"),
        ])
        .unwrap();
    f.settled("attached").await;
    let after = ok(&f, &path).await;
    assert_eq!(uris(&after, "annotations"), [at(BOB, ann, "3m0000000000e"), at(BOB, ann, "3m0000000000a")], "{after}");
    assert_eq!(after["total"], 2);

    // Bad input: no eprintUri, a malformed one.
    let (status, body) = f.get("/xrpc/pub.svc.collection.getMarginAnnotations").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{body}");
    let (status, _) = f.get("/xrpc/pub.svc.collection.getMarginAnnotations?eprintUri=nope").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
