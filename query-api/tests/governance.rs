//! `pub.svc.governance.*` in process: proposals from users' repositories, votes on them, and
//! each proposal's status tallied from its indexed votes by the consensus rule (three voters
//! at least; approved at 67 % approvals, rejected under 33 %; a voter's newest vote counts
//! once); a node the governance repository wrote for a proposal is the proposal's node.

mod support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";
const CAROL: &str = "did:plc:carol000000000000000000";
const DAVE: &str = "did:plc:dave0000000000000000000";
const ERIN: &str = "did:plc:erin0000000000000000000";

fn proposal_uri(did: &str, rkey: &str, edge: bool) -> String {
    format!("at://{did}/pub.svc.graph.{}/{rkey}", if edge { "edgeProposal" } else { "nodeProposal" })
}

fn vote(voter: &str, rkey: &str, proposal: &str, value: &str, at: &str) -> event_schema::NewEvent {
    create(voter, "pub.svc.graph.vote", rkey, "3l0000000000a", json!({"proposalUri": proposal, "vote": value, "createdAt": at}))
}

async fn ok(f: &Fixture, path: &str) -> Value {
    let (status, body) = f.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

fn statuses(list: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = list["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap().to_owned(), p["status"].as_str().unwrap().to_owned()))
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proposals_are_tallied_from_their_votes_by_the_rule() {
    let mut f = Fixture::new();
    let field = "at://did:plc:governance22222222222222/pub.svc.graph.node/cs-lg";
    let (p1, p2, p3) = (proposal_uri(ALICE, "p1", false), proposal_uri(BOB, "p2", false), proposal_uri(CAROL, "p3", true));
    let t = |s: u32| format!("2025-03-01T00:00:{s:02}Z");
    f.apply(vec![
        create(ALICE, "pub.svc.graph.nodeProposal", "p1", "3l0000000000a", json!({
            "proposalType": "create", "kind": "type", "subkind": "field",
            "proposedNode": {"label": "Quantum Machine Learning"}, "rationale": "A growing field.", "createdAt": t(1)})),
        create(BOB, "pub.svc.graph.nodeProposal", "p2", "3l0000000000a", json!({
            "proposalType": "deprecate", "kind": "type", "subkind": "field", "targetUri": field, "rationale": "Merged.", "createdAt": t(2)})),
        create(CAROL, "pub.svc.graph.edgeProposal", "p3", "3l0000000000a", json!({
            "proposalType": "create", "rationale": "Related.", "createdAt": t(3),
            "proposedEdge": {"sourceUri": field, "targetUri": field.replace("cs-lg", "stat-ml"), "relationSlug": "related"}})),
        // p1: Bob rejects, then approves (his newest counts), Carol approves, Dave abstains.
        vote(BOB, "v1", &p1, "reject", &t(10)),
        vote(BOB, "v2", &p1, "approve", &t(11)),
        vote(CAROL, "v3", &p1, "approve", &t(12)),
        vote(DAVE, "v4", &p1, "abstain", &t(13)),
        vote(ERIN, "v5", &p1, "maybe", &t(14)),
        // p2: one approval of four decided votes (25 %): rejected.
        vote(ALICE, "v6", &p2, "reject", &t(20)),
        vote(CAROL, "v7", &p2, "reject", &t(21)),
        vote(DAVE, "v8", &p2, "approve", &t(22)),
        vote(ERIN, "v9", &p2, "reject", &t(23)),
        // The shared graph holds cs-lg broader cs; a proposal of cs broader cs-lg would close
        // a cycle: rejected with the reason, whatever the votes. One of stat-ml broader cs
        // closes none.
        create(GOVERNANCE_DID, "pub.svc.graph.edge", "e1", "3l0000000000a", json!({
            "id": "e1", "sourceUri": field, "targetUri": field.replace("cs-lg", "cs"), "relationSlug": "broader",
            "status": "established", "createdAt": t(4)})),
        create(CAROL, "pub.svc.graph.edgeProposal", "p4", "3l0000000000a", json!({
            "proposalType": "create", "rationale": "Upside down.", "createdAt": t(5),
            "proposedEdge": {"sourceUri": field.replace("cs-lg", "cs"), "targetUri": field, "relationSlug": "broader"}})),
        create(CAROL, "pub.svc.graph.edgeProposal", "p5", "3l0000000000a", json!({
            "proposalType": "create", "rationale": "Fine.", "createdAt": t(6),
            "proposedEdge": {"sourceUri": field.replace("cs-lg", "stat-ml"), "targetUri": field.replace("cs-lg", "cs"), "relationSlug": "broader"}})),
        vote(ALICE, "v10", &proposal_uri(CAROL, "p4", true), "approve", &t(24)),
        // The governance repository writes the approved node, naming the proposal.
        create(GOVERNANCE_DID, "pub.svc.graph.node", "qml", "3l0000000000a", json!({
            "id": "qml", "kind": "type", "subkind": "field", "label": "Quantum Machine Learning", "status": "established",
            "proposalUri": p1, "createdAt": t(30)})),
    ]);

    let all = ok(&f, "/xrpc/pub.svc.governance.listProposals").await;
    assert_eq!(all["total"], 5);
    let expected: Vec<(String, String)> =
        [("p1", "approved"), ("p2", "rejected"), ("p3", "pending"), ("p4", "rejected"), ("p5", "pending")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
    assert_eq!(statuses(&all), expected, "{all}");
    let pending = ok(&f, "/xrpc/pub.svc.governance.listProposals?status=pending&limit=1").await;
    assert_eq!((pending["total"].as_u64(), pending["hasMore"].as_bool()), (Some(2), Some(true)), "{pending}");
    let rest =
        ok(&f, &format!("/xrpc/pub.svc.governance.listProposals?status=pending&limit=1&cursor={}", pending["cursor"].as_str().unwrap()))
            .await;
    let mut both = statuses(&pending);
    both.extend(statuses(&rest));
    both.sort();
    assert_eq!(both, [("p3".to_owned(), "pending".to_owned()), ("p5".to_owned(), "pending".to_owned())]);
    assert_eq!(ok(&f, "/xrpc/pub.svc.governance.getPendingCount").await["count"], 2);
    assert_eq!(ok(&f, "/xrpc/pub.svc.governance.getPendingCount?kind=type").await["count"], 0, "p3 and p5 are edge proposals");
    let cycle = ok(&f, "/xrpc/pub.svc.governance.getProposal?id=p4").await;
    let reason = cycle["rejectionReason"].as_str().unwrap_or_default();
    assert!(reason.contains("cycle") && reason.contains(field), "{cycle}");
    let deprecations = ok(&f, "/xrpc/pub.svc.governance.listProposals?type=deprecate").await;
    assert_eq!(statuses(&deprecations), [("p2".to_owned(), "rejected".to_owned())]);
    let about = ok(&f, &format!("/xrpc/pub.svc.governance.listProposals?nodeUri={}", enc(field))).await;
    assert_eq!(about["total"], 1);
    let by_bob = ok(&f, &format!("/xrpc/pub.svc.governance.listProposals?proposedBy={BOB}")).await;
    assert_eq!(statuses(&by_bob), [("p2".to_owned(), "rejected".to_owned())]);
    let by_carol_about = ok(&f, &format!("/xrpc/pub.svc.governance.listProposals?proposedBy={CAROL}&nodeUri={}", enc(field))).await;
    assert_eq!(by_carol_about["total"], 0, "Carol's proposals are about edges, not the node: {by_carol_about}");

    // One proposal, by record key and by URI (and the reference's parameter name).
    let one = ok(&f, "/xrpc/pub.svc.governance.getProposal?id=p1").await;
    assert_eq!(one["votes"], json!({"approve": 2, "reject": 0, "abstain": 1, "total": 3}), "{one}");
    assert_eq!(
        (one["status"].as_str(), one["consensus"]["minVotes"].as_u64(), one["consensus"]["reached"].as_bool()),
        (Some("approved"), Some(3), Some(true))
    );
    assert_eq!(one["nodeUri"], json!(format!("at://{GOVERNANCE_DID}/pub.svc.graph.node/qml")), "the node made from it");
    assert_eq!((one["label"].as_str(), one["proposedBy"].as_str()), (Some("Quantum Machine Learning"), Some(ALICE)));
    assert_eq!(ok(&f, &format!("/xrpc/pub.svc.governance.getProposal?proposalId={}", enc(&p2))).await["nodeUri"], json!(field));
    let edge = ok(&f, &format!("/xrpc/pub.svc.governance.getProposal?id={}", enc(&p3))).await;
    assert_eq!((edge["proposalKind"].as_str(), edge["votes"]["total"].as_u64()), (Some("edge"), Some(0)));

    // Votes: every record, the counted ones marked; a user's newest.
    let votes = ok(&f, "/xrpc/pub.svc.governance.listVotes?proposalId=p1").await;
    let counted: Vec<(&str, bool)> =
        votes["votes"].as_array().unwrap().iter().map(|v| (v["vote"].as_str().unwrap(), v["counted"].as_bool().unwrap())).collect();
    assert_eq!(
        counted,
        [("abstain", true), ("approve", true), ("approve", true), ("reject", false)],
        "the invalid vote is not indexed: {votes}"
    );
    f.live();
    let token = login(&f, BOB, "gov-1").await;
    let (status, mine) = f.get_as("/xrpc/pub.svc.governance.getUserVote?proposalId=p1", &token).await;
    assert_eq!((status, mine["vote"]["vote"].as_str()), (StatusCode::OK, Some("approve")), "{mine}");
    let (_, dave) = f.get_as(&format!("/xrpc/pub.svc.governance.getUserVote?proposalId=p1&userDid={DAVE}"), &token).await;
    assert_eq!(dave["vote"]["vote"], "abstain");
    let (status, _) = f.get_as("/xrpc/pub.svc.governance.getUserVote?proposalId=p3", &token).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "Bob has not voted on p3");
    let (status, body) = f.get("/xrpc/pub.svc.governance.getUserVote?proposalId=p1").await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")));

    // Bad input and unknown proposals.
    for bad in [
        "/xrpc/pub.svc.governance.listProposals?status=bogus",
        "/xrpc/pub.svc.governance.listProposals?proposedBy=nobody",
        "/xrpc/pub.svc.governance.getProposal",
        "/xrpc/pub.svc.governance.listVotes",
        "/xrpc/pub.svc.governance.listProposals?limit=0",
    ] {
        let (status, body) = f.get(bad).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{bad}: {body}");
    }
    for missing in ["/xrpc/pub.svc.governance.getProposal?id=nope", "/xrpc/pub.svc.governance.listVotes?proposalId=nope"] {
        let (status, body) = f.get(missing).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")), "{missing}: {body}");
    }
}
