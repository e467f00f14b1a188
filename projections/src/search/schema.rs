//! The tantivy schema of the search index.

use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING};

/// The fields of the search index.
#[derive(Debug, Clone, Copy)]
pub struct SearchFields {
    /// The record URI (exact; the key for replacing and deleting documents).
    pub uri: Field,
    /// The record URI as the eprints model's keys hold it ([`crate::eprints::key_uri`],
    /// compact: its DID's key and its record key), stored: what a hit is read as. (The
    /// URI itself, stored, took twice the doc store's bytes.)
    pub key: Field,
    /// The repository revision that wrote the document (exact, stored).
    pub rev: Field,
    /// The title, stemmed: for `title:` queries and the title boost.
    pub title: Field,
    /// Author names: for `authors:` queries.
    pub authors: Field,
    /// Everything searchable in one stemmed field: title, abstract, author names, keywords
    /// and field codes. Plain words match here, so that a word costs one posting list
    /// instead of a union over five fields.
    pub all: Field,
    /// Field codes, exact, for filters and facet counts.
    pub field: Field,
    /// Author DIDs (repository owner and listed authors), exact, for filters and facet counts.
    pub author_did: Field,
    /// The year of `createdAt`, for facet counts.
    pub year: Field,
    /// `createdAt` in microseconds, for date filters and sorting.
    pub created: Field,
    /// Citation count, for sorting.
    pub citations: Field,
    /// The log position (`Position::ordinal`) of the event that indexed the document: the
    /// stable tie-breaker, unique across partitions.
    pub seq: Field,
    /// Identifiers, exact and normalized ([`super::ids::normalize`]): the arXiv id without
    /// its version, the DOI, lower-cased. An identifier typed as the query finds its eprint.
    pub ids: Field,
    /// Words in the abstract: the relevance order favours eprints with one over bare titles.
    pub abstract_words: Field,
    /// The normalized tags on the eprint, exact, for facet counts ([`super::tags`]).
    pub tag: Field,
    /// The eprint's facet and topic node codes (`facetUris`, `topicUris`: their record
    /// keys), exact, for faceted browsing and facet counts.
    pub facet: Field,
}

fn text(tokenizer: &str) -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(tokenizer).set_index_option(IndexRecordOption::WithFreqsAndPositions),
    )
}

pub(crate) fn build() -> (Schema, SearchFields) {
    let mut b = Schema::builder();
    let fields = SearchFields {
        uri: b.add_text_field("uri", STRING),
        key: b.add_bytes_field("key", STORED),
        rev: b.add_text_field("rev", STRING | STORED),
        title: b.add_text_field("title", text(super::stem::EN_FOLD)),
        authors: b.add_text_field("authors", text(super::stem::NAMES_FOLD)),
        all: b.add_text_field("all", text(super::stem::EN_FOLD)),
        field: b.add_text_field("field", STRING | FAST),
        author_did: b.add_text_field("author_did", STRING | FAST),
        year: b.add_u64_field("year", FAST),
        created: b.add_i64_field("created", INDEXED | FAST),
        citations: b.add_u64_field("citations", FAST),
        seq: b.add_u64_field("seq", FAST),
        ids: b.add_text_field("ids", STRING),
        abstract_words: b.add_u64_field("abstract_words", FAST),
        tag: b.add_text_field("tag", STRING | FAST),
        facet: b.add_text_field("facet", STRING | FAST),
    };
    (b.build(), fields)
}
