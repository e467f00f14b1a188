//! Reading the imports model: imported papers by key, id, listing and words; claims by id,
//! claimant, status and request.

use event_schema::ExternalPaper;
use serde_json::{json, Value as Json};
use store::{Columns, Scan, Store, Value};

use super::{table, words, ALL, MODEL};
use crate::rows::text;
use crate::ProjectionError;

/// Reads the active version of the imports model.
pub struct ImportsReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

/// What `import.search` asks for.
#[derive(Debug, Clone, Default)]
pub struct ImportQuery {
    /// Words every hit has in its title or its authors' names.
    pub words: String,
    /// One source's papers only.
    pub source: Option<String>,
    /// Papers of this claim status only (`unclaimed`, `pending`, `claimed`).
    pub claim_status: Option<String>,
    /// Words every hit has in its authors' names.
    pub author_name: Option<String>,
    /// An ORCID iD one of the hit's authors has.
    pub author_orcid: Option<String>,
    /// Continue after this import id (the previous page's last).
    pub after: Option<u64>,
    /// Page size.
    pub limit: usize,
}

/// The most postings one search reads before it ends its page short.
const MAX_SCANNED: usize = 20_000;

fn int(c: &Columns, k: &str) -> u64 {
    c.get(k).and_then(Value::as_int).unwrap_or(0) as u64
}

fn id_of(key: &[u8]) -> u64 {
    key.try_into().map(u64::from_be_bytes).unwrap_or_default()
}

/// An imported paper's view (`#importedEprint`).
pub fn paper_view(c: &Columns) -> Json {
    let p: ExternalPaper = match text(c, "paper").and_then(|p| serde_json::from_str(&p).ok()) {
        Some(p) => p,
        None => return json!({"id": int(c, "id")}),
    };
    let mut out = json!({
        "id": int(c, "id"),
        "source": p.source,
        "externalId": p.external_id,
        "url": p.url,
        "title": p.title,
        "abstract": p.abstract_text,
        "authors": p.authors,
        "categories": p.categories,
        "importedByPlugin": p.plugin,
        "importedAt": text(c, "importedAt"),
        "lastSyncedAt": text(c, "lastSyncedAt"),
        "syncStatus": "synced",
        "claimStatus": text(c, "claimStatus").unwrap_or_else(|| "unclaimed".into()),
    });
    for (field, value) in [("publicationDate", p.publication_date), ("doi", p.doi), ("pdfUrl", p.pdf_url)] {
        if let Some(v) = value {
            out[field] = json!(v);
        }
    }
    for field in ["canonicalUri", "claimedByDid", "claimedAt"] {
        if let Some(v) = text(c, field) {
            out[field] = json!(v);
        }
    }
    out
}

/// A claim's view (`claimRequest`, docs/spec details §6), with the claim's evidence and the
/// paper's key and title.
pub fn claim_view(c: &Columns) -> Json {
    let key = text(c, "paperKey").unwrap_or_default();
    let (source, external_id) = key.split_once(':').unwrap_or_default();
    let mut out = json!({
        "id": int(c, "id"),
        "importId": int(c, "importId"),
        "claimantDid": text(c, "claimantDid"),
        "status": text(c, "status"),
        "score": int(c, "score"),
        "evidence": text(c, "evidence").and_then(|e| serde_json::from_str::<Json>(&e).ok()).unwrap_or_else(|| json!({})),
        "source": source,
        "externalId": external_id,
        "title": text(c, "title"),
        "createdAt": text(c, "createdAt"),
    });
    for field in ["canonicalUri", "rejectionReason", "reviewedBy", "reviewedAt", "orcid"] {
        if let Some(v) = text(c, field) {
            out[field] = json!(v);
        }
    }
    if c.contains_key("authorPosition") {
        out["authorPosition"] = json!(int(c, "authorPosition"));
    }
    out
}

/// A co-author request's view (docs/spec details §6).
pub fn coauthor_view(c: &Columns) -> Json {
    let mut out = json!({
        "id": int(c, "id"),
        "eprintUri": text(c, "eprintUri"),
        "eprintOwnerDid": text(c, "eprintOwnerDid"),
        "claimantDid": text(c, "claimantDid"),
        "claimantName": text(c, "claimantName"),
        "authorIndex": int(c, "authorIndex"),
        "authorName": text(c, "authorName"),
        "status": text(c, "status"),
        "createdAt": text(c, "createdAt"),
        "updatedAt": text(c, "updatedAt"),
    });
    for field in ["message", "rejectionReason", "reviewedAt"] {
        if let Some(v) = text(c, field) {
            out[field] = json!(v);
        }
    }
    out
}

impl<'a> ImportsReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<ImportsReader<'a>, ProjectionError> {
        Ok(ImportsReader { store, version: store.active_version(MODEL)? })
    }

    fn get(&self, name: &'static str, partition: &str, key: &[u8]) -> Result<Option<Columns>, ProjectionError> {
        match self.version {
            Some(v) => Ok(self.store.get(&table(v, name), partition, key)?),
            None => Ok(None),
        }
    }

    fn scan(&self, name: &'static str, partition: &str, after: Option<u64>, limit: usize) -> Result<Vec<(u64, Columns)>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let scan = Scan { after: after.map(|a| a.to_be_bytes().to_vec()), limit, reverse: true };
        Ok(self.store.scan(&table(v, name), partition, &scan)?.rows.into_iter().map(|r| (id_of(&r.clustering), r.columns)).collect())
    }

    /// The row of an imported paper by source and external id.
    pub fn paper(&self, source: &str, external_id: &str) -> Result<Option<Columns>, ProjectionError> {
        let Some(key) = self.get("paper_keys", &ExternalPaper::key(source, external_id), &[])? else { return Ok(None) };
        self.paper_by_id(int(&key, "id"))
    }

    /// The row of an imported paper by id.
    pub fn paper_by_id(&self, id: u64) -> Result<Option<Columns>, ProjectionError> {
        self.get("papers", ALL, &id.to_be_bytes())
    }

    /// How many papers were imported, from one source or from all.
    pub fn count(&self, source: Option<&str>) -> Result<u64, ProjectionError> {
        let partition = source.map_or_else(|| ALL.to_owned(), |s| format!("source:{s}"));
        Ok(self.get("counts", &partition, &[])?.map_or(0, |c| int(&c, "n")))
    }

    /// A page of imported papers matching `q`, newest import first, and whether more may
    /// follow (the last row's id is the cursor).
    pub fn search(&self, q: &ImportQuery) -> Result<(Vec<Columns>, bool), ProjectionError> {
        let limit = q.limit.max(1);
        let all_words: Vec<String> = words(&format!("{} {}", q.words, q.author_name.as_deref().unwrap_or_default()));
        let author_words = words(q.author_name.as_deref().unwrap_or_default());
        let keep = |c: &Columns| -> bool {
            let has = |col: &str, ws: &[String]| {
                let held = text(c, col).unwrap_or_default();
                let held: Vec<&str> = held.split(' ').collect();
                ws.iter().all(|w| held.contains(&w.as_str()))
            };
            has("words", &all_words)
                && has("authorWords", &author_words)
                && q.source.as_deref().is_none_or(|s| text(c, "source").as_deref() == Some(s))
                && q.claim_status.as_deref().is_none_or(|s| text(c, "claimStatus").as_deref() == Some(s))
                && q.author_orcid.as_deref().is_none_or(|o| text(c, "orcids").unwrap_or_default().split(' ').any(|h| h == o))
        };
        if all_words.is_empty() {
            // No words: the listing of the source (or of all), filtered.
            let partition = q.source.as_deref().map_or_else(|| ALL.to_owned(), |s| format!("source:{s}"));
            return self.listing("papers", &partition, q.after, limit, keep);
        }
        // The rarest word's postings, each paper checked for the rest.
        let Some(rarest) = self.rarest(&all_words)? else { return Ok((Vec::new(), false)) };
        self.postings("words", &rarest, q.after, limit, keep)
    }

    /// A co-author request by id.
    pub fn coauthor(&self, id: u64) -> Result<Option<Columns>, ProjectionError> {
        let Some(pointer) = self.get("coauthor_keys", &id.to_string(), &[])? else { return Ok(None) };
        self.get("coauthors", &format!("eprint:{}", text(&pointer, "eprintUri").unwrap_or_default()), &id.to_be_bytes())
    }

    /// What became of a co-author request: `Ok(its id)` or `Err(refusal)`; `None` while it
    /// is not applied.
    pub fn coauthor_ask(&self, ask: &str) -> Result<Option<Result<u64, String>>, ProjectionError> {
        self.outcome("coauthor_asks", ask, "requestId")
    }

    /// What a procedure's command (by its UUID, in `name`) became: `Ok(the id in column
    /// `made`)` or `Err(refusal)`; `None` while it is not applied.
    fn outcome(&self, name: &'static str, key: &str, made: &str) -> Result<Option<Result<u64, String>>, ProjectionError> {
        let Some(c) = self.get(name, key, &[])? else { return Ok(None) };
        Ok(Some(match text(&c, "refused") {
            Some(why) => Err(why),
            None => Ok(int(&c, made)),
        }))
    }

    /// A page of co-author requests in a listing (`owner:<did>`, `claimant:<did>`,
    /// `eprint:<uri>`), newest first, the rows kept by `keep`, and whether more may follow.
    pub fn coauthors(
        &self,
        partition: &str,
        after: Option<u64>,
        limit: usize,
        keep: impl Fn(&Columns) -> bool,
    ) -> Result<(Vec<Columns>, bool), ProjectionError> {
        self.listing("coauthors", partition, after, limit, keep)
    }

    /// Whether `did` dismissed the paper `<source>:<external id>` from its suggestions.
    pub fn dismissed(&self, did: &str, source: &str, external_id: &str) -> Result<bool, ProjectionError> {
        Ok(self.get("dismissed", did, ExternalPaper::key(source, external_id).as_bytes())?.is_some())
    }

    /// Up to `limit` imported papers, newest import first, whose title or authors' names
    /// have every word of `done` and a word beginning with `typing` (at least
    /// [`super::PREFIX_CHARS`] characters), for completing what a user types.
    pub fn complete(&self, done: &[String], typing: &str, limit: usize) -> Result<Vec<Columns>, ProjectionError> {
        let Some(prefix) = super::prefix(typing) else { return Ok(Vec::new()) };
        // The postings of the rarest whole word, or of the word being typed.
        let (postings, partition) = match self.rarest(done)? {
            Some(word) => ("words", word),
            None => ("prefixes", prefix),
        };
        let keep = |terms: &Columns| {
            let held = text(terms, "words").unwrap_or_default();
            let held: Vec<&str> = held.split(' ').collect();
            done.iter().all(|w| held.contains(&w.as_str())) && held.iter().any(|h| h.starts_with(typing))
        };
        Ok(self.postings(postings, &partition, None, limit, keep)?.0)
    }

    /// The word of `words` the fewest papers have (by the counts kept per word).
    fn rarest(&self, words: &[String]) -> Result<Option<String>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        let counts_table = table(v, "word_counts");
        let keys: Vec<(&store::TableRef, &str, &[u8])> = words.iter().map(|w| (&counts_table, w.as_str(), &[][..])).collect();
        let counts = self.store.get_each(&keys)?;
        Ok(words.iter().zip(&counts).min_by_key(|(_, c)| c.as_ref().map_or(0, |c| int(c, "n"))).map(|(w, _)| w.clone()))
    }

    /// The newest enrichment of an eprint (an [`event_schema::Enrichment`] as JSON).
    pub fn enrichment(&self, eprint_uri: &str) -> Result<Option<Json>, ProjectionError> {
        Ok(self.get("enrichments", eprint_uri, &[])?.and_then(|c| text(&c, "enrichment")).and_then(|e| serde_json::from_str(&e).ok()))
    }

    /// Up to `limit` eprints whose extracted citations name the identifier `id` (`doi:…`,
    /// `arxiv:…`), in URI order after `after`.
    pub fn cited_by(&self, id: &str, after: Option<&str>, limit: usize) -> Result<Vec<String>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let scan = store::Scan { after: after.map(|a| a.as_bytes().to_vec()), limit, reverse: false };
        let page = self.store.scan(&table(v, "cited_by"), id, &scan)?;
        Ok(page.rows.into_iter().filter_map(|r| String::from_utf8(r.clustering).ok()).collect())
    }

    /// A claim by id.
    pub fn claim(&self, id: u64) -> Result<Option<Columns>, ProjectionError> {
        if self.get("claim_keys", &id.to_string(), &[])?.is_none() {
            return Ok(None);
        }
        self.get("claims", ALL, &id.to_be_bytes())
    }

    /// What became of a claim request: `Ok(claim id)` or `Err(refusal)`; `None` while it is
    /// not applied.
    pub fn claim_request(&self, request_id: &str) -> Result<Option<Result<u64, String>>, ProjectionError> {
        self.outcome("claim_requests", request_id, "claimId")
    }

    /// A page of claims in a listing (`all`, `claimant:<did>`, `status:<status>`,
    /// `paper:<import id>`), newest first, after a claim id; the rows kept by `keep`, and
    /// whether more may follow.
    pub fn claims(
        &self,
        partition: &str,
        after: Option<u64>,
        limit: usize,
        keep: impl Fn(&Columns) -> bool,
    ) -> Result<(Vec<Columns>, bool), ProjectionError> {
        self.listing("claims", partition, after, limit, keep)
    }

    /// A page of a listing of `name` keyed by ids, newest first, the rows kept by `keep`,
    /// and whether more may follow.
    fn listing(
        &self,
        name: &'static str,
        partition: &str,
        after: Option<u64>,
        limit: usize,
        keep: impl Fn(&Columns) -> bool,
    ) -> Result<(Vec<Columns>, bool), ProjectionError> {
        self.walk(name, partition, after, limit, |page| Ok(page.iter().map(|(_, row)| keep(row)).collect()), |_, row| Ok(Some(row)))
    }

    /// A page of the papers of a posting list (`words`, `prefixes`), newest import first,
    /// each kept by `keep` on its [`terms`](super) row (read a page at a time, not the
    /// paper), and whether more may follow.
    fn postings(
        &self,
        name: &'static str,
        partition: &str,
        after: Option<u64>,
        limit: usize,
        keep: impl Fn(&Columns) -> bool,
    ) -> Result<(Vec<Columns>, bool), ProjectionError> {
        let Some(v) = self.version else { return Ok((Vec::new(), false)) };
        let terms = table(v, "terms");
        let check = |page: &[(u64, Columns)]| -> Result<Vec<bool>, ProjectionError> {
            let keys: Vec<(String, Vec<u8>)> = page.iter().map(|(id, _)| (ALL.to_owned(), id.to_be_bytes().to_vec())).collect();
            Ok(self.store.get_many(&terms, &keys)?.iter().map(|row| row.as_ref().is_some_and(&keep)).collect())
        };
        self.walk(name, partition, after, limit, check, |id, _| self.paper_by_id(id))
    }

    /// Walks a listing of `name` keyed by ids, newest first, after `after`, a page at a
    /// time: `check` says which rows of a page to keep, `load` turns a kept row into the
    /// row answered. Ends with `limit` rows and whether more may follow, or after
    /// [`MAX_SCANNED`] rows read.
    fn walk(
        &self,
        name: &'static str,
        partition: &str,
        mut after: Option<u64>,
        limit: usize,
        check: impl Fn(&[(u64, Columns)]) -> Result<Vec<bool>, ProjectionError>,
        load: impl Fn(u64, Columns) -> Result<Option<Columns>, ProjectionError>,
    ) -> Result<(Vec<Columns>, bool), ProjectionError> {
        const PAGE: usize = 200;
        let limit = limit.max(1);
        let (mut out, mut scanned) = (Vec::new(), 0);
        loop {
            let page = self.scan(name, partition, after, PAGE)?;
            let done = page.len() < PAGE;
            let kept = check(&page)?;
            for ((id, row), keep) in page.into_iter().zip(kept) {
                after = Some(id);
                scanned += 1;
                if !keep {
                    continue;
                }
                out.extend(load(id, row)?);
                if out.len() > limit {
                    out.pop();
                    return Ok((out, true));
                }
            }
            if done || scanned >= MAX_SCANNED {
                return Ok((out, !done));
            }
        }
    }
}

/// A text column of a row of the model (`claimStatus`, `status`, `paperKey`…).
pub fn column(c: &Columns, name: &str) -> Option<String> {
    text(c, name)
}
