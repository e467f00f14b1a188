//! Bad input gets a clear error in the right envelope, never a 500; invalid records in the
//! log go to the dead letters while everything else is indexed.

use std::sync::Arc;

use event_schema::{NewEvent, Payload};
use eventlog::{EmbeddedLog, EventLog};
use serde_json::{json, Value};
use tests::{enc, svc, write_papers, Service};

fn record(did: &str, rkey: &str, record: Value) -> NewEvent {
    tests::submission_event(did, rkey, record, "bad-input test")
}

fn valid() -> Value {
    json!({"$type": "pub.svc.eprint.submission", "title": "Zymurgical Quasicrystals Revisited", "abstract": "Fermentation on aperiodic lattices.",
           "authors": [{"name": "Zed Zymurgist", "did": "did:plc:zedzymurgist0000000000000", "order": 1}], "fields": ["cond-mat"],
           "createdAt": "2025-05-05T00:00:00.000Z"})
}

/// The repository of the `n`th invalid record.
fn careless(n: usize) -> String {
    format!("did:plc:careless{n:017}")
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_records_are_dead_lettered_and_bad_requests_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let papers = dir.path().join("papers.jsonl");
    write_papers(&papers, 30).unwrap();
    svc(&["seed", "--data-dir", data.to_str().unwrap(), papers.to_str().unwrap()]).unwrap();

    // Another producer appends invalid records between valid ones.
    let did = "did:plc:badrecords000000000000000";
    {
        let log = EmbeddedLog::open(&data, 4).unwrap();
        let mut no_title = valid();
        no_title.as_object_mut().unwrap().remove("title");
        let mut numeric_abstract = valid();
        numeric_abstract["abstract"] = json!(42);
        let mut bad_author = valid();
        bad_author["authors"][0]["did"] = json!("not a did");
        let mut other = record(did, "3lbxqprzvpc25", json!({"text": "a review"}));
        if let Payload::RecordCreate(w) = &mut other.payload {
            w.collection = "pub.svc.review.comment".into();
        }
        log.append(&[
            record(&careless(1), "3lbxqprzvpc21", no_title),
            record(&careless(2), "3lbxqprzvpc22", numeric_abstract),
            record(&careless(3), "3lbxqprzvpc23", bad_author),
            other,
            record(did, "3lbxqprzvpc24", valid()),
        ])
        .unwrap();
    }

    let service = Service::start(&data).await.unwrap();
    service.wait_caught_up().await.unwrap();

    // Each dead letter is logged at WARN with its reason, and readiness counts them per model.
    let (_, _, ready) = service.get("/health/readiness").await.unwrap();
    let eprints = ready["projections"].as_array().unwrap().iter().find(|p| p["model"] == "eprints").unwrap().clone();
    assert_eq!(eprints["deadLetters"], 3, "{ready}");
    // The review without the fields its lexicon requires is the attached model's.
    let attached = ready["projections"].as_array().unwrap().iter().find(|p| p["model"] == "attached").unwrap().clone();
    assert_eq!(attached["deadLetters"], 1, "{ready}");
    let log = service.log();
    let warned: Vec<&str> = log.lines().filter(|l| l.contains("WARN") && l.contains("dead letter")).collect();
    assert_eq!(warned.len(), 4, "{log}");
    assert!(warned.iter().any(|l| l.contains("model=attached") || l.contains("model=\"attached\"")), "{warned:?}");
    assert!(warned.iter().any(|l| l.contains("authors[0].did")), "{warned:?}");

    // Everything else goes on: the valid record after the invalid ones is indexed.
    let (_, _, found) = service.get("/xrpc/pub.svc.eprint.searchSubmissions?query=zymurgical%20quasicrystals").await.unwrap();
    assert_eq!(found["total"], 1, "{found}");
    let good = format!("at://{did}/pub.svc.eprint.submission/3lbxqprzvpc24");
    assert_eq!(found["submissions"][0]["uri"], good.as_str());
    for (i, rkey) in ["3lbxqprzvpc21", "3lbxqprzvpc22", "3lbxqprzvpc23"].into_iter().enumerate() {
        let uri = format!("at://{}/pub.svc.eprint.submission/{rkey}", careless(i + 1));
        let (status, _, body) = service.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&uri))).await.unwrap();
        assert_eq!((status, body["error"].as_str()), (404, Some("RecordNotFound")));
    }

    let existing = good.as_str();
    let xrpc_cases: Vec<(String, u16, &str)> = vec![
        ("/xrpc/pub.svc.eprint.getSubmission".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.getSubmission?uri=not-a-uri".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.getSubmission?uri=at%3A%2F%2Fdid%3Aplc%3Aabc".into(), 400, "InvalidRequest"),
        (
            format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc("at://alice.test/pub.svc.eprint.submission/3abc")),
            400,
            "InvalidRequest",
        ),
        (
            format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc("at://did:plc:a b/pub.svc.eprint.submission/3abc")),
            400,
            "InvalidRequest",
        ),
        ("/xrpc/pub.svc.eprint.getSubmission?uri=%ZZ%00".into(), 400, "InvalidRequest"),
        (format!("/xrpc/pub.svc.eprint.getSubmission?uri={}&uri={}", enc(existing), enc(existing)), 400, "InvalidRequest"),
        (
            format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc("at://did:plc:zzzz/pub.svc.eprint.submission/3abc")),
            404,
            "RecordNotFound",
        ),
        (
            format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&existing.replace("eprint.submission", "review.comment"))),
            404,
            "RecordNotFound",
        ),
        (format!("/xrpc/pub.svc.eprint.getSubmission?uri={}&cid=bafyreiaaaaaaaaaaaaaaaaaa", enc(existing)), 404, "RecordNotFound"),
        (format!("/xrpc/pub.svc.eprint.getSubmission?uri={}&cid=nope", enc(existing)), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&limit=0".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&limit=101".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&limit=ten".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&sortBy=random".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&sort=random".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&authors=nope".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&dateFrom=yesterday".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&dateFrom=2026-01-02&dateTo=2025-01-01".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=x&cursor=garbage".into(), 400, "InvalidRequest"),
        (format!("/xrpc/pub.svc.eprint.searchSubmissions?query={}", "a".repeat(1001)), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.searchSubmissions?query=title%3A(((%20AND%20%22".into(), 200, ""),
        ("/xrpc/pub.svc.eprint.listByAuthor".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.eprint.listByAuthor?author=nope".into(), 400, "InvalidRequest"),
        (format!("/xrpc/pub.svc.eprint.listByAuthor?author={did}&cursor=garbage"), 400, "InvalidRequest"),
        (format!("/xrpc/pub.svc.eprint.listByAuthor?author={did}&limit=1000"), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.review.getThread?uri=x".into(), 400, "InvalidRequest"),
        (format!("/xrpc/pub.svc.review.listForEprint?eprintUri=at://{did}/pub.svc.eprint.submission/x&limit=0"), 400, "InvalidRequest"),
        (format!("/xrpc/pub.svc.review.listForEprint?eprintUri=at://{did}/pub.svc.eprint.submission/x&limit=101"), 400, "InvalidRequest"),
        (
            format!("/xrpc/pub.svc.review.listForEprint?eprintUri=at://{did}/pub.svc.eprint.submission/x&cursor=garbage"),
            400,
            "InvalidRequest",
        ),
        (format!("/xrpc/pub.svc.review.getThread?uri=at://{did}/pub.svc.review.comment/nothing"), 404, "NotFound"),
        (
            "/xrpc/pub.svc.annotation.listForPage?eprintUri=at://did:plc:x/pub.svc.eprint.submission/y&pageNumber=0".into(),
            400,
            "InvalidRequest",
        ),
        ("/xrpc/pub.svc.tag.getDetail?tag=never-used".into(), 404, "TagNotFound"),
        ("/xrpc/pub.svc.tag.getTrending?timeWindow=year".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.endorsement.getUserEndorsement?uri=at://did:plc:x/pub.svc.eprint.submission/y".into(), 401, "AuthRequired"),
        ("/xrpc/pub.svc.admin.listDLQEntries".into(), 401, "AuthRequired"),
        ("/xrpc/pub.svc.admin.listImports".into(), 401, "AuthRequired"),
        ("/xrpc/pub.svc.claiming.fetchExternalPdf?source=arxiv&externalId=2509.21237".into(), 401, "AuthRequired"),
        ("/xrpc/pub.svc.collection.getMarginAnnotations".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.collection.getMarginAnnotations?eprintUri=x".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.resolve.byExternalId?system=isni&identifier=1".into(), 400, "InvalidRequest"),
        ("/xrpc/pub.svc.nothing.here".into(), 404, "NotFound"),
        ("/xrpc/not-an-nsid".into(), 404, "NotFound"),
    ];
    for (path, status, error) in &xrpc_cases {
        let (got, _, body) = service.get(path).await.unwrap();
        assert_eq!(got, *status, "{path}: {body}");
        if !error.is_empty() {
            assert_eq!(body["error"], *error, "{path}: {body}");
            assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{path}: {body}");
        }
    }
    // A cursor of one sort order is refused by another.
    let (_, _, page) = service.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=2").await.unwrap();
    let cursor = page["cursor"].as_str().unwrap();
    let (status, _, _) =
        service.get(&format!("/xrpc/pub.svc.eprint.searchSubmissions?query=*&limit=2&sortBy=date&cursor={cursor}")).await.unwrap();
    assert_eq!(status, 400);
    // A query method refuses POST.
    let r = reqwest::Client::new().post(format!("{}/xrpc/pub.svc.eprint.getSubmission", service.base)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "InvalidRequest");

    let rest_cases: Vec<(String, u16, &str)> = vec![
        ("/api/v1/eprints/garbage".into(), 400, "INVALID_REQUEST"),
        (format!("/api/v1/eprints/{}", enc("at://did:plc:zzzz/pub.svc.eprint.submission/3abc")), 404, "NOT_FOUND"),
        ("/api/v1/eprints?limit=500".into(), 400, "INVALID_REQUEST"),
        ("/api/v1/eprints?limit=-1".into(), 400, "INVALID_REQUEST"),
        ("/api/v1/eprints?sort=random".into(), 400, "INVALID_REQUEST"),
        ("/api/v1/eprints?from=someday".into(), 400, "INVALID_REQUEST"),
        ("/api/v1/eprints?author=nope".into(), 400, "INVALID_REQUEST"),
        ("/api/v1/search?cursor=zzz".into(), 400, "INVALID_REQUEST"),
        ("/api/v1/authors/nope/eprints".into(), 400, "INVALID_REQUEST"),
        (format!("/api/v1/authors/{did}/eprints?limit=0"), 400, "INVALID_REQUEST"),
        (format!("/api/v1/eprints/{}/integrations", enc(&format!("at://{did}/pub.svc.eprint.submission/none"))), 404, "NOT_FOUND"),
        ("/api/v1/eprints/not-a-uri/integrations".into(), 400, "INVALID_REQUEST"),
        ("/api/v1/nothing".into(), 404, "NOT_FOUND"),
    ];
    for (path, status, code) in &rest_cases {
        let (got, _, body) = service.get(path).await.unwrap();
        assert_eq!(got, *status, "{path}: {body}");
        assert_eq!(body["error"]["code"], *code, "{path}: {body}");
        assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{path}: {body}");
    }
    let (status, _, empty) = service.get("/api/v1/eprints?q=zymurgical").await.unwrap();
    assert_eq!((status, empty["results"].as_array().unwrap().len()), (200, 1));

    // The dead letters name each invalid record and why.
    service.stop().unwrap();
    let store = Arc::new(store::EmbeddedStore::open(&data).unwrap());
    let version = store::Store::active_version(store.as_ref(), projections::eprints::MODEL).unwrap().unwrap();
    let dead = projections::deadletter::list(store.as_ref(), projections::eprints::MODEL, version, 100).unwrap();
    let reasons: Vec<(String, String)> = dead.iter().map(|d| (d.uri.clone().unwrap_or_default(), d.reason.clone())).collect();
    assert_eq!(dead.len(), 3, "{reasons:?}");
    assert!(reasons[0].0.ends_with("3lbxqprzvpc21") && reasons[0].1.contains("title"), "{reasons:?}");
    assert!(reasons[1].0.ends_with("3lbxqprzvpc22") && reasons[1].1.contains("abstract"), "{reasons:?}");
    assert!(reasons[2].0.ends_with("3lbxqprzvpc23") && reasons[2].1.contains("authors[0].did"), "{reasons:?}");
}
