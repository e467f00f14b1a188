//! `pub.svc.annotation.*`: inline annotations and entity links on eprints, by eprint, page,
//! thread and author, from the attached model.

use projections::attached::collections::{Kind, Listing, ANNOTATION};
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
        .query("pub.svc.annotation.listForEprint", Auth::Open, list_for_eprint)
        .kept()
        .aliases(&[("uri", "eprintUri")])
        .query("pub.svc.annotation.listForPage", Auth::Open, list_for_page)
        .kept()
        .aliases(&[("uri", "eprintUri")])
        .query("pub.svc.annotation.getThread", Auth::Open, get_thread)
        .kept()
        .query("pub.svc.annotation.listByAuthor", Auth::Open, list_by_author)
        .kept()
        .aliases(&[("did", "annotatorDid")])
}

/// The most entity links or annotations one answer carries when it has no paging.
pub const MAX_UNPAGED: usize = 500;

/// An annotation's view: the stored view with `author`, `replyCount` and `deleted` (a
/// placeholder's view has no content).
fn annotation_view(r: &AttachedReader, item: &Item) -> Result<Value, ProjectionError> {
    let mut v = attached::view(item, "author");
    v["replyCount"] = json!(r.count(&Listing::replies(Kind::Annotation, &item.uri))?);
    v["deleted"] = json!(item.deleted);
    Ok(v)
}

/// An entity link's view: the stored view with its `creator`.
fn entity_link_view(item: &Item) -> Value {
    attached::view(item, "creator")
}

/// The text position of an item's target, for ordering the items of one page as the text
/// reads.
fn position(item: &Item) -> (i64, i64) {
    let start = item.view.pointer("/target/refinedBy/start").and_then(Value::as_i64).unwrap_or(i64::MAX);
    (start, item.created_at)
}

fn on_page(eprint: &str, kind: Kind, page: i64) -> Listing {
    Listing::filtered(&Listing::on_eprint(kind, eprint), &format!("page:{page}"))
}

/// The entity links of an eprint (of one page when `page` is given), in text order.
fn entity_links(r: &AttachedReader, eprint: &str, page: Option<i64>) -> Result<Vec<Value>, ProjectionError> {
    let list = match page {
        Some(p) => on_page(eprint, Kind::EntityLink, p),
        None => Listing::on_eprint(Kind::EntityLink, eprint),
    };
    let mut items = r.all(&list, MAX_UNPAGED)?;
    items.sort_by_key(position);
    Ok(items.iter().map(entity_link_view).collect())
}

/// `pub.svc.annotation.listForEprint`: `{annotations, entityLinks?, cursor?, hasMore, total}`.
fn list_for_eprint(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "eprintUri")?;
    let after = cursor(&c.params)?;
    let (page_number, motivation) = (c.params.int("pageNumber"), c.params.str("motivation").map(str::to_owned));
    let answer = reads::attached(&c.state, |r| {
        let base = match page_number {
            Some(p) => on_page(eprint, Kind::Annotation, p),
            None => Listing::on_eprint(Kind::Annotation, eprint),
        };
        let page: Page = match (&motivation, page_number) {
            (Some(m), None) => r.page(&Listing::filtered(&base, &format!("motivation:{m}")), c.limit(50), after)?,
            (Some(m), Some(_)) => r.page(&Listing::filtered(&base, &format!("motivation:{m}")), c.limit(50), after)?,
            (None, _) => r.page(&base, c.limit(50), after)?,
        };
        let annotations = page.items.iter().map(|i| annotation_view(r, i)).collect::<Result<Vec<_>, _>>()?;
        let mut out = list_answer("annotations", annotations, &page);
        if c.params.bool("includeEntityLinks") == Some(true) {
            out["entityLinks"] = json!(entity_links(r, eprint, page_number)?);
        }
        Ok(out)
    })?;
    Body::json(&answer)
}

/// `pub.svc.annotation.listForPage`: `{annotations, entityLinks, pageNumber}`, in the order
/// of the text.
fn list_for_page(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "eprintUri")?;
    let page = c.params.int("pageNumber").unwrap_or(1);
    let answer = reads::attached(&c.state, |r| {
        let mut items = r.all(&on_page(eprint, Kind::Annotation, page), MAX_UNPAGED)?;
        items.sort_by_key(position);
        let annotations = items.iter().map(|i| annotation_view(r, i)).collect::<Result<Vec<_>, _>>()?;
        let links = if c.params.bool("includeEntityLinks") != Some(false) { entity_links(r, eprint, Some(page))? } else { Vec::new() };
        Ok(json!({"annotations": annotations, "entityLinks": links, "pageNumber": page}))
    })?;
    Body::json(&answer)
}

/// Appends the replies to `uri` depth-first (each reply, then its own replies; siblings
/// oldest first), down to `max_depth`.
fn depth_first(r: &AttachedReader, uri: &str, depth: i64, max_depth: i64, out: &mut Vec<Value>) -> Result<(), ProjectionError> {
    if depth > max_depth {
        return Ok(());
    }
    let mut items = r.all(&Listing::replies(Kind::Annotation, uri), super::review::MAX_THREAD_REPLIES)?;
    items.reverse();
    for item in items {
        let mut v = annotation_view(r, &item)?;
        v["depth"] = json!(depth);
        out.push(v);
        depth_first(r, &item.uri, depth + 1, max_depth, out)?;
    }
    Ok(())
}

/// `pub.svc.annotation.getThread`: `{thread, totalReplies}`, the root first, then its replies
/// depth-first; `NotFound` for a URI that is no indexed annotation.
fn get_thread(c: &Call) -> Answer {
    let uri = uri_param(&c.params, "uri")?;
    let max_depth = c.params.int("maxDepth").unwrap_or(10);
    let answer = reads::attached(&c.state, |r| {
        let Some(root) = r.get(uri)?.filter(|i| i.collection == ANNOTATION) else { return Ok(None) };
        let mut root_view = annotation_view(r, &root)?;
        root_view["depth"] = json!(0);
        let mut thread = vec![root_view];
        depth_first(r, &root.uri, 1, max_depth, &mut thread)?;
        let total = thread.len() - 1;
        Ok(Some(json!({"thread": thread, "totalReplies": total})))
    })?;
    let answer = answer.ok_or_else(|| ApiError::not_found(format!("no annotation at {uri}")))?;
    Body::json(&answer)
}

/// `pub.svc.annotation.listByAuthor`: the annotations one account wrote.
fn list_by_author(c: &Call) -> Answer {
    let did = did_param(&c.params, "annotatorDid")?;
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let base = Listing::by_author(Kind::Annotation, did);
        let list = match c.params.str("motivation") {
            Some(m) => Listing::filtered(&base, &format!("motivation:{m}")),
            None => base,
        };
        let page = r.page(&list, c.limit(50), after)?;
        let annotations = page.items.iter().map(|i| annotation_view(r, i)).collect::<Result<Vec<_>, _>>()?;
        Ok(list_answer("annotations", annotations, &page))
    })?;
    Body::json(&answer)
}
