//! Backfill: bring the read models to a repository's current state from the repository
//! itself (`com.atproto.sync.getRepo`), verified like a commit, whatever the stream missed.
//!
//! The repository's signed commit is checked, its Merkle search tree walked, and every record
//! of the followed collections appended as a create at the commit's revision (the projections
//! skip those they already hold). Records the log still holds as live for the repository but
//! that the repository no longer has are appended as deletes: those are found by reading the
//! repository's partition of the log, so a backfill costs one pass over that partition.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use cid::Cid;
use event_schema::{NewEvent, Payload, RecordDelete, Source};
use eventlog::{partition_for, EventLog};
use ipld_core::ipld::Ipld;
use tracing::info;

use crate::car::Car;
use crate::commit::{self, WriteAt};
use crate::identity::Resolver;
use crate::IngestError;

/// What a backfill of one repository appended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackfillReport {
    /// The repository DID.
    pub did: String,
    /// The revision of the commit it was brought to.
    pub rev: String,
    /// Records appended as creates.
    pub records: usize,
    /// Records appended as deletes.
    pub deletes: usize,
}

fn failed(did: &str, why: impl std::fmt::Display) -> IngestError {
    IngestError::Backfill { did: did.to_owned(), reason: why.to_string() }
}

/// Every `(key, value CID)` of the Merkle search tree rooted at `root`, in key order.
///
/// # Errors
/// A node that is missing from the CAR or malformed.
pub fn walk_mst(car: &Car, root: &Cid) -> Result<Vec<(String, Cid)>, String> {
    let mut out = Vec::new();
    walk(car, root, &mut out, 0)?;
    Ok(out)
}

fn walk(car: &Car, node: &Cid, out: &mut Vec<(String, Cid)>, depth: usize) -> Result<(), String> {
    if depth > 64 {
        return Err("the tree is deeper than any repository's".into());
    }
    let block = car.get(node).ok_or_else(|| format!("MST node {node} is not in the CAR"))?;
    let Ipld::Map(fields) = serde_ipld_dagcbor::from_slice::<Ipld>(block).map_err(|e| format!("MST node {node}: {e}"))? else {
        return Err(format!("MST node {node} is not a map"));
    };
    if let Some(Ipld::Link(left)) = fields.get("l") {
        walk(car, left, out, depth + 1)?;
    }
    let Some(Ipld::List(entries)) = fields.get("e") else { return Err(format!("MST node {node} has no entries")) };
    let mut key: Vec<u8> = Vec::new();
    for entry in entries {
        let Ipld::Map(e) = entry else { return Err(format!("MST node {node}: an entry is not a map")) };
        let (Some(Ipld::Integer(prefix)), Some(Ipld::Bytes(suffix)), Some(Ipld::Link(value))) = (e.get("p"), e.get("k"), e.get("v")) else {
            return Err(format!("MST node {node}: a malformed entry"));
        };
        let prefix = usize::try_from(*prefix).ok().filter(|p| *p <= key.len()).ok_or_else(|| format!("MST node {node}: a bad prefix"))?;
        key.truncate(prefix);
        key.extend_from_slice(suffix);
        out.push((String::from_utf8(key.clone()).map_err(|_| format!("MST node {node}: a key is not UTF-8"))?, *value));
        if let Some(Ipld::Link(right)) = e.get("t") {
            walk(car, right, out, depth + 1)?;
        }
    }
    Ok(())
}

/// The record URIs the log holds as live for `did`, by reading its partition.
fn live_in_log(log: &dyn EventLog, did: &str) -> Result<BTreeSet<String>, IngestError> {
    let partition = partition_for(did, log.partitions());
    let end = log.end_offset(partition)?;
    let mut live = BTreeSet::new();
    let mut from = 0;
    while from < end {
        let page = log.read(partition, from, 4096)?;
        let Some(last) = page.last() else { break };
        from = last.position.offset + 1;
        for event in page.iter().filter(|e| e.key == did) {
            match &event.payload {
                Payload::RecordCreate(w) | Payload::RecordUpdate(w) => {
                    live.insert(w.uri());
                }
                Payload::RecordDelete(d) => {
                    live.remove(&d.uri());
                }
                _ => {}
            }
        }
    }
    Ok(live)
}

/// Fetches, verifies and appends one repository (see the module documentation).
///
/// # Errors
/// [`IngestError::Backfill`] when the repository cannot be fetched or verified; log errors.
pub async fn backfill_repo(
    log: Arc<dyn EventLog>,
    resolver: &Resolver,
    did: &str,
    collections: &[String],
) -> Result<BackfillReport, IngestError> {
    let doc = resolver.resolve(did).await.map_err(|e| failed(did, e))?;
    let pds = doc.pds.clone().ok_or_else(|| failed(did, "the DID document names no PDS"))?;
    let url = format!("{pds}/xrpc/com.atproto.sync.getRepo");
    let http = reqwest::Client::builder().timeout(Duration::from_secs(300)).build().map_err(|e| failed(did, e))?;
    let response = http.get(&url).query(&[("did", did)]).send().await.map_err(|e| failed(did, format!("GET {url}: {e}")))?;
    if !response.status().is_success() {
        return Err(failed(did, format!("GET {url}: HTTP {}", response.status())));
    }
    let bytes = response.bytes().await.map_err(|e| failed(did, format!("GET {url}: {e}")))?;
    let car = Car::read(&bytes).map_err(|e| failed(did, e))?;
    let root = *car.roots.first().ok_or_else(|| failed(did, "the repository CAR has no root"))?;
    let signed = match commit::verify_commit(&car, &root, did, &doc.signing_key) {
        Ok(c) => c,
        Err(commit::CommitError::Signature(_)) => {
            let doc = resolver.refresh(did).await.map_err(|e| failed(did, e))?;
            commit::verify_commit(&car, &root, did, &doc.signing_key).map_err(|e| failed(did, e))?
        }
        Err(e) => return Err(failed(did, e)),
    };
    let entries = walk_mst(&car, &signed.data).map_err(|e| failed(did, e))?;
    let source = Source::Backfill { host: pds };
    let mut events = Vec::new();
    let mut present = BTreeSet::new();
    let mut report = BackfillReport { did: did.to_owned(), rev: signed.rev.clone(), ..BackfillReport::default() };
    let mut by_path: BTreeMap<String, Cid> = BTreeMap::new();
    for (key, cid) in entries {
        let Some((collection, _)) = key.split_once('/') else { continue };
        if commit::follows(collections, collection) {
            by_path.insert(key, cid);
        }
    }
    for (key, cid) in &by_path {
        let (collection, rkey) = key.split_once('/').expect("checked above");
        let block = car.get(cid).ok_or_else(|| failed(did, format!("record {key} is not in the CAR")))?;
        let at = WriteAt { did, collection, rkey, rev: &signed.rev, cid, update: false };
        events.push(commit::record_event(&source, at, block).map_err(|e| failed(did, format!("{key}: {e}")))?);
        present.insert(format!("at://{did}/{key}"));
        report.records += 1;
    }
    let log2 = log.clone();
    let did2 = did.to_owned();
    let live = tokio::task::spawn_blocking(move || live_in_log(log2.as_ref(), &did2)).await.map_err(|e| failed(did, e))??;
    for uri in live.difference(&present) {
        let Some((collection, rkey)) = uri.strip_prefix(&format!("at://{did}/")).and_then(|p| p.split_once('/')) else { continue };
        if !commit::follows(collections, collection) {
            continue;
        }
        let delete =
            RecordDelete { did: did.to_owned(), collection: collection.to_owned(), rkey: rkey.to_owned(), rev: signed.rev.clone() };
        events.push(NewEvent::repo(source.clone(), Payload::RecordDelete(delete)));
        report.deletes += 1;
    }
    tokio::task::spawn_blocking(move || events.chunks(512).try_for_each(|chunk| log.append(chunk).map(|_| ())))
        .await
        .map_err(|e| failed(did, e))??;
    info!(did, rev = report.rev, records = report.records, deletes = report.deletes, "backfilled a repository");
    Ok(report)
}

/// Repositories listed per `listRepos` page, and backfilled at once.
const PDS_BATCH: usize = 10;
/// Repositories backfilled at the same time.
const PDS_CONCURRENCY: usize = 2;

/// Backfills every repository a PDS hosts (`com.atproto.sync.listRepos`, pages of 10, two
/// repositories at a time). A repository that fails is reported and the others go on.
///
/// # Errors
/// Only when the PDS cannot list its repositories.
pub async fn backfill_pds(
    log: Arc<dyn EventLog>,
    resolver: &Resolver,
    pds: &str,
    collections: &[String],
) -> Result<Vec<Result<BackfillReport, IngestError>>, IngestError> {
    use futures::StreamExt;
    let pds = pds.trim_end_matches('/');
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().map_err(|e| failed(pds, e))?;
    let mut cursor: Option<String> = None;
    let mut out = Vec::new();
    loop {
        let url = format!("{pds}/xrpc/com.atproto.sync.listRepos");
        let mut request = http.get(&url).query(&[("limit", PDS_BATCH.to_string())]);
        if let Some(c) = &cursor {
            request = request.query(&[("cursor", c)]);
        }
        let response = request.send().await.map_err(|e| failed(pds, format!("GET {url}: {e}")))?;
        if !response.status().is_success() {
            return Err(failed(pds, format!("GET {url}: HTTP {}", response.status())));
        }
        let page: serde_json::Value = response.json().await.map_err(|e| failed(pds, format!("GET {url}: {e}")))?;
        let dids: Vec<String> = page["repos"]
            .as_array()
            .map(|repos| repos.iter().filter(|r| r["active"] != false).filter_map(|r| r["did"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let count = dids.len();
        let done = futures::stream::iter(dids.into_iter().map(|did| {
            let log = log.clone();
            async move { backfill_repo(log, resolver, &did, collections).await }
        }))
        .buffer_unordered(PDS_CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
        out.extend(done);
        match page["cursor"].as_str() {
            Some(c) if count > 0 => cursor = Some(c.to_owned()),
            _ => return Ok(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cid_of, write_car};

    fn node(left: Option<Cid>, entries: &[(usize, &str, Cid, Option<Cid>)]) -> Vec<u8> {
        let e: Vec<Ipld> = entries
            .iter()
            .map(|(p, k, v, t)| {
                Ipld::Map(
                    [
                        ("p".to_owned(), Ipld::Integer(*p as i128)),
                        ("k".to_owned(), Ipld::Bytes(k.as_bytes().to_vec())),
                        ("v".to_owned(), Ipld::Link(*v)),
                        ("t".to_owned(), t.map_or(Ipld::Null, Ipld::Link)),
                    ]
                    .into(),
                )
            })
            .collect();
        serde_ipld_dagcbor::to_vec(&Ipld::Map(
            [("l".to_owned(), left.map_or(Ipld::Null, Ipld::Link)), ("e".to_owned(), Ipld::List(e))].into(),
        ))
        .unwrap()
    }

    #[test]
    fn walks_subtrees_in_key_order_with_prefix_compression() {
        let value = cid_of(b"record");
        let left = node(None, &[(0, "a/1", value, None)]);
        let right = node(None, &[(0, "c/3", value, None)]);
        let root = node(Some(cid_of(&left)), &[(0, "b/1", value, None), (2, "2", value, Some(cid_of(&right)))]);
        let root_cid = cid_of(&root);
        let car = Car::read(&write_car(root_cid, &[(root_cid, root), (cid_of(&left), left.clone()), (cid_of(&right), right)])).unwrap();
        let keys: Vec<String> = walk_mst(&car, &root_cid).unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a/1", "b/1", "b/2", "c/3"]);
        let partial = Car::read(&write_car(root_cid, &[(cid_of(&left), left)])).unwrap();
        assert!(walk_mst(&partial, &root_cid).is_err());
    }
}
