//! `pub.svc.resolve.byExternalId` in process: an eprint by its DOI and its arXiv id in any
//! common form (and not by an identifier only its words resemble), an account by the ORCID
//! iD it proved (not by one its profile only states), a knowledge-graph node by its ROR id
//! (the shared graph's before a personal copy), nothing for what svc does not hold.

use crate::support;

use axum::http::StatusCode;
use event_schema::{AccessAction, AccessChange, NewEvent, Payload, Source};
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";

fn access(did: &str, change: AccessAction) -> NewEvent {
    NewEvent {
        key: did.into(),
        source: Source::Command { nsid: "/v1/auth/orcid/callback".into(), caller: did.into(), host: "https://svc.example".into() },
        payload: Payload::Access(AccessChange { subject: did.into(), actor: did.into(), change }),
    }
}

fn ror_node(label: &str) -> Value {
    json!({"id": "brown", "kind": "object", "subkind": "institution", "label": label, "status": "established",
           "externalIds": [{"system": "ror", "identifier": "05gq02987", "label": "Brown University"}],
           "createdAt": "2025-01-01T00:00:00Z"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_identifiers_resolve_to_what_svc_holds() {
    let mut f = Fixture::new();
    let mut paper = submission("Sparse Transformers", ALICE, "2024-05-01T00:00:00Z");
    paper["doi"] = json!("10.1234/ABC.5");
    paper["externalIds"] = json!({"arxivId": "2401.00001v2"});
    let mut other = submission("Dense 10.1234 abc 5 Transformers", BOB, "2024-05-02T00:00:00Z");
    other["doi"] = json!("10.9999/other");
    f.apply(vec![
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", paper),
        create(BOB, "pub.svc.eprint.submission", "p2", "3l0000000000a", other),
        create(ALICE, "pub.svc.actor.profile", "self", "3l0000000000a", json!({"displayName": "Alice A.", "orcid": "0000-0002-1825-0097"})),
        create(BOB, "pub.svc.actor.profile", "self", "3l0000000000a", json!({"displayName": "Bob B.", "orcid": "0000-0001-5109-3700"})),
        create(BOB, "pub.svc.graph.node", "brown", "3l0000000000a", ror_node("Brown (Bob's copy)")),
        create(GOVERNANCE_DID, "pub.svc.graph.node", "brown", "3l0000000000b", ror_node("Brown University")),
        // Alice proved her iD through ORCID; Bob's profile only states his.
        access(ALICE, AccessAction::OrcidVerificationStarted { state_hash: "aa".repeat(32), expires_at: i64::MAX }),
        access(ALICE, AccessAction::OrcidVerified { state_hash: "aa".repeat(32), orcid: "0000-0002-1825-0097".into(), name: None }),
    ]);
    let resolve = |system: &str, id: &str| format!("/xrpc/pub.svc.resolve.byExternalId?system={system}&identifier={}", enc(id));
    let found = |path: String| {
        let f = &f;
        async move {
            let (status, body) = f.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            body
        }
    };
    let alice_paper = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    for (system, id) in
        [("doi", "10.1234/abc.5"), ("doi", "https://doi.org/10.1234/ABC.5"), ("arxiv", "2401.00001"), ("arxiv", "arXiv:2401.00001v1")]
    {
        let got = found(resolve(system, id)).await;
        assert_eq!(
            got,
            json!({"found": true, "entityType": "eprint", "uri": alice_paper, "label": "Sparse Transformers",
                   "webPath": format!("/eprints/{}", enc(&alice_paper))}),
            "{system} {id}"
        );
    }
    // Bob's title holds the DOI's words, not the DOI.
    assert_eq!(found(resolve("doi", "10.1234/abc.6")).await, json!({"found": false}));
    assert_eq!(found(resolve("doi", "not a doi")).await, json!({"found": false}));

    let alice = found(resolve("orcid", "0000-0002-1825-0097")).await;
    assert_eq!(
        (alice["entityType"].as_str(), alice["uri"].as_str(), alice["label"].as_str()),
        (Some("author"), Some(ALICE), Some("Alice A."))
    );
    assert_eq!(found(resolve("orcid", "0000-0001-5109-3700")).await, json!({"found": false}), "stated, not proved");

    for id in ["05gq02987", "https://ror.org/05gq02987"] {
        let brown = found(resolve("ror", id)).await;
        assert_eq!(brown["uri"], format!("at://{GOVERNANCE_DID}/pub.svc.graph.node/brown"), "the shared graph's: {brown}");
        assert_eq!((brown["label"].as_str(), brown["webPath"].as_str()), (Some("Brown University"), Some("/graph/brown")));
    }
    assert_eq!(found(resolve("wikidata", "Q42")).await, json!({"found": false}));
    assert_eq!(f.get(&resolve("isni", "0000")).await.0, StatusCode::BAD_REQUEST, "a system the lexicon does not name");
    assert_eq!(f.get("/xrpc/pub.svc.resolve.byExternalId?system=doi").await.0, StatusCode::BAD_REQUEST);
}
