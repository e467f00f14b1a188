//! TOTP (RFC 6238): SHA-1, 6 digits, 30-second steps, one step of drift either way. A code is
//! accepted once: the step it matched must be later than the last step used (section 5.2),
//! which the access model enforces in log order.

use totp_rs::{Algorithm, Secret, TOTP};

/// Seconds per step.
pub const STEP: u64 = 30;
/// Steps of clock drift accepted either way.
pub const DRIFT: u64 = 1;
/// The issuer shown in authenticator apps.
pub const ISSUER: &str = "svc";

fn totp(secret: &[u8], account: &str) -> Option<TOTP> {
    TOTP::new(Algorithm::SHA1, 6, DRIFT as u8, STEP, secret.to_vec(), Some(ISSUER.into()), account.replace(':', "")).ok()
}

/// A fresh 160-bit secret.
pub fn new_secret() -> Vec<u8> {
    super::keys::random::<20>().to_vec()
}

/// The secret in base32 (what a user types into an authenticator app).
pub fn base32(secret: &[u8]) -> String {
    Secret::Raw(secret.to_vec()).to_encoded().to_string()
}

/// The `otpauth://` URI of the secret for `account` (a QR code for authenticator apps).
pub fn otpauth_uri(secret: &[u8], account: &str) -> String {
    totp(secret, account).map(|t| t.get_url()).unwrap_or_default()
}

/// The step `code` is valid for at `now` (seconds), within the drift window.
pub fn matching_step(secret: &[u8], code: &str, now: u64) -> Option<i64> {
    let t = totp(secret, "")?;
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let current = now / STEP;
    (current.saturating_sub(DRIFT)..=current + DRIFT)
        .find(|step| constant_eq(t.generate(step * STEP).as_bytes(), code.as_bytes()))
        .map(|s| s as i64)
}

/// The code of `secret` at `now` (tests and tools).
pub fn code_at(secret: &[u8], now: u64) -> String {
    totp(secret, "").map(|t| t.generate(now)).unwrap_or_default()
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_their_step_within_the_drift_window() {
        // RFC 6238 appendix B's SHA-1 secret; its 8-digit vector at 59 s ends in 287082.
        let secret = b"12345678901234567890";
        assert_eq!(code_at(secret, 59), "287082");
        assert_eq!(matching_step(secret, "287082", 59), Some(1));
        assert_eq!(matching_step(secret, "287082", 59 + 30), Some(1), "one step late is accepted");
        assert_eq!(matching_step(secret, "287082", 59 + 60), None, "two steps late is not");
        assert_eq!(matching_step(secret, "28708", 59), None);
        assert_eq!(matching_step(secret, "abcdef", 59), None);
        assert!(otpauth_uri(secret, "alice.test").starts_with("otpauth://totp/svc:alice.test?secret="));
        assert_eq!(base32(secret), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
    }
}
