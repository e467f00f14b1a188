//! Citations an eprint makes, listed also on the cited eprint when svc indexes it.

use serde_json::json;

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

pub(super) fn citation(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let cited = get(r, "citedWork");
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("citedWork", cited.clone()),
        ("citationType", json!(text(r, "citationType").unwrap_or("cites"))),
        ("context", get(r, "context")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let mut lists = vec![Listing::on_eprint(Kind::Citation, eprint), Listing::by_author(Kind::Citation, did)];
    if let Some(target) = text(&cited, "svcUri") {
        lists.push(Listing::pointing_at(Kind::Citation, target));
    }
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}
