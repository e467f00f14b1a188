//! Writing records to one repository on its host (PDS), as its owner: a session from
//! `com.atproto.server.createSession` (an account password or an app password), renewed when
//! the host says it expired, and the standard repository operations (`getRecord`,
//! `createRecord`, `putRecord` with `swapRecord`).

use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::Mutex;

/// What a repository host answered, when it was not what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepoWriteError {
    /// The host could not be reached, or did not answer in time.
    #[error("the repository host could not be reached: {0}")]
    Unreachable(String),
    /// The host refused the call: its HTTP status and XRPC error.
    #[error("{method}: HTTP {status} {error}: {message}")]
    Refused {
        /// The XRPC method called.
        method: String,
        /// The HTTP status.
        status: u16,
        /// The XRPC error name (`InvalidSwap`, `RecordNotFound`, …).
        error: String,
        /// The host's message.
        message: String,
    },
    /// The host answered with something that is not the method's output.
    #[error("{0}: the answer is not the method's output")]
    BadAnswer(String),
}

impl RepoWriteError {
    /// The XRPC error name, when the host refused the call.
    pub fn error_name(&self) -> Option<&str> {
        match self {
            RepoWriteError::Refused { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// A record as the repository holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldRecord {
    /// Its AT URI.
    pub uri: String,
    /// Its CID.
    pub cid: String,
    /// Its value.
    pub value: Value,
}

/// A record written: its AT URI and CID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The record's AT URI.
    pub uri: String,
    /// The CID of what was written.
    pub cid: String,
}

/// One repository, written as its owner.
pub struct RepoWriter {
    http: reqwest::Client,
    host: String,
    did: String,
    identifier: String,
    password: String,
    access: Mutex<Option<String>>,
}

impl RepoWriter {
    /// The repository `did` on the host at `host` (`http(s)://`), signed in as `identifier`
    /// (its handle or DID) with `password` when it first writes.
    pub fn new(host: &str, did: &str, identifier: &str, password: &str) -> RepoWriter {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("an HTTP client");
        RepoWriter {
            http,
            host: host.trim_end_matches('/').to_owned(),
            did: did.to_owned(),
            identifier: identifier.to_owned(),
            password: password.to_owned(),
            access: Mutex::new(None),
        }
    }

    /// The repository's DID.
    pub fn did(&self) -> &str {
        &self.did
    }

    async fn call(
        &self,
        method: &str,
        token: Option<&str>,
        query: Option<&[(&str, &str)]>,
        body: Option<&Value>,
    ) -> Result<Value, RepoWriteError> {
        let url = format!("{}/xrpc/{method}", self.host);
        let mut request = match body {
            Some(body) => self.http.post(url).json(body),
            None => self.http.get(url),
        };
        if let Some(query) = query {
            request = request.query(query);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| RepoWriteError::Unreachable(e.to_string()))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| RepoWriteError::Unreachable(e.to_string()))?;
        let answer: Value = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::Null) };
        if !status.is_success() {
            return Err(RepoWriteError::Refused {
                method: method.to_owned(),
                status: status.as_u16(),
                error: answer["error"].as_str().unwrap_or("Unknown").to_owned(),
                message: answer["message"].as_str().unwrap_or(&text).to_owned(),
            });
        }
        Ok(answer)
    }

    /// A session's access token: the one held, or a new session's.
    async fn token(&self, renew: bool) -> Result<String, RepoWriteError> {
        let mut held = self.access.lock().await;
        if let (Some(token), false) = (held.as_ref(), renew) {
            return Ok(token.clone());
        }
        let body = json!({"identifier": self.identifier, "password": self.password});
        let out = self.call("com.atproto.server.createSession", None, None, Some(&body)).await?;
        let token = out["accessJwt"].as_str().ok_or_else(|| RepoWriteError::BadAnswer("com.atproto.server.createSession".into()))?;
        *held = Some(token.to_owned());
        Ok(token.to_owned())
    }

    /// A procedure called as the owner; once more with a new session when the host says the
    /// token expired or is not valid.
    async fn procedure(&self, method: &str, body: &Value) -> Result<Value, RepoWriteError> {
        let token = self.token(false).await?;
        match self.call(method, Some(&token), None, Some(body)).await {
            Err(e) if matches!(e.error_name(), Some("ExpiredToken" | "InvalidToken")) => {
                let token = self.token(true).await?;
                self.call(method, Some(&token), None, Some(body)).await
            }
            other => other,
        }
    }

    /// The record `collection`/`rkey` of the repository, if it holds one.
    pub async fn get(&self, collection: &str, rkey: &str) -> Result<Option<HeldRecord>, RepoWriteError> {
        let method = "com.atproto.repo.getRecord";
        let query = [("repo", self.did.as_str()), ("collection", collection), ("rkey", rkey)];
        match self.call(method, None, Some(&query), None).await {
            Ok(out) => {
                let (Some(uri), Some(cid)) = (out["uri"].as_str(), out["cid"].as_str()) else {
                    return Err(RepoWriteError::BadAnswer(method.into()));
                };
                Ok(Some(HeldRecord { uri: uri.to_owned(), cid: cid.to_owned(), value: out["value"].clone() }))
            }
            Err(e) if matches!(e.error_name(), Some("RecordNotFound")) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates the record `collection`/`rkey`; the host refuses it when the key is taken.
    pub async fn create(&self, collection: &str, rkey: &str, record: &Value) -> Result<Written, RepoWriteError> {
        let body = json!({"repo": self.did, "collection": collection, "rkey": rkey, "record": record});
        written("com.atproto.repo.createRecord", &self.procedure("com.atproto.repo.createRecord", &body).await?)
    }

    /// Writes the record `collection`/`rkey` over the one with CID `swap` (the host refuses
    /// it with `InvalidSwap` when the record changed since).
    pub async fn put(&self, collection: &str, rkey: &str, record: &Value, swap: &str) -> Result<Written, RepoWriteError> {
        let body = json!({"repo": self.did, "collection": collection, "rkey": rkey, "record": record, "swapRecord": swap});
        written("com.atproto.repo.putRecord", &self.procedure("com.atproto.repo.putRecord", &body).await?)
    }
}

fn written(method: &str, out: &Value) -> Result<Written, RepoWriteError> {
    match (out["uri"].as_str(), out["cid"].as_str()) {
        (Some(uri), Some(cid)) => Ok(Written { uri: uri.to_owned(), cid: cid.to_owned() }),
        _ => Err(RepoWriteError::BadAnswer(method.into())),
    }
}
