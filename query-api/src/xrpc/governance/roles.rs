//! Governance roles, elevation and delegation (beyond the contract; docs/spec details §7),
//! from the governance model. A user asks to be elevated to trusted editor
//! (`requestElevation`): granted at once when every eligibility rule holds, otherwise left
//! pending for a governance administrator to approve or reject. Administrators grant and
//! revoke delegations and revoke roles. Each change is a command event; the answer is read
//! back from the model.
//!
//! A governance administrator holds the governance role `administrator` (granted at start
//! to `--governance-admins`); the governance repository's own DID is one too. The role is
//! checked on every call.

use chrono::{Duration, SecondsFormat, Utc};
use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, Source, UserAction, UserCommand};
use projections::admin::read::AdminReader;
use projections::attached::collections::endorsement::endorsers;
use projections::attached::collections::{Kind, Listing};
use projections::eprints::read::EprintsReader;
use projections::governance::read::{GovernanceReader, RowPage};
use projections::governance::{ADMINISTRATOR, MEMBER, ROLES};
use serde_json::{json, Value};

use super::super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::{ApiError, ErrorCode};
use crate::params::{check_did, offset};
use crate::reads::blocking;
use crate::state::AppState;

/// The methods of roles, elevation and delegation.
pub(super) fn routes() -> Routes {
    Routes::new()
        .procedure("pub.svc.governance.requestElevation", Auth::Required, request_elevation)
        .procedure("pub.svc.governance.approveElevation", Auth::Required, approve_elevation)
        .procedure("pub.svc.governance.rejectElevation", Auth::Required, reject_elevation)
        .query("pub.svc.governance.listElevationRequests", Auth::Required, list_elevation_requests)
        .procedure("pub.svc.governance.grantDelegation", Auth::Required, grant_delegation)
        .procedure("pub.svc.governance.revokeDelegation", Auth::Required, revoke_delegation)
        .query("pub.svc.governance.listDelegations", Auth::Required, list_delegations)
        .query("pub.svc.governance.listTrustedEditors", Auth::Required, list_trusted_editors)
        .query("pub.svc.governance.getEditorStatus", Auth::Required, get_editor_status)
        .procedure("pub.svc.governance.revokeRole", Auth::Required, revoke_role)
}

/// The eligibility thresholds of an elevation to trusted editor (docs/spec details §7).
const MIN_ACCOUNT_DAYS: i64 = 90;
/// Eprints of the user's, each endorsed by at least [`MIN_ENDORSERS`] accounts.
const MIN_ENDORSED_EPRINTS: u64 = 10;
/// Distinct endorsers an eprint needs to count.
const MIN_ENDORSERS: u64 = 5;
/// Proposals and votes together.
const MIN_GOVERNANCE_ACTS: u64 = 20;
/// The least share of the user's decided proposals that were approved.
const MIN_REPUTATION: f64 = 0.7;

/// The rank of a role among [`ROLES`] (a community member's is 0).
pub(crate) fn rank(role: &str) -> usize {
    ROLES.iter().position(|r| *r == role).unwrap_or(0)
}

fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn unauthorized() -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, "only a governance administrator may do this")
}

/// The caller, when they are a governance administrator (checked on every call).
fn administrator(c: &Call) -> Result<String, ApiError> {
    let did = c.caller()?.did.clone();
    if did == c.state.identity.governance_did {
        return Ok(did);
    }
    let role = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.role(&did))?;
    if role.role == ADMINISTRATOR {
        Ok(did)
    } else {
        Err(unauthorized())
    }
}

/// A command event of the method `nsid` keyed by `key`.
fn admin_event(c: &Call, nsid: &str, actor: &str, key: &str, action: AdminAction) -> NewEvent {
    c.command(nsid, key, Payload::Admin(AdminCommand { actor: actor.to_owned(), action }))
}

/// What governance has to say of an account: the metrics of the elevation rules.
struct Metrics {
    account_days: Option<i64>,
    eprints: u64,
    endorsed_eprints: u64,
    proposals: u64,
    votes: u64,
    approved: u64,
    decided: u64,
    violations: usize,
}

impl Metrics {
    fn reputation(&self) -> Option<f64> {
        (self.decided > 0).then(|| self.approved as f64 / self.decided as f64)
    }

    /// The rules of an elevation to trusted editor that do not hold.
    fn unmet(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.account_days.is_none_or(|d| d < MIN_ACCOUNT_DAYS) {
            out.push(format!("accountAge: known to svc for at least {MIN_ACCOUNT_DAYS} days"));
        }
        if self.endorsed_eprints < MIN_ENDORSED_EPRINTS {
            out.push(format!("eprints: at least {MIN_ENDORSED_EPRINTS} eprints with {MIN_ENDORSERS} endorsers each"));
        }
        if self.proposals + self.votes < MIN_GOVERNANCE_ACTS {
            out.push(format!("governanceActivity: at least {MIN_GOVERNANCE_ACTS} proposals and votes"));
        }
        if self.violations > 0 {
            out.push("noViolations: no take-down or report of their records".into());
        }
        if self.reputation().is_none_or(|r| r < MIN_REPUTATION) {
            out.push(format!("reputation: at least {MIN_REPUTATION} of their decided proposals approved"));
        }
        out
    }

    fn view(&self) -> Value {
        json!({
            "accountAgeDays": self.account_days, "eprintCount": self.eprints, "endorsedEprintCount": self.endorsed_eprints,
            "proposalCount": self.proposals, "voteCount": self.votes, "reputation": self.reputation(), "violationCount": self.violations,
        })
    }
}

/// The metrics of `did`, from the read models.
fn metrics(state: &AppState, did: &str) -> Result<Metrics, ApiError> {
    let gov = state.identity.governance_did.clone();
    crate::reads::attached(state, |r| {
        let eprints = EprintsReader::new(state.store.as_ref())?;
        let account_days = eprints
            .user_first_seen(did)?
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(&s).ok())
            .map(|t| (Utc::now() - t.with_timezone(&Utc)).num_days());
        let uris = eprints.uris_by_author(did, 1_000)?;
        let counts = r.counts(&uris.iter().map(|u| endorsers(u)).collect::<Vec<_>>())?;
        let endorsed_eprints = counts.iter().filter(|n| **n >= MIN_ENDORSERS).count() as u64;
        let proposals = r.all(&Listing::by_author(Kind::Proposal, did), 1_000)?;
        let roles = GovernanceReader::new(state.store.as_ref())?;
        let (mut approved, mut decided) = (0, 0);
        for p in &proposals {
            match super::standing(r, &roles, &state.identity.consensus, &gov, p)?.status {
                "approved" => (approved, decided) = (approved + 1, decided + 1),
                "rejected" => decided += 1,
                _ => {}
            }
        }
        let violations = AdminReader::new(state.store.as_ref())?.violations(Some(did), 1)?.len();
        Ok(Metrics {
            account_days,
            eprints: uris.len() as u64,
            endorsed_eprints,
            proposals: proposals.len() as u64,
            votes: r.count(&Listing::by_author(Kind::Vote, did))?,
            approved,
            decided,
            violations,
        })
    })
}

/// `requestElevation {targetRole}` → `{success, requestId, message}`: granted at once when
/// every rule holds; otherwise pending, the message naming the rules that do not.
async fn request_elevation(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let target = c.input["targetRole"].as_str().unwrap_or_default().to_owned();
    if target != "trusted-editor" {
        return Err(ApiError::invalid_param("targetRole", "trusted-editor is the role one can ask for"));
    }
    let (held, pending) = blocking(&c.state, || -> Result<_, ApiError> {
        let r = GovernanceReader::new(c.state.store.as_ref())?;
        let pending = r.elevations_of(&caller)?.into_iter().any(|e| e["status"] == "pending");
        Ok((r.role(&caller)?.role, pending))
    })?;
    if rank(&held) >= rank(&target) {
        return Err(ApiError::invalid_request(format!("{caller} already holds {held}")));
    }
    if pending {
        return Err(ApiError::invalid_request("a request of yours is already waiting for an administrator"));
    }
    let unmet = metrics(&c.state, &caller)?.unmet();
    let id = uuid::Uuid::new_v4().to_string();
    let granted = unmet.is_empty();
    let action = UserAction::ElevationRequested { id: id.clone(), target_role: target.clone(), granted, unmet: unmet.clone() };
    let event = c.command("pub.svc.governance.requestElevation", &caller, Payload::User(UserCommand { caller: caller.clone(), action }));
    crate::command::append(&c.state, event).await?;
    let message = if granted {
        format!("granted: you are a {target}")
    } else {
        format!("waiting for a governance administrator; rules not met: {}", unmet.join("; "))
    };
    Body::json(&json!({"success": true, "requestId": id, "message": message}))
}

/// `approveElevation {requestId, verificationNotes?}` and `rejectElevation {requestId,
/// reason}` (administrators): decide a pending request.
async fn decide(c: Call, nsid: &str, approved: bool, note_field: &str) -> Answer {
    let admin = administrator(&c)?;
    let id = c.input["requestId"].as_str().unwrap_or_default().to_owned();
    let request = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.elevation(&id))?
        .ok_or_else(|| ApiError::not_found(format!("no elevation request {id}")))?;
    if request["status"] != "pending" {
        return Err(ApiError::invalid_request(format!("the request is already {}", request["status"].as_str().unwrap_or_default())));
    }
    let did = request["did"].as_str().unwrap_or_default().to_owned();
    let note = c.input[note_field].as_str().map(str::to_owned);
    let action = AdminAction::ElevationDecided { id: id.clone(), did: did.clone(), approved, note };
    crate::command::append(&c.state, admin_event(&c, nsid, &admin, &did, action)).await?;
    let status = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.elevation(&id))?.map(|e| e["status"].clone());
    let message = format!("{did}'s request is {}", status.as_ref().and_then(Value::as_str).unwrap_or("decided"));
    Body::json(&json!({"success": true, "requestId": id, "message": message}))
}

async fn approve_elevation(c: Call) -> Answer {
    decide(c, "pub.svc.governance.approveElevation", true, "verificationNotes").await
}

async fn reject_elevation(c: Call) -> Answer {
    decide(c, "pub.svc.governance.rejectElevation", false, "reason").await
}

fn page_answer(name: &str, page: RowPage) -> Value {
    let mut out = json!({name: page.items, "total": page.total});
    if let Some(next) = page.next {
        out["cursor"] = json!(next.to_string());
    }
    out
}

/// `listElevationRequests {limit, cursor?}` (administrators) → `{requests, cursor?, total}`:
/// the pending requests, newest first.
fn list_elevation_requests(c: &Call) -> Answer {
    administrator(c)?;
    let start = offset(&c.params)?;
    let page = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.elevations(Some("pending"), c.limit(20), start))?;
    Body::json(&page_answer("requests", page))
}

/// `grantDelegation {delegateDid, collections, daysValid (1 to 365), maxRecordsPerDay}`
/// (administrators) → `{success, delegationId, message}`.
async fn grant_delegation(c: Call) -> Answer {
    let admin = administrator(&c)?;
    let delegate = c.input["delegateDid"].as_str().unwrap_or_default().to_owned();
    check_did("delegateDid", &delegate)?;
    let days = c.input["daysValid"].as_i64().unwrap_or(365);
    if !(1..=365).contains(&days) {
        return Err(ApiError::invalid_param("daysValid", "from 1 to 365 days"));
    }
    let max = c.input["maxRecordsPerDay"].as_u64().unwrap_or(100);
    let mut collections = Vec::new();
    for nsid in c.input["collections"].as_array().into_iter().flatten() {
        match nsid.as_str() {
            Some(n) if lexicons::formats::is_nsid(n) => collections.push(n.to_owned()),
            _ => return Err(ApiError::invalid_param("collections", "NSIDs of record collections")),
        }
    }
    if collections.is_empty() {
        return Err(ApiError::invalid_param("collections", "at least one collection"));
    }
    let id = uuid::Uuid::new_v4().to_string();
    let expires_at = (Utc::now() + Duration::days(days)).to_rfc3339_opts(SecondsFormat::Millis, true);
    let action = AdminAction::DelegationGranted {
        id: id.clone(),
        delegate: delegate.clone(),
        collections,
        expires_at: expires_at.clone(),
        max_records_per_day: max.clamp(1, 1000) as u32,
    };
    crate::command::append(&c.state, admin_event(&c, "pub.svc.governance.grantDelegation", &admin, &delegate, action)).await?;
    Body::json(&json!({"success": true, "delegationId": id, "message": format!("{delegate} may write until {expires_at}")}))
}

/// `revokeDelegation {delegationId}` (administrators) → `{success, delegationId, message}`.
async fn revoke_delegation(c: Call) -> Answer {
    let admin = administrator(&c)?;
    let id = c.input["delegationId"].as_str().unwrap_or_default().to_owned();
    let held = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.delegation(&id, &now()))?
        .ok_or_else(|| ApiError::not_found(format!("no delegation {id}")))?;
    let delegate = held["delegateDid"].as_str().unwrap_or_default().to_owned();
    let revoked = held.get("revokedAt").is_none();
    if revoked {
        let action = AdminAction::DelegationRevoked { id: id.clone(), delegate: delegate.clone() };
        crate::command::append(&c.state, admin_event(&c, "pub.svc.governance.revokeDelegation", &admin, &delegate, action)).await?;
    }
    let message = if revoked { format!("{delegate}'s delegation is revoked") } else { "the delegation was already revoked".to_owned() };
    Body::json(&json!({"success": revoked, "delegationId": id, "message": message}))
}

/// `listDelegations {limit, cursor?}` (administrators) → `{delegations, cursor?, total}`:
/// every delegation, newest first, `active` while neither revoked nor expired.
fn list_delegations(c: &Call) -> Answer {
    administrator(c)?;
    let start = offset(&c.params)?;
    let page = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.delegations(None, c.limit(20), start, &now()))?;
    Body::json(&page_answer("delegations", page))
}

/// `listTrustedEditors {role?, limit, cursor?}` (administrators) → `{editors, cursor?,
/// total}`: the accounts holding a governance role (that role when given), newest grant
/// first, with their handles and names.
fn list_trusted_editors(c: &Call) -> Answer {
    administrator(c)?;
    let role = c.params.str("role");
    if role == Some(MEMBER) {
        return Err(ApiError::invalid_param("role", "a community member holds no role to list"));
    }
    let start = offset(&c.params)?;
    let mut page = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.holders(role, c.limit(50), start))?;
    crate::reads::attached(&c.state, |r| {
        for editor in &mut page.items {
            let account = r.account(editor["did"].as_str().unwrap_or_default())?;
            if let Some(h) = account.handle {
                editor["handle"] = json!(h);
            }
            if let Some(n) = account.display_name {
                editor["displayName"] = json!(n);
            }
        }
        Ok(())
    })?;
    Body::json(&page_answer("editors", page))
}

/// `getEditorStatus {did?}` (signed in) → `#editorStatus` of the account, by default the
/// caller's.
fn get_editor_status(c: &Call) -> Answer {
    let did = match c.params.str("did") {
        Some(d) => d.to_owned(),
        None => c.caller()?.did.clone(),
    };
    check_did("did", &did)?;
    let (grant, delegations, known) = blocking(&c.state, || -> Result<_, ApiError> {
        let r = GovernanceReader::new(c.state.store.as_ref())?;
        let known = EprintsReader::new(c.state.store.as_ref())?.user_first_seen(&did)?.is_some();
        Ok((r.role(&did)?, r.delegations(Some(&did), 100, 0, &now())?, known))
    })?;
    if !known && grant.granted_at.is_none() {
        return Err(ApiError::not_found(format!("svc knows no account {did}")));
    }
    let metrics = metrics(&c.state, &did)?;
    let active = delegations.items.into_iter().find(|d| d["active"] == true);
    let account = crate::reads::attached(&c.state, |r| r.account(&did))?;
    let mut out = json!({
        "did": did, "role": grant.role, "hasDelegation": active.is_some(), "metrics": metrics.view(),
        "recordsCreatedToday": 0, "dailyRateLimit": 0,
    });
    if let Some(name) = account.display_name {
        out["displayName"] = json!(name);
    }
    if let (Some(at), Some(by)) = (grant.granted_at, grant.granted_by) {
        out["roleGrantedAt"] = json!(at);
        out["roleGrantedBy"] = json!(by);
    }
    if let Some(d) = active {
        let collections: Vec<String> =
            d["collections"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect();
        out["recordsCreatedToday"] = json!(records_today(&c.state, &did, &collections)?);
        out["delegationExpiresAt"] = d["expiresAt"].clone();
        out["delegationCollections"] = json!(collections);
        out["dailyRateLimit"] = d["maxRecordsPerDay"].clone();
    }
    Body::json(&out)
}

/// The records `did` created today (UTC) in the graph collections among `collections`.
fn records_today(state: &AppState, did: &str, collections: &[String]) -> Result<u64, ApiError> {
    let midnight = Utc::now().date_naive().and_hms_opt(0, 0, 0).map(|t| t.and_utc().timestamp_micros()).unwrap_or_default();
    crate::reads::attached(state, |r| {
        let mut n = 0u64;
        for (nsid, kind) in [
            (projections::attached::collections::GRAPH_NODE, Kind::GraphNode),
            (projections::attached::collections::GRAPH_EDGE, Kind::GraphEdge),
        ] {
            if !collections.iter().any(|c| c == nsid) {
                continue;
            }
            n += r.all(&Listing::by_author(kind, did), 1_000)?.iter().take_while(|i| i.created_at >= midnight).count() as u64;
        }
        Ok(n)
    })
}

/// `revokeRole {did, reason}` (administrators) → `{success, message}`: the account is a
/// community member again.
async fn revoke_role(c: Call) -> Answer {
    let admin = administrator(&c)?;
    let did = c.input["did"].as_str().unwrap_or_default().to_owned();
    check_did("did", &did)?;
    let held = blocking(&c.state, || GovernanceReader::new(c.state.store.as_ref())?.role(&did))?;
    if held.granted_at.is_none() {
        return Err(ApiError::invalid_request(format!("{did} holds no governance role")));
    }
    let reason = c.input["reason"].as_str().map(str::to_owned);
    let action = AdminAction::GovernanceRoleSet { did: did.clone(), role: None, reason };
    crate::command::append(&c.state, admin_event(&c, "pub.svc.governance.revokeRole", &admin, &did, action)).await?;
    Body::json(&json!({"success": true, "message": format!("{did} no longer holds {}", held.role)}))
}

/// Grants the governance role `administrator` to `dids` (those that do not hold it yet),
/// as svc (`--governance-admins`).
pub async fn bootstrap(state: &AppState, dids: &[String]) -> Result<(), ApiError> {
    for did in dids {
        let held = blocking(state, || GovernanceReader::new(state.store.as_ref())?.role(did))?;
        if held.role == ADMINISTRATOR {
            continue;
        }
        let service = state.auth.service_did.clone();
        let action = AdminAction::GovernanceRoleSet {
            did: did.clone(),
            role: Some(ADMINISTRATOR.to_owned()),
            reason: Some("--governance-admins".into()),
        };
        let event = NewEvent {
            key: did.clone(),
            source: Source::Command { nsid: "svc".into(), caller: service.clone(), host: String::new() },
            payload: Payload::Admin(AdminCommand { actor: service, action }),
        };
        crate::command::append(state, event).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eligible() -> Metrics {
        Metrics {
            account_days: Some(90),
            eprints: 12,
            endorsed_eprints: 10,
            proposals: 5,
            votes: 15,
            approved: 7,
            decided: 10,
            violations: 0,
        }
    }

    fn unmet(m: &Metrics) -> Vec<String> {
        m.unmet().iter().map(|u| u.split(':').next().unwrap_or_default().to_owned()).collect()
    }

    #[test]
    fn each_rule_holds_at_its_threshold_and_not_below() {
        assert!(eligible().unmet().is_empty(), "{:?}", eligible().unmet());
        let cases: Vec<(Metrics, &str)> = vec![
            (Metrics { account_days: Some(89), ..eligible() }, "accountAge"),
            (Metrics { account_days: None, ..eligible() }, "accountAge"),
            (Metrics { endorsed_eprints: 9, ..eligible() }, "eprints"),
            (Metrics { votes: 14, ..eligible() }, "governanceActivity"),
            (Metrics { violations: 1, ..eligible() }, "noViolations"),
            (Metrics { approved: 6, ..eligible() }, "reputation"),
            (Metrics { approved: 0, decided: 0, ..eligible() }, "reputation"),
        ];
        for (m, rule) in cases {
            assert_eq!(unmet(&m), vec![rule.to_owned()]);
        }
    }

    #[test]
    fn roles_rank_from_community_member_to_administrator() {
        assert!(rank(MEMBER) < rank("trusted-editor") && rank("trusted-editor") < rank(ADMINISTRATOR));
        assert_eq!(rank("unknown"), 0);
    }
}
