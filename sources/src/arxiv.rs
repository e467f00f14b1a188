//! arXiv through its API (the Atom feed of `/api/query`, arXiv API User's Manual §3):
//! searches by words and author, and papers by identifier.
//!
//! arXiv asks API clients for one request every three seconds on a single connection
//! ([`etiquette`]); answers are kept an hour.

use std::time::Duration;

use event_schema::{ExternalAuthor, ExternalPaper};

use crate::{encode, Etiquette, Fetcher, Source, SourceError, SourceQuery};

/// The source's name.
pub const NAME: &str = "arxiv";
/// The client's name in imports.
pub const PLUGIN: &str = "arxiv-atom";
/// arXiv's API host.
pub const BASE_URL: &str = "https://export.arxiv.org";
/// Where arXiv serves its papers' PDFs.
pub const PDF_URL: &str = "https://arxiv.org";
/// The hosts arXiv's PDF links name (`http://arxiv.org/pdf/<id>v<n>` in the API's feed).
const PDF_HOSTS: &[&str] = &["arxiv.org", "www.arxiv.org", "export.arxiv.org"];
/// The largest PDF passed on (arXiv's own limit for a submission is 50 MB).
pub const MAX_PDF: usize = 50 * 1024 * 1024;

const ATOM: &str = "http://www.w3.org/2005/Atom";
const ARXIV: &str = "http://arxiv.org/schemas/atom";

/// The most papers one search asks for.
const MAX_RESULTS: usize = 100;

/// How svc calls arXiv: the published rate (one request every 3 s) on one connection, a
/// contact address in the user agent when the operator gives one.
pub fn etiquette(base_url: &str, contact: Option<&str>) -> Etiquette {
    let mut e = Etiquette::new(NAME, base_url);
    e.interval = Duration::from_secs(3);
    e.connections = 1;
    if let Some(contact) = contact {
        e.user_agent = format!("{} mailto:{contact}", e.user_agent);
    }
    e
}

/// How svc fetches arXiv's PDFs from `pdf_url`: one at a time, at most one a second, up to
/// [`MAX_PDF`], within 30 s, not kept (a client or a cache in front of svc keeps them).
pub fn pdf_etiquette(pdf_url: &str, contact: Option<&str>) -> Etiquette {
    for_pdfs(etiquette(pdf_url, contact))
}

/// `e` (its host and user agent) with the pace, bounds and cache of PDF fetches.
fn for_pdfs(mut e: Etiquette) -> Etiquette {
    e.interval = Duration::from_secs(1);
    e.max_body = MAX_PDF;
    e.deadline = Duration::from_secs(30);
    e.cache_for = Duration::ZERO;
    e.accept = "application/pdf";
    e
}

/// The arXiv client.
pub struct Arxiv {
    fetcher: Fetcher,
    pdfs: Fetcher,
}

impl Arxiv {
    /// A client that calls arXiv's API as `etiquette` says, and fetches PDFs from
    /// [`PDF_URL`].
    pub fn new(etiquette: Etiquette) -> Arxiv {
        let pdfs = for_pdfs(Etiquette { base_url: PDF_URL.into(), ..etiquette.clone() });
        Arxiv { fetcher: Fetcher::new(etiquette), pdfs: Fetcher::new(pdfs) }
    }

    /// The same client, fetching PDFs as `etiquette` says (a mirror, or a test's server).
    #[must_use]
    pub fn with_pdfs(mut self, etiquette: Etiquette) -> Arxiv {
        self.pdfs = Fetcher::new(etiquette);
        self
    }

    async fn feed(&self, query: &[(&str, &str)]) -> Result<Option<Vec<ExternalPaper>>, SourceError> {
        let query: String = query.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect::<Vec<_>>().join("&");
        let Some(body) = self.fetcher.get(&format!("/api/query?{query}")).await? else { return Ok(None) };
        let text = std::str::from_utf8(&body).map_err(|_| malformed("the feed is not UTF-8"))?;
        parse_feed(text, &crate::fetched_now()).map(Some)
    }
}

#[async_trait::async_trait]
impl Source for Arxiv {
    fn name(&self) -> &'static str {
        NAME
    }

    fn normalize_id(&self, id: &str) -> Option<String> {
        normalize_id(id)
    }

    async fn search(&self, query: &SourceQuery) -> Result<Vec<ExternalPaper>, SourceError> {
        let mut terms: Vec<String> = words(&query.text).map(|w| format!("all:{w}")).collect();
        if let Some(author) = query.author.as_deref().filter(|a| !a.trim().is_empty()) {
            terms.push(format!("au:\"{}\"", author.replace('"', " ").trim()));
        }
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let n = query.limit.clamp(1, MAX_RESULTS).to_string();
        Ok(self.feed(&[("search_query", &terms.join(" AND ")), ("start", "0"), ("max_results", &n)]).await?.unwrap_or_default())
    }

    async fn get(&self, external_id: &str) -> Result<Option<ExternalPaper>, SourceError> {
        let Some(id) = normalize_id(external_id) else { return Ok(None) };
        let papers = self.feed(&[("id_list", &id), ("max_results", "1")]).await?.unwrap_or_default();
        Ok(papers.into_iter().find(|p| p.external_id == id))
    }

    /// An `/pdf/…` URL of arXiv's hosts, or of the host PDFs are fetched from.
    fn serves_pdf(&self, url: &str) -> bool {
        let Ok(url) = reqwest::Url::parse(url) else { return false };
        let ours = reqwest::Url::parse(&self.pdfs.etiquette().base_url).ok();
        let host_is_ours = ours.is_some_and(|o| o.host_str() == url.host_str() && o.port_or_known_default() == url.port_or_known_default());
        matches!(url.scheme(), "http" | "https")
            && url.path().starts_with("/pdf/")
            && (url.host_str().is_some_and(|h| PDF_HOSTS.contains(&h)) || host_is_ours)
    }

    /// Fetched by its path from the PDF host (arXiv's links say `http://`; arXiv answers
    /// them over HTTPS).
    async fn pdf(&self, url: &str) -> Result<Option<bytes::Bytes>, SourceError> {
        let Some(path) = reqwest::Url::parse(url).ok().filter(|_| self.serves_pdf(url)).map(|u| u.path().to_owned()) else {
            return Ok(None);
        };
        self.pdfs.get(&path).await
    }
}

/// An arXiv identifier without its version, in either scheme (`2503.11731`,
/// `hep-th/9901001`), from an id, an `arXiv:` id or an abs URL; `None` when it is none.
pub fn normalize_id(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.rsplit_once("/abs/").map_or(s, |(_, id)| id);
    let s = s.strip_prefix("arXiv:").or_else(|| s.strip_prefix("arxiv:")).unwrap_or(s);
    let s = match s.rfind('v') {
        Some(i) if i > 0 && s[i + 1..].chars().all(|c| c.is_ascii_digit()) && i + 1 < s.len() => &s[..i],
        _ => s,
    };
    let new_scheme = |id: &str| {
        let (yymm, num) = id.split_once('.')?;
        (yymm.len() == 4 && (4..=5).contains(&num.len()) && (yymm.chars().chain(num.chars())).all(|c| c.is_ascii_digit())).then_some(())
    };
    let old_scheme = |id: &str| {
        let (archive, num) = id.split_once('/')?;
        let archive_ok = !archive.is_empty()
            && archive.len() <= 20
            && archive.chars().all(|c| c.is_ascii_lowercase() || c == '-' || c == '.' || c.is_ascii_uppercase());
        (archive_ok && num.len() == 7 && num.chars().all(|c| c.is_ascii_digit())).then_some(())
    };
    (new_scheme(s).is_some() || old_scheme(s).is_some()).then(|| s.to_owned())
}

/// The words of a search, as arXiv's query language takes them (letters and digits).
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '-').filter(|w| !w.is_empty()).take(16).map(str::to_lowercase)
}

fn malformed(reason: &str) -> SourceError {
    SourceError::Malformed { name: NAME, reason: reason.to_owned() }
}

/// The papers of an arXiv API feed; entries without an arXiv id or a title are left out.
///
/// # Errors
/// [`SourceError::Malformed`] for a document that is not an Atom feed, and for arXiv's
/// error entries (a query it refused).
pub fn parse_feed(xml: &str, fetched_at: &str) -> Result<Vec<ExternalPaper>, SourceError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| malformed(&format!("not XML: {e}")))?;
    let feed = doc.root_element();
    if !feed.has_tag_name((ATOM, "feed")) {
        return Err(malformed("not an Atom feed"));
    }
    let mut papers = Vec::new();
    for entry in feed.children().filter(|c| c.has_tag_name((ATOM, "entry"))) {
        let id = text(child(entry, ATOM, "id")).unwrap_or_default();
        if id.contains("/api/errors") {
            let why = text(child(entry, ATOM, "summary")).unwrap_or_else(|| "an error".into());
            return Err(malformed(&format!("arXiv refused the query: {why}")));
        }
        let (Some(external_id), Some(title)) = (normalize_id(&id), text(child(entry, ATOM, "title"))) else {
            tracing::debug!(id, "an arXiv entry without an id or a title is left out");
            continue;
        };
        let authors = entry
            .children()
            .filter(|c| c.has_tag_name((ATOM, "author")))
            .filter_map(|a| {
                let name = text(child(a, ATOM, "name"))?;
                Some(ExternalAuthor { name, orcid: None, affiliation: text(child(a, ARXIV, "affiliation")) })
            })
            .collect();
        let mut categories: Vec<String> =
            child(entry, ARXIV, "primary_category").and_then(|c| c.attribute("term")).map(str::to_owned).into_iter().collect();
        for c in entry.children().filter(|c| c.has_tag_name((ATOM, "category"))).filter_map(|c| c.attribute("term")) {
            if !categories.iter().any(|k| k == c) {
                categories.push(c.to_owned());
            }
        }
        let link = |pick: &dyn Fn(roxmltree::Node<'_, '_>) -> bool| {
            entry
                .children()
                .filter(|c| c.has_tag_name((ATOM, "link")))
                .find(|l| pick(*l))
                .and_then(|l| l.attribute("href"))
                .map(str::to_owned)
        };
        papers.push(ExternalPaper {
            source: NAME.to_owned(),
            url: link(&|l| l.attribute("rel") == Some("alternate")).unwrap_or_else(|| format!("https://arxiv.org/abs/{external_id}")),
            pdf_url: link(&|l| l.attribute("title") == Some("pdf") || l.attribute("type") == Some("application/pdf")),
            external_id,
            title,
            abstract_text: text(child(entry, ATOM, "summary")).unwrap_or_default(),
            authors,
            publication_date: text(child(entry, ATOM, "published")),
            categories,
            doi: text(child(entry, ARXIV, "doi")),
            plugin: PLUGIN.to_owned(),
            fetched_at: fetched_at.to_owned(),
        });
    }
    Ok(papers)
}

/// The first child element of `node` named `name` in namespace `ns`.
pub(crate) fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, ns: &str, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    node.children().find(|c| c.has_tag_name((ns, name)))
}

/// An element's text, whitespace collapsed; `None` when absent or blank.
pub(crate) fn text(node: Option<roxmltree::Node<'_, '_>>) -> Option<String> {
    node.and_then(|n| n.text()).map(collapse).filter(|t| !t.is_empty())
}

/// Whitespace runs (the feed wraps long titles and abstracts) as one space.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_in_every_form_normalize_to_the_versionless_id() {
        for (given, id) in [
            ("2503.11731", Some("2503.11731")),
            ("2503.11731v2", Some("2503.11731")),
            ("arXiv:2503.11731v1", Some("2503.11731")),
            ("http://arxiv.org/abs/2503.11731v3", Some("2503.11731")),
            ("hep-th/9901001", Some("hep-th/9901001")),
            ("http://arxiv.org/abs/math.AG/0601001v1", Some("math.AG/0601001")),
            ("0704.0001", Some("0704.0001")),
            ("2503.1173", Some("2503.1173")),
            ("25031.1731", None),
            ("hello", None),
            ("", None),
            ("../../etc/passwd", None),
        ] {
            assert_eq!(normalize_id(given).as_deref(), id, "{given}");
        }
    }

    #[test]
    fn documents_that_are_not_feeds_and_error_entries_are_malformed() {
        assert!(matches!(parse_feed("{\"json\": true}", "t"), Err(SourceError::Malformed { .. })));
        assert!(matches!(parse_feed("<html><body>hi</body></html>", "t"), Err(SourceError::Malformed { .. })));
        let error = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/api/errors#incorrect_id_format_for_x</id><title>Error</title><summary>incorrect id format for x</summary></entry></feed>"#;
        let e = parse_feed(error, "t").unwrap_err();
        assert!(e.to_string().contains("incorrect id format for x"), "{e}");
    }
}
