//! Semantic Scholar as a source of papers (its Academic Graph API:
//! `GET /graph/v1/paper/search` and `GET /graph/v1/paper/{id}`,
//! <https://api.semanticscholar.org/api-docs/graph>): searches by words, papers by their
//! Semantic Scholar paper id.
//!
//! Without an API key, clients share a public pool; with one (`x-api-key`), Semantic
//! Scholar grants one request a second, the pace svc keeps either way. Answers are kept an
//! hour.

use std::time::Duration;

use event_schema::{ExternalAuthor, ExternalPaper};
use serde::Deserialize;

use crate::{encode, fetched_now, json, Etiquette, Fetcher, Source, SourceError, SourceQuery};

/// The source's name.
pub const NAME: &str = "semanticscholar";
/// The client's name in imports.
pub const PLUGIN: &str = "semanticscholar-graph";
/// Semantic Scholar's API host.
pub const BASE_URL: &str = "https://api.semanticscholar.org";

/// The most papers one search asks for (the search endpoint's `limit` bound).
const MAX_RESULTS: usize = 100;

/// The fields svc asks for.
const FIELDS: &str = "paperId,externalIds,url,title,abstract,publicationDate,year,authors,fieldsOfStudy,openAccessPdf";

/// How svc calls Semantic Scholar at `base_url`: one request a second, one at a time, the
/// API key (when the operator has one) in `x-api-key`.
pub fn etiquette(base_url: &str, api_key: Option<&str>) -> Etiquette {
    let mut e = Etiquette::new(NAME, base_url);
    e.interval = Duration::from_secs(1);
    e.connections = 1;
    e.accept = "application/json";
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        e.headers.push(("x-api-key", crate::Secret::new(key)));
    }
    e
}

/// The Semantic Scholar Graph API client.
pub struct SemanticScholar {
    fetcher: Fetcher,
}

impl SemanticScholar {
    /// A client that calls Semantic Scholar as `etiquette` says.
    pub fn new(etiquette: Etiquette) -> SemanticScholar {
        SemanticScholar { fetcher: Fetcher::new(etiquette) }
    }
}

/// A Semantic Scholar paper id (40 hex digits, lower case), bare or at the end of its
/// `semanticscholar.org/paper/…` URL; `None` for anything else. (Papers are imported under
/// this id: a DOI or an arXiv id is Crossref's or arXiv's to look up.)
pub fn normalize_id(s: &str) -> Option<String> {
    let s = s.trim().trim_end_matches('/');
    let s = s.rsplit_once('/').map_or(s, |(_, last)| last);
    (s.len() == 40 && s.chars().all(|c| c.is_ascii_hexdigit())).then(|| s.to_ascii_lowercase())
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    data: Vec<Paper>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Paper {
    paper_id: Option<String>,
    #[serde(default)]
    external_ids: std::collections::BTreeMap<String, serde_json::Value>,
    url: Option<String>,
    title: Option<String>,
    #[serde(rename = "abstract")]
    abstract_text: Option<String>,
    publication_date: Option<String>,
    year: Option<u32>,
    #[serde(default)]
    authors: Vec<Author>,
    #[serde(default)]
    fields_of_study: Option<Vec<String>>,
    open_access_pdf: Option<OpenAccessPdf>,
}

#[derive(Deserialize)]
struct Author {
    name: Option<String>,
}

#[derive(Deserialize)]
struct OpenAccessPdf {
    url: Option<String>,
}

/// The paper of a Graph API answer; `None` for one without an id or a title.
fn paper_of(p: Paper, fetched_at: &str) -> Option<ExternalPaper> {
    let external_id = p.paper_id.filter(|id| !id.is_empty())?.to_ascii_lowercase();
    let title = p.title.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())?;
    let doi = p.external_ids.get("DOI").and_then(|d| d.as_str()).and_then(crate::crossref::normalize_id);
    Some(ExternalPaper {
        source: NAME.into(),
        url: p.url.unwrap_or_else(|| format!("https://www.semanticscholar.org/paper/{external_id}")),
        external_id,
        title,
        abstract_text: p.abstract_text.unwrap_or_default().trim().to_owned(),
        authors: p
            .authors
            .into_iter()
            .filter_map(|a| a.name.filter(|n| !n.trim().is_empty()))
            .map(|name| ExternalAuthor { name, orcid: None, affiliation: None })
            .collect(),
        publication_date: p.publication_date.or(p.year.map(|y| y.to_string())),
        categories: p.fields_of_study.unwrap_or_default(),
        doi,
        pdf_url: p.open_access_pdf.and_then(|o| o.url).filter(|u| !u.is_empty()),
        plugin: PLUGIN.into(),
        fetched_at: fetched_at.to_owned(),
    })
}

#[async_trait::async_trait]
impl Source for SemanticScholar {
    fn name(&self) -> &'static str {
        NAME
    }

    fn normalize_id(&self, id: &str) -> Option<String> {
        normalize_id(id)
    }

    async fn search(&self, query: &SourceQuery) -> Result<Vec<ExternalPaper>, SourceError> {
        let text = query.text_and_author();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let limit = query.limit.clamp(1, MAX_RESULTS);
        let path = format!("/graph/v1/paper/search?query={}&limit={limit}&fields={FIELDS}", encode(&text));
        let Some(body) = self.fetcher.get(&path).await? else { return Ok(Vec::new()) };
        let page: Page = json(NAME, &body)?;
        let at = fetched_now();
        Ok(page.data.into_iter().filter_map(|p| paper_of(p, &at)).take(query.limit).collect())
    }

    async fn get(&self, external_id: &str) -> Result<Option<ExternalPaper>, SourceError> {
        let Some(id) = normalize_id(external_id) else { return Ok(None) };
        let Some(body) = self.fetcher.get(&format!("/graph/v1/paper/{id}?fields={FIELDS}")).await? else { return Ok(None) };
        let paper: Paper = json(NAME, &body)?;
        Ok(paper_of(paper, &fetched_now()).filter(|p| p.external_id == id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_ids_are_read_bare_or_from_their_page() {
        let sha = "649def34f8be52c8b66281af98ae884c09aef38b";
        assert_eq!(normalize_id(&sha.to_uppercase()), Some(sha.into()));
        assert_eq!(
            normalize_id(&format!("https://www.semanticscholar.org/paper/Construction-of-the-Literature-Graph/{sha}")),
            Some(sha.into())
        );
        assert_eq!(normalize_id("10.1145/3589335.3651526"), None);
        assert_eq!(normalize_id("2509.21237"), None);
    }
}
