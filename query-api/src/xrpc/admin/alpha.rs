//! The alpha programme's applications, as admins review them (the applicant's side is
//! `pub.svc.alpha.*`).

use event_schema::AccessAction;
use projections::access::read::AccessReader;
use projections::access::Role;
use serde_json::{json, Value};

use super::not_found_error;
use crate::auth::access_event;
use crate::body::Body;
use crate::error::ApiError;
use crate::params::{check_did, offset};
use crate::reads::blocking;
use crate::xrpc::method::{Answer, Call};

/// Every alpha application, newest first.
fn alpha_applications(c: &Call) -> Result<Vec<Value>, ApiError> {
    let mut all = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.alpha_applications())?;
    all.sort_by(|a, b| b["createdAt"].as_str().cmp(&a["createdAt"].as_str()));
    Ok(all)
}

/// `listAlphaApplications`: `{items, total, cursor?}`, newest first, of one `status` when given.
pub(super) fn list_alpha(c: &Call) -> Answer {
    let start = offset(&c.params)?;
    let status = c.params.str("status");
    let matching: Vec<Value> = alpha_applications(c)?.into_iter().filter(|a| status.is_none_or(|s| a["status"] == s)).collect();
    let items: Vec<&Value> = matching.iter().skip(start).take(c.limit(50)).collect();
    let mut out = json!({"items": items, "total": matching.len()});
    if start + items.len() < matching.len() {
        out["cursor"] = json!((start + items.len()).to_string());
    }
    Body::json(&out)
}

fn alpha_of(c: &Call, did: &str) -> Result<Value, ApiError> {
    check_did("did", did)?;
    blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.alpha_application(did))?
        .ok_or_else(|| not_found_error(format!("{did} has no alpha application")))
}

/// `getAlphaApplication`: the application of `did`; `NotFoundError` without one.
pub(super) fn get_alpha(c: &Call) -> Answer {
    Body::json(&alpha_of(c, c.str("did"))?)
}

/// `updateAlphaApplication`: approve (grants `alpha-tester`), reject or revoke (withdraw
/// it); answers the updated application.
pub(super) async fn update_alpha(c: Call) -> Answer {
    let admin = c.caller()?.did.clone();
    let did = c.input["did"].as_str().unwrap_or_default().to_owned();
    alpha_of(&c, &did)?;
    let (status, role) = match c.input["action"].as_str() {
        Some("approve") => ("approved", AccessAction::RoleGranted { role: Role::AlphaTester.as_str().into() }),
        Some("reject") => ("rejected", AccessAction::RoleRevoked { role: Role::AlphaTester.as_str().into() }),
        Some("revoke") => ("revoked", AccessAction::RoleRevoked { role: Role::AlphaTester.as_str().into() }),
        _ => return Err(ApiError::invalid_param("action", "one of approve, reject, revoke")),
    };
    let nsid = "pub.svc.admin.updateAlphaApplication";
    crate::command::append(&c.state, access_event(&c.state, &did, &admin, nsid, AccessAction::AlphaReviewed { status: status.into() }))
        .await?;
    crate::command::append(&c.state, access_event(&c.state, &did, &admin, nsid, role)).await?;
    Body::json(&alpha_of(&c, &did)?)
}

/// `getAlphaStats`: counts by status, sector and career stage, per day over 30 days, total.
pub(super) fn alpha_stats(c: &Call) -> Answer {
    let all = alpha_applications(c)?;
    let count = |field: &str| {
        let mut m = serde_json::Map::new();
        for a in &all {
            let key = a[field].as_str().unwrap_or("unknown").to_owned();
            let n = m.get(&key).and_then(Value::as_u64).unwrap_or(0) + 1;
            m.insert(key, json!(n));
        }
        Value::Object(m)
    };
    let since = (chrono::Utc::now() - chrono::Duration::days(30)).format("%Y-%m-%d").to_string();
    let mut days = std::collections::BTreeMap::<String, u64>::new();
    for a in &all {
        if let Some(day) = a["createdAt"].as_str().and_then(|t| t.get(..10)).filter(|d| *d >= since.as_str()) {
            *days.entry(day.to_owned()).or_default() += 1;
        }
    }
    let recent: Vec<Value> = days.into_iter().map(|(date, count)| json!({"date": date, "count": count})).collect();
    Body::json(&json!({
        "byStatus": count("status"),
        "bySector": count("sector"),
        "byCareerStage": count("careerStage"),
        "recentByDay": recent,
        "total": all.len(),
    }))
}
