//! The registries svc looks people, organizations and subjects up in, for autocompletion
//! and author discovery: ORCID (public API v3, expanded search), ROR (API v2, affiliation
//! matching), Wikidata (`wbsearchentities`), FAST (OCLC's assignFAST suggest service) and
//! OpenAlex (authors). Each is called through its own [`Fetcher`]; what they answer is
//! served as it comes, not stored (nothing of it reaches a read model).

use serde::{Deserialize, Serialize};

use crate::{encode, json, Etiquette, Fetcher, SourceError};

/// ORCID's public API host.
pub const ORCID_URL: &str = "https://pub.orcid.org";
/// ROR's API host.
pub const ROR_URL: &str = "https://api.ror.org";
/// Wikidata's host.
pub const WIKIDATA_URL: &str = "https://www.wikidata.org";
/// OCLC's FAST host.
pub const FAST_URL: &str = "https://fast.oclc.org";
/// OpenAlex's API host.
pub const OPENALEX_URL: &str = "https://api.openalex.org";
/// OpenReview's API (version 2).
pub const OPENREVIEW_URL: &str = "https://api2.openreview.net";

/// Where each registry is, and the contact address given to them.
#[derive(Debug, Clone)]
pub struct RegistryUrls {
    /// ORCID.
    pub orcid: String,
    /// ROR.
    pub ror: String,
    /// Wikidata.
    pub wikidata: String,
    /// FAST.
    pub fast: String,
    /// OpenAlex.
    pub openalex: String,
    /// OpenReview.
    pub openreview: String,
    /// A contact e-mail address (OpenAlex's polite pool, every user agent).
    pub contact: Option<String>,
}

impl Default for RegistryUrls {
    fn default() -> RegistryUrls {
        RegistryUrls {
            orcid: ORCID_URL.into(),
            ror: ROR_URL.into(),
            wikidata: WIKIDATA_URL.into(),
            fast: FAST_URL.into(),
            openalex: OPENALEX_URL.into(),
            openreview: OPENREVIEW_URL.into(),
            contact: None,
        }
    }
}

impl RegistryUrls {
    /// Every registry at one base URL (a fixture server answering for all of them).
    pub fn all_at(url: &str) -> RegistryUrls {
        RegistryUrls {
            orcid: url.into(),
            ror: url.into(),
            wikidata: url.into(),
            fast: url.into(),
            openalex: url.into(),
            openreview: url.into(),
            contact: None,
        }
    }
}

/// A person found in ORCID.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrcidPerson {
    /// The ORCID iD.
    pub orcid: String,
    /// The name to show: the credit name, or given and family names.
    pub name: String,
    /// Given names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub given_names: Option<String>,
    /// Family names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family_names: Option<String>,
    /// Their institutions.
    pub institutions: Vec<String>,
}

/// An organization found in ROR.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    /// The ROR id (a URL).
    pub ror_id: String,
    /// Its display name.
    pub name: String,
    /// Its country, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// Its city, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    /// Its types (education, facility…).
    pub types: Vec<String>,
    /// ROR's confidence that it is the organization the text names.
    pub chosen: bool,
    /// ROR's matching score.
    pub score: f64,
}

/// A subject heading or concept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Keyword {
    /// Its id at its source (`Q2539`, `fst01004795`).
    pub id: String,
    /// Its label.
    pub label: String,
    /// `wikidata` or `fast`.
    pub source: &'static str,
    /// What it is, when the source says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its URI.
    pub uri: String,
}

/// A profile found in OpenReview.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenReviewProfile {
    /// The profile's id (`~Jane_Doe1`).
    pub id: String,
    /// The preferred name (else the first), or the id.
    pub display_name: String,
    /// The institution of the profile's latest position, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub institution: Option<String>,
}

/// An author found in OpenAlex.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorMatch {
    /// `openalex` or `orcid`.
    pub source: &'static str,
    /// Its id there (an OpenAlex author URL, an ORCID iD).
    pub id: String,
    /// The name.
    pub name: String,
    /// The ORCID iD, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orcid: Option<String>,
    /// The last known institution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub institution: Option<String>,
    /// Works counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub works_count: Option<u64>,
}

/// The registries' clients.
pub struct Registries {
    orcid: Fetcher,
    ror: Fetcher,
    wikidata: Fetcher,
    fast: Fetcher,
    openalex: Fetcher,
    openreview: Fetcher,
    orcid_oauth: Option<crate::orcid_oauth::OrcidOAuth>,
}

fn etiquette(name: &'static str, url: &str, contact: Option<&str>) -> Etiquette {
    let mut e = Etiquette::new(name, url);
    e.deadline = std::time::Duration::from_secs(5);
    if let Some(c) = contact {
        e.user_agent = format!("{} mailto:{c}", e.user_agent);
    }
    e
}

/// Whether `s` is an ORCID iD (`0000-0002-1825-0097`, the last character a digit or X).
pub fn is_orcid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 9 | 14 => *c == b'-',
            18 => c.is_ascii_digit() || *c == b'X',
            _ => c.is_ascii_digit(),
        })
}

impl Registries {
    /// Clients of the registries at `urls`. ORCID is asked for JSON; OpenAlex is given the
    /// contact address (its polite pool) and ORCID, ROR and OpenAlex are called at most
    /// ten times a second each.
    pub fn new(urls: &RegistryUrls) -> Registries {
        let contact = urls.contact.as_deref();
        let mut orcid = etiquette("orcid", &urls.orcid, contact);
        orcid.accept = "application/json";
        orcid.interval = std::time::Duration::from_millis(100);
        let mut ror = etiquette("ror", &urls.ror, contact);
        ror.interval = std::time::Duration::from_millis(100);
        let mut openalex = etiquette("openalex", &urls.openalex, contact);
        openalex.interval = std::time::Duration::from_millis(100);
        // OpenAlex's polite pool: the contact in every query too.
        openalex.query_param = contact.map(|c| ("mailto", c.to_owned()));
        // OpenReview allows some 100 requests a minute per client.
        let mut openreview = etiquette("openreview", &urls.openreview, contact);
        openreview.interval = std::time::Duration::from_millis(600);
        openreview.accept = "application/json";
        Registries {
            orcid: Fetcher::new(orcid),
            ror: Fetcher::new(ror),
            wikidata: Fetcher::new(etiquette("wikidata", &urls.wikidata, contact)),
            fast: Fetcher::new(etiquette("fast", &urls.fast, contact)),
            openalex: Fetcher::new(openalex),
            openreview: Fetcher::new(openreview),
            orcid_oauth: None,
        }
    }

    /// The same, with svc registered as an ORCID OAuth client (ORCID verification).
    #[must_use]
    pub fn with_orcid_oauth(mut self, oauth: crate::orcid_oauth::OrcidOAuth) -> Registries {
        self.orcid_oauth = Some(oauth);
        self
    }

    /// svc's ORCID OAuth client, when one is configured.
    pub fn orcid_oauth(&self) -> Option<&crate::orcid_oauth::OrcidOAuth> {
        self.orcid_oauth.as_ref()
    }

    /// People in ORCID by name or iD.
    ///
    /// # Errors
    /// [`SourceError`] when ORCID gives no usable answer.
    pub async fn orcid(&self, query: &str, limit: usize) -> Result<Vec<OrcidPerson>, SourceError> {
        #[derive(Deserialize)]
        struct Found {
            #[serde(rename = "expanded-result", default)]
            results: Option<Vec<Person>>,
        }
        #[derive(Deserialize)]
        struct Person {
            #[serde(rename = "orcid-id")]
            orcid: String,
            #[serde(rename = "given-names")]
            given: Option<String>,
            #[serde(rename = "family-names")]
            family: Option<String>,
            #[serde(rename = "credit-name")]
            credit: Option<String>,
            #[serde(rename = "institution-name", default)]
            institutions: Vec<String>,
        }
        let q = query.trim();
        let q = if is_orcid(q) { format!("orcid:{q}") } else { q.to_owned() };
        let body = self.orcid.get(&format!("/v3.0/expanded-search/?q={}&rows={limit}", encode(&q))).await?.unwrap_or_default();
        let found: Found = json("orcid", &body)?;
        Ok(found
            .results
            .unwrap_or_default()
            .into_iter()
            .filter(|p| is_orcid(&p.orcid))
            .take(limit)
            .map(|p| {
                let joined = [p.given.as_deref(), p.family.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
                OrcidPerson {
                    name: p.credit.clone().filter(|c| !c.is_empty()).unwrap_or(joined),
                    orcid: p.orcid,
                    given_names: p.given,
                    family_names: p.family,
                    institutions: p.institutions,
                }
            })
            .collect())
    }

    /// Organizations ROR matches an affiliation string to, the one it chose first, then
    /// by score.
    ///
    /// # Errors
    /// [`SourceError`] when ROR gives no usable answer.
    pub async fn ror(&self, affiliation: &str, limit: usize) -> Result<Vec<Organization>, SourceError> {
        #[derive(Deserialize)]
        struct Found {
            #[serde(default)]
            items: Vec<Item>,
        }
        #[derive(Deserialize)]
        struct Item {
            #[serde(default)]
            score: f64,
            #[serde(default)]
            chosen: bool,
            organization: Org,
        }
        #[derive(Deserialize)]
        struct Org {
            id: String,
            #[serde(default)]
            names: Vec<Name>,
            #[serde(default)]
            types: Vec<String>,
            #[serde(default)]
            locations: Vec<Location>,
        }
        #[derive(Deserialize)]
        struct Name {
            value: String,
            #[serde(default)]
            types: Vec<String>,
        }
        #[derive(Deserialize)]
        struct Location {
            geonames_details: Option<Geo>,
        }
        #[derive(Deserialize)]
        struct Geo {
            name: Option<String>,
            country_name: Option<String>,
        }
        let body = self.ror.get(&format!("/v2/organizations?affiliation={}", encode(affiliation.trim()))).await?.unwrap_or_default();
        let found: Found = json("ror", &body)?;
        let mut orgs: Vec<Organization> = found
            .items
            .into_iter()
            .filter_map(|i| {
                let name =
                    i.organization.names.iter().find(|n| n.types.iter().any(|t| t == "ror_display")).or(i.organization.names.first())?;
                let geo = i.organization.locations.into_iter().find_map(|l| l.geonames_details);
                Some(Organization {
                    ror_id: i.organization.id,
                    name: name.value.clone(),
                    country: geo.as_ref().and_then(|g| g.country_name.clone()),
                    city: geo.and_then(|g| g.name),
                    types: i.organization.types,
                    chosen: i.chosen,
                    score: i.score,
                })
            })
            .collect();
        orgs.sort_by(|a, b| b.chosen.cmp(&a.chosen).then(b.score.total_cmp(&a.score)));
        orgs.truncate(limit);
        Ok(orgs)
    }

    /// Wikidata items by label.
    ///
    /// # Errors
    /// [`SourceError`] when Wikidata gives no usable answer.
    pub async fn wikidata(&self, text: &str, limit: usize) -> Result<Vec<Keyword>, SourceError> {
        #[derive(Deserialize)]
        struct Found {
            #[serde(default)]
            search: Vec<Entity>,
        }
        #[derive(Deserialize)]
        struct Entity {
            id: String,
            label: Option<String>,
            description: Option<String>,
            concepturi: Option<String>,
        }
        let path = format!(
            "/w/api.php?action=wbsearchentities&search={}&language=en&uselang=en&type=item&format=json&limit={limit}",
            encode(text.trim())
        );
        let found: Found = json("wikidata", &self.wikidata.get(&path).await?.unwrap_or_default())?;
        Ok(found
            .search
            .into_iter()
            .filter_map(|e| {
                Some(Keyword {
                    uri: e.concepturi.unwrap_or_else(|| format!("http://www.wikidata.org/entity/{}", e.id)),
                    label: e.label?,
                    id: e.id,
                    source: "wikidata",
                    description: e.description,
                })
            })
            .take(limit)
            .collect())
    }

    /// FAST subject headings suggested for what is typed.
    ///
    /// # Errors
    /// [`SourceError`] when FAST gives no usable answer.
    pub async fn fast(&self, text: &str, limit: usize) -> Result<Vec<Keyword>, SourceError> {
        #[derive(Deserialize)]
        struct Found {
            response: Response,
        }
        #[derive(Deserialize)]
        struct Response {
            #[serde(default)]
            docs: Vec<Doc>,
        }
        #[derive(Deserialize)]
        struct Doc {
            idroot: String,
            auth: String,
            #[serde(rename = "type")]
            kind: Option<String>,
        }
        let path = format!(
            "/searchfast/fastsuggest?query={}&queryIndex=suggestall&queryReturn=suggestall,idroot,auth,type&suggest=autoSubject&rows={limit}",
            encode(text.trim())
        );
        let found: Found = json("fast", &self.fast.get(&path).await?.unwrap_or_default())?;
        Ok(found
            .response
            .docs
            .into_iter()
            .take(limit)
            .map(|d| Keyword {
                uri: format!("http://id.worldcat.org/fast/{}", d.idroot.trim_start_matches("fst").trim_start_matches('0')),
                id: d.idroot,
                label: d.auth,
                source: "fast",
                description: d.kind.filter(|k| k != "auth"),
            })
            .collect())
    }

    /// Profiles in OpenReview by name (`GET /profiles/search?term=`), as OpenReview ranks
    /// them.
    ///
    /// # Errors
    /// [`SourceError`] when OpenReview gives no usable answer.
    pub async fn openreview(&self, name: &str, limit: usize) -> Result<Vec<OpenReviewProfile>, SourceError> {
        #[derive(Deserialize)]
        struct Found {
            #[serde(default)]
            profiles: Vec<Profile>,
        }
        #[derive(Deserialize)]
        struct Profile {
            id: String,
            #[serde(default)]
            content: Content,
        }
        #[derive(Deserialize, Default)]
        struct Content {
            #[serde(default)]
            names: Vec<Name>,
            #[serde(default)]
            history: Vec<Position>,
        }
        #[derive(Deserialize)]
        struct Name {
            fullname: Option<String>,
            #[serde(default)]
            preferred: bool,
        }
        #[derive(Deserialize)]
        struct Position {
            institution: Option<Institution>,
        }
        #[derive(Deserialize)]
        struct Institution {
            name: Option<String>,
        }
        let path = format!("/profiles/search?term={}&limit={limit}", encode(name.trim()));
        let found: Found = json("openreview", &self.openreview.get(&path).await?.unwrap_or_default())?;
        Ok(found
            .profiles
            .into_iter()
            .filter(|p| p.id.starts_with('~'))
            .take(limit)
            .map(|p| {
                let names = &p.content.names;
                let name = names.iter().find(|n| n.preferred).or(names.first()).and_then(|n| n.fullname.clone());
                OpenReviewProfile {
                    display_name: name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| p.id.clone()),
                    institution: p.content.history.into_iter().find_map(|h| h.institution.and_then(|i| i.name)),
                    id: p.id,
                }
            })
            .collect())
    }

    /// Authors in OpenAlex by name.
    ///
    /// # Errors
    /// [`SourceError`] when OpenAlex gives no usable answer.
    pub async fn openalex_authors(&self, name: &str, limit: usize) -> Result<Vec<AuthorMatch>, SourceError> {
        #[derive(Deserialize)]
        struct Found {
            #[serde(default)]
            results: Vec<Author>,
        }
        #[derive(Deserialize)]
        struct Author {
            id: String,
            display_name: String,
            orcid: Option<String>,
            works_count: Option<u64>,
            #[serde(default)]
            last_known_institutions: Vec<Institution>,
        }
        #[derive(Deserialize)]
        struct Institution {
            display_name: Option<String>,
        }
        let path = format!("/authors?search={}&per-page={limit}", encode(name.trim()));
        let found: Found = json("openalex", &self.openalex.get(&path).await?.unwrap_or_default())?;
        Ok(found
            .results
            .into_iter()
            .take(limit)
            .map(|a| AuthorMatch {
                source: "openalex",
                id: a.id,
                name: a.display_name,
                orcid: a.orcid.map(|o| o.trim_start_matches("https://orcid.org/").to_owned()),
                institution: a.last_known_institutions.into_iter().find_map(|i| i.display_name),
                works_count: a.works_count,
            })
            .collect())
    }
}

/// A work in OpenAlex, as an enrichment of an eprint needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Work {
    /// The OpenAlex id (a URL).
    pub id: String,
    /// How many works cite it.
    pub cited_by_count: u64,
    /// How many works it references.
    pub referenced_works_count: u64,
    /// The works it references (OpenAlex ids, at most 500).
    pub references: Vec<String>,
    /// Its topics: (name, score), most likely first.
    pub topics: Vec<(String, f64)>,
    /// Its open-access copy.
    pub open_access_url: Option<String>,
}

impl Registries {
    /// The OpenAlex work of a DOI; `None` when OpenAlex has none.
    ///
    /// # Errors
    /// [`SourceError`] when OpenAlex gives no usable answer.
    pub async fn openalex_work(&self, doi: &str) -> Result<Option<Work>, SourceError> {
        #[derive(Deserialize)]
        struct Found {
            id: String,
            #[serde(default)]
            cited_by_count: u64,
            #[serde(default)]
            referenced_works_count: u64,
            #[serde(default)]
            referenced_works: Vec<String>,
            #[serde(default)]
            topics: Vec<FoundTopic>,
            open_access: Option<OpenAccess>,
        }
        #[derive(Deserialize)]
        struct FoundTopic {
            display_name: String,
            #[serde(default)]
            score: f64,
        }
        #[derive(Deserialize)]
        struct OpenAccess {
            oa_url: Option<String>,
        }
        let doi = doi.trim().trim_start_matches("https://doi.org/").to_lowercase();
        let path = format!("/works/doi:{}", doi.split('/').map(encode).collect::<Vec<_>>().join("/"));
        let Some(body) = self.openalex.get(&path).await? else { return Ok(None) };
        let w: Found = json("openalex", &body)?;
        Ok(Some(Work {
            id: w.id,
            cited_by_count: w.cited_by_count,
            referenced_works_count: w.referenced_works_count,
            references: w.referenced_works.into_iter().take(500).collect(),
            topics: w.topics.into_iter().map(|t| (t.display_name, t.score)).collect(),
            open_access_url: w.open_access.and_then(|o| o.oa_url),
        }))
    }
}

impl Registries {
    /// What OpenAlex knows of the works of `ids` (OpenAlex ids or their URLs), asked 50 at
    /// a time, in the order of `ids`: those it knows, with a title.
    ///
    /// # Errors
    /// [`SourceError`] when OpenAlex gives no usable answer.
    pub async fn openalex_cited_works(&self, ids: &[String]) -> Result<Vec<event_schema::CitedWork>, SourceError> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            results: Vec<Found>,
        }
        #[derive(Deserialize)]
        struct Found {
            id: String,
            display_name: Option<String>,
            doi: Option<String>,
            publication_year: Option<u32>,
            #[serde(default)]
            authorships: Vec<Authorship>,
            primary_location: Option<Location>,
        }
        #[derive(Deserialize)]
        struct Authorship {
            author: Option<Named>,
            raw_author_name: Option<String>,
        }
        #[derive(Deserialize)]
        struct Named {
            display_name: Option<String>,
        }
        #[derive(Deserialize)]
        struct Location {
            source: Option<Named>,
        }
        let bare = |id: &str| id.trim().trim_start_matches("https://openalex.org/").to_owned();
        let mut found: std::collections::HashMap<String, event_schema::CitedWork> = std::collections::HashMap::new();
        for chunk in ids.chunks(50) {
            let list = chunk.iter().map(|i| bare(i)).collect::<Vec<_>>().join("|");
            let path = format!(
                "/works?filter=openalex:{}&per-page=50&select=id,display_name,doi,publication_year,authorships,primary_location",
                encode(&list)
            );
            let page: Page = json("openalex", &self.openalex.get(&path).await?.unwrap_or_default())?;
            for w in page.results {
                let Some(title) = w.display_name.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) else { continue };
                let work = event_schema::CitedWork {
                    work_id: w.id.clone(),
                    title,
                    doi: w.doi.map(|d| d.trim_start_matches("https://doi.org/").to_lowercase()),
                    authors: w
                        .authorships
                        .into_iter()
                        .filter_map(|a| a.author.and_then(|p| p.display_name).or(a.raw_author_name))
                        .collect(),
                    year: w.publication_year,
                    venue: w.primary_location.and_then(|l| l.source).and_then(|s| s.display_name),
                };
                found.insert(bare(&w.id), work);
            }
        }
        Ok(ids.iter().filter_map(|i| found.remove(&bare(i))).collect())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn orcid_ids_are_told_from_names() {
        for (s, ok) in
            [("0000-0002-1825-0097", true), ("0000-0001-5109-369X", true), ("0000-0002-1825-009", false), ("Josiah Carberry", false)]
        {
            assert_eq!(super::is_orcid(s), ok, "{s}");
        }
    }
}
