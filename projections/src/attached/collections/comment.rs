//! Reviews and annotations: their motivation, text, target and page, listed on their eprint,
//! by their author, under their parent, and by motivation, inline target and page.

use serde_json::{json, Value};

use super::{created_at, get, object, plain_text, text, Listing, Normalized, Record};

/// The page of a comment's text-span target, 1-indexed as the API numbers pages: the
/// refinement's `pageNumber` (0-indexed in the record) plus one, else the bounding box's
/// `pageNumber` (1-indexed in the record).
fn target_page(target: &Value) -> Option<i64> {
    let refined = target.get("refinedBy")?;
    refined
        .get("pageNumber")
        .and_then(Value::as_i64)
        .map(|p| p + 1)
        .or_else(|| refined.pointer("/boundingRect/pageNumber").and_then(Value::as_i64))
}

/// The motivation of a review or annotation: the fallback, else the last segment of the
/// motivation node's URI, else `replying` for a reply and `commenting` otherwise.
fn motivation(r: &Value, parent: Option<&str>) -> String {
    if let Some(m) = text(r, "motivationFallback") {
        return m.to_owned();
    }
    if let Some(uri) = text(r, "motivationUri") {
        if let Some(last) = uri.rsplit('/').next().filter(|s| !s.is_empty()) {
            return last.to_owned();
        }
    }
    if parent.is_some() { "replying" } else { "commenting" }.to_owned()
}

/// A review or an annotation.
pub(super) fn comment(rec: &Record) -> Result<Normalized, String> {
    let (collection, did, r) = (rec.collection, rec.did, rec.value);
    let kind = rec.kind;
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let parent_field = if collection == super::REVIEW { "parentComment" } else { "parentAnnotation" };
    let parent = text(r, parent_field);
    let motivation = motivation(r, parent);
    let body = r.get("body").cloned().unwrap_or(Value::Null);
    let content = plain_text(&body);
    let target = r.get("target").cloned();
    let page = target.as_ref().and_then(target_page);
    let parent_key = if collection == super::REVIEW { "parentReviewUri" } else { "parentAnnotationUri" };
    let mut view = object(vec![
        ("eprintUri", json!(eprint)),
        ("content", json!(content)),
        ("body", json!({"text": content, "facets": [], "items": body})),
        ("motivation", json!(motivation)),
        ("motivationUri", get(r, "motivationUri")),
        ("createdAt", get(r, "createdAt")),
    ]);
    view[parent_key] = parent.map_or(Value::Null, |p| json!(p));
    if let Some(t) = &target {
        let mut t = t.clone();
        if let Some(p) = page {
            t["page"] = json!(p);
        }
        if t.get("source").is_none() {
            t["source"] = json!(eprint);
        }
        view["target"] = t;
    }
    let on_eprint = Listing::on_eprint(kind, eprint);
    let by_author = Listing::by_author(kind, did);
    let by_motivation = |base: &Listing| Listing::filtered(base, &format!("motivation:{motivation}"));
    let mut lists = vec![by_motivation(&on_eprint), by_motivation(&by_author)];
    // Each filter the operations combine has a listing of its own, so no page filters.
    if target.is_some() {
        lists.push(Listing::filtered(&on_eprint, "inline"));
        lists.push(Listing::filtered(&by_author, "inline"));
        lists.push(Listing::filtered(&by_motivation(&on_eprint), "inline"));
        lists.push(Listing::filtered(&by_motivation(&by_author), "inline"));
    }
    if let Some(p) = page {
        let on_page = Listing::filtered(&on_eprint, &format!("page:{p}"));
        lists.push(by_motivation(&on_page));
        lists.push(on_page);
    }
    if let Some(parent) = parent {
        lists.push(Listing::replies(kind, parent));
    }
    lists.push(on_eprint);
    lists.push(by_author);
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}

/// The placeholder of a deleted review or annotation: what keeps its place in a thread and
/// its listings (its eprint, parent, motivation, date, and the page its target is on),
/// with an empty text and body and no quoted selection.
pub(super) fn placeholder(view: &Value) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("content".into(), json!(""));
    out.insert("body".into(), json!({"text": "", "facets": []}));
    for key in ["eprintUri", "parentReviewUri", "parentAnnotationUri", "motivation", "motivationUri", "createdAt"] {
        if let Some(v) = view.get(key).filter(|v| !v.is_null()) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    if let Some(target) = view.get("target") {
        let kept: serde_json::Map<String, Value> =
            ["source", "page"].iter().filter_map(|k| target.get(*k).map(|v| ((*k).to_owned(), v.clone()))).collect();
        out.insert("target".into(), Value::Object(kept));
    }
    Value::Object(out)
}
