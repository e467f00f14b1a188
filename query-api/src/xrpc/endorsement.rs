//! `pub.svc.endorsement.*`: endorsements of eprints, per contribution type, from the
//! attached model.

use std::collections::BTreeMap;

use projections::attached::collections::{endorsement, Kind, Listing};
use projections::attached::read::{AttachedReader, Item, Page};
use projections::inbox::read::InboxReader;
use projections::ProjectionError;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{check_did, cursor, did_param, uri_param};
use crate::reads;
use crate::views::attached::{self, list_answer};

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.endorsement.getSummary", Auth::Open, get_summary)
        .kept()
        .aliases(&[("eprintUri", "uri")])
        .query("pub.svc.endorsement.listForEprint", Auth::Open, list_for_eprint)
        .kept()
        .aliases(&[("eprintUri", "uri")])
        .query("pub.svc.endorsement.getUserEndorsement", Auth::Required, get_user_endorsement)
        .aliases(&[("eprintUri", "uri"), ("userDid", "did")])
        .query("pub.svc.endorsement.listForUser", Auth::Open, list_for_user)
        .kept()
        .query("pub.svc.endorsement.listForAuthorPapers", Auth::Open, list_for_author_papers)
        .kept()
}

/// An endorsement's view: the stored view with its `endorser`.
pub fn endorsement_view(item: &Item) -> Value {
    attached::view(item, "endorser")
}

fn contributions(item: &Item) -> Vec<String> {
    item.view["contributions"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

/// The most endorsers a summary lists (its counts cover every one).
const SUMMARY_ENDORSERS: usize = 100;

/// The summary of an eprint's endorsements: `{uri, totalEndorsements, endorserCount,
/// byContribution, endorsers}` (and the reference's names `total` and `byType` beside them),
/// from the counts the model keeps: one row per count, and the first 100 endorsers (by DID)
/// with their contributions.
fn summary(r: &AttachedReader, eprint: &str) -> Result<Value, ProjectionError> {
    let on_eprint = Listing::on_eprint(Kind::Endorsement, eprint);
    let total = r.count(&on_eprint)?;
    let mut by_contribution: BTreeMap<&str, u64> = BTreeMap::new();
    for kind in endorsement::CONTRIBUTIONS {
        let n = r.count(&Listing::filtered(&on_eprint, &endorsement::contribution(kind)))?;
        if n > 0 {
            by_contribution.insert(kind, n);
        }
    }
    let set = endorsement::endorsers(eprint);
    let mut endorsers = Vec::new();
    for did in r.keys(&set, SUMMARY_ENDORSERS)? {
        let account = r.account(&did)?;
        if account.hidden {
            continue;
        }
        let mut e = attached::author(&did, &account);
        let mut held: Vec<String> = Vec::new();
        for item in r.all(&Listing::filtered(&on_eprint, &format!("by:{did}")), SUMMARY_ENDORSERS)? {
            for k in contributions(&item) {
                if !held.contains(&k) {
                    held.push(k);
                }
            }
        }
        e["contributions"] = json!(held);
        endorsers.push(e);
    }
    Ok(json!({
        "uri": eprint,
        "totalEndorsements": total,
        "endorserCount": r.count(&set)?,
        "byContribution": by_contribution,
        "endorsers": endorsers,
        "total": total,
        "byType": by_contribution,
    }))
}

/// `pub.svc.endorsement.getSummary`.
fn get_summary(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "uri")?;
    Body::json(&reads::attached(&c.state, |r| summary(r, eprint))?)
}

/// `pub.svc.endorsement.listForEprint`: `{endorsements, summary, cursor?, hasMore, total}`,
/// newest first; `contributionType` keeps those that endorse it.
fn list_for_eprint(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "uri")?;
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let list = of_type(c, Listing::on_eprint(Kind::Endorsement, eprint));
        let page = r.page(&list, c.limit(50), after)?;
        let mut out = list_answer("endorsements", page.items.iter().map(endorsement_view).collect(), &page);
        out["summary"] = summary(r, eprint)?;
        Ok(out)
    })?;
    Body::json(&answer)
}

/// `list`, or its sub-listing of the `contributionType` the call names.
fn of_type(c: &Call, list: Listing) -> Listing {
    match c.params.str("contributionType") {
        Some(kind) => Listing::filtered(&list, &endorsement::contribution(kind)),
        None => list,
    }
}

/// `pub.svc.endorsement.listForUser` (beyond the contract): `{endorsements, cursor?,
/// hasMore, total}`, the endorsements one account wrote, newest first; `contributionType`
/// keeps those that endorse it.
fn list_for_user(c: &Call) -> Answer {
    let did = did_param(&c.params, "endorserDid")?;
    let after = cursor(&c.params)?;
    let answer = reads::attached(&c.state, |r| {
        let page = r.page(&of_type(c, Listing::by_author(Kind::Endorsement, did)), c.limit(50), after)?;
        Ok(list_answer("endorsements", page.items.iter().map(endorsement_view).collect(), &page))
    })?;
    Body::json(&answer)
}

/// `pub.svc.endorsement.listForAuthorPapers` (beyond the contract): `{endorsements,
/// cursor?, hasMore, total}`, the endorsements of the eprints an account is listed on
/// (theirs included), newest first, from the inbox model.
fn list_for_author_papers(c: &Call) -> Answer {
    let did = did_param(&c.params, "authorDid")?;
    let after = cursor(&c.params)?;
    let store = c.state.store.clone();
    let answer = reads::attached(&c.state, |r| {
        let inbox = InboxReader::new(store.as_ref())?;
        let papers = inbox.on_papers(did, Kind::Endorsement, c.limit(50), after)?;
        let mut items = Vec::with_capacity(papers.uris.len());
        for uri in &papers.uris {
            items.extend(r.get(uri)?);
        }
        let page = Page { items, next: papers.next, total: papers.total };
        Ok(list_answer("endorsements", page.items.iter().map(endorsement_view).collect(), &page))
    })?;
    Body::json(&answer)
}

/// `pub.svc.endorsement.getUserEndorsement` (auth required): one account's endorsement of an
/// eprint, the caller's unless `did` names another; `NotFound` when there is none.
fn get_user_endorsement(c: &Call) -> Answer {
    let eprint = uri_param(&c.params, "uri")?;
    let did = match c.params.str("did") {
        Some(did) => did.to_owned(),
        None => c.caller()?.did.clone(),
    };
    check_did("did", &did)?;
    let list = Listing::filtered(&Listing::on_eprint(Kind::Endorsement, eprint), &format!("by:{did}"));
    let found = reads::attached(&c.state, |r| Ok(r.page(&list, 1, None)?.items.into_iter().next()))?;
    let item = found.ok_or_else(|| ApiError::not_found(format!("{did} has not endorsed {eprint}")))?;
    Body::json(&endorsement_view(&item))
}
