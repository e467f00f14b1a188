//! One record fetched from its repository host and proven: `com.atproto.sync.getRecord`
//! answers with the repository's signed commit, the Merkle search tree nodes on the path to
//! the record's key and the record itself (or, when the record does not exist, the nodes that
//! prove its absence). The commit signature is checked with the repository's `#atproto` key
//! and the path walked from the commit's tree root, so what the host says is what the
//! repository holds at that commit.

use std::sync::Arc;
use std::time::Duration;

use cid::Cid;
use event_schema::{NewEvent, Payload, RecordDelete, Source};
use ipld_core::ipld::Ipld;

use crate::car::Car;
use crate::commit::{self, CommitError, WriteAt};
use crate::identity::{ResolveError, Resolver};

/// Why a record could not be fetched and proven.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The repository DID could not be resolved, or names no host.
    #[error("{0}")]
    Identity(String),
    /// The DID does not exist, or is of a method svc cannot resolve: no repository to ask.
    #[error("{0}")]
    UnknownDid(String),
    /// The host does not hold the repository (or it is taken down or deactivated there).
    #[error("the repository {did} is not available from {pds}: {reason}")]
    RepoNotFound {
        /// The repository DID.
        did: String,
        /// The host asked.
        pds: String,
        /// What the host said.
        reason: String,
    },
    /// The host could not be reached or failed.
    #[error("{0}")]
    Unavailable(String),
    /// The answer does not prove anything: a bad CAR, signature or tree path.
    #[error("the answer of {pds} does not verify: {reason}")]
    Unverified {
        /// The host asked.
        pds: String,
        /// What is wrong.
        reason: String,
    },
}

/// A record as its repository holds it, proven by the repository's signed commit.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvenRecord {
    /// The repository DID.
    pub did: String,
    /// The collection.
    pub collection: String,
    /// The record key.
    pub rkey: String,
    /// The host the repository was read from.
    pub pds: String,
    /// The revision of the commit that proves it.
    pub rev: String,
    /// The record's CID and DAG-CBOR block; `None` when the repository does not hold it.
    pub record: Option<(Cid, Vec<u8>)>,
}

impl FetchError {
    /// A DID that cannot be resolved: unknown (no repository to ask) or unavailable.
    fn from_resolve(e: ResolveError) -> FetchError {
        match e {
            ResolveError::UnsupportedMethod(_) | ResolveError::NotFound { .. } => FetchError::UnknownDid(e.to_string()),
            other => FetchError::Identity(other.to_string()),
        }
    }
}

impl ProvenRecord {
    /// The record's AT URI.
    pub fn uri(&self) -> String {
        format!("at://{}/{}/{}", self.did, self.collection, self.rkey)
    }

    /// The event that brings a read model to this state: a write (an update) of the record
    /// at the commit's revision, or its deletion when the repository does not hold it.
    ///
    /// # Errors
    /// A record block that is not a record (not DAG-CBOR, or outside the data model).
    pub fn event(&self, source: &Source) -> Result<NewEvent, String> {
        match &self.record {
            Some((cid, block)) => {
                let at = WriteAt { did: &self.did, collection: &self.collection, rkey: &self.rkey, rev: &self.rev, cid, update: true };
                commit::record_event(source, at, block)
            }
            None => Ok(NewEvent::repo(
                source.clone(),
                Payload::RecordDelete(RecordDelete {
                    did: self.did.clone(),
                    collection: self.collection.clone(),
                    rkey: self.rkey.clone(),
                    rev: self.rev.clone(),
                }),
            )),
        }
    }
}

/// Fetches and proves single records.
pub struct RecordFetcher {
    http: reqwest::Client,
    resolver: Arc<Resolver>,
}

impl RecordFetcher {
    /// A fetcher resolving repositories with `resolver`.
    pub fn new(resolver: Arc<Resolver>) -> RecordFetcher {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(15)).build().expect("an HTTP client");
        RecordFetcher { http, resolver }
    }

    /// The resolver in use.
    pub fn resolver(&self) -> &Arc<Resolver> {
        &self.resolver
    }

    /// Fetches `at://did/collection/rkey` from the repository's host and proves it.
    ///
    /// # Errors
    /// [`FetchError`] saying what failed.
    pub async fn fetch(&self, did: &str, collection: &str, rkey: &str) -> Result<ProvenRecord, FetchError> {
        let doc = self.resolver.resolve(did).await.map_err(FetchError::from_resolve)?;
        let pds = doc.pds.clone().ok_or_else(|| FetchError::Identity(format!("the DID document of {did} names no PDS")))?;
        let url = format!("{pds}/xrpc/com.atproto.sync.getRecord");
        let response = self
            .http
            .get(&url)
            .query(&[("did", did), ("collection", collection), ("rkey", rkey)])
            .send()
            .await
            .map_err(|e| FetchError::Unavailable(format!("GET {url}: {e}")))?;
        let status = response.status();
        if status.is_client_error() {
            let body: serde_json::Value = response.json().await.unwrap_or_default();
            let name = body.get("error").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
            let message = body.get("message").and_then(serde_json::Value::as_str).unwrap_or_default();
            return Err(FetchError::RepoNotFound { did: did.to_owned(), pds, reason: format!("HTTP {status} {name} {message}") });
        }
        if !status.is_success() {
            return Err(FetchError::Unavailable(format!("GET {url}: HTTP {status}")));
        }
        let bytes = response.bytes().await.map_err(|e| FetchError::Unavailable(format!("GET {url}: {e}")))?;
        let unverified = |reason: String| FetchError::Unverified { pds: pds.clone(), reason };
        let car = Car::read(&bytes).map_err(|e| unverified(e.to_string()))?;
        let root = *car.roots.first().ok_or_else(|| unverified("the CAR has no root".into()))?;
        let signed = match commit::verify_commit(&car, &root, did, &doc.signing_key) {
            Ok(c) => c,
            Err(CommitError::Signature(_)) => {
                let doc = self.resolver.refresh(did).await.map_err(FetchError::from_resolve)?;
                commit::verify_commit(&car, &root, did, &doc.signing_key).map_err(|e| unverified(e.to_string()))?
            }
            Err(e) => return Err(unverified(e.to_string())),
        };
        let key = format!("{collection}/{rkey}");
        let record = match mst_find(&car, &signed.data, &key).map_err(unverified)? {
            Some(cid) => {
                let block = car.get(&cid).ok_or_else(|| unverified(format!("the record {key} is not in the answer")))?;
                Some((cid, block.to_vec()))
            }
            None => None,
        };
        Ok(ProvenRecord { did: did.to_owned(), collection: collection.to_owned(), rkey: rkey.to_owned(), pds, rev: signed.rev, record })
    }
}

/// The value CID of `key` in the Merkle search tree rooted at `root`, reading only the nodes
/// on the key's path; `None` when the tree proves the key absent.
///
/// # Errors
/// A node on the path that is missing from the CAR or malformed (nothing is proven).
pub fn mst_find(car: &Car, root: &Cid, key: &str) -> Result<Option<Cid>, String> {
    let key = key.as_bytes();
    let mut node = *root;
    for _ in 0..64 {
        let block = car.get(&node).ok_or_else(|| format!("MST node {node} on the path is not in the CAR"))?;
        let Ipld::Map(fields) = serde_ipld_dagcbor::from_slice::<Ipld>(block).map_err(|e| format!("MST node {node}: {e}"))? else {
            return Err(format!("MST node {node} is not a map"));
        };
        let Some(Ipld::List(entries)) = fields.get("e") else { return Err(format!("MST node {node} has no entries")) };
        // The subtree to descend into: left of the first entry, or right of the last entry
        // whose key is below the wanted one.
        let mut next = match fields.get("l") {
            Some(Ipld::Link(l)) => Some(*l),
            _ => None,
        };
        let mut entry_key: Vec<u8> = Vec::new();
        for entry in entries {
            let Ipld::Map(e) = entry else { return Err(format!("MST node {node}: an entry is not a map")) };
            let (Some(Ipld::Integer(prefix)), Some(Ipld::Bytes(suffix)), Some(Ipld::Link(value))) = (e.get("p"), e.get("k"), e.get("v"))
            else {
                return Err(format!("MST node {node}: a malformed entry"));
            };
            let prefix =
                usize::try_from(*prefix).ok().filter(|p| *p <= entry_key.len()).ok_or_else(|| format!("MST node {node}: a bad prefix"))?;
            entry_key.truncate(prefix);
            entry_key.extend_from_slice(suffix);
            match entry_key.as_slice().cmp(key) {
                std::cmp::Ordering::Equal => return Ok(Some(*value)),
                std::cmp::Ordering::Greater => break,
                std::cmp::Ordering::Less => {
                    next = match e.get("t") {
                        Some(Ipld::Link(t)) => Some(*t),
                        _ => None,
                    };
                }
            }
        }
        match next {
            Some(n) => node = n,
            None => return Ok(None),
        }
    }
    Err("the tree is deeper than any repository's".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cid_of, write_car};

    fn node(left: Option<Cid>, entries: &[(&str, Cid, Option<Cid>)]) -> Vec<u8> {
        let mut prev = String::new();
        let list: Vec<Ipld> = entries
            .iter()
            .map(|(k, v, t)| {
                let prefix = prev.bytes().zip(k.bytes()).take_while(|(a, b)| a == b).count();
                prev = (*k).to_owned();
                let mut m = std::collections::BTreeMap::new();
                m.insert("p".to_owned(), Ipld::Integer(prefix as i128));
                m.insert("k".to_owned(), Ipld::Bytes(k.as_bytes()[prefix..].to_vec()));
                m.insert("v".to_owned(), Ipld::Link(*v));
                m.insert("t".to_owned(), t.map_or(Ipld::Null, Ipld::Link));
                Ipld::Map(m)
            })
            .collect();
        let mut m = std::collections::BTreeMap::new();
        m.insert("l".to_owned(), left.map_or(Ipld::Null, Ipld::Link));
        m.insert("e".to_owned(), Ipld::List(list));
        serde_ipld_dagcbor::to_vec(&Ipld::Map(m)).unwrap()
    }

    #[test]
    fn finds_keys_on_their_path_and_proves_absence() {
        let value = |s: &str| cid_of(&serde_ipld_dagcbor::to_vec(&Ipld::String(s.into())).unwrap());
        let (a, c, e, g) = (value("a"), value("c"), value("e"), value("g"));
        let left = node(None, &[("col/a", a, None)]);
        let right = node(None, &[("col/e", e, None)]);
        let (left_cid, right_cid) = (cid_of(&left), cid_of(&right));
        let root = node(Some(left_cid), &[("col/c", c, Some(right_cid)), ("col/g", g, None)]);
        let root_cid = cid_of(&root);
        let car = Car::read(&write_car(root_cid, &[(root_cid, root.clone()), (left_cid, left), (right_cid, right)])).unwrap();
        assert_eq!(mst_find(&car, &root_cid, "col/a").unwrap(), Some(a));
        assert_eq!(mst_find(&car, &root_cid, "col/c").unwrap(), Some(c));
        assert_eq!(mst_find(&car, &root_cid, "col/e").unwrap(), Some(e));
        assert_eq!(mst_find(&car, &root_cid, "col/g").unwrap(), Some(g));
        assert_eq!(mst_find(&car, &root_cid, "col/d").unwrap(), None);
        assert_eq!(mst_find(&car, &root_cid, "col/z").unwrap(), None);
        // A proof without the subtree on the key's path proves nothing.
        let partial = Car::read(&write_car(root_cid, &[(root_cid, root)])).unwrap();
        assert!(mst_find(&partial, &root_cid, "col/e").is_err());
        assert_eq!(mst_find(&partial, &root_cid, "col/g").unwrap(), Some(g));
    }
}
