//! Clients of the external scholarly sources svc imports papers from (arXiv, Crossref,
//! OpenAlex, Semantic Scholar), each one module behind one trait, [`Source`], and
//! of the registries and platforms svc asks (ORCID, ROR, FAST, Wikidata, GitHub…).
//!
//! A source is only ever called through a [`Fetcher`]: the source's base URL (configurable,
//! so tests point it at a local server), its etiquette (a contact in the user agent, its
//! published request rate, one connection at a time where it asks for that), a deadline per
//! call, retries with backoff that honour `Retry-After`, a bound on the body, a response
//! cache and a circuit breaker. A source that fails never fails a caller that others can
//! answer: [`Sources::search`] reports it beside the others' results.
//!
//! What a source returns is an [`ExternalPaper`], the payload of the event that brings it
//! into svc's log: nothing fetched reaches a read model any other way.

pub mod arxiv;
pub mod arxiv_oai;
mod breaker;
pub mod crossref;
mod fetch;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod openalex;
pub mod orcid_oauth;
pub mod platforms;
pub mod registries;
pub mod semantic_scholar;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use event_schema::{ExternalAuthor, ExternalPaper};
pub use fetch::{encode, json, Etiquette, Fetcher, Secret};

/// Why a source gave no answer.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SourceError {
    /// No answer within the call's deadline.
    #[error("{name} did not answer within {after_ms} ms")]
    Timeout {
        /// The source's name.
        name: &'static str,
        /// The deadline.
        after_ms: u64,
    },
    /// The source asks svc to slow down for longer than the call may wait.
    #[error("{name} is limiting requests: retry after {retry_after_s} s")]
    RateLimited {
        /// The source's name.
        name: &'static str,
        /// What it asked for.
        retry_after_s: u64,
    },
    /// The source answered with an HTTP error.
    #[error("{name} answered HTTP {status}")]
    Status {
        /// The source's name.
        name: &'static str,
        /// The status code.
        status: u16,
    },
    /// The source's answer is not in its documented format.
    #[error("{name} answered malformed data: {reason}")]
    Malformed {
        /// The source's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The source's answer is larger than svc reads.
    #[error("{name}'s answer is over {limit} bytes")]
    TooLarge {
        /// The source's name.
        name: &'static str,
        /// The bound.
        limit: usize,
    },
    /// The source failed repeatedly and is not called for a while.
    #[error("{name} is failing: not called again for {retry_in_s} s")]
    CircuitOpen {
        /// The source's name.
        name: &'static str,
        /// When it will be tried again.
        retry_in_s: u64,
    },
    /// The connection failed.
    #[error("{name} could not be reached: {reason}")]
    Unreachable {
        /// The source's name.
        name: &'static str,
        /// The transport's error.
        reason: String,
    },
}

impl SourceError {
    /// The source that failed.
    pub fn source_name(&self) -> &'static str {
        match self {
            SourceError::Timeout { name, .. }
            | SourceError::RateLimited { name, .. }
            | SourceError::Status { name, .. }
            | SourceError::Malformed { name, .. }
            | SourceError::TooLarge { name, .. }
            | SourceError::CircuitOpen { name, .. }
            | SourceError::Unreachable { name, .. } => name,
        }
    }
}

/// A search of a source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SourceQuery {
    /// Words of the title or abstract.
    pub text: String,
    /// An author's name.
    pub author: Option<String>,
    /// How many papers at most.
    pub limit: usize,
}

impl SourceQuery {
    /// The words and the author's name as one search text (for sources that search both
    /// at once), trimmed.
    pub fn text_and_author(&self) -> String {
        let author = self.author.as_deref().map(str::trim).unwrap_or_default();
        format!("{} {author}", self.text.trim()).trim().to_owned()
    }
}

/// When a paper is fetched: now, as its `fetchedAt` says it (RFC 3339, seconds).
pub(crate) fn fetched_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// An external scholarly source.
#[async_trait::async_trait]
pub trait Source: Send + Sync {
    /// The source's name in the API and in events (`arxiv`).
    fn name(&self) -> &'static str;

    /// An identifier as the source's papers carry it (`None`: not an identifier of this
    /// source), so that a paper is found whichever form a caller gives.
    fn normalize_id(&self, id: &str) -> Option<String> {
        let id = id.trim();
        (!id.is_empty()).then(|| id.to_owned())
    }

    /// The papers matching `query`, best first.
    ///
    /// # Errors
    /// [`SourceError`] when the source gives no usable answer.
    async fn search(&self, query: &SourceQuery) -> Result<Vec<ExternalPaper>, SourceError>;

    /// The paper of an identifier, `None` when the source has none by it.
    ///
    /// # Errors
    /// [`SourceError`] when the source gives no usable answer.
    async fn get(&self, external_id: &str) -> Result<Option<ExternalPaper>, SourceError>;

    /// Whether `url` is where this source serves its papers' PDFs: the only URLs the PDF
    /// proxy (`claiming.fetchExternalPdf`) fetches. None by default.
    fn serves_pdf(&self, _url: &str) -> bool {
        false
    }

    /// The PDF at `url` (one [`Source::serves_pdf`] accepts), `None` when there is none.
    ///
    /// # Errors
    /// [`SourceError`] when the source gives no usable answer.
    async fn pdf(&self, _url: &str) -> Result<Option<bytes::Bytes>, SourceError> {
        Ok(None)
    }
}

/// The sources svc is configured with, by name.
#[derive(Clone, Default)]
pub struct Sources {
    by_name: BTreeMap<&'static str, Arc<dyn Source>>,
}

impl Sources {
    /// Sources from a list (a later one of the same name replaces an earlier one).
    pub fn new(sources: impl IntoIterator<Item = Arc<dyn Source>>) -> Sources {
        Sources { by_name: sources.into_iter().map(|s| (s.name(), s)).collect() }
    }

    /// The source of a name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Source>> {
        self.by_name.get(name)
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.by_name.keys().copied()
    }

    /// Searches the named sources (every source when `names` is empty) at once: the papers
    /// each found, in the order of the names, and the name and error of each that failed.
    pub async fn search(&self, names: &[&str], query: &SourceQuery) -> (Vec<ExternalPaper>, Vec<(&'static str, SourceError)>) {
        let chosen: Vec<&Arc<dyn Source>> =
            if names.is_empty() { self.by_name.values().collect() } else { names.iter().filter_map(|n| self.by_name.get(n)).collect() };
        let answers = futures::future::join_all(chosen.iter().map(|s| s.search(query))).await;
        let (mut papers, mut errors) = (Vec::new(), Vec::new());
        for (source, answer) in chosen.iter().zip(answers) {
            match answer {
                Ok(found) => papers.extend(found),
                Err(e) => errors.push((source.name(), e)),
            }
        }
        (papers, errors)
    }
}
