//! DIDs and their documents: did:plc through a PLC directory, did:web through
//! `/.well-known/did.json`; the `#atproto` signing key (secp256k1 or P-256, in the `Multikey`
//! form and in the legacy `EcdsaSecp256k1VerificationKey2019` form), the handle the
//! document claims and the PDS endpoint. Documents are cached with an expiry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

/// Why a DID could not be resolved to a usable document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Not a DID method this resolver knows (or not a DID).
    #[error("cannot resolve {0}: only did:plc and did:web are supported")]
    UnsupportedMethod(String),
    /// The directory or host answered that it has no such DID (HTTP 404 or 410).
    #[error("{did} does not exist (its directory or host answered HTTP {status})")]
    NotFound {
        /// The DID.
        did: String,
        /// The HTTP status.
        status: u16,
    },
    /// The directory or host did not answer with a document.
    #[error("resolving {did}: {reason}")]
    Unavailable {
        /// The DID.
        did: String,
        /// What went wrong.
        reason: String,
    },
    /// The document has no usable `#atproto` key.
    #[error("the document of {did} has no usable #atproto key: {reason}")]
    NoKey {
        /// The DID.
        did: String,
        /// Why.
        reason: String,
    },
}

/// A public key that verifies repository commit signatures and service-auth tokens.
///
/// secp256k1 keys verify with libsecp256k1 (the `secp256k1` crate): several times faster
/// than a pure-Rust verifier, and the check is most of a firehose commit's cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// secp256k1 (`ES256K`).
    K256(secp256k1::PublicKey),
    /// NIST P-256 (`ES256`).
    P256(p256::ecdsa::VerifyingKey),
}

/// What a failed signature check says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Not a 64-byte compact signature.
    #[error("malformed signature")]
    Malformed,
    /// A high-S signature: AT Protocol accepts only low-S.
    #[error("high-S signature (only low-S is accepted)")]
    HighS,
    /// The signature does not verify with the key.
    #[error("the signature does not match the signing key")]
    Mismatch,
}

impl PublicKey {
    /// Verifies a 64-byte compact (r‖s) ECDSA signature of SHA-256(`message`), low-S only.
    ///
    /// # Errors
    /// [`SignatureError`] saying why it does not verify.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), SignatureError> {
        use ecdsa::signature::Verifier;
        use sha2::Digest;
        match self {
            PublicKey::K256(key) => {
                let sig = secp256k1::ecdsa::Signature::from_compact(signature).map_err(|_| SignatureError::Malformed)?;
                let mut low = sig;
                low.normalize_s();
                if low != sig {
                    return Err(SignatureError::HighS);
                }
                let digest = secp256k1::Message::from_digest(sha2::Sha256::digest(message).into());
                sig.verify(digest, key).map_err(|_| SignatureError::Mismatch)
            }
            PublicKey::P256(key) => {
                let sig = p256::ecdsa::Signature::from_slice(signature).map_err(|_| SignatureError::Malformed)?;
                if sig.normalize_s().is_some() {
                    return Err(SignatureError::HighS);
                }
                key.verify(message, &sig).map_err(|_| SignatureError::Mismatch)
            }
        }
    }

    /// The JWT `alg` of signatures this key makes: `ES256K` or `ES256`.
    pub fn jwt_alg(&self) -> &'static str {
        match self {
            PublicKey::K256(_) => "ES256K",
            PublicKey::P256(_) => "ES256",
        }
    }

    /// The key of a `k256` verifying key (as tests and tools hold them).
    pub fn from_k256(key: &k256::ecdsa::VerifyingKey) -> PublicKey {
        PublicKey::K256(secp256k1::PublicKey::from_slice(key.to_encoded_point(true).as_bytes()).expect("a valid point is a valid point"))
    }

    /// Parses a `did:key:z…` or a bare multibase `z…` Multikey (multicodec-prefixed,
    /// compressed point).
    pub fn from_multikey(multibase_key: &str) -> Result<PublicKey, String> {
        let encoded = multibase_key.strip_prefix("did:key:").unwrap_or(multibase_key);
        let (_, bytes) = multibase::decode(encoded).map_err(|e| format!("bad multibase: {e}"))?;
        match bytes.as_slice() {
            [0xe7, 0x01, point @ ..] => k256_key(point),
            [0x80, 0x24, point @ ..] => p256_key(point),
            _ => Err("unknown multicodec (expected secp256k1-pub or p256-pub)".into()),
        }
    }
}

fn k256_key(point: &[u8]) -> Result<PublicKey, String> {
    secp256k1::PublicKey::from_slice(point).map(PublicKey::K256).map_err(|e| format!("bad secp256k1 key: {e}"))
}

fn p256_key(point: &[u8]) -> Result<PublicKey, String> {
    p256::ecdsa::VerifyingKey::from_sec1_bytes(point).map(PublicKey::P256).map_err(|e| format!("bad P-256 key: {e}"))
}

/// What svc needs of a DID document.
#[derive(Debug, Clone, PartialEq)]
pub struct DidDocument {
    /// The DID.
    pub did: String,
    /// The handle the document claims (`alsoKnownAs: at://HANDLE`), not verified.
    pub handle: Option<String>,
    /// The `#atproto` signing key.
    pub signing_key: PublicKey,
    /// The `#atproto_pds` service endpoint.
    pub pds: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDocument {
    id: String,
    #[serde(default)]
    also_known_as: Vec<String>,
    #[serde(default)]
    verification_method: Vec<RawMethod>,
    #[serde(default)]
    service: Vec<RawService>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMethod {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    public_key_multibase: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawService {
    id: String,
    #[serde(default)]
    service_endpoint: serde_json::Value,
}

/// Whether a fragment id names `fragment` of `did`: relative (`#atproto`) or absolute
/// (`did:…#atproto`).
fn names(id: &str, did: &str, fragment: &str) -> bool {
    id == format!("#{fragment}") || id == format!("{did}#{fragment}")
}

impl DidDocument {
    /// Reads the parts svc needs from a DID document in JSON.
    ///
    /// # Errors
    /// [`ResolveError::NoKey`] when the document is for another DID or has no usable key.
    pub fn from_json(did: &str, doc: &serde_json::Value) -> Result<DidDocument, ResolveError> {
        let no_key = |reason: String| ResolveError::NoKey { did: did.to_owned(), reason };
        let raw: RawDocument = serde_json::from_value(doc.clone()).map_err(|e| no_key(format!("not a DID document: {e}")))?;
        if raw.id != did {
            return Err(no_key(format!("the document is for {}", raw.id)));
        }
        let method =
            raw.verification_method.iter().find(|m| names(&m.id, did, "atproto")).ok_or_else(|| no_key("no #atproto method".into()))?;
        let multibase_key = method.public_key_multibase.as_deref().ok_or_else(|| no_key("no publicKeyMultibase".into()))?;
        let signing_key = match method.kind.as_str() {
            "Multikey" => PublicKey::from_multikey(multibase_key),
            "EcdsaSecp256k1VerificationKey2019" => {
                multibase::decode(multibase_key).map_err(|e| format!("bad multibase: {e}")).and_then(|(_, point)| k256_key(&point))
            }
            "EcdsaSecp256r1VerificationKey2019" => {
                multibase::decode(multibase_key).map_err(|e| format!("bad multibase: {e}")).and_then(|(_, point)| p256_key(&point))
            }
            other => Err(format!("unknown key type {other}")),
        }
        .map_err(no_key)?;
        let handle = raw.also_known_as.iter().find_map(|a| a.strip_prefix("at://")).map(str::to_owned);
        let pds = raw
            .service
            .iter()
            .find(|s| names(&s.id, did, "atproto_pds"))
            .and_then(|s| s.service_endpoint.as_str())
            .map(|s| s.trim_end_matches('/').to_owned());
        Ok(DidDocument { did: did.to_owned(), handle, signing_key, pds })
    }
}

/// Resolves DIDs, caching documents for `ttl`.
///
/// The work a stranger can cause is bounded: a failed resolution is remembered for
/// [`FAILURE_TTL`] (the same bad DID is not fetched again meanwhile), a document is fetched
/// again at most every [`MIN_REFRESH`], and at most [`MAX_CONCURRENT`] fetches run at once
/// (others wait up to [`QUEUE_WAIT`], then fail).
pub struct Resolver {
    http: reqwest::Client,
    plc_url: String,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Arc<DidDocument>)>>,
    failures: Mutex<HashMap<String, (Instant, ResolveError)>>,
    slots: tokio::sync::Semaphore,
}

/// The public PLC directory.
pub const DEFAULT_PLC_URL: &str = "https://plc.directory";
/// How long a failed resolution is remembered.
pub const FAILURE_TTL: Duration = Duration::from_secs(60);
/// The shortest time between two fetches of one document.
pub const MIN_REFRESH: Duration = Duration::from_secs(30);
/// Fetches running at once at most.
pub const MAX_CONCURRENT: usize = 16;
/// How long a fetch waits for a slot.
pub const QUEUE_WAIT: Duration = Duration::from_secs(5);
/// Failed resolutions remembered at most (the oldest are dropped beyond).
const MAX_FAILURES: usize = 10_000;

impl Resolver {
    /// A resolver using the PLC directory at `plc_url`.
    pub fn new(plc_url: &str, ttl: Duration) -> Resolver {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("an HTTP client");
        Resolver {
            http,
            plc_url: plc_url.trim_end_matches('/').to_owned(),
            ttl,
            cache: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            slots: tokio::sync::Semaphore::new(MAX_CONCURRENT),
        }
    }

    /// Whether the document of `did` is cached and fresh (resolving it costs no fetch).
    pub fn is_cached(&self, did: &str) -> bool {
        self.cache.lock().expect("DID cache").get(did).is_some_and(|(at, _)| at.elapsed() < self.ttl)
    }

    /// The document of `did`, from the cache while it is fresh.
    ///
    /// # Errors
    /// [`ResolveError`] when it cannot be fetched or has no usable key.
    pub async fn resolve(&self, did: &str) -> Result<Arc<DidDocument>, ResolveError> {
        if let Some((at, doc)) = self.cache.lock().expect("DID cache").get(did) {
            if at.elapsed() < self.ttl {
                return Ok(doc.clone());
            }
        }
        self.refresh(did).await
    }

    /// Fetches the document of `did` again (after a key rotation, say) and caches it.
    ///
    /// # Errors
    /// As [`Resolver::resolve`].
    pub async fn refresh(&self, did: &str) -> Result<Arc<DidDocument>, ResolveError> {
        if let Some((at, doc)) = self.cache.lock().expect("DID cache").get(did) {
            if at.elapsed() < MIN_REFRESH {
                return Ok(doc.clone());
            }
        }
        if let Some((at, e)) = self.failures.lock().expect("DID failures").get(did) {
            if at.elapsed() < FAILURE_TTL {
                return Err(e.clone());
            }
        }
        let result = self.fetch(did).await;
        let mut failures = self.failures.lock().expect("DID failures");
        match &result {
            Ok(doc) => {
                failures.remove(did);
                self.cache.lock().expect("DID cache").insert(did.to_owned(), (Instant::now(), doc.clone()));
            }
            Err(e) => {
                if failures.len() >= MAX_FAILURES {
                    failures.retain(|_, (at, _)| at.elapsed() < FAILURE_TTL);
                    if failures.len() >= MAX_FAILURES {
                        failures.clear();
                    }
                }
                failures.insert(did.to_owned(), (Instant::now(), e.clone()));
            }
        }
        result
    }

    /// One fetch of the document of `did`, in a slot.
    async fn fetch(&self, did: &str) -> Result<Arc<DidDocument>, ResolveError> {
        let url = if did.starts_with("did:plc:") {
            format!("{}/{did}", self.plc_url)
        } else if let Some(host) = did.strip_prefix("did:web:") {
            if host.contains(':') && !host.contains("%3A") {
                return Err(ResolveError::UnsupportedMethod(did.to_owned()));
            }
            let host = host.replace("%3A", ":");
            // Plain HTTP only for a host on this machine (tests, local development).
            let scheme = if host.starts_with("localhost") || host.starts_with("127.0.0.1") { "http" } else { "https" };
            format!("{scheme}://{host}/.well-known/did.json")
        } else {
            return Err(ResolveError::UnsupportedMethod(did.to_owned()));
        };
        let unavailable = |reason: String| ResolveError::Unavailable { did: did.to_owned(), reason };
        let _slot = tokio::time::timeout(QUEUE_WAIT, self.slots.acquire())
            .await
            .map_err(|_| unavailable(format!("{MAX_CONCURRENT} resolutions are running; none finished within {QUEUE_WAIT:?}")))?
            .map_err(|_| unavailable("the resolver is closed".into()))?;
        let response = self.http.get(&url).send().await.map_err(|e| unavailable(format!("GET {url}: {e}")))?;
        let status = response.status().as_u16();
        if status == 404 || status == 410 {
            return Err(ResolveError::NotFound { did: did.to_owned(), status });
        }
        if !response.status().is_success() {
            return Err(unavailable(format!("GET {url}: HTTP {}", response.status())));
        }
        let body: serde_json::Value = response.json().await.map_err(|e| unavailable(format!("GET {url}: {e}")))?;
        Ok(Arc::new(DidDocument::from_json(did, &body)?))
    }

    /// Drops a DID from the cache (its document changed).
    pub fn forget(&self, did: &str) {
        self.cache.lock().expect("DID cache").remove(did);
        self.failures.lock().expect("DID failures").remove(did);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecdsa::signature::Signer;

    #[test]
    fn multikey_and_legacy_documents_give_the_same_key() {
        let secret = k256::ecdsa::SigningKey::from_slice(&[7u8; 32]).unwrap();
        let public = secret.verifying_key();
        let mut prefixed = vec![0xe7, 0x01];
        prefixed.extend_from_slice(public.to_encoded_point(true).as_bytes());
        let multikey = multibase::encode(multibase::Base::Base58Btc, &prefixed);
        let legacy = multibase::encode(multibase::Base::Base58Btc, public.to_encoded_point(false).as_bytes());
        let did = "did:plc:abc";
        let modern = serde_json::json!({"id": did, "alsoKnownAs": ["at://alice.test"],
            "verificationMethod": [{"id": format!("{did}#atproto"), "type": "Multikey", "controller": did, "publicKeyMultibase": multikey}],
            "service": [{"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": "http://localhost:2583/"}]});
        let old = serde_json::json!({"id": did,
            "verificationMethod": [{"id": "#atproto", "type": "EcdsaSecp256k1VerificationKey2019", "controller": did, "publicKeyMultibase": legacy}]});
        let a = DidDocument::from_json(did, &modern).unwrap();
        let b = DidDocument::from_json(did, &old).unwrap();
        assert_eq!(a.signing_key, PublicKey::from_k256(public));
        assert_eq!(a.signing_key, b.signing_key);
        assert_eq!(a.handle.as_deref(), Some("alice.test"));
        assert_eq!(a.pds.as_deref(), Some("http://localhost:2583"));
        assert!(DidDocument::from_json("did:plc:other", &modern).is_err());

        let sig: k256::ecdsa::Signature = secret.sign(b"hello");
        let sig = sig.normalize_s().unwrap_or(sig);
        a.signing_key.verify(b"hello", &sig.to_bytes()).unwrap();
        assert_eq!(a.signing_key.verify(b"hellO", &sig.to_bytes()), Err(SignatureError::Mismatch));
        let (r, s) = sig.split_scalars();
        let high = k256::ecdsa::Signature::from_scalars(r, -s).unwrap();
        assert_eq!(a.signing_key.verify(b"hello", &high.to_bytes()), Err(SignatureError::HighS));
    }

    #[test]
    fn p256_multikeys_parse() {
        let secret = p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap();
        let mut prefixed = vec![0x80, 0x24];
        prefixed.extend_from_slice(secret.verifying_key().to_encoded_point(true).as_bytes());
        let key = PublicKey::from_multikey(&format!("did:key:{}", multibase::encode(multibase::Base::Base58Btc, &prefixed))).unwrap();
        let sig: p256::ecdsa::Signature = secret.sign(b"m");
        key.verify(b"m", &sig.normalize_s().unwrap_or(sig).to_bytes()).unwrap();
    }
}
