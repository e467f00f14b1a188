//! Answers kept per state of the store, for queries whose answer is a function of their
//! query string and the read models alone: no caller, no clock, no search index
//! ([`super::method::Routes::kept`]). A hot eprint's detail is then computed once per state
//! of the store, not once per request.
//!
//! Exact under writes, as the store's row cache is: an answer is kept only if no write
//! began while it was computed, and served only while no write has begun since
//! ([`store::Store::state_mark`]). Where the store cannot tell (ScyllaDB, written by other
//! processes), nothing is kept. The `record*` calls of `pub.svc.metrics` keep here, apart
//! and by URI, whether svc shows the eprint they name, per state of the eprints model's rows
//! ([`store::Store::state_mark_of`]).

use quick_cache::sync::Cache;
use quick_cache::{UnitWeighter, Weighter};

use axum::body::Bytes;

use crate::body::Body;

/// Answers at least this long are kept gzipped too, for clients that accept it.
const GZIP_FROM: usize = 1024;

/// A kept answer: the store's state mark it was computed at, the body, and the body
/// gzipped (for an answer of [`GZIP_FROM`] bytes or more).
#[derive(Clone)]
pub(crate) struct Kept {
    mark: u64,
    /// The answer.
    pub body: Body,
    /// The answer gzipped, compressed once when kept.
    pub gzip: Option<Bytes>,
}

#[derive(Clone)]
struct AnswerWeight;

impl Weighter<String, Kept> for AnswerWeight {
    fn weight(&self, query: &String, answer: &Kept) -> u64 {
        (query.len() + answer.body.as_bytes().len() + answer.gzip.as_ref().map_or(0, Bytes::len) + 64) as u64
    }
}

/// `bytes` gzipped (the default level: an answer is compressed once per state of the
/// store and sent many times).
fn gzip(bytes: &[u8]) -> Option<Bytes> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 3), flate2::Compression::default());
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok().map(Bytes::from)
}

/// The kept answers of a node's methods, by method and query string; and whether svc shows
/// an eprint, for the `record*` calls of `pub.svc.metrics` (by URI).
pub struct KeptAnswers {
    answers: Cache<String, Kept, AnswerWeight>,
    shown: Cache<String, Shown, UnitWeighter>,
}

/// Whether svc shows an eprint, as of a state of the eprints model's rows: its version and
/// that version's state mark (`EprintsReader::state_mark`).
#[derive(Clone, Copy)]
struct Shown {
    version: u32,
    mark: u64,
    shown: bool,
}

/// The eprints whose being shown is kept (none on a node given no room for answers): a URI
/// and a few bytes each, some 10 MB at most.
const SHOWN_EPRINTS: usize = 65_536;

impl KeptAnswers {
    /// Room for `bytes` of answers, for all the node's kept methods together (64 MiB hold
    /// some 20,000 eprint details, or 4,000 pages of 10 imports). Answers of 2 KB are
    /// expected: the number of entries is sized for them.
    pub fn new(bytes: u64) -> KeptAnswers {
        KeptAnswers {
            answers: Cache::with_weighter((bytes / 2048).max(1) as usize, bytes, AnswerWeight),
            shown: Cache::with_weighter(SHOWN_EPRINTS, if bytes == 0 { 0 } else { SHOWN_EPRINTS as u64 }, UnitWeighter),
        }
    }

    /// Whether svc shows the eprint at `uri`, as kept at `mark` of the eprints model's
    /// `version`, if it is: looked up by the URI alone (no key to format, a cache of its own).
    pub(crate) fn shown(&self, uri: &str, (version, mark): (u32, u64)) -> Option<bool> {
        self.shown.get(uri).filter(|s| s.version == version && s.mark == mark).map(|s| s.shown)
    }

    /// Keeps whether svc shows the eprint at `uri`, found at `mark` of `version`.
    pub(crate) fn keep_shown(&self, uri: &str, (version, mark): (u32, u64), shown: bool) {
        self.shown.insert(uri.to_owned(), Shown { version, mark, shown });
    }

    /// The answer to `query` kept at the state `mark`, if any.
    pub(crate) fn get(&self, query: &str, mark: u64) -> Option<Kept> {
        self.answers.get(query).filter(|k| k.mark == mark)
    }

    /// Keeps the answer to `query` computed at the state `mark`.
    pub(crate) fn keep(&self, query: String, mark: u64, body: Body) {
        self.answers.insert(query, Kept { mark, body, gzip: None });
        self.record_size();
    }

    /// Sets `/metrics`' gauge of what the kept answers hold (`svc_cache_bytes`).
    fn record_size(&self) {
        metrics::gauge!("svc_cache_bytes", "cache" => "answers").set(self.answers.weight() as f64);
    }

    /// `answer` (kept for `query`) with its gzipped copy, made and kept the first time a
    /// client that accepts gzip is sent it again: compressed once per state of the store,
    /// and only answers asked for more than once are. `None` for an answer too short to be
    /// worth it.
    pub(crate) fn gzipped(&self, query: &str, answer: Kept) -> Option<Kept> {
        if answer.gzip.is_some() {
            return Some(answer);
        }
        if answer.body.as_bytes().len() < GZIP_FROM {
            return None;
        }
        let kept = Kept { gzip: Some(gzip(answer.body.as_bytes())?), ..answer };
        self.answers.insert(query.to_owned(), kept.clone());
        self.record_size();
        Some(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::KeptAnswers;
    use crate::body::Body;

    #[test]
    fn an_answer_is_served_only_at_the_state_it_was_computed_at() {
        let kept = KeptAnswers::new(1 << 20);
        kept.keep("uri=at://a".into(), 7, Body::json(&1).unwrap());
        assert_eq!(kept.get("uri=at://a", 7).map(|k| k.body.as_bytes().to_vec()), Some(b"1".to_vec()));
        assert!(kept.get("uri=at://a", 8).is_none(), "another state");
        assert!(kept.get("uri=at://b", 7).is_none(), "another query");
        kept.keep("uri=at://a".into(), 8, Body::json(&2).unwrap());
        assert_eq!(kept.get("uri=at://a", 8).map(|k| k.body.as_bytes().to_vec()), Some(b"2".to_vec()));
        assert!(kept.gzipped("uri=at://a", kept.get("uri=at://a", 8).unwrap()).is_none(), "too short to be worth it");
    }

    #[test]
    fn whether_an_eprint_is_shown_is_served_only_at_the_version_and_state_it_was_found_at() {
        let kept = KeptAnswers::new(1 << 20);
        kept.keep_shown("at://a", (1, 7), true);
        assert_eq!(kept.shown("at://a", (1, 7)), Some(true));
        assert_eq!(kept.shown("at://a", (1, 8)), None, "another state");
        assert_eq!(kept.shown("at://a", (2, 7)), None, "another version");
        assert_eq!(kept.shown("at://b", (1, 7)), None, "another eprint");
        kept.keep_shown("at://a", (1, 8), false);
        assert_eq!(kept.shown("at://a", (1, 8)), Some(false));
    }

    #[test]
    fn a_node_given_no_room_keeps_nothing() {
        let kept = KeptAnswers::new(0);
        kept.keep("uri=at://a".into(), 7, Body::json(&1).unwrap());
        assert!(kept.get("uri=at://a", 7).is_none());
        kept.keep_shown("at://a", (1, 7), true);
        assert_eq!(kept.shown("at://a", (1, 7)), None);
    }

    #[test]
    fn answers_beyond_the_room_given_are_let_go() {
        let kept = KeptAnswers::new(64 << 10);
        let answer = Body::json(&"x".repeat(1000)).unwrap();
        for i in 0..1000 {
            kept.keep(format!("uri=at://{i}"), 1, answer.clone());
        }
        assert!(kept.answers.weight() <= 64 << 10, "{} bytes kept", kept.answers.weight());
        assert!((0..1000).filter(|i| kept.get(&format!("uri=at://{i}"), 1).is_some()).count() < 70);
    }

    #[test]
    fn a_long_answer_is_kept_gzipped_too() {
        use std::io::Read;
        let kept = KeptAnswers::new(1 << 20);
        let long = Body::json(&vec!["an abstract of a paper"; 100]).unwrap();
        kept.keep("q=x".into(), 1, long.clone());
        assert!(kept.get("q=x", 1).unwrap().gzip.is_none(), "not compressed before it is asked for again");
        kept.gzipped("q=x", kept.get("q=x", 1).unwrap()).expect("long enough");
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&kept.get("q=x", 1).unwrap().gzip.expect("kept gzipped")[..]).read_to_end(&mut plain).unwrap();
        assert_eq!(plain, long.as_bytes());
    }
}
