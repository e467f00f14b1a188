//! A DID as the store's keys hold it: a `did:plc` (all but a handful of the network's) in
//! 16 bytes instead of 32, any other DID as its text.
//!
//! A `did:plc` is `did:plc:` and 24 characters of base32 (`a`–`z`, `2`–`7`): 120 bits. Its
//! key is [`MARK`] then those bits in 15 bytes, each character numbered in the order its
//! byte sorts, so keys of `did:plc`s sort as their texts do. [`MARK`] sorts before every
//! text DID (`did:` starts with `d`), so a key names its form by its first byte, and a
//! reader takes keys written as text (by an earlier svc) as well.

/// The first byte of a compact `did:plc` key.
pub const MARK: u8 = 1;

/// The bytes a compact `did:plc` key takes.
pub const LEN: usize = 16;

const PLC: &str = "did:plc:";

/// The base32 characters of a `did:plc`, in the order their bytes sort: a character's place
/// here is its 5-bit code.
const ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";

fn code(c: u8) -> Option<u8> {
    match c {
        b'2'..=b'7' => Some(c - b'2'),
        b'a'..=b'z' => Some(c - b'a' + 6),
        _ => None,
    }
}

/// The key of `did`: compact for a `did:plc`, else its text.
pub fn encode(did: &str) -> Vec<u8> {
    compact(did).map_or_else(|| did.as_bytes().to_vec(), |k| k.to_vec())
}

/// The compact key of a `did:plc`, or `None` for any other DID.
fn compact(did: &str) -> Option<[u8; LEN]> {
    let id = did.strip_prefix(PLC)?.as_bytes();
    if id.len() != 24 {
        return None;
    }
    let mut bits: u128 = 0;
    for &c in id {
        bits = (bits << 5) | u128::from(code(c)?);
    }
    let mut key = [0; LEN];
    key[0] = MARK;
    key[1..].copy_from_slice(&bits.to_be_bytes()[1..]);
    Some(key)
}

/// The DID a key starts with and the bytes after it: a compact key's 16 bytes, or a text
/// DID up to the first `stop` byte (or the end). `None` when the bytes are neither.
pub fn decode(key: &[u8], stop: u8) -> Option<(String, &[u8])> {
    if key.first() == Some(&MARK) {
        let body = key.get(1..LEN)?;
        let mut bytes = [0; LEN];
        bytes[1..].copy_from_slice(body);
        let bits = u128::from_be_bytes(bytes);
        let mut did = String::with_capacity(PLC.len() + 24);
        did.push_str(PLC);
        for i in (0..24).rev() {
            did.push(ALPHABET[((bits >> (5 * i)) & 31) as usize] as char);
        }
        return Some((did, &key[LEN..]));
    }
    let end = key.iter().position(|b| *b == stop).unwrap_or(key.len());
    let did = std::str::from_utf8(&key[..end]).ok().filter(|d| d.starts_with("did:"))?;
    Some((did.to_owned(), &key[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plc_did_takes_sixteen_bytes_and_comes_back_whole() {
        for did in [
            "did:plc:ewvi7nxzyoun6zhxrhs64oiz",
            "did:plc:2222222222222222222222aa",
            "did:plc:zzzzzzzzzzzzzzzzzzzzzzzz",
            "did:plc:777777777777777777777777",
        ] {
            let key = encode(did);
            assert_eq!((key.len(), key[0]), (LEN, MARK), "{did}");
            let mut tailed = key.clone();
            tailed.extend_from_slice(b"/3kabc");
            assert_eq!(decode(&tailed, b'/'), Some((did.to_owned(), &b"/3kabc"[..])));
        }
    }

    #[test]
    fn other_dids_stay_text_and_are_read_up_to_their_stop() {
        for did in ["did:web:example.com", "did:plc:short", "did:plc:ewvi7nxzyoun6zhxrhs64oi1", "did:plc:EWVI7NXZYOUN6ZHXRHS64OIZ"] {
            assert_eq!(encode(did), did.as_bytes());
        }
        assert_eq!(decode(b"did:web:example.com/x", b'/'), Some(("did:web:example.com".to_owned(), &b"/x"[..])));
        assert_eq!(decode(b"did:web:example.com", 0), Some(("did:web:example.com".to_owned(), &b""[..])));
        assert_eq!(decode(b"at://x", b'/'), None);
        assert_eq!(decode(&[MARK, 1, 2], 0), None, "a compact key cut short");
    }

    #[test]
    fn compact_keys_sort_as_their_dids_do() {
        let mut dids: Vec<String> = (0..500u64)
            .map(|i| {
                let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let id: String = (0..24).map(|j| ALPHABET[((x >> (j * 2 % 60)) as usize + j) % 32] as char).collect();
                format!("{PLC}{id}")
            })
            .collect();
        dids.sort();
        let keys: Vec<Vec<u8>> = dids.iter().map(|d| encode(d)).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        assert!(encode(&dids[0]) < b"did:".to_vec(), "compact keys sort before text ones");
    }
}
