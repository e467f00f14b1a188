//! What a new operator and a hostile or sloppy client meet in svc's first hour: seeding a
//! real corpus with rows that cannot become records, commands on a mistyped data directory,
//! readiness while the index is built, error envelopes on every route, slow clients, and
//! search on malformed, accented and identifier queries.

use std::io::Write as _;
use std::time::{Duration, Instant};

use event_schema::NewEvent;
use eventlog::{EmbeddedLog, EventLog};
use serde_json::{json, Value};
use tests::{enc, free_port, sample_papers, svc, write_papers, Backend, Service};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn record(did: &str, rkey: &str, record: Value) -> NewEvent {
    tests::submission_event(did, rkey, record, "first-hour test")
}

fn submission(title: &str, abstract_text: &str, author: (&str, &str), created: &str) -> Value {
    json!({"$type": "pub.svc.eprint.submission", "title": title, "abstract": abstract_text,
           "authors": [{"name": author.0, "did": author.1, "order": 1}], "fields": ["cs.CL"], "createdAt": created})
}

const ACCENTED: &str = "did:plc:accentedauthor00000000000";
const SAME_DAY: &str = "did:plc:samedayauthor000000000000";
const BARE: &str = "did:plc:baretitleauthor0000000000";

#[test]
fn seeding_skips_what_cannot_be_a_record_and_read_commands_refuse_a_mistyped_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, 20).unwrap();
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&papers).unwrap();
        writeln!(f, "{}", json!({"id": "9901.00001", "title": "No authors here", "abstract": "x", "authors": [], "date": "2020-01-01"}))
            .unwrap();
        let long = "Long ".repeat(103);
        writeln!(f, "{}", json!({"id": "9901.00002", "title": long, "abstract": "x", "authors": ["A B"], "date": "2020-01-01"})).unwrap();
        writeln!(f, "{{not json").unwrap();
        writeln!(f, "{}", json!({"id": "9901.00003", "title": "Fine", "abstract": "x", "authors": ["C D"], "date": "2020-01-01"})).unwrap();
    }
    let data = dir.path().join("data");
    let out = svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    let report: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["papers"], 21, "{report}");
    assert_eq!(report["skippedLines"], 3, "{report}");
    let reasons: Vec<&str> = report["skipped"].as_array().unwrap().iter().map(|s| s["reason"].as_str().unwrap()).collect();
    assert!(reasons.contains(&"no authors"), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("title: must be at most 500 characters")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.starts_with("not a paper")), "{reasons:?}");
    let lines: Vec<i64> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["firstLines"].as_array().unwrap().clone())
        .map(|l| l.as_i64().unwrap())
        .collect();
    assert_eq!(
        {
            let mut l = lines.clone();
            l.sort();
            l
        },
        vec![21, 22, 23],
        "{report}"
    );
    // Strict mode keeps the old abort, naming the line.
    let strict = svc(&["seed", "--strict", "--data-dir", dir.path().join("strict").to_str().unwrap(), papers.to_str().unwrap()]);
    let err = strict.unwrap_err().to_string();
    assert!(err.contains(":21: not a paper: no authors"), "{err}");

    // Commands that only read refuse a directory without svc data, and create nothing.
    let missing = dir.path().join("mistyped");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for args in [vec!["log", "tail", "--limit", "3", "--data-dir"], vec!["dead-letters", "--data-dir"], vec!["replay", "--data-dir"]] {
        for target in [&missing, &empty] {
            let mut a = args.clone();
            a.push(target.to_str().unwrap());
            let err = svc(&a).unwrap_err().to_string();
            assert!(err.contains("does not exist") || err.contains("holds no svc data"), "{a:?}: {err}");
        }
    }
    assert!(!missing.exists(), "a read command created the mistyped directory");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "a read command wrote into an empty directory");
    // The seeded directory reads fine.
    assert_eq!(svc(&["log", "tail", "--limit", "3", "--data-dir", data.to_str().unwrap()]).unwrap().lines().count(), 3);
    let err = svc(&["dead-letters", "--model", "search", "--data-dir", data.to_str().unwrap()]).unwrap_err().to_string();
    assert!(err.contains("keeps no dead letters (models that do: eprints, attached)"), "{err}");
    let err = svc(&["dead-letters", "--model", "nope", "--data-dir", data.to_str().unwrap()]).unwrap_err().to_string();
    assert!(err.contains("is not a read model"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn readiness_waits_for_complete_read_models() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    svc(&["seed", "--data-dir", data.to_str().unwrap(), sample_papers().to_str().unwrap()]).unwrap();
    let service = Service::start_args("up", &data, free_port(), &Backend::embedded(), &["--progress-interval", "0.2"]).await.unwrap();
    let mut saw_catching_up = false;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = reqwest::get(format!("{}/health/readiness", service.base)).await.unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        let models = body["projections"].as_array().unwrap();
        if status == 200 {
            assert!(models.iter().all(|m| m["ready"] == true), "ready with an incomplete model: {body}");
            break;
        }
        assert_eq!((status, body["status"].as_str()), (503, Some("catchingUp")), "{body}");
        assert!(models.iter().any(|m| m["ready"] == false), "{body}");
        saw_catching_up = true;
        assert!(Instant::now() < deadline, "never ready: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(saw_catching_up, "a fresh node answered ready before its index was built");
    let log = service.log();
    // The first catch-up showed its progress (stderr is no terminal here: log lines).
    assert!(log.lines().any(|l| l.contains("percent=") && l.contains("eta_seconds")), "no progress lines:\n{log}");
    for model in projections::catalog::MODELS.iter() {
        assert!(
            log.lines().any(|l| l.contains("caught up with the log") && l.contains(&format!("model=\"{model}\""))
                || l.contains("caught up with the log") && l.contains(&format!("model={model}"))),
            "no catch-up line for {model}:\n{log}"
        );
    }
    service.stop().unwrap();
    // A replay shows its progress too.
    let out = std::process::Command::new(tests::svc_bin())
        .args(["replay", "--progress-interval", "0.01", "--data-dir", data.to_str().unwrap()])
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().any(|l| l.contains("replaying") && l.contains("percent=")), "{stderr}");
}

async fn raw(base: &str, method: reqwest::Method, path: &str) -> (u16, reqwest::header::HeaderMap, Value) {
    let r = reqwest::Client::new().request(method, format!("{base}{path}")).send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} answered {status} non-JSON ({e}): {text:?}"));
    assert!(headers.get("content-type").is_some_and(|c| c.to_str().unwrap().starts_with("application/json")), "{path}: {headers:?}");
    (status, headers, body)
}

fn uris(body: &Value) -> Vec<String> {
    body["submissions"].as_array().unwrap().iter().map(|h| h["uri"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_and_sloppy_clients_get_envelopes_bounds_and_lenient_search() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, 60).unwrap();
    svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    let substantive = "Neural machine translation models translate sentences between languages. We study machine translation \
        with attention over source words, evaluate translation quality on standard benchmarks, and compare statistical \
        machine translation systems with neural ones across many language pairs and domains in detail.";
    let mut accented = submission(
        "Sparse Recovery in \\text{M}^2 Spaces",
        "We recover sparse signals in metric spaces with many measurements and prove bounds on recovery error rates.",
        ("José Gómez-Rodríguez", ACCENTED),
        "2026-01-01T00:00:00.000Z",
    );
    accented["externalIds"] = json!({"arxivId": "2601.00001v2"});
    accented["doi"] = json!("10.5555/ZYX.2026.001");
    {
        let log = EmbeddedLog::open(&data, 4).unwrap();
        log.append(&[
            record(ACCENTED, "3lbxqprzvpc31", accented),
            record(BARE, "3lbxqprzvpc32", submission("Machine Translation", "", ("Old Author", BARE), "1982-01-01T00:00:00.000Z")),
            record(
                BARE,
                "3lbxqprzvpc33",
                submission("Machine Translation with Neural Attention", substantive, ("New Author", BARE), "2020-01-01T00:00:00.000Z"),
            ),
            record(
                BARE,
                "3lbxqprzvpc34",
                submission(
                    "Statistical and Neural Machine Translation Compared",
                    substantive,
                    ("New Author", BARE),
                    "2021-01-01T00:00:00.000Z",
                ),
            ),
            // Same author, same day: appended in the order opposite to their URIs.
            record(SAME_DAY, "3lbxqprzvpc3z", submission("Same Day One", "First.", ("Same Day", SAME_DAY), "2024-05-05T00:00:00.000Z")),
            record(SAME_DAY, "3lbxqprzvpc3a", submission("Same Day Two", "Second.", ("Same Day", SAME_DAY), "2024-05-05T00:00:00.000Z")),
        ])
        .unwrap();
    }
    let service = Service::start_args("up", &data, free_port(), &Backend::embedded(), &["--header-read-timeout", "1"]).await.unwrap();
    service.wait_caught_up().await.unwrap();
    let base = service.base.clone();
    let search = |q: &str| format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}", enc(q));

    // Every error answer is in its route's envelope, with a content type; 405 names what is allowed.
    let (s, h, b) = raw(&base, reqwest::Method::POST, "/api/v1/search").await;
    assert_eq!((s, b["error"]["code"].as_str()), (405, Some("INVALID_REQUEST")), "{b}");
    assert!(h.get("allow").is_some_and(|a| a.to_str().unwrap().contains("GET")), "{h:?}");
    let (s, h, b) = raw(&base, reqwest::Method::POST, "/health/liveness").await;
    assert_eq!((s, b["error"].as_str()), (405, Some("InvalidRequest")), "{b}");
    assert!(h.get("allow").is_some(), "{h:?}");
    let (s, h, _) = raw(&base, reqwest::Method::POST, "/xrpc/pub.svc.eprint.searchSubmissions").await;
    assert_eq!((s, h.get("allow").map(|a| a.to_str().unwrap().to_owned())), (405, Some("GET, HEAD".to_owned())));
    let (s, h, _) = raw(&base, reqwest::Method::GET, "/xrpc/pub.svc.sync.refreshRecord").await;
    assert_eq!((s, h.get("allow").map(|a| a.to_str().unwrap().to_owned())), (405, Some("POST".to_owned())));
    let long = "a".repeat(10_000);
    let (s, _, b) = raw(&base, reqwest::Method::GET, &search(&long)).await;
    assert_eq!((s, b["error"].as_str()), (414, Some("InvalidRequest")), "{b}");
    let (s, _, b) = raw(&base, reqwest::Method::GET, &format!("/api/v1/search?q={long}")).await;
    assert_eq!((s, b["error"]["code"].as_str()), (414, Some("INVALID_REQUEST")), "{b}");

    // A URI too long for the HTTP library itself (64 KiB and more) is refused before svc's
    // router sees it; the answer still carries the envelope.
    let mut raw_client = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
    let huge = format!("GET /xrpc/pub.svc.eprint.searchSubmissions?query={} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    raw_client.write_all(huge.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), raw_client.read_to_end(&mut answer)).await.unwrap().unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 414"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("content-type: application/json"), "{answer}");
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["error"], "InvalidRequest", "{answer}");

    // A DID of a method svc cannot resolve names no repository it can reach: 404, not a 502.
    let (s, _, b) = raw(&base, reqwest::Method::GET, &format!("/xrpc/pub.svc.sync.verify?uri={}", enc("at://did:a:0/a.b.c/x"))).await;
    assert_eq!((s, b["error"].as_str()), (404, Some("RepoNotFound")), "{b}");
    let (s, _, b) = raw(&base, reqwest::Method::GET, "/api/v1/eprints?author=").await;
    assert_eq!((s, b["error"]["code"].as_str()), (400, Some("INVALID_REQUEST")), "an empty author: {b}");

    // A client that sends half a request head is cut off; others are served meanwhile.
    let mut slow = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
    slow.write_all(b"GET /health/liveness HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let started = Instant::now();
    let (s, _, _) = raw(&base, reqwest::Method::GET, "/health/liveness").await;
    assert_eq!(s, 200);
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "a half-sent request head held its connection for 10 s");
    assert!(started.elapsed() < Duration::from_secs(5), "cut off after {:?}", started.elapsed());

    // Malformed syntax is searched as words, never an error; an unknown field is.
    for q in ["\"unterminated", "((((", "[a TO", "-", "title:((( AND \""] {
        let (s, _, b) = raw(&base, reqwest::Method::GET, &search(q)).await;
        assert_eq!(s, 200, "{q}: {b}");
    }
    let (s, _, b) = raw(&base, reqwest::Method::GET, &search("nosuchfield:x graph")).await;
    assert_eq!((s, b["error"].as_str()), (400, Some("InvalidRequest")), "{b}");
    assert!(b["message"].as_str().unwrap().contains("nosuchfield"), "{b}");
    let accented_uri = format!("at://{ACCENTED}/pub.svc.eprint.submission/3lbxqprzvpc31");
    let (_, _, b) = raw(&base, reqwest::Method::GET, &search("Sparse Recovery in \\text{M}^2 Spaces")).await;
    assert_eq!(uris(&b).first(), Some(&accented_uri), "a pasted title finds its paper: {b}");

    // Accents are folded both ways.
    for q in ["Gómez-Rodríguez", "Gomez-Rodriguez", "gomez rodriguez", "authors:Gomez"] {
        let (_, _, b) = raw(&base, reqwest::Method::GET, &search(q)).await;
        assert!(uris(&b).contains(&accented_uri), "{q}: {b}");
    }
    // An identifier finds its paper first.
    for q in ["2601.00001", "arXiv:2601.00001", "2601.00001v2", "10.5555/zyx.2026.001", "https://doi.org/10.5555/ZYX.2026.001"] {
        let (_, _, b) = raw(&base, reqwest::Method::GET, &search(q)).await;
        assert_eq!(uris(&b).first(), Some(&accented_uri), "{q}: {b}");
    }
    // A bare title does not lead over substantive papers.
    let (_, _, b) = raw(&base, reqwest::Method::GET, &search("machine translation")).await;
    let bare = format!("at://{BARE}/pub.svc.eprint.submission/3lbxqprzvpc32");
    let found = uris(&b);
    assert!(found.contains(&bare) && found.first() != Some(&bare), "{found:?}");
    // Citation order: no paper here is cited, so relevance breaks the ties.
    let (_, _, c) = raw(&base, reqwest::Method::GET, &format!("{}&sortBy=citations", search("machine translation"))).await;
    assert_eq!(uris(&c), found);

    // A cursor belongs to its search.
    let (_, _, page) = raw(&base, reqwest::Method::GET, "/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=2").await;
    let cursor = page["cursor"].as_str().unwrap();
    let (s, _, b) = raw(&base, reqwest::Method::GET, &format!("{}&limit=2&cursor={cursor}", search("translation"))).await;
    assert_eq!((s, b["error"].as_str()), (400, Some("InvalidRequest")), "{b}");
    let (s, _, _) =
        raw(&base, reqwest::Method::GET, &format!("/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=2&cursor={cursor}")).await;
    assert_eq!(s, 200);
    let (s, _, b) = raw(&base, reqwest::Method::GET, "/api/v1/search?q=x&cursor=zzzz").await;
    assert_eq!(s, 400, "{b}");
    // Dates out of any sane range.
    for bad in ["-99999-01-01", "0999-12-31", "+10000-01-01"] {
        let (s, _, b) = raw(&base, reqwest::Method::GET, &format!("{}&dateFrom={}", search("x"), enc(bad))).await;
        assert_eq!(s, 400, "{bad}: {b}");
    }
    let (s, _, _) = raw(&base, reqwest::Method::GET, &format!("{}&dateFrom=1000-01-01", search("x"))).await;
    assert_eq!(s, 200);

    // An author's listing is ordered by the data (createdAt, then URI), not by arrival.
    let (_, _, b) = raw(&base, reqwest::Method::GET, &format!("/xrpc/pub.svc.eprint.listByAuthor?author={SAME_DAY}")).await;
    let listed: Vec<&str> = b["eprints"].as_array().unwrap().iter().map(|e| e["uri"].as_str().unwrap()).collect();
    assert_eq!(
        listed,
        vec![
            format!("at://{SAME_DAY}/pub.svc.eprint.submission/3lbxqprzvpc3z").as_str(),
            format!("at://{SAME_DAY}/pub.svc.eprint.submission/3lbxqprzvpc3a").as_str()
        ],
        "{b}"
    );
    let (_, _, b) = raw(&base, reqwest::Method::GET, &format!("/xrpc/pub.svc.eprint.listByAuthor?author={BARE}&limit=1")).await;
    let cursor = b["cursor"].as_str().unwrap();
    let (s, _, b2) =
        raw(&base, reqwest::Method::GET, &format!("/xrpc/pub.svc.eprint.listByAuthor?author={BARE}&limit=1&cursor={cursor}")).await;
    assert_eq!(s, 200, "{b2}");
    assert_ne!(b["eprints"][0]["uri"], b2["eprints"][0]["uri"]);
}
