//! `pub.svc.collection.*` (beyond the contract): users' collections, from the attached
//! model. A collection is a personal knowledge graph node of subkind `collection` in its
//! owner's repository; its items are the owner's edges `contains` from it to anything (an
//! eprint, a node, any record), and a subcollection is a collection with an edge
//! `subcollection-of` to its parent (docs/spec operations.md). A follow is anyone's edge
//! `follows` from their repository (`at://<their DID>`) to what they follow (docs/graph.md,
//! "Collections"). Beside them, Margin's annotations of an eprint (`getMarginAnnotations`).

use std::collections::{BTreeSet, VecDeque};

use projections::attached::collections::graph::{edges_from, edges_to, label_words, node_filter, nodes_of_subkind};
use projections::attached::collections::{Kind, Listing, GRAPH_NODE};
use projections::attached::read::{AttachedReader, Item, Page};
use projections::ProjectionError;
use serde_json::{json, Map, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{check_did, cursor, uri_param};
use crate::reads;
use crate::views::attached::{self, list_answer, next_cursor};

/// The relation of a collection to its items.
pub const CONTAINS: &str = "contains";
/// The relation of a subcollection to its parent.
pub const SUBCOLLECTION_OF: &str = "subcollection-of";
/// The relation of a follower to what they follow.
pub const FOLLOWS: &str = "follows";

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.collection.get", Auth::Open, get)
        .query("pub.svc.collection.getContaining", Auth::Open, get_containing)
        .query("pub.svc.collection.findContainsEdge", Auth::Open, find_contains_edge)
        .query("pub.svc.collection.getParent", Auth::Open, get_parent)
        .query("pub.svc.collection.getSubcollections", Auth::Open, get_subcollections)
        .query("pub.svc.collection.listByOwner", Auth::Open, list_by_owner)
        .query("pub.svc.collection.listPublic", Auth::Open, list_public)
        .query("pub.svc.collection.search", Auth::Open, search)
        .query("pub.svc.collection.getFeed", Auth::Open, get_feed)
        .query("pub.svc.collection.getFollowStatus", Auth::Open, get_follow_status)
        .query("pub.svc.collection.getFollowerCount", Auth::Open, get_follower_count)
        .query("pub.svc.collection.getMarginAnnotations", Auth::Open, get_margin_annotations)
        .kept()
}

/// The most collections a walk of a collection's tree visits.
const MAX_TREE: usize = 100;
/// The most items `get` answers.
const MAX_ITEMS: usize = 1_000;
/// The most rows a filtered listing reads.
const MAX_SCAN: usize = 10_000;

fn is_collection(item: &Item) -> bool {
    item.collection == GRAPH_NODE && item.text("subkind") == "collection"
}

/// The collection at `uri`, if there is one.
fn collection(r: &AttachedReader, uri: &str) -> Result<Option<Item>, ProjectionError> {
    Ok(r.get(uri)?.filter(is_collection))
}

fn no_collection(uri: &str) -> ApiError {
    ApiError::not_found(format!("no collection {uri}"))
}

/// The items of the collection `holder` (owned by `owner`): the owner's `contains` edges
/// from it, newest first, up to `max`.
fn items_of(r: &AttachedReader, owner: &str, holder: &str, max: usize) -> Result<Vec<Item>, ProjectionError> {
    Ok(r.all(&edges_from(holder, Some(CONTAINS)), MAX_SCAN)?.into_iter().filter(|e| e.did == owner).take(max).collect())
}

/// A collection's view: the node's view, its owner, and its item and subcollection counts.
fn view(r: &AttachedReader, item: &Item) -> Result<Value, ProjectionError> {
    let mut out = Map::new();
    out.insert("uri".into(), json!(item.uri));
    out.insert("cid".into(), json!(item.cid));
    out.insert("owner".into(), json!(item.did));
    if let Some(handle) = &item.account.handle {
        out.insert("ownerHandle".into(), json!(handle));
    }
    if let Value::Object(fields) = &item.view {
        out.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    out.insert("itemCount".into(), json!(items_of(r, &item.did, &item.uri, MAX_ITEMS)?.len()));
    out.insert("subcollectionCount".into(), json!(children(r, item)?.len()));
    out.insert("indexedAt".into(), json!(item.indexed_at));
    Ok(Value::Object(out))
}

/// The direct subcollections of `parent`: its owner's collections with an edge
/// `subcollection-of` to it, from the same repository.
fn children(r: &AttachedReader, parent: &Item) -> Result<Vec<Item>, ProjectionError> {
    let mut out = Vec::new();
    for edge in r.all(&edges_to(&parent.uri, Some(SUBCOLLECTION_OF)), MAX_SCAN)? {
        if edge.did != parent.did || out.len() == MAX_TREE {
            continue;
        }
        if let Some(c) = collection(r, edge.text("sourceUri"))?.filter(|c| c.did == parent.did) {
            if !out.iter().any(|o: &Item| o.uri == c.uri) {
                out.push(c);
            }
        }
    }
    Ok(out)
}

/// `uri` and its subcollections, breadth first, each once, up to [`MAX_TREE`].
fn tree(r: &AttachedReader, root: &Item) -> Result<Vec<Item>, ProjectionError> {
    let mut seen = BTreeSet::from([root.uri.clone()]);
    let mut queue = VecDeque::from([root.clone()]);
    let mut out = Vec::new();
    while let Some(c) = queue.pop_front() {
        for child in children(r, &c)? {
            if seen.len() < MAX_TREE && seen.insert(child.uri.clone()) {
                queue.push_back(child);
            }
        }
        out.push(c);
    }
    Ok(out)
}

/// An item of a collection: the edge, what it points at, and its title or label when svc
/// indexes it.
fn item_view(r: &AttachedReader, edge: &Item, holder: &str) -> Result<Value, ProjectionError> {
    let target = edge.text("targetUri");
    let mut out = json!({
        "edgeUri": edge.uri, "uri": target, "collectionUri": holder, "addedAt": edge.view["createdAt"],
    });
    if let Some(title) = r.eprint_title(target)? {
        out["title"] = json!(title);
    } else if let Some(node) = r.get(target)?.filter(|i| i.collection == GRAPH_NODE) {
        out["label"] = node.view["label"].clone();
    }
    Ok(out)
}

/// `pub.svc.collection.get {uri, excludeSubcollectionItems?}` → `{collection, items,
/// subcollections, interItemEdges}`: the items of the collection and, unless excluded, of
/// its subcollections (each with the collection that holds it), its direct subcollections,
/// and the owner's other edges between two of its items.
fn get(c: &Call) -> Answer {
    let uri = c.str("uri");
    let exclude = c.params.bool("excludeSubcollectionItems").unwrap_or(false);
    let answer = reads::attached(&c.state, |r| {
        let Some(root) = collection(r, uri)? else { return Ok(None) };
        let holders = if exclude { vec![root.clone()] } else { tree(r, &root)? };
        let mut items = Vec::new();
        let mut targets = BTreeSet::new();
        for holder in &holders {
            for edge in items_of(r, &root.did, &holder.uri, MAX_ITEMS - items.len())? {
                targets.insert(edge.text("targetUri").to_owned());
                items.push(item_view(r, &edge, &holder.uri)?);
            }
            if items.len() >= MAX_ITEMS {
                break;
            }
        }
        let mut between = Vec::new();
        for target in targets.iter().take(MAX_TREE) {
            for edge in r.all(&edges_from(target, None), MAX_TREE)? {
                if edge.did == root.did && targets.contains(edge.text("targetUri")) {
                    between.push(json!({"uri": edge.uri, "sourceUri": target, "targetUri": edge.view["targetUri"], "relationSlug": edge.view["relationSlug"]}));
                }
            }
        }
        let subcollections = children(r, &root)?.iter().map(|s| view(r, s)).collect::<Result<Vec<_>, _>>()?;
        Ok(Some(json!({"collection": view(r, &root)?, "items": items, "subcollections": subcollections, "interItemEdges": between})))
    })?;
    Body::json(&answer.ok_or_else(|| no_collection(uri))?)
}

/// `pub.svc.collection.getContaining {itemUri, limit}` → `{collections}`: the collections
/// holding the item, newest edge first, each once.
fn get_containing(c: &Call) -> Answer {
    let item = c.str("itemUri");
    let limit = c.limit(50);
    let answer = reads::attached(&c.state, |r| {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for edge in r.all(&edges_to(item, Some(CONTAINS)), MAX_SCAN)? {
            let holder = edge.text("sourceUri");
            if out.len() == limit {
                break;
            }
            if let Some(c) = collection(r, holder)?.filter(|c| c.did == edge.did) {
                if seen.insert(c.uri.clone()) {
                    out.push(view(r, &c)?);
                }
            }
        }
        Ok(out)
    })?;
    Body::json(&json!({"collections": answer}))
}

/// `pub.svc.collection.findContainsEdge {collectionUri, itemUri}` → `{found, edgeUri?,
/// parentCollectionUri?}`: the edge holding the item in the collection or one of its
/// subcollections (the one holding it is `parentCollectionUri`). The Cosmik fields of the
/// reference are never set: svc indexes no Cosmik records.
fn find_contains_edge(c: &Call) -> Answer {
    let (uri, item) = (c.str("collectionUri"), c.str("itemUri"));
    let answer = reads::attached(&c.state, |r| {
        let Some(root) = collection(r, uri)? else { return Ok(json!({"found": false})) };
        for holder in tree(r, &root)? {
            let keep = |e: &Item| e.did == root.did && e.text("targetUri") == item;
            let page = r.page_where(&edges_from(&holder.uri, Some(CONTAINS)), 1, None, Some(&keep), MAX_SCAN)?;
            if let Some(edge) = page.items.first() {
                return Ok(json!({"found": true, "edgeUri": edge.uri, "parentCollectionUri": holder.uri}));
            }
        }
        Ok(json!({"found": false}))
    })?;
    Body::json(&answer)
}

/// `pub.svc.collection.getParent {uri}` → `{parent?}`: the collection this one is a
/// subcollection of (its owner's newest edge `subcollection-of`).
fn get_parent(c: &Call) -> Answer {
    let uri = c.str("uri");
    let answer = reads::attached(&c.state, |r| {
        let Some(child) = collection(r, uri)? else { return Ok(None) };
        for edge in r.all(&edges_from(uri, Some(SUBCOLLECTION_OF)), MAX_TREE)? {
            if edge.did != child.did {
                continue;
            }
            if let Some(parent) = collection(r, edge.text("targetUri"))? {
                return Ok(Some(json!({"parent": view(r, &parent)?})));
            }
        }
        Ok(Some(json!({})))
    })?;
    Body::json(&answer.ok_or_else(|| no_collection(uri))?)
}

/// `pub.svc.collection.getSubcollections {uri}` → `{subcollections}`: the direct ones.
fn get_subcollections(c: &Call) -> Answer {
    let uri = c.str("uri");
    let answer = reads::attached(&c.state, |r| {
        let Some(parent) = collection(r, uri)? else { return Ok(None) };
        Ok(Some(children(r, &parent)?.iter().map(|s| view(r, s)).collect::<Result<Vec<_>, _>>()?))
    })?;
    Body::json(&json!({"subcollections": answer.ok_or_else(|| no_collection(uri))?}))
}

/// `{collections, cursor?, hasMore, total}` of a page of collections.
fn page_answer(r: &AttachedReader, page: &Page) -> Result<Value, ProjectionError> {
    let collections = page.items.iter().map(|i| view(r, i)).collect::<Result<Vec<_>, _>>()?;
    let mut out = json!({"collections": collections, "hasMore": page.next.is_some(), "total": page.total});
    if let Some(c) = next_cursor(page) {
        out["cursor"] = json!(c);
    }
    Ok(out)
}

/// `pub.svc.collection.listByOwner {did, limit, cursor?}`: the owner's collections, newest
/// first.
fn list_by_owner(c: &Call) -> Answer {
    let did = c.str("did");
    check_did("did", did)?;
    let list = Listing::filtered(&Listing::by_author(Kind::GraphNode, did), &node_filter("subkind", "collection"));
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| page_answer(r, &r.page(&list, c.limit(50), after)?))?;
    Body::json(&answer)
}

/// The words a collection is found by: its label's, its alternate labels' and its
/// description's.
fn words_of(item: &Item) -> BTreeSet<String> {
    let mut words: BTreeSet<String> = label_words(item.text("label")).into_iter().collect();
    words.extend(label_words(item.text("description")));
    for alt in item.view["alternateLabels"].as_array().into_iter().flatten() {
        words.extend(label_words(alt.as_str().unwrap_or_default()));
    }
    words
}

/// Every word of `query` starts a word of the collection.
fn matches(item: &Item, query: &[String]) -> bool {
    let words = words_of(item);
    query.iter().all(|q| words.iter().any(|w| w.starts_with(q.as_str())))
}

/// `pub.svc.collection.listPublic {tag?, limit, cursor?}`: every collection, newest first;
/// with `tag`, those with the tag's words among their words (label, alternate labels,
/// description: a node carries no tags). Collections have no visibility field: all are
/// public.
fn list_public(c: &Call) -> Answer {
    let tag = c.params.str("tag").map(label_words);
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let keep = |i: &Item| tag.as_ref().is_none_or(|t| words_of(i).is_superset(&t.iter().cloned().collect()));
        let page = r.page_where(
            &nodes_of_subkind("collection"),
            c.limit(20),
            after,
            tag.is_some().then_some(&keep as &dyn Fn(&Item) -> bool),
            MAX_SCAN,
        )?;
        page_answer(r, &page)
    })?;
    Body::json(&answer)
}

/// `pub.svc.collection.search {query, limit, cursor?}`: the collections each of whose
/// query words starts a word of their label, alternate labels or description, newest first
/// (among the newest 10,000 collections).
fn search(c: &Call) -> Answer {
    let query = label_words(c.str("query"));
    if query.is_empty() {
        return Err(ApiError::invalid_param("query", "a word to search for"));
    }
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let keep = |i: &Item| matches(i, &query);
        page_answer(r, &r.page_where(&nodes_of_subkind("collection"), c.limit(20), after, Some(&keep), MAX_SCAN)?)
    })?;
    Body::json(&answer)
}

/// `pub.svc.collection.getFeed {uri, limit, cursor?}` → `{events, cursor?, hasMore}`: what
/// happened in the collection, newest first: items added, and reviews and endorsements of
/// the eprints it holds. The cursor is the time (µs) of the last event answered.
fn get_feed(c: &Call) -> Answer {
    let uri = c.str("uri");
    let limit = c.limit(30);
    let before = match c.params.str("cursor") {
        Some(s) => Some(s.parse::<i64>().map_err(|_| ApiError::invalid_param("cursor", "a cursor from an earlier page"))?),
        None => None,
    };
    let answer = reads::attached(&c.state, |r| {
        let Some(root) = collection(r, uri)? else { return Ok(None) };
        let mut events: Vec<(i64, String, Value)> = Vec::new();
        let fresh = |at: i64| before.is_none_or(|b| at < b);
        let edges = items_of(r, &root.did, &root.uri, MAX_ITEMS)?;
        for edge in &edges {
            let target = edge.text("targetUri");
            if fresh(edge.created_at) {
                events.push((
                    edge.created_at,
                    edge.uri.clone(),
                    json!({"type": "itemAdded", "uri": edge.uri, "subjectUri": target, "actor": edge.did}),
                ));
            }
            if r.eprint_title(target)?.is_none() {
                continue;
            }
            for (kind, name) in [(Kind::Review, "review"), (Kind::Endorsement, "endorsement")] {
                for item in r.page(&Listing::on_eprint(kind, target), limit + 1, None)?.items {
                    if fresh(item.created_at) && !item.deleted {
                        events.push((
                            item.created_at,
                            item.uri.clone(),
                            json!({"type": name, "uri": item.uri, "subjectUri": target, "actor": item.did}),
                        ));
                    }
                }
            }
        }
        events.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        let more = events.len() > limit;
        events.truncate(limit);
        let next = if more { events.last().map(|e| e.0) } else { None };
        let list: Vec<Value> = events
            .into_iter()
            .map(|(at, _, mut v)| {
                v["createdAt"] =
                    json!(chrono::DateTime::from_timestamp_micros(at).map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)));
                v
            })
            .collect();
        let mut out = json!({"events": list, "hasMore": more});
        if let Some(n) = next {
            out["cursor"] = json!(n.to_string());
        }
        Ok(Some(out))
    })?;
    Body::json(&answer.ok_or_else(|| no_collection(uri))?)
}

/// `pub.svc.collection.getFollowStatus {followerDid, subject}` → `{followUri?}`: the
/// follower's newest edge `follows` to the subject.
fn get_follow_status(c: &Call) -> Answer {
    let (did, subject) = (c.str("followerDid"), c.str("subject"));
    check_did("followerDid", did)?;
    let answer = reads::attached(&c.state, |r| {
        let keep = |e: &Item| e.did == did;
        Ok(r.page_where(&edges_to(subject, Some(FOLLOWS)), 1, None, Some(&keep), MAX_SCAN)?.items.into_iter().next())
    })?;
    Body::json(&match answer {
        Some(edge) => json!({"followUri": edge.uri}),
        None => json!({}),
    })
}

/// `pub.svc.collection.getFollowerCount {uri}` → `{count}`: the edges `follows` to it.
fn get_follower_count(c: &Call) -> Answer {
    let uri = c.str("uri");
    let count = reads::attached(&c.state, |r| r.count(&edges_to(uri, Some(FOLLOWS))))?;
    Body::json(&json!({"count": count}))
}

/// `getMarginAnnotations {eprintUri}` → `{annotations, cursor?, hasMore, total}`: Margin's
/// annotations and highlights whose target is the eprint, newest first, each with its
/// `author` and (as the reference names it) `authorDid`.
fn get_margin_annotations(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "eprintUri")?;
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let page = r.page(&Listing::on_eprint(Kind::Margin, eprint), c.limit(50), after)?;
        let views = page
            .items
            .iter()
            .map(|item| {
                let mut v = attached::view(item, "author");
                v["authorDid"] = json!(item.did);
                v
            })
            .collect();
        Ok(list_answer("annotations", views, &page))
    })?;
    Body::json(&answer)
}
