//! Signed repository commits: reading a commit block and checking its signature.

use std::collections::BTreeMap;

use cid::Cid;
use ipld_core::ipld::Ipld;

use crate::car::Car;
use crate::identity::{PublicKey, SignatureError};
/// Why a commit is refused.
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
}
