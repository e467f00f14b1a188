//! `pub.svc.sync.*`: the index compared with, and brought back to, what repositories hold.
//!
//! Every answer about a repository comes from its host, proven by the repository's signed
//! commit ([`ingest::fetch`]). The queries (`checkStaleness`, `verify`) are open. The
//! procedures (`refreshRecord`, `deleteRecord`) need a service-auth token ([`crate::auth`])
//! issued by the record's own repository or by an approved service; they append what the
//! repository holds to the log as a command event and answer once this node's read models
//! have applied it (or after [`APPLY_WAIT`], the event being in the log either way).

use chrono::{SecondsFormat, Utc};
use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, Source, OPERATIONS_KEY};
use ingest::fetch::{FetchError, ProvenRecord};
use projections::attached::read::AttachedReader;
use projections::eprints::read::EprintsReader;
use serde_json::{json, Value};
use tracing::info;

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::identity::Caller;
use crate::state::AppState;
use projections::access::Role;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query_async("pub.svc.sync.checkStaleness", Auth::Open, check_staleness)
        .query_async("pub.svc.sync.verify", Auth::Open, verify)
        .procedure("pub.svc.sync.refreshRecord", Auth::Required, refresh_record)
        .procedure("pub.svc.sync.deleteRecord", Auth::Required, delete_record)
        .procedure("pub.svc.sync.indexRecord", Auth::Required, index_record)
        .procedure("pub.svc.sync.registerPDS", Auth::Open, register_pds)
}

pub use crate::command::APPLY_WAIT;

/// A record's address, from its AT URI.
struct Target {
    uri: String,
    did: String,
    collection: String,
    rkey: String,
}

impl Target {
    fn parse(uri: &str) -> Result<Target, ApiError> {
        crate::params::parse_record_uri("uri", uri)?;
        let parsed = lexicons::formats::parse_at_uri(uri).expect("checked above");
        Ok(Target {
            uri: uri.to_owned(),
            did: parsed.authority.to_owned(),
            collection: parsed.collection.unwrap_or_default().to_owned(),
            rkey: parsed.rkey.unwrap_or_default().to_owned(),
        })
    }
}

/// The indexed copy of a record: its CID and when it entered the index.
struct Indexed {
    cid: String,
    indexed_at: String,
}

/// The indexed copy of the record at `uri`, in whichever read model keeps its collection.
async fn indexed(state: &AppState, uri: &str) -> Result<Option<Indexed>, ApiError> {
    let (store, uri) = (state.store.clone(), uri.to_owned());
    tokio::task::spawn_blocking(move || -> Result<Option<Indexed>, ApiError> {
        let collection = lexicons::formats::parse_at_uri(&uri).and_then(|u| u.collection).unwrap_or_default();
        if collection == lexicons::SUBMISSION {
            let reader = EprintsReader::new(store.as_ref())?;
            return Ok(reader.get(&uri)?.map(|e| Indexed { cid: e.cid, indexed_at: e.indexed_at }));
        }
        let reader = AttachedReader::new(store.as_ref())?;
        Ok(reader.get(&uri)?.filter(|i| !i.deleted).map(|i| Indexed { cid: i.cid, indexed_at: i.indexed_at }))
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
}

async fn fetch(state: &AppState, t: &Target) -> Result<ProvenRecord, ApiError> {
    state.sync.fetcher.fetch(&t.did, &t.collection, &t.rkey).await.map_err(|e| match e {
        FetchError::RepoNotFound { .. } | FetchError::UnknownDid(_) => ApiError::repo_not_found(e.to_string()),
        FetchError::Identity(_) | FetchError::Unavailable(_) | FetchError::Unverified { .. } => ApiError::upstream(e.to_string()),
    })
}

fn pds_cid(p: &ProvenRecord) -> Option<String> {
    p.record.as_ref().map(|(cid, _)| cid.to_string())
}

/// `pub.svc.sync.checkStaleness`: `uri` → `{uri, isStale, indexedAt, indexedCid, pdsCid?, pdsUrl, pdsRev}`.
async fn check_staleness(c: Call) -> Answer {
    let state = &c.state;
    let t = Target::parse(c.str("uri"))?;
    let Some(held) = indexed(state, &t.uri).await? else {
        return Err(ApiError::not_found(format!("no indexed record at {}", t.uri)));
    };
    let proven = fetch(state, &t).await?;
    let pds_cid = pds_cid(&proven);
    let mut out = json!({
        "uri": t.uri,
        "isStale": pds_cid.as_deref() != Some(held.cid.as_str()),
        "indexedAt": held.indexed_at,
        "indexedCid": held.cid,
        "pdsUrl": proven.pds,
        "pdsRev": proven.rev,
    });
    if let Some(cid) = pds_cid {
        out["pdsCid"] = json!(cid);
    }
    Body::json(&out)
}

/// `pub.svc.sync.verify`: `uri` → `{uri, indexed, inSync, indexedAt?, lastSyncedAt?, staleDays, indexedCid?, pdsCid?, pdsUrl}`.
async fn verify(c: Call) -> Answer {
    let state = &c.state;
    let t = Target::parse(c.str("uri"))?;
    let held = indexed(state, &t.uri).await?;
    let proven = fetch(state, &t).await?;
    let pds_cid = pds_cid(&proven);
    let in_sync = held.as_ref().map(|h| h.cid.as_str()) == pds_cid.as_deref();
    let mut out = json!({"uri": t.uri, "indexed": held.is_some(), "inSync": in_sync, "staleDays": 0, "pdsUrl": proven.pds});
    if let Some(h) = &held {
        out["indexedAt"] = json!(h.indexed_at);
        out["lastSyncedAt"] = json!(h.indexed_at);
        out["indexedCid"] = json!(h.cid);
        if !in_sync {
            let since = chrono::DateTime::parse_from_rfc3339(&h.indexed_at).map(|t| (Utc::now() - t.with_timezone(&Utc)).num_days());
            out["staleDays"] = json!(since.unwrap_or(0).max(0));
        }
    }
    if let Some(cid) = pds_cid {
        out["pdsCid"] = json!(cid);
    }
    Body::json(&out)
}

/// A verified caller may act on `t` when it is the record's repository or an approved service.
fn authorize(state: &AppState, caller: &Caller, t: &Target) -> Result<(), ApiError> {
    if caller.did == t.did || state.sync.approved.contains(&caller.did) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "{} may act only on its own repository's records, and is not an approved service; {} belongs to {}",
        caller.did, t.uri, t.did
    )))
}

fn input_uri(body: &Value) -> &str {
    body.get("uri").and_then(Value::as_str).unwrap_or_default()
}

/// `pub.svc.sync.refreshRecord`: `{uri}` → `{uri, refreshed, changed, newCid?, rev}`.
async fn refresh_record(c: Call) -> Answer {
    let (state, caller) = (&c.state, c.caller()?);
    let t = Target::parse(input_uri(&c.input))?;
    authorize(state, caller, &t)?;
    if !ingest::commit::follows(&state.sync.collections, &t.collection) {
        return Err(ApiError::invalid_param("uri", format!("svc does not index the collection {}", t.collection)));
    }
    let proven = fetch(state, &t).await?;
    let held = indexed(state, &t.uri).await?;
    let new_cid = pds_cid(&proven);
    if held.is_none() && new_cid.is_none() {
        return Err(ApiError::not_found(format!("{} is neither indexed nor held by its repository", t.uri)));
    }
    let changed = held.as_ref().map(|h| h.cid.as_str()) != new_cid.as_deref();
    if changed {
        append(state, &proven, "pub.svc.sync.refreshRecord", caller).await?;
    }
    info!(uri = t.uri, caller = caller.did, changed, "refreshed a record");
    let mut out = json!({"uri": t.uri, "refreshed": true, "changed": changed, "rev": proven.rev});
    if let Some(cid) = new_cid {
        out["newCid"] = json!(cid);
    }
    Body::json(&out)
}

/// `pub.svc.sync.deleteRecord`: `{uri, collection?}` → `{success, uri, deletedAt, deleted}`.
async fn delete_record(c: Call) -> Answer {
    let (state, caller) = (&c.state, c.caller()?);
    let t = Target::parse(input_uri(&c.input))?;
    if let Some(named) = c.input.get("collection").and_then(Value::as_str) {
        if named != t.collection {
            return Err(ApiError::invalid_param("collection", format!("the URI names the collection {}, not {named}", t.collection)));
        }
    }
    if !projections::catalog::deletable(&t.collection) {
        return Err(ApiError::invalid_param("uri", format!("deleteRecord does not accept records of {}", t.collection)));
    }
    authorize(state, caller, &t)?;
    let proven = fetch(state, &t).await?;
    if let Some(cid) = pds_cid(&proven) {
        return Err(ApiError::invalid_request(format!(
            "{} still exists in its repository (CID {cid} at revision {}): delete it there first",
            t.uri, proven.rev
        )));
    }
    if indexed(state, &t.uri).await?.is_none() {
        return Err(ApiError::not_found(format!("no indexed record at {}", t.uri)));
    }
    append(state, &proven, "pub.svc.sync.deleteRecord", caller).await?;
    info!(uri = t.uri, caller = caller.did, "deleted a record's indexed copy");
    let deleted_at = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
    Body::json(&json!({"success": true, "deleted": true, "uri": t.uri, "deletedAt": deleted_at}))
}

/// `pub.svc.sync.indexRecord` (beyond the contract): `{uri}` → `{uri, indexed, cid?,
/// error?}`. Fetches the record from its repository, proves it by the signed commit,
/// appends it, and answers once this node's read models applied it: `indexed` says whether
/// the record is visible now; `error` why not (the read model refused it: a dead letter).
/// For the record's repository, an approved service, or an admin.
async fn index_record(c: Call) -> Answer {
    let (state, caller) = (&c.state, c.caller()?);
    let t = Target::parse(input_uri(&c.input))?;
    if !caller.has(Role::Admin) {
        authorize(state, caller, &t)?;
    }
    if !ingest::commit::follows(&state.sync.collections, &t.collection) {
        return Err(ApiError::invalid_param("uri", format!("svc does not index the collection {}", t.collection)));
    }
    let proven = fetch(state, &t).await?;
    let Some(cid) = pds_cid(&proven) else {
        return Err(ApiError::not_found(format!("{} is not in its repository (revision {})", t.uri, proven.rev)));
    };
    append(state, &proven, "pub.svc.sync.indexRecord", caller).await?;
    let held = indexed(state, &t.uri).await?;
    let mut out = json!({"uri": t.uri, "cid": cid});
    match held {
        Some(h) if h.cid == cid => out["indexed"] = json!(true),
        _ => {
            out["indexed"] = json!(false);
            let why = parked_reason(state, &t.uri).await?;
            out["error"] = json!(why.unwrap_or_else(|| "not applied yet: the read models are behind the log".into()));
        }
    }
    info!(uri = t.uri, caller = caller.did, indexed = out["indexed"].as_bool(), "indexed a record on request");
    Body::json(&out)
}

/// Why a read model refused the record at `uri`, when one parked it.
async fn parked_reason(state: &AppState, uri: &str) -> Result<Option<String>, ApiError> {
    let (store, uri) = (state.store.clone(), uri.to_owned());
    tokio::task::spawn_blocking(move || -> Result<Option<String>, ApiError> {
        for model in projections::catalog::DEAD_LETTER_MODELS.iter() {
            let Some(version) = store.active_version(model)? else { continue };
            if let Some(letter) = projections::deadletter::parked(store.as_ref(), model, version, &uri)? {
                return Ok(Some(letter.reason));
            }
        }
        Ok(None)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
}

/// `pub.svc.sync.registerPDS` (beyond the contract): `{pdsUrl}` → `{pdsUrl, registered,
/// status, message}`. Adds a repository host to the registry `triggerPDSScan` scans, once
/// it answers as one (`com.atproto.server.describeServer`); `ServiceUnavailable` when it
/// does not. Open to anyone, as the contract's optional auth allows (recorded as
/// `anonymous`); the rate limits apply, and the one request it makes is that GET.
async fn register_pds(c: Call) -> Answer {
    let url = c.input["pdsUrl"].as_str().unwrap_or_default().trim_end_matches('/').to_owned();
    let parsed = url::Url::parse(&url).map_err(|e| ApiError::invalid_param("pdsUrl", format!("not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() || !matches!(parsed.path(), "" | "/") {
        return Err(ApiError::invalid_param("pdsUrl", "the http(s) origin of a repository host"));
    }
    ingest::host::describe(&url).await.map_err(|e| ApiError::new(ErrorCode::ServiceUnavailable, e.to_string()))?;
    let caller = "anonymous".to_owned();
    let event = NewEvent {
        key: OPERATIONS_KEY.to_owned(),
        source: Source::Command {
            nsid: "pub.svc.sync.registerPDS".into(),
            caller: caller.clone(),
            host: c.state.identity.public_url.clone(),
        },
        payload: Payload::Admin(AdminCommand { actor: caller, action: AdminAction::HostRegistered { url: url.clone() } }),
    };
    crate::command::append(&c.state, event).await?;
    Body::json(&json!({"pdsUrl": url, "registered": true, "status": "pending",
                       "message": "registered: the next triggerPDSScan backfills its repositories"}))
}

/// Appends the event of `proven` as a command of `caller` (see [`crate::command`]).
async fn append(state: &AppState, proven: &ProvenRecord, nsid: &str, caller: &Caller) -> Result<(), ApiError> {
    let source = Source::Command { nsid: nsid.to_owned(), caller: caller.did.clone(), host: proven.pds.clone() };
    let event = proven.event(&source).map_err(|why| ApiError::upstream(format!("the repository's record is unusable: {why}")))?;
    crate::command::append(state, event).await.map(drop)
}
