//! Warnings and violations, from what svc already knows (the contract leaves their source
//! open; docs/operations.md):
//! - a **violation** is content an admin took down (`deleteContent`), with the admin and
//!   the reason, or a record a user reported (`moderation.createReport`): the admin model's
//!   `violations`;
//! - a **warning** is a record a user published that the index refused: the dead letters
//!   that name a record, with the reason.

use projections::access::Role;
use projections::admin::read::AdminReader;
use serde_json::{json, Value};

use crate::body::Body;
use crate::params::check_did;
use crate::reads::blocking;
use crate::xrpc::method::{Answer, Auth, Call, Routes};

pub(super) fn routes() -> Routes {
    let admin = Auth::Role(Role::Admin);
    Routes::new().query("pub.svc.admin.listViolations", admin, violations).query_async("pub.svc.admin.listWarnings", admin, warnings)
}

/// The `did` filter, checked.
fn did_filter(c: &Call) -> Result<Option<String>, crate::error::ApiError> {
    let did = c.params.str("did").map(str::to_owned);
    if let Some(d) = &did {
        check_did("did", d)?;
    }
    Ok(did)
}

/// `listViolations`: `{violations: [{id, type, did, uri, collection, reason, actorDid,
/// createdAt, description?}]}`, newest first: the take-downs (`type: takedown`, by the admin
/// who acted) and the users' reports (`type: report`, by the reporter), from the admin
/// model (a bounded read).
fn violations(c: &Call) -> Answer {
    let (did, limit) = (did_filter(c)?, c.limit(50));
    let out = blocking(&c.state, || AdminReader::new(c.state.store.as_ref())?.violations(did.as_deref(), limit))?;
    Body::json(&json!({"violations": out}))
}

/// `listWarnings`: `{warnings: [{id, did, uri, collection, reason, errorType, createdAt}]}`,
/// newest first.
async fn warnings(c: Call) -> Answer {
    let did = did_filter(&c)?;
    // A refused record is a warning even once a later revision superseded it.
    let all = super::dlq::entries(&c.state, true, usize::MAX).await?;
    let mut chosen = Vec::new();
    for e in all.iter().rev() {
        let Some(uri) = e.letter.uri.as_deref().and_then(lexicons::formats::parse_at_uri) else { continue };
        if did.as_deref().is_none_or(|d| d == uri.authority) {
            chosen.push((e, uri));
        }
        if chosen.len() == c.limit(50) {
            break;
        }
    }
    let entries: Vec<&super::dlq::Entry> = chosen.iter().map(|(e, _)| *e).collect();
    let times = super::dlq::events(&c.state, &entries).await?;
    let out: Vec<Value> = chosen
        .iter()
        .zip(&times)
        .map(|((e, uri), event)| {
            json!({"id": format!("{}:{}", e.letter.partition, e.letter.offset), "did": uri.authority, "uri": e.letter.uri,
                   "collection": uri.collection, "reason": e.letter.reason, "errorType": e.error_type(),
                   "createdAt": super::dlq::time(event)})
        })
        .collect();
    Body::json(&json!({"warnings": out}))
}
