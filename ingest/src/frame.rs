//! Frames of `com.atproto.sync.subscribeRepos`: each WebSocket message is a DAG-CBOR header
//! (`{op: 1, t: "#commit"}`, or `{op: -1}` for an error) followed by a DAG-CBOR body.

use cid::Cid;
use serde::Deserialize;

/// A frame that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed frame: {0}")]
pub struct FrameError(pub String);

#[derive(Deserialize)]
struct Header {
    op: i64,
    #[serde(default)]
    t: Option<String>,
}

/// One operation of a commit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RepoOp {
    /// `create`, `update` or `delete`.
    pub action: String,
    /// `<collection>/<rkey>`.
    pub path: String,
    /// The new record's CID (none for a delete).
    #[serde(default)]
    pub cid: Option<Cid>,
    /// The previous record's CID (updates and deletes, on recent servers).
    #[serde(default)]
    pub prev: Option<Cid>,
}

/// `#commit`: a repository changed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Commit {
    /// The stream's sequence number.
    pub seq: i64,
    /// The repository DID.
    pub repo: String,
    /// The CID of the signed commit (the CAR's root).
    pub commit: Cid,
    /// The commit's revision (a TID).
    pub rev: String,
    /// The revision this commit follows, if any.
    #[serde(default)]
    pub since: Option<String>,
    /// A CAR of the commit and the changed blocks.
    #[serde(with = "serde_bytes")]
    pub blocks: Vec<u8>,
    /// The record operations.
    #[serde(default)]
    pub ops: Vec<RepoOp>,
    /// The blocks were left out because there were too many: fetch the records instead.
    #[serde(default)]
    pub too_big: bool,
    /// When the server emitted it.
    #[serde(default)]
    pub time: String,
}

/// `#sync`: a repository's state was reset to a commit (its history is not given).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Sync {
    /// The stream's sequence number.
    pub seq: i64,
    /// The repository DID.
    pub did: String,
    /// The commit's revision.
    pub rev: String,
    /// A CAR holding the signed commit.
    #[serde(with = "serde_bytes")]
    pub blocks: Vec<u8>,
}

/// `#identity`: a DID's handle or document may have changed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Identity {
    /// The stream's sequence number.
    pub seq: i64,
    /// The DID.
    pub did: String,
    /// The current handle, if the server tells it.
    #[serde(default)]
    pub handle: Option<String>,
}

/// `#account`: an account's hosting status changed.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Account {
    /// The stream's sequence number.
    pub seq: i64,
    /// The DID.
    pub did: String,
    /// Whether the account's content may be shown.
    pub active: bool,
    /// Why not: `takendown`, `suspended`, `deactivated`, `deleted`, …
    #[serde(default)]
    pub status: Option<String>,
}

/// `#info`: a message from the server, such as `OutdatedCursor`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Info {
    /// The message's name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub message: Option<String>,
}

/// An error frame; the server closes the stream after it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ErrorFrame {
    /// The error name, e.g. `FutureCursor`, `ConsumerTooSlow`.
    pub error: String,
    /// Free text.
    #[serde(default)]
    pub message: Option<String>,
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// `#commit`.
    Commit(Box<Commit>),
    /// `#sync`.
    Sync(Sync),
    /// `#identity`.
    Identity(Identity),
    /// `#account`.
    Account(Account),
    /// `#info`.
    Info(Info),
    /// An error frame.
    Error(ErrorFrame),
    /// A message type this reader does not know (skipped, as the spec asks), with its seq if
    /// the body has one.
    Unknown {
        /// The type, e.g. `#handle`.
        t: String,
        /// Its sequence number, if any.
        seq: Option<i64>,
    },
}

impl Frame {
    /// The sequence number, for frames that have one.
    pub fn seq(&self) -> Option<i64> {
        match self {
            Frame::Commit(c) => Some(c.seq),
            Frame::Sync(s) => Some(s.seq),
            Frame::Identity(i) => Some(i.seq),
            Frame::Account(a) => Some(a.seq),
            Frame::Unknown { seq, .. } => *seq,
            Frame::Info(_) | Frame::Error(_) => None,
        }
    }

    /// Decodes one binary WebSocket message.
    ///
    /// # Errors
    /// [`FrameError`] for anything that is not a header and a body of the right shape.
    pub fn decode(bytes: &[u8]) -> Result<Frame, FrameError> {
        let mut rest = bytes;
        let header: Header = serde_ipld_dagcbor::de::from_reader_once(&mut rest).map_err(|e| FrameError(format!("header: {e}")))?;
        fn body<T: for<'de> Deserialize<'de>>(rest: &[u8], t: &str) -> Result<T, FrameError> {
            serde_ipld_dagcbor::from_slice(rest).map_err(|e| FrameError(format!("{t} body: {e}")))
        }
        match (header.op, header.t.as_deref()) {
            (-1, _) => Ok(Frame::Error(body(rest, "error")?)),
            (1, Some("#commit")) => Ok(Frame::Commit(Box::new(body(rest, "#commit")?))),
            (1, Some("#sync")) => Ok(Frame::Sync(body(rest, "#sync")?)),
            (1, Some("#identity")) => Ok(Frame::Identity(body(rest, "#identity")?)),
            (1, Some("#account")) => Ok(Frame::Account(body(rest, "#account")?)),
            (1, Some("#info")) => Ok(Frame::Info(body(rest, "#info")?)),
            (1, Some(t)) => {
                #[derive(Deserialize)]
                struct Seq {
                    #[serde(default)]
                    seq: Option<i64>,
                }
                let seq = serde_ipld_dagcbor::from_slice::<Seq>(rest).ok().and_then(|s| s.seq);
                Ok(Frame::Unknown { t: t.to_owned(), seq })
            }
            (op, t) => Err(FrameError(format!("unknown header op {op} t {t:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(header: &impl serde::Serialize, body: &impl serde::Serialize) -> Vec<u8> {
        let mut out = serde_ipld_dagcbor::to_vec(header).unwrap();
        out.extend(serde_ipld_dagcbor::to_vec(body).unwrap());
        out
    }

    #[test]
    fn decodes_identity_account_info_and_errors() {
        #[derive(serde::Serialize)]
        struct H<'a> {
            op: i64,
            t: &'a str,
        }
        let id = message(&H { op: 1, t: "#identity" }, &serde_json::json!({"seq": 7, "did": "did:plc:a", "handle": "a.test", "time": "x"}));
        assert_eq!(
            Frame::decode(&id).unwrap(),
            Frame::Identity(Identity { seq: 7, did: "did:plc:a".into(), handle: Some("a.test".into()) })
        );
        let acct = message(
            &H { op: 1, t: "#account" },
            &serde_json::json!({"seq": 8, "did": "did:plc:a", "active": false, "status": "takendown", "time": "x"}),
        );
        assert_eq!(Frame::decode(&acct).unwrap().seq(), Some(8));
        let info = message(&H { op: 1, t: "#info" }, &serde_json::json!({"name": "OutdatedCursor"}));
        assert!(matches!(Frame::decode(&info).unwrap(), Frame::Info(i) if i.name == "OutdatedCursor"));
        let err = message(&serde_json::json!({"op": -1}), &serde_json::json!({"error": "FutureCursor", "message": "m"}));
        assert!(matches!(Frame::decode(&err).unwrap(), Frame::Error(e) if e.error == "FutureCursor"));
        let unknown = message(&H { op: 1, t: "#labels" }, &serde_json::json!({"seq": 9}));
        assert_eq!(Frame::decode(&unknown).unwrap(), Frame::Unknown { t: "#labels".into(), seq: Some(9) });
    }

    #[test]
    fn garbage_and_truncations_are_errors() {
        let id = message(&serde_json::json!({"op": 1, "t": "#identity"}), &serde_json::json!({"seq": 7, "did": "did:plc:a"}));
        for n in 0..id.len() {
            assert!(Frame::decode(&id[..n]).is_err(), "a frame cut at {n} decoded");
        }
        assert!(Frame::decode(&[0xff, 0x00, 0x13]).is_err());
    }
}
