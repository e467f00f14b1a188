//! Signed repository commits: the signature check, and a commit's record operations turned
//! into events.

use std::collections::BTreeMap;

use cid::Cid;
use event_schema::{NewEvent, Payload, RecordDelete, RecordWrite, Source};
use ipld_core::ipld::Ipld;

use crate::car::Car;
use crate::data_model;
use crate::frame::RepoOp;
use crate::identity::{PublicKey, SignatureError};

/// Why a commit or one of its operations is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// The commit block is missing or is not a commit.
    #[error("malformed commit: {0}")]
    Malformed(String),
    /// The commit names another repository.
    #[error("the commit is for {found}, not {expected}")]
    WrongRepo {
        /// The repository the frame names.
        expected: String,
        /// The one the commit names.
        found: String,
    },
    /// The signature does not verify.
    #[error("bad commit signature: {0}")]
    Signature(#[from] SignatureError),
}

/// The fields of a signed commit svc uses.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedCommit {
    /// The repository DID.
    pub did: String,
    /// The revision.
    pub rev: String,
    /// The root of the repository's MST.
    pub data: Cid,
}

/// Reads the commit `root` from `car` and checks that it is `did`'s and signed by `key`.
///
/// # Errors
/// [`CommitError`] saying what is wrong.
pub fn verify_commit(car: &Car, root: &Cid, did: &str, key: &PublicKey) -> Result<SignedCommit, CommitError> {
    let (commit, unsigned, sig) = read_commit(car, root)?;
    if commit.did != did {
        return Err(CommitError::WrongRepo { expected: did.to_owned(), found: commit.did });
    }
    key.verify(&unsigned, &sig)?;
    Ok(commit)
}

/// The commit, its unsigned DAG-CBOR bytes and its signature.
fn read_commit(car: &Car, root: &Cid) -> Result<(SignedCommit, Vec<u8>, Vec<u8>), CommitError> {
    let bad = |why: &str| CommitError::Malformed(why.to_owned());
    let block = car.get(root).ok_or_else(|| bad("the commit block is not in the CAR"))?;
    let Ipld::Map(mut fields) = serde_ipld_dagcbor::from_slice::<Ipld>(block).map_err(|e| CommitError::Malformed(e.to_string()))? else {
        return Err(bad("the commit is not a map"));
    };
    let Some(Ipld::Bytes(sig)) = fields.remove("sig") else { return Err(bad("no signature")) };
    let text = |fields: &BTreeMap<String, Ipld>, k: &str| match fields.get(k) {
        Some(Ipld::String(s)) => Ok(s.clone()),
        _ => Err(CommitError::Malformed(format!("no {k}"))),
    };
    let did = text(&fields, "did")?;
    let rev = text(&fields, "rev")?;
    let Some(Ipld::Link(data)) = fields.get("data").cloned() else { return Err(bad("no data root")) };
    match fields.get("version") {
        Some(Ipld::Integer(2 | 3)) => {}
        other => return Err(CommitError::Malformed(format!("unsupported commit version {other:?}"))),
    }
    let unsigned = serde_ipld_dagcbor::to_vec(&Ipld::Map(fields)).map_err(|e| CommitError::Malformed(e.to_string()))?;
    Ok((SignedCommit { did, rev, data }, unsigned, sig))
}

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
    use crate::car::tests::car_of;
    use ecdsa::signature::Signer;

    fn signed_commit(secret: &k256::ecdsa::SigningKey, did: &str) -> Vec<u8> {
        let data: Cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm".parse().unwrap();
        let mut fields: BTreeMap<String, Ipld> = [
            ("did".to_owned(), Ipld::String(did.into())),
            ("version".to_owned(), Ipld::Integer(3)),
            ("data".to_owned(), Ipld::Link(data)),
            ("rev".to_owned(), Ipld::String("3l2xyz".into())),
            ("prev".to_owned(), Ipld::Null),
        ]
        .into();
        let unsigned = serde_ipld_dagcbor::to_vec(&Ipld::Map(fields.clone())).unwrap();
        let sig: k256::ecdsa::Signature = secret.sign(&unsigned);
        let sig = sig.normalize_s().unwrap_or(sig);
        fields.insert("sig".into(), Ipld::Bytes(sig.to_bytes().to_vec()));
        serde_ipld_dagcbor::to_vec(&Ipld::Map(fields)).unwrap()
    }

    #[test]
    fn a_signed_commit_verifies_and_a_tampered_one_does_not() {
        let secret = k256::ecdsa::SigningKey::from_slice(&[3u8; 32]).unwrap();
        let key = PublicKey::from_k256(secret.verifying_key());
        let (bytes, cids) = car_of(&[signed_commit(&secret, "did:plc:a")]);
        let car = Car::read(&bytes).unwrap();
        let commit = verify_commit(&car, &cids[0], "did:plc:a", &key).unwrap();
        assert_eq!(commit.rev, "3l2xyz");
        assert!(matches!(verify_commit(&car, &cids[0], "did:plc:b", &key), Err(CommitError::WrongRepo { .. })));
        let other = PublicKey::from_k256(k256::ecdsa::SigningKey::from_slice(&[4u8; 32]).unwrap().verifying_key());
        assert_eq!(verify_commit(&car, &cids[0], "did:plc:a", &other), Err(CommitError::Signature(SignatureError::Mismatch)));
    }

    #[test]
    fn ops_become_events_on_followed_collections_only() {
        let record = serde_ipld_dagcbor::to_vec(&serde_json::json!({"$type": "pub.svc.eprint.submission", "title": "T"})).unwrap();
        let (bytes, cids) = car_of(&[record]);
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
