//! Data engineers tap the log of a running svc (`pub.svc.log.subscribe`), against a real
//! PDS, on the embedded backend and on Kafka: from cursor 0 a subscriber gets every event
//! the log holds (an admin) or every public one (anyone), then follows the PDS's writes
//! within a second; a reconnect from a mid-stream cursor resumes exactly; filters by
//! collection and DID; an anonymous subscriber never gets a session, role or audit event;
//! one that never reads is cut off while the API answers as fast as when idle; the node's
//! subscriber bound holds; `svc log tail --follow --url` prints what the stream sends.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;
use tests::pds::{submission, Pds};
use tests::{enc, Backend, Service};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const SERVICE_DID: &str = "did:web:svc.test";
const SUBMISSION: &str = "pub.svc.eprint.submission";
/// Papers seeded first: enough bytes of events to fill a socket that is never read.
const PAPERS: usize = 1500;
/// The stall after which a subscriber that reads nothing is cut off, in this test.
const STALL_SECONDS: &str = "2";

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn request(svc: &Service, query: &str, token: Option<&str>) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let ws = svc.base.replacen("http://", "ws://", 1);
    let mut request = format!("{ws}/xrpc/pub.svc.log.subscribe?{query}").into_client_request().unwrap();
    if let Some(token) = token {
        request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    request
}

async fn connect(svc: &Service, query: &str, token: Option<&str>) -> Socket {
    tokio_tungstenite::connect_async(request(svc, query, token)).await.unwrap().0
}

/// The next JSON message, or `None` when nothing comes within `wait` or the socket ends.
async fn next(socket: &mut Socket, wait: Duration) -> Option<Value> {
    loop {
        match tokio::time::timeout(wait, socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return Some(serde_json::from_str(&text).unwrap()),
            Ok(Some(Ok(Message::Close(_)) | Err(_))) | Ok(None) | Err(_) => return None,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// Every message until none comes for [`QUIET`] (the first may take up to 10 s).
async fn drain(socket: &mut Socket) -> Vec<Value> {
    let mut all = Vec::new();
    if let Some(first) = next(socket, Duration::from_secs(10)).await {
        all.push(first);
    }
    while let Some(m) = next(socket, QUIET).await {
        all.push(m);
    }
    all
}

/// How long a stream stays quiet before the test takes it for caught up.
const QUIET: Duration = Duration::from_secs(1);

fn positions(messages: &[Value]) -> Vec<(u64, u64)> {
    messages.iter().map(|m| (m["position"]["partition"].as_u64().unwrap(), m["position"]["offset"].as_u64().unwrap())).collect()
}

/// The median latency of `n` getSubmission calls, in µs.
async fn median_latency(svc: &Service, uri: &str, n: usize) -> u128 {
    let path = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri));
    let mut took = Vec::new();
    for _ in 0..n {
        let started = Instant::now();
        let (status, _, _) = svc.get(&path).await.unwrap();
        took.push(started.elapsed().as_micros());
        assert_eq!(status, 200);
    }
    took.sort_unstable();
    took[n / 2]
}

async fn scenario(backend: Backend) {
    let pds = Pds::start().unwrap();
    let alice = pds.create_account("alice").await.unwrap();
    let bob = pds.create_account("bob").await.unwrap();
    let admin = pds.create_account("adam").await.unwrap();
    let backend = backend
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url)
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_ADMIN_DIDS", &admin.did);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let papers = dir.path().join("papers.jsonl");
    tests::write_papers(&papers, PAPERS).unwrap();
    backend.svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    let flags = ["--max-log-subscribers", "6", "--log-subscriber-stall-seconds", STALL_SECONDS];
    let svc = Service::start_args("up", &data, tests::free_port(), &backend, &flags).await.unwrap();
    svc.wait_caught_up().await.unwrap();
    let token = pds.svc_session(&svc, &admin, SERVICE_DID).await;
    let mut uris = Vec::new();
    for (who, title) in [(&alice, "Streams of scholarly events"), (&bob, "Cursor semantics"), (&alice, "Following a log")] {
        uris.push(pds.create_record(who, SUBMISSION, &submission(title, who, None)).await.unwrap().0);
    }
    wait_for(&svc, &uris[2]).await;

    // An admin from cursor 0: every event the log holds, each partition in order.
    let started = Instant::now();
    let mut everything = connect(&svc, "cursor=0", Some(&token)).await;
    let all = drain(&mut everything).await;
    // (The drain ends QUIET after the last message.)
    let took = started.elapsed().saturating_sub(QUIET);
    eprintln!("the whole log from cursor 0: {} events in {took:?}", all.len());
    let kinds: std::collections::BTreeSet<&str> = all.iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains("command.access"), "the admin's session is in the log: {kinds:?} in {} events", all.len());
    let redacted = all.iter().find(|m| m["payload"]["change"]["action"] == "sessionStarted").unwrap();
    assert_eq!(redacted["payload"]["change"]["refreshHash"], "[redacted]", "{redacted}");
    in_order(&all);
    assert!(all.len() > PAPERS, "{} events", all.len());

    // Anyone from cursor 0: the public ones, and never a session, role or audit event.
    let mut public = connect(&svc, "cursor=0", None).await;
    let anyone = drain(&mut public).await;
    let expected: Vec<Value> = all.iter().filter(|m| m["kind"].as_str().unwrap().starts_with("repo.")).cloned().collect();
    assert!(same_events(&anyone, &expected), "{} public messages of {} public events", anyone.len(), expected.len());
    assert!(anyone.iter().all(|m| !m["kind"].as_str().unwrap().starts_with("command.")));

    // Live: a PDS write reaches the subscriber within a second of its append.
    let written = pds.create_record(&bob, SUBMISSION, &submission("Live from the PDS", &bob, None)).await.unwrap().0;
    let live = next(&mut public, Duration::from_secs(10)).await.expect("the new record");
    let arrived = chrono::Utc::now();
    assert_eq!(live["payload"]["rkey"].as_str(), written.rsplit('/').next(), "{live}");
    let appended: chrono::DateTime<chrono::Utc> = live["appendedAt"].as_str().unwrap().parse().unwrap();
    let behind = (arrived - appended).num_milliseconds();
    eprintln!("a PDS write reached a log subscriber {behind} ms after its append");
    assert!(behind < 1000, "{behind} ms");

    // A reconnect from a mid-stream cursor resumes exactly.
    let mut seen = anyone.clone();
    seen.push(live);
    let cut = seen.len() / 2;
    // (Partitions interleave by append time within each page read: per partition the order
    // is the log's, across partitions a resumed stream may interleave otherwise.)
    let mut resumed = connect(&svc, &format!("cursor={}", enc(seen[cut]["cursor"].as_str().unwrap())), None).await;
    let rest = drain(&mut resumed).await;
    in_order(&rest);
    assert!(same_events(&rest, &seen[cut + 1..]), "resumed from message {cut} of {}: {} messages", seen.len(), rest.len());

    // Filters: Bob's submissions only.
    let mut bobs = connect(&svc, &format!("cursor=0&wantedCollections={SUBMISSION}&wantedDids={}", enc(&bob.did)), None).await;
    let got = drain(&mut bobs).await;
    let records: Vec<&Value> = got.iter().filter(|m| m["kind"] == "repo.record.create").collect();
    assert_eq!(records.len(), 2, "{got:?}");
    assert!(got.iter().all(|m| m["payload"]["did"] == bob.did.as_str()), "{got:?}");

    // `svc log tail --follow --url` prints what the stream sends, from a cursor.
    let from = seen[cut]["cursor"].as_str().unwrap();
    let limit = (seen.len() - cut - 1).to_string();
    let out = tests::svc(&["log", "tail", "--follow", "--url", &svc.base, "--from", from, "--limit", &limit]).unwrap();
    let printed: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(same_events(&printed, &seen[cut + 1..]), "{} lines for {} events", printed.len(), seen.len() - cut - 1);
    assert!(printed.iter().all(|m| m.get("cursor").is_none()), "the tail's lines are the log's events");

    // A subscriber that never reads is cut off; the API meanwhile answers as when idle.
    let idle = median_latency(&svc, &uris[0], 40).await;
    let stalled = stalled_subscriber(&svc).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let during = median_latency(&svc, &uris[0], 40).await;
    eprintln!("getSubmission median: idle {idle} µs, with a stalled subscriber {during} µs");
    assert!(during <= 2 * idle + 2000, "idle {idle} µs, with a stalled subscriber {during} µs");
    let cut_off = Instant::now();
    while !svc.log().contains("a log subscriber read nothing: cut off") {
        assert!(cut_off.elapsed() < Duration::from_secs(30), "the stalled subscriber was not cut off");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(stalled);
    // (Its place, and the tail's, are given back once their sockets are closed.)
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // The node's bound: six at once (`everything`, `public`, `resumed`, `bobs` and two
    // more); a seventh is refused with a frame saying so.
    let _fifth = connect(&svc, "", None).await;
    let _sixth = connect(&svc, "", None).await;
    let mut seventh = connect(&svc, "", None).await;
    let frame = next(&mut seventh, Duration::from_secs(5)).await.expect("a refusal");
    assert_eq!(frame["error"], "ServiceUnavailable", "{frame}");
    drop((everything, public, resumed, bobs, _fifth, _sixth, seventh));

    // Every event the log holds, as `svc log tail` reads it once svc is stopped. (The
    // places of the sockets just dropped are given back once the node sees them close: on a
    // busy machine that may take a moment, and a subscriber is refused until then.)
    let deadline = Instant::now() + Duration::from_secs(30);
    let streamed = loop {
        let mut again = connect(&svc, "cursor=0", Some(&token)).await;
        let streamed = drain(&mut again).await;
        if streamed.first().is_some_and(|m| m["error"] == "ServiceUnavailable") && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        break streamed;
    };
    in_order(&streamed);
    svc.stop().unwrap();
    let out = backend.svc(&["log", "tail", "--data-dir", data.to_str().unwrap()]).unwrap();
    let tailed: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(same_events(&streamed, &tailed), "{} streamed, {} in the log", streamed.len(), tailed.len());
}

/// Whether two lists of events hold the same positions, whatever their order.
fn same_events(a: &[Value], b: &[Value]) -> bool {
    let (mut a, mut b) = (positions(a), positions(b));
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

/// Each partition's offsets strictly increase.
fn in_order(messages: &[Value]) {
    let mut last = std::collections::BTreeMap::<u64, u64>::new();
    for (p, o) in positions(messages) {
        if let Some(previous) = last.insert(p, o) {
            assert!(previous < o, "partition {p}: {o} after {previous}");
        }
    }
}

async fn wait_for(svc: &Service, uri: &str) {
    let path = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri));
    let started = Instant::now();
    while svc.get(&path).await.unwrap().0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(30), "{uri} never showed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A subscriber from cursor 0 with a tiny receive buffer that never reads.
async fn stalled_subscriber(svc: &Service) -> Socket {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(format!("127.0.0.1:{}", svc.port()).parse().unwrap()).await.unwrap();
    tokio_tungstenite::client_async(request(svc, "cursor=0", None), tokio_tungstenite::MaybeTlsStream::Plain(stream)).await.unwrap().0
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_engineer_taps_the_log_of_a_running_svc_on_the_embedded_backend() {
    let _serial = tests::serial().await;
    scenario(Backend::embedded()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_engineer_taps_the_log_of_a_running_svc_on_kafka() {
    let _serial = tests::serial().await;
    scenario(Backend::kafka()).await;
}
