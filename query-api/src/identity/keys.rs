//! svc's own keys: the ES256 keys that sign session tokens (newest signs, every one listed
//! verifies, so a rotation logs nobody out) and the key that seals secrets put in the log
//! (TOTP secrets). Kept in one JSON file every query node reads (`--auth-keys`, by default
//! `auth-keys.json` in the data directory, created on first start); the public halves are
//! published as a JWKS at `/.well-known/jwks.json`.

use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use data_encoding::{BASE64URL_NOPAD, HEXLOWER};
use hmac::{Hmac, Mac};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rand::RngCore;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// How many signing keys a rotation keeps (the newest signs; the older ones still verify
/// tokens they signed until those expire).
pub const KEPT_KEYS: usize = 3;

/// Why the key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Reading or writing the file.
    #[error("auth key file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The file's content.
    #[error("auth key file: {0}")]
    Invalid(String),
}

#[derive(Serialize, Deserialize)]
struct KeyFile {
    signing: Vec<StoredKey>,
    seal: String,
}

#[derive(Serialize, Deserialize)]
struct StoredKey {
    kid: String,
    pkcs8_pem: String,
    created: String,
}

struct SigningKey {
    kid: String,
    encoding: EncodingKey,
    decoding: DecodingKey,
    jwk: Value,
}

/// Why a token of svc's own did not verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Past its `exp`.
    Expired,
    /// Anything else: malformed, another type, unknown key, bad signature, wrong audience.
    Invalid(String),
}

/// The keys (see the module docs).
pub struct KeySet {
    signing: Vec<SigningKey>,
    seal: Aes256Gcm,
    /// HMAC-SHA-256 keyed with the key of viewers' pseudonyms (derived from the seal key),
    /// ready for a message: each pseudonym starts from a copy.
    pseudonyms: Hmac<Sha256>,
}

impl KeySet {
    /// The keys in `path`, creating the file with one fresh key when it does not exist.
    ///
    /// # Errors
    /// [`KeyError`] when the file cannot be read, written or parsed.
    pub fn load_or_create(path: &Path) -> Result<KeySet, KeyError> {
        let io = |source| KeyError::Io { path: path.display().to_string(), source };
        if !path.exists() {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            let file = KeyFile { signing: vec![new_key()?], seal: BASE64URL_NOPAD.encode(&random::<32>()) };
            create_private(path, &file).map_err(io)?;
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let file: KeyFile = serde_json::from_str(&text).map_err(|e| KeyError::Invalid(e.to_string()))?;
        KeySet::from_file(&file)
    }

    /// Adds a fresh signing key to the file at `path` (created first when missing; the new
    /// key signs from the next start on), keeping the [`KEPT_KEYS`] newest; returns its id.
    ///
    /// # Errors
    /// [`KeyError`].
    pub fn rotate(path: &Path) -> Result<String, KeyError> {
        if !path.exists() {
            KeySet::load_or_create(path)?;
        }
        let io = |source| KeyError::Io { path: path.display().to_string(), source };
        let text = std::fs::read_to_string(path).map_err(io)?;
        let mut file: KeyFile = serde_json::from_str(&text).map_err(|e| KeyError::Invalid(e.to_string()))?;
        let key = new_key()?;
        let kid = key.kid.clone();
        file.signing.push(key);
        let excess = file.signing.len().saturating_sub(KEPT_KEYS);
        file.signing.drain(..excess);
        write_private(path, &file).map_err(io)?;
        Ok(kid)
    }

    /// Keys that live only in memory (tests).
    pub fn ephemeral() -> KeySet {
        let file = KeyFile { signing: vec![new_key().expect("a fresh key")], seal: BASE64URL_NOPAD.encode(&random::<32>()) };
        KeySet::from_file(&file).expect("fresh keys")
    }

    fn from_file(file: &KeyFile) -> Result<KeySet, KeyError> {
        let bad = |e: &dyn std::fmt::Display| KeyError::Invalid(e.to_string());
        let mut signing = Vec::new();
        for k in &file.signing {
            let secret = p256::SecretKey::from_pkcs8_pem(&k.pkcs8_pem).map_err(|e| bad(&e))?;
            let point = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&secret.public_key(), false);
            let (x, y) =
                (BASE64URL_NOPAD.encode(point.x().expect("uncompressed")), BASE64URL_NOPAD.encode(point.y().expect("uncompressed")));
            signing.push(SigningKey {
                kid: k.kid.clone(),
                encoding: EncodingKey::from_ec_pem(k.pkcs8_pem.as_bytes()).map_err(|e| bad(&e))?,
                decoding: DecodingKey::from_ec_components(&x, &y).map_err(|e| bad(&e))?,
                jwk: json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": k.kid, "use": "sig", "alg": "ES256"}),
            });
        }
        if signing.is_empty() {
            return Err(KeyError::Invalid("no signing key".into()));
        }
        let raw = BASE64URL_NOPAD.decode(file.seal.as_bytes()).map_err(|e| bad(&e))?;
        let seal = Aes256Gcm::new_from_slice(&raw).map_err(|_| KeyError::Invalid("the seal key is not 32 bytes".into()))?;
        let key = Sha256::new().chain_update(b"svc viewer pseudonyms\0").chain_update(&raw).finalize();
        let pseudonyms = <Hmac<Sha256> as Mac>::new_from_slice(&key).expect("HMAC takes any key length");
        Ok(KeySet { signing, seal, pseudonyms })
    }

    /// The public keys as a JWKS document.
    pub fn jwks(&self) -> Value {
        json!({"keys": self.signing.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
    }

    /// Signs `claims` as a JWT of type `typ` with the newest key.
    pub fn sign<T: Serialize>(&self, typ: &str, claims: &T) -> String {
        let key = self.signing.last().expect("at least one key");
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(typ.to_owned());
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&header, claims, &key.encoding).expect("ES256 signing does not fail")
    }

    /// Verifies a JWT of type `typ` for `audience` signed by one of the keys, and decodes its
    /// claims (`exp` required, no leeway).
    pub fn verify<T: DeserializeOwned>(&self, token: &str, typ: &str, audience: &str) -> Result<T, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| TokenError::Invalid(format!("not a JWT: {e}")))?;
        if header.typ.as_deref() != Some(typ) {
            return Err(TokenError::Invalid(format!("not a {typ} token")));
        }
        let key = self
            .signing
            .iter()
            .find(|k| Some(&k.kid) == header.kid.as_ref())
            .ok_or_else(|| TokenError::Invalid("signed by a key this service does not hold".into()))?;
        let mut validation = Validation::new(Algorithm::ES256);
        validation.leeway = 0;
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "aud", "sub"]);
        match jsonwebtoken::decode::<T>(token, &key.decoding, &validation) {
            Ok(data) => Ok(data.claims),
            Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::ExpiredSignature) => Err(TokenError::Expired),
            Err(e) => Err(TokenError::Invalid(e.to_string())),
        }
    }

    /// A pseudonym of `who`, the concatenation of its parts (32 hex digits): HMAC-SHA-256
    /// under a key derived from the seal key, so it is stable on every node sharing the keys
    /// file and cannot be reversed or recomputed without it.
    pub fn pseudonym(&self, who: &[&[u8]]) -> String {
        let mut mac = self.pseudonyms.clone();
        who.iter().for_each(|part| mac.update(part));
        HEXLOWER.encode(&mac.finalize().into_bytes()[..16])
    }

    /// `plain` encrypted and authenticated with the seal key (AES-256-GCM), base64url.
    pub fn seal(&self, plain: &[u8]) -> String {
        let nonce = random::<12>();
        let mut out = nonce.to_vec();
        out.extend(self.seal.encrypt(Nonce::from_slice(&nonce), plain).expect("AES-GCM encryption does not fail"));
        BASE64URL_NOPAD.encode(&out)
    }

    /// What [`KeySet::seal`] sealed, if it was sealed with this key.
    pub fn unseal(&self, sealed: &str) -> Option<Vec<u8>> {
        let bytes = BASE64URL_NOPAD.decode(sealed.as_bytes()).ok()?;
        let (nonce, ciphertext) = bytes.split_at_checked(12)?;
        self.seal.decrypt(Nonce::from_slice(nonce), ciphertext).ok()
    }
}

/// `N` random bytes from the operating system.
pub fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    rand::rngs::OsRng.fill_bytes(&mut b);
    b
}

fn new_key() -> Result<StoredKey, KeyError> {
    let secret = p256::SecretKey::random(&mut rand::rngs::OsRng);
    let pem = secret.to_pkcs8_pem(LineEnding::LF).map_err(|e| KeyError::Invalid(e.to_string()))?;
    Ok(StoredKey { kid: BASE64URL_NOPAD.encode(&random::<8>()), pkcs8_pem: pem.to_string(), created: chrono::Utc::now().to_rfc3339() })
}

/// Creates the key file unless another process (a query node starting beside this one)
/// created it first: then that one is used, so every node holds the same keys.
fn create_private(path: &Path, file: &KeyFile) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("new-{}", data_encoding::HEXLOWER.encode(&random::<8>())));
    write_private_at(&tmp, file)?;
    let linked = std::fs::hard_link(&tmp, path);
    std::fs::remove_file(&tmp)?;
    match linked {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Replaces the key file, readable by its owner only.
fn write_private(path: &Path, file: &KeyFile) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    write_private_at(&tmp, file)?;
    std::fs::rename(tmp, path)
}

/// Writes `file` at `tmp`, readable by its owner only, synced.
fn write_private_at(tmp: &Path, file: &KeyFile) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(file).expect("serializable");
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options.open(tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct C {
        sub: String,
        aud: String,
        exp: i64,
    }

    #[test]
    fn a_pseudonym_is_the_hmac_of_its_parts_under_the_derived_key_and_stays_so() {
        let raw = [7u8; 32];
        let file = KeyFile { signing: vec![new_key().unwrap()], seal: BASE64URL_NOPAD.encode(&raw) };
        let keys = KeySet::from_file(&file).unwrap();
        // Computed apart, as the first builds did: rows written then hold these.
        let key = Sha256::new().chain_update(b"svc viewer pseudonyms\0").chain_update(raw).finalize();
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key).unwrap();
        mac.update(b"client 192.0.2.1 Firefox");
        let expected: String = mac.finalize().into_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(keys.pseudonym(&[b"client ", b"192.0.2.1", b" ", b"Firefox"]), expected);
        assert_eq!(keys.pseudonym(&[b"client 192.0.2.1 Firefox"]), expected);
        assert_ne!(keys.pseudonym(&[b"client 192.0.2.1 Chrome"]), expected);
        assert_eq!(expected.len(), 32);
    }

    #[test]
    fn tokens_verify_across_a_rotation_and_secrets_unseal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.json");
        let before = KeySet::load_or_create(&path).unwrap();
        let claims = C { sub: "did:plc:a".into(), aud: "did:web:svc".into(), exp: chrono::Utc::now().timestamp() + 60 };
        let old_token = before.sign("at+jwt", &claims);
        KeySet::rotate(&path).unwrap();
        let after = KeySet::load_or_create(&path).unwrap();
        assert_eq!(after.jwks()["keys"].as_array().unwrap().len(), 2);
        assert_eq!(after.verify::<C>(&old_token, "at+jwt", "did:web:svc").unwrap(), claims, "a token of the old key still verifies");
        let new_token = after.sign("at+jwt", &claims);
        assert_ne!(jsonwebtoken::decode_header(&new_token).unwrap().kid, jsonwebtoken::decode_header(&old_token).unwrap().kid);
        assert!(matches!(after.verify::<C>(&new_token, "mfa+jwt", "did:web:svc"), Err(TokenError::Invalid(_))), "type is checked");
        assert!(matches!(after.verify::<C>(&new_token, "at+jwt", "did:web:other"), Err(TokenError::Invalid(_))), "audience is checked");
        let expired = after.sign("at+jwt", &C { exp: 1000, ..claims });
        assert_eq!(after.verify::<C>(&expired, "at+jwt", "did:web:svc"), Err(TokenError::Expired));
        let foreign = KeySet::ephemeral().sign("at+jwt", &C { sub: "x".into(), aud: "did:web:svc".into(), exp: i64::MAX / 2 });
        assert!(matches!(after.verify::<C>(&foreign, "at+jwt", "did:web:svc"), Err(TokenError::Invalid(_))), "another key's token");
        let sealed = after.seal(b"secret");
        assert_eq!(after.unseal(&sealed).unwrap(), b"secret");
        assert!(KeySet::ephemeral().unseal(&sealed).is_none());
        // Rotations keep the newest few keys.
        for _ in 0..5 {
            KeySet::rotate(&path).unwrap();
        }
        assert_eq!(KeySet::load_or_create(&path).unwrap().jwks()["keys"].as_array().unwrap().len(), KEPT_KEYS);
    }

    #[test]
    fn nodes_starting_together_share_one_key_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared").join("keys.json");
        let nodes: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn({
                    let p = path.clone();
                    move || KeySet::load_or_create(&p).unwrap().jwks()
                })
            })
            .collect();
        let jwks: Vec<Value> = nodes.into_iter().map(|n| n.join().unwrap()).collect();
        assert!(jwks.windows(2).all(|w| w[0] == w[1]), "{jwks:?}");
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no temporary file is left");
    }
}
