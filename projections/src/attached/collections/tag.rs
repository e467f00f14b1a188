//! User tags: the tag as written and its normalized form, listed under that form.

use serde_json::json;

use super::{created_at, get, normalize_tag, object, text, Kind, Listing, Normalized, Record};

pub(super) fn user_tag(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let tag = text(r, "tag").ok_or("tag missing")?;
    let normalized = normalize_tag(tag);
    if normalized.is_empty() {
        return Err(format!("tag: {tag:?} has no letters or digits"));
    }
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("tag", json!(tag)),
        ("normalizedForm", json!(normalized)),
        ("nodeUri", get(r, "nodeUri")),
        ("nodeSlug", get(r, "nodeSlug")),
        ("nodeSubkind", get(r, "nodeSubkind")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists =
        vec![Listing::on_eprint(Kind::Tag, eprint), Listing::by_author(Kind::Tag, did), Listing::tagged(&normalized), Listing::all_tags()];
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}
