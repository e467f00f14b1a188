//! `pub.svc.notification.*` (auth required): the reviews and endorsements others wrote on
//! the caller's eprints. svc keeps no read position yet: every notification is unread, and
//! `unreadCount` is the total (docs/decisions.md, "Notifications").

use projections::attached::collections::{Kind, Listing};
use projections::attached::read::{AttachedReader, Item};
use projections::ProjectionError;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::params::cursor;
use crate::reads::{self, FILTER_MAX};
use crate::views::attached;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new().query("pub.svc.notification.listReviewsOnMyPapers", Auth::Required, list_reviews).query(
        "pub.svc.notification.listEndorsementsOnMyPapers",
        Auth::Required,
        list_endorsements,
    )
}

/// `listReviewsOnMyPapers`.
fn list_reviews(c: &Call) -> Answer {
    list(c, Kind::Review)
}

/// `listEndorsementsOnMyPapers`.
fn list_endorsements(c: &Call) -> Answer {
    list(c, Kind::Endorsement)
}

/// The most of the caller's eprints read.
const MAX_PAPERS: usize = 1000;

/// The records of `kind` by others on the eprints `did` is listed on, newest first, with
/// each eprint's title.
fn on_my_papers(r: &AttachedReader, did: &str, kind: Kind) -> Result<Vec<(Item, Option<String>)>, ProjectionError> {
    let mut out = Vec::new();
    let mut after = None;
    let mut read_papers = 0;
    loop {
        let page = r.eprints().by_author(did, 100, after)?;
        for eprint in &page.eprints {
            let uri = eprint["uri"].as_str().unwrap_or_default();
            let title = eprint["title"].as_str().map(str::to_owned);
            for item in r.all(&Listing::on_eprint(kind, uri), FILTER_MAX)? {
                if item.did != did {
                    out.push((item, title.clone()));
                }
            }
        }
        read_papers += page.eprints.len();
        match page.next {
            Some(next) if read_papers < MAX_PAPERS => after = Some(next),
            _ => break,
        }
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.0.listing_key()));
    Ok(out)
}

fn notification(kind: Kind, item: &Item, title: Option<String>) -> Value {
    let who = attached::author(&item.did, &item.account);
    let mut v = json!({"uri": item.uri, "eprintUri": item.view["eprintUri"], "createdAt": item.view["createdAt"], "isRead": false});
    if let Some(t) = title {
        v["eprintTitle"] = json!(t);
    }
    if kind == Kind::Review {
        v["reviewer"] = who;
        let content: String = item.view["content"].as_str().unwrap_or_default().chars().take(200).collect();
        v["preview"] = json!(content);
    } else {
        v["endorser"] = who;
        v["contributions"] = item.view["contributions"].clone();
        if let Some(comment) = item.view.get("comment") {
            v["comment"] = comment.clone();
        }
    }
    v
}

/// `{notifications, cursor?, unreadCount}`, newest first.
fn list(c: &Call, kind: Kind) -> Answer {
    let did = c.caller()?.did.clone();
    let after = cursor(&c.params)?;
    let limit = c.limit(25);
    let answer = reads::attached(&c.state, |r| {
        let all = on_my_papers(r, &did, kind)?;
        let total = all.len();
        let mut rest: Vec<(Item, Option<String>)> =
            all.into_iter().filter(|(i, _)| after.as_ref().is_none_or(|a| i.listing_key() < *a)).collect();
        let has_more = rest.len() > limit;
        rest.truncate(limit);
        let mut out = json!({"unreadCount": total});
        if has_more {
            out["cursor"] = json!(data_encoding::BASE64URL_NOPAD.encode(&rest.last().map(|(i, _)| i.listing_key()).unwrap_or_default()));
        }
        out["notifications"] = Value::Array(rest.into_iter().map(|(i, t)| notification(kind, &i, t)).collect());
        Ok(out)
    })?;
    Body::json(&answer)
}
