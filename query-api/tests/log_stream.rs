//! `pub.svc.log.subscribe` over a real socket (the application served on loopback, the
//! embedded log): every public event from cursor 0 in log order per partition, then live
//! appends; an exact resume from any message's cursor; filters; the privacy rule (no
//! session, role or audit event for an anonymous subscriber, secrets redacted for an
//! admin); bad parameters as one error frame.

use std::time::Duration;

use axum::http::StatusCode;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{self, *};

const ALICE: &str = "did:plc:alice2222222222222222222";
const BOB: &str = "did:plc:bob22222222222222222222222";
const ADMIN: &str = "did:plc:admin222222222222222222222";

fn identity(did: &str, handle: &str) -> event_schema::NewEvent {
    event_schema::NewEvent::repo(
        event_schema::Source::Manual { note: "test".into() },
        event_schema::Payload::Identity(event_schema::IdentityChange { did: did.into(), handle: Some(handle.into()), display_name: None }),
    )
}

fn comment(did: &str, rkey: &str, rev: &str, eprint: &str, text: &str) -> event_schema::NewEvent {
    let body = json!([{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}]);
    create(did, "pub.svc.review.comment", rkey, rev, json!({"eprintUri": eprint, "body": body, "createdAt": "2024-07-01T00:00:00Z"}))
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Serves the fixture's application on a loopback port: its `ws://` base.
async fn serve(f: &Fixture) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = f.app.clone();
    tokio::spawn(async move {
        axum::serve(listener, axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<std::net::SocketAddr>(app))
            .await
            .unwrap();
    });
    format!("ws://127.0.0.1:{port}")
}

async fn connect(base: &str, query: &str, token: Option<&str>) -> Socket {
    let mut request = format!("{base}/xrpc/pub.svc.log.subscribe?{query}").into_client_request().unwrap();
    if let Some(token) = token {
        request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// The next JSON message, or `None` when nothing comes within `wait` (or the socket closed).
async fn next(socket: &mut Socket, wait: Duration) -> Option<Value> {
    loop {
        match tokio::time::timeout(wait, socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return Some(serde_json::from_str(&text).unwrap()),
            Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Err(_) => return None,
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) => panic!("the stream failed: {e}"),
        }
    }
}

/// Every message until none comes for 300 ms.
async fn drain(socket: &mut Socket) -> Vec<Value> {
    let mut all = Vec::new();
    while let Some(m) = next(socket, Duration::from_millis(300)).await {
        all.push(m);
    }
    all
}

fn positions(messages: &[Value]) -> Vec<(u64, u64)> {
    messages.iter().map(|m| (m["position"]["partition"].as_u64().unwrap(), m["position"]["offset"].as_u64().unwrap())).collect()
}

/// The public events of the log, as `(partition, offset)`, in partition then offset order.
fn public_positions(f: &Fixture) -> Vec<(u64, u64)> {
    let mut all = Vec::new();
    for p in 0..f.log.partitions() {
        for e in f.log.read(p, 0, 10_000).unwrap() {
            if query_api::tap::is_public(e.payload.kind()) {
                all.push((u64::from(p), e.position.offset));
            }
        }
    }
    all
}

fn sorted(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    v
}

/// The error frame a refused subscription gets, and that the socket then closes.
async fn refused(base: &str, query: &str, token: Option<&str>) -> Value {
    let mut socket = connect(base, query, token).await;
    let frame = next(&mut socket, Duration::from_secs(5)).await.expect("an error frame");
    assert!(next(&mut socket, Duration::from_secs(5)).await.is_none(), "the socket stays open after {frame}");
    frame
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_get_the_public_log_in_order_follow_it_and_resume_exactly() {
    let mut f = Fixture::new();
    let paper = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    f.apply(vec![
        identity(ALICE, "alice.test"),
        identity(BOB, "bob.test"),
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Transformers", ALICE, "2024-05-01T00:00:00Z")),
        create(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000b", submission("Dense Retrieval", ALICE, "2024-06-01T00:00:00Z")),
        comment(BOB, "r1", "3l0000000000c", &paper, "Convincing ablation."),
        delete(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000d"),
    ]);
    f.live();
    // Commands in the log: the admin role granted, two sessions started (with their
    // refresh tokens' hashes).
    query_api::xrpc::admin::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    let admin = support::login(&f, ADMIN, "a").await;
    let _user = support::login(&f, BOB, "b").await;
    let base = serve(&f).await;

    // From the start: every public event, none twice, each partition in offset order, and
    // nothing else.
    let mut socket = connect(&base, "cursor=0", None).await;
    let all = drain(&mut socket).await;
    let public = public_positions(&f);
    assert_eq!(sorted(positions(&all)), public, "{all:?}");
    for p in 0..4 {
        let offsets: Vec<u64> = positions(&all).into_iter().filter(|(q, _)| *q == p).map(|(_, o)| o).collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "partition {p} out of order: {offsets:?}");
    }
    assert!(all.iter().all(|m| m["kind"].as_str().unwrap().starts_with("repo.")), "a command reached an anonymous subscriber");
    assert!(all.iter().all(|m| m.get("cursor").and_then(Value::as_str).is_some() && m.get("appendedAt").is_some()));

    // Live: a new record arrives within a second of its append.
    let appended = std::time::Instant::now();
    f.apply(vec![comment(BOB, "r2", "3l0000000000e", &paper, "And the baselines?")]);
    let live = next(&mut socket, Duration::from_secs(1)).await.expect("the new record within a second");
    assert!(appended.elapsed() < Duration::from_secs(1));
    assert_eq!((live["kind"].as_str(), live["payload"]["rkey"].as_str()), (Some("repo.record.create"), Some("r2")), "{live}");
    let mut seen = all.clone();
    seen.push(live);

    // A reconnect from any message's cursor resumes with the message after it.
    for cut in [0, seen.len() / 2, seen.len() - 2] {
        let cursor = seen[cut]["cursor"].as_str().unwrap();
        let mut resumed = connect(&base, &format!("cursor={}", enc(cursor)), None).await;
        let rest = drain(&mut resumed).await;
        assert_eq!(positions(&rest), positions(&seen[cut + 1..]), "resumed from {cursor}");
    }
    // Without a cursor: live from now, nothing of the past.
    let mut now = connect(&base, "", None).await;
    assert!(next(&mut now, Duration::from_millis(300)).await.is_none());

    // Filters: a collection prefix (events without a collection pass), a DID.
    let mut reviews = connect(&base, "cursor=0&wantedCollections=pub.svc.review.*", None).await;
    let got = drain(&mut reviews).await;
    let rkeys: Vec<&str> = got.iter().filter_map(|m| m["payload"]["rkey"].as_str()).collect();
    assert_eq!(rkeys, ["r1", "r2"], "{got:?}");
    assert!(got.iter().any(|m| m["kind"] == "repo.identity"));
    let mut alice = connect(&base, &format!("cursor=0&wantedDids={ALICE}&wantedKinds=repo.record.*"), None).await;
    let got = drain(&mut alice).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.iter().all(|m| m["payload"]["did"] == ALICE));

    // An admin follows the commands too, secrets redacted.
    let mut sessions = connect(&base, "cursor=0&wantedKinds=command.access", Some(&admin)).await;
    let got = drain(&mut sessions).await;
    let started: Vec<&Value> = got.iter().filter(|m| m["payload"]["change"]["action"] == "sessionStarted").collect();
    assert_eq!(started.len(), 2, "{got:?}");
    assert!(started.iter().all(|m| m["payload"]["change"]["refreshHash"] == "[redacted]"), "{started:?}");
    assert!(got.iter().any(|m| m["payload"]["change"]["action"] == "roleGranted"), "{got:?}");

    // Refused, as one error frame: commands for an anonymous subscriber, a bad cursor, a
    // cursor for another number of partitions, an unknown kind, a bad collection, a bad DID.
    let frame = refused(&base, "cursor=0&wantedKinds=command.access", None).await;
    assert_eq!(frame["error"], "Forbidden", "{frame}");
    for (query, names) in [
        ("cursor=yesterday", "cursor"),
        ("cursor=1,2", "cursor"),
        ("wantedKinds=repo.nothing", "wantedKinds"),
        ("wantedCollections=pub..svc", "wantedCollections"),
        ("wantedDids=alice", "wantedDids"),
    ] {
        let frame = refused(&base, query, None).await;
        assert_eq!(frame["error"], "InvalidRequest", "{query}: {frame}");
        assert!(frame.to_string().contains(names), "{query}: {frame}");
    }
    // A bad token is refused as any other method refuses it.
    let mut request = format!("{base}/xrpc/pub.svc.log.subscribe").into_client_request().unwrap();
    request.headers_mut().insert("authorization", "Bearer nonsense".parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), StatusCode::UNAUTHORIZED),
        other => panic!("a bad token was not refused: {:?}", other.map(|(_, r)| r.status())),
    }

    // A cursor past the end waits for events at and after it.
    let mut ahead = connect(&base, "cursor=1000", None).await;
    f.apply(vec![identity(ALICE, "alice2.test")]);
    assert!(next(&mut ahead, Duration::from_millis(500)).await.is_none());
    ahead.close(None).await.unwrap();

    // Plain HTTP: the XRPC envelope says what the method is.
    let (status, body) = f.call(axum::http::Method::GET, "/xrpc/pub.svc.log.subscribe?cursor=0", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["message"].as_str().unwrap().contains("WebSocket"), "{body}");
    let (status, body) = f.call(axum::http::Method::POST, "/xrpc/pub.svc.log.subscribe", Some(json!({}))).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
}

/// Each subscription counts against its caller's rate-limit tier, as any request does: an
/// anonymous address over its limit is refused the upgrade with 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_count_against_the_rate_limit() {
    let limits = query_api::identity::limits::LimitSettings { tiers: Some([3, 300, 1000, 5000]), ..Default::default() };
    let f = Fixture::with_limits(limits);
    let base = serve(&f).await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(connect(&base, "", None).await);
    }
    let request = format!("{base}/xrpc/pub.svc.log.subscribe").into_client_request().unwrap();
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS),
        other => panic!("a fourth subscription a minute was not refused: {:?}", other.map(|(_, r)| r.status())),
    }
}
