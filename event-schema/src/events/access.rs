use serde::{Deserialize, Serialize};

/// A change to what an account may do at svc, or a refusal worth auditing: role grants and
/// revocations, sessions started, refreshed and ended, second factors enrolled. What the
/// token endpoints, MFA enrolment and `pub.svc.admin.assignRole`/`revokeRole` append, keyed
/// by the subject's DID, so one account's changes apply in the order the log gives them.
/// The access model decides every once-only rule (a refresh token, an authorization code, a
/// TOTP time step, a recovery code) in that order, so two nodes cannot both accept one.
///
/// No secret is in the clear: refresh tokens and recovery codes are SHA-256 hashes, and a
/// TOTP secret is sealed with the service's key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessChange {
    /// The DID the change is about.
    pub subject: String,
    /// The DID that made it: an admin, the subject itself, or svc's own DID (bootstrap).
    pub actor: String,
    /// What changed.
    pub change: AccessAction,
}

/// What an [`AccessChange`] does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum AccessAction {
    /// A role is granted (a no-op when held).
    RoleGranted {
        /// The role name.
        role: String,
    },
    /// A role is withdrawn (a no-op when not held).
    RoleRevoked {
        /// The role name.
        role: String,
    },
    /// A login: a session (a family of refresh tokens) begins, unless its `proof` was used
    /// before or the session id exists already (an authorization code exchanged twice: that
    /// session is ended too).
    SessionStarted {
        /// The session id, derived from the authorization code's id.
        session: String,
        /// SHA-256 (hex) of the first refresh token.
        refresh_hash: String,
        /// How the user proved who they are: `serviceAuth`, `totp`, `webauthn`, `recovery`.
        method: String,
        /// The handle at login.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<String>,
        /// When the session ends unless refreshed (seconds since the epoch).
        expires_at: i64,
        /// The once-only second factor spent, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proof: Option<OnceProof>,
    },
    /// A refresh token is exchanged for the next one. When `previous_hash` is no longer the
    /// session's current token (a reuse, or a concurrent refresh that lost), the whole
    /// session ends instead.
    SessionRefreshed {
        /// The session id.
        session: String,
        /// SHA-256 (hex) of the refresh token presented.
        previous_hash: String,
        /// SHA-256 (hex) of the refresh token issued.
        refresh_hash: String,
        /// The session's new end (seconds since the epoch).
        expires_at: i64,
    },
    /// A session ends: revoked by its user, or ended for a reused token.
    SessionEnded {
        /// The session id.
        session: String,
        /// Why (`revoked`, `refreshTokenReused`, `codeReused`).
        reason: String,
    },
    /// A TOTP secret is enrolled, waiting for its first code.
    TotpEnrolled {
        /// The secret, sealed with the service's key (base64url).
        sealed_secret: String,
    },
    /// The enrolled TOTP secret is confirmed with a code of `step`: MFA is on.
    TotpConfirmed {
        /// The RFC 6238 time step of the code used.
        step: i64,
    },
    /// New recovery codes replace any earlier ones.
    RecoveryCodesIssued {
        /// SHA-256 (hex) of each code.
        hashes: Vec<String>,
    },
    /// A WebAuthn passkey is registered.
    PasskeyRegistered {
        /// The credential id (base64url).
        credential_id: String,
        /// The credential as the WebAuthn library serializes it.
        credential: serde_json::Value,
    },
    /// Every second factor is removed: MFA is off.
    MfaRemoved,
    /// An application to the alpha programme (`pub.svc.alpha.apply`): pending.
    AlphaApplied {
        /// The application's id (a UUID, made when it was submitted).
        id: String,
        /// What the applicant submitted (email, sector, career stage, affiliations,
        /// research keywords, motivation), as validated against the lexicon.
        application: serde_json::Value,
    },
    /// An admin decided on the subject's alpha application (`approved`, `rejected`,
    /// `revoked`); the `alpha-tester` role itself is granted or withdrawn by role events.
    AlphaReviewed {
        /// The new status.
        status: String,
    },
    /// `pub.svc.author.initiateOrcidVerification`: the subject is sent to ORCID to prove an
    /// iD, with a single-use state that expires.
    OrcidVerificationStarted {
        /// SHA-256 (hex) of the state sent to ORCID (the state itself is a secret).
        state_hash: String,
        /// When the state expires (seconds since the epoch).
        expires_at: i64,
    },
    /// ORCID's redirect came back with a code that ORCID exchanged for this iD. Applied only
    /// if the state is the subject's, unused and not expired when the event was appended:
    /// the iD becomes the subject's verified ORCID and the state is spent.
    OrcidVerified {
        /// SHA-256 (hex) of the state ORCID returned.
        state_hash: String,
        /// The ORCID iD ORCID authenticated.
        orcid: String,
        /// The name ORCID gave, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A credential was refused in a way an operator should see (a replayed service-auth
    /// token, a reused refresh token or code, a wrong second factor).
    Refused {
        /// What was refused and why.
        reason: String,
    },
}

/// A second factor that may be used once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum OnceProof {
    /// A TOTP code: its time step must be later than the last one used.
    Totp {
        /// The RFC 6238 time step.
        step: i64,
    },
    /// A recovery code: it must be unused.
    Recovery {
        /// SHA-256 (hex) of the code.
        hash: String,
    },
    /// A passkey assertion: its signature counter, when the authenticator keeps one, must grow.
    Passkey {
        /// The credential id (base64url).
        credential_id: String,
        /// The assertion's counter.
        counter: u32,
    },
}
