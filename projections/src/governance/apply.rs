//! Applying events to the governance read model.

use std::sync::Arc;

use chrono::SecondsFormat;
use event_schema::{AdminAction, AdminCommand, Envelope, Payload, UserAction, UserCommand};
use store::{Columns, Store, Value};

use super::{table, ALL, MODEL};
use crate::catalog::Mode;
use crate::rows::text;
use crate::staged::{ModelBase, Staged, StagedModel, StagedProjection};
use crate::ProjectionError;

/// Builds the governance read model (see the [module docs](super)).
pub struct GovernanceModel {
    base: ModelBase,
}

fn t(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn opt(s: Option<&str>) -> Value {
    s.map_or(Value::Null, t)
}

impl GovernanceModel {
    /// The projection that builds `version` of the model in `store`.
    pub fn projection(store: Arc<dyn Store>, version: u32, mode: Mode) -> Box<dyn crate::Projection> {
        Box::new(StagedProjection(GovernanceModel { base: ModelBase::new(MODEL, store, version, mode) }))
    }

    fn store(&self) -> &dyn Store {
        self.base.store.as_ref()
    }

    /// Sets (or with `None` removes) the role of `did`.
    fn set_role(&self, st: &mut Staged, event: &Envelope, did: &str, role: Option<&str>, by: &str) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let roles = table(self.base.version, "roles");
        let by_role = table(self.base.version, "roles_by_role");
        if let Some(held) = st.get(self.store(), &roles, did, &[])? {
            let key = held.get("position").and_then(Value::as_int).unwrap_or_default() as u64;
            for partition in [text(&held, "role").unwrap_or_default(), ALL.to_owned()] {
                st.delete(&by_role, &partition, key.to_be_bytes().to_vec(), position);
            }
            st.delete(&roles, did, Vec::new(), position);
        }
        let Some(role) = role else { return Ok(()) };
        let mut c = Columns::new();
        c.insert("did".into(), t(did));
        c.insert("role".into(), t(role));
        c.insert("grantedAt".into(), t(&event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true)));
        c.insert("grantedBy".into(), t(by));
        c.insert("position".into(), Value::Int(position as i64));
        st.put(&roles, did, Vec::new(), c.clone(), position);
        for partition in [role, ALL] {
            st.put(&by_role, partition, position.to_be_bytes().to_vec(), c.clone(), position);
        }
        Ok(())
    }

    /// Files a row of `name` (with an id table `ids`) under `all` and `also`, at `position`.
    fn file(&self, st: &mut Staged, (name, ids): (&'static str, &'static str), id: &str, also: &str, c: Columns, position: u64) {
        let key = position.to_be_bytes().to_vec();
        st.put(&table(self.base.version, name), ALL, key.clone(), c.clone(), position);
        st.put(&table(self.base.version, name), also, key, c, position);
        let pointer: Columns = [("position".to_owned(), Value::Int(position as i64)), ("also".to_owned(), t(also))].into_iter().collect();
        st.put(&table(self.base.version, ids), id, Vec::new(), pointer, position);
    }

    /// The row of `id` in `name` and where it is filed: (row, position, the other partition).
    fn find(
        &self,
        st: &mut Staged,
        (name, ids): (&'static str, &'static str),
        id: &str,
    ) -> Result<Option<(Columns, u64, String)>, ProjectionError> {
        let Some(pointer) = st.get(self.store(), &table(self.base.version, ids), id, &[])? else { return Ok(None) };
        let at = pointer.get("position").and_then(Value::as_int).unwrap_or_default() as u64;
        let also = text(&pointer, "also").unwrap_or_default();
        Ok(st.get(self.store(), &table(self.base.version, name), ALL, &at.to_be_bytes())?.map(|row| (row, at, also)))
    }

    fn user(&self, st: &mut Staged, event: &Envelope, cmd: &UserCommand) -> Result<(), ProjectionError> {
        let UserAction::ElevationRequested { id, target_role, granted, unmet } = &cmd.action else { return Ok(()) };
        let position = event.position.ordinal();
        let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        let status = if *granted { "approved" } else { "pending" };
        let mut c = Columns::new();
        c.insert("id".into(), t(id));
        c.insert("did".into(), t(&cmd.caller));
        c.insert("targetRole".into(), t(target_role));
        c.insert("status".into(), t(status));
        c.insert("unmet".into(), t(&serde_json::to_string(unmet).unwrap_or_default()));
        c.insert("createdAt".into(), t(&at));
        if *granted {
            c.insert("decidedAt".into(), t(&at));
            c.insert("decidedBy".into(), t("svc"));
            self.set_role(st, event, &cmd.caller, Some(target_role), "svc")?;
        }
        st.put(&table(self.base.version, "elevations"), &cmd.caller, position.to_be_bytes().to_vec(), c.clone(), position);
        self.file(st, ("elevations", "elevation_ids"), id, status, c, position);
        Ok(())
    }

    fn admin(&self, st: &mut Staged, event: &Envelope, cmd: &AdminCommand) -> Result<(), ProjectionError> {
        let position = event.position.ordinal();
        let at = event.appended_at.to_rfc3339_opts(SecondsFormat::Millis, true);
        match &cmd.action {
            AdminAction::GovernanceRoleSet { did, role, .. } => self.set_role(st, event, did, role.as_deref(), &cmd.actor)?,
            AdminAction::ElevationDecided { id, approved, note, .. } => {
                let Some((mut row, key, status)) = self.find(st, ("elevations", "elevation_ids"), id)? else { return Ok(()) };
                if status != "pending" {
                    return Ok(());
                }
                let decided = if *approved { "approved" } else { "rejected" };
                row.insert("status".into(), t(decided));
                row.insert("decidedAt".into(), t(&at));
                row.insert("decidedBy".into(), t(&cmd.actor));
                row.insert("note".into(), opt(note.as_deref()));
                if *approved {
                    let (did, role) = (text(&row, "did").unwrap_or_default(), text(&row, "targetRole").unwrap_or_default());
                    self.set_role(st, event, &did, Some(&role), &cmd.actor)?;
                }
                let elevations = table(self.base.version, "elevations");
                st.delete(&elevations, &status, key.to_be_bytes().to_vec(), position);
                st.put(&elevations, ALL, key.to_be_bytes().to_vec(), row.clone(), position);
                st.put(&elevations, &text(&row, "did").unwrap_or_default(), key.to_be_bytes().to_vec(), row.clone(), position);
                st.put(&elevations, decided, key.to_be_bytes().to_vec(), row, position);
                let pointer: Columns =
                    [("position".to_owned(), Value::Int(key as i64)), ("also".to_owned(), t(decided))].into_iter().collect();
                st.put(&table(self.base.version, "elevation_ids"), id, Vec::new(), pointer, position);
            }
            AdminAction::DelegationGranted { id, delegate, collections, expires_at, max_records_per_day } => {
                let mut c = Columns::new();
                c.insert("id".into(), t(id));
                c.insert("delegate".into(), t(delegate));
                c.insert("collections".into(), t(&serde_json::to_string(collections).unwrap_or_default()));
                c.insert("expiresAt".into(), t(expires_at));
                c.insert("maxRecordsPerDay".into(), Value::Int(i64::from(*max_records_per_day)));
                c.insert("grantedBy".into(), t(&cmd.actor));
                c.insert("grantedAt".into(), t(&at));
                self.file(st, ("delegations", "delegation_ids"), id, delegate, c, position);
            }
            AdminAction::DelegationRevoked { id, .. } => {
                let Some((mut row, key, delegate)) = self.find(st, ("delegations", "delegation_ids"), id)? else { return Ok(()) };
                if row.get("revokedAt").is_some_and(|v| !matches!(v, Value::Null)) {
                    return Ok(());
                }
                row.insert("revokedAt".into(), t(&at));
                let delegations = table(self.base.version, "delegations");
                st.put(&delegations, ALL, key.to_be_bytes().to_vec(), row.clone(), position);
                st.put(&delegations, &delegate, key.to_be_bytes().to_vec(), row, position);
            }
            AdminAction::CommunitiesComputed { algorithm, nodes, edges, communities } => {
                let mut c = Columns::new();
                c.insert("communities".into(), t(&serde_json::to_string(communities).unwrap_or_default()));
                c.insert("nodes".into(), Value::Int(*nodes as i64));
                c.insert("edges".into(), Value::Int(*edges as i64));
                c.insert("generatedAt".into(), t(&at));
                st.put(&table(self.base.version, "communities"), algorithm, Vec::new(), c, position);
            }
            _ => {}
        }
        Ok(())
    }
}

impl StagedModel for GovernanceModel {
    fn base(&self) -> &ModelBase {
        &self.base
    }

    fn stage(&mut self, st: &mut Staged, event: &Envelope) -> Result<(), ProjectionError> {
        match &event.payload {
            Payload::User(cmd) => self.user(st, event, cmd),
            Payload::Admin(cmd) => self.admin(st, event, cmd),
            _ => Ok(()),
        }
    }
}
