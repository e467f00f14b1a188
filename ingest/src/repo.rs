//! Repository building blocks: record CIDs and TIDs.

use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};

use crate::IngestError;

/// The multicodec of DAG-CBOR.
const DAG_CBOR: u64 = 0x71;

/// The CID (v1, DAG-CBOR, SHA-256) of a record in the AT Protocol JSON data model, as a
/// repository would compute it.
///
/// # Errors
/// [`IngestError::Encode`] for a value DAG-CBOR cannot represent (such as a float).
pub fn record_cid(record: &serde_json::Value) -> Result<String, IngestError> {
    let bytes = serde_ipld_dagcbor::to_vec(record).map_err(|e| IngestError::Encode(e.to_string()))?;
    Ok(Cid::new_v1(DAG_CBOR, Code::Sha2_256.digest(&bytes)).to_string())
}

const TID_ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";

/// A TID (timestamp identifier) from microseconds since the epoch and a 10-bit clock id.
pub fn tid(micros: u64, clock_id: u16) -> String {
    let v = ((micros & ((1 << 53) - 1)) << 10) | u64::from(clock_id & 0x3ff);
    (0..13).rev().map(|i| TID_ALPHABET[((v >> (i * 5)) & 31) as usize] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tids_sort_by_time_and_are_valid() {
        let a = tid(1_700_000_000_000_000, 1);
        let b = tid(1_700_000_000_000_001, 0);
        assert!(a < b);
        assert!(lexicons::formats::is_tid(&a), "{a}");
    }

    #[test]
    fn cid_is_stable_and_key_order_independent() {
        let a = record_cid(&serde_json::json!({"b": 1, "a": "x"})).unwrap();
        let b = record_cid(&serde_json::json!({"a": "x", "b": 1})).unwrap();
        assert_eq!(a, b);
        assert!(a.starts_with("bafyrei"), "{a}");
        // DAG-CBOR orders map keys by length first: "b" before "aa".
        let bytes = serde_ipld_dagcbor::to_vec(&serde_json::json!({"aa": 1, "b": 2})).unwrap();
        assert_eq!(&bytes[..3], &[0xa2, 0x61, b'b']);
    }
}
