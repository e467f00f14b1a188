//! `pub.svc.notification.*` (auth required): the reviews and endorsements others wrote on
//! the caller's eprints, from the inbox model, with a read state: `updateSeen` marks what
//! svc indexed up to a time as read (as Bluesky's `app.bsky.notification.updateSeen`),
//! `getUnreadCount` counts the rest. Both are svc's, beyond the contract.

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use event_schema::{NewEvent, Payload, Source, UserAction, UserCommand};
use projections::attached::collections::Kind;
use projections::inbox::read::{InboxReader, Notification};
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::cursor;
use crate::reads;
use crate::views::attached;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.notification.listReviewsOnMyPapers", Auth::Required, list_reviews)
        .query("pub.svc.notification.listEndorsementsOnMyPapers", Auth::Required, list_endorsements)
        .query("pub.svc.notification.getUnreadCount", Auth::Required, unread_count)
        .procedure("pub.svc.notification.updateSeen", Auth::Required, update_seen)
}

/// How far ahead of this node's clock a `seenAt` may be (clients' clocks drift).
const CLOCK_SKEW: Duration = Duration::minutes(1);

/// `listReviewsOnMyPapers`.
fn list_reviews(c: &Call) -> Answer {
    list(c, Kind::Review)
}

/// `listEndorsementsOnMyPapers`.
fn list_endorsements(c: &Call) -> Answer {
    list(c, Kind::Endorsement)
}

/// A notification's view, with the eprint's title and the writer's summary when svc has
/// them; `None` when the writer's account is hidden.
fn notification(
    r: &projections::attached::read::AttachedReader,
    kind: Kind,
    n: &Notification,
) -> Result<Option<Value>, projections::ProjectionError> {
    let account = r.account(&n.did)?;
    if account.hidden {
        return Ok(None);
    }
    let who = attached::author(&n.did, &account);
    let mut v = json!({"uri": n.uri, "eprintUri": n.eprint, "createdAt": n.view["createdAt"], "isRead": n.is_read});
    if let Some(t) = r.eprint_title(&n.eprint)? {
        v["eprintTitle"] = json!(t);
    }
    if kind == Kind::Review {
        v["reviewer"] = who;
        let content: String = n.view["content"].as_str().unwrap_or_default().chars().take(200).collect();
        v["preview"] = json!(content);
    } else {
        v["endorser"] = who;
        v["contributions"] = n.view["contributions"].clone();
        if let Some(comment) = n.view.get("comment") {
            v["comment"] = comment.clone();
        }
    }
    Ok(Some(v))
}

/// `{notifications, cursor?, unreadCount}`, newest first; `unreadOnly` keeps those svc
/// indexed after the caller's `seenAt` (newest indexed first).
fn list(c: &Call, kind: Kind) -> Answer {
    let did = c.caller()?.did.clone();
    let after = cursor(&c.params)?;
    let (limit, unread_only) = (c.limit(25), c.params.bool("unreadOnly") == Some(true));
    let store = c.state.store.clone();
    let answer = reads::attached(&c.state, |r| {
        let inbox = InboxReader::new(store.as_ref())?;
        let page = inbox.page(&did, kind, unread_only, limit, after)?;
        let mut shown = Vec::with_capacity(page.notifications.len());
        for n in &page.notifications {
            shown.extend(notification(r, kind, n)?);
        }
        let mut out = json!({"notifications": shown, "unreadCount": inbox.seen(&did)?.unread(kind)});
        if let Some(next) = page.next.as_ref().map(|k| data_encoding::BASE64URL_NOPAD.encode(k)) {
            out["cursor"] = json!(next);
        }
        Ok(out)
    })?;
    Body::json(&answer)
}

/// `getUnreadCount`: `{count, reviews, endorsements, seenAt?}`: one row read.
fn unread_count(c: &Call) -> Answer {
    let did = c.caller()?.did.clone();
    let seen = reads::blocking(&c.state, || InboxReader::new(c.state.store.as_ref())?.seen(&did))?;
    let mut out = json!({"count": seen.reviews + seen.endorsements, "reviews": seen.reviews, "endorsements": seen.endorsements});
    if let Some(at) = seen.seen_at.and_then(DateTime::from_timestamp_micros) {
        out["seenAt"] = json!(at.to_rfc3339_opts(SecondsFormat::Micros, true));
    }
    Body::json(&out)
}

/// `updateSeen {seenAt}`: appends the caller's `notificationsSeen` and answers, once the
/// inbox applied it, `{seenAt, count}` (the unread notifications left). A `seenAt` in the
/// future is refused; one earlier than the caller's last changes nothing.
async fn update_seen(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let raw = c.input["seenAt"].as_str().unwrap_or_default();
    let seen_at = DateTime::parse_from_rfc3339(raw)
        .map_err(|_| ApiError::invalid_param("seenAt", "must be an RFC 3339 datetime"))?
        .with_timezone(&Utc);
    if seen_at > Utc::now() + CLOCK_SKEW {
        return Err(ApiError::invalid_param("seenAt", "must not be in the future"));
    }
    let seen_at = seen_at.to_rfc3339_opts(SecondsFormat::Micros, true);
    let action = UserAction::NotificationsSeen { seen_at: seen_at.clone() };
    let event = NewEvent {
        key: caller.clone(),
        source: Source::Command {
            nsid: "pub.svc.notification.updateSeen".into(),
            caller: caller.clone(),
            host: c.state.identity.public_url.clone(),
        },
        payload: Payload::User(UserCommand { caller: caller.clone(), action }),
    };
    crate::command::append(&c.state, event).await?;
    let seen = reads::blocking(&c.state, || InboxReader::new(c.state.store.as_ref())?.seen(&caller))?;
    Body::json(&json!({"seenAt": seen_at, "count": seen.reviews + seen.endorsements}))
}
