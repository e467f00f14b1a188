use serde::{Deserialize, Serialize};

/// A paper fetched from an external scholarly source (arXiv, Crossref, OpenAlex…): what the
/// source said of it when svc fetched it. Keyed by [`ExternalPaper::key`]. Only these events
/// bring outside data into read models, so a replay rebuilds every import without calling
/// any source again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalPaper {
    /// The source's name (`arxiv`, `crossref`…).
    pub source: String,
    /// The paper's identifier at the source (an arXiv id without version, a DOI…).
    pub external_id: String,
    /// The paper's page at the source.
    pub url: String,
    /// The title.
    pub title: String,
    /// The abstract, as plain text.
    #[serde(rename = "abstract", default)]
    pub abstract_text: String,
    /// The authors, in the order the source lists them.
    #[serde(default)]
    pub authors: Vec<ExternalAuthor>,
    /// When it was published (RFC 3339 date or datetime), when the source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publication_date: Option<String>,
    /// The source's subject categories (arXiv categories, Crossref subjects…).
    #[serde(default)]
    pub categories: Vec<String>,
    /// The DOI, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doi: Option<String>,
    /// Where the PDF is, when the source says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdf_url: Option<String>,
    /// The client that fetched it (`arxiv-atom`…).
    pub plugin: String,
    /// When svc fetched it (RFC 3339).
    pub fetched_at: String,
}

impl ExternalPaper {
    /// The log key of a paper: `<source>:<external id>`.
    pub fn key(source: &str, external_id: &str) -> String {
        format!("{source}:{external_id}")
    }
}

/// An author as an external source lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAuthor {
    /// The name, as written.
    pub name: String,
    /// Their ORCID iD, when the source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orcid: Option<String>,
    /// Their affiliation, when the source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affiliation: Option<String>,
}

/// What an external bibliographic service knows of an eprint svc indexes: its citation
/// counts, the works it references, its topics and open-access copy
/// (`pub.svc.admin.triggerCitationExtraction`). Keyed by the eprint's URI; a later one
/// replaces an earlier one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Enrichment {
    /// The eprint.
    pub eprint_uri: String,
    /// The service (`openalex`).
    pub source: String,
    /// The work's id there.
    pub work_id: String,
    /// The DOI it was found by.
    pub doi: String,
    /// How many works cite it.
    pub cited_by_count: u64,
    /// How many works it references.
    pub referenced_works_count: u64,
    /// The ids of the works it references (at most 500).
    #[serde(default)]
    pub references: Vec<String>,
    /// Its topics, most likely first.
    #[serde(default)]
    pub topics: Vec<Topic>,
    /// Where an open-access copy is, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_access_url: Option<String>,
    /// When svc fetched it (RFC 3339).
    pub fetched_at: String,
    /// What the service knows of the works it references, in the order of `references`
    /// (those it knows by title): the eprint's extracted citations. Empty in enrichments
    /// made before svc kept them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cited_works: Vec<CitedWork>,
}

/// A work an enriched eprint references, as the bibliographic service describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CitedWork {
    /// Its id at the service (an OpenAlex URL).
    pub work_id: String,
    /// Its title.
    pub title: String,
    /// Its DOI (lower case), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doi: Option<String>,
    /// Its authors' names, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// The year it was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<u32>,
    /// Where it was published (a journal, a conference, a repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue: Option<String>,
}

/// A topic of an [`Enrichment`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Topic {
    /// Its name.
    pub name: String,
    /// How likely (0 to 1).
    pub score: f64,
}
