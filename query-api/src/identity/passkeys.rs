//! WebAuthn passkeys as a second factor (`webauthn-rs`): registration by a signed-in user,
//! and an assertion to complete a login that answered `mfa_required`.
//!
//! The relying party is svc's public URL (`--public-url`): its host is the RP id, the URL the
//! origin. A ceremony's state (the challenge) is node-local and short-lived: kept in memory
//! for [`CEREMONY_TTL`] under a random id the client sends back, so both steps of a ceremony
//! must reach the same node. A registered passkey is a `command.access` event; the
//! authenticator's signature counter is checked in log order by the access model.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use webauthn_rs::prelude::{
    CreationChallengeResponse, Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential, RegisterPublicKeyCredential,
    RequestChallengeResponse, Url, Uuid, Webauthn, WebauthnBuilder,
};

use super::tokens::new_id;

/// How long a ceremony may take.
pub const CEREMONY_TTL: Duration = Duration::from_secs(300);
/// Ceremonies pending at most (the oldest are dropped beyond).
const MAX_PENDING: usize = 10_000;

enum Pending {
    Register { did: String, state: PasskeyRegistration },
    Authenticate { did: String, state: PasskeyAuthentication },
}

/// The passkey ceremonies of this node.
pub struct Passkeys {
    webauthn: Result<Webauthn, String>,
    pending: Mutex<HashMap<String, (Instant, Pending)>>,
}

/// A passkey assertion verified: which credential, and its counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asserted {
    /// The credential id (base64url).
    pub credential_id: String,
    /// The authenticator's signature counter (0 when it keeps none).
    pub counter: u32,
}

impl Passkeys {
    /// Ceremonies for the relying party at `public_url`; unavailable (with why) when the URL
    /// has no domain name (WebAuthn refuses IP addresses).
    pub fn new(public_url: &str) -> Passkeys {
        let webauthn = Url::parse(public_url).map_err(|e| format!("--public-url {public_url:?}: {e}")).and_then(|origin| {
            let Some(rp_id) = origin.domain().map(str::to_owned) else {
                return Err(format!("passkeys need a --public-url with a domain name (not {public_url})"));
            };
            WebauthnBuilder::new(&rp_id, &origin)
                .and_then(|b| b.rp_name("svc").build())
                .map_err(|e| format!("passkeys for {public_url}: {e}"))
        });
        Passkeys { webauthn, pending: Mutex::new(HashMap::new()) }
    }

    fn webauthn(&self) -> Result<&Webauthn, String> {
        self.webauthn.as_ref().map_err(Clone::clone)
    }

    fn remember(&self, pending: Pending) -> String {
        let id = new_id();
        let mut map = self.pending.lock().expect("passkey ceremonies");
        map.retain(|_, (at, _)| at.elapsed() < CEREMONY_TTL);
        if map.len() >= MAX_PENDING {
            map.clear();
        }
        map.insert(id.clone(), (Instant::now(), pending));
        id
    }

    fn take(&self, id: &str) -> Option<Pending> {
        let (at, p) = self.pending.lock().expect("passkey ceremonies").remove(id)?;
        (at.elapsed() < CEREMONY_TTL).then_some(p)
    }

    /// Starts registering a passkey for `did` (shown as `name`), excluding `registered` ones:
    /// the ceremony's id and the options for `navigator.credentials.create`.
    pub fn start_registration(&self, did: &str, name: &str, registered: &[Passkey]) -> Result<(String, CreationChallengeResponse), String> {
        let exclude = registered.iter().map(|p| p.cred_id().clone()).collect::<Vec<_>>();
        let (options, state) = self
            .webauthn()?
            .start_passkey_registration(user_id(did), name, name, Some(exclude))
            .map_err(|e| format!("cannot start a registration: {e}"))?;
        Ok((self.remember(Pending::Register { did: did.to_owned(), state }), options))
    }

    /// Finishes a registration of `did`: the passkey to keep.
    pub fn finish_registration(&self, did: &str, ceremony: &str, credential: &RegisterPublicKeyCredential) -> Result<Passkey, String> {
        let Some(Pending::Register { did: owner, state }) = self.take(ceremony) else {
            return Err("no such registration ceremony (expired, used, or started on another node)".into());
        };
        if owner != did {
            return Err("the ceremony is another account's".into());
        }
        self.webauthn()?.finish_passkey_registration(credential, &state).map_err(|e| format!("the registration does not verify: {e}"))
    }

    /// Starts an authentication of `did` with its `passkeys`: the ceremony's id and the
    /// options for `navigator.credentials.get`.
    pub fn start_authentication(&self, did: &str, passkeys: &[Passkey]) -> Result<(String, RequestChallengeResponse), String> {
        if passkeys.is_empty() {
            return Err("this account has no passkey".into());
        }
        let (options, state) =
            self.webauthn()?.start_passkey_authentication(passkeys).map_err(|e| format!("cannot start an authentication: {e}"))?;
        Ok((self.remember(Pending::Authenticate { did: did.to_owned(), state }), options))
    }

    /// Finishes an authentication of `did`.
    pub fn finish_authentication(&self, did: &str, ceremony: &str, credential: &PublicKeyCredential) -> Result<Asserted, String> {
        let Some(Pending::Authenticate { did: owner, state }) = self.take(ceremony) else {
            return Err("no such authentication ceremony (expired, used, or started on another node)".into());
        };
        if owner != did {
            return Err("the ceremony is another account's".into());
        }
        let result = self
            .webauthn()?
            .finish_passkey_authentication(credential, &state)
            .map_err(|e| format!("the assertion does not verify: {e}"))?;
        Ok(Asserted { credential_id: credential_id(result.cred_id().as_ref()), counter: result.counter() })
    }
}

/// The WebAuthn user handle of a DID: stable, and no personal data.
fn user_id(did: &str) -> Uuid {
    let digest = Sha256::digest(format!("svc passkey user {did}").as_bytes());
    Uuid::from_slice(&digest[..16]).expect("16 bytes")
}

/// A credential id as svc keeps it (base64url).
pub fn credential_id(raw: &[u8]) -> String {
    data_encoding::BASE64URL_NOPAD.encode(raw)
}
