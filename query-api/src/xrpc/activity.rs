//! `pub.svc.activity.*`: a user's announced writes (details.md §9). `log` and `markFailed`
//! are `command.user` events keyed by the caller, so they are ordered with the caller's own
//! repository writes, which confirm them; the activity model keeps the rest.

use chrono::{SecondsFormat, Utc};
use data_encoding::BASE64URL_NOPAD;
use event_schema::{LoggedActivity, NewEvent, Payload, Source, UserAction, UserCommand};
use projections::activity::read::{ActivityReader, Correlation};
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::reads::blocking;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .procedure("pub.svc.activity.log", Auth::Required, log)
        .procedure("pub.svc.activity.markFailed", Auth::Required, mark_failed)
        .query("pub.svc.activity.getFeed", Auth::Required, get_feed)
        .query("pub.svc.activity.getCorrelationMetrics", Auth::Required, get_correlation_metrics)
}

fn input(c: &Call, name: &str) -> Option<String> {
    c.input.get(name).and_then(Value::as_str).map(str::to_owned)
}

/// Appends the caller's `action` as a `command.user` event of `nsid`; its position.
async fn append(c: &Call, nsid: &str, action: UserAction) -> Result<event_schema::Position, ApiError> {
    let caller = c.caller()?.did.clone();
    let event = NewEvent {
        key: caller.clone(),
        source: Source::Command { nsid: nsid.into(), caller: caller.clone(), host: c.state.identity.public_url.clone() },
        payload: Payload::User(UserCommand { caller, action }),
    };
    crate::command::append(&c.state, event).await
}

/// `log {collection, rkey, action, category, targetUri?, targetTitle?, traceId?, spanId?,
/// uiContext?, recordSnapshot?}` → `{activityId}`.
async fn log(c: Call) -> Answer {
    let text = |k: &str| input(&c, k).unwrap_or_default();
    let action = UserAction::ActivityLogged(Box::new(LoggedActivity {
        collection: text("collection"),
        rkey: text("rkey"),
        write: text("action"),
        category: text("category"),
        target_uri: input(&c, "targetUri"),
        target_title: input(&c, "targetTitle"),
        trace_id: input(&c, "traceId"),
        span_id: input(&c, "spanId"),
        ui_context: input(&c, "uiContext"),
    }));
    let position = append(&c, "pub.svc.activity.log", action).await?;
    Body::json(&json!({"activityId": position.ordinal().to_string()}))
}

/// `markFailed {collection, rkey, errorCode, errorMessage}` → `{success}`: `NotFound` when
/// the caller has no activity pending for the record.
async fn mark_failed(c: Call) -> Answer {
    let did = c.caller()?.did.clone();
    let (collection, rkey) = (input(&c, "collection").unwrap_or_default(), input(&c, "rkey").unwrap_or_default());
    let now = Utc::now().timestamp_micros();
    let pending = blocking(&c.state, || ActivityReader::new(c.state.store.as_ref())?.is_pending(&did, &collection, &rkey, now))?;
    if !pending {
        return Err(ApiError::not_found(format!("no activity of yours is pending for {collection}/{rkey}")));
    }
    let action = UserAction::ActivityFailed {
        collection,
        rkey,
        error_code: input(&c, "errorCode").unwrap_or_default(),
        error_message: input(&c, "errorMessage").unwrap_or_default(),
    };
    append(&c, "pub.svc.activity.markFailed", action).await?;
    Body::json(&json!({"success": true}))
}

/// `getFeed {category?, status?, limit, cursor?}` → `{activities, cursor?, hasMore}`.
fn get_feed(c: &Call) -> Answer {
    let did = c.caller()?.did.clone();
    let after = c
        .params
        .str("cursor")
        .map(|s| BASE64URL_NOPAD.decode(s.as_bytes()).map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this feed")))
        .transpose()?;
    if after.as_ref().is_some_and(|a| a.len() != 16) {
        return Err(ApiError::invalid_param("cursor", "not a cursor of this feed"));
    }
    let now = Utc::now().timestamp_micros();
    let page = blocking(&c.state, || {
        ActivityReader::new(c.state.store.as_ref())?.feed(&did, c.params.str("category"), c.params.str("status"), c.limit(50), after, now)
    })?;
    let mut out = json!({"activities": page.activities, "hasMore": page.next.is_some()});
    if let Some(next) = page.next {
        out["cursor"] = json!(BASE64URL_NOPAD.encode(&next));
    }
    Body::json(&out)
}

/// The correlation figures, as `getCorrelationMetrics` and `admin.getActivityCorrelation`
/// answer them: `(metrics, pendingCount)`.
pub(crate) fn correlation(c: &Call) -> Result<(Vec<Value>, u64), ApiError> {
    let now = Utc::now().timestamp_micros();
    let (rows, pending) = blocking(&c.state, || ActivityReader::new(c.state.store.as_ref())?.correlation(now))?;
    let metric = |m: &Correlation| {
        json!({
            "category": m.category,
            "total": m.logged,
            "confirmed": m.confirmed,
            "failed": m.failed,
            "timeout": m.timed_out,
            "pending": m.pending,
            "confirmationRate": if m.logged == 0 { 0.0 } else { m.confirmed as f64 / m.logged as f64 },
            "meanLatencyMs": m.mean_latency_ms,
        })
    };
    Ok((rows.iter().map(metric).collect(), pending))
}

/// `getCorrelationMetrics` → `{metrics, pendingCount}`.
fn get_correlation_metrics(c: &Call) -> Answer {
    let (metrics, pending) = correlation(c)?;
    Body::json(&json!({"metrics": metrics, "pendingCount": pending}))
}

/// `admin.getActivityCorrelation` → `{metrics, pendingCount, timestamp}`.
pub(crate) fn admin_correlation(c: &Call) -> Answer {
    let (metrics, pending) = correlation(c)?;
    Body::json(&json!({"metrics": metrics, "pendingCount": pending, "timestamp": Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)}))
}
