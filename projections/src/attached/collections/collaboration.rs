//! Collaboration invites and their acceptances (beyond the contract): an invite names the
//! record shared (`subject`, a strong reference) and the invitee; the invitee accepts with
//! an acceptance naming the invite. An invite is listed under both parties and its
//! subject; an acceptance under the invite it accepts.

use serde_json::json;

use super::{created_at, get, object, text, Kind, Listing, Normalized, Record};

/// The invites an account sent or received.
pub fn invites_of(did: &str) -> Listing {
    Listing(format!("{}@party:{did}", Kind::Invite))
}

/// The invites of one record shared.
pub fn invites_on(subject: &str) -> Listing {
    Listing::pointing_at(Kind::Invite, subject)
}

/// The acceptances of one invite.
pub fn acceptances_of(invite: &str) -> Listing {
    Listing::pointing_at(Kind::InviteAcceptance, invite)
}

/// The URI of a strong reference field.
fn strong_ref<'a>(r: &'a serde_json::Value, field: &str) -> Option<&'a str> {
    r.get(field).and_then(|s| s.get("uri")).and_then(|u| u.as_str())
}

pub(super) fn invite(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let subject = strong_ref(r, "subject").ok_or("subject missing")?;
    let invitee = text(r, "invitee").ok_or("invitee missing")?;
    if invitee == did {
        return Err("an invite to oneself".into());
    }
    let subject_collection = lexicons::formats::parse_at_uri(subject).and_then(|u| u.collection).unwrap_or_default();
    let view = object(vec![
        ("subjectUri", json!(subject)),
        ("subjectCid", r["subject"].get("cid").cloned().unwrap_or(serde_json::Value::Null)),
        ("subjectCollection", json!(subject_collection)),
        ("inviter", json!(did)),
        ("invitee", json!(invitee)),
        ("role", json!(text(r, "role").unwrap_or("collaborator"))),
        ("message", get(r, "message")),
        ("expiresAt", get(r, "expiresAt")),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists = vec![Listing::by_author(Kind::Invite, did), invites_of(did), invites_of(invitee), invites_on(subject)];
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}

pub(super) fn acceptance(rec: &Record) -> Result<Normalized, String> {
    let (did, r) = (rec.did, rec.value);
    let invite = strong_ref(r, "invite").ok_or("invite missing")?;
    let view = object(vec![
        ("inviteUri", json!(invite)),
        ("subjectUri", json!(strong_ref(r, "subject").unwrap_or_default())),
        ("createdAt", get(r, "createdAt")),
    ]);
    let lists = vec![Listing::by_author(Kind::InviteAcceptance, did), acceptances_of(invite)];
    Ok(Normalized { view, created_at: created_at(r)?, lists, sets: Vec::new() })
}
