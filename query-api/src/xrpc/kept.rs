//! Answers kept per state of the store, for queries whose answer is a function of their
//! query string and the read models alone: no caller, no clock, no search index
//! ([`super::method::Routes::kept`]). A hot eprint's detail is then computed once per state
//! of the store, not once per request.
//!
//! Exact under writes, as the store's row cache is: an answer is kept only if no write
//! began while it was computed, and served only while no write has begun since
//! ([`store::Store::state_mark`]). Where the store cannot tell (ScyllaDB, written by other
//! processes), nothing is kept.

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::body::Body;

/// What one method keeps, in bytes (some 2,500 eprint details).
const KEPT_BYTES: u64 = 8 << 20;

/// A kept answer: the store's state mark it was computed at, and the body.
type Kept = (u64, Body);

#[derive(Clone)]
struct AnswerWeight;

impl Weighter<String, Kept> for AnswerWeight {
    fn weight(&self, query: &String, answer: &Kept) -> u64 {
        (query.len() + answer.1.as_bytes().len() + 64) as u64
    }
}

/// The kept answers of one method, by query string.
pub(crate) struct KeptAnswers {
    answers: Cache<String, Kept, AnswerWeight>,
}

impl KeptAnswers {
    /// Room for [`KEPT_BYTES`] of answers.
    pub fn new() -> KeptAnswers {
        KeptAnswers { answers: Cache::with_weighter((KEPT_BYTES / 2048) as usize, KEPT_BYTES, AnswerWeight) }
    }

    /// The answer to `query` kept at the state `mark`, if any.
    pub fn get(&self, query: &str, mark: u64) -> Option<Body> {
        self.answers.get(query).filter(|(at, _)| *at == mark).map(|(_, body)| body)
    }

    /// Keeps the answer to `query` computed at the state `mark`.
    pub fn keep(&self, query: String, mark: u64, body: Body) {
        self.answers.insert(query, (mark, body));
    }
}

#[cfg(test)]
mod tests {
    use super::KeptAnswers;
    use crate::body::Body;

    #[test]
    fn an_answer_is_served_only_at_the_state_it_was_computed_at() {
        let kept = KeptAnswers::new();
        kept.keep("uri=at://a".into(), 7, Body::json(&1).unwrap());
        assert_eq!(kept.get("uri=at://a", 7).map(|b| b.as_bytes().to_vec()), Some(b"1".to_vec()));
        assert!(kept.get("uri=at://a", 8).is_none(), "another state");
        assert!(kept.get("uri=at://b", 7).is_none(), "another query");
        kept.keep("uri=at://a".into(), 8, Body::json(&2).unwrap());
        assert_eq!(kept.get("uri=at://a", 8).map(|b| b.as_bytes().to_vec()), Some(b"2".to_vec()));
    }
}
