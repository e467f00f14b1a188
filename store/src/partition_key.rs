//! How the embedded store's row keys hold a partition: as its text, or packed. Partitions
//! are mostly DIDs and AT URIs, and nearly every DID is a `did:plc` (`did:plc:` and 24
//! base32 characters: 120 bits in 32 bytes), written out in every row of its partition.
//! Packed, a `did:plc` takes 19 bytes instead of 32, and the URI of a record in a `did:plc`
//! repository 18 fewer than its text (the rest of the URI, `/collection/rkey`, stays text).
//!
//! A file's form is fixed when it is made (`EmbeddedStore`): files made before the packed
//! form keep their text keys. Nothing reads a partition back from a key, and no query
//! relies on the order of partitions (a scan and a count stay inside one), so the packed
//! form need only be one-to-one, and it stays valid UTF-8 (redb's key is `(&str, &[u8])`).

use std::borrow::Cow;

/// A file's form of its partitions in its row keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyForm {
    /// Each partition's text.
    Text,
    /// [`pack`]ed.
    Packed,
}

impl KeyForm {
    /// The partition `p` as this form's keys hold it.
    pub(crate) fn partition(self, p: &str) -> Cow<'_, str> {
        match self {
            KeyForm::Text => Cow::Borrowed(p),
            KeyForm::Packed => pack(p),
        }
    }
}

/// The first character of a packed `did:plc`.
const DID: char = '\u{1}';
/// The first character of a packed AT URI of a `did:plc` repository.
const URI: char = '\u{2}';
/// Put before any other text that starts with one of these three characters (or a lower
/// one), so that no text is taken for a packed form.
const ESCAPE: char = '\u{3}';

const PLC: &str = "did:plc:";
const AT_PLC: &str = "at://did:plc:";

/// The 5-bit value of a base32 character of a `did:plc` (RFC 4648's lowercase alphabet).
fn base32(c: u8) -> Option<u128> {
    match c {
        b'a'..=b'z' => Some(u128::from(c - b'a')),
        b'2'..=b'7' => Some(u128::from(c - b'2' + 26)),
        _ => None,
    }
}

/// The 24 characters of a `did:plc` identifier as 18 characters of 7 bits each (126 bits
/// for its 120), or `None` when they are not base32.
fn pack_plc(id: &[u8]) -> Option<[u8; 18]> {
    if id.len() != 24 {
        return None;
    }
    let mut bits: u128 = 0;
    for &c in id {
        bits = (bits << 5) | base32(c)?;
    }
    let mut out = [0u8; 18];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = ((bits >> (7 * (17 - i))) & 0x7f) as u8;
    }
    Some(out)
}

/// `p` packed: a `did:plc` as [`DID`] and its identifier's 120 bits in 18 ASCII characters;
/// an AT URI whose authority is a `did:plc` as [`URI`], those 18 characters, then the rest
/// of the URI as it is; any other text as it is ([`ESCAPE`]d when it starts with a
/// character at or below it).
pub(crate) fn pack(p: &str) -> Cow<'_, str> {
    let packed = |mark: char, id: &str, rest: &str| -> Option<String> {
        let bits = pack_plc(id.as_bytes())?;
        let mut out = String::with_capacity(1 + 18 + rest.len());
        out.push(mark);
        out.extend(bits.iter().map(|b| char::from(*b)));
        out.push_str(rest);
        Some(out)
    };
    if let Some(id) = p.strip_prefix(PLC) {
        if let Some(out) = packed(DID, id, "") {
            return Cow::Owned(out);
        }
    } else if let Some(uri) = p.strip_prefix(AT_PLC) {
        let (id, rest) = uri.split_at(uri.find('/').unwrap_or(uri.len()));
        if let Some(out) = packed(URI, id, rest) {
            return Cow::Owned(out);
        }
    }
    match p.chars().next() {
        Some(c) if c <= ESCAPE => Cow::Owned(format!("{ESCAPE}{p}")),
        _ => Cow::Borrowed(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dids_and_uris_of_plc_repositories_pack_shorter_and_nothing_packs_alike() {
        let did = "did:plc:ewvi7nxzyoun6zhxrhs64oiz";
        let uri = format!("at://{did}/pub.svc.eprint.submission/3l4h2xq7zck2a");
        assert_eq!(pack(did).len(), 19);
        assert_eq!(pack(&uri).len(), uri.len() - 18);
        assert_eq!(&pack(&uri)[19..], "/pub.svc.eprint.submission/3l4h2xq7zck2a");
        assert_eq!(pack("by_name"), "by_name");
        let texts = [
            did.to_owned(),
            uri.clone(),
            format!("at://{did}"),
            "did:plc:ewvi7nxzyoun6zhxrhs64oi".to_owned(),   // 23 characters: text
            "did:plc:ewvi7nxzyoun6zhxrhs64oiz1".to_owned(), // 25: text
            "did:plc:EWVI7NXZYOUN6ZHXRHS64OIZ".to_owned(),  // not base32 lowercase: text
            "did:web:example.com".to_owned(),
            "at://did:web:example.com/c/r".to_owned(),
            "\u{1}".to_owned(),
            "\u{3}x".to_owned(),
            String::new(),
            "*".to_owned(),
            "7d cs.LG".to_owned(),
        ];
        let mut seen = std::collections::HashSet::new();
        for t in &texts {
            let packed = pack(t).into_owned();
            assert!(seen.insert(packed.clone()), "{t:?} packs as another text did: {packed:?}");
        }
        // Every packed text is found apart from every text kept as it is.
        for t in &texts[5..] {
            assert!(!seen.contains(&format!("{DID}{t}")));
        }
        assert_eq!(pack("\u{1}"), "\u{3}\u{1}");
    }

    #[test]
    fn every_did_plc_packs_to_its_own_key() {
        // Identifiers a character apart, in each place.
        let base = b"abcdefghijklmnopqrstuvwx";
        let (mut texts, mut packed) = (std::collections::HashSet::new(), std::collections::HashSet::new());
        for i in 0..24 {
            for c in [b'a', b'2', b'7', b'z'] {
                let mut id = *base;
                id[i] = c;
                let did = format!("did:plc:{}", std::str::from_utf8(&id).unwrap());
                assert_eq!(pack(&did).len(), 19);
                packed.insert(pack(&did).into_owned());
                texts.insert(did);
            }
        }
        assert_eq!(packed.len(), texts.len());
    }
}
