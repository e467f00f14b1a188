//! The tantivy schema of the search index.

use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING};

/// The fields of the search index.
#[derive(Debug, Clone, Copy)]
pub struct SearchFields {
    /// The record URI (exact; the key for replacing and deleting documents).
    pub uri: Field,
    /// The repository revision that wrote the document (exact, stored).
    pub rev: Field,
    /// The title, stemmed.
    pub title: Field,
    /// The abstract, stemmed.
    pub abstract_text: Field,
    /// Author names.
    pub authors: Field,
    /// Author keywords, stemmed.
    pub keywords: Field,
    /// Field codes as searchable text.
    pub fields_text: Field,
    /// Field codes, exact, for filters.
    pub field: Field,
    /// Author DIDs (repository owner and listed authors), exact, for filters.
    pub author_did: Field,
    /// `createdAt` in microseconds, for date filters and sorting.
    pub created: Field,
    /// Citation count, for sorting.
    pub citations: Field,
    /// Log offset of the event that indexed the document: the stable tie-breaker.
    pub seq: Field,
    /// The eprint summary (JSON) returned with hits.
    pub summary: Field,
}

fn text(tokenizer: &str) -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(tokenizer).set_index_option(IndexRecordOption::WithFreqsAndPositions),
    )
}

pub(crate) fn build() -> (Schema, SearchFields) {
    let mut b = Schema::builder();
    let fields = SearchFields {
        uri: b.add_text_field("uri", STRING | STORED),
        rev: b.add_text_field("rev", STRING | STORED),
        title: b.add_text_field("title", text("en_stem")),
        abstract_text: b.add_text_field("abstract", text("en_stem")),
        authors: b.add_text_field("authors", text("default")),
        keywords: b.add_text_field("keywords", text("en_stem")),
        fields_text: b.add_text_field("fields_text", text("default")),
        field: b.add_text_field("field", STRING),
        author_did: b.add_text_field("author_did", STRING),
        created: b.add_i64_field("created", INDEXED | FAST),
        citations: b.add_u64_field("citations", FAST),
        seq: b.add_u64_field("seq", FAST),
        summary: b.add_text_field("summary", STORED),
    };
    (b.build(), fields)
}
