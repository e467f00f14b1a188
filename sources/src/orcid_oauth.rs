//! ORCID's OAuth (three-legged, scope `/authenticate`): the authorize URL a user is sent to,
//! and the exchange of the code ORCID returns for the iD it authenticated
//! (<https://info.orcid.org/documentation/api-tutorials/api-tutorial-get-and-authenticated-orcid-id/>).

use std::time::Duration;

use serde::Deserialize;

use crate::{encode, SourceError};

/// ORCID's OAuth host.
pub const OAUTH_URL: &str = "https://orcid.org";

const NAME: &str = "orcid";

/// An iD ORCID authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The ORCID iD.
    pub orcid: String,
    /// The name ORCID gave, when it did.
    pub name: Option<String>,
}

/// svc's ORCID OAuth client: its registered client id and secret, the redirect URI
/// registered with them (svc's `/v1/auth/orcid/callback`), and where the user's browser
/// goes once ORCID has answered (the web client).
pub struct OrcidOAuth {
    base_url: String,
    client_id: String,
    client_secret: String,
    redirect_uri: String,
    /// Where the callback sends the browser afterwards, with the outcome in its query.
    pub return_to: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for OrcidOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrcidOAuth").field("base_url", &self.base_url).field("client_id", &self.client_id).finish_non_exhaustive()
    }
}

impl OrcidOAuth {
    /// A client of ORCID at `base_url` registered as `client_id` with `client_secret`,
    /// whose users come back to `redirect_uri` and are then sent on to `return_to`.
    pub fn new(base_url: &str, client_id: &str, client_secret: &str, redirect_uri: &str, return_to: &str) -> OrcidOAuth {
        OrcidOAuth {
            base_url: base_url.trim_end_matches('/').to_owned(),
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            return_to: return_to.to_owned(),
            http: reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap_or_default(),
        }
    }

    /// Where to send a user to prove an iD, carrying `state` back.
    pub fn authorize_url(&self, state: &str) -> String {
        format!(
            "{}/oauth/authorize?client_id={}&response_type=code&scope=%2Fauthenticate&redirect_uri={}&state={}",
            self.base_url,
            encode(&self.client_id),
            encode(&self.redirect_uri),
            encode(state)
        )
    }

    /// Exchanges the authorization `code` ORCID returned for the iD it authenticated.
    ///
    /// # Errors
    /// [`SourceError::Status`] when ORCID refuses the code (used, expired, another client's),
    /// [`SourceError::Malformed`] when its answer names no iD, [`SourceError::Unreachable`]
    /// or [`SourceError::Timeout`] when it cannot be asked.
    pub async fn exchange(&self, code: &str) -> Result<Authenticated, SourceError> {
        #[derive(Deserialize)]
        struct Token {
            orcid: Option<String>,
            name: Option<String>,
        }
        let form = [
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.as_str()),
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
        ]
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&");
        let response = self
            .http
            .post(format!("{}/oauth/token", self.base_url))
            .header(reqwest::header::ACCEPT, "application/json")
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|e| {
                if e.is_timeout() {
                    SourceError::Timeout { name: NAME, after_ms: 10_000 }
                } else {
                    SourceError::Unreachable { name: NAME, reason: e.to_string() }
                }
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(SourceError::Status { name: NAME, status: status.as_u16() });
        }
        let body = response.bytes().await.map_err(|e| SourceError::Unreachable { name: NAME, reason: e.to_string() })?;
        let token: Token = crate::json(NAME, &body)?;
        let orcid = token
            .orcid
            .filter(|o| crate::registries::is_orcid(o))
            .ok_or_else(|| SourceError::Malformed { name: NAME, reason: "the token names no ORCID iD".into() })?;
        Ok(Authenticated { orcid, name: token.name.filter(|n| !n.trim().is_empty()) })
    }
}
