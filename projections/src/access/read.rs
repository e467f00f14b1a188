//! Reading the access read model (its active version).

use serde_json::{Map, Value as Json};
use store::{Columns, Scan, Store, Value};

use super::{table, Role, AUDIT_PARTITION, MODEL};
use crate::rows::text;
use crate::ProjectionError;

/// A role held, with who granted it and when.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleGrant {
    /// The role.
    pub role: Role,
    /// When it was granted (RFC 3339).
    pub assigned_at: String,
    /// The DID of the admin (or svc itself, for the bootstrap) that granted it.
    pub assigned_by: String,
}

/// A session as the model holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The account.
    pub did: String,
    /// How the user logged in.
    pub method: String,
    /// The handle at login.
    pub handle: Option<String>,
    /// SHA-256 (hex) of the live refresh token.
    pub current: String,
    /// When the session ends unless refreshed (seconds since the epoch).
    pub expires_at: i64,
    /// Why it ended, once it has.
    pub ended: Option<String>,
}

/// The second factors of an account.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Factors {
    /// The sealed TOTP secret, once enrolled.
    pub totp_sealed: Option<String>,
    /// Whether the TOTP secret was confirmed with a code (MFA is on).
    pub totp_confirmed: bool,
    /// The last TOTP time step used.
    pub totp_last_step: i64,
    /// Recovery code hashes → used.
    pub recovery: Map<String, Json>,
    /// The registered passkeys: credential id → credential (JSON) and counter.
    pub passkeys: Vec<(String, Json, i64)>,
}

impl Factors {
    /// The MFA methods the account can log in with (`totp`, `webauthn`), empty when MFA is off.
    pub fn methods(&self) -> Vec<&'static str> {
        let mut m = Vec::new();
        if self.totp_confirmed {
            m.push("totp");
        }
        if !self.passkeys.is_empty() {
            m.push("webauthn");
        }
        m
    }

    /// Recovery codes not used yet.
    pub fn recovery_left(&self) -> usize {
        self.recovery.values().filter(|v| **v == Json::Bool(false)).count()
    }
}

/// An audit trail entry (`#auditEntry` of the admin API).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// What happened (`assign_role`, `login`, `token_refused`…).
    pub action: String,
    /// Who did it.
    pub actor_did: String,
    /// Whom it was about; empty (and not shown) for what concerns no account (a backfill).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub target_did: String,
    /// The particulars.
    pub details: Json,
    /// When its event entered the log (RFC 3339).
    pub timestamp: String,
}

/// Reads the active version of the access model.
pub struct AccessReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

impl<'a> AccessReader<'a> {
    /// A reader of the active version in `store`.
    pub fn new(store: &'a dyn Store) -> Result<AccessReader<'a>, ProjectionError> {
        Ok(AccessReader { store, version: store.active_version(MODEL)? })
    }

    fn get(&self, name: &'static str, partition: &str, clustering: &[u8]) -> Result<Option<Columns>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        Ok(self.store.get(&table(v, name), partition, clustering)?)
    }

    /// The roles `did` holds (a grant of a name that is no longer a role is left out).
    pub fn roles(&self, did: &str) -> Result<Vec<RoleGrant>, ProjectionError> {
        let roles: Map<String, Json> =
            self.get("roles", did, &[])?.and_then(|r| text(&r, "roles")).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        Ok(roles
            .into_iter()
            .filter_map(|(name, g)| Some((name.parse::<Role>().ok()?, g)))
            .map(|(role, g)| RoleGrant {
                role,
                assigned_at: g["assignedAt"].as_str().unwrap_or_default().to_owned(),
                assigned_by: g["assignedBy"].as_str().unwrap_or_default().to_owned(),
            })
            .collect())
    }

    /// A session by id.
    pub fn session(&self, id: &str) -> Result<Option<Session>, ProjectionError> {
        Ok(self.get("sessions", id, &[])?.map(|r| Session {
            did: text(&r, "did").unwrap_or_default(),
            method: text(&r, "method").unwrap_or_default(),
            handle: text(&r, "handle"),
            current: text(&r, "current").unwrap_or_default(),
            expires_at: r.get("expiresAt").and_then(Value::as_int).unwrap_or(0),
            ended: text(&r, "ended"),
        }))
    }

    /// Whether the refresh token hashed `hash` was used up in session `id`.
    pub fn is_spent(&self, id: &str, hash: &str) -> Result<bool, ProjectionError> {
        Ok(self.get("spent", id, hash.as_bytes())?.is_some())
    }

    /// The second factors of `did`.
    pub fn factors(&self, did: &str) -> Result<Factors, ProjectionError> {
        let mut f = Factors::default();
        if let Some(r) = self.get("factors", did, &[])? {
            f.totp_sealed = text(&r, "totpSealed");
            f.totp_confirmed = r.get("totpConfirmed").and_then(Value::as_bool) == Some(true);
            f.totp_last_step = r.get("totpLastStep").and_then(Value::as_int).unwrap_or(0);
            f.recovery = text(&r, "recovery").and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        }
        if let Some(v) = self.version {
            for row in crate::rows::scan_partition(self.store, &table(v, "passkeys"), did, 100)? {
                let credential = text(&row.columns, "credential").and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Json::Null);
                let counter = row.columns.get("counter").and_then(Value::as_int).unwrap_or(0);
                f.passkeys.push((String::from_utf8_lossy(&row.clustering).into_owned(), credential, counter));
            }
        }
        Ok(f)
    }

    /// The ORCID iD `did` proved through ORCID: `(orcid, name, verifiedAt)`.
    pub fn verified_orcid(&self, did: &str) -> Result<Option<(String, Option<String>, String)>, ProjectionError> {
        Ok(self
            .get("orcid", did, &[])?
            .map(|r| (text(&r, "orcid").unwrap_or_default(), text(&r, "name"), text(&r, "verifiedAt").unwrap_or_default())))
    }

    /// The account that proved the ORCID iD `orcid` through ORCID (the last, if several did).
    pub fn orcid_owner(&self, orcid: &str) -> Result<Option<String>, ProjectionError> {
        Ok(self.get("orcid_owners", orcid, &[])?.and_then(|r| text(&r, "did")))
    }

    /// The ORCID OAuth state hashed `hash`: `(did, expiresAt, spentBy)`.
    pub fn orcid_state(&self, hash: &str) -> Result<Option<(String, i64, Option<u64>)>, ProjectionError> {
        Ok(self.get("orcid_states", hash, &[])?.map(|r| {
            let spent = r.get("spentBy").and_then(Value::as_int).map(|p| p as u64);
            (text(&r, "did").unwrap_or_default(), r.get("expiresAt").and_then(Value::as_int).unwrap_or(0), spent)
        }))
    }

    /// The alpha application of `did`, in its API shape.
    pub fn alpha_application(&self, did: &str) -> Result<Option<Json>, ProjectionError> {
        Ok(self
            .get("alpha", AUDIT_PARTITION, did.as_bytes())?
            .and_then(|r| text(&r, "application"))
            .and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Every alpha application, by applicant DID.
    pub fn alpha_applications(&self) -> Result<Vec<Json>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let rows = crate::rows::scan_partition(self.store, &table(v, "alpha"), AUDIT_PARTITION, usize::MAX)?;
        Ok(rows.iter().filter_map(|r| text(&r.columns, "application")).filter_map(|t| serde_json::from_str(&t).ok()).collect())
    }

    /// A page of the audit trail, newest first: `limit` entries after the first `offset`,
    /// of every actor or of one, and how many there are in all. Reads `offset + limit` rows
    /// and one count.
    pub fn audit(&self, limit: usize, offset: usize, actor: Option<&str>) -> Result<(Vec<AuditEntry>, usize), ProjectionError> {
        let Some(v) = self.version else { return Ok((Vec::new(), 0)) };
        let (name, partition) = match actor {
            Some(a) => ("audit_by_actor", a),
            None => ("audit", AUDIT_PARTITION),
        };
        let mut out = Vec::new();
        let mut skipped = 0;
        let mut scan = Scan { after: None, limit: (offset + limit).clamp(1, 1000), reverse: true };
        'pages: loop {
            let page = self.store.scan(&table(v, name), partition, &scan)?;
            for row in page.rows {
                if skipped < offset {
                    skipped += 1;
                    continue;
                }
                if out.len() == limit {
                    break 'pages;
                }
                let c = &row.columns;
                out.push(AuditEntry {
                    action: text(c, "action").unwrap_or_default(),
                    actor_did: text(c, "actor").unwrap_or_default(),
                    target_did: text(c, "subject").unwrap_or_default(),
                    details: text(c, "details").and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Json::Null),
                    timestamp: text(c, "at").unwrap_or_default(),
                });
            }
            match page.next {
                Some(next) if out.len() < limit => scan.after = Some(next),
                _ => break,
            }
        }
        let total = self.store.get(&table(v, "audit_counts"), partition, &[])?;
        let total = total.and_then(|c| c.get("n").and_then(Value::as_int)).unwrap_or(0).max(0) as usize;
        Ok((out, total))
    }
}
