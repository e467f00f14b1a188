//! Governance proposals (to create, update, merge or deprecate a node or edge of the shared
//! graph) and the votes on them, from the proposers' and voters' repositories. A proposal's
//! status is not kept: it is the tally of its votes ([`crate::governance`]), computed when
//! read, so it is a pure function of the indexed votes.

use serde_json::json;

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

/// Every proposal, node and edge proposals alike.
pub fn all_proposals() -> Listing {
    Listing("proposal@all".into())
}

/// The proposals of one type (create, update, merge, deprecate).
pub fn proposals_of_type(kind: &str) -> Listing {
    Listing::filtered(&all_proposals(), &format!("type:{kind}"))
}

/// The proposals with one record key (a proposal is named by its key alone in the API).
pub fn by_id(rkey: &str) -> Listing {
    Listing::filtered(&all_proposals(), &format!("id:{rkey}"))
}

/// The proposals about one node or edge (`targetUri`, `targetEdgeUri`, `mergeIntoUri`).
pub fn proposals_about(uri: &str) -> Listing {
    Listing::pointing_at(Kind::Proposal, uri)
}

/// The votes on a proposal.
pub fn votes_on(proposal: &str) -> Listing {
    Listing::pointing_at(Kind::Vote, proposal)
}

/// One voter's votes on a proposal (the newest counts).
pub fn votes_by(proposal: &str, voter: &str) -> Listing {
    Listing::filtered(&votes_on(proposal), &format!("by:{voter}"))
}

pub(super) fn node_proposal(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let kind = text(r, "proposalType").ok_or("proposalType missing")?;
    let target = text(r, "targetUri");
    if matches!(kind, "update" | "merge" | "deprecate") && target.is_none() {
        return Err(format!("a {kind} proposal names the node it changes (targetUri)"));
    }
    if kind == "merge" && text(r, "mergeIntoUri").is_none() {
        return Err("a merge proposal names the node to merge into (mergeIntoUri)".into());
    }
    if matches!(kind, "create" | "update") && r.get("proposedNode").is_none() {
        return Err(format!("a {kind} proposal carries the proposed node (proposedNode)"));
    }
    let view = object(vec![
        ("proposalKind", json!("node")),
        ("type", json!(kind)),
        ("kind", get(r, "kind")),
        ("subkind", get(r, "subkind")),
        ("targetUri", get(r, "targetUri")),
        ("mergeIntoUri", get(r, "mergeIntoUri")),
        ("label", r.get("proposedNode").and_then(|n| n.get("label")).cloned().unwrap_or(serde_json::Value::Null)),
        ("changes", get(r, "proposedNode")),
        ("rationale", get(r, "rationale")),
        ("evidence", get(r, "evidence")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let mut lists = vec![all_proposals(), proposals_of_type(kind), by_id(rec.rkey), Listing::by_author(Kind::Proposal, did)];
    for about in [target, text(r, "mergeIntoUri")].into_iter().flatten() {
        lists.push(proposals_about(about));
    }
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}

pub(super) fn edge_proposal(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let kind = text(r, "proposalType").ok_or("proposalType missing")?;
    let target = text(r, "targetEdgeUri");
    if matches!(kind, "update" | "deprecate") && target.is_none() {
        return Err(format!("a {kind} proposal names the edge it changes (targetEdgeUri)"));
    }
    let edge = r.get("proposedEdge");
    if kind != "deprecate" && edge.is_none() {
        return Err(format!("a {kind} proposal carries the proposed edge (proposedEdge)"));
    }
    let label = edge.map(|e| {
        json!(format!(
            "{} {} {}",
            e.get("sourceUri").and_then(|v| v.as_str()).unwrap_or_default(),
            e.get("relationSlug").and_then(|v| v.as_str()).unwrap_or_default(),
            e.get("targetUri").and_then(|v| v.as_str()).unwrap_or_default()
        ))
    });
    let view = object(vec![
        ("proposalKind", json!("edge")),
        ("type", json!(kind)),
        ("targetUri", get(r, "targetEdgeUri")),
        ("label", label.unwrap_or(serde_json::Value::Null)),
        ("changes", get(r, "proposedEdge")),
        ("rationale", get(r, "rationale")),
        ("evidence", get(r, "evidence")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let mut lists = vec![all_proposals(), proposals_of_type(kind), by_id(rec.rkey), Listing::by_author(Kind::Proposal, did)];
    if let Some(target) = target {
        lists.push(proposals_about(target));
    }
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}

pub(super) fn vote(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let proposal = text(r, "proposalUri").ok_or("proposalUri missing")?;
    let value = text(r, "vote").ok_or("vote missing")?;
    if !crate::governance::VOTES.contains(&value) {
        return Err(format!("vote {value:?} is none of {}", crate::governance::VOTES.join(", ")));
    }
    let view = object(vec![
        ("proposalUri", json!(proposal)),
        ("vote", json!(value)),
        ("comment", get(r, "comment")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists = vec![votes_on(proposal), votes_by(proposal, did), Listing::by_author(Kind::Vote, did)];
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}
