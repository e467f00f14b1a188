//! `pub.svc.governance.*` in process: proposals from users' repositories, votes on them, and
//! each proposal's status tallied from its indexed votes by the consensus rule (three voters
//! at least; approved at 67 % approvals, rejected under 33 %; a voter's newest vote counts
//! once); a node the governance repository wrote for a proposal is the proposal's node.

use crate::support;

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
    assert_eq!(
        one["votes"],
        json!({"approve": 2, "reject": 0, "abstain": 1, "total": 3, "weightedApprove": 2, "weightedReject": 0}),
        "{one}"
    );
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

const ADMIN: &str = "did:plc:govadmin000000000000000";

/// POSTs `body` to the governance method `method` with `token`.
async fn call(f: &Fixture, method: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    f.post_as(&format!("/xrpc/pub.svc.governance.{method}"), token, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_roles_are_requested_decided_delegated_and_revoked() {
    let mut f = Fixture::new();
    let field = format!("at://{GOVERNANCE_DID}/pub.svc.graph.node/cs-lg");
    let update = |did: &str, rkey: &str| {
        create(
            did,
            "pub.svc.graph.nodeProposal",
            rkey,
            "3l0000000000a",
            json!({
            "proposalType": "update", "kind": "type", "targetUri": field, "proposedNode": {"label": "ML"},
            "rationale": "Shorter.", "createdAt": "2025-03-01T00:00:00Z"}),
        )
    };
    f.apply(vec![
        create(BOB, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Attention", BOB, "2025-01-01T00:00:00Z")),
        create(CAROL, "pub.svc.eprint.submission", "p2", "3l0000000000a", submission("Planning", CAROL, "2025-01-01T00:00:00Z")),
        update(CAROL, "u1"),
        update(BOB, "u2"),
    ]);
    f.live();
    query_api::xrpc::governance::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    query_api::xrpc::governance::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    let (admin, bob, carol) = (login(&f, ADMIN, "g-admin").await, login(&f, BOB, "g-bob").await, login(&f, CAROL, "g-carol").await);

    // A community member's proposal to change the shared graph is rejected, with the reason.
    assert_eq!(ok(&f, "/xrpc/pub.svc.governance.getProposal?id=u2").await["status"], "rejected");
    let refused = ok(&f, "/xrpc/pub.svc.governance.getProposal?id=u1").await;
    assert_eq!(refused["status"], "rejected");
    assert!(refused["rejectionReason"].as_str().is_some_and(|r| r.contains("trusted-editor")), "{refused}");

    // Bob asks to be a trusted editor: the rules do not hold (a new account), so it waits.
    let (status, asked) = call(&f, "requestElevation", Some(&bob), json!({"targetRole": "trusted-editor"})).await;
    assert_eq!((status, asked["success"].as_bool()), (StatusCode::OK, Some(true)), "{asked}");
    assert!(asked["message"].as_str().is_some_and(|m| m.contains("accountAge") && m.contains("reputation")), "{asked}");
    let request = asked["requestId"].as_str().unwrap().to_owned();
    let (status, again) = call(&f, "requestElevation", Some(&bob), json!({"targetRole": "trusted-editor"})).await;
    assert_eq!((status, again["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "one pending request: {again}");
    let (status, e) = call(&f, "requestElevation", Some(&bob), json!({"targetRole": "administrator"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");

    // Only a governance administrator decides, and lists the requests.
    let (status, e) = call(&f, "approveElevation", Some(&bob), json!({"requestId": request})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::FORBIDDEN, Some("Unauthorized")), "{e}");
    let (status, e) = f.get_as("/xrpc/pub.svc.governance.listElevationRequests", &bob).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    let (_, pending) = f.get_as("/xrpc/pub.svc.governance.listElevationRequests", &admin).await;
    assert_eq!((pending["total"].as_u64(), pending["requests"][0]["did"].as_str()), (Some(1), Some(BOB)), "{pending}");
    assert!(pending["requests"][0]["unmet"].as_array().is_some_and(|u| !u.is_empty()));
    let (status, done) =
        call(&f, "approveElevation", Some(&admin), json!({"requestId": request, "verificationNotes": "Known to us."})).await;
    assert_eq!((status, done["success"].as_bool()), (StatusCode::OK, Some(true)), "{done}");
    let (status, e) = call(&f, "approveElevation", Some(&admin), json!({"requestId": request})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "decided already: {e}");
    let (status, e) = call(&f, "approveElevation", Some(&admin), json!({"requestId": "nope"})).await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")));
    let (_, status_of_bob) = f.get_as(&format!("/xrpc/pub.svc.governance.getEditorStatus?did={BOB}"), &carol).await;
    assert_eq!(
        (status_of_bob["role"].as_str(), status_of_bob["roleGrantedBy"].as_str(), status_of_bob["metrics"]["eprintCount"].as_u64()),
        (Some("trusted-editor"), Some(ADMIN), Some(1)),
        "{status_of_bob}"
    );
    let (status, e) = call(&f, "requestElevation", Some(&bob), json!({"targetRole": "trusted-editor"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "holds it already: {e}");

    // A trusted editor's change proposal stands on its votes (it was refused while he was
    // a community member).
    assert_eq!(ok(&f, "/xrpc/pub.svc.governance.getProposal?id=u2").await["status"], "pending");

    // The editors, by role.
    let (_, editors) = f.get_as("/xrpc/pub.svc.governance.listTrustedEditors", &admin).await;
    let dids: Vec<&str> = editors["editors"].as_array().unwrap().iter().filter_map(|e| e["did"].as_str()).collect();
    assert_eq!(dids, vec![BOB, ADMIN], "newest grant first; bootstrapped once: {editors}");
    let (_, editors) = f.get_as("/xrpc/pub.svc.governance.listTrustedEditors?role=trusted-editor&limit=1", &admin).await;
    assert_eq!((editors["total"].as_u64(), editors["editors"][0]["did"].as_str()), (Some(1), Some(BOB)));

    // Delegations: granted for at most 365 days, listed, shown in the editor's status, revoked.
    let grant = json!({"delegateDid": BOB, "collections": ["pub.svc.graph.node"], "daysValid": 30});
    let (status, e) = call(&f, "grantDelegation", Some(&bob), grant.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{e}");
    for bad in [
        json!({"delegateDid": BOB, "collections": ["pub.svc.graph.node"], "daysValid": 366}),
        json!({"delegateDid": BOB, "collections": ["not an nsid"], "daysValid": 30}),
        json!({"delegateDid": "bob", "collections": ["pub.svc.graph.node"], "daysValid": 30}),
    ] {
        let (status, e) = call(&f, "grantDelegation", Some(&admin), bad.clone()).await;
        assert_eq!((status, e["error"].as_str()), (StatusCode::BAD_REQUEST, Some("InvalidRequest")), "{bad}: {e}");
    }
    let (_, listed) = f.get_as("/xrpc/pub.svc.governance.listDelegations", &admin).await;
    assert_eq!(listed["total"], 0, "nothing written by a refused grant");
    let (status, granted) = call(&f, "grantDelegation", Some(&admin), grant).await;
    assert_eq!(status, StatusCode::OK, "{granted}");
    let delegation = granted["delegationId"].as_str().unwrap().to_owned();
    let (_, listed) = f.get_as("/xrpc/pub.svc.governance.listDelegations", &admin).await;
    assert_eq!((listed["total"].as_u64(), listed["delegations"][0]["active"].as_bool()), (Some(1), Some(true)), "{listed}");
    let (_, mine) = f.get_as("/xrpc/pub.svc.governance.getEditorStatus", &bob).await;
    assert_eq!(
        (mine["hasDelegation"].as_bool(), mine["dailyRateLimit"].as_u64(), &mine["delegationCollections"]),
        (Some(true), Some(100), &json!(["pub.svc.graph.node"])),
        "{mine}"
    );
    let (status, revoked) = call(&f, "revokeDelegation", Some(&admin), json!({"delegationId": delegation})).await;
    assert_eq!((status, revoked["success"].as_bool()), (StatusCode::OK, Some(true)), "{revoked}");
    let (_, again) = call(&f, "revokeDelegation", Some(&admin), json!({"delegationId": delegation})).await;
    assert_eq!(again["success"], false);
    let (status, _) = call(&f, "revokeDelegation", Some(&admin), json!({"delegationId": "nope"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, mine) = f.get_as("/xrpc/pub.svc.governance.getEditorStatus", &bob).await;
    assert_eq!(mine["hasDelegation"], false);

    // Carol asks and is turned down; Bob's role is revoked, and his change proposal with it.
    let (_, asked) = call(&f, "requestElevation", Some(&carol), json!({"targetRole": "trusted-editor"})).await;
    let (status, e) = call(&f, "rejectElevation", Some(&admin), json!({"requestId": asked["requestId"]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a reason is required: {e}");
    let (status, _) = call(&f, "rejectElevation", Some(&admin), json!({"requestId": asked["requestId"], "reason": "Not yet."})).await;
    assert_eq!(status, StatusCode::OK);
    let (_, pending) = f.get_as("/xrpc/pub.svc.governance.listElevationRequests", &admin).await;
    assert_eq!(pending["total"], 0);
    let (_, carols) = f.get_as("/xrpc/pub.svc.governance.getEditorStatus", &carol).await;
    assert_eq!(carols["role"], "community-member");
    let (status, e) = call(&f, "revokeRole", Some(&admin), json!({"did": CAROL, "reason": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "Carol holds no role: {e}");
    let (status, _) = call(&f, "revokeRole", Some(&admin), json!({"did": BOB, "reason": "Inactive."})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ok(&f, "/xrpc/pub.svc.governance.getProposal?id=u2").await["status"], "rejected");
    // (Governance roles are not svc's roles: the audit trail needs svc's admin role.)
    query_api::xrpc::admin::bootstrap(&f.state, &[ADMIN.to_owned()]).await.unwrap();
    let (status, audit) = f.get_as("/xrpc/pub.svc.admin.getAuditLog", &login(&f, ADMIN, "g-admin-2").await).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let actions: Vec<&str> = audit["entries"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    for action in [
        "governance_role_grant",
        "elevation_approve",
        "elevation_reject",
        "delegation_grant",
        "delegation_revoke",
        "governance_role_revoke",
    ] {
        assert!(actions.contains(&action), "{action} audited: {actions:?}");
    }

    // Without credentials: 401; an unknown account: 404.
    let (status, e) = f.get("/xrpc/pub.svc.governance.getEditorStatus").await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")));
    let (status, _) = call(&f, "requestElevation", None, json!({"targetRole": "trusted-editor"})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = f.get_as("/xrpc/pub.svc.governance.getEditorStatus?did=did:plc:nobody0000000000000000000", &admin).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// The weighted option of the rule (`--governance-consensus weighted`): votes weigh by the
/// voter's governance role, two trusted editors' approvals are needed, an administrator's
/// rejection vetoes; `consensus` and each vote's `weight` say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_weighted_option_weighs_votes_by_role() {
    let mut f = Fixture::with_consensus(projections::governance::WEIGHTED);
    let role = |did: &str, role: &str| event_schema::NewEvent {
        key: did.to_owned(),
        source: event_schema::Source::Command { nsid: "svc".into(), caller: GOVERNANCE_DID.into(), host: String::new() },
        payload: event_schema::Payload::Admin(event_schema::AdminCommand {
            actor: GOVERNANCE_DID.into(),
            action: event_schema::AdminAction::GovernanceRoleSet { did: did.to_owned(), role: Some(role.to_owned()), reason: None },
        }),
    };
    let t = |s: u32| format!("2025-03-01T00:00:{s:02}Z");
    let proposal = |did: &str, rkey: &str, label: &str| {
        create(
            did,
            "pub.svc.graph.nodeProposal",
            rkey,
            "3l0000000000a",
            json!({
            "proposalType": "create", "kind": "type", "subkind": "field", "proposedNode": {"label": label}, "rationale": "Needed.", "createdAt": t(1)}),
        )
    };
    const FRANK: &str = "did:plc:frank000000000000000000";
    let mut events = vec![role(BOB, "trusted-editor"), role(CAROL, "trusted-editor"), role(FRANK, "administrator")];
    events.extend([proposal(ALICE, "w1", "Weighted One"), proposal(ALICE, "w2", "Weighted Two"), proposal(ALICE, "w3", "Weighted Three")]);
    let (w1, w2, w3) = (proposal_uri(ALICE, "w1", false), proposal_uri(ALICE, "w2", false), proposal_uri(ALICE, "w3", false));
    // w1: two trusted editors and three members approve: approved.
    for (i, voter) in [BOB, CAROL, DAVE, ERIN, ALICE].iter().enumerate() {
        events.push(vote(voter, &format!("a{i}"), &w1, "approve", &t(10 + i as u32)));
    }
    // w2: five approvals, one by a trusted editor: pending.
    for (i, voter) in [BOB, DAVE, ERIN, ALICE, "did:plc:gina0000000000000000000"].iter().enumerate() {
        events.push(vote(voter, &format!("b{i}"), &w2, "approve", &t(20 + i as u32)));
    }
    // w3: four approvals (two trusted) and the administrator's rejection: vetoed.
    for (i, voter) in [BOB, CAROL, DAVE, ERIN].iter().enumerate() {
        events.push(vote(voter, &format!("c{i}"), &w3, "approve", &t(30 + i as u32)));
    }
    events.push(vote(FRANK, "c9", &w3, "reject", &t(39)));
    f.apply(events);
    let get = |id: &str| {
        let f = &f;
        let id = id.to_owned();
        async move { ok(f, &format!("/xrpc/pub.svc.governance.getProposal?id={id}")).await }
    };
    let one = get("w1").await;
    assert_eq!((one["status"].as_str(), one["consensus"]["rule"].as_str()), (Some("approved"), Some("weighted/1")), "{one}");
    assert_eq!((one["votes"]["weightedApprove"].as_u64(), one["consensus"]["minTrustedApprovals"].as_u64()), (Some(7), Some(2)));
    assert_eq!(get("w2").await["status"], "pending", "one trusted editor's approval is not enough");
    let three = get("w3").await;
    assert_eq!((three["status"].as_str(), three["consensus"]["vetoed"].as_bool()), (Some("rejected"), Some(true)), "{three}");
    let votes = ok(&f, "/xrpc/pub.svc.governance.listVotes?proposalId=w3").await;
    let weights: std::collections::BTreeMap<String, u64> = votes["votes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["voterRole"].as_str().unwrap().to_owned(), v["weight"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        weights,
        [("administrator".to_owned(), 5), ("community-member".to_owned(), 1), ("trusted-editor".to_owned(), 2)].into_iter().collect()
    );
}
