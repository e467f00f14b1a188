//! What svc follows: the event sources (firehose, Jetstream) with their cursors and lag,
//! and the registry of repository hosts, both from the admin model (learned from the
//! sources of the events in the log, so every node answers alike).

use chrono::{DateTime, Utc};
use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, Source, OPERATIONS_KEY};
use projections::access::Role;
use projections::admin::read::AdminReader;
use serde_json::json;

use crate::body::Body;
use crate::error::ApiError;
use crate::reads::blocking;
use crate::xrpc::method::{Answer, Auth, Call, Routes};

/// A host seen within this long is `active` (and counts as healthy).
const ACTIVE_WITHIN: chrono::Duration = chrono::Duration::hours(24);

pub(super) fn routes() -> Routes {
    let admin = Auth::Role(Role::Admin);
    Routes::new()
        .query_async("pub.svc.admin.getFirehoseStatus", admin, firehose_status)
        .query("pub.svc.admin.listPDSes", admin, list_hosts)
        .procedure("pub.svc.admin.rescanPDS", admin, rescan)
}

/// `rescanPDS`: `{success, pdsUrl}`: registers the host again (a command event the admin
/// model applies), so `triggerPDSScan` backfills it even before any event came from it.
async fn rescan(c: Call) -> Answer {
    let admin = c.caller()?.did.clone();
    let url = c.input["pdsUrl"].as_str().unwrap_or_default().trim_end_matches('/').to_owned();
    let parsed = url::Url::parse(&url).map_err(|e| ApiError::invalid_param("pdsUrl", format!("not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(ApiError::invalid_param("pdsUrl", "an http(s) URL of a repository host"));
    }
    let event = NewEvent {
        key: OPERATIONS_KEY.to_owned(),
        source: Source::Command {
            nsid: "pub.svc.admin.rescanPDS".into(),
            caller: admin.clone(),
            host: c.state.identity.public_url.clone(),
        },
        payload: Payload::Admin(AdminCommand { actor: admin, action: AdminAction::HostRegistered { url: url.clone() } }),
    };
    crate::command::append(&c.state, event).await?;
    metrics::counter!("svc_admin_actions_total", "action" => "rescan", "target" => "pds").increment(1);
    Body::json(&json!({"success": true, "pdsUrl": url}))
}

fn age_seconds(at: &str) -> Option<i64> {
    DateTime::parse_from_rfc3339(at).ok().map(|t| (Utc::now() - t.with_timezone(&Utc)).num_seconds().max(0))
}

/// `getFirehoseStatus`: `{cursor, dlqCount, timestamp, sources}`. Each source has its
/// `cursor` as ingest stored it in the log (`storedCursor`: where ingest resumes), the
/// newest cursor the read models have seen, and `lagSeconds` since its last event;
/// `cursor` is the stored cursor of the most recently active source, `null` before any.
async fn firehose_status(c: Call) -> Answer {
    let s = c.state.clone();
    let mut sources = blocking(&c.state, || AdminReader::new(s.store.as_ref())?.sources())?;
    sources.sort_by(|a, b| b["lastEventAt"].as_str().cmp(&a["lastEventAt"].as_str()));
    for source in &mut sources {
        let url = source["url"].as_str().unwrap_or_default().to_owned();
        let consumer = if source["type"] == "jetstream" {
            ingest::jetstream::Jetstream::consumer_name(&url)
        } else {
            ingest::firehose::Firehose::consumer_name(&url)
        };
        let log = c.state.log.clone();
        let stored = tokio::task::spawn_blocking(move || log.checkpoint(&consumer, 0))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(ApiError::from_error)?;
        source["storedCursor"] = json!(stored.map(|c| c.to_string()));
        if let Some(age) = source["lastEventAt"].as_str().and_then(age_seconds) {
            source["lagSeconds"] = json!(age);
        }
    }
    let cursor = sources.first().map(|s| s["storedCursor"].clone()).filter(|c| !c.is_null());
    let mut out = json!({
        "dlqCount": super::dlq::count(&c.state).await?,
        "timestamp": Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "sources": sources,
    });
    // Omitted, not null, until a source stored one (the lexicon's cursor is a string).
    if let Some(cursor) = cursor {
        out["cursor"] = cursor;
    }
    Body::json(&out)
}

/// `listPDSes`: `{stats: {total, healthy, unhealthy, withRecords, items}}`: every host the
/// log names, `active` (healthy) when an event came from it in the last 24 hours, `idle`
/// otherwise.
fn list_hosts(c: &Call) -> Answer {
    let mut items = blocking(&c.state, || AdminReader::new(c.state.store.as_ref())?.hosts())?;
    let mut healthy = 0;
    for item in &mut items {
        let active = item["lastSeen"].as_str().and_then(age_seconds).is_some_and(|age| age <= ACTIVE_WITHIN.num_seconds());
        healthy += usize::from(active);
        item["status"] = json!(if active { "active" } else { "idle" });
    }
    let with_records = items.iter().filter(|h| h["recordCount"].as_i64() > Some(0)).count();
    Body::json(&json!({"stats": {
        "total": items.len(), "healthy": healthy, "unhealthy": items.len() - healthy, "withRecords": with_records, "items": items,
    }}))
}
