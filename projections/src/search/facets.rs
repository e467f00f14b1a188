//! What a search counts and marks beside its hits: facet counts over every match (field
//! codes, years, authors, tags) and the matched words of each hit.

use super::query::SearchRequest;
use super::SearchIndex;
use crate::ProjectionError;

/// A facet of a search: counts of the matching eprints per value of one property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Facet {
    /// Field codes.
    Fields,
    /// Years of `createdAt`.
    Year,
    /// Author DIDs.
    Author,
    /// Normalized tags.
    Tags,
}

impl Facet {
    /// The facet of a name (`fields`, `year`, `author`, `tags`).
    pub fn parse(name: &str) -> Option<Facet> {
        match name {
            "fields" | "field" => Some(Facet::Fields),
            "year" => Some(Facet::Year),
            "author" | "authors" => Some(Facet::Author),
            "tags" | "tag" => Some(Facet::Tags),
            _ => None,
        }
    }

    /// The facet's name in answers.
    pub fn name(self) -> &'static str {
        match self {
            Facet::Fields => "fields",
            Facet::Year => "year",
            Facet::Author => "author",
            Facet::Tags => "tags",
        }
    }
}

/// How many values a facet lists at most.
pub const FACET_SIZE: u32 = 20;

/// The matched words of one hit, marked with `<mark>` in HTML-escaped text.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Highlight {
    /// The hit's URI.
    pub uri: String,
    /// The title, with the matched words marked.
    pub title: String,
    /// The passage of the abstract (at most 300 characters) with the most matched words,
    /// marked; empty when no word of the abstract matched.
    #[serde(rename = "abstract")]
    pub abstract_text: String,
}

impl SearchIndex {
    /// The facet counts of the eprints `req` matches (its page and order aside):
    /// `{<facet>: [{value, count}]}`, most frequent first (years newest first).
    pub fn facets(&self, req: &SearchRequest, facets: &[Facet]) -> Result<serde_json::Value, ProjectionError> {
        use tantivy::aggregation::agg_req::Aggregations;
        use tantivy::aggregation::agg_result::{AggregationResult, AggregationResults, BucketResult};
        use tantivy::aggregation::{AggregationCollector, AggregationLimitsGuard, Key};
        let query = self.build_query(req)?;
        let mut request = serde_json::Map::new();
        for facet in facets {
            let field = match facet {
                Facet::Fields => "field",
                Facet::Year => "year",
                Facet::Author => "author_did",
                Facet::Tags => "tag",
            };
            request.insert(facet.name().into(), serde_json::json!({"terms": {"field": field, "size": FACET_SIZE}}));
        }
        let aggs: Aggregations = serde_json::from_value(serde_json::Value::Object(request))
            .map_err(|e| ProjectionError::Search(format!("facet request: {e}")))?;
        let collector = AggregationCollector::from_aggs(aggs, AggregationLimitsGuard::default());
        let results: AggregationResults = self.reader.searcher().search(query.as_ref(), &collector)?;
        let mut out = serde_json::Map::new();
        for facet in facets {
            let mut values: Vec<(serde_json::Value, u64)> = match results.0.get(facet.name()) {
                Some(AggregationResult::BucketResult(BucketResult::Terms { buckets, .. })) => buckets
                    .iter()
                    .map(|b| {
                        let value = match &b.key {
                            Key::Str(s) => serde_json::json!(s),
                            Key::U64(n) => serde_json::json!(n),
                            Key::I64(n) => serde_json::json!(n),
                            Key::F64(n) => serde_json::json!(*n as i64),
                        };
                        (value, b.doc_count)
                    })
                    .collect(),
                _ => Vec::new(),
            };
            if *facet == Facet::Year {
                values.sort_by_key(|v| std::cmp::Reverse(v.0.as_i64()));
            }
            let values: Vec<serde_json::Value> =
                values.into_iter().map(|(value, count)| serde_json::json!({"value": value, "count": count})).collect();
            out.insert(facet.name().into(), serde_json::Value::Array(values));
        }
        Ok(serde_json::Value::Object(out))
    }

    /// The matched words of each hit (its stored summary JSON) in its title and abstract.
    pub fn highlights(&self, req: &SearchRequest, hits: &[String]) -> Result<Vec<Highlight>, ProjectionError> {
        use tantivy::snippet::SnippetGenerator;
        let query = self.build_query(req)?;
        let searcher = self.reader.searcher();
        let mut titles = SnippetGenerator::create(&searcher, query.as_ref(), self.fields.all)?;
        titles.set_max_num_chars(1000);
        let mut abstracts = SnippetGenerator::create(&searcher, query.as_ref(), self.fields.all)?;
        abstracts.set_max_num_chars(300);
        let mark = |mut snippet: tantivy::snippet::Snippet| {
            snippet.set_snippet_prefix_postfix("<mark>", "</mark>");
            snippet.to_html()
        };
        Ok(hits
            .iter()
            .map(|hit| {
                let summary: serde_json::Value = serde_json::from_str(hit).unwrap_or_default();
                let text = |k: &str| summary.get(k).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
                let title = text("title");
                let mut title_html = mark(titles.snippet(&title));
                if title_html.is_empty() {
                    title_html = mark(tantivy::snippet::Snippet::empty());
                    title_html.push_str(&html_escape(&title));
                }
                Highlight { uri: text("uri"), title: title_html, abstract_text: mark(abstracts.snippet(&text("abstract"))) }
            })
            .collect())
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}
