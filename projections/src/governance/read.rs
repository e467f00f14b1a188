//! Reading the governance read model (its active version).

use serde_json::{json, Value as Json};
use store::{Columns, Scan, Store, Value};

use super::{table, ALL, MEMBER, MODEL};
use crate::rows::text;
use crate::ProjectionError;

/// The role an account holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleGrant {
    /// The account.
    pub did: String,
    /// The role ([`super::ROLES`]).
    pub role: String,
    /// When it was granted (RFC 3339); `None` for a community member.
    pub granted_at: Option<String>,
    /// Who granted it (an administrator's DID, or `svc`).
    pub granted_by: Option<String>,
}

/// The most rows a listing of the model reads.
const MAX_ROWS: usize = 100_000;

/// A page of rows, newest first, and where the next starts (an offset).
#[derive(Debug, Clone, PartialEq)]
pub struct RowPage {
    /// The rows as the API shows them.
    pub items: Vec<Json>,
    /// The offset of the next page, if there is one.
    pub next: Option<usize>,
    /// Rows in all.
    pub total: u64,
}

/// The newest communities of one algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct Communities {
    /// Each community's node URIs, largest first.
    pub communities: Vec<Vec<String>>,
    /// The nodes of the graph read.
    pub nodes: u64,
    /// The edges of the graph read.
    pub edges: u64,
    /// When the job's event entered the log (RFC 3339).
    pub generated_at: String,
}

/// Reads the active version of the governance model.
pub struct GovernanceReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

fn int(c: &Columns, k: &str) -> i64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0)
}

fn list(c: &Columns, k: &str) -> Json {
    text(c, k).and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_else(|| json!([]))
}

fn grant_of(c: &Columns) -> RoleGrant {
    RoleGrant {
        did: text(c, "did").unwrap_or_default(),
        role: text(c, "role").unwrap_or_else(|| MEMBER.to_owned()),
        granted_at: text(c, "grantedAt"),
        granted_by: text(c, "grantedBy"),
    }
}

fn elevation_view(c: &Columns) -> Json {
    let mut out = json!({
        "id": text(c, "id"), "did": text(c, "did"), "targetRole": text(c, "targetRole"), "status": text(c, "status"),
        "unmet": list(c, "unmet"), "createdAt": text(c, "createdAt"),
    });
    for field in ["decidedAt", "decidedBy", "note"] {
        if let Some(v) = text(c, field) {
            out[field] = json!(v);
        }
    }
    out
}

/// A delegation's view; `active` as of `now` (RFC 3339).
fn delegation_view(c: &Columns, now: &str) -> Json {
    let expires = text(c, "expiresAt").unwrap_or_default();
    let revoked = text(c, "revokedAt");
    let mut out = json!({
        "id": text(c, "id"), "delegateDid": text(c, "delegate"), "collections": list(c, "collections"), "expiresAt": expires,
        "maxRecordsPerDay": int(c, "maxRecordsPerDay"), "grantedBy": text(c, "grantedBy"), "grantedAt": text(c, "grantedAt"),
        "active": revoked.is_none() && expires.as_str() > now,
    });
    if let Some(r) = revoked {
        out["revokedAt"] = json!(r);
    }
    out
}

impl<'a> GovernanceReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<GovernanceReader<'a>, ProjectionError> {
        Ok(GovernanceReader { store, version: store.active_version(MODEL)? })
    }

    /// The role `did` holds: a community member's when it holds none.
    pub fn role(&self, did: &str) -> Result<RoleGrant, ProjectionError> {
        let held = match self.version {
            Some(v) => self.store.get(&table(v, "roles"), did, &[])?,
            None => None,
        };
        Ok(held.map(|c| grant_of(&c)).unwrap_or(RoleGrant {
            did: did.to_owned(),
            role: MEMBER.to_owned(),
            granted_at: None,
            granted_by: None,
        }))
    }

    /// A page of `partition` of `name`, newest first, from `offset`, rows shown by `view`.
    fn page(
        &self,
        name: &'static str,
        partition: &str,
        limit: usize,
        offset: usize,
        view: impl Fn(&Columns) -> Json,
    ) -> Result<RowPage, ProjectionError> {
        let Some(v) = self.version else { return Ok(RowPage { items: Vec::new(), next: None, total: 0 }) };
        // One read serves the page and the total.
        let rows = self.store.scan(&table(v, name), partition, &Scan { after: None, limit: MAX_ROWS, reverse: true })?.rows;
        let total = rows.len() as u64;
        let more = rows.len() > offset + limit;
        let items = rows.iter().skip(offset).take(limit).map(|r| view(&r.columns)).collect();
        Ok(RowPage { items, next: more.then_some(offset + limit), total })
    }

    /// The accounts holding `role` (any role but a community member's when `None`), newest
    /// grant first: `{did, role, roleGrantedAt, roleGrantedBy}`.
    pub fn holders(&self, role: Option<&str>, limit: usize, offset: usize) -> Result<RowPage, ProjectionError> {
        self.page("roles_by_role", role.unwrap_or(ALL), limit, offset, |c| {
            let g = grant_of(c);
            json!({"did": g.did, "role": g.role, "roleGrantedAt": g.granted_at, "roleGrantedBy": g.granted_by})
        })
    }

    /// The elevation requests of one status (all when `None`), newest first.
    pub fn elevations(&self, status: Option<&str>, limit: usize, offset: usize) -> Result<RowPage, ProjectionError> {
        self.page("elevations", status.unwrap_or(ALL), limit, offset, elevation_view)
    }

    /// The elevation request `id`.
    pub fn elevation(&self, id: &str) -> Result<Option<Json>, ProjectionError> {
        Ok(self.row("elevations", "elevation_ids", id)?.map(|c| elevation_view(&c)))
    }

    /// The requests of `did`, newest first (up to 100).
    pub fn elevations_of(&self, did: &str) -> Result<Vec<Json>, ProjectionError> {
        Ok(self.page("elevations", did, 100, 0, elevation_view)?.items)
    }

    /// Every delegation (of `delegate` when given), newest first; `active` as of `now`.
    pub fn delegations(&self, delegate: Option<&str>, limit: usize, offset: usize, now: &str) -> Result<RowPage, ProjectionError> {
        self.page("delegations", delegate.unwrap_or(ALL), limit, offset, |c| delegation_view(c, now))
    }

    /// The delegation `id`; `active` as of `now`.
    pub fn delegation(&self, id: &str, now: &str) -> Result<Option<Json>, ProjectionError> {
        Ok(self.row("delegations", "delegation_ids", id)?.map(|c| delegation_view(&c, now)))
    }

    /// The newest communities by `algorithm`, if the job computed them.
    pub fn communities(&self, algorithm: &str) -> Result<Option<Communities>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        Ok(self.store.get(&table(v, "communities"), algorithm, &[])?.map(|c| Communities {
            communities: text(&c, "communities").and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default(),
            nodes: int(&c, "nodes") as u64,
            edges: int(&c, "edges") as u64,
            generated_at: text(&c, "generatedAt").unwrap_or_default(),
        }))
    }

    fn row(&self, name: &'static str, ids: &'static str, id: &str) -> Result<Option<Columns>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        let Some(pointer) = self.store.get(&table(v, ids), id, &[])? else { return Ok(None) };
        let at = int(&pointer, "position") as u64;
        Ok(self.store.get(&table(v, name), ALL, &at.to_be_bytes())?)
    }
}
