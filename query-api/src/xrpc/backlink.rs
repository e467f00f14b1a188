//! `pub.svc.backlink.*`: links to svc's records from other applications' records. They are
//! not repository records svc indexes but entries callers report: `create` and `delete`
//! (auth required, any verified caller) append command events; `list` and `getCounts` read
//! the attached model.

use event_schema::{BacklinkChange, NewEvent, Payload};
use projections::attached::read::Backlink;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::uri_param;
use crate::reads;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.backlink.list", Auth::Open, list)
        .aliases(&[("uri", "targetUri"), ("source", "sourceType")])
        .query("pub.svc.backlink.getCounts", Auth::Open, get_counts)
        .aliases(&[("uri", "targetUri")])
        .procedure("pub.svc.backlink.create", Auth::Required, create)
        .procedure("pub.svc.backlink.delete", Auth::Required, delete)
}

/// The source types and the `getCounts` field each is counted in.
pub const SOURCE_TYPES: &[(&str, &str)] = &[
    ("cosmik.collection", "cosmikCollections"),
    ("leaflet.list", "leafletLists"),
    ("whitewind.blog", "whitewindBlogs"),
    ("bluesky.post", "blueskyPosts"),
    ("bluesky.embed", "blueskyEmbeds"),
    ("other", "other"),
];

/// The most backlinks one source record makes (a post links to a few records).
const MAX_PER_SOURCE: usize = 1_000;

/// `pub.svc.backlink.list`: `{backlinks, cursor?, hasMore}`, by source URI; `sourceType`
/// keeps one kind. Withdrawn backlinks are left out. One page read.
fn list(c: &Call) -> Answer {
    let target = uri_param(&c.params, "targetUri")?;
    let (kind, after, limit) = (c.params.str("sourceType"), c.params.str("cursor"), c.limit(50));
    let (page, has_more) = reads::attached(&c.state, |r| r.backlinks_page(target, kind, after, limit))?;
    let mut out = json!({"backlinks": page, "hasMore": has_more});
    if has_more {
        out["cursor"] = json!(page.last().map(|b| b.source_uri.clone()));
    }
    Body::json(&out)
}

/// `pub.svc.backlink.getCounts`: the live backlinks to a target per source type, and
/// `total`: counts the model keeps.
fn get_counts(c: &Call) -> Answer {
    let target = uri_param(&c.params, "targetUri")?;
    let out = reads::attached(&c.state, |r| {
        let mut out = json!({"total": r.backlink_count(target, None)?});
        for (kind, field) in SOURCE_TYPES {
            out[*field] = json!(r.backlink_count(target, Some(kind))?);
        }
        Ok(out)
    })?;
    Body::json(&out)
}

fn text(input: &Value, field: &str) -> Option<String> {
    input.get(field).and_then(Value::as_str).map(str::to_owned)
}

fn command(c: &Call, nsid: &str, change: BacklinkChange) -> NewEvent {
    c.command(nsid, &change.source_uri.clone(), Payload::Backlink(change))
}

/// `pub.svc.backlink.create` (auth required): `{sourceUri, sourceType, targetUri, context?}`
/// → the `#backlink`, once this node's read models show it.
async fn create(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let (source, target) = (text(&c.input, "sourceUri").unwrap_or_default(), text(&c.input, "targetUri").unwrap_or_default());
    crate::params::parse_record_uri("sourceUri", &source)?;
    crate::params::parse_record_uri("targetUri", &target)?;
    let change = BacklinkChange {
        source_uri: source.clone(),
        source_type: text(&c.input, "sourceType").unwrap_or_default(),
        target_uri: target.clone(),
        context: text(&c.input, "context"),
        deleted: false,
        caller,
    };
    crate::command::append(&c.state, command(&c, "pub.svc.backlink.create", change)).await?;
    let made = reads::attached(&c.state, |r| r.backlinks_from(&source, MAX_PER_SOURCE))?.into_iter().find(|b| b.target_uri == target);
    let made =
        made.ok_or_else(|| ApiError::new(crate::error::ErrorCode::ServiceUnavailable, "the backlink is in the log but not applied yet"))?;
    Body::json(&made)
}

/// `pub.svc.backlink.delete` (auth required): `{sourceUri}` withdraws every backlink from the
/// source (soft: they stay, marked deleted) → `{success}`; `NotFound` when it has none.
async fn delete(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let source = text(&c.input, "sourceUri").unwrap_or_default();
    crate::params::parse_record_uri("sourceUri", &source)?;
    let links: Vec<Backlink> =
        reads::attached(&c.state, |r| r.backlinks_from(&source, MAX_PER_SOURCE))?.into_iter().filter(|b| !b.deleted).collect();
    if links.is_empty() {
        return Err(ApiError::not_found(format!("no backlink from {source}")));
    }
    for b in links {
        let change = BacklinkChange {
            source_uri: b.source_uri,
            source_type: b.source_type,
            target_uri: b.target_uri,
            context: b.context,
            deleted: true,
            caller: caller.clone(),
        };
        crate::command::append(&c.state, command(&c, "pub.svc.backlink.delete", change)).await?;
    }
    Body::json(&json!({"success": true}))
}
