//! Service auth: verifying the JWTs that another AT Protocol service (a PDS on its user's
//! behalf, through `com.atproto.server.getServiceAuth`) signs to call a procedure of svc.
//!
//! A token is accepted when all of these hold, checked cheapest first:
//! - it is at most [`MAX_TOKEN_BYTES`] long, a compact JWT with `alg` `ES256K` or `ES256`, and not an access, refresh or DPoP
//!   token (`typ`);
//! - `aud` is the service's DID (or `DID#svc_appview`);
//! - `lxm` is the NSID being called;
//! - `exp` has not passed and is at most [`MAX_LIFETIME`] away (tokens are short-lived), and
//!   `iat`, if given, is not in the future (with [`CLOCK_SKEW`] either way);
//! - `iss` is a DID without a fragment, and the signature verifies with the `#atproto` key of
//!   its DID document, of the type `alg` names (the document is fetched again once when it
//!   does not, for key rotations);
//! - its `jti` was never accepted before by this node ([`super::replay`]).
//!
//! Refusals: 401 `AuthRequired` without a bearer token, 401 `ExpiredToken` once expired,
//! 401 `InvalidToken` for everything else. What a verified caller may do is the handler's
//! decision (403 `Forbidden`).

use std::sync::Arc;

use atproto::identity::Resolver;
pub use atproto::jwt::{Claims, Jwt};

use super::replay::ReplayLedger;

use crate::error::ApiError;

/// The longest a token may still be valid for.
pub const MAX_LIFETIME: i64 = 300;
/// The clock difference tolerated between the issuer and svc, in seconds.
pub const CLOCK_SKEW: i64 = 5;
/// The longest token read (a PDS's are about 500 bytes).
pub const MAX_TOKEN_BYTES: usize = 4096;

/// The service-auth verifier.
pub struct ServiceAuth {
    service_did: String,
    resolver: Arc<Resolver>,
    ledger: ReplayLedger,
}

impl ServiceAuth {
    /// A verifier of tokens for `service_did`, resolving issuers with `resolver` and keeping
    /// used tokens in `ledger`.
    pub fn new(service_did: &str, resolver: Arc<Resolver>, ledger: ReplayLedger) -> ServiceAuth {
        ServiceAuth { service_did: service_did.to_owned(), resolver, ledger }
    }

    /// The checks that cost no network call and no store read: the token's size and shape
    /// and its claims (see the module docs).
    ///
    /// # Errors
    /// The 401 [`ApiError`] to answer.
    pub fn check(&self, token: &str, lxm: &str, now: i64) -> Result<Jwt, ApiError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(ApiError::invalid_token(format!("the token is longer than {MAX_TOKEN_BYTES} bytes")));
        }
        let jwt = Jwt::parse(token).map_err(|e| ApiError::invalid_token(e.0))?;
        self.check_claims(&jwt, lxm, now)?;
        Ok(jwt)
    }

    /// Whether checking `jwt`'s signature needs the issuer's DID document fetched.
    pub fn needs_fetch(&self, jwt: &Jwt) -> bool {
        !self.resolver.is_cached(&jwt.claims.iss)
    }

    /// The checks after [`ServiceAuth::check`]: the signature, then the replay ledger.
    /// Answers the issuer, and whether the token was used before (a replay, to refuse).
    ///
    /// # Errors
    /// The 401 [`ApiError`] to answer.
    pub async fn finish(self: &Arc<Self>, jwt: Jwt, now: i64) -> Result<(String, bool), ApiError> {
        self.check_signature(&jwt).await?;
        let jti = jwt.claims.jti.clone().expect("checked by check_claims");
        let (me, iss, exp) = (self.clone(), jwt.claims.iss.clone(), jwt.claims.exp);
        let first = tokio::task::spawn_blocking(move || me.ledger.first_use(&iss, &jti, exp, now))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .map_err(ApiError::from_error)?;
        Ok((jwt.claims.iss, !first))
    }

    /// Everything but the signature and the replay check.
    fn check_claims(&self, jwt: &Jwt, lxm: &str, now: i64) -> Result<(), ApiError> {
        let invalid = ApiError::invalid_token;
        let c = &jwt.claims;
        if !matches!(jwt.header.alg.as_str(), "ES256K" | "ES256") {
            return Err(invalid(format!("alg {} is not accepted (ES256K or ES256)", jwt.header.alg)));
        }
        if let Some(typ @ ("at+jwt" | "refresh+jwt" | "dpop+jwt")) = jwt.header.typ.as_deref() {
            return Err(invalid(format!("a {typ} token is not a service-auth token")));
        }
        let own_service = format!("{}#svc_appview", self.service_did);
        if c.aud != self.service_did && c.aud != own_service {
            return Err(invalid(format!("the token is for {}, not this service ({})", c.aud, self.service_did)));
        }
        match c.lxm.as_deref() {
            Some(m) if m == lxm => {}
            Some(m) => return Err(invalid(format!("the token is for {m}, not {lxm}"))),
            None => return Err(invalid(format!("the token names no method (lxm); it must name {lxm}"))),
        }
        if c.exp + CLOCK_SKEW <= now {
            return Err(ApiError::expired_token(format!("the token expired at {}", c.exp)));
        }
        if c.exp > now + MAX_LIFETIME + CLOCK_SKEW {
            return Err(invalid(format!("the token is valid for more than {MAX_LIFETIME} seconds")));
        }
        if c.iat.is_some_and(|iat| iat > now + CLOCK_SKEW) {
            return Err(invalid("the token was issued in the future (iat)".into()));
        }
        if !c.jti.as_deref().is_some_and(|j| !j.is_empty() && j.len() <= 256) {
            return Err(invalid("the token has no jti (a unique id of 1 to 256 characters)".into()));
        }
        if c.iss.contains('#') || !lexicons::formats::is_did(&c.iss) {
            return Err(invalid(format!("the issuer {:?} is not a DID (without fragment)", c.iss)));
        }
        Ok(())
    }

    /// Checks the signature with the issuer's `#atproto` key, refetching its document once.
    async fn check_signature(&self, jwt: &Jwt) -> Result<(), ApiError> {
        let iss = &jwt.claims.iss;
        let mut refreshed = false;
        loop {
            let doc = if refreshed { self.resolver.refresh(iss).await } else { self.resolver.resolve(iss).await }
                .map_err(|e| ApiError::invalid_token(format!("the issuer's DID document: {e}")))?;
            let key = &doc.signing_key;
            let verdict = if key.jwt_alg() != jwt.header.alg {
                Err(format!("the issuer's #atproto key signs {}, not {}", key.jwt_alg(), jwt.header.alg))
            } else {
                key.verify(jwt.signed.as_bytes(), &jwt.signature).map_err(|e| e.to_string())
            };
            match verdict {
                Ok(()) => return Ok(()),
                Err(why) if refreshed => return Err(ApiError::invalid_token(format!("bad signature: {why}"))),
                Err(_) => refreshed = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use data_encoding::BASE64URL_NOPAD;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn auth() -> (ServiceAuth, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn store::Store> = Arc::new(store::EmbeddedStore::open(dir.path()).unwrap());
        let resolver = Arc::new(Resolver::new("http://127.0.0.1:9", std::time::Duration::from_secs(60)));
        (ServiceAuth::new("did:web:svc.test", resolver, ReplayLedger::new(store)), dir)
    }

    fn token(header: serde_json::Value, claims: serde_json::Value) -> Jwt {
        let part = |v: serde_json::Value| BASE64URL_NOPAD.encode(v.to_string().as_bytes());
        Jwt::parse(&format!("{}.{}.AAAA", part(header), part(claims))).unwrap()
    }

    fn claims() -> serde_json::Value {
        json!({"iss": "did:plc:alice", "aud": "did:web:svc.test", "exp": NOW + 60, "iat": NOW, "lxm": "pub.svc.sync.refreshRecord", "jti": "abc"})
    }

    #[test]
    fn claims_are_checked_before_any_network_call() {
        let (auth, _dir) = auth();
        let lxm = "pub.svc.sync.refreshRecord";
        let check = |header: serde_json::Value, changes: serde_json::Value| {
            let mut c = claims();
            for (k, v) in changes.as_object().unwrap() {
                if v.is_null() {
                    c.as_object_mut().unwrap().remove(k);
                } else {
                    c[k] = v.clone();
                }
            }
            auth.check_claims(&token(header, c), lxm, NOW).map_err(|e| {
                let r = axum::response::IntoResponse::into_response(e.clone());
                (r.status().as_u16(), format!("{e:?}"))
            })
        };
        let es256k = json!({"typ": "JWT", "alg": "ES256K"});
        assert!(check(es256k.clone(), json!({})).is_ok());
        assert!(check(json!({"alg": "ES256"}), json!({})).is_ok());
        assert!(check(es256k.clone(), json!({"aud": "did:web:svc.test#svc_appview"})).is_ok());
        assert!(check(es256k.clone(), json!({"exp": NOW - 2})).is_ok(), "within the clock skew");
        for (header, changes, name) in [
            (json!({"alg": "HS256"}), json!({}), "InvalidToken"),
            (json!({"alg": "none"}), json!({}), "InvalidToken"),
            (json!({"alg": "ES256K", "typ": "at+jwt"}), json!({}), "InvalidToken"),
            (es256k.clone(), json!({"aud": "did:web:other.test"}), "InvalidToken"),
            (es256k.clone(), json!({"lxm": "pub.svc.sync.deleteRecord"}), "InvalidToken"),
            (es256k.clone(), json!({"lxm": null}), "InvalidToken"),
            (es256k.clone(), json!({"exp": NOW - CLOCK_SKEW}), "ExpiredToken"),
            (es256k.clone(), json!({"exp": NOW + 3600}), "InvalidToken"),
            (es256k.clone(), json!({"iat": NOW + 600}), "InvalidToken"),
            (es256k.clone(), json!({"jti": null}), "InvalidToken"),
            (es256k.clone(), json!({"jti": ""}), "InvalidToken"),
            (es256k.clone(), json!({"iss": "did:plc:alice#atproto_labeler"}), "InvalidToken"),
            (es256k.clone(), json!({"iss": "alice.test"}), "InvalidToken"),
        ] {
            let (status, debug) = check(header.clone(), changes.clone()).expect_err(&format!("{header} {changes}"));
            assert_eq!(status, 401, "{header} {changes}");
            assert!(debug.contains(&format!("code: {name},")), "{header} {changes}: {debug}");
        }
    }
}
