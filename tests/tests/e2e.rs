//! Seed → up → query over HTTP, as a new user would; then crash and restart, then replay:
//! the answers stay the same, byte for byte.

use std::path::Path;

use serde_json::Value;
use tests::{enc, svc, svc_with_env, write_papers, Backend, Service};

const PAPERS: usize = 400;

/// The queries whose answers must survive a crash and a replay unchanged.
fn stable_paths(uri: &str, did: &str, title_words: &str) -> Vec<String> {
    vec![
        format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri)),
        format!("/xrpc/pub.svc.eprint.listByAuthor?author={}", enc(did)),
        format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}", enc(title_words)),
        format!("/xrpc/pub.svc.eprint.searchSubmissions?query=learning&sortBy=date&limit=7"),
        format!("/xrpc/pub.svc.eprint.searchSubmissions?query=*&fields=cs.CV&limit=5"),
        format!("/api/v1/eprints/{}", enc(uri)),
        format!("/api/v1/search?q={}&limit=3", enc(title_words)),
        format!("/api/v1/authors/{}/eprints", enc(did)),
    ]
}

async fn snapshot(svc: &Service, paths: &[String]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    for p in paths {
        out.push(svc.get_bytes(p).await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn embedded_seed_query_crash_restart_replay() {
    seed_query_crash_restart_replay(Backend::embedded()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_seed_query_crash_restart_replay() {
    seed_query_crash_restart_replay(Backend::kafka()).await;
}

/// The scenario on Kafka and the ScyllaDB store on the CQL test server: seeding, projecting
/// into the store, detail reads, by-author listings, search, a kill -9 and restart, and a
/// replay. (The server
/// has no clustering ranges, `ORDER BY`, `LIMIT`, `COUNT` or `DROP TABLE`; the store reads
/// whole partitions and empties tables there instead, docs/scylla.md.)
#[tokio::test(flavor = "multi_thread")]
async fn kafka_and_scylla_seed_query_crash_restart() {
    let backend = Backend::kafka_scylla();
    let dir = tempfile::tempdir().unwrap();
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, PAPERS).unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    backend.svc(&["seed", "--data-dir", data_s, papers.to_str().unwrap()]).unwrap();
    let service = Service::start_with(&data, tests::free_port(), &backend).await.unwrap();
    service.wait_caught_up().await.unwrap();

    let mut paths = Vec::new();
    for line in std::fs::read_to_string(&papers).unwrap().lines().step_by(97) {
        let paper: Value = serde_json::from_str(line).unwrap();
        let title = paper["title"].as_str().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
        let words: String = title.split(' ').take(6).collect::<Vec<_>>().join(" ");
        let (status, _, found) = service.get(&format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}", enc(&words))).await.unwrap();
        assert_eq!(status, 200, "{found}");
        let hit =
            found["submissions"].as_array().unwrap().iter().find(|h| h["title"] == title.as_str()).cloned().expect("found by its title");
        let uri = hit["uri"].as_str().unwrap();
        let (status, _, detail) = service.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri))).await.unwrap();
        assert_eq!(status, 200, "{detail}");
        assert_eq!(detail["record"]["title"], title.as_str());
        assert_eq!(detail["record"]["abstract"], hit["abstract"]);
        assert_eq!((&detail["cid"], &detail["indexedAt"]), (&hit["cid"], &hit["indexedAt"]));
        assert!(detail["author"]["handle"].as_str().unwrap().ends_with(".arxiv.test"), "the account row is read too");
        let (_, _, rest) = service.get(&format!("/api/v1/eprints/{}", enc(uri))).await.unwrap();
        assert_eq!(rest, detail);
        paths.push(format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(uri)));
        paths.push(format!("/api/v1/search?q={}&limit=3", enc(&words)));
        let did = detail["author"]["did"].as_str().unwrap();
        let listing = format!("/xrpc/pub.svc.eprint.listByAuthor?author={}", enc(did));
        let (status, _, listed) = service.get(&listing).await.unwrap();
        assert!(status == 200 && listed["eprints"].as_array().unwrap().iter().any(|e| e["uri"] == uri), "{listed}");
        paths.push(listing);
    }
    let (status, _, missing) = service
        .get("/xrpc/pub.svc.eprint.getSubmission?uri=at%3A%2F%2Fdid%3Aplc%3Anobody%2Fpub.svc.eprint.submission%2F3abc")
        .await
        .unwrap();
    assert_eq!((status, missing["error"].as_str()), (404, Some("RecordNotFound")));

    let before = snapshot(&service, &paths).await;
    // The eprints model and the node's search index; their old versions are dropped (the
    // CQL test server's tables emptied row by row).
    let reports = crash_restart_replay(
        service,
        &data,
        &backend,
        &paths,
        &before,
        &["--model", "eprints", "--model", "search", "--grace-seconds", "0"],
    )
    .await;
    assert_eq!(reports.len(), 2, "{reports:?}");
    for r in &reports {
        assert!(r["newVersion"].as_u64() > r["oldVersion"].as_u64(), "{r}");
        assert_eq!(r["oldVersionDropped"], true, "{r}");
    }
}

/// Kills `service` (kill -9) and restarts it, then stops it, runs `svc replay` with
/// `replay_args` and starts it again, checking after each step that `paths` answer `before`
/// byte for byte. Returns the replay's reports.
async fn crash_restart_replay(
    service: Service,
    data: &Path,
    backend: &Backend,
    paths: &[String],
    before: &[(u16, Vec<u8>)],
    replay_args: &[&str],
) -> Vec<Value> {
    let port = service.port();
    service.kill9();
    let service = Service::start_with(data, port, backend).await.unwrap();
    service.wait_caught_up().await.unwrap();
    assert_eq!(snapshot(&service, paths).await, before, "answers changed after kill -9 and restart");

    service.stop().unwrap();
    // `svc compact` gives back what the catch-up left free in this node's store file (the
    // replay below then shows the answers did not change).
    let compacted: Value = serde_json::from_str(backend.svc(&["compact", "--data-dir", data.to_str().unwrap()]).unwrap().trim()).unwrap();
    let (before_bytes, after_bytes) = (compacted["bytesBefore"].as_u64().unwrap(), compacted["bytesAfter"].as_u64().unwrap());
    assert!(after_bytes <= before_bytes, "{}: {compacted}", backend.name);
    let mut args = vec!["replay", "--data-dir", data.to_str().unwrap()];
    args.extend_from_slice(replay_args);
    let out = backend.svc(&args).unwrap();
    let service = Service::start_with(data, port, backend).await.unwrap();
    service.wait_caught_up().await.unwrap();
    assert_eq!(snapshot(&service, paths).await, before, "answers changed after replay");
    out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

async fn seed_query_crash_restart_replay(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, PAPERS).unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let report: Value =
        serde_json::from_str(backend.svc(&["seed", "--data-dir", data_s, papers.to_str().unwrap()]).unwrap().trim()).unwrap();
    assert_eq!(report["papers"], PAPERS);
    // `svc log tail` prints every acknowledged event once, across partitions and pages.
    let tail = backend.svc(&["log", "tail", "--data-dir", data_s]).unwrap();
    let mut positions: Vec<(u64, u64)> = tail
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| (e["position"]["partition"].as_u64().unwrap(), e["position"]["offset"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        positions.len() as u64,
        report["events"].as_u64().unwrap(),
        "{}: log tail printed a different number of events",
        backend.name
    );
    positions.sort();
    positions.dedup();
    assert_eq!(positions.len() as u64, report["events"].as_u64().unwrap(), "{}: log tail repeated events", backend.name);

    let service = Service::start_with(&data, tests::free_port(), &backend).await.unwrap();
    service.wait_caught_up().await.unwrap();

    // The search finds a paper by words of its title.
    let first: Value = serde_json::from_str(std::fs::read_to_string(&papers).unwrap().lines().nth(17).unwrap()).unwrap();
    let title = first["title"].as_str().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    let title_words: String = title.split(' ').take(6).collect::<Vec<_>>().join(" ");
    let (status, _, found) = service.get(&format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}", enc(&title_words))).await.unwrap();
    assert_eq!(status, 200, "{found}");
    let hit = found["submissions"].as_array().unwrap().iter().find(|h| h["title"] == title.as_str()).cloned();
    let hit = hit.unwrap_or_else(|| panic!("{title:?} not among hits of {title_words:?}: {found}"));
    assert_eq!(found["submissions"][0]["title"], title.as_str(), "the paper is the best match for its own title");
    let uri = hit["uri"].as_str().unwrap().to_owned();
    let did = uri.trim_start_matches("at://").split('/').next().unwrap().to_owned();

    // getSubmission, listByAuthor and the REST routes agree on it.
    let (status, _, detail) = service.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&uri))).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(detail["uri"], uri.as_str());
    assert_eq!(detail["record"]["title"], title.as_str());
    assert_eq!(detail["record"]["abstract"], hit["abstract"]);
    assert_eq!(detail["author"]["did"], did.as_str());
    assert!(detail["author"]["handle"].as_str().unwrap().ends_with(".arxiv.test"));
    assert_eq!(detail["record"]["fields"], first["categories"]);
    assert_eq!(detail["record"]["createdAt"], format!("{}T00:00:00.000Z", first["date"].as_str().unwrap()).as_str());
    assert_eq!(detail["cid"], hit["cid"]);
    assert_eq!(detail["indexedAt"], hit["indexedAt"]);
    for key in ["views", "downloads", "citations"] {
        assert!(detail["metrics"][key].is_u64());
    }
    let (_, _, rest_detail) = service.get(&format!("/api/v1/eprints/{}", enc(&uri))).await.unwrap();
    assert_eq!(rest_detail, detail);

    // `/metrics` tells what the memory holds: the resident set, the allocator's statistics
    // and the caches (the row cache the reads above filled, and kept answers: a
    // getSubmission is kept once it is computed while no write is under way).
    let mut text = String::new();
    for _ in 0..40 {
        service.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&uri))).await.unwrap();
        text = String::from_utf8(service.get_bytes("/metrics").await.unwrap().1).unwrap();
        if text.contains("svc_cache_bytes{cache=\"answers\"}") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let sample = |name: &str| text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok());
    for name in [
        "svc_memory_resident_bytes",
        "svc_allocator_bytes{stat=\"allocated\"}",
        "svc_allocator_bytes{stat=\"resident\"}",
        "svc_allocator_bytes{stat=\"metadata\"}",
        "svc_cache_bytes{cache=\"rows\"}",
        "svc_cache_bytes{cache=\"pages\"}",
        "svc_cache_bytes{cache=\"answers\"}",
    ] {
        assert!(sample(name).is_some_and(|bytes| bytes > 0.0), "{}: {name} in /metrics:\n{text}", backend.name);
    }
    let (_, _, listed) = service.get(&format!("/xrpc/pub.svc.eprint.listByAuthor?author={}", enc(&did))).await.unwrap();
    let listed_hit = listed["eprints"].as_array().unwrap().iter().find(|e| e["uri"] == uri.as_str()).expect("listed under its author");
    assert_eq!(listed_hit, &hit);
    assert!(listed["total"].as_u64().unwrap() >= 1);
    let (_, _, rest_listed) = service.get(&format!("/api/v1/authors/{}/eprints", enc(&did))).await.unwrap();
    assert_eq!(rest_listed, listed);
    let (_, _, alias) = service.get(&format!("/xrpc/pub.svc.eprint.listByAuthor?did={}", enc(&did))).await.unwrap();
    assert_eq!(alias, listed);
    let (_, _, rest_search) = service.get(&format!("/api/v1/eprints?q={}", enc(&title_words))).await.unwrap();
    assert_eq!(rest_search["results"], found["submissions"]);
    let (_, _, rest_alias) = service.get(&format!("/api/v1/search?q={}", enc(&title_words))).await.unwrap();
    assert_eq!(rest_alias, rest_search);

    // Filters: by field, by author, by date.
    let (_, _, by_field) = service.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&fields=cs.CV&limit=100").await.unwrap();
    assert!(by_field["total"].as_u64().unwrap() > 0);
    for h in by_field["submissions"].as_array().unwrap() {
        assert!(h["fields"].as_array().unwrap().iter().any(|f| f == "cs.CV"));
    }
    let (_, _, by_author) = service.get(&format!("/xrpc/pub.svc.eprint.searchSubmissions?query=*&authors={}", enc(&did))).await.unwrap();
    assert_eq!(by_author["total"], listed["total"]);
    let day = first["date"].as_str().unwrap();
    let (_, _, by_day) =
        service.get(&format!("/xrpc/pub.svc.eprint.searchSubmissions?query=*&dateFrom={day}&dateTo={day}&limit=100")).await.unwrap();
    assert!(by_day["submissions"].as_array().unwrap().iter().any(|h| h["uri"] == uri.as_str()));
    for h in by_day["submissions"].as_array().unwrap() {
        assert!(h["createdAt"].as_str().unwrap().starts_with(day));
    }

    // Security headers and CORS on every response, errors included.
    for path in ["/health/liveness", "/xrpc/pub.svc.eprint.getSubmission", "/api/v1/eprints/nope", "/nowhere"] {
        let (_, headers, _) = service.get(path).await.unwrap();
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["x-frame-options"], "DENY");
        assert_eq!(headers["content-security-policy"], "default-src 'self'");
        assert_eq!(headers["strict-transport-security"], "max-age=31536000; includeSubDomains");
        assert_eq!(headers["access-control-allow-origin"], "*");
    }

    // OpenAPI 3.1 lists every served route.
    let (_, _, openapi) = service.get("/openapi.json").await.unwrap();
    assert_eq!(openapi["openapi"], "3.1.0");
    for path in [
        "/xrpc/pub.svc.eprint.getSubmission",
        "/xrpc/pub.svc.eprint.searchSubmissions",
        "/xrpc/pub.svc.eprint.listByAuthor",
        "/api/v1/eprints",
        "/api/v1/eprints/{uri}",
        "/api/v1/search",
        "/api/v1/authors/{did}/eprints",
        "/health/liveness",
        "/health/readiness",
        "/.well-known/did.json",
        "/openapi.json",
    ] {
        assert!(openapi["paths"].get(path).is_some(), "{path} missing from openapi.json");
    }
    let (_, _, did_doc) = service.get("/.well-known/did.json").await.unwrap();
    assert_eq!(did_doc["id"], "did:web:localhost");

    // Crash and restart: the same answers.
    let paths = stable_paths(&uri, &did, &title_words);
    let before = snapshot(&service, &paths).await;
    assert!(before.iter().all(|(s, _)| *s == 200));
    // Then stop, replay, start: the same answers, byte for byte.
    let reports = crash_restart_replay(service, &data, &backend, &paths, &before, &[]).await;
    assert_eq!(reports.len(), projections::catalog::MODELS.len(), "{reports:?}");
    for r in &reports {
        assert_eq!(r["newVersion"], 2, "{r}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn log_tail_prints_every_event_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, 20).unwrap();
    let data = dir.path().join("data");
    let data_s = data.to_str().unwrap();
    let report: Value = serde_json::from_str(svc(&["seed", "--data-dir", data_s, papers.to_str().unwrap()]).unwrap().trim()).unwrap();
    let events = report["events"].as_u64().unwrap() as usize;
    let out = svc(&["log", "tail", "--data-dir", data_s]).unwrap();
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), events);
    for (i, e) in lines.iter().enumerate() {
        assert_eq!(e["position"]["offset"], i as u64);
        assert_eq!(e["schemaVersion"], 1);
        assert!(e["appendedAt"].is_string() && e["key"].as_str().unwrap().starts_with("did:plc:"));
        assert!(["repo.identity", "repo.record.create"].contains(&e["kind"].as_str().unwrap()));
    }
    // Flags are also read from SVC_* environment variables.
    let from_env = svc_with_env(&["log", "tail"], &[("SVC_DATA_DIR", data_s)]).unwrap();
    assert_eq!(from_env, out);
    let some = svc(&["log", "tail", "--data-dir", data_s, "--from", "5", "--limit", "3"]).unwrap();
    let some: Vec<Value> = some.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(some, lines[5..8].to_vec());
    // Seeding is deterministic: a second data directory gets the same events.
    let data2 = dir.path().join("data2");
    svc(&["seed", "--data-dir", data2.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();
    let again: Vec<Value> =
        svc(&["log", "tail", "--data-dir", data2.to_str().unwrap()]).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let strip = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("appendedAt");
        v
    };
    assert_eq!(again.iter().map(strip).collect::<Vec<_>>(), lines.iter().map(strip).collect::<Vec<_>>());
}

/// On Kafka, offsets are per partition: `svc log tail` must follow each partition with its
/// own cursor. A thousand events in one partition, then ten later ones in another: a tail
/// that paged all partitions with one offset printed the thousand and lost the ten.
#[tokio::test(flavor = "multi_thread")]
async fn kafka_log_tail_follows_every_partition() {
    use event_schema::{IdentityChange, NewEvent, Payload, Source};
    use eventlog::EventLog;
    let backend = Backend::kafka();
    let log = eventlog::KafkaLog::open(eventlog::KafkaConfig::from_url(backend.log_url().unwrap(), 4).unwrap()).unwrap();
    let key_in = |partition: u32| (0..).map(|i| format!("did:plc:tail{i}")).find(|k| eventlog::partition_for(k, 4) == partition).unwrap();
    let identity = |did: &str, i: usize| {
        NewEvent::repo(
            Source::Manual { note: "log tail test".into() },
            Payload::Identity(IdentityChange { did: did.to_owned(), handle: Some(format!("h{i}.test")), display_name: None }),
        )
    };
    let (busy, quiet) = (key_in(0), key_in(1));
    log.append(&(0..1000).map(|i| identity(&busy, i)).collect::<Vec<_>>()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    log.append(&(0..10).map(|i| identity(&quiet, i)).collect::<Vec<_>>()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tail = backend.svc(&["log", "tail", "--data-dir", dir.path().to_str().unwrap()]).unwrap();
    let keys: Vec<String> = tail.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["key"].as_str().unwrap().to_owned()).collect();
    assert_eq!(keys.len(), 1010, "log tail printed {} of 1010 events", keys.len());
    assert_eq!(keys.iter().filter(|k| **k == quiet).count(), 10);
    assert!(keys[1000..].iter().all(|k| *k == quiet), "the later events come last");
}

/// `svc backfill arxiv` imports arXiv's papers through its OAI-PMH interface (the arXiv
/// fixture server): a harvest stopped after a page goes on from the token it printed,
/// svc then serves every paper as an import, a bad day is refused before anything runs, and
/// arXiv failing fails the harvest with its reason.
#[tokio::test(flavor = "multi_thread")]
async fn an_arxiv_harvest_imports_papers_and_resumes() {
    let arxiv = sources::fixtures::FixtureServer::arxiv().await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let oai = format!("{}/oai", arxiv.url);
    let harvest = |extra: &[&str]| {
        let mut args = vec!["backfill", "arxiv", "--data-dir", data.to_str().unwrap(), "--arxiv-oai-url", &oai];
        args.extend_from_slice(extra);
        svc(&args)
    };
    let lines = |out: String| -> Vec<Value> { out.lines().map(|l| serde_json::from_str(l).unwrap()).collect() };

    let first = lines(harvest(&["--max-pages", "1"]).unwrap());
    let done = first.last().unwrap();
    assert_eq!((done["pages"].as_u64(), done["papers"].as_u64(), done["completeListSize"].as_u64()), (Some(1), Some(2), Some(6)), "{done}");
    let token = done["resume"].as_str().expect("a token to go on with").to_owned();
    let rest = lines(harvest(&["--resume", &token]).unwrap());
    let done = rest.last().unwrap();
    assert_eq!((done["pages"].as_u64(), done["papers"].as_u64(), done["deleted"].as_u64()), (Some(2), Some(3), Some(1)), "{rest:?}");
    assert!(done.get("resume").is_none(), "the list is complete: {done}");

    let err = harvest(&["--from", "2026-13-01"]).unwrap_err().to_string();
    assert!(err.contains("--from \"2026-13-01\" must be a day"), "{err}");
    arxiv.set_fault(sources::fixtures::Fault::Down);
    let err = harvest(&[]).unwrap_err().to_string();
    assert!(err.contains("arXiv's OAI-PMH interface: arxiv-oai answered HTTP 500"), "{err}");

    let service = Service::start(&data).await.unwrap();
    service.wait_caught_up().await.unwrap();
    for id in ["2503.11731", "2505.16392", "2509.21237", "2603.10233", "2604.24104"] {
        let (_, _, exists) = service.get(&format!("/xrpc/pub.svc.import.exists?source=arxiv&externalId={id}")).await.unwrap();
        assert_eq!(exists["exists"], true, "{id}");
    }
    let (status, _, paper) = service.get("/xrpc/pub.svc.import.get?source=arxiv&externalId=arXiv:2603.10233v1").await.unwrap();
    assert_eq!((status, paper["importedByPlugin"].as_str()), (200, Some("arxiv-oai")), "{paper}");
}
