//! The scholarly layer against a real PDS, as its users would write it: reviews, a reply, an
//! annotation with a text selector, an endorsement, tags, a citation and a related work,
//! each written with `com.atproto.repo.createRecord` and seen through its operations; then
//! updates, deletes and a takedown. One test per backend, each with a PDS of its own: on the
//! embedded backend a replay then gives the same answers byte for byte; on the Kafka log and
//! the ScyllaDB store (the CQL test server), a second svc on the embedded backend following
//! the same PDS from the start answers the same.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sources::fixtures::{Fault, FixtureServer};
use tests::pds::{submission, Account, Pds};
use tests::{enc, Backend, Service};

const SERVICE_DID: &str = "did:web:svc.test";

/// Polls `path` until `check` accepts the answer; returns it and how long it took.
async fn until(svc: &Service, path: &str, what: &str, check: impl Fn(u16, &Value) -> bool) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        let (status, _, body) = match svc.get(path).await {
            Ok(answer) => answer,
            Err(e) => panic!("{what}: {e}\n{}", svc.log()),
        };
        if check(status, &body) {
            return (body, started.elapsed());
        }
        if started.elapsed() > Duration::from_secs(20) {
            let log = svc.log();
            let errors: Vec<&str> = log.lines().filter(|l| l.contains("ERROR")).take(5).collect();
            panic!("{what}: still {status} {body} after 20 s; first errors: {errors:#?}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// GET `path` with a bearer token; the JSON answer.
async fn get_as(svc: &Service, token: &str, path: &str) -> Value {
    reqwest::Client::new().get(format!("{}{path}", svc.base)).bearer_auth(token).send().await.unwrap().json().await.unwrap()
}

/// POST a use of `uri` to `pub.svc.metrics.<method>` as a client with `agent`, signed in
/// with `token` when given; the status.
async fn record_use(svc: &Service, method: &str, agent: &str, token: Option<&str>, body: Value) -> u16 {
    let mut request =
        reqwest::Client::new().post(format!("{}/xrpc/pub.svc.metrics.{method}", svc.base)).header("user-agent", agent).json(&body);
    if let Some(t) = token {
        request = request.bearer_auth(t);
    }
    request.send().await.unwrap().status().as_u16()
}

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const CHROME: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";

/// Readers use Alice's papers: Bob signed in (a token from his PDS), an anonymous browser,
/// a robot. Counted by the rules, ranked, and read back; the queries that pin the counts
/// (as of a fixed time, so a replay must give them byte for byte).
async fn usage(svc: &Service, pds: &Pds, bob: &Account, paper: &str, other: &str) -> Vec<String> {
    let token = pds.service_auth(bob, SERVICE_DID, "pub.svc.metrics.recordView", None).await.unwrap();
    assert_eq!(record_use(svc, "recordView", FIREFOX, Some(&token), json!({"uri": paper, "source": "search"})).await, 200);
    assert_eq!(record_use(svc, "recordView", CHROME, None, json!({"uri": paper})).await, 200);
    assert_eq!(record_use(svc, "recordView", CHROME, None, json!({"uri": paper})).await, 200);
    assert_eq!(record_use(svc, "recordView", "Googlebot/2.1 (+http://www.google.com/bot.html)", None, json!({"uri": paper})).await, 200);
    assert_eq!(record_use(svc, "recordDownload", CHROME, None, json!({"uri": paper, "format": "pdf"})).await, 200);
    assert_eq!(record_use(svc, "recordView", CHROME, None, json!({"uri": other})).await, 200);
    let missing = paper.replace("pub.svc.eprint.submission/", "pub.svc.eprint.submission/zz");
    assert_eq!(record_use(svc, "recordView", CHROME, None, json!({"uri": missing})).await, 404);
    // Uses answer once in the log; the counts follow.
    until(svc, &format!("/xrpc/pub.svc.metrics.getViewCount?uri={}", enc(other)), "the other paper's view", |s, b| {
        s == 200 && b["count"] == 1
    })
    .await;
    let now = format!("/xrpc/pub.svc.metrics.getMetrics?uri={}", enc(paper));
    until(svc, &now, "the counts", |s, b| s == 200 && b["views"] == 2 && b["downloads"] == 1 && b["robotRequests"] == 1).await;
    let at = enc(&chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
    let metrics = format!("/xrpc/pub.svc.metrics.getMetrics?uri={}&asOf={at}", enc(paper));
    let (_, _, m) = svc.get(&metrics).await.unwrap();
    assert_eq!(
        (&m["views"], &m["uniqueViews"], &m["downloads"], &m["robotRequests"], &m["doubleClicks"], &m["reviews"]),
        (&json!(2), &json!(2), &json!(1), &json!(1), &json!(1), &json!(2)),
        "{m}"
    );
    let (_, _, detail) = svc.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(paper))).await.unwrap();
    assert_eq!((&detail["metrics"]["views"], &detail["metrics"]["downloads"]), (&json!(2), &json!(1)), "{detail}");
    let trending = format!("/xrpc/pub.svc.metrics.getTrending?window=24h&asOf={at}");
    let (_, _, t) = svc.get(&trending).await.unwrap();
    assert_eq!((&t["trending"][0]["uri"], &t["trending"][1]["uri"]), (&json!(paper), &json!(other)), "{t}");
    vec![metrics, trending, format!("/xrpc/pub.svc.metrics.getTrending?window=7d&fieldUris=cs.LG&asOf={at}")]
}

fn rich(text: &str) -> Value {
    json!([{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}])
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn rkey(uri: &str) -> &str {
    uri.rsplit('/').next().unwrap()
}

/// The answers compared across a replay and across backends: every listing of the layer.
fn queries(paper: &str, other: &str, review: &str, annotation: &str, bob: &Account) -> Vec<String> {
    let (p, o) = (enc(paper), enc(other));
    vec![
        format!("/xrpc/pub.svc.review.listForEprint?eprintUri={p}"),
        format!("/xrpc/pub.svc.review.getThread?uri={}", enc(review)),
        format!("/xrpc/pub.svc.review.listForAuthor?reviewerDid={}", bob.did),
        format!("/xrpc/pub.svc.annotation.listForEprint?eprintUri={p}&includeEntityLinks=true"),
        format!("/xrpc/pub.svc.annotation.listForPage?eprintUri={p}&pageNumber=3"),
        format!("/xrpc/pub.svc.annotation.getThread?uri={}", enc(annotation)),
        format!("/xrpc/pub.svc.collection.getMarginAnnotations?eprintUri={p}"),
        format!("/xrpc/pub.svc.endorsement.getSummary?uri={p}"),
        format!("/xrpc/pub.svc.endorsement.listForEprint?uri={p}"),
        format!("/xrpc/pub.svc.tag.listForEprint?uri={p}"),
        "/xrpc/pub.svc.tag.getDetail?tag=graph-neural-networks".into(),
        format!("/xrpc/pub.svc.eprint.listCitations?uri={o}"),
        format!("/xrpc/pub.svc.eprint.listRelatedWorks?uri={o}"),
        format!("/xrpc/pub.svc.discovery.getCitations?uri={p}"),
        "/xrpc/pub.svc.author.searchAuthors?q=bo".into(),
        format!("/xrpc/pub.svc.author.getProfile?did={}", bob.did),
    ]
}

/// An answer without the times its records entered the log (another svc indexes later).
fn without_times(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(k, _)| *k != "indexedAt").map(|(k, v)| (k.clone(), without_times(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(without_times).collect()),
        other => other.clone(),
    }
}

async fn answers(svc: &Service, queries: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for q in queries {
        let (status, _, body) = svc.get(q).await.unwrap();
        assert_eq!(status, 200, "{q}: {body}");
        out.push(body);
    }
    out
}

/// A backend with the peers every svc of these tests follows: the PDS's firehose, its
/// PLC directory and handles; the governance repository `gov` on the PDS, which svc
/// publishes approved proposals to (a pass a second), `gov` being an svc admin too; the
/// arXiv fixture server papers are imported from; and at the registries fixture server,
/// ORCID's OAuth (svc being its client) and the code and data platforms.
fn following(pds: &Pds, gov: &Account, arxiv: &FixtureServer, registries: &FixtureServer, backend: Backend) -> Backend {
    let (client, secret) = sources::fixtures::ORCID_CLIENT;
    backend
        .with_env("SVC_OPENALEX_URL", &registries.url)
        .with_env("SVC_CROSSREF_URL", &format!("{}/crossref", registries.url))
        .with_env("SVC_SEMANTIC_SCHOLAR_URL", &registries.url)
        .with_env("SVC_GITHUB_URL", &registries.url)
        .with_env("SVC_GITLAB_URL", &registries.url)
        .with_env("SVC_ZENODO_URL", &registries.url)
        .with_env("SVC_SWH_URL", &registries.url)
        .with_env("SVC_ORCID_OAUTH_URL", &registries.url)
        .with_env("SVC_ORCID_CLIENT_ID", client)
        .with_env("SVC_ORCID_CLIENT_SECRET", secret)
        .with_env("SVC_ORCID_RETURN_URL", "https://app.example/")
        .with_env("SVC_ARXIV_URL", &arxiv.url)
        .with_env("SVC_ARXIV_PDF_URL", &arxiv.url)
        .with_env("SVC_ARXIV_INTERVAL_MS", "0")
        .with_env("SVC_ADMIN_DIDS", &gov.did)
        .with_env("SVC_FIREHOSE", &pds.ws_url())
        .with_env("SVC_PLC_URL", &pds.plc_url)
        .with_env("SVC_HANDLE_RESOLVER", &pds.url)
        .with_env("SVC_SERVICE_DID", SERVICE_DID)
        .with_env("SVC_GOVERNANCE_DID", &gov.did)
        .with_env("SVC_GOVERNANCE_PDS", &pds.url)
        .with_env("SVC_GOVERNANCE_PASSWORD", "password")
        .with_env("SVC_GOVERNANCE_PUBLISH_SECONDS", "1")
}

/// Governance through the PDS. Alice proposes a field; Bob votes reject, then changes his
/// mind (his newer vote counts, once), Carol approves, Dave abstains: consensus. svc writes
/// the node to its governance repository on the PDS, and it is served once it comes back
/// through the firehose. An edge proposal that would close a cycle of broader edges is
/// rejected whatever the votes. Carol is elevated to trusted editor. The queries the replay
/// and the other backend compare, and those only the replay does.
async fn governance(svc: &Service, pds: &Pds, gov: &Account, alice: &Account, bob: &Account) -> (Vec<String>, Vec<String>) {
    let carol = pds.create_account("carol").await.unwrap();
    let dave = pds.create_account("dave").await.unwrap();
    let proposal = json!({
        "proposalType": "create", "kind": "type", "subkind": "field",
        "proposedNode": {"label": "Quantum Machine Learning", "description": "Learning with quantum computers."},
        "rationale": "A growing field with its own venues.", "createdAt": now(),
    });
    let (proposal_uri, _) = pds.create_record(alice, "pub.svc.graph.nodeProposal", &proposal).await.unwrap();
    let get = format!("/xrpc/pub.svc.governance.getProposal?id={}", rkey(&proposal_uri));
    until(svc, &get, "the proposal", |s, b| s == 200 && b["status"] == "pending").await;
    let vote = |v: &str| json!({"proposalUri": proposal_uri, "vote": v, "createdAt": now()});
    pds.create_record(bob, "pub.svc.graph.vote", &vote("reject")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    pds.create_record(bob, "pub.svc.graph.vote", &vote("approve")).await.unwrap();
    pds.create_record(&carol, "pub.svc.graph.vote", &vote("approve")).await.unwrap();
    pds.create_record(&dave, "pub.svc.graph.vote", &vote("abstain")).await.unwrap();
    let published =
        |_: u16, b: &Value| b["nodeUri"].as_str().is_some_and(|u| u.starts_with(&format!("at://{}/pub.svc.graph.node/", gov.did)));
    let (decided, lag) =
        until(svc, &get, "the approved node, published and back through the firehose", |s, b| s == 200 && published(s, b)).await;
    println!("approved node: served {} ms after the deciding vote", lag.as_millis());
    assert_eq!(decided["status"], "approved", "{decided}");
    assert_eq!(
        decided["votes"],
        json!({"approve": 2, "reject": 0, "abstain": 1, "total": 3, "weightedApprove": 2, "weightedReject": 0}),
        "{decided}"
    );
    let node_uri = decided["nodeUri"].as_str().unwrap().to_owned();
    let get_node = format!("/xrpc/pub.svc.graph.getNode?id={}", enc(&node_uri));
    let (_, _, node) = svc.get(&get_node).await.unwrap();
    assert_eq!(
        (node["label"].as_str(), node["subkind"].as_str(), node["status"].as_str(), node["proposalUri"].as_str()),
        (Some("Quantum Machine Learning"), Some("field"), Some("established"), Some(proposal_uri.as_str())),
        "{node}"
    );
    let written = pds.list_records(&gov.did, "pub.svc.graph.node").await.unwrap();
    assert_eq!(written.len(), 1, "one node written for the proposal: {written:?}");
    let token = pds.service_auth(bob, SERVICE_DID, "pub.svc.governance.getUserVote", None).await.unwrap();
    let mine = get_as(svc, &token, &format!("/xrpc/pub.svc.governance.getUserVote?proposalId={}", enc(&proposal_uri))).await;
    assert_eq!(mine["vote"]["vote"], "approve", "{mine}");

    // The governance account files the new field under physics (its owner may write to it
    // too); an edge proposal putting physics under it would close a cycle.
    let physics_id = "0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0e01";
    let physics = format!("at://{}/pub.svc.graph.node/{physics_id}", gov.did);
    let node = json!({"id": physics_id, "slug": "physics", "kind": "type", "subkind": "field", "label": "Physics", "status": "established", "createdAt": now()});
    pds.put_record(gov, "pub.svc.graph.node", physics_id, &node).await.unwrap();
    let edge_id = "0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0e02";
    let edge = json!({"id": edge_id, "sourceUri": node_uri, "targetUri": physics, "relationSlug": "broader", "status": "established", "createdAt": now()});
    pds.put_record(gov, "pub.svc.graph.edge", edge_id, &edge).await.unwrap();
    let cyclic = json!({
        "proposalType": "create", "rationale": "Physics is a kind of QML.", "createdAt": now(),
        "proposedEdge": {"sourceUri": physics, "targetUri": node_uri, "relationSlug": "broader"},
    });
    let (cyclic_uri, _) = pds.create_record(alice, "pub.svc.graph.edgeProposal", &cyclic).await.unwrap();
    let get_cyclic = format!("/xrpc/pub.svc.governance.getProposal?id={}", rkey(&cyclic_uri));
    let (refused, _) = until(svc, &get_cyclic, "the cyclic edge proposal", |s, b| s == 200 && b["status"] == "rejected").await;
    assert!(refused["rejectionReason"].as_str().is_some_and(|r| r.contains("cycle")), "{refused}");
    let edges = pds.list_records(&gov.did, "pub.svc.graph.edge").await.unwrap();
    assert_eq!(edges.len(), 1, "the cyclic edge is not written: {edges:?}");

    // Carol asks to be a trusted editor (a new account: it waits); the governance account,
    // a governance administrator, approves, each with a token from the PDS.
    let token = pds.service_auth(&carol, SERVICE_DID, "pub.svc.governance.requestElevation", None).await.unwrap();
    let (status, asked) =
        svc.post("/xrpc/pub.svc.governance.requestElevation", Some(&token), &json!({"targetRole": "trusted-editor"})).await.unwrap();
    assert_eq!((status, asked["success"].as_bool()), (200, Some(true)), "{asked}");
    let token = pds.service_auth(&dave, SERVICE_DID, "pub.svc.governance.approveElevation", None).await.unwrap();
    let (status, _) =
        svc.post("/xrpc/pub.svc.governance.approveElevation", Some(&token), &json!({"requestId": asked["requestId"]})).await.unwrap();
    assert_eq!(status, 403, "Dave is no governance administrator");
    let token = pds.service_auth(gov, SERVICE_DID, "pub.svc.governance.approveElevation", None).await.unwrap();
    let (status, done) =
        svc.post("/xrpc/pub.svc.governance.approveElevation", Some(&token), &json!({"requestId": asked["requestId"]})).await.unwrap();
    assert_eq!(status, 200, "{done}");
    let token = pds.service_auth(&carol, SERVICE_DID, "pub.svc.governance.getEditorStatus", None).await.unwrap();
    let editor = get_as(svc, &token, "/xrpc/pub.svc.governance.getEditorStatus").await;
    assert_eq!((editor["role"].as_str(), editor["roleGrantedBy"].as_str()), (Some("trusted-editor"), Some(gov.did.as_str())), "{editor}");
    let votes = format!("/xrpc/pub.svc.governance.listVotes?proposalId={}", enc(&proposal_uri));
    let queries = vec![
        get,
        get_cyclic,
        get_node,
        "/xrpc/pub.svc.governance.listProposals".into(),
        format!("/xrpc/pub.svc.graph.getNode?id={}&includeEdges=true", enc(&physics)),
    ];
    // The votes name each voter's governance role, which commands in this svc's own log
    // set (Carol's elevation): compared across the replay, not with another svc.
    (queries, vec![votes])
}

/// What svc wrote to the governance repository: still the one node and the owner's edge
/// after a publishing pass or two of `svc` (whose log may or may not hold the marks).
/// Claiming through the real PDS. Alice imports a paper from the arXiv fixture server and
/// claims it; the admin approves; she writes the eprint to her repository on the PDS and
/// completes the claim with it once svc indexed it. Bob asks to be recognised as its listed
/// author and Alice approves. A paper whose claim was rejected is claimable again until
/// she dismisses it. A search of the sources answers with arXiv down, naming it. The
/// queries a replay compares.
async fn claiming(svc: &Service, pds: &Pds, gov: &Account, alice: &Account, bob: &Account, arxiv: &FixtureServer) -> Vec<String> {
    let token = |who: &Account, nsid: &'static str| {
        let (pds, who) = (pds, who.clone());
        async move { pds.service_auth(&who, SERVICE_DID, &format!("pub.svc.claiming.{nsid}"), None).await.unwrap() }
    };
    let input = json!({"source": "arxiv", "externalId": "arXiv:2509.21237v1", "authorPosition": 0});
    let (status, started) = svc
        .post("/xrpc/pub.svc.claiming.startClaimFromExternal", Some(&token(alice, "startClaimFromExternal").await), &input)
        .await
        .unwrap();
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["claim"]["status"], "pending");
    let claim = started["claim"]["id"].as_u64().unwrap();
    let (status, again) = svc
        .post(
            "/xrpc/pub.svc.claiming.startClaim",
            Some(&token(alice, "startClaim").await),
            &json!({"importId": started["claim"]["importId"]}),
        )
        .await
        .unwrap();
    assert_eq!((status, again["error"].as_str()), (409, Some("DuplicateClaim")), "{again}");
    let (status, approved) =
        svc.post("/xrpc/pub.svc.claiming.approveClaim", Some(&token(gov, "approveClaim").await), &json!({"claimId": claim})).await.unwrap();
    assert_eq!((status, approved["claim"]["status"].as_str()), (200, Some("approved")), "{approved}");

    let mut record = submission("Query-Centric Graph Retrieval Augmented Generation", alice, None);
    record["repositories"] = json!({"code": [{"url": "https://github.com/octocat/Hello-World", "platformSlug": "github"}]});
    record["doi"] = json!("10.48550/arXiv.2509.21237");
    let (mine, _) = pds.create_record(alice, "pub.svc.eprint.submission", &record).await.unwrap();
    until(svc, &format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&mine)), "her eprint", |s, _| s == 200).await;
    // Her code, as GitHub and the archive describe it (the platforms fixture stands in).
    let (status, _, integrations) = svc.get(&format!("/api/v1/eprints/{}/integrations", enc(&mine))).await.unwrap();
    assert_eq!(status, 200, "{integrations}");
    assert_eq!(
        (integrations["github"][0]["stars"].as_u64(), integrations["softwareHeritage"][0]["archived"].as_bool()),
        (Some(80), Some(true))
    );
    let input = json!({"claimId": claim, "canonicalUri": mine});
    let (status, done) =
        svc.post("/xrpc/pub.svc.claiming.completeClaim", Some(&token(alice, "completeClaim").await), &input).await.unwrap();
    assert_eq!((status, done["success"].as_bool()), (200, Some(true)), "{done}");
    let paper = "/xrpc/pub.svc.import.get?source=arxiv&externalId=2509.21237".to_owned();
    // An admin extracts her eprint's citations: OpenAlex (the registries fixture) knows its
    // DOI and two of the works it references.
    let nsid = "pub.svc.admin.triggerCitationExtraction";
    let admin = pds.service_auth(gov, SERVICE_DID, nsid, None).await.unwrap();
    let (status, started) = svc.post(&format!("/xrpc/{nsid}"), Some(&admin), &json!({"uri": mine})).await.unwrap();
    assert_eq!(status, 200, "{started}");
    let enrichment = format!("/xrpc/pub.svc.discovery.getEnrichment?uri={}", enc(&mine));
    let (enriched, _) = until(svc, &enrichment, "the enrichment", |s, b| s == 200 && b["available"] == true).await;
    assert_eq!(enriched["enrichment"]["citedWorks"].as_array().map(Vec::len), Some(2), "{enriched}");
    let extracted = format!("/xrpc/pub.svc.eprint.listCitations?uri={}&source=auto", enc(&mine));
    let (_, _, auto) = svc.get(&extracted).await.unwrap();
    assert_eq!(auto["total"], 2, "{auto}");
    let (_, _, imported) = svc.get(&paper).await.unwrap();
    assert_eq!((imported["claimStatus"].as_str(), imported["canonicalUri"].as_str()), (Some("claimed"), Some(mine.as_str())), "{imported}");
    // The paper's PDF, through svc (the fixture server stands in for arxiv.org).
    let pdf = reqwest::Client::new()
        .get(format!("{}/xrpc/pub.svc.claiming.fetchExternalPdf?source=arxiv&externalId=2509.21237", svc.base))
        .bearer_auth(token(alice, "fetchExternalPdf").await)
        .send()
        .await
        .unwrap();
    assert_eq!((pdf.status().as_u16(), pdf.headers()["content-type"].to_str().unwrap()), (200, "application/pdf"));
    assert_eq!(&pdf.bytes().await.unwrap()[..], sources::fixtures::ARXIV_PDF);

    // Alice proves her ORCID iD through ORCID (the registries fixture's OAuth stands in).
    let initiate = "pub.svc.author.initiateOrcidVerification";
    let (status, started) = svc
        .post(&format!("/xrpc/{initiate}"), Some(&pds.service_auth(alice, SERVICE_DID, initiate, None).await.unwrap()), &json!({}))
        .await
        .unwrap();
    assert_eq!(status, 200, "{started}");
    let state = started["authorizeUrl"].as_str().unwrap().rsplit_once("state=").unwrap().1.to_owned();
    let browser = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let callback = format!("{}/v1/auth/orcid/callback?code={}&state={state}", svc.base, sources::fixtures::ORCID_CODE);
    let back = browser.get(&callback).send().await.unwrap();
    assert_eq!(
        (back.status().as_u16(), back.headers()["location"].to_str().unwrap()),
        (303, "https://app.example/?orcidVerification=success")
    );
    let again = browser.get(&callback).send().await.unwrap();
    assert_eq!(again.headers()["location"].to_str().unwrap(), "https://app.example/?orcidVerification=error&reason=invalid_state");
    let her_profile = format!("/xrpc/pub.svc.author.getProfile?did={}", alice.did);
    let (_, _, profile) = svc.get(&her_profile).await.unwrap();
    assert_eq!(profile["profile"]["verifiedOrcid"]["orcid"], "0000-0002-1825-0097", "{profile}");
    let by_orcid = "/xrpc/pub.svc.resolve.byExternalId?system=orcid&identifier=0000-0002-1825-0097".to_owned();
    let (_, _, resolved) = svc.get(&by_orcid).await.unwrap();
    assert_eq!((resolved["entityType"].as_str(), resolved["uri"].as_str()), (Some("author"), Some(alice.did.as_str())), "{resolved}");

    // Bob asks Alice to recognise him as the author listed on her eprint; she approves.
    let ask = json!({"eprintUri": mine, "eprintOwnerDid": alice.did, "claimantName": "Bob B.", "authorIndex": 0,
                     "authorName": format!("Author {}", alice.handle)});
    let (status, asked) =
        svc.post("/xrpc/pub.svc.claiming.requestCoauthorship", Some(&token(bob, "requestCoauthorship").await), &ask).await.unwrap();
    assert_eq!(status, 200, "{asked}");
    let request = asked["request"]["id"].clone();
    let (status, _) = svc
        .post("/xrpc/pub.svc.claiming.approveCoauthor", Some(&token(bob, "approveCoauthor").await), &json!({"requestId": request}))
        .await
        .unwrap();
    assert_eq!(status, 403, "only the owner decides");
    let (status, decided) = svc
        .post("/xrpc/pub.svc.claiming.approveCoauthor", Some(&token(alice, "approveCoauthor").await), &json!({"requestId": request}))
        .await
        .unwrap();
    assert_eq!((status, decided["request"]["status"].as_str()), (200, Some("approved")), "{decided}");

    // A second paper, claimed by Bob and rejected, is claimable again; Alice dismisses it
    // and it stays out of what she is offered.
    let input = json!({"source": "arxiv", "externalId": "2604.24104"});
    let (status, bobs) =
        svc.post("/xrpc/pub.svc.claiming.startClaimFromExternal", Some(&token(bob, "startClaimFromExternal").await), &input).await.unwrap();
    assert_eq!(status, 200, "{bobs}");
    let input = json!({"claimId": bobs["claim"]["id"], "reason": "Not an author."});
    let (status, _) = svc.post("/xrpc/pub.svc.claiming.rejectClaim", Some(&token(gov, "rejectClaim").await), &input).await.unwrap();
    assert_eq!(status, 200);
    let claimable = |who: &Account| {
        let (svc, token) = (svc, token(who, "findClaimable"));
        async move { get_as(svc, &token.await, "/xrpc/pub.svc.claiming.findClaimable?q=graph").await }
    };
    assert_eq!(claimable(alice).await["eprints"][0]["externalId"], "2604.24104");
    let input = json!({"source": "arxiv", "externalId": "2604.24104"});
    let (status, _) =
        svc.post("/xrpc/pub.svc.claiming.dismissSuggestion", Some(&token(alice, "dismissSuggestion").await), &input).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(claimable(alice).await["eprints"], json!([]), "dismissed stays dismissed");
    assert_eq!(claimable(bob).await["eprints"][0]["externalId"], "2604.24104", "for her only");

    arxiv.set_fault(Fault::Down);
    let (_, _, searched) = svc.get("/xrpc/pub.svc.claiming.searchEprints?query=retrieval+augmented").await.unwrap();
    arxiv.set_fault(Fault::None);
    assert_eq!(searched["sourceErrors"][0]["source"], "arxiv", "{searched}");
    assert!(searched["eprints"].as_array().unwrap().iter().any(|e| e["uri"] == mine.as_str()), "svc's own results stand: {searched}");
    vec![
        paper,
        enrichment,
        extracted,
        her_profile,
        by_orcid,
        "/xrpc/pub.svc.import.get?source=arxiv&externalId=2604.24104".into(),
        "/xrpc/pub.svc.import.exists?externalId=2509.21237".into(),
        "/xrpc/pub.svc.claiming.autocomplete?query=query-centric+gra".into(),
    ]
}

async fn published_once(pds: &Pds, gov: &Account) {
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(pds.list_records(&gov.did, "pub.svc.graph.node").await.unwrap().len(), 2, "QML and physics");
    assert_eq!(pds.list_records(&gov.did, "pub.svc.graph.edge").await.unwrap().len(), 1);
}

/// What a scenario leaves: the svc that ran it (and its data directory), the queries the
/// tests compare, and their answers.
struct Ran {
    svc: Service,
    data: std::path::PathBuf,
    _dir: tempfile::TempDir,
    queries: Vec<String>,
    answers: Vec<Value>,
    /// Queries of the uses recorded through this svc (in its log only, not the PDS's).
    usage: Vec<String>,
}

/// Alice and Bob write the scholarly layer through the PDS, and a svc on `backend` follows.
async fn scenario(pds: &Pds, gov: &Account, arxiv: &FixtureServer, backend: &Backend) -> Ran {
    let alice = pds.create_account("alice").await.unwrap();
    let bob = pds.create_account("bob").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let svc = Service::start_with(&data, tests::free_port(), backend).await.unwrap();
    let mut lags = Vec::new();

    let (paper, _) =
        pds.create_record(&alice, "pub.svc.eprint.submission", &submission("Message Passing on Graphs", &alice, None)).await.unwrap();
    let (other, _) = pds.create_record(&alice, "pub.svc.eprint.submission", &submission("Graph Transformers", &alice, None)).await.unwrap();
    let p = enc(&paper);
    // The svc has just started and reads the PDS's history from its beginning: the lags
    // measured below are each write's own, not that first catch-up's.
    until(&svc, &format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&other)), "the first catch-up", |s, _| s == 200).await;

    // A review, and a reply from the author.
    let (review, _) = pds
        .create_record(&bob, "pub.svc.review.comment", &json!({"eprintUri": paper, "body": rich("Strong baselines."), "createdAt": now()}))
        .await
        .unwrap();
    let (body, lag) = until(&svc, &format!("/xrpc/pub.svc.review.listForEprint?eprintUri={p}"), "the review", |s, b| {
        s == 200 && b["total"] == 1 && b["reviews"][0]["author"]["handle"] == "bob.test"
    })
    .await;
    lags.push(("review", lag));
    assert_eq!(body["reviews"][0]["content"], "Strong baselines.");
    assert_eq!(body["reviews"][0]["author"]["handle"], "bob.test");
    let (reply, _) = pds
        .create_record(
            &alice,
            "pub.svc.review.comment",
            &json!({"eprintUri": paper, "body": rich("Thanks!"), "parentComment": review, "createdAt": now()}),
        )
        .await
        .unwrap();
    let (thread, lag) = until(&svc, &format!("/xrpc/pub.svc.review.getThread?uri={}", enc(&review)), "the reply", |s, b| {
        s == 200 && b["totalReplies"] == 1
    })
    .await;
    lags.push(("reply", lag));
    assert_eq!(thread["replies"][0]["uri"], reply.as_str());

    // A reply its author deletes keeps its place in the thread, without its text. (On a
    // thread of its own, left out of the answers compared with a svc that follows the PDS
    // from cursor 0 later: the PDS's history no longer holds a deleted record's blocks, so
    // that svc never sees the reply and has no placeholder for it.)
    let (note, _) = pds
        .create_record(&alice, "pub.svc.review.comment", &json!({"eprintUri": other, "body": rich("A note."), "createdAt": now()}))
        .await
        .unwrap();
    let note_thread = format!("/xrpc/pub.svc.review.getThread?uri={}", enc(&note));
    until(&svc, &note_thread, "the note", |s, _| s == 200).await;
    let (first, _) = pds
        .create_record(
            &alice,
            "pub.svc.review.comment",
            &json!({"eprintUri": other, "body": rich("Agreed."), "parentComment": note, "createdAt": now()}),
        )
        .await
        .unwrap();
    let (regret, _) = pds
        .create_record(
            &alice,
            "pub.svc.review.comment",
            &json!({"eprintUri": other, "body": rich("Regrettable words."), "parentComment": first, "createdAt": now()}),
        )
        .await
        .unwrap();
    until(&svc, &note_thread, "the replies", |s, b| s == 200 && b["totalReplies"] == 2).await;
    pds.delete_record(&alice, "pub.svc.review.comment", rkey(&regret)).await.unwrap();
    let (thread, _) =
        until(&svc, &note_thread, "the placeholder", |s, b| s == 200 && b["replies"][0]["replies"][0]["deleted"] == true).await;
    let placeholder = &thread["replies"][0]["replies"][0];
    assert_eq!(
        (&thread["totalReplies"], &placeholder["uri"], &placeholder["content"]),
        (&json!(2), &json!(regret), &json!("")),
        "{thread}"
    );
    assert!(!thread.to_string().contains("Regrettable"), "{thread}");

    // An annotation on page 3 (0-indexed 2 in the record) with a text selector.
    let selector = json!({"$type": "pub.svc.annotation.comment#textQuoteSelector", "type": "TextQuoteSelector", "exact": "over-smoothing", "prefix": "avoids "});
    let (annotation, _) = pds
        .create_record(
            &bob,
            "pub.svc.annotation.comment",
            &json!({
            "eprintUri": paper, "body": rich("Citation needed."), "motivationFallback": "questioning",
            "target": {"selector": selector, "refinedBy": {"type": "TextPositionSelector", "pageNumber": 2, "start": 40, "end": 54}},
            "createdAt": now()}),
        )
        .await
        .unwrap();
    let (page, lag) = until(&svc, &format!("/xrpc/pub.svc.annotation.listForPage?eprintUri={p}&pageNumber=3"), "the annotation", |s, b| {
        s == 200 && b["annotations"].as_array().is_some_and(|a| a.len() == 1)
    })
    .await;
    lags.push(("annotation", lag));
    assert_eq!(page["annotations"][0]["target"]["selector"]["exact"], "over-smoothing");

    // A Margin highlight of the paper's web page, written as margin.at writes it.
    let margin_target = json!({"source": format!("https://app.example/eprints/{p}"), "title": "Message Passing on Graphs",
                               "selector": {"type": "TextQuoteSelector", "exact": "message passing"}});
    pds.create_record(&bob, "at.margin.highlight", &json!({"target": margin_target, "color": "yellow", "createdAt": now()})).await.unwrap();
    let (margin, lag) =
        until(&svc, &format!("/xrpc/pub.svc.collection.getMarginAnnotations?eprintUri={p}"), "the Margin highlight", |s, b| {
            s == 200 && b["total"] == 1
        })
        .await;
    lags.push(("margin highlight", lag));
    assert_eq!((&margin["annotations"][0]["recordType"], &margin["annotations"][0]["color"]), (&json!("highlight"), &json!("yellow")));

    // An endorsement, two tags in two forms, a citation and a related work.
    pds.create_record(
        &bob,
        "pub.svc.review.endorsement",
        &json!({"eprintUri": paper, "contributions": ["methodological", "empirical"], "createdAt": now()}),
    )
    .await
    .unwrap();
    let (summary, lag) = until(&svc, &format!("/xrpc/pub.svc.endorsement.getSummary?uri={p}"), "the endorsement", |s, b| {
        s == 200 && b["totalEndorsements"] == 1
    })
    .await;
    lags.push(("endorsement", lag));
    assert_eq!(summary["byContribution"]["empirical"], 1);
    let (tag, _) = pds
        .create_record(&bob, "pub.svc.eprint.userTag", &json!({"eprintUri": paper, "tag": "Graph Neural Networks", "createdAt": now()}))
        .await
        .unwrap();
    pds.create_record(&alice, "pub.svc.eprint.userTag", &json!({"eprintUri": paper, "tag": "graph_neural_networks", "createdAt": now()}))
        .await
        .unwrap();
    let (tags, lag) = until(&svc, &format!("/xrpc/pub.svc.tag.listForEprint?uri={p}"), "the tags", |s, b| {
        s == 200 && b["tags"].as_array().is_some_and(|t| t.len() == 2)
    })
    .await;
    lags.push(("tag", lag));
    assert!(tags["tags"].as_array().unwrap().iter().all(|t| t["normalizedForm"] == "graph-neural-networks"));
    // Search counts the paper once under the tag, whichever forms its taggers wrote.
    let facet = "/xrpc/pub.svc.eprint.searchSubmissions?query=*&facets=tags&limit=1";
    until(&svc, facet, "the tags facet", |s, b| s == 200 && b["facets"]["tags"] == json!([{"value": "graph-neural-networks", "count": 1}]))
        .await;
    pds.create_record(&alice, "pub.svc.eprint.citation", &json!({
        "eprintUri": other, "citedWork": {"title": "Message Passing on Graphs", "svcUri": paper}, "citationType": "extends", "createdAt": now()}))
        .await
        .unwrap();
    let (_, lag) = until(&svc, &format!("/xrpc/pub.svc.eprint.listCitations?uri={}", enc(&other)), "the citation", |s, b| {
        s == 200 && b["total"] == 1 && b["citations"].as_array().is_some_and(|c| c.len() == 1)
    })
    .await;
    lags.push(("citation", lag));
    pds.create_record(
        &alice,
        "pub.svc.eprint.relatedWork",
        &json!({"eprintUri": other, "relatedUri": paper, "relationType": "extends", "createdAt": now()}),
    )
    .await
    .unwrap();
    // The record itself, not only its count: on the ScyllaDB store a listing's count and its
    // rows are separate writes, and a reader between them sees `total: 1` over an empty page
    // (seen three times on Kafka and CQL).
    let (related, lag) = until(&svc, &format!("/xrpc/pub.svc.eprint.listRelatedWorks?uri={}", enc(&other)), "the related work", |s, b| {
        s == 200 && b["total"] == 1 && b["relatedWorks"].as_array().is_some_and(|r| r.len() == 1)
    })
    .await;
    lags.push(("related work", lag));
    if related["relatedWorks"][0]["targetTitle"] != "Message Passing on Graphs" {
        // Say what the target looked like then.
        let (status, _, target) = svc.get(&format!("/xrpc/pub.svc.eprint.getSubmission?uri={p}")).await.unwrap();
        let (_, _, again) = svc.get(&format!("/xrpc/pub.svc.eprint.listRelatedWorks?uri={}", enc(&other))).await.unwrap();
        panic!("no target title in {related}; the target then: {status} {target}; the listing again: {again}");
    }
    let (graph, _) =
        until(&svc, &format!("/xrpc/pub.svc.discovery.getCitations?uri={p}&direction=cited"), "the citation graph", |s, _| s == 200).await;
    assert_eq!(graph["counts"]["cited"], 1, "{graph}");
    // Alice's other paper shares her as author: getSimilar finds it.
    let (status, _, similar) = svc.get(&format!("/xrpc/pub.svc.discovery.getSimilar?uri={p}&limit=10")).await.unwrap();
    let found = similar["related"].as_array().and_then(|r| r.iter().find(|e| e["uri"] == other.as_str()).cloned());
    let reasons = found.as_ref().and_then(|e| e["reasons"].as_array().cloned()).unwrap_or_default();
    assert!(status == 200 && reasons.contains(&json!("author")) && reasons.contains(&json!("citation")), "{similar}");
    // Bob engages with the paper: the other comes recommended (it shares the author and the
    // citation); once he dismisses it, it does not come back.
    let recommendations = "/xrpc/pub.svc.discovery.getRecommendations?limit=20";
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.discovery.recordInteraction", None).await.unwrap();
    let (status, body) =
        svc.post("/xrpc/pub.svc.discovery.recordInteraction", Some(&token), &json!({"eprintUri": paper, "type": "view"})).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.discovery.getRecommendations", None).await.unwrap();
    let before = get_as(&svc, &token, recommendations).await;
    let listed = |v: &Value| v["recommendations"].as_array().is_some_and(|r| r.iter().any(|e| e["uri"] == other.as_str()));
    assert!(listed(&before), "{before}");
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.discovery.recordInteraction", None).await.unwrap();
    let (status, body) =
        svc.post("/xrpc/pub.svc.discovery.recordInteraction", Some(&token), &json!({"eprintUri": other, "type": "dismiss"})).await.unwrap();
    assert_eq!(status, 200, "{body}");
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.discovery.getRecommendations", None).await.unwrap();
    let after = get_as(&svc, &token, recommendations).await;
    assert!(!listed(&after) && after["recommendations"].is_array(), "{after}");
    // Bob announces the profile write (activity.log), then makes it: the firehose confirms it.
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.activity.log", None).await.unwrap();
    let announced = json!({"collection": "pub.svc.actor.profile", "rkey": "self", "action": "update", "category": "profile_update"});
    let (status, logged) = svc.post("/xrpc/pub.svc.activity.log", Some(&token), &announced).await.unwrap();
    assert_eq!(status, 200, "{logged}");
    pds.put_record(&bob, "pub.svc.actor.profile", "self", &json!({"displayName": "Bob B.", "bio": "GNN reviewer"})).await.unwrap();
    let (profile, _) = until(&svc, &format!("/xrpc/pub.svc.author.getProfile?did={}", bob.did), "the profile", |s, b| {
        s == 200 && b["profile"]["displayName"] == "Bob B."
    })
    .await;
    assert_eq!(profile["metrics"]["reviewCount"], 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    let activity = loop {
        let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.activity.getFeed", None).await.unwrap();
        let feed = get_as(&svc, &token, "/xrpc/pub.svc.activity.getFeed").await;
        let first = feed["activities"][0].clone();
        if first["status"] == "confirmed" || Instant::now() > deadline {
            break first;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        (&activity["id"], &activity["status"], &activity["firehoseUri"]),
        (&logged["activityId"], &json!("confirmed"), &json!(format!("at://{}/pub.svc.actor.profile/self", bob.did))),
        "{activity}"
    );
    // Alice's personal graph: a collection and a topic, an edge between them (graph records
    // keyed by their UUID); her credential lists them, and getNode shows the edge.
    let (collection_id, topic_id) = ("0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0d01", "0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0d02");
    let node_uri = |id: &str| format!("at://{}/pub.svc.graph.node/{id}", alice.did);
    for (id, subkind, label) in [(collection_id, "collection", "Reading list"), (topic_id, "topic", "Message passing")] {
        let node = json!({"id": id, "kind": "object", "subkind": subkind, "label": label, "status": "established", "createdAt": now()});
        pds.put_record(&alice, "pub.svc.graph.node", id, &node).await.unwrap();
    }
    let edge_id = "0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0d03";
    let edge = json!({"id": edge_id, "sourceUri": node_uri(collection_id), "targetUri": node_uri(topic_id), "relationSlug": "contains",
                      "status": "established", "createdAt": now()});
    pds.put_record(&alice, "pub.svc.graph.edge", edge_id, &edge).await.unwrap();
    let graph_node = format!("/xrpc/pub.svc.graph.getNode?id={}&includeEdges=true", enc(&node_uri(collection_id)));
    let (node, lag) =
        until(&svc, &graph_node, "the personal graph", |s, b| s == 200 && b["edges"].as_array().is_some_and(|e| e.len() == 1)).await;
    lags.push(("graph edge", lag));
    assert_eq!((node["label"].as_str(), node["edges"][0]["targetUri"].as_str()), (Some("Reading list"), Some(node_uri(topic_id).as_str())));
    let token = pds.service_auth(&alice, SERVICE_DID, "pub.svc.graph.listPersonalNodes", None).await.unwrap();
    let mine = get_as(&svc, &token, "/xrpc/pub.svc.graph.listPersonalNodes?subkind=collection").await;
    assert_eq!(mine["nodes"].as_array().map(|n| n.len()), Some(1), "{mine}");
    // A subcollection holding her paper; she invites Bob to collaborate and he accepts.
    let (sub_id, sub_edge, item_edge) =
        ("0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0d04", "0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0d05", "0b7c3a52-6a1e-4c1f-9d4e-2f6a8b1c0d06");
    let sub = json!({"id": sub_id, "kind": "object", "subkind": "collection", "label": "GNN papers", "status": "established", "createdAt": now()});
    pds.put_record(&alice, "pub.svc.graph.node", sub_id, &sub).await.unwrap();
    for (id, source, target, relation) in [
        (sub_edge, node_uri(sub_id), node_uri(collection_id), "subcollection-of"),
        (item_edge, node_uri(sub_id), paper.clone(), "contains"),
    ] {
        let edge = json!({"id": id, "sourceUri": source, "targetUri": target, "relationSlug": relation, "status": "established", "createdAt": now()});
        pds.put_record(&alice, "pub.svc.graph.edge", id, &edge).await.unwrap();
    }
    let subject = json!({"uri": node_uri(collection_id), "cid": node["cid"]});
    let (invite, invite_cid) = pds
        .create_record(
            &alice,
            "pub.svc.collaboration.invite",
            &json!({"subject": subject, "invitee": bob.did, "role": "editor", "createdAt": now()}),
        )
        .await
        .unwrap();
    pds.create_record(
        &bob,
        "pub.svc.collaboration.inviteAcceptance",
        &json!({"invite": {"uri": invite, "cid": invite_cid}, "subject": subject, "createdAt": now()}),
    )
    .await
    .unwrap();
    let collection_get = format!("/xrpc/pub.svc.collection.get?uri={}", enc(&node_uri(collection_id)));
    let (held, _) =
        until(&svc, &collection_get, "the collection's items", |s, b| s == 200 && b["items"].as_array().is_some_and(|i| i.len() == 2))
            .await;
    assert_eq!(
        (held["subcollections"][0]["label"].as_str(), held["items"][1]["title"].as_str()),
        (Some("GNN papers"), Some("Message Passing on Graphs")),
        "{held}"
    );
    let collaborators = format!("/xrpc/pub.svc.collaboration.listCollaborators?subjectUri={}", enc(&node_uri(collection_id)));
    let (team, _) =
        until(&svc, &collaborators, "the collaborator", |s, b| s == 200 && b["collaborators"].as_array().is_some_and(|c| c.len() == 1))
            .await;
    assert_eq!(
        (team["collaborators"][0]["did"].as_str(), team["collaborators"][0]["role"].as_str()),
        (Some(bob.did.as_str()), Some("editor"))
    );
    // Author search (beyond the contract) finds him by his handle and by his profile's name.
    let (found, _) = until(&svc, "/xrpc/pub.svc.author.searchAuthors?q=b.%20bob", "the author search", |s, b| {
        s == 200 && b["authors"].as_array().is_some_and(|a| a.len() == 1)
    })
    .await;
    assert_eq!(found["authors"][0], json!({"did": bob.did, "handle": "bob.test", "displayName": "Bob B.", "eprintCount": 0}));

    // The caller's own endorsement needs a service-auth token from its PDS.
    let path = format!("/xrpc/pub.svc.endorsement.getUserEndorsement?uri={p}");
    let (status, _, _) = svc.get(&path).await.unwrap();
    assert_eq!(status, 401);
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.endorsement.getUserEndorsement", None).await.unwrap();
    let mine = get_as(&svc, &token, &path).await;
    assert_eq!(mine["endorser"]["did"], bob.did.as_str(), "{mine}");
    // Alice is notified of the review and the endorsement on her paper, not of her own reply.
    let token = pds.service_auth(&alice, SERVICE_DID, "pub.svc.notification.listReviewsOnMyPapers", None).await.unwrap();
    let notes: Value = get_as(&svc, &token, "/xrpc/pub.svc.notification.listReviewsOnMyPapers").await;
    assert_eq!(notes["notifications"].as_array().map(Vec::len), Some(1), "{notes}");
    assert_eq!(notes["notifications"][0]["reviewer"]["did"], bob.did.as_str());
    let token = pds.service_auth(&alice, SERVICE_DID, "pub.svc.notification.listEndorsementsOnMyPapers", None).await.unwrap();
    let notes: Value = get_as(&svc, &token, "/xrpc/pub.svc.notification.listEndorsementsOnMyPapers").await;
    assert_eq!(notes["notifications"].as_array().map(Vec::len), Some(1), "{notes}");
    assert_eq!(notes["notifications"][0]["endorser"]["did"], bob.did.as_str());
    assert_eq!(notes["notifications"][0]["contributions"], json!(["methodological", "empirical"]));
    assert_eq!((&notes["notifications"][0]["isRead"], &notes["unreadCount"]), (&json!(false), &json!(1)), "{notes}");

    // Alice marks them seen, with a token her PDS signed for updateSeen.
    let token = pds.service_auth(&alice, SERVICE_DID, "pub.svc.notification.getUnreadCount", None).await.unwrap();
    let unread = get_as(&svc, &token, "/xrpc/pub.svc.notification.getUnreadCount").await;
    assert_eq!(unread, json!({"count": 2, "reviews": 1, "endorsements": 1}), "{unread}");
    let token = pds.service_auth(&alice, SERVICE_DID, "pub.svc.notification.updateSeen", None).await.unwrap();
    let (status, seen) = svc.post("/xrpc/pub.svc.notification.updateSeen", Some(&token), &json!({"seenAt": now()})).await.unwrap();
    assert_eq!((status, &seen["count"]), (200, &json!(0)), "{seen}");
    let token = pds.service_auth(&alice, SERVICE_DID, "pub.svc.notification.listReviewsOnMyPapers", None).await.unwrap();
    let notes: Value = get_as(&svc, &token, "/xrpc/pub.svc.notification.listReviewsOnMyPapers").await;
    assert_eq!((&notes["notifications"][0]["isRead"], &notes["unreadCount"]), (&json!(true), &json!(0)), "{notes}");

    // A backlink reported by a verified caller (a command event), then withdrawn.
    let post = format!("at://{}/app.bsky.feed.post/3lbacklink2aa", bob.did);
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.backlink.create", None).await.unwrap();
    let input = json!({"sourceUri": post, "sourceType": "bluesky.post", "targetUri": paper, "context": "worth a read"});
    let (status, made) = svc.post("/xrpc/pub.svc.backlink.create", Some(&token), &input).await.unwrap();
    assert_eq!(status, 200, "{made}");
    assert_eq!((made["sourceUri"].as_str(), made["deleted"].as_bool()), (Some(post.as_str()), Some(false)));
    let (_, _, counts) = svc.get(&format!("/xrpc/pub.svc.backlink.getCounts?targetUri={p}")).await.unwrap();
    assert_eq!((counts["blueskyPosts"].as_u64(), counts["total"].as_u64()), (Some(1), Some(1)), "{counts}");
    let (status, _) = svc.post("/xrpc/pub.svc.backlink.create", Some(&token), &input).await.unwrap();
    assert_eq!(status, 401, "a token is used once");
    let token = pds.service_auth(&bob, SERVICE_DID, "pub.svc.backlink.delete", None).await.unwrap();
    let (status, done) = svc.post("/xrpc/pub.svc.backlink.delete", Some(&token), &json!({"sourceUri": post})).await.unwrap();
    assert_eq!((status, done["success"].as_bool()), (200, Some(true)), "{done}");
    let (_, _, counts) = svc.get(&format!("/xrpc/pub.svc.backlink.getCounts?targetUri={p}")).await.unwrap();
    assert_eq!(counts["total"], 0, "{counts}");

    // An update and a delete follow.
    pds.put_record(
        &bob,
        "pub.svc.review.comment",
        rkey(&review),
        &json!({"eprintUri": paper, "body": rich("Strong baselines; see Table 2."), "createdAt": now()}),
    )
    .await
    .unwrap();
    until(&svc, &format!("/xrpc/pub.svc.review.listForEprint?eprintUri={p}"), "the updated review", |_, b| {
        b["reviews"].as_array().is_some_and(|r| r.iter().any(|r| r["content"] == "Strong baselines; see Table 2."))
    })
    .await;
    pds.delete_record(&bob, "pub.svc.eprint.userTag", rkey(&tag)).await.unwrap();
    until(&svc, &format!("/xrpc/pub.svc.tag.listForEprint?uri={p}"), "the deleted tag", |_, b| {
        b["tags"].as_array().is_some_and(|t| t.len() == 1)
    })
    .await;

    // A takedown hides everything Bob wrote; lifting it shows it again.
    pds.set_takedown(&bob.did, true).await.unwrap();
    until(&svc, &format!("/xrpc/pub.svc.review.listForEprint?eprintUri={p}"), "the takedown", |_, b| {
        b["reviews"].as_array().is_some_and(|r| r.iter().all(|r| r["author"]["did"] != bob.did.as_str()))
    })
    .await;
    pds.set_takedown(&bob.did, false).await.unwrap();
    until(&svc, &format!("/xrpc/pub.svc.review.listForEprint?eprintUri={p}"), "the lifted takedown", |_, b| {
        b["reviews"].as_array().is_some_and(|r| r.iter().any(|r| r["author"]["did"] == bob.did.as_str()))
    })
    .await;
    for (what, lag) in &lags {
        println!("{what}: visible {} ms after createRecord answered", lag.as_millis());
        assert!(*lag < Duration::from_secs(5), "{what} took {lag:?}");
    }

    let (governed, own) = governance(&svc, pds, gov, &alice, &bob).await;
    let mut usage = usage(&svc, pds, &bob, &paper, &other).await;
    usage.extend(own);
    usage.extend(claiming(&svc, pds, gov, &alice, &bob, arxiv).await);
    let mut queries = queries(&paper, &other, &review, &annotation, &bob);
    queries.splice(0..0, governed);
    // (The last query is the one the embedded comparison waits on.)
    for q in [graph_node, collection_get, collaborators] {
        queries.insert(queries.len() - 1, q);
    }
    let answers = answers(&svc, &queries).await;
    Ran { svc, data, _dir: dir, queries, answers, usage }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scholarly_layer_from_a_real_pds_on_the_embedded_backend() {
    let _serial = tests::serial().await;
    let pds = Pds::start().unwrap();
    let gov = pds.create_account("governance").await.unwrap();
    let arxiv = FixtureServer::arxiv().await;
    let registries = FixtureServer::registries().await;
    let embedded = following(&pds, &gov, &arxiv, &registries, Backend::embedded());
    let Ran { svc, data, _dir, mut queries, answers: mut before, usage } = scenario(&pds, &gov, &arxiv, &embedded).await;
    let calls = (arxiv.calls(), registries.calls());
    before.extend(answers(&svc, &usage).await);
    queries.extend(usage);

    // A replay gives the same answers, byte for byte.
    svc.stop().unwrap();
    tests::svc(&["replay", "--data-dir", data.to_str().unwrap()]).unwrap();
    let svc = Service::start_with(&data, tests::free_port(), &embedded).await.unwrap();
    svc.wait_caught_up().await.unwrap();
    let after = answers(&svc, &queries).await;
    for ((q, a), b) in queries.iter().zip(&before).zip(&after) {
        assert_eq!(a.to_string(), b.to_string(), "{q} changed across the replay");
    }
    assert_eq!(
        (arxiv.calls(), registries.calls()),
        calls,
        "the replay rebuilt the import, the claim and the enrichment without calling arXiv or OpenAlex"
    );
    // The replayed log marks the proposal published: svc writes nothing again.
    published_once(&pds, &gov).await;
    svc.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_scholarly_layer_from_a_real_pds_on_kafka_and_cql() {
    let _serial = tests::serial().await;
    let pds = Pds::start().unwrap();
    // (The backend owns the broker and the CQL server: they live as long as the service.)
    let gov = pds.create_account("governance").await.unwrap();
    let arxiv = FixtureServer::arxiv().await;
    let registries = FixtureServer::registries().await;
    let kafka = following(&pds, &gov, &arxiv, &registries, Backend::kafka_scylla());
    let Ran { svc, queries, answers: on_kafka, .. } = scenario(&pds, &gov, &arxiv, &kafka).await;
    svc.stop().unwrap();

    // A svc on the embedded backend, following the same PDS from cursor 0, answers the same.
    let other_dir = tempfile::tempdir().unwrap();
    let embedded = Service::start_with(
        &other_dir.path().join("data"),
        tests::free_port(),
        &following(&pds, &gov, &arxiv, &registries, Backend::embedded()),
    )
    .await
    .unwrap();
    let last = queries.last().unwrap().clone();
    until(&embedded, &last, "the embedded svc catching up", |s, b| s == 200 && b["profile"]["displayName"] == "Bob B.").await;
    until(&embedded, &queries[0], "the approved proposal on the embedded svc", |_, b| b["status"] == "approved").await;
    let tags = queries.iter().find(|q| q.contains("tag.listForEprint")).unwrap();
    until(&embedded, tags, "the deleted tag on the embedded svc", |_, b| b["tags"].as_array().is_some_and(|t| t.len() == 1)).await;
    // The last record is in the store; the search indexes answer once they have committed
    // past it (a profile is served from its row before the index of users holds it).
    embedded.wait_caught_up().await.unwrap();
    let on_embedded = answers(&embedded, &queries).await;
    for ((q, a), b) in queries.iter().zip(&on_kafka).zip(&on_embedded) {
        assert_eq!(without_times(a), without_times(b), "{q} differs between Kafka + CQL and the embedded backend");
    }
    // Its log holds no mark of the approved proposal: it finds the node already written
    // (it names the proposal) and marks it, writing nothing.
    published_once(&pds, &gov).await;
    embedded.stop().unwrap();
}
