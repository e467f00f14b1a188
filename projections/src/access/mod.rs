//! The access read model: who holds which role, the sessions svc issued, the second factors
//! each account enrolled, and the audit trail of these changes, all from `command.access`
//! events ([`event_schema::AccessChange`]). The model applies the once-only rules (a
//! refresh token, an authorization code, a TOTP time step, a recovery code, a passkey
//! counter) in log order, so whichever of two racing nodes appended first wins and the
//! other's session starts ended.
//!
//! Tables of model `access` (partition key → clustering key: columns):
//! - `roles`: DID → empty: roles (JSON object role → `{assignedAt, assignedBy}`).
//! - `sessions`: session id → empty: did, method, handle, current (SHA-256 of the live
//!   refresh token), startedAt, expiresAt, ended (reason, absent while live).
//! - `spent`: session id → SHA-256 of a refresh token used up: empty, to tell a reused
//!   token (the session ends) from one never issued (refused, nothing else happens).
//! - `factors`: DID → empty: totpSealed, totpConfirmed, totpLastStep, recovery (JSON object
//!   hash → used).
//! - `passkeys`: DID → credential id: credential (JSON), counter.
//! - `audit`: `all` → log position (big-endian): at, action, actor, subject, details (JSON),
//!   position.
//! - `audit_by_actor`: actor DID → log position: the same row.
//! - `audit_counts`: `all` or an actor DID → ∅: n, how many entries.
//! - `orcid_states`: SHA-256 of an ORCID OAuth state → ∅: did, expiresAt, spentBy (the
//!   log ordinal of the verification that used it).
//! - `orcid`: DID → ∅: orcid, name, verifiedAt: the ORCID iD ORCID authenticated.
//! - `orcid_owners`: an ORCID iD → ∅: did, the account that proved it last.
//! - `alpha`: `all` → applicant DID: application (JSON: the submitted fields with id,
//!   status, createdAt, updatedAt, reviewedAt, reviewedBy).

mod apply;
pub mod read;
mod role;

pub use apply::AccessProjection;

pub use role::{Role, UnknownRole};
use store::TableRef;

/// The model name.
pub const MODEL: &str = "access";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &[
    "roles",
    "sessions",
    "spent",
    "factors",
    "passkeys",
    "audit",
    "audit_by_actor",
    "audit_counts",
    "alpha",
    "orcid_states",
    "orcid",
    "orcid_owners",
];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &["audit_counts"];

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

/// The audit trail's one partition (and the alpha applications').
pub(crate) const AUDIT_PARTITION: &str = "all";
