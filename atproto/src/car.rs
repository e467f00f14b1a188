//! CAR v1 files (content-addressed archives), as `#commit` frames and `getRepo` carry them:
//! a DAG-CBOR header `{version: 1, roots: [cid]}`, then blocks, each a varint length, a CID
//! and the block's bytes. Every block's hash is checked against its CID on reading.

use std::collections::HashMap;

use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};
use serde::Deserialize;

/// What is wrong with a CAR file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CarError {
    /// The bytes end or are malformed.
    #[error("malformed CAR: {0}")]
    Malformed(String),
    /// A block's bytes do not hash to its CID.
    #[error("block {0} does not match its CID")]
    HashMismatch(String),
    /// A block uses a hash function this reader does not verify.
    #[error("block {cid} uses unsupported hash 0x{code:x}")]
    UnsupportedHash {
        /// The block's CID.
        cid: String,
        /// The multihash code.
        code: u64,
    },
}

/// The SHA-256 multihash code, the only one AT Protocol repositories use.
const SHA2_256: u64 = 0x12;

#[derive(Deserialize)]
struct Header {
    version: u64,
    #[serde(default)]
    roots: Vec<Cid>,
}

/// A CAR file read into memory, every block verified.
#[derive(Debug, Clone, Default)]
pub struct Car {
    /// The roots named by the header (a commit's CAR has one: the signed commit).
    pub roots: Vec<Cid>,
    blocks: HashMap<Cid, Vec<u8>>,
}

fn varint(input: &mut &[u8]) -> Result<usize, CarError> {
    let (n, rest) = unsigned_varint::decode::usize(input).map_err(|e| CarError::Malformed(format!("bad length: {e}")))?;
    *input = rest;
    Ok(n)
}

fn take<'a>(input: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], CarError> {
    if input.len() < n {
        return Err(CarError::Malformed(format!("{what} runs past the end ({n} bytes wanted, {} left)", input.len())));
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

impl Car {
    /// Reads a CAR file and verifies every block against its CID.
    ///
    /// # Errors
    /// [`CarError`] for truncated or malformed bytes, or a block whose hash is wrong.
    pub fn read(bytes: &[u8]) -> Result<Car, CarError> {
        let mut input = bytes;
        let header_len = varint(&mut input)?;
        let header_bytes = take(&mut input, header_len, "header")?;
        let header: Header = serde_ipld_dagcbor::from_slice(header_bytes).map_err(|e| CarError::Malformed(format!("header: {e}")))?;
        if header.version != 1 {
            return Err(CarError::Malformed(format!("version {} (only 1 is read)", header.version)));
        }
        let mut blocks = HashMap::new();
        while !input.is_empty() {
            let len = varint(&mut input)?;
            let mut section = take(&mut input, len, "block")?;
            let cid = Cid::read_bytes(&mut section).map_err(|e| CarError::Malformed(format!("block CID: {e}")))?;
            verify_block(&cid, section)?;
            blocks.insert(cid, section.to_vec());
        }
        Ok(Car { roots: header.roots, blocks })
    }

    /// A block's bytes.
    pub fn get(&self, cid: &Cid) -> Option<&[u8]> {
        self.blocks.get(cid).map(Vec::as_slice)
    }

    /// Every block, in no particular order.
    pub fn blocks(&self) -> impl Iterator<Item = (&Cid, &[u8])> {
        self.blocks.iter().map(|(cid, data)| (cid, data.as_slice()))
    }

    /// The number of blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether the file holds no block.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// Checks that `data` hashes to `cid`.
///
/// # Errors
/// [`CarError::HashMismatch`], or [`CarError::UnsupportedHash`] for a hash other than SHA-256.
pub fn verify_block(cid: &Cid, data: &[u8]) -> Result<(), CarError> {
    let code = cid.hash().code();
    if code != SHA2_256 {
        return Err(CarError::UnsupportedHash { cid: cid.to_string(), code });
    }
    if Code::Sha2_256.digest(data).digest() != cid.hash().digest() {
        return Err(CarError::HashMismatch(cid.to_string()));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A CAR file of `blocks` (DAG-CBOR), rooted at the first.
    pub(crate) fn car_of(blocks: &[Vec<u8>]) -> (Vec<u8>, Vec<Cid>) {
        let cids: Vec<Cid> = blocks.iter().map(|b| Cid::new_v1(0x71, Code::Sha2_256.digest(b))).collect();
        #[derive(serde::Serialize)]
        struct H<'a> {
            version: u64,
            roots: &'a [Cid],
        }
        let header = serde_ipld_dagcbor::to_vec(&H { version: 1, roots: &cids[..1] }).unwrap();
        let mut out = Vec::new();
        let mut buf = unsigned_varint::encode::usize_buffer();
        out.extend_from_slice(unsigned_varint::encode::usize(header.len(), &mut buf));
        out.extend_from_slice(&header);
        for (cid, block) in cids.iter().zip(blocks) {
            let cid_bytes = cid.to_bytes();
            out.extend_from_slice(unsigned_varint::encode::usize(cid_bytes.len() + block.len(), &mut buf));
            out.extend_from_slice(&cid_bytes);
            out.extend_from_slice(block);
        }
        (out, cids)
    }

    #[test]
    fn reads_blocks_and_roots() {
        let blocks = vec![serde_ipld_dagcbor::to_vec(&"root").unwrap(), serde_ipld_dagcbor::to_vec(&42u32).unwrap()];
        let (bytes, cids) = car_of(&blocks);
        let car = Car::read(&bytes).unwrap();
        assert_eq!(car.roots, vec![cids[0]]);
        assert_eq!(car.len(), 2);
        assert_eq!(car.get(&cids[1]), Some(blocks[1].as_slice()));
    }

    #[test]
    fn a_tampered_block_is_refused() {
        let blocks = vec![serde_ipld_dagcbor::to_vec(&"root").unwrap()];
        let (mut bytes, _) = car_of(&blocks);
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(matches!(Car::read(&bytes), Err(CarError::HashMismatch(_))));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let blocks = vec![serde_ipld_dagcbor::to_vec(&"root").unwrap(), serde_ipld_dagcbor::to_vec(&vec![1u8; 40]).unwrap()];
        let (bytes, _) = car_of(&blocks);
        for n in 0..bytes.len() {
            // Cutting exactly between blocks leaves a valid, shorter CAR.
            let _ = Car::read(&bytes[..n]);
        }
        assert!(Car::read(&bytes[..bytes.len() - 3]).is_err());
    }
}
