//! `pub.svc.actor.autocompleteOrcid`, `autocompleteAffiliation`, `autocompleteKeyword`,
//! `autocompleteOpenReview` and `discoverAuthorIds` in process, against the registries' fixture server: each answers
//! from its registry, keywords interleave FAST and Wikidata, a registry down is named in
//! `sourceErrors` while the other's suggestions stand.

use crate::support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use sources::fixtures::{Fault, FixtureServer};
use support::*;

const WU: &str = "did:plc:wu000000000000000000000";

/// The registries' fixture server, and a live service asking it where Yaxiong Wu has a
/// profile.
async fn wu_with_registries() -> (FixtureServer, Fixture) {
    let registries = FixtureServer::registries().await;
    let f = wu_at(&registries, sources::Sources::default());
    (registries, f)
}

/// A live service asking `registries` and importing from `sources`, where Yaxiong Wu has a
/// profile.
fn wu_at(registries: &FixtureServer, sources: sources::Sources) -> Fixture {
    let limits = query_api::identity::limits::LimitSettings { tiers: None, ..Default::default() };
    let mut f = Fixture::with_registries(limits, "http://127.0.0.1:9", sources, &registries.url);
    f.apply(vec![create(
        WU,
        "pub.svc.actor.profile",
        "self",
        "3l0000000000a",
        json!({"displayName": "Yaxiong Wu", "createdAt": "2025-01-01T00:00:00Z"}),
    )]);
    f.live();
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_are_completed_from_the_registries() {
    let (registries, f) = wu_with_registries().await;
    let ok = |path: String| {
        let f = &f;
        async move {
            let (status, body) = f.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            body
        }
    };
    let names = |v: &Value, field: &str| -> Vec<String> {
        v["suggestions"].as_array().unwrap().iter().map(|s| s[field].as_str().unwrap().to_owned()).collect()
    };

    let people = ok("/xrpc/pub.svc.actor.autocompleteOrcid?query=carberry".into()).await;
    assert_eq!(names(&people, "orcid"), ["0000-0002-1825-0097"]);
    assert_eq!(people["sourceErrors"], json!([]));
    assert_eq!(names(&ok("/xrpc/pub.svc.actor.autocompleteOrcid?query=0000-0009-0000-0015".into()).await, "name"), ["Yaxiong Wu"]);
    let orgs = ok("/xrpc/pub.svc.actor.autocompleteAffiliation?query=Brown+University".into()).await;
    assert_eq!(orgs["suggestions"][0]["rorId"], "https://ror.org/05gq02987");
    assert_eq!(orgs["suggestions"][0]["chosen"], true);
    let keywords = ok("/xrpc/pub.svc.actor.autocompleteKeyword?query=machine+learning".into()).await;
    assert_eq!(
        keywords["suggestions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| (k["source"].as_str().unwrap(), k["id"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [("fast", "fst01004795"), ("wikidata", "Q2539")]
    );
    let only = ok("/xrpc/pub.svc.actor.autocompleteKeyword?query=machine+learning&sources=wikidata".into()).await;
    assert_eq!(names(&only, "source"), ["wikidata"]);

    let reviewers = ok("/xrpc/pub.svc.actor.autocompleteOpenReview?query=mccallum".into()).await;
    assert_eq!(
        reviewers["suggestions"],
        json!([{"id": "~Andrew_McCallum1", "displayName": "Andrew McCallum", "institution": "University of Massachusetts, Amherst"}])
    );
    let wu_profiles = ok("/xrpc/pub.svc.actor.autocompleteOpenReview?query=Yaxiong+Wu".into()).await;
    assert_eq!(wu_profiles["suggestions"], json!([{"id": "~Yaxiong_Wu1", "displayName": "Yaxiong Wu"}]), "the preferred name, no position");

    let wu = login(&f, WU, "r-wu").await;
    assert_eq!(f.get("/xrpc/pub.svc.actor.discoverAuthorIds").await.0, StatusCode::UNAUTHORIZED);
    let (status, found) = f.get_as("/xrpc/pub.svc.actor.discoverAuthorIds", &wu).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["searchedName"], "Yaxiong Wu", "her profile's name by default");
    let sources: Vec<&str> = found["matches"].as_array().unwrap().iter().map(|m| m["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["orcid", "openalex"], "{found}");
    let (_, priem) = f.get_as("/xrpc/pub.svc.actor.discoverAuthorIds?name=Jason+Priem&limit=3", &wu).await;
    assert_eq!(priem["matches"][0]["orcid"], "0000-0001-6187-6610", "{priem}");

    // A registry down: named, the request answered.
    registries.set_fault(Fault::Down);
    let (status, down) = f.get("/xrpc/pub.svc.actor.autocompleteAffiliation?query=MIT+Cambridge").await;
    assert_eq!((status, down["suggestions"].clone()), (StatusCode::OK, json!([])), "{down}");
    assert_eq!(down["sourceErrors"][0]["source"], "ror");
    let (status, down) = f.get("/xrpc/pub.svc.actor.autocompleteOpenReview?query=bok").await;
    assert_eq!((status, down["sourceErrors"][0]["source"].clone()), (StatusCode::OK, json!("openreview")), "{down}");
    registries.set_fault(Fault::None);
    assert_eq!(f.get("/xrpc/pub.svc.actor.autocompleteOrcid").await.0, StatusCode::BAD_REQUEST, "a query is required");
    assert_eq!(f.get("/xrpc/pub.svc.actor.autocompleteOrcid?query=x&limit=51").await.0, StatusCode::BAD_REQUEST);
}

/// `triggerCitationExtraction` asks OpenAlex (the fixture server) about every indexed eprint
/// with a DOI and appends what it knows; `getEnrichment` serves it, `available: false` for
/// an eprint OpenAlex does not know, 404 for one svc has not indexed. The works an eprint
/// references become its extracted citations (`source: auto`) in `listCitations` and
/// `getCitations`, pointing at the eprints svc indexes for them (by DOI or arXiv id, as
/// eprints come and go), and the cited eprint is cited by the citing one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn citation_extraction_enriches_the_eprints_openalex_knows() {
    let registries = FixtureServer::registries().await;
    let limits = query_api::identity::limits::LimitSettings { tiers: None, ..Default::default() };
    let mut f = Fixture::with_registries(limits, "http://127.0.0.1:9", sources::Sources::default(), &registries.url);
    let with_doi = |title: &str, doi: Option<&str>| {
        let mut r = submission(title, WU, "2025-10-01T00:00:00Z");
        if let Some(d) = doi {
            r["doi"] = json!(d);
        }
        r
    };
    f.apply(vec![
        create(
            WU,
            "pub.svc.eprint.submission",
            "known",
            "3l0000000000a",
            with_doi("Query-Centric Graph Retrieval", Some("10.48550/arXiv.2509.21237")),
        ),
        create(WU, "pub.svc.eprint.submission", "unknown", "3l0000000000a", with_doi("Unknown to OpenAlex", Some("10.1234/nothing"))),
        create(WU, "pub.svc.eprint.submission", "nodoi", "3l0000000000a", with_doi("Without a DOI", None)),
        create(WU, "pub.svc.eprint.submission", "splat", "3l0000000000a", {
            // Known by its arXiv id alone: OpenAlex's reference names its arXiv DOI.
            let mut r = with_doi("Sensor Simulation via Gaussian Splatting", None);
            r["externalIds"] = json!({"arxivId": "2503.11731v1"});
            r
        }),
    ]);
    f.live();
    const ADMIN: &str = "did:plc:admin000000000000000000";
    query_api::xrpc::admin::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    let admin = login(&f, ADMIN, "r-admin").await;
    let uri = |rkey: &str| format!("at://{WU}/pub.svc.eprint.submission/{rkey}");
    let enrichment = |rkey: &str| {
        let (f, u) = (&f, uri(rkey));
        async move { f.get(&format!("/xrpc/pub.svc.discovery.getEnrichment?uri={}", enc(&u))).await }
    };
    assert_eq!(enrichment("known").await.1["available"], false, "nothing extracted yet");

    let finished = |id: String| {
        let (f, admin) = (&f, admin.clone());
        async move {
            for _ in 0..400 {
                let op = f.get_as(&format!("/xrpc/pub.svc.admin.getBackfillStatus?id={id}"), &admin).await.1["operation"].clone();
                if op["status"] != "running" {
                    return op;
                }
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
            panic!("the operation did not end");
        }
    };

    // One eprint by URI, with OpenAlex down: the operation fails, with the reason.
    registries.set_fault(Fault::Down);
    let (_, started) = f.post_as("/xrpc/pub.svc.admin.triggerCitationExtraction", Some(&admin), json!({"uri": uri("known")})).await;
    let op = finished(started["operationId"].as_str().unwrap().to_owned()).await;
    assert_eq!(op["status"], "failed", "{op}");
    assert!(op["error"].as_str().is_some_and(|e| e.contains("OpenAlex")), "{op}");
    registries.set_fault(Fault::None);

    // Every eprint with a DOI.
    let (status, started) = f.post_as("/xrpc/pub.svc.admin.triggerCitationExtraction", Some(&admin), json!({})).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let op = finished(started["operationId"].as_str().unwrap().to_owned()).await;
    assert_eq!((op["status"].as_str(), op["recordsProcessed"].as_u64()), (Some("completed"), Some(2)), "the two eprints with a DOI: {op}");
    // (The arXiv-only eprint has no DOI: OpenAlex is asked by DOI.)
    f.settled("imports").await;
    let (status, known) = enrichment("known").await;
    assert_eq!((status, known["available"].as_bool()), (StatusCode::OK, Some(true)), "{known}");
    let e = &known["enrichment"];
    assert_eq!(
        (e["citedByCount"].as_u64(), e["referencedWorksCount"].as_u64(), e["source"].as_str()),
        (Some(7), Some(3), Some("openalex"))
    );
    assert_eq!(e["topics"][0]["name"], "Topic Modeling");
    assert_eq!(e["openAccessUrl"], "https://arxiv.org/pdf/2509.21237");
    assert_eq!(enrichment("unknown").await.1["available"], false);
    assert_eq!(enrichment("nothere").await.0, StatusCode::NOT_FOUND);
    // Of its three references, OpenAlex knows two by title: its extracted citations.
    assert_eq!(e["citedWorks"].as_array().map(Vec::len), Some(2), "{e}");

    let list = |query: String| {
        let f = &f;
        async move {
            let (status, body) = f.get(&format!("/xrpc/pub.svc.eprint.listCitations?{query}")).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body
        }
    };
    let auto = list(format!("uri={}&source=auto", enc(&uri("known")))).await;
    assert_eq!(auto["total"], 2, "{auto}");
    let first = &auto["citations"][0];
    assert_eq!(
        (first["uri"].as_str(), first["source"].as_str(), first["citationType"].as_str(), first["eprintUri"].as_str()),
        (Some("https://openalex.org/W2963403868"), Some("auto"), Some("cites"), Some(uri("known").as_str())),
        "{first}"
    );
    assert_eq!(
        first["citedWork"],
        json!({"title": "Construction of the Literature Graph in Semantic Scholar", "doi": "10.18653/v1/n18-3011",
               "authors": ["Waleed Ammar", "Dirk Groeneveld"], "year": 2018,
               "venue": "North American Chapter of the Association for Computational Linguistics"})
    );
    assert_eq!(auto["citations"][1]["citedWork"]["svcUri"], uri("splat"), "the arXiv DOI names the eprint: {auto}");
    assert_eq!(list(format!("uri={}&source=user", enc(&uri("known")))).await, json!({"citations": [], "total": 0}));

    // All of them (the default), a page at a time.
    let page1 = list(format!("uri={}&limit=1", enc(&uri("known")))).await;
    assert_eq!((page1["total"].as_u64(), page1["cursor"].as_str()), (Some(2), Some("extracted.1")), "{page1}");
    let page2 = list(format!("uri={}&limit=1&cursor=extracted.1", enc(&uri("known")))).await;
    assert_eq!(page2["citations"][0]["citedWork"]["svcUri"], uri("splat"));
    assert!(page2.get("cursor").is_none(), "{page2}");
    assert_eq!(
        f.get(&format!("/xrpc/pub.svc.eprint.listCitations?uri={}&cursor=extracted.x", enc(&uri("known")))).await.0,
        StatusCode::BAD_REQUEST
    );

    // The graph: what the eprint cites, and who cites the splatting eprint.
    let graph = |rkey: &str, direction: &str| {
        let (f, u) = (&f, uri(rkey));
        let direction = direction.to_owned();
        async move { f.get(&format!("/xrpc/pub.svc.discovery.getCitations?uri={}&direction={direction}", enc(&u))).await.1 }
    };
    let citing = graph("known", "citing").await;
    assert_eq!(citing["counts"]["citing"], 2, "{citing}");
    assert_eq!(citing["citations"][1]["targetUri"], uri("splat"), "{citing}");
    let cited = graph("splat", "cited-by").await;
    assert_eq!(cited["counts"]["cited"], 1, "{cited}");
    let edge = &cited["citations"][0];
    assert_eq!(
        (edge["direction"].as_str(), edge["eprintUri"].as_str(), edge["targetUri"].as_str(), edge["source"].as_str()),
        (Some("cited"), Some(uri("known").as_str()), Some(uri("splat").as_str()), Some("auto")),
        "{cited}"
    );

    // getSimilar counts extracted citations as citations, both ways.
    let similar = |rkey: &str| {
        let (f, u) = (&f, uri(rkey));
        async move { f.get(&format!("/xrpc/pub.svc.discovery.getSimilar?uri={}&includeTypes=citation", enc(&u))).await.1 }
    };
    for (from, to) in [("known", "splat"), ("splat", "known")] {
        let found = similar(from).await;
        let entry = found["related"].as_array().unwrap().iter().find(|e| e["uri"] == uri(to)).cloned();
        assert_eq!(entry.map(|e| e["reasons"].clone()), Some(json!(["citation"])), "{from} → {to}: {found}");
    }
    // Every signal (bibliographic coupling by the works cited, indexed or not, among them).
    let (status, all) = f.get(&format!("/xrpc/pub.svc.discovery.getSimilar?uri={}", enc(&uri("known")))).await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert!(all["related"].as_array().unwrap().iter().any(|e| e["uri"] == uri("splat")), "{all}");

    // Extracted again: the citations are replaced, not repeated.
    let (_, started) = f.post_as("/xrpc/pub.svc.admin.triggerCitationExtraction", Some(&admin), json!({"uri": uri("known")})).await;
    assert_eq!(finished(started["operationId"].as_str().unwrap().to_owned()).await["status"], "completed");
    f.settled("imports").await;
    assert_eq!(graph("splat", "cited").await["counts"]["cited"], 1);

    // A cited work indexed later points at its eprint; a deleted eprint is pointed at no more.
    f.log
        .append(&[
            create(
                WU,
                "pub.svc.eprint.submission",
                "graph",
                "3l0000000000b",
                with_doi("The Literature Graph", Some("10.18653/v1/N18-3011")),
            ),
            delete(WU, "pub.svc.eprint.submission", "splat", "3l0000000000c"),
        ])
        .unwrap();
    f.settled("eprints").await;
    let auto = list(format!("uri={}&source=auto", enc(&uri("known")))).await;
    assert_eq!(auto["citations"][0]["citedWork"]["svcUri"], uri("graph"), "{auto}");
    assert!(auto["citations"][1]["citedWork"].get("svcUri").is_none(), "{auto}");
    assert_eq!(graph("graph", "cited").await["citations"][0]["eprintUri"], uri("known"));
}

/// ORCID verification: Wu starts it and is sent to ORCID with a state; ORCID (the fixture)
/// sends her back with a code, which svc exchanges for the iD it authenticated: her profile
/// shows it verified, and the state cannot be used again. A code ORCID refuses, an unknown
/// state and a declined authorization each come back with their reason; nothing is
/// verified by them. A service without an ORCID client answers `OrcidNotConfigured`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orcid_id_is_verified_through_orcid_once_per_state() {
    let (registries, mut f) = wu_with_registries().await;
    let wu = login(&f, WU, "orcid-wu").await;
    let initiate = "/xrpc/pub.svc.author.initiateOrcidVerification";
    assert_eq!(f.post_as(initiate, None, json!({})).await.0, StatusCode::UNAUTHORIZED);
    let start = || async {
        let (status, body) = f.post_as(initiate, Some(&wu), json!({})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let url = body["authorizeUrl"].as_str().unwrap().to_owned();
        assert!(url.starts_with(&format!("{}/oauth/authorize?client_id=APP-FIXTURE0000000&response_type=code&scope=%2Fauthenticate&redirect_uri=https%3A%2F%2Fsvc.example%2Fv1%2Fauth%2Forcid%2Fcallback&state=", registries.url)), "{url}");
        url.rsplit_once("state=").unwrap().1.to_owned()
    };
    let fr = &f;
    let back = |query: String| async move {
        let f = fr;
        let request = axum::http::Request::builder().uri(format!("/v1/auth/orcid/callback?{query}"));
        let (status, headers, _) = f.send(request.body(axum::body::Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::SEE_OTHER);
        headers["location"].to_str().unwrap().to_owned()
    };
    let outcome = |reason: &str| format!("{ORCID_RETURN}?orcidVerification=error&reason={reason}");
    let profile = || async { f.get(&format!("/xrpc/pub.svc.author.getProfile?did={WU}")).await.1["profile"].clone() };
    assert_eq!(profile().await["orcidVerified"], false);

    // Declined at ORCID; a code ORCID refuses; an unknown state.
    let state = start().await;
    assert_eq!(back(format!("error=access_denied&error_description=User+denied+access&state={state}")).await, outcome("denied"));
    assert_eq!(back(format!("code=WRONG1&state={state}")).await, outcome("exchange_failed"));
    assert_eq!(back(format!("code={}&state=not-a-state", sources::fixtures::ORCID_CODE)).await, outcome("invalid_state"));
    assert_eq!(back("code=x".into()).await, outcome("invalid_state"));
    assert_eq!(profile().await["orcidVerified"], false, "nothing verified");

    // The code ORCID exchanges: verified, once.
    let code = sources::fixtures::ORCID_CODE;
    assert_eq!(back(format!("code={code}&state={state}")).await, format!("{ORCID_RETURN}?orcidVerification=success"));
    let shown = profile().await;
    assert_eq!((shown["orcid"].as_str(), shown["orcidVerified"].as_bool()), (Some("0000-0002-1825-0097"), Some(true)), "{shown}");
    assert_eq!(shown["verifiedOrcid"]["name"], "Josiah Carberry");
    assert_eq!(back(format!("code={code}&state={state}")).await, outcome("invalid_state"), "a state is spent once");

    // Her claim on a paper listing that iD weighs the verified iD most (docs/claiming.md).
    f.apply(vec![event_schema::NewEvent {
        key: event_schema::ExternalPaper::key("arxiv", "2601.00009"),
        source: event_schema::Source::Command { nsid: "test".into(), caller: WU.into(), host: "https://svc.example".into() },
        payload: event_schema::Payload::External(Box::new(event_schema::ExternalPaper {
            source: "arxiv".into(),
            external_id: "2601.00009".into(),
            url: "http://arxiv.org/abs/2601.00009".into(),
            title: "A paper of Josiah's".into(),
            abstract_text: String::new(),
            authors: vec![event_schema::ExternalAuthor {
                name: "Josiah Carberry".into(),
                orcid: Some("0000-0002-1825-0097".into()),
                affiliation: None,
            }],
            publication_date: None,
            categories: Vec::new(),
            doi: None,
            pdf_url: None,
            plugin: "arxiv-atom".into(),
            fetched_at: "2026-11-27T00:00:00Z".into(),
        })),
    }]);
    f.settled("imports").await;
    let import = f.get_as("/xrpc/pub.svc.import.get?source=arxiv&externalId=2601.00009", &wu).await.1;
    let (status, claimed) = f.post_as("/xrpc/pub.svc.claiming.startClaim", Some(&wu), json!({"importId": import["id"]})).await;
    assert_eq!(status, StatusCode::OK, "{claimed}");
    assert_eq!(claimed["claim"]["evidence"], json!({"verifiedOrcid": 70}), "{claimed}");
}

#[tokio::test]
async fn orcid_verification_needs_an_orcid_client() {
    let mut f = Fixture::new();
    f.live();
    let wu = login(&f, WU, "orcid-none").await;
    let (status, body) = f.post_as("/xrpc/pub.svc.author.initiateOrcidVerification", Some(&wu), json!({})).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("OrcidNotConfigured")), "{body}");
    assert_eq!(f.get("/v1/auth/orcid/callback?code=x&state=y").await.0, StatusCode::NOT_FOUND);
}

/// OpenAlex as a source of papers: Wu finds her work by words, claims it by its OpenAlex
/// id (imported first: an `external.paper` event), and her name on it counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paper_is_found_imported_and_claimed_from_openalex() {
    let registries = FixtureServer::registries().await;
    let etiquette = sources::Etiquette { interval: std::time::Duration::ZERO, ..sources::openalex::etiquette(&registries.url, None) };
    let openalex = sources::openalex::OpenAlex::new(etiquette);
    let f = wu_at(&registries, sources::Sources::new([std::sync::Arc::new(openalex) as std::sync::Arc<dyn sources::Source>]));
    let (status, found) = f.get("/xrpc/pub.svc.claiming.searchEprints?query=query-centric+retrieval&sources=openalex").await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found["eprints"][0]["externalId"], "W4402000001", "{found}");
    let wu = login(&f, WU, "openalex-wu").await;
    let input = json!({"source": "openalex", "externalId": "https://openalex.org/W4402000001", "authorPosition": 0});
    let (status, started) = f.post_as("/xrpc/pub.svc.claiming.startClaimFromExternal", Some(&wu), input).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    assert_eq!(started["claim"]["evidence"]["name"], 30, "{started}");
    let (_, imported) = f.get_as("/xrpc/pub.svc.import.get?source=openalex&externalId=W4402000001", &wu).await;
    assert_eq!(
        (imported["importedByPlugin"].as_str(), imported["doi"].as_str()),
        (Some("openalex-works"), Some("10.48550/arxiv.2509.21237"))
    );
}

/// Crossref and Semantic Scholar as sources of papers: one search asks both (each paper
/// under its own source's identifier), Wu claims the Crossref work by its DOI in any form
/// (her ORCID iD is on it, her name too), and the Semantic Scholar paper is imported by its
/// paper id; Crossref down leaves Semantic Scholar's answer standing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn papers_are_found_and_claimed_from_crossref_and_semantic_scholar() {
    use std::sync::Arc;
    let (registries, crossref_server) = (FixtureServer::registries().await, FixtureServer::crossref().await);
    let crossref = sources::crossref::Crossref::new(sources::Etiquette {
        interval: std::time::Duration::ZERO,
        cache_for: std::time::Duration::ZERO,
        ..sources::crossref::etiquette(&crossref_server.url, None)
    });
    let s2 = sources::semantic_scholar::SemanticScholar::new(sources::Etiquette {
        interval: std::time::Duration::ZERO,
        ..sources::semantic_scholar::etiquette(&registries.url, Some(sources::fixtures::SEMANTIC_SCHOLAR_KEY))
    });
    let f = wu_at(&registries, sources::Sources::new([Arc::new(crossref) as Arc<dyn sources::Source>, Arc::new(s2)]));
    let (status, found) = f.get("/xrpc/pub.svc.claiming.searchEprints?query=query-centric+graph&sources=crossref,semanticscholar").await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let mut ids: Vec<(String, String)> = found["eprints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["source"].as_str().unwrap_or_default().to_owned(), e["externalId"].as_str().unwrap_or_default().to_owned()))
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            ("crossref".to_owned(), "10.1145/3696410.3714001".to_owned()),
            ("semanticscholar".to_owned(), "5c6e8a3b2d41f0e9a7b8c6d5e4f3a2b1c0d9e8f7".to_owned())
        ],
        "{found}"
    );
    assert_eq!(found["sourceErrors"], json!([]), "{found}");

    let wu = login(&f, WU, "crossref-wu").await;
    let input = json!({"source": "crossref", "externalId": "https://doi.org/10.1145/3696410.3714001", "authorPosition": 0});
    let (status, started) = f.post_as("/xrpc/pub.svc.claiming.startClaimFromExternal", Some(&wu), input).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    assert_eq!(started["claim"]["evidence"]["name"], 30, "{started}");
    let (_, imported) = f.get_as("/xrpc/pub.svc.import.get?source=crossref&externalId=doi:10.1145/3696410.3714001", &wu).await;
    assert_eq!(
        (imported["importedByPlugin"].as_str(), imported["doi"].as_str()),
        (Some("crossref-works"), Some("10.1145/3696410.3714001"))
    );
    let (_, exists) = f.get("/xrpc/pub.svc.import.exists?externalId=10.1145/3696410.3714001").await;
    assert_eq!(exists["exists"], true, "a DOI finds the Crossref import whichever source is asked: {exists}");

    let (status, bad) = f
        .post_as("/xrpc/pub.svc.claiming.startClaimFromExternal", Some(&wu), json!({"source": "semanticscholar", "externalId": "10.1/x"}))
        .await;
    assert_eq!((status, bad["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{bad}");

    let (_, s2_paper) =
        f.get_as("/xrpc/pub.svc.import.get?source=semanticscholar&externalId=5c6e8a3b2d41f0e9a7b8c6d5e4f3a2b1c0d9e8f7", &wu).await;
    assert_eq!(s2_paper["error"], "NotFound", "not imported before it is claimed: {s2_paper}");
    crossref_server.set_fault(sources::fixtures::Fault::Down);
    let (_, down) = f.get("/xrpc/pub.svc.claiming.searchEprints?query=literature+graph+semantic&sources=crossref,semanticscholar").await;
    assert_eq!(down["sourceErrors"][0]["source"], "crossref", "{down}");
    assert_eq!(down["sourceErrors"].as_array().map(Vec::len), Some(1), "{down}");
    assert_eq!(down["eprints"][0]["externalId"], "649def34f8be52c8b66281af98ae884c09aef38b", "{down}");
}
