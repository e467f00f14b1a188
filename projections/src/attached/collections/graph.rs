//! Knowledge graph nodes and edges, and reconciliations of nodes with external authorities.
//!
//! A node or edge is listed under its repository: the governance repository's are the
//! shared graph, anyone else's are their personal graph (a collection is a personal node of
//! subkind `collection`). Under each repository a node is also listed by kind, subkind,
//! status and slug, and by each external identifier; an edge by relation, and under its
//! source and its target, each also by relation.

use serde_json::json;

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

/// The listing filter of a node's subkind, kind, status or slug (`what`: the field).
pub fn node_filter(what: &str, value: &str) -> String {
    format!("{what}:{value}")
}

/// The longest word prefix a node is listed under for search ([`label_words`]).
pub const PREFIX_CHARS: usize = 12;

/// The words of a label, lower-cased (letters and digits; anything else separates words).
pub fn label_words(label: &str) -> Vec<String> {
    label.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The listing filter of nodes with a word that starts with `prefix` (lower case, at most
/// [`PREFIX_CHARS`] characters).
pub fn prefix_filter(prefix: &str) -> String {
    format!("prefix:{prefix}")
}

/// Every node of one subkind, in any repository (the collections, for the admin overview).
pub fn nodes_of_subkind(subkind: &str) -> Listing {
    Listing(format!("node@subkind:{subkind}"))
}

/// The nodes and edges made from a proposal (their `proposalUri`), in any repository.
pub fn by_proposal(proposal: &str) -> Listing {
    Listing(format!("graph@proposal:{proposal}"))
}

/// The listing of every node with an external identifier, in any repository.
pub fn by_external_id(system: &str, identifier: &str) -> Listing {
    Listing(format!("node@external:{system}:{identifier}"))
}

/// The listing of the edges from `source` (of one relation when given).
pub fn edges_from(source: &str, relation: Option<&str>) -> Listing {
    let base = Listing(format!("edge@source:{source}"));
    match relation {
        Some(r) => Listing::filtered(&base, &format!("rel:{r}")),
        None => base,
    }
}

/// The listing of the edges to `target` (of one relation when given).
pub fn edges_to(target: &str, relation: Option<&str>) -> Listing {
    let base = Listing::pointing_at(Kind::GraphEdge, target);
    match relation {
        Some(r) => Listing::filtered(&base, &format!("rel:{r}")),
        None => base,
    }
}

/// The listing of one repository's edges of one relation.
pub fn edges_of(did: &str, relation: &str) -> Listing {
    Listing::filtered(&Listing::by_author(Kind::GraphEdge, did), &format!("rel:{relation}"))
}

pub(super) fn node(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let id = text(r, "id").ok_or("id missing")?;
    let view = object(vec![
        ("id", json!(id)),
        ("slug", get(r, "slug")),
        ("kind", get(r, "kind")),
        ("subkind", get(r, "subkind")),
        ("subkindUri", get(r, "subkindUri")),
        ("label", get(r, "label")),
        ("alternateLabels", get(r, "alternateLabels")),
        ("description", get(r, "description")),
        ("externalIds", get(r, "externalIds")),
        ("metadata", get(r, "metadata")),
        ("status", get(r, "status")),
        ("deprecatedBy", get(r, "deprecatedBy")),
        ("proposalUri", get(r, "proposalUri")),
        ("createdAt", get(r, "createdAt")),
        ("createdBy", get(r, "createdBy")),
        ("updatedAt", get(r, "updatedAt")),
    ]);
    let mine = Listing::by_author(Kind::GraphNode, did);
    let mut lists = Vec::new();
    for field in ["kind", "subkind", "status", "slug"] {
        if let Some(value) = text(r, field) {
            lists.push(Listing::filtered(&mine, &node_filter(field, value)));
        }
    }
    if let (Some(kind), Some(subkind)) = (text(r, "kind"), text(r, "subkind")) {
        lists.push(Listing::filtered(&mine, &format!("{}@{}", node_filter("kind", kind), node_filter("subkind", subkind))));
    }
    // Every prefix of every word of its label, alternate labels and slug: a search for
    // words is a scan of the listing of its rarest word's prefix.
    let mut prefixes = std::collections::BTreeSet::new();
    let labels = r.get("alternateLabels").and_then(|v| v.as_array()).into_iter().flatten().filter_map(|v| v.as_str());
    for label in labels.chain(text(r, "label")).chain(text(r, "slug")) {
        for word in label_words(label) {
            let chars: Vec<char> = word.chars().take(PREFIX_CHARS).collect();
            for end in 1..=chars.len() {
                prefixes.insert(chars[..end].iter().collect::<String>());
            }
        }
    }
    lists.extend(prefixes.iter().map(|p| Listing::filtered(&mine, &prefix_filter(p))));
    for ext in r.get("externalIds").and_then(|v| v.as_array()).into_iter().flatten() {
        if let (Some(system), Some(identifier)) = (text(ext, "system"), text(ext, "identifier")) {
            lists.push(by_external_id(system, identifier));
        }
    }
    if let Some(proposal) = text(r, "proposalUri") {
        lists.push(by_proposal(proposal));
    }
    if let Some(subkind) = text(r, "subkind") {
        lists.push(nodes_of_subkind(subkind));
    }
    lists.push(mine);
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}

pub(super) fn edge(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let id = text(r, "id").ok_or("id missing")?;
    let source = text(r, "sourceUri").ok_or("sourceUri missing")?;
    let target = text(r, "targetUri").ok_or("targetUri missing")?;
    let relation = text(r, "relationSlug").ok_or("relationSlug missing")?;
    if source == target && relation != "related" {
        return Err(format!("an edge from a node to itself ({relation})"));
    }
    let view = object(vec![
        ("id", json!(id)),
        ("sourceUri", json!(source)),
        ("targetUri", json!(target)),
        ("relationUri", get(r, "relationUri")),
        ("relationSlug", json!(relation)),
        ("weight", get(r, "weight")),
        ("metadata", get(r, "metadata")),
        ("status", get(r, "status")),
        ("proposalUri", get(r, "proposalUri")),
        ("createdAt", get(r, "createdAt")),
        ("createdBy", get(r, "createdBy")),
        ("updatedAt", get(r, "updatedAt")),
    ]);
    let mut lists = vec![
        Listing::by_author(Kind::GraphEdge, did),
        edges_of(did, relation),
        edges_from(source, None),
        edges_from(source, Some(relation)),
        edges_to(target, None),
        edges_to(target, Some(relation)),
    ];
    if let Some(proposal) = text(r, "proposalUri") {
        lists.push(by_proposal(proposal));
    }
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}

pub(super) fn reconciliation(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let source = text(r, "sourceUri").ok_or("sourceUri missing")?;
    let view = object(vec![
        ("sourceUri", json!(source)),
        ("targetSystem", get(r, "targetSystem")),
        ("targetId", get(r, "targetId")),
        ("confidence", get(r, "confidence")),
        ("matchType", get(r, "matchType")),
        ("status", get(r, "status")),
        ("verifiedBy", get(r, "verifiedBy")),
        ("notes", get(r, "notes")),
        ("createdAt", get(r, "createdAt")),
        ("updatedAt", get(r, "updatedAt")),
    ]);
    let lists = vec![Listing::pointing_at(Kind::Reconciliation, source), Listing::by_author(Kind::Reconciliation, did)];
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}
