//! arXiv's OAI-PMH interface (<https://info.arxiv.org/help/oa/index.html>): the papers
//! announced or changed in a date range, in arXiv's own metadata format (`arXiv`), a page
//! at a time (`ListRecords`, continued by `resumptionToken`). It is how a whole category or
//! period of arXiv is imported (`svc backfill arxiv`), where the search API serves single
//! papers and searches.
//!
//! arXiv asks harvesters for one request every three seconds on one connection and answers
//! `503` with `Retry-After` when it wants a harvester to wait, which [`Fetcher`] honours.
//! Pages are not cached: a harvest reads each once.

use std::time::Duration;

use event_schema::{ExternalAuthor, ExternalPaper};

use crate::arxiv::{child, text};
use crate::{encode, Etiquette, Fetcher, SourceError};

/// The name the harvester is known by in errors.
pub const NAME: &str = "arxiv-oai";
/// The client's name in imports.
pub const PLUGIN: &str = "arxiv-oai";
/// arXiv's OAI-PMH base URL.
pub const BASE_URL: &str = "https://oaipmh.arxiv.org/oai";

const OAI: &str = "http://www.openarchives.org/OAI/2.0/";
const ARXIV: &str = "http://arxiv.org/OAI/arXiv/";

/// How svc harvests arXiv at `base_url`: one request every 3 s on one connection, a minute
/// per page (arXiv's `Retry-After` waits included), pages up to 50 MiB, none kept.
pub fn etiquette(base_url: &str, contact: Option<&str>) -> Etiquette {
    let mut e = Etiquette::new(NAME, base_url);
    e.interval = Duration::from_secs(3);
    e.connections = 1;
    e.deadline = Duration::from_secs(60);
    e.retries = 4;
    e.max_body = 50 * 1024 * 1024;
    e.cache_for = Duration::ZERO;
    e.accept = "text/xml";
    if let Some(contact) = contact {
        e.user_agent = format!("{} mailto:{contact}", e.user_agent);
    }
    e
}

/// Which records a harvest asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Harvest {
    /// The first datestamp (`YYYY-MM-DD`), or from the start.
    pub from: Option<String>,
    /// The last datestamp, or to today.
    pub until: Option<String>,
    /// An OAI set (`cs`, `physics:hep-th`), or every set.
    pub set: Option<String>,
}

/// One page of a harvest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The papers of the page's records.
    pub papers: Vec<ExternalPaper>,
    /// The arXiv ids of records marked deleted.
    pub deleted: Vec<String>,
    /// Where the next page starts; `None` on the last.
    pub resumption_token: Option<String>,
    /// How many records the whole list holds, when arXiv says.
    pub complete_list_size: Option<u64>,
}

/// The OAI-PMH client of arXiv.
pub struct ArxivOai {
    fetcher: Fetcher,
}

impl ArxivOai {
    /// A client that harvests as `etiquette` says.
    pub fn new(etiquette: Etiquette) -> ArxivOai {
        ArxivOai { fetcher: Fetcher::new(etiquette) }
    }

    /// The first page of `harvest` (`token: None`) or the page a resumption token names.
    ///
    /// # Errors
    /// [`SourceError`] when arXiv gives no usable answer, or an OAI-PMH error other than
    /// `noRecordsMatch` (an empty list).
    pub async fn list_records(&self, harvest: &Harvest, token: Option<&str>) -> Result<Page, SourceError> {
        let query = match token {
            Some(token) => format!("?verb=ListRecords&resumptionToken={}", encode(token)),
            None => {
                let mut q = String::from("?verb=ListRecords&metadataPrefix=arXiv");
                for (name, value) in [("from", &harvest.from), ("until", &harvest.until), ("set", &harvest.set)] {
                    if let Some(v) = value {
                        q.push_str(&format!("&{name}={}", encode(v)));
                    }
                }
                q
            }
        };
        let Some(body) = self.fetcher.get(&query).await? else {
            return Err(SourceError::Status { name: NAME, status: 404 });
        };
        let xml = std::str::from_utf8(&body).map_err(|e| malformed(e.to_string()))?;
        parse_page(xml, &crate::fetched_now())
    }
}

fn malformed(reason: String) -> SourceError {
    SourceError::Malformed { name: NAME, reason }
}

/// A `ListRecords` answer: its records as papers (fetched at `fetched_at`), its deleted
/// records' ids and its resumption token.
///
/// # Errors
/// [`SourceError::Malformed`] for a document that is not an OAI-PMH answer, or an OAI-PMH
/// error other than `noRecordsMatch`.
pub fn parse_page(xml: &str, fetched_at: &str) -> Result<Page, SourceError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| malformed(e.to_string()))?;
    let root = doc.root_element();
    if !root.has_tag_name((OAI, "OAI-PMH")) {
        return Err(malformed(format!("not an OAI-PMH answer (<{}>)", root.tag_name().name())));
    }
    if let Some(error) = child(root, OAI, "error") {
        let code = error.attribute("code").unwrap_or("unknown");
        if code == "noRecordsMatch" {
            return Ok(Page::default());
        }
        return Err(malformed(format!("OAI-PMH error {code}: {}", text(Some(error)).unwrap_or_default())));
    }
    let list = child(root, OAI, "ListRecords").ok_or_else(|| malformed("no ListRecords".into()))?;
    let mut page = Page::default();
    for record in list.children().filter(|c| c.has_tag_name((OAI, "record"))) {
        let Some(header) = child(record, OAI, "header") else { continue };
        let id = text(child(header, OAI, "identifier")).and_then(|i| i.strip_prefix("oai:arXiv.org:").map(str::to_owned));
        if header.attribute("status") == Some("deleted") {
            page.deleted.extend(id);
            continue;
        }
        let Some(meta) = child(record, OAI, "metadata").and_then(|m| child(m, ARXIV, "arXiv")) else { continue };
        if let Some(paper) = paper_of(meta, fetched_at) {
            page.papers.push(paper);
        }
    }
    if let Some(token) = child(list, OAI, "resumptionToken") {
        page.resumption_token = text(Some(token));
        page.complete_list_size = token.attribute("completeListSize").and_then(|n| n.parse().ok());
    }
    Ok(page)
}

/// The paper of an `arXiv` metadata record; `None` without an id or a title.
fn paper_of(meta: roxmltree::Node<'_, '_>, fetched_at: &str) -> Option<ExternalPaper> {
    let external_id = text(child(meta, ARXIV, "id")).and_then(|i| crate::arxiv::normalize_id(&i))?;
    let title = text(child(meta, ARXIV, "title"))?;
    let authors = child(meta, ARXIV, "authors")
        .into_iter()
        .flat_map(|a| a.children().filter(|c| c.has_tag_name((ARXIV, "author"))))
        .filter_map(|a| {
            let name = match (text(child(a, ARXIV, "forenames")), text(child(a, ARXIV, "keyname"))) {
                (Some(first), Some(last)) => format!("{first} {last}"),
                (None, Some(last)) => last,
                _ => return None,
            };
            Some(ExternalAuthor { name, orcid: None, affiliation: text(child(a, ARXIV, "affiliation")) })
        })
        .collect();
    Some(ExternalPaper {
        source: crate::arxiv::NAME.into(),
        url: format!("https://arxiv.org/abs/{external_id}"),
        pdf_url: Some(format!("https://arxiv.org/pdf/{external_id}")),
        title,
        abstract_text: text(child(meta, ARXIV, "abstract")).unwrap_or_default(),
        authors,
        publication_date: text(child(meta, ARXIV, "created")),
        categories: text(child(meta, ARXIV, "categories")).map(|c| c.split(' ').map(str::to_owned).collect()).unwrap_or_default(),
        doi: text(child(meta, ARXIV, "doi")),
        plugin: PLUGIN.into(),
        fetched_at: fetched_at.to_owned(),
        external_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_that_are_not_oai_answers_and_oai_errors_are_told_apart() {
        assert!(matches!(parse_page("<html/>", "t"), Err(SourceError::Malformed { .. })));
        assert!(matches!(parse_page("{}", "t"), Err(SourceError::Malformed { .. })));
        let error = |code: &str| {
            format!(r#"<OAI-PMH xmlns="{OAI}"><responseDate>2026-11-27T00:00:00Z</responseDate><error code="{code}">why</error></OAI-PMH>"#)
        };
        assert_eq!(parse_page(&error("noRecordsMatch"), "t").unwrap(), Page::default());
        let e = parse_page(&error("badResumptionToken"), "t").unwrap_err();
        assert!(e.to_string().contains("badResumptionToken: why"), "{e}");
    }
}
