//! Applying `command.access` events to the access read model.

use std::sync::Arc;

use chrono::SecondsFormat;
use event_schema::{AccessAction, AccessChange, AdminAction, AdminCommand, Envelope, OnceProof, Payload};
use serde_json::{json, Map, Value as Json};
use store::{consumer_name, Columns, Store, Value};

use super::{table, AUDIT_PARTITION, MODEL};
use crate::catalog::Mode;
use crate::rows::text;
use crate::staged::Staged;
use crate::{Checkpoints, EventBatch, Projection, ProjectionError};

/// Builds the access read model (see the [module docs](super)).
pub struct AccessProjection {
    store: Arc<dyn Store>,
    version: u32,
    rebuild: bool,
}

impl AccessProjection {
    /// A projection that builds `version` of the model in `store`.
    pub fn new(store: Arc<dyn Store>, version: u32, mode: Mode) -> AccessProjection {
        AccessProjection { store, version, rebuild: mode == Mode::Rebuild }
    }

    fn get(&self, st: &mut Staged, name: &'static str, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, ProjectionError> {
        Ok(st.get(self.store.as_ref(), &table(self.version, name), partition, clustering)?)
    }

    fn json(&self, st: &mut Staged, name: &'static str, partition: &str, column: &str) -> Result<Map<String, Json>, ProjectionError> {
        let row = self.get(st, name, partition, &[])?;
        Ok(row.and_then(|r| text(&r, column)).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default())
    }

    fn apply(&self, st: &mut Staged, event: &Envelope, a: &AccessChange) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        match &a.change {
            AccessAction::RoleGranted { role } | AccessAction::RoleRevoked { role } => {
                let grant = matches!(a.change, AccessAction::RoleGranted { .. });
                let mut roles = self.json(st, "roles", &a.subject, "roles")?;
                if grant == roles.contains_key(role) {
                    return Ok(()); // held already, or not held: nothing changes
                }
                if grant {
                    roles.insert(role.clone(), json!({"assignedAt": at, "assignedBy": a.actor}));
                } else {
                    roles.remove(role);
                }
                let mut c = Columns::new();
                c.insert("roles".into(), Value::Text(Json::Object(roles).to_string()));
                st.put(&table(self.version, "roles"), &a.subject, Vec::new(), c, position);
                audit_row(st, self.version, event, a, &at, if grant { "assign_role" } else { "revoke_role" }, json!({"role": role}));
            }
            AccessAction::SessionStarted { session, refresh_hash, method, handle, expires_at, proof } => {
                let refused = if let Some(existing) = self.get(st, "sessions", session, &[])? {
                    // The code that named this session was exchanged before: end that session too.
                    self.end(st, session, existing, "codeReused", position);
                    Some("the authorization code was already used")
                } else {
                    match proof {
                        Some(p) => self.spend(st, &a.subject, p, position)?.err(),
                        None => None,
                    }
                };
                if let Some(why) = refused {
                    // No session row: a refused second factor leaves the login retryable
                    // (with another code), a reused code leaves the first session's row.
                    audit_row(
                        st,
                        self.version,
                        event,
                        a,
                        &at,
                        "login_refused",
                        json!({"session": session, "method": method, "reason": why}),
                    );
                    return Ok(());
                }
                let mut c = Columns::new();
                c.insert("did".into(), Value::Text(a.subject.clone()));
                c.insert("method".into(), Value::Text(method.clone()));
                c.insert("handle".into(), handle.clone().map_or(Value::Null, Value::Text));
                c.insert("current".into(), Value::Text(refresh_hash.clone()));
                c.insert("startedAt".into(), Value::Text(at.clone()));
                c.insert("expiresAt".into(), Value::Int(*expires_at));
                audit_row(st, self.version, event, a, &at, "login", json!({"session": session, "method": method}));
                st.put(&table(self.version, "sessions"), session, Vec::new(), c, position);
            }
            AccessAction::SessionRefreshed { session, previous_hash, refresh_hash, expires_at } => {
                let Some(mut row) = self.get(st, "sessions", session, &[])? else { return Ok(()) };
                let live = !row.contains_key("ended") || row.get("ended") == Some(&Value::Null);
                if live && text(&row, "current").as_deref() == Some(previous_hash.as_str()) {
                    st.put(&table(self.version, "spent"), session, previous_hash.as_bytes().to_vec(), Columns::new(), position);
                    row.insert("current".into(), Value::Text(refresh_hash.clone()));
                    row.insert("expiresAt".into(), Value::Int(*expires_at));
                    st.put(&table(self.version, "sessions"), session, Vec::new(), row, position);
                } else if live {
                    // The token presented was rotated away already (reused, or a concurrent
                    // refresh got there first): the whole session ends.
                    self.end(st, session, row, "refreshTokenReused", position);
                    audit_row(
                        st,
                        self.version,
                        event,
                        a,
                        &at,
                        "session_ended",
                        json!({"session": session, "reason": "refreshTokenReused"}),
                    );
                }
            }
            AccessAction::SessionEnded { session, reason } => {
                if let Some(row) = self.get(st, "sessions", session, &[])? {
                    self.end(st, session, row, reason, position);
                    audit_row(st, self.version, event, a, &at, "session_ended", json!({"session": session, "reason": reason}));
                }
            }
            AccessAction::TotpEnrolled { sealed_secret } => {
                let mut f = self.get(st, "factors", &a.subject, &[])?.unwrap_or_default();
                f.insert("totpSealed".into(), Value::Text(sealed_secret.clone()));
                f.insert("totpConfirmed".into(), Value::Bool(false));
                f.insert("totpLastStep".into(), Value::Int(0));
                st.put(&table(self.version, "factors"), &a.subject, Vec::new(), f, position);
                audit_row(st, self.version, event, a, &at, "mfa_totp_enrolled", json!({}));
            }
            AccessAction::TotpConfirmed { step } => {
                let mut f = self.get(st, "factors", &a.subject, &[])?.unwrap_or_default();
                if f.contains_key("totpSealed") {
                    f.insert("totpConfirmed".into(), Value::Bool(true));
                    f.insert("totpLastStep".into(), Value::Int(*step));
                    st.put(&table(self.version, "factors"), &a.subject, Vec::new(), f, position);
                    audit_row(st, self.version, event, a, &at, "mfa_totp_confirmed", json!({}));
                }
            }
            AccessAction::RecoveryCodesIssued { hashes } => {
                let mut f = self.get(st, "factors", &a.subject, &[])?.unwrap_or_default();
                let codes: Map<String, Json> = hashes.iter().map(|h| (h.clone(), Json::Bool(false))).collect();
                f.insert("recovery".into(), Value::Text(Json::Object(codes).to_string()));
                st.put(&table(self.version, "factors"), &a.subject, Vec::new(), f, position);
                audit_row(st, self.version, event, a, &at, "mfa_recovery_codes_issued", json!({"count": hashes.len()}));
            }
            AccessAction::PasskeyRegistered { credential_id, credential } => {
                let mut c = Columns::new();
                c.insert("credential".into(), Value::Text(credential.to_string()));
                c.insert("counter".into(), Value::Int(0));
                st.put(&table(self.version, "passkeys"), &a.subject, credential_id.as_bytes().to_vec(), c, position);
                audit_row(st, self.version, event, a, &at, "mfa_passkey_registered", json!({"credentialId": credential_id}));
            }
            AccessAction::MfaRemoved => {
                st.delete(&table(self.version, "factors"), &a.subject, Vec::new(), position);
                for row in crate::rows::scan_partition(self.store.as_ref(), &table(self.version, "passkeys"), &a.subject, 100)? {
                    st.delete(&table(self.version, "passkeys"), &a.subject, row.clustering, position);
                }
                audit_row(st, self.version, event, a, &at, "mfa_removed", json!({}));
            }
            AccessAction::AlphaApplied { id, application } => {
                let mut app = application.clone();
                if let Json::Object(fields) = &mut app {
                    fields.insert("id".into(), json!(id));
                    fields.insert("did".into(), json!(a.subject));
                    fields.insert("status".into(), json!("pending"));
                    fields.insert("createdAt".into(), json!(at));
                    fields.insert("updatedAt".into(), json!(at));
                }
                let mut c = Columns::new();
                c.insert("application".into(), Value::Text(app.to_string()));
                st.put(&table(self.version, "alpha"), AUDIT_PARTITION, a.subject.as_bytes().to_vec(), c, position);
                audit_row(st, self.version, event, a, &at, "alpha_apply", json!({"id": id}));
            }
            AccessAction::AlphaReviewed { status } => {
                let key = a.subject.as_bytes();
                let Some(mut c) = self.get(st, "alpha", AUDIT_PARTITION, key)? else { return Ok(()) };
                let mut app: Json = text(&c, "application").and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
                app["status"] = json!(status);
                app["reviewedAt"] = json!(at);
                app["reviewedBy"] = json!(a.actor);
                app["updatedAt"] = json!(at);
                c.insert("application".into(), Value::Text(app.to_string()));
                st.put(&table(self.version, "alpha"), AUDIT_PARTITION, key.to_vec(), c, position);
                audit_row(st, self.version, event, a, &at, "alpha_review", json!({"status": status}));
            }
            AccessAction::OrcidVerificationStarted { state_hash, expires_at } => {
                let mut c = Columns::new();
                c.insert("did".into(), Value::Text(a.subject.clone()));
                c.insert("expiresAt".into(), Value::Int(*expires_at));
                st.put(&table(self.version, "orcid_states"), state_hash, Vec::new(), c, position);
            }
            AccessAction::OrcidVerified { state_hash, orcid, name } => {
                let state = self.get(st, "orcid_states", state_hash, &[])?;
                let refused = match &state {
                    None => Some("unknown state"),
                    Some(s) if text(s, "did").as_deref() != Some(a.subject.as_str()) => Some("another account's state"),
                    Some(s) if s.get("spentBy").is_some_and(|v| *v != Value::Null) => Some("state used before"),
                    Some(s) if s.get("expiresAt").and_then(Value::as_int).unwrap_or(0) < event.appended_at.timestamp() => {
                        Some("state expired")
                    }
                    Some(_) => None,
                };
                if let Some(why) = refused {
                    audit_row(st, self.version, event, a, &at, "orcid_refused", json!({"orcid": orcid, "reason": why}));
                    return Ok(());
                }
                let mut spent = state.unwrap_or_default();
                spent.insert("spentBy".into(), Value::Int(position as i64));
                st.put(&table(self.version, "orcid_states"), state_hash, Vec::new(), spent, position);
                let mut c = Columns::new();
                c.insert("orcid".into(), Value::Text(orcid.clone()));
                c.insert("name".into(), name.clone().map_or(Value::Null, Value::Text));
                c.insert("verifiedAt".into(), Value::Text(at.clone()));
                st.put(&table(self.version, "orcid"), &a.subject, Vec::new(), c, position);
                let mut owner = Columns::new();
                owner.insert("did".into(), Value::Text(a.subject.clone()));
                st.put(&table(self.version, "orcid_owners"), orcid, Vec::new(), owner, position);
                audit_row(st, self.version, event, a, &at, "orcid_verified", json!({"orcid": orcid}));
            }
            AccessAction::Refused { reason } => audit_row(st, self.version, event, a, &at, "token_refused", json!({"reason": reason})),
        }
        Ok(())
    }

    /// Marks a session ended (the first reason stays).
    fn end(&self, st: &mut Staged, session: &str, mut row: Columns, reason: &str, position: u64) {
        if matches!(row.get("ended"), None | Some(Value::Null)) {
            row.insert("ended".into(), Value::Text(reason.to_owned()));
            st.put(&table(self.version, "sessions"), session, Vec::new(), row, position);
        }
    }

    /// Spends a once-only second factor, or says why it cannot be.
    fn spend(&self, st: &mut Staged, did: &str, proof: &OnceProof, position: u64) -> Result<Result<(), &'static str>, ProjectionError> {
        match proof {
            OnceProof::Totp { step } => {
                let Some(mut f) = self.get(st, "factors", did, &[])? else { return Ok(Err("no TOTP secret is enrolled")) };
                let last = f.get("totpLastStep").and_then(Value::as_int).unwrap_or(0);
                if *step <= last {
                    return Ok(Err("the TOTP code (or a later one) was already used"));
                }
                f.insert("totpLastStep".into(), Value::Int(*step));
                st.put(&table(self.version, "factors"), did, Vec::new(), f, position);
            }
            OnceProof::Recovery { hash } => {
                let Some(mut f) = self.get(st, "factors", did, &[])? else { return Ok(Err("no recovery codes are issued")) };
                let mut codes: Map<String, Json> = text(&f, "recovery").and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
                match codes.get(hash) {
                    Some(Json::Bool(false)) => {
                        codes.insert(hash.clone(), Json::Bool(true));
                    }
                    Some(_) => return Ok(Err("the recovery code was already used")),
                    None => return Ok(Err("not a recovery code of this account")),
                }
                f.insert("recovery".into(), Value::Text(Json::Object(codes).to_string()));
                st.put(&table(self.version, "factors"), did, Vec::new(), f, position);
            }
            OnceProof::Passkey { credential_id, counter } => {
                let key = credential_id.as_bytes();
                let Some(mut p) = self.get(st, "passkeys", did, key)? else { return Ok(Err("no such passkey")) };
                let held = p.get("counter").and_then(Value::as_int).unwrap_or(0);
                if (*counter != 0 || held != 0) && i64::from(*counter) <= held {
                    return Ok(Err("the passkey's signature counter did not grow (a cloned authenticator or a replay)"));
                }
                p.insert("counter".into(), Value::Int(i64::from(*counter)));
                st.put(&table(self.version, "passkeys"), did, key.to_vec(), p, position);
            }
        }
        Ok(Ok(()))
    }
}

/// Stages the audit row of an access change.
fn audit_row(st: &mut Staged, version: u32, event: &Envelope, a: &AccessChange, at: &str, action: &str, details: Json) {
    audit(st, version, event, (&a.actor, &a.subject), at, action, details);
}

/// Stages the audit row of an admin command (all but an operation's progress reports).
fn admin_audit_row(st: &mut Staged, version: u32, event: &Envelope, cmd: &AdminCommand) {
    let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
    let (action, subject, details) = match &cmd.action {
        AdminAction::ContentDeleted { uri, collection, reason } => {
            ("delete", event.key.as_str(), json!({"uri": uri, "collection": collection, "reason": reason}))
        }
        AdminAction::DeadLetterReleased { model, partition, offset, retried } => (
            if *retried { "dlq_retry" } else { "dlq_dismiss" },
            event.key.as_str(),
            json!({"model": model, "partition": partition, "offset": offset}),
        ),
        AdminAction::OperationStarted { id, operation, metadata, .. } => {
            ("backfill_start", "", json!({"id": id, "type": operation, "metadata": metadata}))
        }
        AdminAction::OperationCancelRequested { id } => ("backfill_cancel", "", json!({"id": id})),
        AdminAction::OperationEnded { id, status, processed, error } => {
            ("backfill_end", "", json!({"id": id, "status": status, "recordsProcessed": processed, "error": error}))
        }
        AdminAction::HostRegistered { url } => ("rescan", "", json!({"pdsUrl": url})),
        AdminAction::GovernanceRoleSet { did, role, reason } => (
            if role.is_some() { "governance_role_grant" } else { "governance_role_revoke" },
            did.as_str(),
            json!({"role": role, "reason": reason}),
        ),
        AdminAction::ElevationDecided { id, did, approved, note } => {
            (if *approved { "elevation_approve" } else { "elevation_reject" }, did.as_str(), json!({"id": id, "note": note}))
        }
        AdminAction::DelegationGranted { id, delegate, collections, expires_at, max_records_per_day } => (
            "delegation_grant",
            delegate.as_str(),
            json!({"id": id, "collections": collections, "expiresAt": expires_at, "maxRecordsPerDay": max_records_per_day}),
        ),
        AdminAction::ClaimDecided { claim_id, approved, reason } => {
            (if *approved { "claim_approve" } else { "claim_reject" }, event.key.as_str(), json!({"claimId": claim_id, "reason": reason}))
        }
        AdminAction::DelegationRevoked { id, delegate } => ("delegation_revoke", delegate.as_str(), json!({"id": id})),
        AdminAction::GovernancePublished { proposal, uri, cid, error } => {
            ("governance_publish", proposal.as_str(), json!({"uri": uri, "cid": cid, "error": error}))
        }
        AdminAction::OperationProgressed { .. } | AdminAction::CommunitiesComputed { .. } => return,
    };
    audit(st, version, event, (&cmd.actor, subject), &at, action, details);
}

/// Stages one audit row: `who` = (actor, subject).
fn audit(st: &mut Staged, version: u32, event: &Envelope, who: (&str, &str), at: &str, action: &str, details: Json) {
    let position = event.position.ordinal();
    let mut c = Columns::new();
    c.insert("at".into(), Value::Text(at.to_owned()));
    c.insert("action".into(), Value::Text(action.to_owned()));
    c.insert("actor".into(), Value::Text(who.0.to_owned()));
    c.insert("subject".into(), Value::Text(who.1.to_owned()));
    c.insert("details".into(), Value::Text(details.to_string()));
    c.insert("position".into(), Value::Int(position as i64));
    st.put(&table(version, "audit"), AUDIT_PARTITION, position.to_be_bytes().to_vec(), c, position);
}

impl AccessProjection {
    /// Files the audit entries of the batch by actor too, and counts them (in all and per
    /// actor), so that a page of the trail, filtered or not, and its total are bounded reads.
    fn index_audit(&self, st: &mut Staged) -> Result<(), ProjectionError> {
        let entries = st.staged_in(&table(self.version, "audit"), AUDIT_PARTITION);
        let mut added: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
        for c in &entries {
            let (Some(actor), Some(position)) = (text(c, "actor"), c.get("position").and_then(Value::as_int)) else { continue };
            st.put(&table(self.version, "audit_by_actor"), &actor, (position as u64).to_be_bytes().to_vec(), c.clone(), position as u64);
            *added.entry(actor).or_default() += 1;
            *added.entry(AUDIT_PARTITION.to_owned()).or_default() += 1;
        }
        let counts = table(self.version, "audit_counts");
        let position = entries.iter().filter_map(|c| c.get("position").and_then(Value::as_int)).max().unwrap_or_default() as u64;
        for (key, n) in added {
            let held = st.get(self.store.as_ref(), &counts, &key, &[])?.and_then(|c| c.get("n").and_then(Value::as_int)).unwrap_or(0);
            st.put(&counts, &key, Vec::new(), [("n".to_owned(), Value::Int(held + n))].into_iter().collect(), position);
        }
        Ok(())
    }
}

impl Projection for AccessProjection {
    fn model(&self) -> &'static str {
        MODEL
    }

    fn version(&self) -> u32 {
        self.version
    }

    fn checkpoints(&self) -> Result<Checkpoints, ProjectionError> {
        Ok(self.store.checkpoints(&consumer_name(MODEL, self.version))?)
    }

    fn apply_batch(&mut self, batch: &EventBatch) -> Result<(), ProjectionError> {
        let mut st = Staged::default();
        for event in batch.events() {
            match &event.payload {
                Payload::Access(a) => self.apply(&mut st, event, a)?,
                Payload::Admin(cmd) => admin_audit_row(&mut st, self.version, event, cmd),
                _ => {}
            }
        }
        self.index_audit(&mut st)?;
        st.commit(self.store.as_ref(), &consumer_name(MODEL, self.version), batch.next())?;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ProjectionError> {
        crate::staged::settle(self.store.as_ref(), MODEL, self.version, self.rebuild)?;
        Ok(())
    }
}
