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
use crate::reads::{self, FILTER_MAX};
use crate::views::attached::{self, list_answer};

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.endorsement.getSummary", Auth::Open, get_summary)
        .aliases(&[("eprintUri", "uri")])
        .query("pub.svc.endorsement.listForEprint", Auth::Open, list_for_eprint)
        .aliases(&[("eprintUri", "uri")])
        .query("pub.svc.endorsement.getUserEndorsement", Auth::Required, get_user_endorsement)
        .aliases(&[("eprintUri", "uri"), ("userDid", "did")])
        .query("pub.svc.endorsement.listForUser", Auth::Open, list_for_user)
        .query("pub.svc.endorsement.listForAuthorPapers", Auth::Open, list_for_author_papers)
}

/// An endorsement's view: the stored view with its `endorser`.
pub fn endorsement_view(item: &Item) -> Value {
    attached::view(item, "endorser")
}

fn contributions(item: &Item) -> Vec<String> {
    item.view["contributions"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
}

/// The summary of an eprint's endorsements: `{uri, totalEndorsements, endorserCount,
/// byContribution, endorsers}` (and the reference's names `total` and `byType` beside them).
fn summary(r: &AttachedReader, eprint: &str) -> Result<Value, ProjectionError> {
    let items = r.all(&Listing::on_eprint(Kind::Endorsement, eprint), FILTER_MAX)?;
    let mut by_contribution: BTreeMap<String, u64> = BTreeMap::new();
    let mut endorsers: BTreeMap<&str, Value> = BTreeMap::new();
    for item in &items {
        let kinds = contributions(item);
        for k in &kinds {
            *by_contribution.entry(k.clone()).or_default() += 1;
        }
        // One account may endorse twice (two records): its endorser entry unites them.
        let entry = endorsers.entry(item.did.as_str()).or_insert_with(|| {
            let mut e = attached::author(&item.did, &item.account);
            e["contributions"] = json!([]);
            e
        });
        let held = entry["contributions"].as_array_mut().expect("set above");
        for k in kinds {
            if !held.iter().any(|h| h == &k) {
                held.push(json!(k));
            }
        }
    }
    Ok(json!({
        "uri": eprint,
        "totalEndorsements": items.len(),
        "endorserCount": endorsers.len(),
        "byContribution": by_contribution,
        "endorsers": endorsers.into_values().collect::<Vec<_>>(),
        "total": items.len(),
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
