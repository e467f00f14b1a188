//! `assignRole`, `revokeRole`, and the bootstrap of the first admins from `ADMIN_DIDS`.

use event_schema::AccessAction;
use projections::access::read::AccessReader;
use projections::access::Role;
use serde_json::json;

use crate::auth::access_event;
use crate::body::Body;
use crate::error::ApiError;
use crate::params::check_did;
use crate::reads::blocking;
use crate::state::AppState;
use crate::xrpc::method::{Answer, Call};

/// `assignRole`.
pub(super) async fn assign(c: Call) -> Answer {
    change_role(c, true).await
}

/// `revokeRole`.
pub(super) async fn revoke(c: Call) -> Answer {
    change_role(c, false).await
}

/// `assignRole` and `revokeRole`: `{success, did, role}`, once the access model applied the
/// change (a command event with the acting admin).
async fn change_role(c: Call, grant: bool) -> Answer {
    let admin = c.caller()?.did.clone();
    let did = c.input["did"].as_str().unwrap_or_default().to_owned();
    check_did("did", &did)?;
    let role: Role = c.input["role"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .map_err(|e: projections::access::UnknownRole| ApiError::invalid_param("role", e.to_string()))?;
    let name = role.as_str().to_owned();
    let change = if grant { AccessAction::RoleGranted { role: name } } else { AccessAction::RoleRevoked { role: name } };
    let nsid = if grant { "pub.svc.admin.assignRole" } else { "pub.svc.admin.revokeRole" };
    crate::command::append(&c.state, access_event(&c.state, &did, &admin, nsid, change)).await?;
    let held = blocking(&c.state, || AccessReader::new(c.state.store.as_ref())?.roles(&did))?.iter().any(|g| g.role == role);
    Body::json(&json!({"success": held == grant, "did": did, "role": role}))
}

/// Grants the admin role to each of `dids` that does not hold it (at start, from
/// `ADMIN_DIDS`), as svc itself; the access model ignores a grant already held.
///
/// # Errors
/// When the model cannot be read or the log appended to.
pub async fn bootstrap(state: &AppState, dids: &[String]) -> Result<(), ApiError> {
    for did in dids {
        let held = blocking(state, || AccessReader::new(state.store.as_ref())?.roles(did))?.iter().any(|g| g.role == Role::Admin);
        if held {
            tracing::info!(did, "admin (already)");
            continue;
        }
        let event = access_event(
            state,
            did,
            &state.auth.service_did,
            "ADMIN_DIDS",
            AccessAction::RoleGranted { role: Role::Admin.as_str().into() },
        );
        let log = state.log.clone();
        tokio::task::spawn_blocking(move || log.append(&[event]))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(ApiError::from_error)?;
        tracing::info!(did, "admin granted from ADMIN_DIDS");
    }
    Ok(())
}
