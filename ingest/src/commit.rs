//! A signed commit's record operations turned into events (the signature check is
//! [`atproto::commit`]'s).

use cid::Cid;
use event_schema::{NewEvent, Payload, RecordDelete, RecordWrite, Source};
use ipld_core::ipld::Ipld;

pub use atproto::commit::{verify_commit, CommitError, SignedCommit};

use crate::car::Car;
use crate::data_model;
use crate::frame::RepoOp;

/// What became of one operation of a commit.
#[derive(Debug, Clone, PartialEq)]
pub enum OpOutcome {
    /// An event to append.
    Event(Box<NewEvent>),
    /// A create or update whose record block is not in the CAR: fetch the record.
    Missing {
        /// The collection.
        collection: String,
        /// The record key.
        rkey: String,
        /// The record's CID.
        cid: Cid,
        /// Whether it is an update.
        update: bool,
    },
    /// An operation that cannot be used, and why.
    Invalid(String),
}

/// Whether `collection` is one of those svc follows (each entry a prefix such as `pub.svc.`
/// or an exact NSID).
pub fn follows(collections: &[String], collection: &str) -> bool {
    collections.iter().any(|c| if c.ends_with('.') { collection.starts_with(c.as_str()) } else { collection == c })
}

/// Where a record write lands: repository, path, revision and the record's CID.
#[derive(Debug, Clone, Copy)]
pub struct WriteAt<'a> {
    /// The repository DID.
    pub did: &'a str,
    /// The collection.
    pub collection: &'a str,
    /// The record key.
    pub rkey: &'a str,
    /// The commit's revision.
    pub rev: &'a str,
    /// The record's CID.
    pub cid: &'a Cid,
    /// An update rather than a create.
    pub update: bool,
}

/// The event of a record write, from its DAG-CBOR block.
pub fn record_event(source: &Source, at: WriteAt<'_>, block: &[u8]) -> Result<NewEvent, String> {
    let value: Ipld = serde_ipld_dagcbor::from_slice(block).map_err(|e| format!("record is not DAG-CBOR: {e}"))?;
    let record = data_model::to_json(&value).map_err(|e| e.to_string())?;
    let write = RecordWrite {
        did: at.did.to_owned(),
        collection: at.collection.to_owned(),
        rkey: at.rkey.to_owned(),
        cid: at.cid.to_string(),
        rev: at.rev.to_owned(),
        record,
    };
    Ok(NewEvent::repo(source.clone(), if at.update { Payload::RecordUpdate(write) } else { Payload::RecordCreate(write) }))
}

/// The events of a commit's operations on the followed collections, in order.
pub fn op_outcomes(source: &Source, did: &str, rev: &str, ops: &[RepoOp], car: &Car, collections: &[String]) -> Vec<OpOutcome> {
    let mut out = Vec::new();
    for op in ops {
        let Some((collection, rkey)) = op.path.split_once('/') else {
            out.push(OpOutcome::Invalid(format!("path {:?} is not collection/rkey", op.path)));
            continue;
        };
        if !follows(collections, collection) {
            continue;
        }
        match (op.action.as_str(), op.cid) {
            ("create" | "update", Some(cid)) => {
                let update = op.action == "update";
                match car.get(&cid) {
                    Some(block) => out.push(match record_event(source, WriteAt { did, collection, rkey, rev, cid: &cid, update }, block) {
                        Ok(event) => OpOutcome::Event(Box::new(event)),
                        Err(why) => OpOutcome::Invalid(format!("{}: {why}", op.path)),
                    }),
                    None => out.push(OpOutcome::Missing { collection: collection.to_owned(), rkey: rkey.to_owned(), cid, update }),
                }
            }
            ("delete", _) => out.push(OpOutcome::Event(Box::new(NewEvent::repo(
                source.clone(),
                Payload::RecordDelete(RecordDelete {
                    did: did.to_owned(),
                    collection: collection.to_owned(),
                    rkey: rkey.to_owned(),
                    rev: rev.to_owned(),
                }),
            )))),
            (action, _) => out.push(OpOutcome::Invalid(format!("{}: action {action:?} without a CID", op.path))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cid_of, write_car};

    #[test]
    fn ops_become_events_on_followed_collections_only() {
        let record = serde_ipld_dagcbor::to_vec(&serde_json::json!({"$type": "pub.svc.eprint.submission", "title": "T"})).unwrap();
        let cids = [cid_of(&record)];
        let bytes = write_car(cids[0], &[(cids[0], record)]);
        let car = Car::read(&bytes).unwrap();
        let missing: Cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm".parse().unwrap();
        let op = |action: &str, path: &str, cid: Option<Cid>| RepoOp { action: action.into(), path: path.into(), cid, prev: None };
        let ops = vec![
            op("create", "pub.svc.eprint.submission/3k1", Some(cids[0])),
            op("create", "app.bsky.feed.post/3k2", Some(cids[0])),
            op("update", "pub.svc.eprint.submission/3k3", Some(missing)),
            op("delete", "pub.svc.eprint.submission/3k4", None),
            op("create", "nopath", Some(cids[0])),
        ];
        let source = Source::Manual { note: "t".into() };
        let out = op_outcomes(&source, "did:plc:a", "r1", &ops, &car, &["pub.svc.".to_owned()]);
        assert_eq!(out.len(), 4);
        let OpOutcome::Event(create) = &out[0] else { panic!("{out:?}") };
        let Payload::RecordCreate(w) = &create.payload else { panic!() };
        assert_eq!((w.rkey.as_str(), w.record["title"].as_str(), w.cid.as_str()), ("3k1", Some("T"), cids[0].to_string().as_str()));
        assert!(matches!(&out[1], OpOutcome::Missing { update: true, .. }));
        assert!(matches!(&out[2], OpOutcome::Event(e) if matches!(e.payload, Payload::RecordDelete(_))));
        assert!(matches!(&out[3], OpOutcome::Invalid(_)));
    }
}
