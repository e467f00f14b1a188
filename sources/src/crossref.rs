//! Crossref as a source of papers (its REST API's works: `GET /works?query=` and
//! `GET /works/{DOI}`, <https://api.crossref.org/swagger-ui/index.html>): searches by words
//! and author, and papers by DOI.
//!
//! Crossref's etiquette: a contact address (`mailto`) puts a client in its "polite" pool,
//! ten requests a second and three at once; without one, the public pool allows five a
//! second, one at a time. Answers are kept an hour.

use std::time::Duration;

use event_schema::{ExternalAuthor, ExternalPaper};
use serde::Deserialize;

use crate::{encode, fetched_now, json, Etiquette, Fetcher, Source, SourceError, SourceQuery};

/// The source's name.
pub const NAME: &str = "crossref";
/// The client's name in imports.
pub const PLUGIN: &str = "crossref-works";
/// Crossref's API host.
pub const BASE_URL: &str = "https://api.crossref.org";

/// The most works one search asks for (Crossref's `rows` bound is 1000; a search needs
/// far fewer).
const MAX_RESULTS: usize = 100;

/// How svc calls Crossref at `base_url`: the polite pool's pace with a contact, the public
/// pool's without.
pub fn etiquette(base_url: &str, contact: Option<&str>) -> Etiquette {
    let mut e = Etiquette::new(NAME, base_url);
    e.accept = "application/json";
    match contact {
        Some(contact) => {
            e.interval = Duration::from_millis(100);
            e.connections = 3;
            e.user_agent = format!("{} mailto:{contact}", e.user_agent);
            e.query_param = Some(("mailto", contact.to_owned()));
        }
        None => {
            e.interval = Duration::from_millis(200);
            e.connections = 1;
        }
    }
    e
}

/// The Crossref works client.
pub struct Crossref {
    fetcher: Fetcher,
}

impl Crossref {
    /// A client that calls Crossref as `etiquette` says.
    pub fn new(etiquette: Etiquette) -> Crossref {
        Crossref { fetcher: Fetcher::new(etiquette) }
    }
}

/// A DOI (`10.1103/physrevd.1.1`, lower case: DOIs are case-insensitive) from the DOI, a
/// `doi:` form or a `doi.org` URL; `None` for anything else.
pub fn normalize_id(s: &str) -> Option<String> {
    let s = s.trim();
    let lower = s.to_ascii_lowercase();
    let bare = ["https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"]
        .iter()
        .find_map(|p| lower.strip_prefix(p))
        .unwrap_or(&lower)
        .trim();
    let (prefix, suffix) = bare.split_once('/')?;
    let registrant = prefix.strip_prefix("10.")?;
    (!registrant.is_empty() && registrant.chars().all(|c| c.is_ascii_digit() || c == '.') && !suffix.is_empty()).then(|| bare.to_owned())
}

#[derive(Deserialize)]
struct Answer<T> {
    message: T,
}

#[derive(Deserialize)]
struct WorkList {
    #[serde(default)]
    items: Vec<Work>,
}

#[derive(Deserialize)]
struct Work {
    #[serde(rename = "DOI")]
    doi: String,
    #[serde(default)]
    title: Vec<String>,
    #[serde(rename = "abstract")]
    abstract_jats: Option<String>,
    #[serde(default)]
    author: Vec<Author>,
    published: Option<Dated>,
    issued: Option<Dated>,
    #[serde(default)]
    subject: Vec<String>,
    #[serde(default)]
    link: Vec<Link>,
    #[serde(rename = "URL")]
    url: Option<String>,
}

#[derive(Deserialize)]
struct Author {
    given: Option<String>,
    family: Option<String>,
    /// An organization as author.
    name: Option<String>,
    #[serde(rename = "ORCID")]
    orcid: Option<String>,
    #[serde(default)]
    affiliation: Vec<Affiliation>,
}

#[derive(Deserialize)]
struct Affiliation {
    name: Option<String>,
}

#[derive(Deserialize)]
struct Dated {
    #[serde(rename = "date-parts", default)]
    date_parts: Vec<Vec<Option<u32>>>,
}

#[derive(Deserialize)]
struct Link {
    #[serde(rename = "URL")]
    url: String,
    #[serde(rename = "content-type")]
    content_type: Option<String>,
}

/// A date from Crossref's `date-parts` (`[[2024, 5]]` → `2024-05`), as precise as given.
fn date_of(d: &Dated) -> Option<String> {
    let parts: Vec<u32> = d.date_parts.first()?.iter().map_while(|p| *p).collect();
    match parts.as_slice() {
        [y, m, day, ..] => Some(format!("{y:04}-{m:02}-{day:02}")),
        [y, m] => Some(format!("{y:04}-{m:02}")),
        [y] => Some(format!("{y:04}")),
        [] => None,
    }
}

/// The text of a JATS abstract (`<jats:p>…</jats:p>`, its `<jats:title>` left out), its
/// paragraphs joined by a space; the string itself when it is not markup.
fn abstract_of(jats: &str) -> String {
    let wrapped = format!(
        r#"<abstract xmlns:jats="http://www.ncbi.nlm.nih.gov/JATS1" xmlns:mml="http://www.w3.org/1998/Math/MathML">{jats}</abstract>"#
    );
    let Ok(doc) = roxmltree::Document::parse(&wrapped) else { return jats.trim().to_owned() };
    let mut paragraphs: Vec<String> = Vec::new();
    for node in doc.root_element().children().filter(|n| n.is_element() && n.tag_name().name() != "title") {
        let text: String = node.descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !text.is_empty() {
            paragraphs.push(text);
        }
    }
    if paragraphs.is_empty() {
        let text: String = doc.root_element().descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect();
        return text.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    paragraphs.join(" ")
}

/// The paper of a Crossref work; `None` for one without a DOI or a title.
fn paper_of(w: Work, fetched_at: &str) -> Option<ExternalPaper> {
    let external_id = normalize_id(&w.doi)?;
    let title = w.title.into_iter().map(|t| t.split_whitespace().collect::<Vec<_>>().join(" ")).find(|t| !t.is_empty())?;
    let authors = w
        .author
        .into_iter()
        .filter_map(|a| {
            let name = match (a.given, a.family, a.name) {
                (Some(g), Some(f), _) => format!("{} {}", g.trim(), f.trim()),
                (None, Some(f), _) => f.trim().to_owned(),
                (_, None, Some(n)) => n.trim().to_owned(),
                _ => return None,
            };
            Some(ExternalAuthor {
                name,
                orcid: a.orcid.map(|o| o.trim_start_matches("https://orcid.org/").trim_start_matches("http://orcid.org/").to_owned()),
                affiliation: a.affiliation.into_iter().find_map(|x| x.name),
            })
        })
        .collect();
    let pdf_url = w.link.into_iter().find(|l| l.content_type.as_deref() == Some("application/pdf")).map(|l| l.url);
    Some(ExternalPaper {
        source: NAME.into(),
        url: w.url.unwrap_or_else(|| format!("https://doi.org/{external_id}")),
        doi: Some(external_id.clone()),
        external_id,
        title,
        abstract_text: w.abstract_jats.as_deref().map(abstract_of).unwrap_or_default(),
        authors,
        publication_date: w.published.as_ref().or(w.issued.as_ref()).and_then(date_of),
        categories: w.subject,
        pdf_url,
        plugin: PLUGIN.into(),
        fetched_at: fetched_at.to_owned(),
    })
}

#[async_trait::async_trait]
impl Source for Crossref {
    fn name(&self) -> &'static str {
        NAME
    }

    fn normalize_id(&self, id: &str) -> Option<String> {
        normalize_id(id)
    }

    async fn search(&self, query: &SourceQuery) -> Result<Vec<ExternalPaper>, SourceError> {
        let text = query.text.trim();
        let author = query.author.as_deref().map(str::trim).filter(|a| !a.is_empty());
        if text.is_empty() && author.is_none() {
            return Ok(Vec::new());
        }
        let rows = query.limit.clamp(1, MAX_RESULTS);
        let mut path = format!("/works?rows={rows}");
        if !text.is_empty() {
            path.push_str(&format!("&query.bibliographic={}", encode(text)));
        }
        if let Some(author) = author {
            path.push_str(&format!("&query.author={}", encode(author)));
        }
        let Some(body) = self.fetcher.get(&path).await? else { return Ok(Vec::new()) };
        let page: Answer<WorkList> = json(NAME, &body)?;
        let at = fetched_now();
        Ok(page.message.items.into_iter().filter_map(|w| paper_of(w, &at)).take(query.limit).collect())
    }

    async fn get(&self, external_id: &str) -> Result<Option<ExternalPaper>, SourceError> {
        let Some(doi) = normalize_id(external_id) else { return Ok(None) };
        // A DOI's suffix may hold any printable character: each is encoded but its slashes.
        let path = format!("/works/{}", doi.split('/').map(encode).collect::<Vec<_>>().join("/"));
        let Some(body) = self.fetcher.get(&path).await? else { return Ok(None) };
        let work: Answer<Work> = json(NAME, &body)?;
        Ok(paper_of(work.message, &fetched_now()).filter(|p| p.external_id == doi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dois_are_read_in_every_form_crossref_users_write_them() {
        assert_eq!(normalize_id("10.1103/PhysRevD.110.123456"), Some("10.1103/physrevd.110.123456".into()));
        assert_eq!(normalize_id("https://doi.org/10.1145/3589335.3651526"), Some("10.1145/3589335.3651526".into()));
        assert_eq!(normalize_id("doi:10.48550/arXiv.2509.21237"), Some("10.48550/arxiv.2509.21237".into()));
        assert_eq!(normalize_id("W4402000001"), None);
        assert_eq!(normalize_id("10.1103"), None);
        assert_eq!(normalize_id("11.1/x"), None);
    }

    #[test]
    fn dates_and_jats_abstracts_are_read_as_crossref_writes_them() {
        assert_eq!(date_of(&Dated { date_parts: vec![vec![Some(2024), Some(5), Some(1)]] }).as_deref(), Some("2024-05-01"));
        assert_eq!(date_of(&Dated { date_parts: vec![vec![Some(2024), Some(5)]] }).as_deref(), Some("2024-05"));
        assert_eq!(date_of(&Dated { date_parts: vec![vec![None]] }), None);
        let jats = "<jats:title>Abstract</jats:title><jats:p>Graphs  <jats:italic>retrieve</jats:italic>.</jats:p><jats:p>Twice.</jats:p>";
        assert_eq!(abstract_of(jats), "Graphs retrieve. Twice.");
        assert_eq!(abstract_of("Plain text & more"), "Plain text & more");
    }
}
