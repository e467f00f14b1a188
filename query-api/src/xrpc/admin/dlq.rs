//! The dead-letter operations: the projections' real dead letters, listed in log order and
//! addressed by their index in that order; retried (the event appended again: it parks anew
//! if it still fails) or dismissed (released), each as a `command.admin` event that the
//! model which parked it applies.
//!
//! Nothing waits behind a dead letter ([`projections::deadletter`]). A letter a later change
//! of its record superseded leaves the default listing; `includeSuperseded` shows it, with
//! `supersededBy`. Indexes address the letters of the default listing.

use chrono::Utc;
use event_schema::{AdminAction, AdminCommand, Envelope, NewEvent, Payload, Source};
use projections::access::Role;
use projections::deadletter::DeadLetter;
use serde_json::json;

use crate::body::Body;
use crate::error::ApiError;
use crate::state::AppState;
use crate::xrpc::method::{Answer, Auth, Call, Routes};

pub(super) fn routes() -> Routes {
    let admin = Auth::Role(Role::Admin);
    Routes::new()
        .query_async("pub.svc.admin.listDLQEntries", admin, list)
        .procedure("pub.svc.admin.retryDLQEntry", admin, retry)
        .procedure("pub.svc.admin.dismissDLQEntry", admin, dismiss)
        .procedure("pub.svc.admin.retryAllDLQ", admin, retry_all)
        .procedure("pub.svc.admin.purgeOldDLQ", admin, purge_old)
}

/// A dead letter with the model that parked it.
pub(super) struct Entry {
    model: &'static str,
    pub(super) letter: DeadLetter,
}

impl Entry {
    /// `VALIDATION_ERROR` for a record its lexicon or its collection's rules refuse,
    /// `PROCESSING_ERROR` otherwise.
    pub(super) fn error_type(&self) -> &'static str {
        let reason = &self.letter.reason;
        if reason.starts_with("invalid") || reason.contains("lexicon") {
            "VALIDATION_ERROR"
        } else {
            "PROCESSING_ERROR"
        }
    }
}

/// The parked events of `chosen`, as the log holds them (one log read each: only for the
/// entries an answer shows or acts on).
pub(super) async fn events(state: &AppState, chosen: &[&Entry]) -> Result<Vec<Option<Envelope>>, ApiError> {
    let (log, at): (_, Vec<(u32, u64)>) = (state.log.clone(), chosen.iter().map(|e| (e.letter.partition, e.letter.offset)).collect());
    tokio::task::spawn_blocking(move || {
        at.into_iter().map(|(partition, offset)| log.read(partition, offset, 1).ok().and_then(|e| e.into_iter().next())).collect()
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))
}

/// When a parked event entered the log, as the API shows it.
pub(super) fn time(event: &Option<Envelope>) -> Option<String> {
    event.as_ref().map(|e| e.appended_at.to_rfc3339())
}

/// The first `upto` dead letters of every model that parks events, in log order: those
/// nothing superseded, or every one. Reads at most `upto` letters per model (the first
/// `upto` of the merged order are among them).
pub(super) async fn entries(state: &AppState, superseded: bool, upto: usize) -> Result<Vec<Entry>, ApiError> {
    let s = state.clone();
    tokio::task::spawn_blocking(move || -> Result<Vec<Entry>, ApiError> {
        let mut all = Vec::new();
        for model in projections::catalog::DEAD_LETTER_MODELS.iter() {
            let Some(version) = s.store.active_version(model).map_err(ApiError::from_error)? else { continue };
            let store = s.store.as_ref();
            let mut letters = projections::deadletter::list(store, model, version, upto).map_err(ApiError::from_error)?;
            if superseded {
                letters.extend(projections::deadletter::list_superseded(store, model, version, upto).map_err(ApiError::from_error)?);
            }
            all.extend(letters.into_iter().map(|letter| Entry { model, letter }));
        }
        all.sort_by_key(|e| (e.letter.offset, e.letter.partition, e.model));
        all.truncate(upto);
        Ok(all)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
}

/// How many dead letters the models hold: nothing superseded (and superseded).
async fn totals(state: &AppState) -> Result<(u64, u64), ApiError> {
    let s = state.clone();
    tokio::task::spawn_blocking(move || -> Result<(u64, u64), ApiError> {
        let (mut open, mut superseded) = (0, 0);
        for model in projections::catalog::DEAD_LETTER_MODELS.iter() {
            if let Some(version) = s.store.active_version(model).map_err(ApiError::from_error)? {
                open += projections::deadletter::count(s.store.as_ref(), model, version).map_err(ApiError::from_error)?;
                superseded += projections::deadletter::count_superseded(s.store.as_ref(), model, version).map_err(ApiError::from_error)?;
            }
        }
        Ok((open, superseded))
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))?
}

/// `listDLQEntries`: `{entries, total}`, each with `uri`, `error` (the reason), `errorType`,
/// `timestamp` (when the event entered the log), and svc's `model`, `kind`, `key`, log
/// position and, for a superseded letter (`includeSuperseded`), `supersededBy`; for a letter
/// an earlier svc held back behind another (released on upgrade), `heldBehind`; sets
/// `svc_dlq_entries_total` (the letters nothing superseded).
async fn list(c: Call) -> Answer {
    let (limit, skip) = (c.limit(50), c.params.int("offset").unwrap_or(0).max(0) as usize);
    let superseded = c.params.bool("includeSuperseded").unwrap_or(false);
    let all = entries(&c.state, superseded, skip.saturating_add(limit)).await?;
    let (open, superseded_total) = totals(&c.state).await?;
    metrics::gauge!("svc_dlq_entries_total").set(open as f64);
    let total = if superseded { open + superseded_total } else { open };
    let page: Vec<&Entry> = all.iter().skip(skip).take(limit).collect();
    let times = events(&c.state, &page).await?;
    let shown: Vec<_> = page
        .iter()
        .zip(&times)
        .map(|(e, event)| {
            let at = time(event);
            let d = &e.letter;
            let superseded_by = d.superseded_by.map(|(partition, offset)| json!({"partition": partition, "offset": offset}));
            let held_behind = d.held_behind.map(|(partition, offset)| json!({"partition": partition, "offset": offset}));
            json!({"uri": d.uri, "error": d.reason, "errorType": e.error_type(), "timestamp": at, "createdAt": at,
                   "model": e.model, "kind": d.kind, "key": d.key, "partition": d.partition, "offset": d.offset,
                   "supersededBy": superseded_by, "heldBehind": held_behind})
        })
        .collect();
    Body::json(&json!({"entries": shown, "total": total}))
}

/// The events that release `entry` (and, to retry it, append its event again).
fn release(state: &AppState, admin: &str, nsid: &str, entry: &Entry, parked: Option<&Envelope>) -> Vec<NewEvent> {
    let retry = parked.is_some();
    let d = &entry.letter;
    let action =
        AdminAction::DeadLetterReleased { model: entry.model.to_owned(), partition: d.partition, offset: d.offset, retried: retry };
    let mut out = vec![NewEvent {
        key: d.key.clone(),
        source: Source::Command { nsid: nsid.to_owned(), caller: admin.to_owned(), host: state.identity.public_url.clone() },
        payload: Payload::Admin(AdminCommand { actor: admin.to_owned(), action }),
    }];
    if let Some(event) = parked {
        let host = match &event.source {
            Source::Firehose { url, .. } | Source::Jetstream { url, .. } => url.clone(),
            Source::Backfill { host } | Source::Command { host, .. } => host.clone(),
            _ => String::new(),
        };
        out.push(NewEvent {
            key: event.key.clone(),
            source: Source::Command { nsid: nsid.to_owned(), caller: admin.to_owned(), host },
            payload: event.payload.clone(),
        });
    }
    out
}

/// Appends the release events of `chosen` (with their events again, to retry them) and
/// counts the action: how many letters were released.
async fn act(c: &Call, nsid: &str, chosen: &[&Entry], retry: bool) -> Result<usize, ApiError> {
    let admin = c.caller()?.did.clone();
    let parked = if retry { events(&c.state, chosen).await? } else { vec![None; chosen.len()] };
    let mut out = Vec::new();
    for (entry, event) in chosen.iter().zip(&parked) {
        // An event the log no longer holds is released without being appended again.
        out.extend(release(&c.state, &admin, nsid, entry, event.as_ref()));
    }
    if !out.is_empty() {
        crate::command::append_all(&c.state, out).await?;
    }
    let action = if retry { "dlq_retry" } else { "dlq_dismiss" };
    metrics::counter!("svc_admin_actions_total", "action" => action, "target" => "dlq").increment(chosen.len() as u64);
    Ok(chosen.len())
}

/// `retryDLQEntry`.
async fn retry(c: Call) -> Answer {
    one(c, true).await
}

/// `dismissDLQEntry`.
async fn dismiss(c: Call) -> Answer {
    one(c, false).await
}

/// `retryDLQEntry` and `dismissDLQEntry`: `{success, message}`; `success = false` for an
/// index out of range.
async fn one(c: Call, retry: bool) -> Answer {
    let index = lexicons::integral(&c.input["index"]).unwrap_or(0).max(0) as usize;
    let all = entries(&c.state, false, index.saturating_add(1)).await?;
    let Some(entry) = all.get(index) else {
        let (open, _) = totals(&c.state).await?;
        return Body::json(&json!({"success": false, "message": format!("no dead letter at index {index} (there are {open})")}));
    };
    let nsid = if retry { "pub.svc.admin.retryDLQEntry" } else { "pub.svc.admin.dismissDLQEntry" };
    act(&c, nsid, &[entry], retry).await?;
    let what = format!("{} at {}:{} ({})", entry.letter.kind, entry.letter.partition, entry.letter.offset, entry.model);
    let message = if retry {
        format!("retried {what}: its event is in the log again, and parks again if it still fails")
    } else {
        format!("dismissed {what}: released without retry")
    };
    Body::json(&json!({"success": true, "message": message}))
}

/// `retryAllDLQ`: `{success, retriedCount}`: every dead letter, or those of `errorType`, and
/// (svc's extension, the console's filters) of `model`, whose key or record URI contains `key`.
async fn retry_all(c: Call) -> Answer {
    let wanted = |name: &str| c.input[name].as_str().filter(|v| !v.is_empty()).map(str::to_owned);
    let (error_type, model, key) = (wanted("errorType"), wanted("model"), wanted("key"));
    let all = entries(&c.state, false, usize::MAX).await?;
    let chosen: Vec<&Entry> = all
        .iter()
        .filter(|e| error_type.as_deref().is_none_or(|t| t == e.error_type()))
        .filter(|e| model.as_deref().is_none_or(|m| m == e.model))
        .filter(|e| key.as_deref().is_none_or(|k| e.letter.key.contains(k) || e.letter.uri.as_deref().is_some_and(|u| u.contains(k))))
        .collect();
    let n = act(&c, "pub.svc.admin.retryAllDLQ", &chosen, true).await?;
    Body::json(&json!({"success": true, "retriedCount": n}))
}

/// `purgeOldDLQ`: `{success, purgedCount}`: dismisses the dead letters whose event entered
/// the log more than `olderThanDays` ago, superseded ones included (those whose time cannot
/// be read are skipped).
async fn purge_old(c: Call) -> Answer {
    let days = lexicons::integral(&c.input["olderThanDays"]).unwrap_or(7);
    let cutoff = Utc::now() - chrono::Duration::days(days);
    let all = entries(&c.state, true, usize::MAX).await?;
    let every: Vec<&Entry> = all.iter().collect();
    let times = events(&c.state, &every).await?;
    let chosen: Vec<&Entry> =
        every.into_iter().zip(&times).filter(|(_, e)| e.as_ref().is_some_and(|e| e.appended_at < cutoff)).map(|(entry, _)| entry).collect();
    let n = act(&c, "pub.svc.admin.purgeOldDLQ", &chosen, false).await?;
    Body::json(&json!({"success": true, "purgedCount": n}))
}

/// How many dead letters the models hold (for `getFirehoseStatus`).
pub(super) async fn count(state: &AppState) -> Result<u64, ApiError> {
    Ok(totals(state).await?.0)
}
