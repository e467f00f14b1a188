//! Endorsements: the contributions endorsed, each named once, listed on their eprint and
//! by their endorser, and per contribution on both (`…@contribution:{type}`).

use serde_json::{json, Value};

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record, SetMember};

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
    let by_author = Listing::by_author(Kind::Endorsement, did);
    let by_endorser = Listing::filtered(&on_eprint, &format!("by:{did}"));
    let sets = vec![SetMember::new(&endorsers(eprint), did, &by_endorser)];
    let mut lists = vec![by_endorser];
    for c in &contributions {
        lists.push(Listing::filtered(&on_eprint, &contribution(c)));
        lists.push(Listing::filtered(&by_author, &contribution(c)));
    }
    lists.extend([by_author, on_eprint]);
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets })
}

/// The filter of the sub-listings of one contribution type.
pub fn contribution(kind: &str) -> String {
    format!("contribution:{kind}")
}

/// The distinct accounts that endorse an eprint: a set listing (its rows are DIDs).
pub fn endorsers(eprint: &str) -> Listing {
    Listing::filtered(&Listing::on_eprint(Kind::Endorsement, eprint), "endorsers")
}

/// The contribution types svc counts in an endorsement summary (records.md's known values).
pub const CONTRIBUTIONS: [&str; 15] = [
    "methodological",
    "analytical",
    "theoretical",
    "empirical",
    "conceptual",
    "technical",
    "data",
    "replication",
    "reproducibility",
    "synthesis",
    "interdisciplinary",
    "pedagogical",
    "visualization",
    "societal-impact",
    "clinical",
];
