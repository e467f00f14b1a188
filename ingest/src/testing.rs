//! Builders of well-formed, signed firehose frames, for tests and benchmarks (what a PDS
//! sends for a `createRecord`).

use std::collections::BTreeMap;

use cid::Cid;
use ecdsa::signature::Signer;
use ipld_core::ipld::Ipld;
use multihash_codetable::{Code, MultihashDigest};

/// The CID (v1, DAG-CBOR, SHA-256) of a block.
pub fn cid_of(block: &[u8]) -> Cid {
    Cid::new_v1(0x71, Code::Sha2_256.digest(block))
}

fn varint(mut n: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            return out.push(byte);
        }
        out.push(byte | 0x80);
    }
}

/// A CAR v1 file of `blocks`, rooted at `root`.
pub fn write_car(root: Cid, blocks: &[(Cid, Vec<u8>)]) -> Vec<u8> {
    let header = serde_ipld_dagcbor::to_vec(&Ipld::Map(
        [("version".to_owned(), Ipld::Integer(1)), ("roots".to_owned(), Ipld::List(vec![Ipld::Link(root)]))].into(),
    ))
    .expect("a CAR header encodes");
    let mut car = Vec::new();
    varint(header.len(), &mut car);
    car.extend(header);
    for (cid, block) in blocks {
        let cid = cid.to_bytes();
        varint(cid.len() + block.len(), &mut car);
        car.extend(cid);
        car.extend(block);
    }
    car
}

/// A `#commit` frame with sequence number `seq` creating one `pub.svc.eprint.submission`
/// in `did`'s repository, signed with `secret`.
pub fn commit_frame(secret: &k256::ecdsa::SigningKey, did: &str, seq: i64) -> Vec<u8> {
    let rkey = format!("3k{seq:011}");
    let record = serde_ipld_dagcbor::to_vec(&serde_json::json!({
        "$type": "pub.svc.eprint.submission",
        "title": format!("A study of widgets, part {seq}"),
        "abstract": "We study widgets of every kind and find that most of them are useful, some of them are not, and a few are beautiful.",
        "authors": [{"did": did, "name": "A. Author", "order": 1}, {"name": "B. Coauthor", "order": 2}],
        "fields": ["cs.DL", "cs.IR"],
        "createdAt": "2026-11-22T00:00:00.000Z",
    }))
    .expect("a record encodes");
    let record_cid = cid_of(&record);
    let rev = format!("3l{seq:011}");
    let mut commit: BTreeMap<String, Ipld> = [
        ("did".to_owned(), Ipld::String(did.into())),
        ("version".to_owned(), Ipld::Integer(3)),
        ("data".to_owned(), Ipld::Link(record_cid)),
        ("rev".to_owned(), Ipld::String(rev.clone())),
        ("prev".to_owned(), Ipld::Null),
    ]
    .into();
    let sig: k256::ecdsa::Signature = secret.sign(&serde_ipld_dagcbor::to_vec(&Ipld::Map(commit.clone())).expect("a commit encodes"));
    commit.insert("sig".into(), Ipld::Bytes(sig.normalize_s().unwrap_or(sig).to_bytes().to_vec()));
    let commit = serde_ipld_dagcbor::to_vec(&Ipld::Map(commit)).expect("a commit encodes");
    let commit_cid = cid_of(&commit);
    let car = write_car(commit_cid, &[(commit_cid, commit), (record_cid, record)]);
    let op: BTreeMap<String, Ipld> = [
        ("action".to_owned(), Ipld::String("create".into())),
        ("path".to_owned(), Ipld::String(format!("pub.svc.eprint.submission/{rkey}"))),
        ("cid".to_owned(), Ipld::Link(record_cid)),
    ]
    .into();
    let body: BTreeMap<String, Ipld> = [
        ("seq".to_owned(), Ipld::Integer(i128::from(seq))),
        ("repo".to_owned(), Ipld::String(did.into())),
        ("commit".to_owned(), Ipld::Link(commit_cid)),
        ("rev".to_owned(), Ipld::String(rev)),
        ("since".to_owned(), Ipld::Null),
        ("blocks".to_owned(), Ipld::Bytes(car)),
        ("ops".to_owned(), Ipld::List(vec![Ipld::Map(op)])),
        ("blobs".to_owned(), Ipld::List(vec![])),
        ("rebase".to_owned(), Ipld::Bool(false)),
        ("tooBig".to_owned(), Ipld::Bool(false)),
        ("time".to_owned(), Ipld::String("2026-11-22T00:00:00.000Z".into())),
    ]
    .into();
    let header: BTreeMap<String, Ipld> = [("op".to_owned(), Ipld::Integer(1)), ("t".to_owned(), Ipld::String("#commit".into()))].into();
    let mut out = serde_ipld_dagcbor::to_vec(&Ipld::Map(header)).expect("a header encodes");
    out.extend(serde_ipld_dagcbor::to_vec(&Ipld::Map(body)).expect("a body encodes"));
    out
}
