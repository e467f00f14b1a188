//! `pub.svc.graph.*`: the knowledge graph, from the attached model. The shared graph is the
//! governance repository's nodes and edges (`--governance-did`); anyone else's are their
//! personal graph. A node is named by its AT-URI, or in the shared graph by its record key
//! or its slug (an arXiv code such as `cs.LG` for a seeded field).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use projections::attached::collections::graph::{self as lists, label_words, node_filter, prefix_filter, PREFIX_CHARS};
use projections::attached::collections::{Kind, Listing, GRAPH_EDGE, GRAPH_NODE};
use projections::attached::read::{AttachedReader, Item, Page};
use projections::search::SortOrder;
use projections::ProjectionError;
use serde_json::{json, Map, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::{Body, JsonWriter};
use crate::error::ApiError;
use crate::params::cursor;
use crate::reads;
use crate::search::{self, SearchArgs};
use crate::views::attached::next_cursor;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.graph.getNode", Auth::Open, get_node)
        .query("pub.svc.graph.listNodes", Auth::Open, list_nodes)
        .query("pub.svc.graph.searchNodes", Auth::Open, search_nodes)
        .query("pub.svc.graph.listEdges", Auth::Open, list_edges)
        .query("pub.svc.graph.getEdge", Auth::Open, get_edge)
        .query_async("pub.svc.graph.getField", Auth::Open, get_field)
        .query("pub.svc.graph.listFields", Auth::Open, list_fields)
        .query_async("pub.svc.graph.getFieldEprints", Auth::Open, get_field_eprints)
        .query_async("pub.svc.graph.browseFaceted", Auth::Open, browse_faceted)
        .query("pub.svc.graph.getAuthorityReconciliations", Auth::Open, get_authority_reconciliations)
        .query("pub.svc.graph.getHierarchy", Auth::Open, get_hierarchy)
        .query("pub.svc.graph.getRelations", Auth::Open, get_relations)
        .query("pub.svc.graph.getSubkinds", Auth::Open, get_subkinds)
        .query("pub.svc.graph.expandSubgraph", Auth::Open, expand_subgraph)
        .query("pub.svc.graph.getCommunities", Auth::Open, get_communities)
        .query("pub.svc.graph.listPersonalNodes", Auth::Required, list_personal_nodes)
        .query("pub.svc.graph.listPersonalEdgeTypes", Auth::Required, list_personal_edge_types)
}

/// The most rows a filtered listing, a hierarchy or a closure reads.
const MAX_SCAN: usize = 10_000;

/// The most narrower fields `getFieldEprints` gathers with `includeChildren`.
const MAX_CLOSURE: usize = 1_000;

/// The governance repository's DID.
fn governance(c: &Call) -> &str {
    &c.state.identity.governance_did
}

/// A node's or edge's view: `uri`, `cid`, `owner` (its repository) and the stored view.
fn view(item: &Item) -> Value {
    let mut out = Map::new();
    out.insert("uri".into(), json!(item.uri));
    out.insert("cid".into(), json!(item.cid));
    out.insert("owner".into(), json!(item.did));
    if let Value::Object(fields) = &item.view {
        out.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    Value::Object(out)
}

/// The node `id` names: an AT-URI, or in the governance repository `gov` a record key or a
/// slug.
fn resolve_node(r: &AttachedReader, gov: &str, id: &str) -> Result<Option<Item>, ProjectionError> {
    let is_node = |i: &Item| i.collection == GRAPH_NODE;
    if id.starts_with("at://") {
        return Ok(r.get(id)?.filter(is_node));
    }
    if let Some(item) = r.get(&format!("at://{gov}/{GRAPH_NODE}/{id}"))?.filter(is_node) {
        return Ok(Some(item));
    }
    let by_slug = Listing::filtered(&Listing::by_author(Kind::GraphNode, gov), &node_filter("slug", id));
    Ok(r.page(&by_slug, 1, None)?.items.into_iter().next())
}

/// `{<name>: views, cursor?, hasMore, total}`.
fn list_answer(name: &str, page: &Page) -> Value {
    let mut out = json!({name: page.items.iter().map(view).collect::<Vec<_>>(), "hasMore": page.next.is_some(), "total": page.total});
    if let Some(c) = next_cursor(page) {
        out["cursor"] = json!(c);
    }
    out
}

/// The edges from and to `uri` (up to 100 each way).
fn edges_of(r: &AttachedReader, uri: &str) -> Result<Vec<Item>, ProjectionError> {
    let mut edges = r.page(&lists::edges_from(uri, None), 100, None)?.items;
    edges.extend(r.page(&lists::edges_to(uri, None), 100, None)?.items);
    Ok(edges)
}

/// `pub.svc.graph.getNode {id, includeEdges?}` → the node, with its edges when asked.
fn get_node(c: &Call) -> Answer {
    let answer = reads::attached(&c.state, |r| {
        let Some(node) = resolve_node(r, governance(c), c.str("id"))? else { return Ok(None) };
        let mut out = view(&node);
        if c.params.bool("includeEdges").unwrap_or(false) {
            out["edges"] = json!(edges_of(r, &node.uri)?.iter().map(view).collect::<Vec<_>>());
        }
        Ok(Some(out))
    })?;
    Body::json(&answer.ok_or_else(|| ApiError::not_found(format!("no knowledge graph node {}", c.str("id"))))?)
}

/// `pub.svc.graph.listNodes {kind?, subkind?, status?, externalIdSystem?,
/// externalIdIdentifier?, limit, cursor?}` → `{nodes, cursor?, hasMore, total}`: the shared
/// graph's nodes, newest first, from the narrowest listing the filters name.
fn list_nodes(c: &Call) -> Answer {
    let gov = governance(c);
    let mine = Listing::by_author(Kind::GraphNode, gov);
    let (kind, subkind, status) = (c.params.str("kind"), c.params.str("subkind"), c.params.str("status"));
    let external = match (c.params.str("externalIdSystem"), c.params.str("externalIdIdentifier")) {
        (Some(system), Some(id)) => Some(lists::by_external_id(system, id)),
        (None, None) => None,
        _ => return Err(ApiError::invalid_request("externalIdSystem and externalIdIdentifier go together")),
    };
    let (list, filtered) = match (&external, kind, subkind, status) {
        (Some(list), ..) => (list.clone(), true),
        (None, Some(k), Some(s), st) => {
            (Listing::filtered(&mine, &format!("{}@{}", node_filter("kind", k), node_filter("subkind", s))), st.is_some())
        }
        (None, None, Some(s), st) => (Listing::filtered(&mine, &node_filter("subkind", s)), st.is_some()),
        (None, Some(k), None, st) => (Listing::filtered(&mine, &node_filter("kind", k)), st.is_some()),
        (None, None, None, Some(st)) => (Listing::filtered(&mine, &node_filter("status", st)), false),
        (None, None, None, None) => (mine.clone(), false),
    };
    let keep = |i: &Item| {
        i.did == gov
            && kind.is_none_or(|k| i.text("kind") == k)
            && subkind.is_none_or(|s| i.text("subkind") == s)
            && status.is_none_or(|s| i.text("status") == s)
    };
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let page = r.page_where(&list, c.limit(50), after, filtered.then_some(&keep as &dyn Fn(&Item) -> bool), MAX_SCAN)?;
        Ok(list_answer("nodes", &page))
    })?;
    Body::json(&answer)
}

/// Whether every word of `words` starts a word of the node's label, alternate labels or slug.
fn matches_words(item: &Item, words: &[String]) -> bool {
    let mut own: Vec<String> = label_words(item.text("label"));
    own.extend(label_words(item.text("slug")));
    for alt in item.view["alternateLabels"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        own.extend(label_words(alt));
    }
    words.iter().all(|w| own.iter().any(|o| o.starts_with(w.as_str())))
}

/// The listing of the nodes of `owner` with a word starting with `word` (its first
/// [`PREFIX_CHARS`] characters).
fn prefix_listing(owner: &str, word: &str) -> Listing {
    let prefix: String = word.chars().take(PREFIX_CHARS).collect();
    Listing::filtered(&Listing::by_author(Kind::GraphNode, owner), &prefix_filter(&prefix))
}

/// The nodes of `owner` matching every word of `query`, kept by `keep`: a page of the
/// listing of the rarest word's prefix, the other words checked on each node.
fn search_words(
    r: &AttachedReader,
    owner: &str,
    query: &str,
    limit: usize,
    after: Option<Vec<u8>>,
    keep: &dyn Fn(&Item) -> bool,
) -> Result<Page, ProjectionError> {
    let words = label_words(query);
    let Some(rarest) = words.iter().map(|w| prefix_listing(owner, w)).min_by_key(|l| r.count(l).unwrap_or(0)) else {
        return Ok(Page { items: Vec::new(), next: None, total: 0 });
    };
    let all = |i: &Item| matches_words(i, &words) && keep(i);
    r.page_where(&rarest, limit, after, Some(&all), MAX_SCAN)
}

/// `pub.svc.graph.searchNodes {query, kind?, subkind?, status?, limit, cursor?}` → `{nodes,
/// cursor?, hasMore, total}`: the shared graph's nodes whose label, alternate labels or
/// slug have a word starting with each word of the query.
fn search_nodes(c: &Call) -> Answer {
    let gov = governance(c);
    let (kind, subkind, status) = (c.params.str("kind"), c.params.str("subkind"), c.params.str("status"));
    let keep = |i: &Item| {
        kind.is_none_or(|k| i.text("kind") == k)
            && subkind.is_none_or(|s| i.text("subkind") == s)
            && status.is_none_or(|s| i.text("status") == s)
    };
    let after = cursor(&c.params)?;
    let answer =
        reads::attached(&c.state, |r| Ok(list_answer("nodes", &search_words(r, gov, c.str("query"), c.limit(20), after, &keep)?)))?;
    Body::json(&answer)
}

/// `pub.svc.graph.listEdges {sourceUri?, targetUri?, nodeId?, direction?, relationSlug?,
/// status?, limit, cursor?}` → `{edges, cursor?, hasMore, total}`, newest first. `nodeId`
/// with `direction` (outgoing, incoming; both reads the two, up to 100 each) is the
/// contract's form of `sourceUri`/`targetUri`; with no node, the shared graph's edges.
fn list_edges(c: &Call) -> Answer {
    let relation = c.params.str("relationSlug");
    let status = c.params.str("status");
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let node = match c.params.str("nodeId") {
            Some(id) => match resolve_node(r, governance(c), id)? {
                Some(node) => Some(node.uri),
                None => return Ok(None),
            },
            None => None,
        };
        let (source, target) = match (node.as_deref(), c.params.str("direction").unwrap_or("outgoing")) {
            (Some(n), "incoming") => (None, Some(n.to_owned())),
            (Some(n), "both") => {
                let mut edges = r.page(&lists::edges_from(n, relation), 100, None)?.items;
                edges.extend(r.page(&lists::edges_to(n, relation), 100, None)?.items);
                edges.retain(|e| status.is_none_or(|s| e.text("status") == s));
                let total = edges.len() as u64;
                return Ok(Some(list_answer("edges", &Page { items: edges, next: None, total })));
            }
            (Some(n), _) => (Some(n.to_owned()), None),
            (None, _) => (c.params.str("sourceUri").map(str::to_owned), c.params.str("targetUri").map(str::to_owned)),
        };
        let list = match (&source, &target, relation) {
            (Some(s), _, rel) => lists::edges_from(s, rel),
            (None, Some(t), rel) => lists::edges_to(t, rel),
            (None, None, Some(rel)) => lists::edges_of(governance(c), rel),
            (None, None, None) => Listing::by_author(Kind::GraphEdge, governance(c)),
        };
        // A listing by source with a target named too is filtered by the target.
        let by_target = source.is_some().then_some(target.as_deref()).flatten();
        let keep = |e: &Item| status.is_none_or(|s| e.text("status") == s) && by_target.is_none_or(|t| e.text("targetUri") == t);
        let filtered = status.is_some() || by_target.is_some();
        let page = r.page_where(&list, c.limit(50), after, filtered.then_some(&keep as &dyn Fn(&Item) -> bool), MAX_SCAN)?;
        Ok(Some(list_answer("edges", &page)))
    })?;
    Body::json(&answer.ok_or_else(|| ApiError::not_found(format!("no knowledge graph node {}", c.str("nodeId"))))?)
}

/// `pub.svc.graph.getEdge {uri}` → the edge, or `NotFound`.
fn get_edge(c: &Call) -> Answer {
    let uri = c.str("uri");
    let found = reads::attached(&c.state, |r| Ok(r.get(uri)?.filter(|i| i.collection == GRAPH_EDGE)))?;
    Body::json(&view(&found.ok_or_else(|| ApiError::not_found(format!("no knowledge graph edge {uri}")))?))
}

/// A field's short reference: `{id, uri, slug?, label}`.
fn field_ref(item: &Item) -> Value {
    let mut out = json!({"id": item.text("id"), "uri": item.uri, "label": item.text("label")});
    if let Some(slug) = item.view["slug"].as_str() {
        out["slug"] = json!(slug);
    }
    out
}

/// The fields one step narrower than `uri` in the shared graph (the sources of the
/// governance repository's live `broader` edges to it), by label.
fn children(r: &AttachedReader, gov: &str, uri: &str) -> Result<Vec<Item>, ProjectionError> {
    let mut out = broader_neighbours(r, gov, &lists::edges_to(uri, Some("broader")), "sourceUri")?;
    out.sort_by(|a, b| a.text("label").cmp(b.text("label")));
    Ok(out)
}

/// The fields one step broader than `uri` in the shared graph.
fn parents(r: &AttachedReader, gov: &str, uri: &str) -> Result<Vec<Item>, ProjectionError> {
    broader_neighbours(r, gov, &lists::edges_from(uri, Some("broader")), "targetUri")
}

/// The nodes at the `end` (sourceUri or targetUri) of the governance repository's live
/// edges in `edges`.
fn broader_neighbours(r: &AttachedReader, gov: &str, edges: &Listing, end: &str) -> Result<Vec<Item>, ProjectionError> {
    let mut out = Vec::new();
    for edge in r.all(edges, MAX_SCAN)? {
        if edge.did == gov && edge.text("status") != "deprecated" {
            out.extend(r.get(edge.text(end))?.filter(|n| n.collection == GRAPH_NODE));
        }
    }
    Ok(out)
}

/// The codes eprints name a node by in the search index: its record key (what a
/// `fieldUris` or `facetUris` entry becomes), its `id` when it differs, and its slug.
fn field_codes(node: &Item) -> Vec<String> {
    let mut codes =
        vec![node.uri.rsplit('/').next().unwrap_or_default().to_owned(), node.text("id").to_owned(), node.text("slug").to_owned()];
    codes.retain(|c| !c.is_empty());
    codes.dedup();
    codes
}

/// A search of the eprints whose fields hold one of `codes`.
fn field_search(codes: Vec<String>, sort: SortOrder, limit: usize, cursor: Option<String>) -> SearchArgs {
    SearchArgs {
        query: String::new(),
        fields: codes,
        authors: Vec::new(),
        from: None,
        to: None,
        sort: Some(sort),
        limit,
        cursor,
        tags: Vec::new(),
        facets: Vec::new(),
        highlight: false,
        groups: Vec::new(),
    }
}

/// `pub.svc.graph.getField {id}` → the field with its `parents`, `children` and
/// `eprintCount` (eprints naming it, not its narrower fields).
async fn get_field(c: Call) -> Answer {
    let gov = governance(&c).to_owned();
    let (node, parents, children) = reads::attached(&c.state, |r| {
        let Some(node) = resolve_node(r, &gov, c.str("id"))? else { return Ok(None) };
        let p = parents(r, &gov, &node.uri)?;
        let ch = children(r, &gov, &node.uri)?;
        Ok(Some((node, p, ch)))
    })?
    .ok_or_else(|| ApiError::not_found(format!("no field {}", c.str("id"))))?;
    let count = search::search(&c.state, field_search(field_codes(&node), SortOrder::Date, 1, None)).await?.total;
    let mut out = view(&node);
    out["name"] = json!(node.text("label"));
    out["parents"] = json!(parents.iter().map(field_ref).collect::<Vec<_>>());
    out["children"] = json!(children.iter().map(field_ref).collect::<Vec<_>>());
    out["eprintCount"] = json!(count);
    Body::json(&out)
}

/// `pub.svc.graph.listFields {parent?, query?, limit, cursor?}` → `{fields, cursor?,
/// hasMore, total}`: the children of `parent`, the fields matching `query`, or the
/// top-level fields (those with no broader field), by label.
fn list_fields(c: &Call) -> Answer {
    let gov = governance(c);
    let limit = c.limit(50);
    // A search pages by listing key; the children and the top level, sorted by label, by
    // position.
    let (after, start) = match c.params.str("query") {
        Some(_) => (cursor(&c.params)?, 0),
        None => (None, crate::params::offset(&c.params)?),
    };
    let answer = reads::attached(&c.state, |r| {
        if let Some(query) = c.params.str("query") {
            let is_field = |i: &Item| i.text("subkind") == "field";
            return Ok(Some(fields_answer(&search_words(r, gov, query, limit, after, &is_field)?)));
        }
        let mut fields = match c.params.str("parent") {
            Some(parent) => {
                let Some(parent) = resolve_node(r, gov, parent)? else { return Ok(None) };
                children(r, gov, &parent.uri)?
            }
            None => {
                let all =
                    r.all(&Listing::filtered(&Listing::by_author(Kind::GraphNode, gov), &node_filter("subkind", "field")), MAX_SCAN)?;
                let mut roots = Vec::new();
                for f in all {
                    if parents(r, gov, &f.uri)?.is_empty() {
                        roots.push(f);
                    }
                }
                roots.sort_by(|a, b| a.text("label").cmp(b.text("label")));
                roots
            }
        };
        let total = fields.len() as u64;
        let rest: Vec<Item> = fields.drain(start.min(fields.len())..).collect();
        let more = rest.len() > limit;
        let page: Vec<Item> = rest.into_iter().take(limit).collect();
        let mut answer = fields_answer(&Page { items: page, next: None, total });
        answer["hasMore"] = json!(more);
        if more {
            answer["cursor"] = json!((start + limit).to_string());
        }
        Ok(Some(answer))
    })?;
    Body::json(&answer.ok_or_else(|| ApiError::not_found(format!("no field {}", c.str("parent"))))?)
}

/// A page of fields: `{fields, cursor?, hasMore, total}`, each with its `name`.
fn fields_answer(page: &Page) -> Value {
    let mut out = list_answer("fields", page);
    if let Some(fields) = out["fields"].as_array_mut() {
        for (f, item) in fields.iter_mut().zip(&page.items) {
            f["name"] = json!(item.text("label"));
        }
    }
    out
}

/// `pub.svc.graph.getFieldEprints {field, includeChildren?, sortBy?, limit, cursor?}` →
/// `{eprints, fields, cursor?, hasMore, total}`: the eprints whose fields name the field (by
/// slug or record key), and with `includeChildren` any narrower field (breadth first over
/// the shared graph's `broader` edges, up to 1,000 fields); `fields` lists the codes
/// searched.
async fn get_field_eprints(c: Call) -> Answer {
    let gov = governance(&c).to_owned();
    let with_children = c.params.bool("includeChildren").unwrap_or(false);
    let codes = reads::attached(&c.state, |r| {
        let Some(node) = resolve_node(r, &gov, c.str("field"))? else { return Ok(None) };
        let mut codes = field_codes(&node);
        if with_children {
            let mut seen = BTreeSet::from([node.uri.clone()]);
            let mut queue = VecDeque::from([node.uri.clone()]);
            while let Some(uri) = queue.pop_front() {
                for child in children(r, &gov, &uri)? {
                    if seen.len() < MAX_CLOSURE && seen.insert(child.uri.clone()) {
                        codes.extend(field_codes(&child));
                        queue.push_back(child.uri.clone());
                    }
                }
            }
        }
        codes.sort();
        codes.dedup();
        Ok(Some(codes))
    })?
    .ok_or_else(|| ApiError::not_found(format!("no field {}", c.str("field"))))?;
    let sort = match c.params.str("sortBy") {
        Some("citations") => SortOrder::Citations,
        _ => SortOrder::Date,
    };
    let page = search::search(&c.state, field_search(codes.clone(), sort, c.limit(20), c.params.str("cursor").map(str::to_owned))).await?;
    // The stored summaries are written as they are, unparsed (as searchSubmissions does).
    let mut w = JsonWriter::object(128 + page.hits.iter().map(|h| h.len() + 1).sum::<usize>());
    if let Some(cursor) = &page.cursor {
        w.field("cursor", cursor)?;
    }
    w.stored_array("eprints", page.hits.iter().map(String::as_str));
    w.field("fields", &codes)?.field("hasMore", &page.cursor.is_some())?.field("total", &page.total)?;
    Ok(w.finish())
}

/// The facet dimensions of `browseFaceted` (PMEST: subject, material, process, space,
/// time), each given as node references.
const DIMENSIONS: [&str; 5] = ["personality", "matter", "energy", "space", "time"];

/// `pub.svc.graph.browseFaceted {q?, personality?, matter?, energy?, space?, time?, limit,
/// cursor?}` → `{hits, facets, cursor?, hasMore, total, impressionId}`: the eprints with,
/// for every dimension given, one of its values among their fields or their facet and
/// topic nodes (`facetUris`, `topicUris`), newest first (by relevance with `q`). A value
/// names a node by AT-URI, record key or slug in the shared graph (an unknown one is taken
/// as a code as it is). `facets` counts the matches' fields and facet nodes; the answer is
/// recorded as a search impression, which clicks name.
async fn browse_faceted(c: Call) -> Answer {
    let gov = governance(&c).to_owned();
    let groups = reads::attached(&c.state, |r| {
        let mut groups = Vec::new();
        for dimension in DIMENSIONS {
            let mut codes = Vec::new();
            for value in c.params.strs(dimension).iter().flat_map(|v| v.split(',')).map(str::trim).filter(|v| !v.is_empty()) {
                match resolve_node(r, &gov, value)? {
                    Some(node) => codes.extend(field_codes(&node)),
                    None => codes.push(value.rsplit('/').next().unwrap_or(value).to_owned()),
                }
            }
            if !codes.is_empty() {
                codes.sort();
                codes.dedup();
                groups.push(codes);
            }
        }
        Ok(groups)
    })?;
    let query = c.params.str("q").map(str::trim).filter(|q| !q.is_empty()).unwrap_or("*").to_owned();
    let args = SearchArgs {
        query: query.clone(),
        sort: Some(if query == "*" { SortOrder::Date } else { SortOrder::Relevance }),
        limit: c.limit(20),
        cursor: c.params.str("cursor").map(str::to_owned),
        facets: vec![projections::search::Facet::Fields, projections::search::Facet::Facet],
        groups,
        ..SearchArgs::default()
    };
    let page = search::search(&c.state, args).await?;
    let impression = crate::xrpc::metrics::record_impression(&c, "pub.svc.graph.browseFaceted", query, page.total as u64);
    let mut w = JsonWriter::object(256 + page.hits.iter().map(|h| h.len() + 1).sum::<usize>());
    if let Some(cursor) = &page.cursor {
        w.field("cursor", cursor)?;
    }
    w.stored_array("hits", page.hits.iter().map(String::as_str));
    w.field("facets", &page.facets.unwrap_or_else(|| json!({})))?;
    w.field("hasMore", &page.cursor.is_some())?.field("total", &page.total)?.field("impressionId", &impression)?;
    Ok(w.finish())
}

/// `pub.svc.graph.getAuthorityReconciliations {id, limit, cursor?}` → `{reconciliations,
/// cursor?, hasMore, total}`: the reconciliation records about the node, newest first.
fn get_authority_reconciliations(c: &Call) -> Answer {
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let uri = match resolve_node(r, governance(c), c.str("id"))? {
            Some(node) => node.uri,
            None => c.str("id").to_owned(),
        };
        Ok(list_answer("reconciliations", &r.page(&Listing::pointing_at(Kind::Reconciliation, &uri), c.limit(50), after)?))
    })?;
    Body::json(&answer)
}

/// `pub.svc.graph.getHierarchy {subkind, relationSlug?}` → `{roots, subkind, relationSlug}`:
/// the shared graph's nodes of the subkind as a forest by the relation (broader by
/// default: an edge points from the narrower node to the broader one; narrower the other
/// way), each `{node, children}`, by label.
fn get_hierarchy(c: &Call) -> Answer {
    let gov = governance(c);
    let subkind = c.str("subkind");
    let relation = c.params.str("relationSlug").unwrap_or("broader");
    let answer = reads::attached(&c.state, |r| {
        let nodes = r.all(&Listing::filtered(&Listing::by_author(Kind::GraphNode, gov), &node_filter("subkind", subkind)), MAX_SCAN)?;
        let uris: BTreeSet<&str> = nodes.iter().map(|n| n.uri.as_str()).collect();
        // child → parent edges among these nodes.
        let mut below: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut has_parent = BTreeSet::new();
        for edge in r.all(&lists::edges_of(gov, relation), MAX_SCAN)? {
            if edge.text("status") == "deprecated" {
                continue;
            }
            let (from, to) = (edge.text("sourceUri"), edge.text("targetUri"));
            let (child, parent) = if relation == "narrower" { (to, from) } else { (from, to) };
            if uris.contains(child) && uris.contains(parent) {
                below.entry(parent.to_owned()).or_default().push(child.to_owned());
                has_parent.insert(child.to_owned());
            }
        }
        let by_uri: BTreeMap<&str, &Item> = nodes.iter().map(|n| (n.uri.as_str(), n)).collect();
        fn tree(uri: &str, by_uri: &BTreeMap<&str, &Item>, below: &BTreeMap<String, Vec<String>>, path: &mut Vec<String>) -> Value {
            let node = by_uri[uri];
            path.push(uri.to_owned());
            let mut kids: Vec<&String> = below.get(uri).map(|k| k.iter().filter(|k| !path.contains(k)).collect()).unwrap_or_default();
            kids.sort_by(|a, b| by_uri[a.as_str()].text("label").cmp(by_uri[b.as_str()].text("label")));
            let children: Vec<Value> = kids.into_iter().map(|k| tree(k, by_uri, below, path)).collect();
            path.pop();
            json!({"node": view(node), "children": children})
        }
        let mut roots: Vec<&Item> = nodes.iter().filter(|n| !has_parent.contains(&n.uri)).collect();
        roots.sort_by(|a, b| a.text("label").cmp(b.text("label")));
        let roots: Vec<Value> = roots.into_iter().map(|n| tree(&n.uri, &by_uri, &below, &mut Vec::new())).collect();
        Ok(json!({"roots": roots, "subkind": subkind, "relationSlug": relation}))
    })?;
    Body::json(&answer)
}

/// The shared graph's nodes of one subkind, by display order then label.
fn vocabulary(c: &Call, subkind: &str) -> Result<Vec<Value>, ApiError> {
    let gov = governance(c);
    reads::attached(&c.state, |r| {
        let mut nodes = r.all(&Listing::filtered(&Listing::by_author(Kind::GraphNode, gov), &node_filter("subkind", subkind)), MAX_SCAN)?;
        nodes.retain(|n| n.text("status") != "deprecated");
        nodes.sort_by_key(|n| (n.view["metadata"]["displayOrder"].as_i64().unwrap_or(i64::MAX), n.text("label").to_owned()));
        Ok(nodes.iter().map(view).collect())
    })
}

/// `pub.svc.graph.getRelations` → `{relations}`: the relation types (nodes of subkind
/// `relation`), each with its slug, label and metadata (inverse, symmetric, transitive).
fn get_relations(c: &Call) -> Answer {
    Body::json(&json!({"relations": vocabulary(c, "relation")?}))
}

/// `pub.svc.graph.getSubkinds` → `{subkinds}`: the node subkinds (nodes of subkind `subkind`).
fn get_subkinds(c: &Call) -> Answer {
    Body::json(&json!({"subkinds": vocabulary(c, "subkind")?}))
}

/// `pub.svc.graph.expandSubgraph {rootUris, depth?, edgeTypes?, maxNodes?}` → `{nodes,
/// edges, truncated}`: breadth first from the roots over edges both ways (of `edgeTypes`
/// when given, up to 100 each way per node), to `depth` steps, up to `maxNodes` nodes.
fn expand_subgraph(c: &Call) -> Answer {
    let roots = c.params.strs("rootUris");
    let depth = c.params.int("depth").unwrap_or(2).clamp(1, 5) as usize;
    let max_nodes = c.params.int("maxNodes").unwrap_or(100).clamp(1, 200) as usize;
    let types = c.params.strs("edgeTypes");
    let answer = reads::attached(&c.state, |r| {
        let mut nodes: Vec<Item> = Vec::new();
        let mut seen_nodes = BTreeSet::new();
        let mut edges: BTreeMap<String, Item> = BTreeMap::new();
        let mut truncated = false;
        let mut frontier: Vec<String> = Vec::new();
        for root in &roots {
            if let Some(node) = r.get(root)?.filter(|n| n.collection == GRAPH_NODE) {
                if seen_nodes.insert(node.uri.clone()) {
                    frontier.push(node.uri.clone());
                    nodes.push(node);
                }
            }
        }
        for _ in 0..depth {
            let mut next = Vec::new();
            for uri in &frontier {
                for edge in edges_of(r, uri)? {
                    if !types.is_empty() && !types.iter().any(|t| t == edge.text("relationSlug")) {
                        continue;
                    }
                    let other = if edge.text("sourceUri") == uri { edge.text("targetUri") } else { edge.text("sourceUri") }.to_owned();
                    if !seen_nodes.contains(&other) {
                        if nodes.len() >= max_nodes {
                            truncated = true;
                            continue;
                        }
                        let Some(node) = r.get(&other)?.filter(|n| n.collection == GRAPH_NODE) else { continue };
                        seen_nodes.insert(other.clone());
                        nodes.push(node);
                        next.push(other);
                    }
                    edges.insert(edge.uri.clone(), edge);
                }
            }
            frontier = next;
        }
        let edges: Vec<Value> = edges
            .values()
            .filter(|e| seen_nodes.contains(e.text("sourceUri")) && seen_nodes.contains(e.text("targetUri")))
            .map(view)
            .collect();
        Ok(json!({"nodes": nodes.iter().map(view).collect::<Vec<_>>(), "edges": edges, "truncated": truncated}))
    })?;
    Body::json(&answer)
}

/// The most members a community of `getCommunities` lists (its `size` counts them all).
const COMMUNITY_MEMBERS: usize = 50;

/// `pub.svc.graph.getCommunities {algorithm = louvain, limit, minSize}` → `{communities,
/// algorithm, total, generatedAt?}`: the newest communities of the shared graph the
/// communities job found ([`crate::communities`]), largest first, those of at least
/// `minSize` nodes; each with its size and members (up to 50: URI, label, slug), named by
/// its first member with the most edges inside it. Never computed per request: before the
/// job's first run there are none.
fn get_communities(c: &Call) -> Answer {
    let algorithm = c.params.str("algorithm").unwrap_or("louvain");
    if !projections::governance::communities::ALGORITHMS.contains(&algorithm) {
        return Err(ApiError::invalid_param("algorithm", "louvain or label-propagation"));
    }
    let min = c.params.int("minSize").unwrap_or(2).max(1) as usize;
    let limit = c.limit(20);
    let held =
        reads::blocking(&c.state, || projections::governance::read::GovernanceReader::new(c.state.store.as_ref())?.communities(algorithm))?;
    let Some(held) = held else { return Body::json(&json!({"communities": [], "algorithm": algorithm, "total": 0})) };
    let kept: Vec<&Vec<String>> = held.communities.iter().filter(|m| m.len() >= min).collect();
    let communities = reads::attached(&c.state, |r| {
        let mut out = Vec::new();
        for (i, members) in kept.iter().take(limit).enumerate() {
            let mut views = Vec::new();
            for uri in members.iter().take(COMMUNITY_MEMBERS) {
                let node = r.get(uri)?;
                let field = |f: &str| node.as_ref().map(|n| n.view[f].clone()).unwrap_or(Value::Null);
                views.push(json!({"uri": uri, "label": field("label"), "slug": field("slug")}));
            }
            let label = views.first().map(|v| v["label"].clone()).unwrap_or(Value::Null);
            out.push(json!({"id": i, "size": members.len(), "label": label, "members": views}));
        }
        Ok(out)
    })?;
    Body::json(&json!({
        "communities": communities, "algorithm": algorithm, "total": kept.len(), "generatedAt": held.generated_at,
        "nodeCount": held.nodes, "edgeCount": held.edges,
    }))
}

/// `pub.svc.graph.listPersonalNodes {limit, subkind?, cursor?}` (auth) → `{nodes, cursor?}`:
/// the caller's own nodes, newest first.
fn list_personal_nodes(c: &Call) -> Answer {
    let did = c.caller()?.did.clone();
    let mine = Listing::by_author(Kind::GraphNode, &did);
    let list = match c.params.str("subkind") {
        Some(s) => Listing::filtered(&mine, &node_filter("subkind", s)),
        None => mine,
    };
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| Ok(list_answer("nodes", &r.page(&list, c.limit(50), after)?)))?;
    Body::json(&answer)
}

/// `pub.svc.graph.listPersonalEdgeTypes` (auth) → `{relationTypes: [{slug, label?, count,
/// shared}]}`: the relations of the shared graph, and those the caller's own edges use,
/// with how many of the caller's edges use each.
fn list_personal_edge_types(c: &Call) -> Answer {
    let did = c.caller()?.did.clone();
    let shared = vocabulary(c, "relation")?;
    let used = reads::attached(&c.state, |r| {
        let mut used: BTreeMap<String, u64> = BTreeMap::new();
        for edge in r.all(&Listing::by_author(Kind::GraphEdge, &did), MAX_SCAN)? {
            *used.entry(edge.text("relationSlug").to_owned()).or_default() += 1;
        }
        Ok(used)
    })?;
    let mut out = Vec::new();
    for relation in &shared {
        let slug = relation["slug"].as_str().unwrap_or_default();
        out.push(json!({"slug": slug, "label": relation["label"], "count": used.get(slug).copied().unwrap_or(0), "shared": true}));
    }
    for (slug, count) in &used {
        if !shared.iter().any(|r| r["slug"] == slug.as_str()) {
            out.push(json!({"slug": slug, "count": count, "shared": false}));
        }
    }
    Body::json(&json!({"relationTypes": out}))
}
