//! Who a caller is and what it may do, without HTTP: svc's own keys and tokens
//! ([`keys`], [`tokens`]), service-auth verification ([`service`], with its replay ledger
//! [`replay`]), second factors ([`totp`], [`passkeys`]), rate-limit tiers ([`limits`]), the
//! pseudonyms and limits of eprints' viewers ([`viewers`]), and the [`Identity`] that holds them for the shared state. The HTTP side (the layer that
//! resolves a request's [`Caller`], the OAuth endpoints) is [`crate::auth`]'s.

pub mod keys;
pub mod limits;
pub mod passkeys;
pub mod replay;
pub mod service;
pub mod tokens;
pub mod totp;
pub mod viewers;

use std::sync::Arc;

use projections::access::Role;

pub use service::{Claims, Jwt, ServiceAuth, CLOCK_SKEW, MAX_LIFETIME};

use keys::KeySet;
use limits::RateLimits;
use tokens::AccessClaims;

/// How a caller proved who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// An AT Protocol service-auth JWT signed by the DID's `#atproto` key.
    ServiceAuth,
    /// An access token of svc's session `sid`.
    Session(String),
}

/// A verified caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The caller's DID: the user, or the calling service.
    pub did: String,
    /// The handle, when the credential carries one.
    pub handle: Option<String>,
    /// The roles the DID holds (read on every request).
    pub roles: Vec<Role>,
    /// The credential.
    pub credential: Credential,
}

impl Caller {
    /// Whether the caller holds `role` (`admin` holds every role).
    pub fn has(&self, role: Role) -> bool {
        self.roles.iter().any(|&r| r == role || r == Role::Admin)
    }

    /// The caller's most senior role, for a 403's `your_role` (`reader` without a grant).
    pub fn top_role(&self) -> Role {
        Role::ALL.into_iter().find(|r| self.roles.contains(r)).unwrap_or(Role::Reader)
    }
}

/// The caller the auth layer resolved, in the request's extensions.
#[derive(Debug, Clone)]
pub struct Resolved(pub Option<Caller>);

/// The identity layer's settings and state, one field of the shared state.
pub struct Identity {
    /// svc's DID: the `aud` of every token it accepts, the `iss` of those it issues.
    pub service_did: String,
    /// The service-auth verifier.
    pub service: Arc<ServiceAuth>,
    /// The keys of svc's own tokens.
    pub keys: Arc<KeySet>,
    /// The rate limiters.
    pub limits: RateLimits,
    /// The viewers of `metrics.record*`: their limit (on when `limits` are).
    pub viewers: viewers::Viewers,
    /// Services whose callers get the service tier (and may refresh or delete any record).
    pub approved_services: Vec<String>,
    /// Passkey ceremonies (node-local).
    pub passkeys: passkeys::Passkeys,
    /// Resolves the handle a passkey login names.
    pub handles: Arc<atproto::handle::HandleResolver>,
    /// Access tokens whose signature verified, with their claims: a token is verified once
    /// per node, not on every request (its expiry and its session are still checked every
    /// time).
    pub(crate) verified: quick_cache::sync::Cache<String, Arc<AccessClaims>>,
}

/// Verified access tokens remembered per node.
const VERIFIED_TOKENS: usize = 100_000;

impl Identity {
    /// The identity layer of `service_did`, reached at `public_url` (the passkeys' relying
    /// party).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        service_did: &str,
        public_url: &str,
        handles: Arc<atproto::handle::HandleResolver>,
        service: Arc<ServiceAuth>,
        keys: Arc<KeySet>,
        limits: RateLimits,
        approved_services: Vec<String>,
    ) -> Identity {
        Identity {
            service_did: service_did.to_owned(),
            service,
            keys,
            viewers: viewers::Viewers::new(limits.enabled()),
            limits,
            approved_services,
            passkeys: passkeys::Passkeys::new(public_url),
            handles,
            verified: quick_cache::sync::Cache::new(VERIFIED_TOKENS),
        }
    }
}
