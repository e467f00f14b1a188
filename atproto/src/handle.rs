//! Handles, checked both ways before svc shows one: the DID document (or an `#identity`
//! frame) claims a handle, and the handle must resolve back to that DID. A handle resolves
//! through DNS (`TXT _atproto.<handle>` = `did=<did>`), then HTTPS
//! (`https://<handle>/.well-known/atproto-did`), or, when one is configured, through a
//! resolver service's `com.atproto.identity.resolveHandle` (an AppView or PDS that resolves
//! for you; tests use the PDS). A handle that does not resolve back is shown as
//! [`INVALID_HANDLE`]. Answers are cached with an expiry.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hickory_resolver::TokioResolver;
use tracing::debug;

/// What svc shows for a handle that does not resolve back to its DID.
pub const INVALID_HANDLE: &str = "handle.invalid";

/// Resolves handles to DIDs.
pub struct HandleResolver {
    service: Option<String>,
    dns: Option<TokioResolver>,
    http: reqwest::Client,
    ttl: Duration,
    cache: Mutex<HashMap<String, (Instant, Option<String>)>>,
}

impl HandleResolver {
    /// A resolver through DNS and HTTPS, or through `service` (an XRPC base URL) when given.
    pub fn new(service: Option<&str>, ttl: Duration) -> HandleResolver {
        let dns = match service {
            Some(_) => None,
            None => TokioResolver::builder_tokio().ok().and_then(|b| b.build().ok()),
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        HandleResolver { service: service.map(|s| s.trim_end_matches('/').to_owned()), dns, http, ttl, cache: Mutex::new(HashMap::new()) }
    }

    /// The DID `handle` resolves to, if any (cached, also when it resolves to nothing).
    pub async fn resolve(&self, handle: &str) -> Option<String> {
        let handle = handle.to_ascii_lowercase();
        if let Some((at, did)) = self.cache.lock().expect("handle cache").get(&handle) {
            if at.elapsed() < self.ttl {
                return did.clone();
            }
        }
        let did = match &self.service {
            Some(service) => self.through_service(service, &handle).await,
            None => match self.through_dns(&handle).await {
                Some(did) => Some(did),
                None => self.through_https(&handle).await,
            },
        };
        self.cache.lock().expect("handle cache").insert(handle, (Instant::now(), did.clone()));
        did
    }

    /// The handle to show for `did`: `claimed` if it resolves back to `did`, else
    /// [`INVALID_HANDLE`].
    pub async fn verified(&self, did: &str, claimed: Option<&str>) -> String {
        let Some(handle) = claimed.filter(|h| lexicons::formats::is_handle(h)) else { return INVALID_HANDLE.to_owned() };
        match self.resolve(handle).await {
            Some(resolved) if resolved == did => handle.to_ascii_lowercase(),
            other => {
                debug!(did, handle, resolved = ?other, "the handle does not resolve back to its DID");
                INVALID_HANDLE.to_owned()
            }
        }
    }

    /// Forgets a handle (it may point elsewhere now).
    pub fn forget(&self, handle: &str) {
        self.cache.lock().expect("handle cache").remove(&handle.to_ascii_lowercase());
    }

    async fn through_dns(&self, handle: &str) -> Option<String> {
        let dns = self.dns.as_ref()?;
        let lookup = tokio::time::timeout(Duration::from_secs(3), dns.txt_lookup(format!("_atproto.{handle}."))).await.ok()?.ok()?;
        let dids: Vec<String> = lookup
            .answers()
            .iter()
            .filter_map(|record| match &record.data {
                hickory_resolver::proto::rr::RData::TXT(txt) => Some(txt.to_string()),
                _ => None,
            })
            .filter_map(|text| text.strip_prefix("did=").map(str::to_owned))
            .collect();
        // Exactly one `did=` record; several are ambiguous and resolve to nothing.
        match dids.as_slice() {
            [did] if lexicons::formats::is_did(did) => Some(did.clone()),
            _ => None,
        }
    }

    async fn through_https(&self, handle: &str) -> Option<String> {
        let response = self.http.get(format!("https://{handle}/.well-known/atproto-did")).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let text = response.text().await.ok()?;
        let did = text.trim();
        lexicons::formats::is_did(did).then(|| did.to_owned())
    }

    async fn through_service(&self, service: &str, handle: &str) -> Option<String> {
        let url = format!("{service}/xrpc/com.atproto.identity.resolveHandle");
        let response = self.http.get(&url).query(&[("handle", handle)]).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body: serde_json::Value = response.json().await.ok()?;
        body.get("did").and_then(serde_json::Value::as_str).filter(|d| lexicons::formats::is_did(d)).map(str::to_owned)
    }
}
