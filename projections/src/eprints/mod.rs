//! The eprints read model: eprint detail, the by-author listing and the accounts that
//! author summaries show, in the store.
//!
//! Tables of model `eprints` (partition key → clustering key: columns):
//! - `records`: record URI → empty: cid, rev, record (contract shape, JSON), indexedAt,
//!   ordinal (the log position of the event that made the row). The repository DID is the
//!   URI's ([`repo_of`]); the listings the row is in follow from its record (the DIDs of
//!   `by_author`, its `createdAt`). Rows of earlier builds also hold uri, did, listed (JSON
//!   array of DIDs), listingAt (createdAt, µs), listingByData (the listing key is createdAt
//!   ‖ URI; rows of older builds keyed by append time ‖ offset lack it), compactKeys (the
//!   listing keys hold the URI compact, [`key_uri`]; shortKeys: short, before eprints
//!   format 7) and deleted (false), and are unlisted as they say.
//!   A deletion leaves a tombstone (deleted, with its `rev`), so an older write replayed
//!   later is skipped.
//! - `by_author`: DID → createdAt (µs, order-preserving big-endian) ‖ record URI (compact:
//!   [`key_uri`]; short before eprints format 7, whole before format 6, and in a `uri`
//!   column before format 4): ∅.
//!   Scanned backwards for newest first (equal dates: greater URI first), an order that
//!   depends on the data only; summaries come from `records`; an author's total is the
//!   partition's row count.
//! - `by_external_id`: an identifier of a live eprint's record (`doi:…`, `arxiv:…`, as
//!   [`crate::search::ids::of_record`] gives them, with [`crate::search::ids::with_aliases`])
//!   → record URI ([`key_uri`]): ∅ (what an extracted citation's DOI is resolved to an
//!   eprint by).
//! - `accounts`: DID → empty: handle, displayName, profileName (the display name of the
//!   account's `pub.svc.actor.profile` record), active, status, and firstSeen, when the
//!   index first saw the DID as a user (its first record or identity event): users are the
//!   accounts that have it. Author search and `pub.svc.admin.searchUsers` find them in the
//!   search model's index of users ([`crate::search::people`]), made from these rows.
//! - `users`: no longer written (eprints format 9): before, author search's store rows,
//!   `by_did` → DID, `by_handle` → lowercased handle ‖ 0 ‖ DID and `by_name` → each of
//!   [`name_words`] ‖ 0 ‖ DID.
//! - `dead_letters`, `superseded_letters`, `dead_letter_records`: see [`crate::deadletter`]
//!   (`dead_letter_heads`, of an earlier svc, is dropped with a version).

mod apply;
pub mod read;

pub use apply::EprintsProjection;

use std::collections::BTreeSet;

use store::{Columns, TableRef, Value};

use crate::did_key;

/// The model name.
pub const MODEL: &str = "eprints";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &[
    "records",
    "by_author",
    "by_external_id",
    "accounts",
    "users",
    "dead_letters",
    "superseded_letters",
    "dead_letter_records",
    "dead_letter_heads",
];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &[];

/// The words a user is found by: its lowercased handle whole, and each lowercased word of
/// its names (display names), whole and split at its punctuation (`Jean-Pierre` gives
/// `jean-pierre`, `jean` and `pierre`). Sorted, each once.
pub fn name_words(handle: Option<&str>, names: &[Option<&str>]) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    if let Some(h) = handle.map(str::to_lowercase).filter(|h| !h.is_empty() && !h.contains('\0')) {
        words.insert(h);
    }
    for piece in names.iter().flatten().flat_map(|n| n.split_whitespace()) {
        let whole = piece.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        for part in whole.split(|c: char| !c.is_alphanumeric()).chain([whole.as_str()]) {
            if !part.is_empty() && !part.contains('\0') {
                words.insert(part.to_owned());
            }
        }
    }
    words
}

/// The repository DID of an eprint's URI: its authority (`at://<did>/…`).
pub(crate) fn repo_of(uri: &str) -> &str {
    uri.strip_prefix("at://").and_then(|rest| rest.split('/').next()).unwrap_or_default()
}

pub(crate) fn records(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "records")
}

pub(crate) fn by_author(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "by_author")
}

pub(crate) fn by_external_id(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "by_external_id")
}

/// How the keys of `by_author` and `by_external_id` hold an eprint's URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UriForm {
    /// Whole (before eprints format 6).
    Whole,
    /// Its repository's DID as text, `/`, its record key (eprints format 6).
    Short,
    /// Its repository's DID's key ([`crate::did_key`]), `/`, its record key (since eprints
    /// format 7).
    Compact,
}

/// An eprint's URI as the keys of `by_author` and `by_external_id` hold it in `form`: its
/// repository's DID and its record key (every eprint is a `pub.svc.eprint.submission`;
/// URIs sort alike in every form). Any other URI is kept whole.
pub(crate) fn key_uri(uri: &str, form: UriForm) -> Vec<u8> {
    let short = uri.strip_prefix("at://").and_then(|rest| {
        let (did, rest) = rest.split_once('/')?;
        let rkey = rest.strip_prefix(lexicons::SUBMISSION)?.strip_prefix('/')?;
        Some((did, rkey))
    });
    match (short, form) {
        (Some((did, rkey)), UriForm::Compact) => [did_key::encode(did).as_slice(), b"/", rkey.as_bytes()].concat(),
        (Some((did, rkey)), UriForm::Short) => format!("{did}/{rkey}").into_bytes(),
        _ => uri.as_bytes().to_vec(),
    }
}

/// The eprint URI a key's [`key_uri`] part names, in any form.
pub(crate) fn uri_of_key(key: &[u8]) -> Option<String> {
    if key.starts_with(b"at://") {
        return std::str::from_utf8(key).ok().map(str::to_owned);
    }
    let (did, rest) = did_key::decode(key, b'/')?;
    let rkey = std::str::from_utf8(rest.strip_prefix(b"/")?).ok()?;
    Some(format!("at://{did}/{}/{rkey}", lexicons::SUBMISSION))
}

/// The clustering key of an eprint in an author's listing (`by_author`): its `createdAt`
/// as [`crate::rows::listing_key`] has it, then its [`key_uri`].
pub(crate) fn author_key(created_at_micros: i64, uri: &str, form: UriForm) -> Vec<u8> {
    let mut k = crate::rows::listing_key(created_at_micros, "");
    k.extend_from_slice(&key_uri(uri, form));
    k
}

/// The URI of a `by_author` row: the one its value names (rows written before eprints
/// format 4, and those keyed by the log), else the one its key ends with, in either form.
pub(crate) fn author_listed_uri(clustering: &[u8], columns: &Columns) -> Option<String> {
    match columns.get("uri").and_then(Value::as_text) {
        Some(uri) => Some(uri.to_owned()),
        None => uri_of_key(clustering.get(8..)?),
    }
}

/// The identifiers an eprint record is filed under in `by_external_id`.
pub(crate) fn external_ids(record: &serde_json::Value) -> Vec<String> {
    crate::search::ids::with_aliases(crate::search::ids::of_record(record))
}

pub(crate) fn accounts(version: u32) -> TableRef {
    TableRef::new(MODEL, version, "accounts")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::is_listing_key;

    #[test]
    fn a_listing_key_holds_the_uri_in_each_form_and_each_reads_back_as_a_cursor() {
        let plc = format!("at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/{}/3kabc", lexicons::SUBMISSION);
        let web = format!("at://did:web:example.com/{}/3kabc", lexicons::SUBMISSION);
        for uri in [&plc, &web] {
            for form in [UriForm::Whole, UriForm::Short, UriForm::Compact] {
                let key = author_key(1_764_547_200_000_000, uri, form);
                assert!(is_listing_key(&key), "{uri} {form:?}");
                assert_eq!(uri_of_key(&key[8..]).as_deref(), Some(uri.as_str()), "{form:?}");
            }
        }
        assert_eq!(key_uri(&plc, UriForm::Compact).len(), crate::did_key::LEN + 6, "a did:plc's URI in 22 bytes");
        assert_eq!(key_uri(&web, UriForm::Compact), key_uri(&web, UriForm::Short), "any other DID stays text");
        for bad in [&b"12345678"[..], b"12345678garbage", b"12345678\x01short", b"12345678did:plc:x"] {
            assert!(!is_listing_key(bad), "{bad:?}");
        }
    }
}
