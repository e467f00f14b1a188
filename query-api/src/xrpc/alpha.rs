//! `pub.svc.alpha.*`: applying to the alpha programme, and the applicant's status. The
//! admin side is in [`super::admin`].

use event_schema::AccessAction;
use projections::access::read::AccessReader;
use serde_json::{json, Value};

use super::method::{Answer, Auth, Call, Routes};
use crate::auth::access_event;
use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::reads::blocking;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new().procedure("pub.svc.alpha.apply", Auth::Required, apply).query("pub.svc.alpha.checkStatus", Auth::Required, check_status)
}

/// Whether `email` has the shape of an address (`local@domain.tld`, no spaces).
fn is_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else { return false };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email.chars().any(char::is_whitespace)
        && !domain.contains('@')
}

/// `apply`: `{applicationId, status, createdAt}`.
async fn apply(c: Call) -> Answer {
    let me = c.caller()?.did.clone();
    let email = c.input["email"].as_str().unwrap_or_default();
    if !is_email(email) {
        return Err(ApiError::new(ErrorCode::InvalidEmail, format!("{email:?} is not an e-mail address")));
    }
    let held = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.alpha_application(&me))?;
    if let Some(app) = held.filter(|a| matches!(a["status"].as_str(), Some("pending" | "approved"))) {
        return Body::json(&answer(&app));
    }
    let id = uuid::Uuid::new_v4().to_string();
    let change = AccessAction::AlphaApplied { id, application: c.input.clone() };
    crate::command::append(&c.state, access_event(&c.state, &me, &me, "pub.svc.alpha.apply", change)).await?;
    let app = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.alpha_application(&me))?
        .ok_or_else(|| ApiError::internal("the application was not applied in time"))?;
    Body::json(&answer(&app))
}

fn answer(app: &Value) -> Value {
    json!({"applicationId": app["id"], "status": app["status"], "createdAt": app["createdAt"]})
}

/// `checkStatus`: `{status, appliedAt?, reviewedAt?}`; a revoked application reads as
/// rejected (the applicant's value set is none, pending, approved, rejected).
fn check_status(c: &Call) -> Answer {
    let me = &c.caller()?.did;
    let app = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.alpha_application(me))?;
    let Some(app) = app else { return Body::json(&json!({"status": "none"})) };
    let status = match app["status"].as_str() {
        Some("revoked") => "rejected",
        Some(s) => s,
        None => "none",
    };
    let mut out = json!({"status": status, "appliedAt": app["createdAt"]});
    if let Some(at) = app.get("reviewedAt") {
        out["reviewedAt"] = at.clone();
    }
    Body::json(&out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn email_shapes() {
        for good in ["a@b.org", "first.last+tag@uni.example.ac.uk"] {
            assert!(super::is_email(good), "{good}");
        }
        for bad in ["", "a", "@b.org", "a@b", "a@.org", "a@b.org.", "a b@c.org", "a@b@c.org"] {
            assert!(!super::is_email(bad), "{bad}");
        }
    }
}
