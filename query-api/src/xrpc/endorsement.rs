//! `pub.svc.endorsement.*`: endorsements of eprints, per contribution type, from the
//! attached model.

use std::collections::BTreeMap;

use projections::attached::collections::{Kind, Listing};
use projections::attached::read::{AttachedReader, Item};
use projections::ProjectionError;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{check_did, cursor, uri_param};
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
        let list = Listing::on_eprint(Kind::Endorsement, eprint);
        let page = match c.params.str("contributionType") {
            Some(kind) => r.filtered_page(&list, c.limit(50), after, FILTER_MAX, |i| contributions(i).iter().any(|k| k == kind))?,
            None => r.page(&list, c.limit(50), after)?,
        };
        let mut out = list_answer("endorsements", page.items.iter().map(endorsement_view).collect(), &page);
        out["summary"] = summary(r, eprint)?;
        Ok(out)
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
