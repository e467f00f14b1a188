//! A repository host asked what it is (`com.atproto.server.describeServer`), before svc
//! registers it for scans.

use std::sync::OnceLock;
use std::time::Duration;

/// Why a URL is not a repository host svc can register.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Nothing answered, or not in time.
    #[error("{url} cannot be reached: {reason}")]
    Unreachable {
        /// The host's URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// Something answered, but not as a repository host does.
    #[error("{url} is not a repository host: {reason}")]
    NotAHost {
        /// The host's URL.
        url: String,
        /// What was wrong with the answer.
        reason: String,
    },
}

/// The DID a repository host at `url` (an http(s) origin) describes itself with. One GET of
/// `describeServer`, with a short timeout and no redirects.
pub async fn describe(url: &str) -> Result<String, HostError> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    let http = CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client without custom TLS builds")
    });
    let endpoint = format!("{}/xrpc/com.atproto.server.describeServer", url.trim_end_matches('/'));
    let unreachable = |e: reqwest::Error| HostError::Unreachable { url: url.to_owned(), reason: e.to_string() };
    let not_a_host = |reason: String| HostError::NotAHost { url: url.to_owned(), reason };
    let response = http.get(&endpoint).send().await.map_err(unreachable)?;
    if !response.status().is_success() {
        return Err(not_a_host(format!("describeServer answered {}", response.status())));
    }
    let body: serde_json::Value = response.json().await.map_err(|e| not_a_host(format!("describeServer is not JSON: {e}")))?;
    body["did"].as_str().map(str::to_owned).ok_or_else(|| not_a_host("describeServer names no did".into()))
}
