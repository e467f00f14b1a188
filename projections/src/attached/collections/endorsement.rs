//! Endorsements: the contributions endorsed, each named once.

use serde_json::{json, Value};

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

pub(super) fn endorsement(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let mut contributions: Vec<String> = Vec::new();
    for c in r.get("contributions").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if contributions.iter().any(|h| h == c) {
            return Err(format!("contributions: {c} is listed twice"));
        }
        contributions.push(c.to_owned());
    }
    let view = object(vec![
        ("eprintUri", json!(eprint)),
        ("contributions", json!(contributions)),
        ("comment", get(r, "comment")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let on_eprint = Listing::on_eprint(Kind::Endorsement, eprint);
    let lists = vec![Listing::filtered(&on_eprint, &format!("by:{did}")), Listing::by_author(Kind::Endorsement, did), on_eprint];
    Ok(Normalized { view, created_at: created_at(r)?, lists })
}
