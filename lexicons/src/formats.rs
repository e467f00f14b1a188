//! The lexicon string formats (`did`, `at-uri`, `datetime`, …), checked by hand so that the
//! hot path needs no regex engine. Each detail request checks an AT URI twice, so the
//! character classes are tables: one load per byte instead of a chain of comparisons.

/// A character class: ASCII letters and digits, and `extra`.
const fn class(extra: &[u8]) -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        table[extra[i] as usize] = true;
        i += 1;
    }
    table
}

/// The characters of a DID's method-specific identifier.
const DID_ID: [bool; 256] = class(b".-_:%");
/// The characters of a record key.
const RECORD_KEY: [bool; 256] = class(b"._:~-");
/// The characters of an NSID segment or a handle label.
const SEGMENT: [bool; 256] = class(b"-");

/// Whether every byte of `s` is in `class`.
fn all_in(s: &str, class: &[bool; 256]) -> bool {
    s.bytes().all(|b| class[b as usize])
}

/// Whether `s` is a syntactically valid DID (`did:<method>:<id>`).
pub fn is_did(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("did:") else { return false };
    let Some((method, id)) = rest.split_once(':') else { return false };
    s.len() <= 2048
        && !method.is_empty()
        && method.bytes().all(|b| b.is_ascii_lowercase())
        && !id.is_empty()
        && all_in(id, &DID_ID)
        && !id.ends_with(':')
        && !id.ends_with('%')
}

/// Whether `s` is a valid handle (a domain name with at least two labels).
pub fn is_handle(s: &str) -> bool {
    let label_ok = |l: &str| !l.is_empty() && l.len() <= 63 && all_in(l, &SEGMENT) && !l.starts_with('-') && !l.ends_with('-');
    let Some((_, tld)) = s.rsplit_once('.') else { return false };
    s.len() <= 253 && s.split('.').all(label_ok) && tld.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
}

/// Whether `s` is a valid NSID (`pub.svc.eprint.submission`): at least three segments of
/// 1 to 63 letters, digits and hyphens, the last (the name) starting with a letter and
/// without hyphens. One pass over the bytes: it runs twice per detail request.
pub fn is_nsid(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.len() > 317 {
        return false;
    }
    let (mut segments, mut start) = (0, 0);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'.' {
            if !(1..=63).contains(&(i - start)) {
                return false;
            }
            segments += 1;
            start = i + 1;
        } else if !SEGMENT[b as usize] {
            return false;
        }
    }
    let name = &bytes[start..];
    segments >= 2 && (1..=63).contains(&name.len()) && name[0].is_ascii_alphabetic() && !name.contains(&b'-')
}

/// Whether `s` is a valid record key.
pub fn is_record_key(s: &str) -> bool {
    !s.is_empty() && s.len() <= 512 && s != "." && s != ".." && all_in(s, &RECORD_KEY)
}

/// A parsed AT URI: `at://<authority>[/<collection>[/<rkey>]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtUri<'a> {
    /// The repository DID or handle.
    pub authority: &'a str,
    /// The collection NSID, when present.
    pub collection: Option<&'a str>,
    /// The record key, when present.
    pub rkey: Option<&'a str>,
}

/// Parses an AT URI, or `None` when it is not one.
pub fn parse_at_uri(s: &str) -> Option<AtUri<'_>> {
    if s.len() > 8192 {
        return None;
    }
    let rest = s.strip_prefix("at://")?;
    let rest = &rest[..rest.bytes().position(|b| b == b'?' || b == b'#').unwrap_or(rest.len())];
    let (authority, path) = rest.split_once('/').map_or((rest, None), |(a, p)| (a, Some(p)));
    if !(is_did(authority) || is_handle(authority)) {
        return None;
    }
    let (collection, rkey) = match path.map(|p| p.split_once('/')) {
        Some(Some((c, r))) => (Some(c), Some(r)),
        Some(None) => (path, None),
        None => (None, None),
    };
    let (collection, rkey) = (collection.filter(|c| !c.is_empty()), rkey.filter(|r| !r.is_empty()));
    if collection.is_some_and(|c| !is_nsid(c)) || rkey.is_some_and(|r| !is_record_key(r)) {
        return None;
    }
    if rkey.is_some() && collection.is_none() {
        return None;
    }
    Some(AtUri { authority, collection, rkey })
}

/// Whether `s` is an RFC 3339 datetime with a time zone, as lexicons require.
pub fn is_datetime(s: &str) -> bool {
    s.len() <= 64 && s.as_bytes().get(10) == Some(&b'T') && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

/// Whether `s` looks like a CID string (CIDv1 base32 `b…` or CIDv0 `Qm…`).
pub fn is_cid(s: &str) -> bool {
    (8..=256).contains(&s.len())
        && ((s.starts_with('b') && s.bytes().skip(1).all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b)))
            || (s.starts_with("Qm") && s.len() == 46 && s.bytes().all(|b| b.is_ascii_alphanumeric())))
}

/// Whether `s` is an absolute URI (`scheme:rest`).
pub fn is_uri(s: &str) -> bool {
    match s.split_once(':') {
        Some((scheme, rest)) => {
            !scheme.is_empty()
                && scheme.as_bytes()[0].is_ascii_alphabetic()
                && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && !rest.is_empty()
                && !s.contains(char::is_whitespace)
                && s.len() <= 8192
        }
        None => false,
    }
}

/// Whether `s` is a TID (13 base32-sortable characters).
pub fn is_tid(s: &str) -> bool {
    s.len() == 13
        && s.bytes().all(|b| b"234567abcdefghijklmnopqrstuvwxyz".contains(&b))
        && !s.starts_with(|c: char| "klmnopqrstuvwxyz".contains(c))
}

/// Checks `value` against a lexicon string format; unknown formats pass.
pub fn check(format: &str, value: &str) -> bool {
    match format {
        "did" => is_did(value),
        "handle" => is_handle(value),
        "at-identifier" => is_did(value) || is_handle(value),
        "nsid" => is_nsid(value),
        "at-uri" => parse_at_uri(value).is_some(),
        "datetime" => is_datetime(value),
        "cid" => is_cid(value),
        "uri" => is_uri(value),
        "tid" => is_tid(value),
        "record-key" => is_record_key(value),
        "language" => !value.is_empty() && value.len() <= 128 && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert!(is_did("did:plc:ewvi7nxzyoun6zhxrhs64oiz"));
        assert!(is_did("did:web:example.com"));
        for bad in ["did:plc:", "did::x", "plc:x", "did:PLC:x", "did:plc:a b", ""] {
            assert!(!is_did(bad), "{bad}");
        }
        assert!(parse_at_uri("at://did:plc:abc/pub.svc.eprint.submission/3kabc").is_some());
        assert!(parse_at_uri("at://alice.test").is_some());
        let parsed = parse_at_uri("at://did:plc:abc/pub.svc.eprint.submission/3kabc?x=1#y").unwrap();
        assert_eq!((parsed.authority, parsed.collection, parsed.rkey), ("did:plc:abc", Some("pub.svc.eprint.submission"), Some("3kabc")));
        let parsed = parse_at_uri("at://did:plc:abc/pub.svc.eprint.submission/").unwrap();
        assert_eq!((parsed.collection, parsed.rkey), (Some("pub.svc.eprint.submission"), None));
        assert_eq!(parse_at_uri("at://did:plc:abc/").map(|u| u.collection), Some(None));
        for bad in [
            "http://x",
            "at://",
            "at://did:plc:abc/notnsid/x",
            "at://did:plc:abc/pub.svc.a.b/bad key",
            "at://nope/pub.svc.a.b/k",
            "at://did:plc:abc//k",
            "at://did:plc:abc/pub.svc.a.b/k/more",
        ] {
            assert!(parse_at_uri(bad).is_none(), "{bad}");
        }
        assert!(is_datetime("2025-03-18T00:00:00.000Z"));
        assert!(is_datetime("2025-03-18T00:00:00+02:00"));
        assert!(!is_datetime("2025-03-18"));
        assert!(is_cid("bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"));
        assert!(!is_cid("xyz"));
        assert!(is_handle("alice.test") && is_handle("a-b.c.example"));
        for bad in ["alice", "-a.test", "a-.test", "alice.", ".alice.test", "a..test", "alice.1test", "a_b.test", ""] {
            assert!(!is_handle(bad), "{bad}");
        }
        assert!(is_nsid("pub.svc.eprint.submission") && is_nsid("com.example.fooBar") && is_nsid("a-b.c.d"));
        for bad in ["pub.svc", "pub..svc.x", "pub.svc.", ".pub.svc.x", "pub.svc.x-y", "pub.svc.1x", "pub.svc.a b", ""] {
            assert!(!is_nsid(bad), "{bad}");
        }
        assert!(is_tid("3lbxqprzvpc2a") && !is_tid("3lbxqprzvpc2") && !is_tid("zzzzzzzzzzzzz"));
    }
}
