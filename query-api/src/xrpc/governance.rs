//! `pub.svc.governance.*`: proposals to change the shared knowledge graph and the votes on
//! them, from the attached model. A proposal's status is the tally of its indexed votes by
//! the one consensus rule ([`projections::governance`]), computed when read.

use projections::attached::collections::governance::{all_proposals, proposals_about, proposals_of_type, votes_by, votes_on};
use projections::attached::collections::graph::by_proposal;
use projections::attached::collections::graph::edges_of;
use projections::attached::collections::{Kind, Listing, EDGE_PROPOSAL, NODE_PROPOSAL};
use projections::attached::read::{AttachedReader, Item, Page};
use projections::governance::read::GovernanceReader;
use projections::governance::{broader_cycle, tally_by, weight, Ballot, Rule, Status, Tally};
use projections::ProjectionError;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{check_did, cursor};
use crate::reads;
use crate::views::attached::next_cursor;

mod roles;

pub use roles::bootstrap;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .merge(roles::routes())
        .query("pub.svc.governance.listProposals", Auth::Open, list_proposals)
        .query("pub.svc.governance.getProposal", Auth::Open, get_proposal)
        .aliases(&[("proposalId", "id")])
        .query("pub.svc.governance.listVotes", Auth::Open, list_votes)
        .query("pub.svc.governance.getUserVote", Auth::Required, get_user_vote)
        .query("pub.svc.governance.getPendingCount", Auth::Open, get_pending_count)
}

/// The most votes a proposal's tally reads, and the most proposals a filtered listing reads.
const MAX_SCAN: usize = 10_000;

/// The governance repository's DID.
fn governance(c: &Call) -> &str {
    &c.state.identity.governance_did
}

fn is_proposal(item: &Item) -> bool {
    item.collection == NODE_PROPOSAL || item.collection == EDGE_PROPOSAL
}

/// The record key of a URI.
fn rkey(uri: &str) -> &str {
    uri.rsplit('/').next().unwrap_or_default()
}

/// The proposal `id` names: its AT-URI or its record key.
fn resolve(r: &AttachedReader, id: &str) -> Result<Option<Item>, ProjectionError> {
    if id.starts_with("at://") {
        return Ok(r.get(id)?.filter(is_proposal));
    }
    Ok(r.page(&Listing::filtered(&all_proposals(), &format!("id:{id}")), 1, None)?.items.into_iter().next())
}

/// The tally of a proposal's votes by `rule`, each voter with their governance role.
fn tally_of(r: &AttachedReader, roles: &GovernanceReader, rule: &Rule, proposal: &str) -> Result<Tally, ProjectionError> {
    let votes = r.all(&votes_on(proposal), MAX_SCAN)?;
    let held: Vec<String> = if rule.weighted {
        votes.iter().map(|v| Ok(roles.role(&v.did)?.role)).collect::<Result<_, ProjectionError>>()?
    } else {
        Vec::new()
    };
    let ballots: Vec<Ballot> = votes
        .iter()
        .enumerate()
        .map(|(i, v)| Ballot {
            voter: &v.did,
            vote: v.text("vote"),
            at: v.created_at,
            uri: &v.uri,
            role: held.get(i).map_or("community-member", String::as_str),
        })
        .collect();
    Ok(tally_by(rule, &ballots))
}

/// Where a proposal stands: its tally, and its status, which a cycle it would close makes
/// `rejected` whatever the votes.
pub(crate) struct Standing {
    tally: Tally,
    /// pending, approved or rejected.
    pub(crate) status: &'static str,
    /// Why it is rejected whatever the votes: the cycle it would close, or the role its
    /// proposer lacks.
    refusal: Option<String>,
}

/// The role a proposal to change (update, merge or deprecate) what the shared graph holds
/// needs its proposer to hold, at least; creating is open to every community member.
pub(crate) const CHANGE_ROLE: &str = "trusted-editor";

/// Where the proposal `item` stands in the shared graph of the repository `gov`, given the
/// governance roles `roles`.
pub(crate) fn standing(
    r: &AttachedReader,
    roles: &GovernanceReader,
    rule: &Rule,
    gov: &str,
    item: &Item,
) -> Result<Standing, ProjectionError> {
    let tally = tally_of(r, roles, rule, &item.uri)?;
    let mut refusal =
        closes_cycle(r, gov, item)?.map(|path| format!("the edge would close a cycle of broader edges: {}", path.join(" → ")));
    if refusal.is_none() && matches!(item.text("type"), "update" | "merge" | "deprecate") {
        let held = roles.role(&item.did)?.role;
        if roles::rank(&held) < roles::rank(CHANGE_ROLE) {
            refusal = Some(format!(
                "a {} proposal needs its proposer to be at least a {CHANGE_ROLE}; {} is a {held}",
                item.text("type"),
                item.did
            ));
        }
    }
    let status = if refusal.is_some() { "rejected" } else { tally.status.as_str() };
    Ok(Standing { tally, status, refusal })
}

/// A proposal's view (`#proposalView`): its record's view, its tally and the rule. Its
/// `nodeUri` is the node or edge it changes, or the one the governance repository `gov`
/// made from it.
fn proposal_view(r: &AttachedReader, roles: &GovernanceReader, rule: &Rule, gov: &str, item: &Item) -> Result<Value, ProjectionError> {
    let Standing { tally: t, status, refusal } = standing(r, roles, rule, gov, item)?;
    let made = r.page(&by_proposal(&item.uri), 20, None)?.items.into_iter().find(|i| i.did == gov).map(|i| i.uri);
    let decided = t.weighted_approve + t.weighted_reject;
    let share = if decided == 0 { Value::Null } else { json!(t.weighted_approve as f64 / decided as f64) };
    let mut out = json!({
        "id": rkey(&item.uri),
        "uri": item.uri,
        "cid": item.cid,
        "proposalKind": item.view["proposalKind"],
        "type": item.view["type"],
        "label": item.view["label"],
        "changes": item.view["changes"],
        "rationale": item.view["rationale"],
        "status": status,
        "proposedBy": item.did,
        "votes": {"approve": t.approve, "reject": t.reject, "abstain": t.abstain, "total": t.total,
                  "weightedApprove": t.weighted_approve, "weightedReject": t.weighted_reject},
        "consensus": {
            "rule": rule.rule, "minVotes": rule.min_votes, "approveThreshold": rule.approve_percent as f64 / 100.0,
            "rejectThreshold": rule.reject_percent as f64 / 100.0, "weighted": rule.weighted,
            "minTrustedApprovals": rule.min_trusted_approvals, "administratorVeto": rule.administrator_veto,
            "approveShare": share, "reached": t.status != Status::Pending, "vetoed": t.vetoed,
        },
        "createdAt": item.view["createdAt"],
        "indexedAt": item.indexed_at,
    });
    if let Some(node) = item.view["targetUri"].as_str().map(str::to_owned).or(made) {
        out["nodeUri"] = json!(node);
    }
    for field in ["kind", "subkind", "mergeIntoUri", "evidence"] {
        if !item.view[field].is_null() {
            out[field] = item.view[field].clone();
        }
    }
    if let Some(name) = &item.account.display_name {
        out["proposerName"] = json!(name);
    }
    if let Some(why) = refusal {
        out["rejectionReason"] = json!(why);
    }
    Ok(out)
}

/// For a proposal of a broader (or narrower) edge: the cycle it would close in the shared
/// graph's broader edges (narrower edges read the other way), which rejects it whatever the
/// votes.
fn closes_cycle(r: &AttachedReader, gov: &str, item: &Item) -> Result<Option<Vec<String>>, ProjectionError> {
    let edge = &item.view["changes"];
    if item.collection != EDGE_PROPOSAL || !matches!(item.text("type"), "create" | "update") {
        return Ok(None);
    }
    let (source, target) = (edge["sourceUri"].as_str().unwrap_or_default(), edge["targetUri"].as_str().unwrap_or_default());
    let (narrower, broader) = match edge["relationSlug"].as_str() {
        Some("broader") => (source, target),
        Some("narrower") => (target, source),
        _ => return Ok(None),
    };
    let mut held = Vec::new();
    for relation in ["broader", "narrower"] {
        for e in r.all(&edges_of(gov, relation), MAX_SCAN)? {
            if e.text("status") == "deprecated" {
                continue;
            }
            let (from, to) = (e.text("sourceUri").to_owned(), e.text("targetUri").to_owned());
            held.push(if relation == "broader" { (from, to) } else { (to, from) });
        }
    }
    let pairs: Vec<(&str, &str)> = held.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    Ok(broader_cycle(&pairs, narrower, broader).map(|path| path.into_iter().map(str::to_owned).collect()))
}

/// `pub.svc.governance.listProposals {status?, type?, kind?, subkind?, nodeUri?,
/// proposedBy?, limit, cursor?}` → `{proposals, cursor?, hasMore, total}`, newest first.
/// `status` is each proposal's tally (pending, approved, rejected; `expired` and the
/// contract's `voting` match none: no rule produces them).
fn list_proposals(c: &Call) -> Answer {
    let p = &c.params;
    if let Some(did) = p.str("proposedBy") {
        check_did("proposedBy", did)?;
    }
    // The narrowest listing a parameter names; every other parameter given filters it.
    let (list, listed_by) = match (p.str("proposedBy"), p.str("nodeUri"), p.str("type")) {
        (Some(did), ..) => (Listing::by_author(Kind::Proposal, did), "proposedBy"),
        (None, Some(node), _) => (proposals_about(node), "nodeUri"),
        (None, None, Some(t)) => (proposals_of_type(t), "type"),
        (None, None, None) => (all_proposals(), ""),
    };
    let status = p.str("status");
    let filtered = ["status", "type", "kind", "subkind", "nodeUri"].iter().any(|k| *k != listed_by && p.str(k).is_some());
    let after = cursor(p)?;
    let gov = governance(c);
    let answer = reads::attached(&c.state, |r| {
        let roles = GovernanceReader::new(c.state.store.as_ref())?;
        let keep = |i: &Item| {
            is_proposal(i)
                && p.str("type").is_none_or(|t| i.text("type") == t)
                && p.str("kind").is_none_or(|k| i.text("kind") == k)
                && p.str("subkind").is_none_or(|s| i.text("subkind") == s)
                && p.str("nodeUri").is_none_or(|n| i.text("targetUri") == n || i.text("mergeIntoUri") == n)
                && status.is_none_or(|s| standing(r, &roles, &c.state.identity.consensus, gov, i).is_ok_and(|st| st.status == s))
        };
        let page = r.page_where(&list, c.limit(50), after, filtered.then_some(&keep as &dyn Fn(&Item) -> bool), MAX_SCAN)?;
        answer_of(r, &roles, &c.state.identity.consensus, gov, &page)
    })?;
    Body::json(&answer)
}

fn answer_of(r: &AttachedReader, roles: &GovernanceReader, rule: &Rule, gov: &str, page: &Page) -> Result<Value, ProjectionError> {
    let proposals = page.items.iter().map(|i| proposal_view(r, roles, rule, gov, i)).collect::<Result<Vec<_>, _>>()?;
    let mut out = json!({"proposals": proposals, "hasMore": page.next.is_some(), "total": page.total});
    if let Some(c) = next_cursor(page) {
        out["cursor"] = json!(c);
    }
    Ok(out)
}

/// `pub.svc.governance.getProposal {id (or proposalId)}` → the proposal, or `NotFound`.
fn get_proposal(c: &Call) -> Answer {
    let id = c.str("id");
    if id.is_empty() {
        return Err(ApiError::invalid_request("id (or proposalId) is required"));
    }
    let view = reads::attached(&c.state, |r| {
        let roles = GovernanceReader::new(c.state.store.as_ref())?;
        resolve(r, id)?.map(|p| proposal_view(r, &roles, &c.state.identity.consensus, governance(c), &p)).transpose()
    })?;
    Body::json(&view.ok_or_else(|| ApiError::not_found(format!("no proposal {id}")))?)
}

/// A vote's view (`#voteView`): `counted` says whether it is its voter's newest vote on the
/// proposal, the one the tally counts; `voterRole` the voter's governance role, `weight`
/// what the vote weighs by `rule`.
fn vote_view(item: &Item, role: &str, rule: &Rule, counted: bool) -> Value {
    let mut out = json!({
        "id": rkey(&item.uri), "uri": item.uri, "cid": item.cid, "proposalUri": item.view["proposalUri"],
        "voterDid": item.did, "voterRole": role, "vote": item.view["vote"], "weight": if rule.weighted { weight(role) } else { 1 },
        "counted": counted, "createdAt": item.view["createdAt"],
    });
    if let Some(name) = &item.account.display_name {
        out["voterName"] = json!(name);
    }
    if let Some(comment) = item.view["comment"].as_str() {
        out["rationale"] = json!(comment);
    }
    out
}

/// `pub.svc.governance.listVotes {proposalId, limit, cursor?}` → `{votes, cursor?, hasMore,
/// total}`, newest first, every vote record (each marked `counted` or not).
fn list_votes(c: &Call) -> Answer {
    let id = c.str("proposalId");
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let Some(proposal) = resolve(r, id)? else { return Ok(None) };
        let roles = GovernanceReader::new(c.state.store.as_ref())?;
        let page = r.page(&votes_on(&proposal.uri), c.limit(100), after)?;
        let mut votes = Vec::with_capacity(page.items.len());
        for v in &page.items {
            let newest = r.page(&votes_by(&proposal.uri, &v.did), 1, None)?.items.into_iter().next().map(|n| n.uri);
            votes.push(vote_view(v, &roles.role(&v.did)?.role, &c.state.identity.consensus, newest.as_deref() == Some(v.uri.as_str())));
        }
        let mut out = json!({"votes": votes, "hasMore": page.next.is_some(), "total": page.total});
        if let Some(c) = next_cursor(&page) {
            out["cursor"] = json!(c);
        }
        Ok(Some(out))
    })?;
    Body::json(&answer.ok_or_else(|| ApiError::not_found(format!("no proposal {id}")))?)
}

/// `pub.svc.governance.getUserVote {proposalId, userDid?}` (auth) → `{vote}`: the newest
/// vote of `userDid` (the caller's by default) on the proposal, or `NotFound`.
fn get_user_vote(c: &Call) -> Answer {
    let id = c.str("proposalId");
    let did = match c.params.str("userDid") {
        Some(d) => d.to_owned(),
        None => c.caller()?.did.clone(),
    };
    check_did("userDid", &did)?;
    let vote = reads::attached(&c.state, |r| {
        let Some(proposal) = resolve(r, id)? else { return Ok(None) };
        Ok(r.page(&votes_by(&proposal.uri, &did), 1, None)?.items.into_iter().next())
    })?;
    let vote = vote.ok_or_else(|| ApiError::not_found(format!("{did} has not voted on {id}")))?;
    let role = reads::blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.role(&did))?;
    Body::json(&json!({"vote": vote_view(&vote, &role.role, &c.state.identity.consensus, true)}))
}

/// `pub.svc.governance.getPendingCount {kind?, subkind?}` → `{count}`: the proposals whose
/// tally is pending.
fn get_pending_count(c: &Call) -> Answer {
    let (kind, subkind) = (c.params.str("kind"), c.params.str("subkind"));
    let count = reads::attached(&c.state, |r| {
        pending_count(r, &GovernanceReader::new(c.state.store.as_ref())?, &c.state.identity.consensus, governance(c), kind, subkind)
    })?;
    Body::json(&json!({"count": count}))
}

/// The proposals (of one kind and subkind, when given) still pending in the shared graph of
/// the repository `gov`.
pub(crate) fn pending_count(
    r: &AttachedReader,
    roles: &GovernanceReader,
    rule: &Rule,
    gov: &str,
    kind: Option<&str>,
    subkind: Option<&str>,
) -> Result<u64, ProjectionError> {
    let mut n = 0u64;
    for p in r.all(&all_proposals(), MAX_SCAN)? {
        if kind.is_none_or(|k| p.text("kind") == k)
            && subkind.is_none_or(|s| p.text("subkind") == s)
            && standing(r, roles, rule, gov, &p)?.status == "pending"
        {
            n += 1;
        }
    }
    Ok(n)
}
