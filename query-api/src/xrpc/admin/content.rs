//! The admin operations on what the index holds: counts, users, content listings, and
//! taking content down (`deleteContent`, a command event every read model applies).

use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, Source};
use lexicons::SUBMISSION;
use projections::access::read::AccessReader;
use projections::access::Role;
use projections::attached::collections::{Kind, Listing, ENDORSEMENT, REVIEW, USER_TAG};
use projections::attached::read::AttachedReader;
use projections::eprints::read::EprintsReader;
use projections::search::SortOrder;
use serde_json::{json, Value};

use super::not_found_error;
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{did_param, offset};
use crate::reads::blocking;
use crate::search::SearchArgs;
use crate::xrpc::method::{Answer, Auth, Call, Routes};

/// The deepest offset the offset-paged listings reach (they read up to it and skip).
const MAX_OFFSET: usize = 10_000;

pub(super) fn routes() -> Routes {
    let admin = Auth::Role(Role::Admin);
    Routes::new()
        .query_async("pub.svc.admin.getOverview", admin, overview)
        .query("pub.svc.admin.searchUsers", admin, search_users)
        .query("pub.svc.admin.getUserDetail", admin, user_detail)
        .query_async("pub.svc.admin.listEprints", admin, list_eprints)
        .query("pub.svc.admin.listReviews", admin, list_reviews)
        .query("pub.svc.admin.listEndorsements", admin, list_endorsements)
        .procedure("pub.svc.admin.deleteContent", admin, delete_content)
        .query("pub.svc.admin.getGraphStats", admin, graph_stats)
}

/// `getGraphStats`: the shared knowledge graph's (the governance repository's) nodes and
/// edges, its nodes of the field, author and institution subkinds, and the pending
/// proposals; `nodeCount` and `edgeCount` repeat the totals under the reference's names.
fn graph_stats(c: &Call) -> Answer {
    use projections::attached::collections::graph::node_filter;
    let gov = c.state.identity.governance_did.as_str();
    let stats = crate::reads::attached(&c.state, |r| {
        let nodes = Listing::by_author(Kind::GraphNode, gov);
        let of_subkind = |s: &str| r.count(&Listing::filtered(&nodes, &node_filter("subkind", s)));
        let (total_nodes, total_edges) = (r.count(&nodes)?, r.count(&Listing::by_author(Kind::GraphEdge, gov))?);
        Ok(json!({
            "totalNodes": total_nodes, "totalEdges": total_edges,
            "fieldNodes": of_subkind("field")?, "authorNodes": of_subkind("author")?, "institutionNodes": of_subkind("institution")?,
            "pendingProposals": crate::xrpc::governance::pending_count(
                r,
                &projections::governance::read::GovernanceReader::new(c.state.store.as_ref())?,
                &c.state.identity.consensus,
                gov,
                None,
                None,
            )?,
            "nodeCount": total_nodes, "edgeCount": total_edges,
        }))
    })?;
    Body::json(&stats)
}

/// `getOverview`: `{eprints, authors, reviews, endorsements, collections, tags, reports}`
/// (`reports`: the users' reports, `moderation.createReport`). `authors`
/// counts the users the index knows (every DID that wrote a record); `collections` the
/// knowledge graph nodes of subkind `collection`, in every repository (docs/graph.md).
async fn overview(c: Call) -> Answer {
    let index = c.state.search_index().map_err(ApiError::from_error)?;
    let (eprints, users) = index.as_ref().map_or((0, 0), |index| (index.num_docs(), index.people().count()));
    let (reviews, endorsements, tags, reports, collections) = blocking(&c.state, || -> Result<_, ApiError> {
        let r = AttachedReader::new(c.state.store.as_ref())?;
        let count = |collection: &str| r.count(&Listing::collection(collection));
        let reports = projections::admin::read::AdminReader::new(c.state.store.as_ref())?.report_count()?;
        let collections = r.count(&projections::attached::collections::graph::nodes_of_subkind("collection"))?;
        Ok((count(REVIEW)?, count(ENDORSEMENT)?, count(USER_TAG)?, reports, collections))
    })?;
    Body::json(&json!({
        "eprints": eprints, "authors": users, "reviews": reviews, "endorsements": endorsements, "collections": collections, "tags": tags,
        "reports": reports,
    }))
}

/// One user as the admin listings show it, or `None` for a DID the index does not know.
fn user(c: &Call, did: &str, detail: bool) -> Result<Option<Value>, ApiError> {
    blocking(&c.state, || -> Result<Option<Value>, ApiError> {
        let eprints = EprintsReader::new(c.state.store.as_ref())?;
        let Some(first_seen) = eprints.user_first_seen(did)? else { return Ok(None) };
        let account = eprints.account(did)?;
        let attached = AttachedReader::new(c.state.store.as_ref())?;
        let count = |kind: Kind| attached.count(&Listing::by_author(kind, did));
        let grants = AccessReader::new(c.state.store.as_ref())?.roles(did)?;
        let mut out = json!({
            "did": did,
            "eprintCount": eprints.author_eprint_count(did)?,
            "reviewCount": count(Kind::Review)?,
            "endorsementCount": count(Kind::Endorsement)?,
            "roles": grants.iter().map(|g| g.role).collect::<Vec<_>>(),
            "createdAt": first_seen,
        });
        if let Some(h) = account.handle {
            out["handle"] = json!(h);
        }
        if let Some(n) = account.display_name {
            out["displayName"] = json!(n);
        }
        if detail {
            out["annotationCount"] = json!(count(Kind::Annotation)?);
            out["tagCount"] = json!(count(Kind::Tag)?);
            out["roleAssignments"] = json!(grants);
            out["hidden"] = json!(account.hidden);
        }
        Ok(Some(out))
    })
}

/// `searchUsers`: the users whose DID or handle starts with `query`.
fn search_users(c: &Call) -> Answer {
    let query = c.str("query").trim().to_owned();
    if query.is_empty() {
        return Err(ApiError::invalid_param("query", "a handle or DID prefix"));
    }
    let dids = match c.state.search_index().map_err(ApiError::from_error)? {
        Some(index) => blocking(&c.state, || index.people().by_prefix(&query, c.limit(20)))?,
        None => Vec::new(),
    };
    let mut users = Vec::with_capacity(dids.len());
    for did in dids {
        users.extend(user(c, &did, false)?);
    }
    Body::json(&json!({"users": users}))
}

/// `getUserDetail`: one user; `NotFoundError` for a DID the index does not know.
fn user_detail(c: &Call) -> Answer {
    let did = did_param(&c.params, "did")?;
    let found = user(c, did, true)?.ok_or_else(|| not_found_error(format!("{did} is not in the index")))?;
    Body::json(&found)
}

/// `listEprints`: `{items: [{uri, title, authorDid, createdAt}], total}`, newest first,
/// matching `q` when given (the search index's query syntax).
async fn list_eprints(c: Call) -> Answer {
    let skip = c.params.int("offset").unwrap_or(0).max(0) as usize;
    if skip > MAX_OFFSET {
        return Err(ApiError::invalid_param("offset", format!("at most {MAX_OFFSET}")));
    }
    let limit = c.limit(50);
    let args = SearchArgs {
        query: c.params.str("q").unwrap_or_default().to_owned(),
        sort: Some(SortOrder::Date),
        limit: skip + limit,
        ..SearchArgs::default()
    };
    let page = crate::search::search(&c.state, args).await?;
    let items: Vec<Value> = page
        .hits
        .iter()
        .skip(skip)
        .filter_map(|hit| serde_json::from_str::<Value>(hit).ok())
        .map(|s| {
            let uri = s["uri"].as_str().unwrap_or_default().to_owned();
            let author = lexicons::formats::parse_at_uri(&uri).map(|u| u.authority.to_owned()).unwrap_or_default();
            json!({"uri": uri, "title": s["title"], "authorDid": author, "createdAt": s["createdAt"]})
        })
        .collect();
    Body::json(&json!({"items": items, "total": page.total}))
}

/// `listReviews`.
fn list_reviews(c: &Call) -> Answer {
    list_attached(c, REVIEW)
}

/// `listEndorsements`.
fn list_endorsements(c: &Call) -> Answer {
    list_attached(c, ENDORSEMENT)
}

/// `listReviews` and `listEndorsements`: every record of `collection`, newest first, in
/// pages addressed by a numeric offset (`cursor`).
fn list_attached(c: &Call, collection: &str) -> Answer {
    let skip = offset(&c.params)?;
    if skip > MAX_OFFSET {
        return Err(ApiError::invalid_param("cursor", format!("at most {MAX_OFFSET}")));
    }
    let limit = c.limit(50);
    let page = crate::reads::attached(&c.state, |r| r.page(&Listing::collection(collection), skip + limit, None))?;
    let items: Vec<Value> = page
        .items
        .iter()
        .skip(skip)
        .map(|i| {
            let eprint = i.view["eprintUri"].clone();
            if collection == REVIEW {
                json!({"uri": i.uri, "eprintUri": eprint, "reviewerDid": i.did, "motivation": i.view["motivation"], "createdAt": i.view["createdAt"]})
            } else {
                json!({"uri": i.uri, "eprintUri": eprint, "endorserDid": i.did, "createdAt": i.view["createdAt"]})
            }
        })
        .collect();
    let mut out = json!({"items": items, "total": page.total});
    if ((skip + items.len()) as u64) < page.total && !items.is_empty() {
        out["cursor"] = json!((skip + items.len()).to_string());
    }
    Body::json(&out)
}

/// `deleteContent`: `{success, uri}` once this node's read models took the record down. The
/// command event (`command.admin` `contentDeleted`, keyed by the record's repository) names
/// the acting admin and the reason: every read model drops the record and keeps it out of
/// every later write, on every node, and a replay does the same.
async fn delete_content(c: Call) -> Answer {
    let admin = c.caller()?.did.clone();
    let uri = c.input["uri"].as_str().unwrap_or_default().to_owned();
    let collection = c.input["collection"].as_str().unwrap_or_default().to_owned();
    let reason = c.input["reason"].as_str().map(str::to_owned);
    crate::params::parse_record_uri("uri", &uri)?;
    let parsed = lexicons::formats::parse_at_uri(&uri).expect("checked above");
    if parsed.collection != Some(collection.as_str()) {
        return Err(ApiError::invalid_param(
            "collection",
            format!("the URI names the collection {:?}, not {collection}", parsed.collection),
        ));
    }
    if !projections::catalog::deletable(&collection) {
        return Err(ApiError::invalid_param("collection", format!("records of {collection} cannot be taken down")));
    }
    let repo = parsed.authority.to_owned();
    let indexed = blocking(&c.state, || -> Result<bool, ApiError> {
        Ok(if collection == SUBMISSION {
            EprintsReader::new(c.state.store.as_ref())?.get(&uri)?.is_some()
        } else {
            AttachedReader::new(c.state.store.as_ref())?.get(&uri)?.is_some()
        })
    })?;
    if !indexed {
        return Err(not_found_error(format!("no indexed record at {uri}")));
    }
    let event = NewEvent {
        key: repo,
        source: Source::Command { nsid: "pub.svc.admin.deleteContent".into(), caller: admin.clone(), host: String::new() },
        payload: Payload::Admin(AdminCommand {
            actor: admin,
            action: AdminAction::ContentDeleted { uri: uri.clone(), collection: collection.clone(), reason },
        }),
    };
    crate::command::append(&c.state, event).await?;
    metrics::counter!("svc_admin_actions_total", "action" => "delete", "target" => collection).increment(1);
    Body::json(&json!({"success": true, "uri": uri}))
}
