//! Entity links on annotations and reviews: the linked entity and its page.

use serde_json::{json, Value};

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

pub(super) fn entity_link(rec: &Record) -> Result<Normalized, String> {
    let (collection, did, r) = (rec.collection, rec.did, rec.value);
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let mut target = get(r, "target");
    // 0-indexed in annotation entity links, 1-indexed in review entity links (records.md).
    let offset = if collection == super::ANNOTATION_ENTITY_LINK { 1 } else { 0 };
    let page = target.pointer("/refinedBy/pageNumber").and_then(Value::as_i64).map(|p| p + offset);
    if let Some(p) = page {
        target["page"] = json!(p);
    }
    let mut entity = get(r, "linkedEntity");
    if entity.get("$type").is_none() {
        if let Some(t) = text(&entity, "type") {
            let member = match t {
                "graphNode" => "graphNodeLink",
                "externalId" => "externalIdLink",
                "author" => "authorLink",
                _ => "eprintLink",
            };
            entity["$type"] = json!(format!("pub.svc.annotation.listForEprint#{member}"));
        }
    }
    if let Some(id) = text(&entity, "id").map(str::to_owned) {
        entity["nodeId"] = json!(id);
    }
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("target", target),
        ("linkedEntity", entity),
        ("confidence", r.get("confidence").and_then(Value::as_i64).map_or(Value::Null, |c| json!(c as f64 / 1000.0))),
        ("source", json!(if collection == super::REVIEW_ENTITY_LINK { "review" } else { "annotation" })),
        ("createdAt", get(r, "createdAt")),
    ]);
    let on_eprint = Listing::on_eprint(Kind::EntityLink, eprint);
    let mut lists = vec![Listing::by_author(Kind::EntityLink, did)];
    if let Some(p) = page {
        lists.push(Listing::filtered(&on_eprint, &format!("page:{p}")));
    }
    lists.push(on_eprint);
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}
