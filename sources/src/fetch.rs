//! One source's HTTP client: its etiquette, deadline, retries, body bound, cache and
//! circuit breaker.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use bytes::Bytes;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use reqwest::StatusCode;
use tokio::sync::Semaphore;

use crate::breaker::Breaker;
use crate::SourceError;

/// How svc calls one source: where it is and what the source asks of its clients.
#[derive(Debug, Clone)]
pub struct Etiquette {
    /// The source's name.
    pub name: &'static str,
    /// Its base URL, without a trailing slash (`https://export.arxiv.org`).
    pub base_url: String,
    /// The user agent, with a contact address where the source asks for one.
    pub user_agent: String,
    /// The least time between two requests (the source's published rate); zero for none.
    pub interval: Duration,
    /// At most this many requests at once (1 where the source asks for one connection).
    pub connections: usize,
    /// Each call's deadline, waits and retries included.
    pub deadline: Duration,
    /// Retries after a transport error, a 5xx, or a 429 or 503 whose wait fits the deadline.
    pub retries: u32,
    /// The largest body read.
    pub max_body: usize,
    /// How long an answer is kept (zero: not kept).
    pub cache_for: Duration,
    /// The `Accept` header sent (ORCID answers XML without one asking for JSON).
    pub accept: &'static str,
    /// Failures in a row that open the circuit.
    pub breaker_threshold: u32,
    /// How long an open circuit stays open.
    pub breaker_cool_down: Duration,
    /// Headers sent with every request (an API key), shown nowhere.
    pub headers: Vec<(&'static str, Secret)>,
    /// A parameter added to every request's query string (the `mailto` of OpenAlex's and
    /// Crossref's polite pools).
    pub query_param: Option<(&'static str, String)>,
}

/// A value kept out of logs and debug output (an API key).
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: &str) -> Secret {
        Secret(value.to_owned())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<secret>")
    }
}

impl Etiquette {
    /// The defaults every source starts from: a 10 s deadline, 2 retries, a 5 MiB body, an
    /// hour's cache, a circuit opened by 5 failures for 30 s.
    pub fn new(name: &'static str, base_url: &str) -> Etiquette {
        Etiquette {
            name,
            base_url: base_url.trim_end_matches('/').to_owned(),
            user_agent: format!("svc/{} (scholarly AppView)", env!("CARGO_PKG_VERSION")),
            interval: Duration::ZERO,
            connections: 4,
            deadline: Duration::from_secs(10),
            retries: 2,
            max_body: 5 * 1024 * 1024,
            cache_for: Duration::from_secs(3600),
            accept: "*/*",
            breaker_threshold: 5,
            breaker_cool_down: Duration::from_secs(30),
            headers: Vec::new(),
            query_param: None,
        }
    }
}

/// A query-string value, percent-encoded (`application/x-www-form-urlencoded`, space as
/// `+`).
pub fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Parses a JSON answer of `source`.
///
/// # Errors
/// [`SourceError::Malformed`] when it is not JSON of the expected shape.
pub fn json<T: serde::de::DeserializeOwned>(source: &'static str, body: &[u8]) -> Result<T, SourceError> {
    serde_json::from_slice(body).map_err(|e| SourceError::Malformed { name: source, reason: e.to_string() })
}

/// One source's HTTP client ([`Etiquette`]).
pub struct Fetcher {
    etiquette: Etiquette,
    client: reqwest::Client,
    limiter: Option<DefaultDirectRateLimiter>,
    connections: Semaphore,
    cache: moka::future::Cache<String, Option<Bytes>>,
    breaker: Breaker,
}

/// How one attempt ended, when it did not answer.
enum Failed {
    /// Worth another attempt, after the given wait if the source named one.
    Retry(SourceError, Option<Duration>),
    /// Not worth another attempt.
    Final(SourceError),
}

impl Fetcher {
    /// A client that calls the source as `etiquette` says.
    pub fn new(etiquette: Etiquette) -> Fetcher {
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, Secret(value)) in &etiquette.headers {
            if let Ok(mut value) = reqwest::header::HeaderValue::from_str(value) {
                value.set_sensitive(true);
                headers.insert(*name, value);
            }
        }
        let client = reqwest::Client::builder()
            .user_agent(etiquette.user_agent.clone())
            .default_headers(headers)
            .pool_max_idle_per_host(etiquette.connections.max(1))
            .connect_timeout(etiquette.deadline)
            .build()
            .unwrap_or_default();
        let limiter = Quota::with_period(etiquette.interval).map(|q| RateLimiter::direct(q.allow_burst(NonZeroU32::MIN)));
        Fetcher {
            client,
            limiter,
            connections: Semaphore::new(etiquette.connections.max(1)),
            cache: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(etiquette.cache_for.max(Duration::from_millis(1)))
                .build(),
            breaker: Breaker::new(etiquette.breaker_threshold, etiquette.breaker_cool_down),
            etiquette,
        }
    }

    /// How this client calls its source.
    pub fn etiquette(&self) -> &Etiquette {
        &self.etiquette
    }

    /// `GET <base URL><path>`: the body of a 2xx answer, `None` for a 404 or 410; from the
    /// cache when the same path was fetched within the cache time.
    ///
    /// # Errors
    /// [`SourceError`] when the source gives no answer within the deadline, an HTTP error,
    /// a body over the bound, or while its circuit is open.
    pub async fn get(&self, path: &str) -> Result<Option<Bytes>, SourceError> {
        let url = match &self.etiquette.query_param {
            Some((name, value)) => {
                format!("{}{path}{}{name}={}", self.etiquette.base_url, if path.contains('?') { '&' } else { '?' }, encode(value))
            }
            None => format!("{}{path}", self.etiquette.base_url),
        };
        if !self.etiquette.cache_for.is_zero() {
            if let Some(hit) = self.cache.get(&url).await {
                return Ok(hit);
            }
        }
        let name = self.etiquette.name;
        if let Err(left) = self.breaker.check() {
            return Err(SourceError::CircuitOpen { name, retry_in_s: left.as_secs().max(1) });
        }
        let deadline = self.etiquette.deadline;
        let outcome = match tokio::time::timeout(deadline, self.attempts(&url, Instant::now() + deadline)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(SourceError::Timeout { name, after_ms: deadline.as_millis() as u64 }),
        };
        let healthy = match &outcome {
            Ok(_) => true,
            Err(SourceError::Timeout { .. } | SourceError::Unreachable { .. }) => false,
            Err(SourceError::Status { status, .. }) => *status < 500,
            Err(_) => true,
        };
        self.breaker.record(healthy);
        let answer = outcome?;
        if !self.etiquette.cache_for.is_zero() {
            self.cache.insert(url, answer.clone()).await;
        }
        Ok(answer)
    }

    async fn attempts(&self, url: &str, deadline: Instant) -> Result<Option<Bytes>, SourceError> {
        let mut attempt = 0u32;
        loop {
            let failed = {
                let _connection = self.connections.acquire().await.map_err(|_| self.unreachable("closed"))?;
                if let Some(limiter) = &self.limiter {
                    limiter.until_ready().await;
                }
                match self.attempt(url).await {
                    Ok(answer) => return Ok(answer),
                    Err(failed) => failed,
                }
            };
            let (error, wait) = match failed {
                Failed::Final(error) => return Err(error),
                Failed::Retry(error, wait) => (error, wait),
            };
            let wait = wait.unwrap_or(Duration::from_millis(200) * 2u32.pow(attempt.min(6)));
            if attempt >= self.etiquette.retries || Instant::now() + wait >= deadline {
                return Err(error);
            }
            tracing::debug!(source = self.etiquette.name, attempt, wait_ms = wait.as_millis() as u64, error = %error, "retrying");
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn attempt(&self, url: &str) -> Result<Option<Bytes>, Failed> {
        let name = self.etiquette.name;
        let response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, self.etiquette.accept)
            .send()
            .await
            .map_err(|e| Failed::Retry(self.unreachable(&e.to_string()), None))?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND || status == StatusCode::GONE {
            return Ok(None);
        }
        if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE {
            let after = retry_after(response.headers());
            let error = match (status, after) {
                (StatusCode::TOO_MANY_REQUESTS, after) => {
                    SourceError::RateLimited { name, retry_after_s: after.map_or(0, |a| a.as_secs().max(1)) }
                }
                _ => SourceError::Status { name, status: status.as_u16() },
            };
            return Err(Failed::Retry(error, after));
        }
        if status.is_server_error() {
            return Err(Failed::Retry(SourceError::Status { name, status: status.as_u16() }, None));
        }
        if !status.is_success() {
            return Err(Failed::Final(SourceError::Status { name, status: status.as_u16() }));
        }
        let limit = self.etiquette.max_body;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(Failed::Final(SourceError::TooLarge { name, limit }));
        }
        let mut response = response;
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| Failed::Retry(self.unreachable(&e.to_string()), None))? {
            if body.len() + chunk.len() > limit {
                return Err(Failed::Final(SourceError::TooLarge { name, limit }));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Some(Bytes::from(body)))
    }

    fn unreachable(&self, reason: &str) -> SourceError {
        SourceError::Unreachable { name: self.etiquette.name, reason: reason.to_owned() }
    }
}

/// A `Retry-After` header: seconds, or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(std::time::SystemTime::now()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_encoded_for_the_query_string() {
        assert_eq!(encode("all:graph AND au:\"Ada L\""), "all%3Agraph+AND+au%3A%22Ada+L%22");
        assert_eq!(encode("10.48550/arXiv.2509.21237"), "10.48550%2FarXiv.2509.21237");
    }

    #[test]
    fn retry_after_is_read_in_seconds_or_as_a_date() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "120".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(120)));
        let later = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
        h.insert(reqwest::header::RETRY_AFTER, later.parse().unwrap());
        let d = retry_after(&h).unwrap();
        assert!(d <= Duration::from_secs(30) && d >= Duration::from_secs(28), "{d:?}");
        h.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }
}
