//! `pub.svc.admin.*`: the operations of the admin surface built so far (roles, the audit
//! trail), and the
//! bootstrap of the first admins from `ADMIN_DIDS`.

use event_schema::AccessAction;
use projections::access::read::AccessReader;
use projections::access::ROLES;
use serde_json::json;

use super::method::{Answer, Auth, Call, Routes};
use crate::auth::access_event;
use crate::body::Body;
use crate::eprints::{blocking, check_did};
use crate::error::ApiError;
use crate::state::AppState;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .procedure("pub.svc.admin.assignRole", Auth::Role("admin"), |c| async move { change_role(c, true).await })
        .procedure("pub.svc.admin.revokeRole", Auth::Role("admin"), |c| async move { change_role(c, false).await })
        .query_async("pub.svc.admin.getAuditLog", Auth::Role("admin"), |c| async move { get_audit_log(&c) })
}

/// `assignRole` and `revokeRole`: `{success, did, role}`, once the access model applied the
/// change (a command event with the acting admin).
async fn change_role(c: Call, grant: bool) -> Answer {
    let admin = c.caller()?.did.clone();
    let did = c.input["did"].as_str().unwrap_or_default().to_owned();
    let role = c.input["role"].as_str().unwrap_or_default().to_owned();
    check_did("did", &did)?;
    if !ROLES.contains(&role.as_str()) {
        return Err(ApiError::invalid_param("role", format!("{role:?} is not one of {}", ROLES.join(", "))));
    }
    let change = if grant { AccessAction::RoleGranted { role: role.clone() } } else { AccessAction::RoleRevoked { role: role.clone() } };
    let nsid = if grant { "pub.svc.admin.assignRole" } else { "pub.svc.admin.revokeRole" };
    crate::command::append(&c.state, access_event(&c.state, &did, &admin, nsid, change)).await?;
    let held = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.roles(&did))?.iter().any(|g| g.role == role);
    Body::json(&json!({"success": held == grant, "did": did, "role": role}))
}

/// `getAuditLog`: `{entries, cursor, total}`, newest first; `cursor` is the offset of the
/// next page (a number, as a string), `actorDid` keeps one actor's entries.
fn get_audit_log(c: &Call) -> Answer {
    let offset = match c.params.str("cursor") {
        None => 0,
        Some(raw) => raw.parse::<usize>().map_err(|_| ApiError::invalid_param("cursor", "not a cursor of this listing (a number)"))?,
    };
    let limit = c.limit(50);
    let actor = c.params.str("actorDid");
    let (entries, total) = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.audit(limit, offset, actor))?;
    let mut out = json!({"entries": entries, "total": total});
    if offset + entries.len() < total {
        out["cursor"] = json!((offset + entries.len()).to_string());
    }
    Body::json(&out)
}

/// Grants the admin role to each of `dids` that does not hold it (at start, from
/// `ADMIN_DIDS`), as svc itself; the access model ignores a grant already held.
///
/// # Errors
/// When the model cannot be read or the log appended to.
pub async fn bootstrap(state: &AppState, dids: &[String]) -> Result<(), ApiError> {
    for did in dids {
        let held = blocking(state, || AccessReader::new(state.store.as_ref())?.roles(did))?.iter().any(|g| g.role == "admin");
        if held {
            tracing::info!(did, "admin (already)");
            continue;
        }
        let event = access_event(state, did, &state.auth.service_did, "ADMIN_DIDS", AccessAction::RoleGranted { role: "admin".into() });
        let log = state.log.clone();
        tokio::task::spawn_blocking(move || log.append(&[event]))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(ApiError::from_error)?;
        tracing::info!(did, "admin granted from ADMIN_DIDS");
    }
    Ok(())
}
