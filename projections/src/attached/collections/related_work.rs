//! Related works: the eprint, the work it relates to, and how.

use serde_json::json;

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

pub(super) fn related_work(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let related = text(r, "relatedUri").ok_or("relatedUri missing")?;
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("relatedUri", json!(related)),
        ("relationType", get(r, "relationType")),
        ("description", get(r, "description")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists = vec![
        Listing::on_eprint(Kind::RelatedWork, eprint),
        Listing::by_author(Kind::RelatedWork, did),
        Listing::pointing_at(Kind::RelatedWork, related),
    ];
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}
