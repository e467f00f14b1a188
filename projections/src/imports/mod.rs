//! Imports and claims: the papers svc fetched from external sources (`external.paper`
//! events), the authorship claims on them (docs/spec details §6), and what external
//! bibliographic services know of indexed eprints (`external.enrichment`). Nothing here is a
//! repository record: a replay rebuilds every import and claim from the log alone.
//!
//! Tables of model `imports` (partition key → clustering key: columns):
//! - `papers`: `all` and `source:<source>` → the import id (big-endian): id, key, source,
//!   paper (the [`event_schema::ExternalPaper`] as JSON), words, authorWords, orcids
//!   (space-separated), importedAt, lastSyncedAt, claimStatus, canonicalUri, claimedByDid,
//!   claimedAt.
//! - `terms`: `all` → the import id: words, authorWords, orcids, source, claimStatus (what
//!   a search checks a posting's paper against, without reading the paper).
//! - `paper_keys`: `<source>:<external id>` → ∅: id.
//! - `words`: a word of a title or an author's name → the import id: ∅ (what
//!   `import.search` looks words up in).
//! - `word_counts`: a word → ∅: n (how many papers have it: a search reads the rarest).
//! - `prefixes`: the first [`PREFIX_CHARS`] characters of such a word → the import id: ∅
//!   (what `claiming.autocomplete` completes a word being typed from).
//! - `counts`: `all` and `source:<source>` → ∅: n (papers imported).
//! - `claims`: `all`, `claimant:<did>`, `status:<status>` and `paper:<id>` → the claim id
//!   (big-endian): id, importId, paperKey, claimantDid, status, score, evidence (JSON),
//!   authorPosition, orcid, canonicalUri, rejectionReason, reviewedBy, reviewedAt,
//!   createdAt, title.
//! - `claim_keys`: the claim id (decimal) → ∅: status, claimant, importId.
//! - `claim_requests`: a request id → ∅: claimId, or refused (why a claim was not made).
//! - `coauthors`: `owner:<did>`, `claimant:<did>` and `eprint:<uri>` → the co-author
//!   request's id (big-endian): id, eprintUri, eprintOwnerDid, claimantDid, claimantName,
//!   authorIndex, authorName, message, status, rejectionReason, createdAt, reviewedAt,
//!   updatedAt.
//! - `coauthor_keys`: the request's id (decimal) → ∅: eprintUri.
//! - `coauthor_asks`: a request's UUID → ∅: requestId, or refused.
//! - `dismissed`: a DID → `<source>:<external id>`: ∅ (suggestions it dismissed).
//! - `enrichments`: an eprint's URI → ∅: enrichment (the newest
//!   [`event_schema::Enrichment`] of it, as JSON).
//! - `cited_by`: an identifier of a work an enrichment cites (`doi:…`, `arxiv:…`, as
//!   [`cited_ids`] gives them) → the citing eprint's URI: ∅ (the extracted citations of an
//!   eprint svc indexes, found by its own identifiers).
//!
//! An import's id is the log ordinal of the event that first imported it, plus one; a
//! claim's, the ordinal of the event that started it, plus one: stable across replays.

mod apply;
pub mod read;

pub use apply::ImportsModel;

use store::TableRef;

/// The model name.
pub const MODEL: &str = "imports";

/// The tables of the model, for dropping a version.
pub const TABLES: &[&str] = &[
    "papers",
    "terms",
    "paper_keys",
    "words",
    "word_counts",
    "prefixes",
    "counts",
    "claims",
    "claim_keys",
    "claim_requests",
    "coauthors",
    "coauthor_keys",
    "coauthor_asks",
    "dismissed",
    "enrichments",
    "cited_by",
];

/// Tables whose rows are written by the events of several keys (see `catalog::ModelSpec::aggregates`).
pub const AGGREGATES: &[&str] = &["counts", "word_counts"];

/// The identifiers a cited work is known by, from its DOI (an arXiv DOI also as the arXiv
/// id).
pub fn work_ids(doi: &str) -> Vec<String> {
    crate::search::ids::with_aliases(crate::search::ids::of_query(doi).into_iter().collect())
}

/// The identifiers of cited works ([`work_ids`]), each once.
pub fn cited_ids(works: &[event_schema::CitedWork]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in works.iter().filter_map(|w| w.doi.as_deref()).flat_map(work_ids) {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The partition of every row of a listing.
pub(crate) const ALL: &str = "all";

/// The most words of one paper indexed (of its title and authors' names).
pub(crate) const MAX_WORDS: usize = 96;

pub(crate) fn table(version: u32, name: &'static str) -> TableRef {
    TableRef::new(MODEL, version, name)
}

/// How many characters of a word its prefix posting is filed under.
pub const PREFIX_CHARS: usize = 3;

/// The prefix posting a word is filed under: its first [`PREFIX_CHARS`] characters, for
/// a word that long.
pub fn prefix(word: &str) -> Option<String> {
    let end = word.char_indices().nth(PREFIX_CHARS).map_or(word.len(), |(i, _)| i);
    (word.chars().count() >= PREFIX_CHARS).then(|| word[..end].to_owned())
}

/// The words of a text as `import.search` matches them: runs of letters and digits,
/// lowercased, two characters or more, each once, in order.
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 2) {
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Why a claim was not made, as its request records it.
pub mod refusal {
    /// The paper was never imported.
    pub const NOT_IMPORTED: &str = "NotFound";
    /// A claim on the paper was completed already.
    pub const ALREADY_CLAIMED: &str = "AlreadyClaimed";
    /// The caller has a pending or approved claim on the paper already.
    pub const DUPLICATE: &str = "DuplicateClaim";
    /// The caller has a pending co-author request on the same eprint already.
    pub const DUPLICATE_REQUEST: &str = "DuplicateRequest";
}
