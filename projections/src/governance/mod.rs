//! Governance: the consensus rule of proposals ([`rule`], a pure function of the indexed
//! votes) and the governance read model: who holds which governance role, the requests to
//! be elevated to one, and the delegations granted (docs/spec details §7). Governance roles
//! are separate from svc's own roles (`pub.svc.admin.assignRole`, the access model).
//!
//! Tables of model `governance` (partition key → clustering key: columns):
//! - `roles`: a DID → ∅: role, grantedAt, grantedBy (absent: a community member).
//! - `roles_by_role`: a role, and `all` → the grant's log position (big-endian): did,
//!   role, grantedAt, grantedBy; the row of a role revoked or replaced is removed.
//! - `elevations`: `all`, a status (pending, approved, rejected), and the requester's DID
//!   → the request's log position: id, did, targetRole, status, unmet (JSON array), createdAt, decidedAt,
//!   decidedBy, note.
//! - `elevation_ids`: a request id → ∅: its position.
//! - `delegations`: `all`, and the delegate's DID → the grant's log position: id,
//!   delegate, collections (JSON array), expiresAt, maxRecordsPerDay, grantedBy,
//!   grantedAt, revokedAt.
//! - `delegation_ids`: a delegation id → ∅: its position.
//! - `communities`: an algorithm → ∅: communities (JSON: arrays of node URIs), nodes,
//!   edges, generatedAt: the newest result of the communities job.

mod apply;
pub mod communities;
pub mod read;
mod rule;

pub use apply::GovernanceModel;
pub use rule::*;

use store::TableRef;

/// The model name.
pub const MODEL: &str = "governance";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &["roles", "roles_by_role", "elevations", "elevation_ids", "delegations", "delegation_ids", "communities"];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &[];

/// The governance roles, lowest first (a community member holds none).
pub const ROLES: &[&str] = &["community-member", "trusted-editor", "graph-editor", "domain-expert", "administrator"];

/// The role of an account that holds none.
pub const MEMBER: &str = "community-member";

/// The role that decides elevations, delegations and revocations.
pub const ADMINISTRATOR: &str = "administrator";

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

/// The partition of every row of a listing.
pub(crate) const ALL: &str = "all";
