//! `pub.svc.collaboration.*` (beyond the contract): invites to collaborate on a record and
//! their acceptances, from the attached model. An invite is accepted when its invitee
//! wrote an acceptance naming it; it is expired when its `expiresAt` passed unaccepted,
//! and pending otherwise (no record rejects an invite: `rejected` matches none). The
//! collaborators on a record are the invitees who accepted an invite of its owner.

use projections::attached::collections::collaboration::{acceptances_of, invites_of, invites_on};
use projections::attached::read::{AttachedReader, Item};
use projections::ProjectionError;
use serde_json::{json, Map, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{check_did, cursor};
use crate::reads;
use crate::views::attached::next_cursor;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new().query("pub.svc.collaboration.listInvites", Auth::Required, list_invites).query(
        "pub.svc.collaboration.listCollaborators",
        Auth::Open,
        list_collaborators,
    )
}

/// The most rows a filtered listing reads.
const MAX_SCAN: usize = 10_000;

/// The states an invite can be in, and `all`.
const STATES: &[&str] = &["pending", "accepted", "rejected", "expired", "all"];

/// An invite's state, and its invitee's acceptance when it has one.
fn state_of(r: &AttachedReader, invite: &Item, now: &str) -> Result<(&'static str, Option<Item>), ProjectionError> {
    let invitee = invite.text("invitee");
    let accepted = r.all(&acceptances_of(&invite.uri), 100)?.into_iter().find(|a| a.did == invitee);
    let state = match (&accepted, invite.view["expiresAt"].as_str()) {
        (Some(_), _) => "accepted",
        (None, Some(expires)) if expires < now => "expired",
        (None, _) => "pending",
    };
    Ok((state, accepted))
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn invite_view(invite: &Item, state: &str, accepted: Option<&Item>) -> Value {
    let mut out = Map::new();
    out.insert("uri".into(), json!(invite.uri));
    out.insert("cid".into(), json!(invite.cid));
    if let Value::Object(fields) = &invite.view {
        out.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    out.insert("state".into(), json!(state));
    if let Some(a) = accepted {
        out.insert("acceptanceUri".into(), json!(a.uri));
        out.insert("acceptedAt".into(), a.view["createdAt"].clone());
    }
    Value::Object(out)
}

/// `pub.svc.collaboration.listInvites {invitee?, inviter?, subjectUri?, subjectCollection?,
/// state = all, limit, cursor?}` (auth) → `{invites, cursor?, hasMore, total}`: the invites
/// the caller sent or received, newest first.
fn list_invites(c: &Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let p = &c.params;
    for field in ["invitee", "inviter"] {
        if let Some(did) = p.str(field) {
            check_did(field, did)?;
        }
    }
    let state = p.str("state").unwrap_or("all");
    if !STATES.contains(&state) {
        return Err(ApiError::invalid_param("state", format!("one of {}", STATES.join(", "))));
    }
    let after = cursor(p)?;
    let now = now();
    let filtered = ["invitee", "inviter", "subjectUri", "subjectCollection"].iter().any(|k| p.str(k).is_some()) || state != "all";
    let answer = reads::attached(&c.state, |r| {
        let keep = |i: &Item| {
            p.str("invitee").is_none_or(|d| i.text("invitee") == d)
                && p.str("inviter").is_none_or(|d| i.did == d)
                && p.str("subjectUri").is_none_or(|u| i.text("subjectUri") == u)
                && p.str("subjectCollection").is_none_or(|n| i.text("subjectCollection") == n)
                && (state == "all" || state_of(r, i, &now).is_ok_and(|(s, _)| s == state))
        };
        let page = r.page_where(&invites_of(&caller), c.limit(50), after, filtered.then_some(&keep as &dyn Fn(&Item) -> bool), MAX_SCAN)?;
        let mut invites = Vec::new();
        for invite in &page.items {
            let (state, accepted) = state_of(r, invite, &now)?;
            invites.push(invite_view(invite, state, accepted.as_ref()));
        }
        let mut out = json!({"invites": invites, "hasMore": page.next.is_some(), "total": page.total});
        if let Some(cursor) = next_cursor(&page) {
            out["cursor"] = json!(cursor);
        }
        Ok(out)
    })?;
    Body::json(&answer)
}

/// `pub.svc.collaboration.listCollaborators {subjectUri}` → `{collaborators}`: the invitees
/// who accepted an invite of the record's owner to it, each once (their newest invite).
fn list_collaborators(c: &Call) -> Answer {
    let subject = c.str("subjectUri");
    let owner = lexicons::formats::parse_at_uri(subject).map(|u| u.authority.to_owned()).unwrap_or_default();
    let now = now();
    let answer = reads::attached(&c.state, |r| {
        let mut out: Vec<Value> = Vec::new();
        for invite in r.all(&invites_on(subject), MAX_SCAN)?.iter().filter(|i| i.did == owner) {
            let (state, accepted) = state_of(r, invite, &now)?;
            let (Some(accepted), "accepted") = (accepted, state) else { continue };
            let did = invite.text("invitee");
            if out.iter().any(|o| o["did"] == did) {
                continue;
            }
            let account = r.account(did)?;
            let mut v = json!({
                "did": did, "role": invite.view["role"], "inviteUri": invite.uri, "acceptanceUri": accepted.uri,
                "invitedAt": invite.view["createdAt"], "acceptedAt": accepted.view["createdAt"],
            });
            if let Some(handle) = account.handle {
                v["handle"] = json!(handle);
            }
            if let Some(name) = account.display_name {
                v["displayName"] = json!(name);
            }
            out.push(v);
        }
        Ok(out)
    })?;
    Body::json(&json!({"collaborators": answer}))
}
