//! `pub.svc.claiming.*`, `pub.svc.import.*` and `admin.listImports` in process, against the
//! arXiv fixture server: Yaxiong Wu imports her paper from arXiv and claims it (her name is
//! the first author's: a score), a second claim of hers is refused, Bob claims it too; the
//! admin sees both pending, approves hers and rejects his; she completes hers with the
//! eprint in her repository and the paper is claimed; a third claim is refused. Searching
//! the sources answers with one down, naming it; nothing is imported by asking.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{json, Value};
use sources::fixtures::{Fault, FixtureServer};
use support::*;

const WU: &str = "did:plc:wu000000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";
const CAROL: &str = "did:plc:carol000000000000000000";
const ADMIN: &str = "did:plc:admin000000000000000000";

/// The arXiv fixture server, and a service importing from it (without arXiv's pace).
async fn with_arxiv() -> (FixtureServer, Fixture) {
    let arxiv = FixtureServer::arxiv().await;
    let mut etiquette = sources::arxiv::etiquette(&arxiv.url, None);
    etiquette.interval = Duration::ZERO;
    let sources = sources::Sources::new([Arc::new(sources::arxiv::Arxiv::new(etiquette)) as Arc<dyn sources::Source>]);
    let limits = query_api::identity::limits::LimitSettings { tiers: None, ..Default::default() };
    (arxiv, Fixture::with_sources(limits, "http://127.0.0.1:9", sources))
}

async fn call(f: &Fixture, method: &str, token: &str, body: Value) -> (StatusCode, Value) {
    f.post_as(&format!("/xrpc/pub.svc.claiming.{method}"), Some(token), body).await
}

async fn ok_as(f: &Fixture, path: &str, token: &str) -> Value {
    let (status, body) = f.get_as(path, token).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paper_is_imported_claimed_reviewed_and_completed() {
    let (arxiv, mut f) = with_arxiv().await;
    let mine = format!("at://{WU}/pub.svc.eprint.submission/qcg");
    let bobs = format!("at://{BOB}/pub.svc.eprint.submission/b1");
    f.apply(vec![
        create(
            WU,
            "pub.svc.actor.profile",
            "self",
            "3l0000000000a",
            json!({"displayName": "Yaxiong Wu", "createdAt": "2025-01-01T00:00:00Z"}),
        ),
        create(
            WU,
            "pub.svc.eprint.submission",
            "qcg",
            "3l0000000000a",
            submission("Query-Centric Graph Retrieval Augmented Generation", WU, "2025-10-01T00:00:00Z"),
        ),
        create(BOB, "pub.svc.eprint.submission", "b1", "3l0000000000a", submission("Graph Colourings", BOB, "2025-10-02T00:00:00Z")),
    ]);
    f.live();
    query_api::xrpc::admin::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    let (wu, bob, carol, admin) =
        (login(&f, WU, "c-wu").await, login(&f, BOB, "c-bob").await, login(&f, CAROL, "c-carol").await, login(&f, ADMIN, "c-admin").await);

    // Not imported yet: unknown here, and asking about it imports nothing.
    assert_eq!(f.get("/xrpc/pub.svc.import.exists?externalId=2509.21237").await.1["exists"], false);
    let data = ok_as(&f, "/xrpc/pub.svc.claiming.getSubmissionData?source=arxiv&externalId=2509.21237", &wu).await;
    assert_eq!(data["title"], "Query-Centric Graph Retrieval Augmented Generation");
    assert_eq!(data["externalIds"]["doi"], "10.48550/arXiv.2509.21237");
    assert_eq!(data["existingSvcPaper"], Value::Null);
    assert_eq!(f.get("/xrpc/pub.svc.import.exists?source=arxiv&externalId=2509.21237").await.1["exists"], false);

    // Wu imports and claims it as its first author.
    let (status, started) =
        call(&f, "startClaimFromExternal", &wu, json!({"source": "arxiv", "externalId": "arXiv:2509.21237v1", "authorPosition": 0})).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let claim = &started["claim"];
    assert_eq!((claim["status"].as_str(), claim["claimantDid"].as_str()), (Some("pending"), Some(WU)));
    assert_eq!(claim["evidence"]["name"], 30, "her profile's name is the first author's: {claim}");
    assert_eq!(claim["score"], 30);
    let (wus_claim, import_id) = (claim["id"].as_u64().unwrap(), claim["importId"].as_u64().unwrap());
    let paper = f.get("/xrpc/pub.svc.import.get?source=arxiv&externalId=2509.21237v2").await.1;
    assert_eq!((paper["id"].as_u64(), paper["claimStatus"].as_str()), (Some(import_id), Some("pending")), "{paper}");
    assert_eq!(paper["authors"][0]["name"], "Yaxiong Wu");
    assert_eq!(paper["importedByPlugin"], "arxiv-atom");
    assert_eq!(f.get("/xrpc/pub.svc.import.exists?externalId=2509.21237").await.1["exists"], true, "found at any source");

    // The same claim again is refused; Bob's (no evidence) is made.
    let (status, e) = call(&f, "startClaim", &wu, json!({"importId": import_id})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::CONFLICT, Some("DuplicateClaim")), "{e}");
    let (status, bobs_claim) = call(&f, "startClaim", &bob, json!({"eprintUri": "arxiv:2509.21237"})).await;
    assert_eq!(status, StatusCode::OK, "{bobs_claim}");
    assert_eq!(bobs_claim["claim"]["score"], 0);
    let bobs_claim = bobs_claim["claim"]["id"].as_u64().unwrap();

    // Listings: hers, the admin's pending ones by score; a claim is shown to its claimant.
    let own = ok_as(&f, "/xrpc/pub.svc.claiming.getUserClaims", &wu).await;
    assert_eq!(own["claims"].as_array().unwrap().len(), 1);
    assert_eq!(f.get_as("/xrpc/pub.svc.claiming.getPendingClaims", &wu).await.0, StatusCode::FORBIDDEN);
    let pending = ok_as(&f, "/xrpc/pub.svc.claiming.getPendingClaims", &admin).await;
    assert_eq!(pending["claims"].as_array().unwrap().len(), 2);
    let scored = ok_as(&f, "/xrpc/pub.svc.claiming.getPendingClaims?minScore=30", &admin).await;
    assert_eq!(scored["claims"].as_array().unwrap().iter().map(|c| c["id"].as_u64().unwrap()).collect::<Vec<_>>(), vec![wus_claim]);
    assert_eq!(f.get_as(&format!("/xrpc/pub.svc.claiming.getClaim?claimId={bobs_claim}"), &wu).await.0, StatusCode::FORBIDDEN);
    assert_eq!(ok_as(&f, &format!("/xrpc/pub.svc.claiming.getClaim?id={bobs_claim}"), &admin).await["claim"]["claimantDid"], BOB);
    let (status, e) = f.get_as("/xrpc/pub.svc.claiming.getClaim?claimId=999999", &wu).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("ClaimNotFound")));

    // The admin approves hers and rejects his.
    let (status, _) = call(&f, "approveClaim", &wu, json!({"claimId": wus_claim})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "an admin's decision");
    let (status, approved) = call(&f, "approveClaim", &admin, json!({"claimId": wus_claim})).await;
    assert_eq!((status, approved["claim"]["status"].as_str()), (StatusCode::OK, Some("approved")), "{approved}");
    let (status, rejected) = call(&f, "rejectClaim", &admin, json!({"claimId": bobs_claim, "reason": "Not an author."})).await;
    assert_eq!((status, rejected["claim"]["rejectionReason"].as_str()), (StatusCode::OK, Some("Not an author.")), "{rejected}");
    let (status, _) = call(&f, "approveClaim", &admin, json!({"claimId": bobs_claim})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a rejected claim is not approved");

    // She completes it with her own indexed eprint only.
    let (status, e) = call(&f, "completeClaim", &bob, json!({"claimId": wus_claim, "canonicalUri": bobs})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::FORBIDDEN, Some("Unauthorized")));
    let (status, _) = call(&f, "completeClaim", &wu, json!({"claimId": wus_claim, "canonicalUri": bobs})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "not her repository's");
    let unindexed = format!("at://{WU}/pub.svc.eprint.submission/nothere");
    assert_eq!(call(&f, "completeClaim", &wu, json!({"claimId": wus_claim, "canonicalUri": unindexed})).await.0, StatusCode::NOT_FOUND);
    let (status, done) = call(&f, "completeClaim", &wu, json!({"claimId": wus_claim, "canonicalUri": mine})).await;
    assert_eq!((status, done["success"].as_bool()), (StatusCode::OK, Some(true)), "{done}");
    let paper = f.get("/xrpc/pub.svc.import.get?source=arxiv&externalId=2509.21237").await.1;
    assert_eq!(
        (paper["claimStatus"].as_str(), paper["canonicalUri"].as_str(), paper["claimedByDid"].as_str()),
        (Some("claimed"), Some(mine.as_str()), Some(WU)),
        "{paper}"
    );
    let (status, e) = call(&f, "startClaim", &carol, json!({"source": "arxiv", "externalId": "2509.21237"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::CONFLICT, Some("AlreadyClaimed")));
    let data = ok_as(&f, "/xrpc/pub.svc.claiming.getSubmissionData?source=arxiv&externalId=2509.21237", &wu).await;
    assert_eq!(data["existingSvcPaper"]["uri"], mine.as_str());

    // Searches of the imports.
    assert_eq!(f.get("/xrpc/pub.svc.import.search?query=graph").await.0, StatusCode::UNAUTHORIZED);
    let found = ok_as(&f, "/xrpc/pub.svc.import.search?query=Graph+retrieval&authorName=wu", &carol).await;
    // Its answer is kept for the next caller, but only a verified one is given it.
    let (status, body) = f.get("/xrpc/pub.svc.import.search?query=Graph+retrieval&authorName=wu").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")), "{body}");
    assert_eq!(
        f.get_as("/xrpc/pub.svc.import.search?query=Graph+retrieval&authorName=wu", "not-a-token").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(found["eprints"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.import.search?query=graph&claimStatus=unclaimed", &carol).await["eprints"], json!([]));
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.import.search?query=simplification", &carol).await["eprints"], json!([]));
    let listed = ok_as(&f, "/xrpc/pub.svc.admin.listImports?source=arxiv", &admin).await;
    assert_eq!(
        (listed["total"].as_u64(), listed["totalEprints"].as_u64(), listed["items"][0]["id"].as_u64()),
        (Some(1), Some(1), Some(import_id))
    );

    // Searching the sources, then with arXiv down: its error named, svc's own results kept.
    let searched = f.get("/xrpc/pub.svc.claiming.searchEprints?query=graph").await.1;
    let sources: Vec<(&str, &str)> =
        searched["eprints"].as_array().unwrap().iter().map(|e| (e["source"].as_str().unwrap(), e["title"].as_str().unwrap())).collect();
    assert!(sources.contains(&("arxiv", "Query-Centric Graph Retrieval Augmented Generation")), "{searched}");
    assert!(sources.iter().any(|(s, _)| *s == "svc"), "{searched}");
    assert_eq!(searched["sourceErrors"], json!([]));
    let imported = searched["eprints"].as_array().unwrap().iter().find(|e| e["externalId"] == "2509.21237").unwrap();
    assert_eq!(imported["claimStatus"], "claimed");
    arxiv.set_fault(Fault::Down);
    let searched = f.get("/xrpc/pub.svc.claiming.searchEprints?query=colourings").await.1;
    assert_eq!(searched["sourceErrors"][0]["source"], "arxiv", "{searched}");
    assert_eq!(searched["eprints"].as_array().unwrap().iter().map(|e| e["source"].as_str().unwrap()).collect::<Vec<_>>(), vec!["svc"]);
    arxiv.set_fault(Fault::None);

    // Bad input: each a clear error, nothing imported.
    let (status, e) = call(&f, "startClaimFromExternal", &carol, json!({"source": "nowhere", "externalId": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    let (status, _) = call(&f, "startClaimFromExternal", &carol, json!({"source": "arxiv", "externalId": "not an id"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, e) = call(&f, "startClaimFromExternal", &carol, json!({"source": "arxiv", "externalId": "2509.99999"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{e}");
    arxiv.set_fault(Fault::Malformed);
    let (status, e) = call(&f, "startClaimFromExternal", &carol, json!({"source": "arxiv", "externalId": "2505.16392"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_GATEWAY, Some("UpstreamFailure")), "{e}");
    arxiv.set_fault(Fault::None);
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.admin.listImports", &admin).await["total"], 1, "nothing else was imported");
    assert_eq!(call(&f, "startClaim", &carol, json!({})).await.0, StatusCode::BAD_REQUEST);
    let nothing = f.get("/xrpc/pub.svc.claiming.searchEprints").await.1;
    assert_eq!(nothing["eprints"], json!([]), "nothing to look for: {nothing}");
    let unknown = f.get("/xrpc/pub.svc.claiming.searchEprints?query=graph&sources=arxiv,nowhere").await.1;
    assert_eq!(unknown["sourceErrors"][0]["source"], "nowhere", "{unknown}");
    assert!(unknown["eprints"].as_array().unwrap().iter().all(|e| e["source"] == "arxiv"), "arXiv searched, svc not named: {unknown}");
}

/// Co-author requests, suggestions and their dismissal, claimable papers and completion:
/// Bob asks Wu to recognise him as the author listed first on her eprint, only she decides;
/// Wu is suggested her arXiv paper by her name until she dismisses it; a paper whose claim
/// was rejected is claimable again, and completes from a few typed letters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coauthors_suggestions_and_completion() {
    let (_arxiv, mut f) = with_arxiv().await;
    let eprint = format!("at://{WU}/pub.svc.eprint.submission/qcg");
    f.apply(vec![
        create(
            WU,
            "pub.svc.actor.profile",
            "self",
            "3l0000000000a",
            json!({"displayName": "Yaxiong Wu", "createdAt": "2025-01-01T00:00:00Z"}),
        ),
        create(
            WU,
            "pub.svc.eprint.submission",
            "qcg",
            "3l0000000000a",
            submission("Query-Centric Graph Retrieval", WU, "2025-10-01T00:00:00Z"),
        ),
    ]);
    f.live();
    query_api::xrpc::admin::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    let (wu, bob, carol, admin) =
        (login(&f, WU, "k-wu").await, login(&f, BOB, "k-bob").await, login(&f, CAROL, "k-carol").await, login(&f, ADMIN, "k-admin").await);

    // Bob asks to be the eprint's first author ("Ada Author"); only Wu decides.
    let ask = json!({"eprintUri": eprint, "eprintOwnerDid": WU, "claimantName": "Ada B. Author", "authorIndex": 0, "authorName": "Ada Author", "message": "That is me."});
    let (status, made) = call(&f, "requestCoauthorship", &bob, ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    assert_eq!((made["request"]["status"].as_str(), made["request"]["claimantDid"].as_str()), (Some("pending"), Some(BOB)));
    let id = made["request"]["id"].as_u64().unwrap();
    assert_eq!(call(&f, "requestCoauthorship", &bob, ask.clone()).await.0, StatusCode::BAD_REQUEST, "one pending request at a time");
    for (field, value) in [("authorIndex", json!(5)), ("authorName", json!("Someone Else")), ("eprintOwnerDid", json!(CAROL))] {
        let mut bad = ask.clone();
        bad[field] = value;
        let (status, e) = call(&f, "requestCoauthorship", &carol, bad).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {e}");
    }
    assert_eq!(call(&f, "requestCoauthorship", &wu, ask.clone()).await.0, StatusCode::BAD_REQUEST, "not on her own eprint");
    let on_hers = ok_as(&f, "/xrpc/pub.svc.claiming.getCoauthorRequests", &wu).await;
    assert_eq!(on_hers["requests"].as_array().unwrap().len(), 1, "{on_hers}");
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.claiming.getMyCoauthorRequests?status=pending", &bob).await["requests"][0]["id"], id);
    let (status, e) = call(&f, "approveCoauthor", &carol, json!({"requestId": id})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    let (status, e) = call(&f, "approveCoauthor", &wu, json!({"requestId": 424242})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("RequestNotFound")));
    let (status, decided) = call(&f, "approveCoauthor", &wu, json!({"requestId": id})).await;
    assert_eq!((status, decided["request"]["status"].as_str()), (StatusCode::OK, Some("approved")), "{decided}");
    assert_eq!(
        call(&f, "rejectCoauthor", &wu, json!({"requestId": id, "reason": "x"})).await.0,
        StatusCode::BAD_REQUEST,
        "decided already"
    );
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.claiming.getCoauthorRequests", &wu).await["requests"], json!([]), "none pending");
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.claiming.getMyCoauthorRequests?status=approved", &bob).await["requests"][0]["id"], id);

    // Wu is suggested her arXiv paper by her name, until she dismisses it (twice: a no-op).
    let suggested = ok_as(&f, "/xrpc/pub.svc.claiming.getSuggestions", &wu).await;
    let ids: Vec<&str> = suggested["papers"].as_array().unwrap().iter().map(|p| p["externalId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["2509.21237"], "{suggested}");
    assert_eq!(suggested["suggestions"], suggested["papers"]);
    assert_eq!(suggested["profileUsed"]["names"], json!(["Yaxiong Wu"]));
    for _ in 0..2 {
        let (status, out) = call(&f, "dismissSuggestion", &wu, json!({"source": "arxiv", "externalId": "arXiv:2509.21237v1"})).await;
        assert_eq!((status, out), (StatusCode::OK, json!({})));
    }
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.claiming.getSuggestions", &wu).await["papers"], json!([]), "dismissed stays dismissed");

    // A paper whose claim was rejected is claimable again; Wu dismisses it for herself.
    let (status, started) = call(&f, "startClaimFromExternal", &carol, json!({"source": "arxiv", "externalId": "2604.24104"})).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let claim = started["claim"]["id"].as_u64().unwrap();
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.claiming.findClaimable?q=graph", &carol).await["eprints"], json!([]), "pending: not claimable");
    let (status, _) = call(&f, "rejectClaim", &admin, json!({"claimId": claim, "reason": "Not her paper."})).await;
    assert_eq!(status, StatusCode::OK);
    let claimable = ok_as(&f, "/xrpc/pub.svc.claiming.findClaimable?q=graph&source=arxiv", &carol).await;
    assert_eq!(claimable["eprints"][0]["externalId"], "2604.24104", "{claimable}");
    assert_eq!(claimable["eprints"][0]["claimStatus"], "unclaimed");
    call(&f, "dismissSuggestion", &wu, json!({"source": "arxiv", "externalId": "2604.24104"})).await;
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.claiming.findClaimable?q=graph", &wu).await["eprints"], json!([]));
    assert_eq!(ok_as(&f, "/xrpc/pub.svc.claiming.findClaimable?source=osf", &carol).await["eprints"], json!([]));

    // Completion of what is typed, from the imports.
    for typed in ["fac", "Factual and Edit-Sens", "factual graph ", "graph-to-seq"] {
        let done = f.get(&format!("/xrpc/pub.svc.claiming.autocomplete?query={}", enc(typed))).await.1;
        assert_eq!(done["suggestions"].as_array().map(Vec::len), Some(1), "{typed}: {done}");
        assert_eq!(done["suggestions"][0]["externalId"], "2604.24104");
    }
    for typed in ["fa", "zzz", "factual zzz", ""] {
        let (status, done) = f.get(&format!("/xrpc/pub.svc.claiming.autocomplete?query={}", enc(typed))).await;
        assert_eq!((status, done["suggestions"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "{typed}: {done}");
    }
}

/// `fetchExternalPdf` passes on the PDF of a paper from where its source serves it (here
/// the fixture, standing in for arxiv.org), imported or not; a PDF link to another host is
/// refused, a paper without one is `PdfNotAvailable`, an answer that is not a PDF is
/// `FetchFailed`; a caller is needed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pdf_proxy_passes_on_what_its_sources_serve_and_nothing_else() {
    let arxiv = FixtureServer::arxiv().await;
    let mut etiquette = sources::arxiv::etiquette(&arxiv.url, None);
    etiquette.interval = Duration::ZERO;
    let mut pdfs = sources::arxiv::pdf_etiquette(&arxiv.url, None);
    pdfs.interval = Duration::ZERO;
    let client = sources::arxiv::Arxiv::new(etiquette).with_pdfs(pdfs);
    let sources = sources::Sources::new([Arc::new(client) as Arc<dyn sources::Source>]);
    let limits = query_api::identity::limits::LimitSettings { tiers: None, ..Default::default() };
    let mut f = Fixture::with_sources(limits, "http://127.0.0.1:9", sources);
    // Imports as the log holds them: one linking its PDF on arXiv, one elsewhere, one none.
    let import = |id: &str, pdf: Option<&str>| event_schema::NewEvent {
        key: event_schema::ExternalPaper::key("arxiv", id),
        source: event_schema::Source::Command {
            nsid: "pub.svc.claiming.startClaimFromExternal".into(),
            caller: WU.into(),
            host: "https://svc.example".into(),
        },
        payload: event_schema::Payload::External(Box::new(event_schema::ExternalPaper {
            source: "arxiv".into(),
            external_id: id.into(),
            url: format!("http://arxiv.org/abs/{id}"),
            title: format!("Paper {id}"),
            abstract_text: String::new(),
            authors: Vec::new(),
            publication_date: None,
            categories: Vec::new(),
            doi: None,
            pdf_url: pdf.map(str::to_owned),
            plugin: "arxiv-atom".into(),
            fetched_at: "2026-11-27T00:00:00Z".into(),
        })),
    };
    f.apply(vec![
        import("2505.16392", Some("http://arxiv.org/pdf/2505.16392v1")),
        import("2601.00001", Some("https://files.example.org/pdf/2601.00001.pdf")),
        import("2601.00002", None),
    ]);
    f.live();
    let wu = login(&f, WU, "pdf-wu").await;
    let pdf = |id: &str| format!("/xrpc/pub.svc.claiming.fetchExternalPdf?source=arxiv&externalId={id}");
    let fetch = |id: String| {
        let (f, wu) = (&f, &wu);
        async move {
            let request = axum::http::Request::builder().uri(pdf(&id)).header("authorization", format!("Bearer {wu}"));
            f.send(request.body(axum::body::Body::empty()).unwrap()).await
        }
    };

    assert_eq!(f.get(&pdf("2505.16392")).await.0, StatusCode::UNAUTHORIZED);
    // Imported: its link's path, fetched from the PDF host.
    let (status, headers, body) = fetch("2505.16392".into()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["content-type"], "application/pdf");
    assert!(body.as_str().is_some_and(|b| b.starts_with("%PDF-")), "{body}");
    // Not imported: the source says where its PDF is; nothing is imported by asking.
    let (status, _, body) = fetch("2503.11731".into()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(f.get_as("/xrpc/pub.svc.import.exists?source=arxiv&externalId=2503.11731", &wu).await.1["exists"], false);

    let refused = |id: &'static str, status: StatusCode, error: &'static str| {
        let fetch = &fetch;
        async move {
            let (got, _, body) = fetch(id.into()).await;
            assert_eq!((got, body["error"].as_str()), (status, Some(error)), "{id}: {body}");
        }
    };
    refused("2601.00001", StatusCode::FORBIDDEN, "DomainNotAllowed").await;
    refused("2601.00002", StatusCode::NOT_FOUND, "PdfNotAvailable").await;
    refused("9912.99999", StatusCode::NOT_FOUND, "EprintNotFound").await;
    let (status, _, body) = f
        .send(
            axum::http::Request::builder()
                .uri("/xrpc/pub.svc.claiming.fetchExternalPdf?source=nowhere&externalId=1")
                .header("authorization", format!("Bearer {wu}"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // The PDF host answering a web page: not passed on.
    arxiv.set_fault(Fault::Malformed);
    refused("2505.16392", StatusCode::BAD_GATEWAY, "FetchFailed").await;
    arxiv.set_fault(Fault::None);
}
