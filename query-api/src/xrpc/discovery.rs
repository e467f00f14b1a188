//! `pub.svc.discovery.*`: the citation graph around an eprint, from the citation records
//! svc indexes.

use projections::attached::collections::{Kind, Listing};
use projections::attached::read::Item;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{cursor, uri_param};
use crate::reads;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new().query("pub.svc.discovery.getCitations", Auth::Open, get_citations)
}

/// One edge of the citation graph.
fn edge(item: &Item, direction: &str) -> Value {
    let cited = &item.view["citedWork"];
    let mut v = json!({
        "uri": item.uri,
        "direction": direction,
        "eprintUri": item.view["eprintUri"],
        "title": cited["title"],
        "relation": item.view["citationType"],
        "citedWork": cited,
        "createdAt": item.view["createdAt"],
    });
    if let Some(target) = cited["svcUri"].as_str() {
        v["targetUri"] = json!(target);
    }
    v
}

/// `pub.svc.discovery.getCitations`: `{eprint, counts, citations, cursor?, hasMore}`: the works
/// the eprint cites (`citing`), the citation records that cite it (`cited`, or the
/// reference's `cited-by`), or both, newest first; `NotFound` for an eprint svc does not
/// index.
fn get_citations(c: &Call) -> Answer {
    let uri = uri_param(&c.params, "uri")?;
    let after = cursor(&c.params)?;
    let direction = c.params.str("direction").unwrap_or("both");
    let (citing_wanted, cited_wanted) = match direction {
        "citing" => (true, false),
        "cited" | "cited-by" => (false, true),
        _ => (true, true),
    };
    let limit = c.limit(20);
    let answer = reads::attached(&c.state, |r| {
        let Some(title) = r.eprint_title(uri)? else { return Ok(None) };
        let (citing, cited) = (Listing::on_eprint(Kind::Citation, uri), Listing::pointing_at(Kind::Citation, uri));
        // The next page of each direction asked for, merged newest first: bounded reads.
        let mut edges: Vec<(Vec<u8>, Value)> = Vec::new();
        if citing_wanted {
            edges.extend(r.page(&citing, limit + 1, after.clone())?.items.iter().map(|i| (i.listing_key(), edge(i, "citing"))));
        }
        if cited_wanted {
            edges.extend(r.page(&cited, limit + 1, after.clone())?.items.iter().map(|i| (i.listing_key(), edge(i, "cited"))));
        }
        edges.sort_by(|a, b| b.0.cmp(&a.0));
        edges.dedup_by(|a, b| a.0 == b.0 && a.1["direction"] == b.1["direction"]);
        let mut rest = edges;
        let has_more = rest.len() > limit;
        rest.truncate(limit);
        let mut out = json!({
            "eprint": {"uri": uri, "title": title},
            "counts": {"citing": r.count(&citing)?, "cited": r.count(&cited)?},
            "hasMore": has_more,
        });
        if has_more {
            out["cursor"] = json!(data_encoding::BASE64URL_NOPAD.encode(&rest.last().map(|e| e.0.clone()).unwrap_or_default()));
        }
        out["citations"] = Value::Array(rest.into_iter().map(|(_, v)| v).collect());
        Ok(Some(out))
    })?;
    let answer = answer.ok_or_else(|| ApiError::not_found(format!("no eprint at {uri}")))?;
    Body::json(&answer)
}
