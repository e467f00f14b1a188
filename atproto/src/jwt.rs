//! The parts of a compact JWT (`header.payload.signature`, base64url without padding) that
//! AT Protocol service auth reads. Parsing checks shape only; the verifier decides validity.

use data_encoding::BASE64URL_NOPAD;
use serde::Deserialize;

/// A parsed, not yet verified, token.
#[derive(Debug, Clone, PartialEq)]
pub struct Jwt {
    /// The header.
    pub header: Header,
    /// The claims.
    pub claims: Claims,
    /// What the signature covers: `header.payload` as sent.
    pub signed: String,
    /// The signature bytes.
    pub signature: Vec<u8>,
}

/// The header fields read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Header {
    /// The signing algorithm.
    pub alg: String,
    /// The token type, if given.
    #[serde(default)]
    pub typ: Option<String>,
}

/// The claims of a service-auth token.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Claims {
    /// The issuer: the DID whose `#atproto` key signed the token.
    pub iss: String,
    /// The audience: the service DID the token is for.
    pub aud: String,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Issued at, seconds since the epoch.
    #[serde(default)]
    pub iat: Option<i64>,
    /// The lexicon method the token is for.
    #[serde(default)]
    pub lxm: Option<String>,
    /// A unique token id.
    #[serde(default)]
    pub jti: Option<String>,
}

/// Why a token could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl Jwt {
    /// Parses `token`.
    ///
    /// # Errors
    /// [`ParseError`] for anything but three base64url parts with JSON header and claims.
    pub fn parse(token: &str) -> Result<Jwt, ParseError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(ParseError("not a compact JWT (three dot-separated parts)".into()));
        };
        let decode = |part: &str, what: &str| {
            BASE64URL_NOPAD.decode(part.as_bytes()).map_err(|_| ParseError(format!("the {what} is not base64url")))
        };
        let header_json: Header =
            serde_json::from_slice(&decode(header, "header")?).map_err(|e| ParseError(format!("the header is not a JWT header: {e}")))?;
        let claims: Claims = serde_json::from_slice(&decode(payload, "payload")?)
            .map_err(|e| ParseError(format!("the claims are not those of a service-auth token: {e}")))?;
        Ok(Jwt { header: header_json, claims, signed: format!("{header}.{payload}"), signature: decode(signature, "signature")? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(v: serde_json::Value) -> String {
        BASE64URL_NOPAD.encode(v.to_string().as_bytes())
    }

    #[test]
    fn parses_the_parts_and_refuses_malformed_tokens() {
        let h = part(serde_json::json!({"typ": "JWT", "alg": "ES256K"}));
        let c = part(serde_json::json!({"iss": "did:plc:a", "aud": "did:web:svc", "exp": 10, "lxm": "pub.svc.x", "jti": "j"}));
        let token = format!("{h}.{c}.{}", BASE64URL_NOPAD.encode(&[1, 2, 3]));
        let jwt = Jwt::parse(&token).unwrap();
        assert_eq!(jwt.header.alg, "ES256K");
        assert_eq!(jwt.claims.iss, "did:plc:a");
        assert_eq!(jwt.claims.jti.as_deref(), Some("j"));
        assert_eq!(jwt.signed, format!("{h}.{c}"));
        assert_eq!(jwt.signature, vec![1, 2, 3]);
        for bad in ["", "a.b", "a.b.c.d", &format!("{h}.{c}.!!"), &format!("{h}.{h}.AA"), &format!("x{h}.{c}.AA")] {
            assert!(Jwt::parse(bad).is_err(), "{bad}");
        }
    }
}
