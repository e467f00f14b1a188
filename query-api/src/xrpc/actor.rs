//! `pub.svc.actor.*`: the caller's own roles and profile.

use projections::access::read::AccessReader;
use projections::access::Role;
use projections::attached::collections::{Kind, Listing, PROFILE};
use serde_json::json;

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::reads;
use crate::reads::blocking;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new().query("pub.svc.actor.getMyRoles", Auth::Required, get_my_roles).query(
        "pub.svc.actor.getMyProfile",
        Auth::Required,
        get_my_profile,
    )
}

/// `pub.svc.actor.getMyRoles`: `{roles, isAdmin, isAlphaTester, isPremium, assignments}`,
/// read fresh from the access model.
fn get_my_roles(c: &Call) -> Answer {
    let me = c.caller()?;
    let grants = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.roles(&me.did))?;
    let roles: Vec<Role> = grants.iter().map(|g| g.role).collect();
    let holds = |role| roles.contains(&role) || roles.contains(&Role::Admin);
    Body::json(&json!({
        "roles": roles,
        "isAdmin": holds(Role::Admin),
        "isAlphaTester": holds(Role::AlphaTester),
        "isPremium": holds(Role::Premium),
        "assignments": grants,
    }))
}

/// `pub.svc.actor.getMyProfile`: the contract's own-profile shape (did, handle,
/// displayName, orcid, affiliation, bio, eprintCount, endorsementCount) from the caller's
/// `pub.svc.actor.profile` record and the read models, with the record's other fields.
fn get_my_profile(c: &Call) -> Answer {
    let me = c.caller()?;
    let did = me.did.as_str();
    let profile = reads::attached(&c.state, |r| {
        let account = r.account(did)?;
        let record = r.get(&format!("at://{did}/{PROFILE}/self"))?;
        let eprints = r.eprints().by_author(did, 1, None)?.total;
        let mut out = record.map_or_else(|| json!({}), |r| r.view);
        out["did"] = json!(did);
        let handle = account.handle.clone().or_else(|| me.handle.clone());
        out["handle"] = json!(handle.as_deref().unwrap_or("handle.invalid"));
        if out.get("displayName").is_none() {
            if let Some(n) = &account.display_name {
                out["displayName"] = json!(n);
            }
        }
        if out.get("affiliation").is_none() {
            if let Some(first) = out["affiliations"].get(0).and_then(|a| a.get("name").or(Some(a))).and_then(|n| n.as_str()) {
                out["affiliation"] = json!(first);
            }
        }
        out["eprintCount"] = json!(eprints);
        out["endorsementCount"] = json!(r.count(&Listing::by_author(Kind::Endorsement, did))?);
        out["reviewCount"] = json!(r.count(&Listing::by_author(Kind::Review, did))?);
        Ok(out)
    })?;
    Body::json(&profile)
}
