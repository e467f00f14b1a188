//! `getAuditLog`: the access model's audit trail.

use projections::access::read::AccessReader;
use serde_json::json;

use crate::body::Body;
use crate::params::offset;
use crate::reads::blocking;
use crate::xrpc::method::{Answer, Call};

/// `getAuditLog`: `{entries, cursor, total}`, newest first; `cursor` is the offset of the
/// next page (a number, as a string), `actorDid` keeps one actor's entries.
pub(super) fn get_audit_log(c: &Call) -> Answer {
    let offset = offset(&c.params)?;
    let limit = c.limit(50);
    let actor = c.params.str("actorDid");
    let (entries, total) = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.audit(limit, offset, actor))?;
    let mut out = json!({"entries": entries, "total": total});
    if offset + entries.len() < total {
        out["cursor"] = json!((offset + entries.len()).to_string());
    }
    Body::json(&out)
}
