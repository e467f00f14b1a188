//! OpenAlex as a source of papers (its works API: `GET /works?search=` and `GET /works/{id}`,
//! <https://docs.openalex.org/api-entities/works>): searches by words, papers by OpenAlex
//! work id. OpenAlex asks clients to give a contact address (`mailto`, its "polite pool")
//! and to stay under ten requests a second; answers are kept an hour.

use std::time::Duration;

use event_schema::{ExternalAuthor, ExternalPaper};
use serde::Deserialize;

use crate::{encode, fetched_now, json, Etiquette, Fetcher, Source, SourceError, SourceQuery};

/// The source's name.
pub const NAME: &str = "openalex";
/// The client's name in imports.
pub const PLUGIN: &str = "openalex-works";

/// The most works one search asks for (OpenAlex's page size bound).
const MAX_RESULTS: usize = 100;

/// How svc calls OpenAlex at `base_url`: at most ten requests a second, with the contact.
pub fn etiquette(base_url: &str, contact: Option<&str>) -> Etiquette {
    let mut e = Etiquette::new(NAME, base_url);
    e.interval = Duration::from_millis(100);
    e.accept = "application/json";
    if let Some(contact) = contact {
        e.user_agent = format!("{} mailto:{contact}", e.user_agent);
        e.query_param = Some(("mailto", contact.to_owned()));
    }
    e
}

/// The OpenAlex works client.
pub struct OpenAlex {
    fetcher: Fetcher,
}

impl OpenAlex {
    /// A client that calls OpenAlex as `etiquette` says.
    pub fn new(etiquette: Etiquette) -> OpenAlex {
        OpenAlex { fetcher: Fetcher::new(etiquette) }
    }
}

/// A work id (`W2741809807`), from the id or its URL.
pub fn normalize_id(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.strip_prefix("https://openalex.org/").or_else(|| s.strip_prefix("http://openalex.org/")).unwrap_or(s);
    let digits = s.strip_prefix('W').or_else(|| s.strip_prefix('w'))?;
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())).then(|| format!("W{digits}"))
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    results: Vec<Work>,
}

#[derive(Deserialize)]
struct Work {
    id: String,
    display_name: Option<String>,
    title: Option<String>,
    doi: Option<String>,
    publication_date: Option<String>,
    #[serde(default)]
    authorships: Vec<Authorship>,
    abstract_inverted_index: Option<std::collections::BTreeMap<String, Vec<usize>>>,
    #[serde(default)]
    topics: Vec<Topic>,
    best_oa_location: Option<Location>,
    primary_location: Option<Location>,
}

#[derive(Deserialize)]
struct Authorship {
    author: Option<Author>,
    raw_author_name: Option<String>,
    #[serde(default)]
    institutions: Vec<Institution>,
}

#[derive(Deserialize)]
struct Author {
    display_name: Option<String>,
    orcid: Option<String>,
}

#[derive(Deserialize)]
struct Institution {
    display_name: Option<String>,
}

#[derive(Deserialize)]
struct Topic {
    display_name: String,
}

#[derive(Deserialize)]
struct Location {
    pdf_url: Option<String>,
}

/// The abstract OpenAlex keeps as an inverted index (word → positions), in order.
fn abstract_of(index: &std::collections::BTreeMap<String, Vec<usize>>) -> String {
    let mut words: Vec<(usize, &str)> = index.iter().flat_map(|(w, at)| at.iter().map(move |p| (*p, w.as_str()))).collect();
    words.sort_unstable();
    words.into_iter().map(|(_, w)| w).collect::<Vec<_>>().join(" ")
}

/// The paper of an OpenAlex work; `None` for one without an id or a title.
fn paper_of(w: Work, fetched_at: &str) -> Option<ExternalPaper> {
    let external_id = normalize_id(&w.id)?;
    let title = w.display_name.or(w.title).map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())?;
    let authors = w
        .authorships
        .into_iter()
        .filter_map(|a| {
            let name = a.author.as_ref().and_then(|p| p.display_name.clone()).or(a.raw_author_name)?;
            Some(ExternalAuthor {
                name,
                orcid: a.author.and_then(|p| p.orcid).map(|o| o.trim_start_matches("https://orcid.org/").to_owned()),
                affiliation: a.institutions.into_iter().find_map(|i| i.display_name),
            })
        })
        .collect();
    let pdf_url = [&w.best_oa_location, &w.primary_location].into_iter().flatten().find_map(|l| l.pdf_url.clone());
    Some(ExternalPaper {
        source: NAME.into(),
        url: format!("https://openalex.org/{external_id}"),
        external_id,
        title,
        abstract_text: w.abstract_inverted_index.as_ref().map(abstract_of).unwrap_or_default(),
        authors,
        publication_date: w.publication_date,
        categories: w.topics.into_iter().map(|t| t.display_name).collect(),
        doi: w.doi.map(|d| d.trim_start_matches("https://doi.org/").to_owned()),
        pdf_url,
        plugin: PLUGIN.into(),
        fetched_at: fetched_at.to_owned(),
    })
}

#[async_trait::async_trait]
impl Source for OpenAlex {
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
        let per_page = query.limit.clamp(1, MAX_RESULTS);
        let Some(body) = self.fetcher.get(&format!("/works?search={}&per-page={per_page}", encode(&text))).await? else {
            return Ok(Vec::new());
        };
        let page: Page = json(NAME, &body)?;
        let at = fetched_now();
        Ok(page.results.into_iter().filter_map(|w| paper_of(w, &at)).take(query.limit).collect())
    }

    async fn get(&self, external_id: &str) -> Result<Option<ExternalPaper>, SourceError> {
        let Some(id) = normalize_id(external_id) else { return Ok(None) };
        let Some(body) = self.fetcher.get(&format!("/works/{id}")).await? else { return Ok(None) };
        let work: Work = json(NAME, &body)?;
        Ok(paper_of(work, &fetched_now()).filter(|p| p.external_id == id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_ids_and_abstracts_are_read_as_openalex_writes_them() {
        assert_eq!(normalize_id("https://openalex.org/W4402000001"), Some("W4402000001".into()));
        assert_eq!(normalize_id("w42"), Some("W42".into()));
        assert_eq!(normalize_id("10.1234/x"), None);
        let index = [("Graphs".to_owned(), vec![0]), ("retrieve".to_owned(), vec![1, 3]), ("and".to_owned(), vec![2])].into();
        assert_eq!(abstract_of(&index), "Graphs retrieve and retrieve");
    }
}
