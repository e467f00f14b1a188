//! What an approved proposal writes to the governance repository: a pure function of the
//! proposal and of what the repository holds, so a restart computes the same write.
//!
//! - A proposal to create a node or edge makes a new record whose key (its `id`) is a UUID
//!   derived from the proposal's URI: writing it twice is refused by the host (the key is
//!   taken), never doubled.
//! - A proposal to update, deprecate or merge changes the record it names, which must be the
//!   governance repository's: the held record with the proposal's changes, written over the
//!   held CID (`swapRecord`).
//!
//! Every record written carries the proposal's URI (`proposalUri`): the change took effect
//! when the repository holds a record naming it (docs/spec details §7).

use projections::attached::collections::{GRAPH_EDGE, GRAPH_NODE};
use serde_json::{json, Map, Value};
use uuid::Uuid;

/// An approved proposal, as indexed.
#[derive(Debug, Clone, Copy)]
pub struct Proposal<'a> {
    /// Its AT URI.
    pub uri: &'a str,
    /// Whether it is an edge proposal (or a node proposal).
    pub edge: bool,
    /// Its view in the attached model: `type`, `kind`, `subkind`, `targetUri`,
    /// `mergeIntoUri`, `changes` (the proposed node or edge).
    pub view: &'a Value,
}

/// The record a proposal writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `pub.svc.graph.node` or `pub.svc.graph.edge`.
    pub collection: &'static str,
    /// Its record key.
    pub rkey: String,
    /// Whether the proposal makes it (or changes one the repository holds).
    pub new: bool,
}

/// The record key of the node or edge a create proposal makes.
pub fn new_key(proposal: &str) -> String {
    Uuid::new_v5(&Uuid::NAMESPACE_URL, proposal.as_bytes()).to_string()
}

fn text<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    v[field].as_str()
}

/// The record `proposal` writes to the repository `gov`, or why it cannot be published.
pub fn target(proposal: &Proposal, gov: &str) -> Result<Target, String> {
    let collection = if proposal.edge { GRAPH_EDGE } else { GRAPH_NODE };
    let kind = text(proposal.view, "type").unwrap_or_default();
    if kind == "create" {
        return Ok(Target { collection, rkey: new_key(proposal.uri), new: true });
    }
    let named = text(proposal.view, "targetUri").ok_or_else(|| format!("a {kind} proposal names no record"))?;
    let parsed = lexicons::formats::parse_at_uri(named).ok_or_else(|| format!("{named} is not an AT URI"))?;
    match (parsed.collection, parsed.rkey) {
        (Some(c), Some(rkey)) if parsed.authority == gov && c == collection => Ok(Target { collection, rkey: rkey.to_owned(), new: false }),
        _ => Err(format!("{named} is not a {collection} record of the governance repository {gov}")),
    }
}

/// The fields of a proposed node a node record takes over.
const NODE_FIELDS: &[&str] = &["label", "alternateLabels", "description", "externalIds", "metadata"];
/// The fields of a proposed edge an edge record takes over.
const EDGE_FIELDS: &[&str] = &["sourceUri", "targetUri", "relationUri", "relationSlug", "weight", "metadata"];

/// A URL-safe slug of a label: lowercase letters and digits, words joined by `-`, at most
/// 100 characters.
pub fn slug(label: &str) -> String {
    let mut out = String::new();
    for word in label.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let word = word.to_lowercase();
        if out.len() + word.len() + 1 > 100 {
            break;
        }
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word);
    }
    out
}

/// The record `proposal` writes, given the record `held` at its [`target`] (`None` for a new
/// one), at time `now` (RFC 3339).
pub fn record(proposal: &Proposal, gov: &str, held: Option<&Value>, now: &str) -> Result<Value, String> {
    let v = proposal.view;
    let changes = &v["changes"];
    let fields = if proposal.edge { EDGE_FIELDS } else { NODE_FIELDS };
    let take = |out: &mut Map<String, Value>| {
        for field in fields {
            if !changes[*field].is_null() {
                out.insert((*field).to_owned(), changes[*field].clone());
            }
        }
    };
    let mut out = match held {
        None => {
            let collection = if proposal.edge { GRAPH_EDGE } else { GRAPH_NODE };
            let id = new_key(proposal.uri);
            let mut out = Map::new();
            out.insert("$type".into(), json!(collection));
            out.insert("id".into(), json!(id));
            if !proposal.edge {
                let label = text(changes, "label").ok_or("the proposed node has no label")?;
                out.insert("slug".into(), json!(slug(label)));
                out.insert("kind".into(), json!(text(v, "kind").unwrap_or("object")));
                if let Some(subkind) = text(v, "subkind") {
                    out.insert("subkind".into(), json!(subkind));
                }
            } else if text(changes, "sourceUri").is_none() || text(changes, "targetUri").is_none() {
                return Err("the proposed edge names no source or target".into());
            }
            take(&mut out);
            out.insert("status".into(), json!("established"));
            out.insert("createdAt".into(), json!(now));
            out.insert("createdBy".into(), json!(gov));
            out
        }
        Some(held) => {
            let mut out = held.as_object().cloned().ok_or("the held record is not an object")?;
            match text(v, "type").unwrap_or_default() {
                "update" => take(&mut out),
                "deprecate" => {
                    out.insert("status".into(), json!("deprecated"));
                }
                "merge" => {
                    out.insert("status".into(), json!("deprecated"));
                    out.insert("deprecatedBy".into(), v["mergeIntoUri"].clone());
                }
                other => return Err(format!("a {other} proposal changes no held record")),
            }
            out.insert("updatedAt".into(), json!(now));
            out
        }
    };
    out.insert("proposalUri".into(), json!(proposal.uri));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOV: &str = "did:plc:gov";

    fn node_create() -> Value {
        json!({"type": "create", "kind": "type", "subkind": "field",
               "changes": {"label": "Quantum Machine Learning", "description": "QML."}})
    }

    #[test]
    fn a_created_node_is_keyed_by_its_proposal_and_names_it() {
        let view = node_create();
        let p = Proposal { uri: "at://did:plc:a/pub.svc.graph.nodeProposal/3k", edge: false, view: &view };
        let t = target(&p, GOV).unwrap();
        assert_eq!(t, Target { collection: GRAPH_NODE, rkey: new_key(p.uri), new: true });
        assert_eq!(target(&p, GOV).unwrap().rkey, t.rkey, "the key is the same on every attempt");
        let r = record(&p, GOV, None, "2026-11-27T00:00:00.000Z").unwrap();
        assert_eq!(r["id"], t.rkey.as_str());
        assert_eq!(r["slug"], "quantum-machine-learning");
        assert_eq!((r["kind"].as_str(), r["subkind"].as_str(), r["status"].as_str()), (Some("type"), Some("field"), Some("established")));
        assert_eq!(r["label"], "Quantum Machine Learning");
        assert_eq!(r["proposalUri"], p.uri);
        assert_eq!(r["createdBy"], GOV);
        assert_eq!(r["$type"], GRAPH_NODE);
    }

    #[test]
    fn an_update_changes_the_held_record_of_the_governance_repository_only() {
        let node = format!("at://{GOV}/{GRAPH_NODE}/abc");
        let view = json!({"type": "update", "targetUri": node, "changes": {"label": "New", "description": "D"}});
        let p = Proposal { uri: "at://did:plc:a/pub.svc.graph.nodeProposal/3k", edge: false, view: &view };
        assert_eq!(target(&p, GOV).unwrap(), Target { collection: GRAPH_NODE, rkey: "abc".into(), new: false });
        let held = json!({"id": "abc", "label": "Old", "slug": "old", "status": "established", "kind": "type"});
        let r = record(&p, GOV, Some(&held), "now").unwrap();
        assert_eq!((r["label"].as_str(), r["slug"].as_str(), r["description"].as_str()), (Some("New"), Some("old"), Some("D")));
        assert_eq!(r["updatedAt"], "now");
        let foreign = json!({"type": "update", "targetUri": "at://did:plc:b/pub.svc.graph.node/abc", "changes": {"label": "x"}});
        let err = target(&Proposal { view: &foreign, ..p }, GOV).unwrap_err();
        assert!(err.contains("governance repository"), "{err}");
    }

    #[test]
    fn a_merge_deprecates_the_node_for_the_one_it_merges_into() {
        let view = json!({"type": "merge", "targetUri": format!("at://{GOV}/{GRAPH_NODE}/a"), "mergeIntoUri": "at://x/y/b"});
        let p = Proposal { uri: "at://did:plc:a/pub.svc.graph.nodeProposal/3k", edge: false, view: &view };
        let r = record(&p, GOV, Some(&json!({"id": "a", "status": "established"})), "now").unwrap();
        assert_eq!((r["status"].as_str(), r["deprecatedBy"].as_str()), (Some("deprecated"), Some("at://x/y/b")));
    }

    #[test]
    fn a_created_edge_carries_the_proposed_edge() {
        let view = json!({"type": "create", "changes": {"sourceUri": "at://s", "targetUri": "at://t", "relationSlug": "broader"}});
        let p = Proposal { uri: "at://did:plc:a/pub.svc.graph.edgeProposal/3k", edge: true, view: &view };
        assert_eq!(target(&p, GOV).unwrap().collection, GRAPH_EDGE);
        let r = record(&p, GOV, None, "now").unwrap();
        assert_eq!(
            (r["sourceUri"].as_str(), r["relationSlug"].as_str(), r["status"].as_str()),
            (Some("at://s"), Some("broader"), Some("established"))
        );
        assert!(r.get("slug").is_none());
        let empty = json!({"type": "create", "changes": {"relationSlug": "broader"}});
        assert!(record(&Proposal { view: &empty, ..p }, GOV, None, "now").is_err());
    }

    #[test]
    fn slugs_are_lowercase_words_joined_by_dashes_within_100_characters() {
        assert_eq!(slug("  Graph  Neural Networks (GNNs)! "), "graph-neural-networks-gnns");
        assert!(slug(&"word ".repeat(60)).len() <= 100);
    }
}
