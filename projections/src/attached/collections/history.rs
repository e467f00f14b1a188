//! Versions and changelogs of an eprint: the record as written, listed on its eprint.

use serde_json::Value;

use super::{created_at, text, Listing, Normalized, Record};

/// A version or a changelog: the record as written, listed on its eprint.
pub(super) fn history(rec: &Record) -> Result<Normalized, String> {
    let r = rec.value;
    let eprint = text(r, "eprintUri").ok_or("eprintUri missing")?;
    let mut view = r.clone();
    if let Value::Object(m) = &mut view {
        m.remove("$type");
        m.remove("schemaRevision");
    }
    Ok(Normalized { view, created_at: created_at(r)?, lists: vec![Listing::on_eprint(rec.kind, eprint)], sets: Vec::new() })
}
