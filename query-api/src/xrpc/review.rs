//! `pub.svc.review.*`: reviews of eprints and their threads, from the attached model.

use projections::attached::collections::{Kind, Listing, REVIEW};
use projections::attached::read::{AttachedReader, Item, Page};
use projections::ProjectionError;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{cursor, did_param, uri_param};
use crate::reads;
use crate::views::attached::{self, list_answer};

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.review.listForEprint", Auth::Open, list_for_eprint)
        .kept()
        .aliases(&[("uri", "eprintUri")])
        .query("pub.svc.review.listForAuthor", Auth::Open, list_for_author)
        .kept()
        .aliases(&[("did", "reviewerDid")])
        .query("pub.svc.review.getThread", Auth::Open, get_thread)
        .kept()
}

/// The deepest a thread is followed (replies of replies…), against cycles and abuse.
pub const MAX_THREAD_DEPTH: usize = 50;

/// The most replies to one review or annotation a thread shows (a thread answers whole).
pub const MAX_THREAD_REPLIES: usize = 10_000;

/// A review's view: the stored view with `author`, `replyCount` and `deleted` (a
/// placeholder's view has no content).
pub fn review_view(r: &AttachedReader, item: &Item) -> Result<Value, ProjectionError> {
    let mut v = attached::view(item, "author");
    v["replyCount"] = json!(r.count(&Listing::replies(Kind::Review, &item.uri))?);
    v["deleted"] = json!(item.deleted);
    Ok(v)
}

/// The listing of `base` narrowed by the `motivation` and `inlineOnly` filters.
fn filtered(r: &AttachedReader, c: &Call, base: Listing, after: Option<Vec<u8>>) -> Result<Page, ProjectionError> {
    let (limit, motivation, inline) = (c.limit(50), c.params.str("motivation"), c.params.bool("inlineOnly") == Some(true));
    match (motivation, inline) {
        (Some(m), true) => r.page(&Listing::filtered(&Listing::filtered(&base, &format!("motivation:{m}")), "inline"), limit, after),
        (Some(m), false) => r.page(&Listing::filtered(&base, &format!("motivation:{m}")), limit, after),
        (None, true) => r.page(&Listing::filtered(&base, "inline"), limit, after),
        (None, false) => r.page(&base, limit, after),
    }
}

fn list(c: &Call, base: Listing) -> Answer {
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let page = filtered(r, c, base, after)?;
        let reviews = page.items.iter().map(|i| review_view(r, i)).collect::<Result<Vec<_>, _>>()?;
        Ok(list_answer("reviews", reviews, &page))
    })?;
    Body::json(&answer)
}

/// `pub.svc.review.listForEprint`: `{reviews, cursor?, hasMore, total}`, newest first.
fn list_for_eprint(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "eprintUri")?;
    list(c, Listing::on_eprint(Kind::Review, eprint))
}

/// `pub.svc.review.listForAuthor`: the reviews one account wrote.
fn list_for_author(c: &Call) -> Answer {
    let did = did_param(&c.params, "reviewerDid")?;
    list(c, Listing::by_author(Kind::Review, did))
}

/// The replies to `uri`, oldest first (a thread reads in the order it was written), each
/// with its own replies nested; counts them into `total`.
fn replies(r: &AttachedReader, uri: &str, depth: usize, total: &mut u64) -> Result<Vec<Value>, ProjectionError> {
    if depth >= MAX_THREAD_DEPTH {
        return Ok(Vec::new());
    }
    let mut items = r.all(&Listing::replies(Kind::Review, uri), MAX_THREAD_REPLIES)?;
    items.reverse();
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        *total += 1;
        let mut v = review_view(r, &item)?;
        v["replies"] = Value::Array(replies(r, &item.uri, depth + 1, total)?);
        out.push(v);
    }
    Ok(out)
}

/// `pub.svc.review.getThread`: `{parent, replies, totalReplies}`; `NotFound` for a URI that
/// is no indexed review.
fn get_thread(c: &Call) -> Answer {
    let uri = uri_param(&c.params, "uri")?;
    let answer = reads::attached(&c.state, |r| {
        let Some(root) = r.get(uri)?.filter(|i| i.collection == REVIEW) else { return Ok(None) };
        let mut total = 0;
        let replies = replies(r, &root.uri, 0, &mut total)?;
        Ok(Some(json!({"parent": review_view(r, &root)?, "replies": replies, "totalReplies": total})))
    })?;
    let answer = answer.ok_or_else(|| ApiError::not_found(format!("no review at {uri}")))?;
    Body::json(&answer)
}
