//! `svc seed`: papers in the arXiv JSON-lines format (plain or gzip) become repository
//! events, deterministically.
//!
//! - Every distinct author name gets an account: a `did:plc` made from a hash of the name
//!   and a handle made from the name (`jane-doe-ab12.arxiv.test`). Its first appearance
//!   appends an identity event with the handle and the name.
//! - The first author's account is the repository. The record key and the revision are
//!   TIDs from the paper's date and arXiv id, the CID is the DAG-CBOR CID of the record.
//! - The record has the contract's shape: `title`, `abstract` (string), `authors` (name,
//!   made-up DID, order), `fields` from the categories, `createdAt` from the date, plus
//!   `externalIds.arxivId`, `doi` and `submittedBy`. Papers with more than 100 authors
//!   keep the first 100, the lexicon's limit.
//!
//! The same file always gives the same DIDs, record keys, CIDs and events. Re-running a
//! seed appends the same events again; the read models skip them (their revision is not
//! newer than what they hold), so nothing is doubled.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;

use chrono::NaiveDate;
use data_encoding::BASE32_NOPAD;
use event_schema::{IdentityChange, NewEvent, Payload, RecordWrite, Source};
use eventlog::EventLog;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::repo::{record_cid, tid};
use crate::IngestError;

/// The most authors a submission record may list.
const MAX_AUTHORS: usize = 100;

/// One paper of the arXiv data set (the fields seeding uses).
#[derive(Debug, Clone, Deserialize)]
pub struct Paper {
    /// The arXiv id, e.g. `2507.10072`.
    pub id: String,
    /// The title.
    pub title: String,
    /// The abstract.
    #[serde(rename = "abstract", default)]
    pub abstract_text: String,
    /// Author names in order.
    pub authors: Vec<String>,
    /// arXiv categories, primary first.
    #[serde(default)]
    pub categories: Vec<String>,
    /// The announcement day, `YYYY-MM-DD`.
    pub date: String,
    /// The DOI.
    #[serde(default)]
    pub doi: Option<String>,
}

/// A made-up account for an author name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedAccount {
    /// The DID.
    pub did: String,
    /// The handle.
    pub handle: String,
}

fn squash_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The account of an author name: the same name always gives the same account.
pub fn account_for(name: &str) -> SeedAccount {
    let name = squash_whitespace(name);
    let digest = Sha256::digest(format!("svc-seed/{name}").as_bytes());
    let id = BASE32_NOPAD.encode(&digest).to_ascii_lowercase();
    let did = format!("did:plc:{}", &id[..24]);
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug = if slug.is_empty() { "author" } else { slug };
    SeedAccount { handle: format!("{slug}-{}.arxiv.test", &id[..4]), did }
}

/// The repository events of one paper; identity events only for accounts not in `seen`.
///
/// # Errors
/// [`IngestError::BadPaper`] for a paper without authors or with a date that is not
/// `YYYY-MM-DD`.
pub fn paper_events(paper: &Paper, source: &Source, seen: &mut HashSet<String>) -> Result<Vec<NewEvent>, String> {
    if paper.authors.is_empty() {
        return Err("no authors".into());
    }
    let date = NaiveDate::parse_from_str(&paper.date, "%Y-%m-%d").map_err(|e| format!("date {:?}: {e}", paper.date))?;
    let midnight = date.and_hms_opt(0, 0, 0).map(|d| d.and_utc().timestamp_micros()).unwrap_or_default().max(0) as u64;
    let id_hash = Sha256::digest(paper.id.as_bytes());
    let within_day = u64::from_be_bytes(id_hash[..8].try_into().unwrap_or_default()) % 86_400_000_000;
    let clock_id = u16::from_be_bytes([id_hash[8], id_hash[9]]) & 0x3ff;
    let rkey = tid(midnight + within_day, clock_id);
    let rev = tid(midnight + within_day + 1, clock_id);

    let mut events = Vec::new();
    let mut authors = Vec::new();
    for (i, name) in paper.authors.iter().take(MAX_AUTHORS).enumerate() {
        let name = squash_whitespace(name);
        let account = account_for(&name);
        if seen.insert(account.did.clone()) {
            events.push(NewEvent::repo(
                source.clone(),
                Payload::Identity(IdentityChange {
                    did: account.did.clone(),
                    handle: Some(account.handle),
                    display_name: Some(name.clone()),
                }),
            ));
        }
        authors.push(json!({"name": name, "did": account.did, "order": i + 1}));
    }
    let repo = authors[0]["did"].as_str().unwrap_or_default().to_owned();
    let mut record = json!({
        "$type": lexicons::SUBMISSION,
        "title": squash_whitespace(&paper.title),
        "abstract": squash_whitespace(&paper.abstract_text),
        "authors": authors,
        "fields": paper.categories,
        "externalIds": {"arxivId": paper.id},
        "submittedBy": repo,
        "createdAt": format!("{}T00:00:00.000Z", date.format("%Y-%m-%d")),
    });
    if let Some(doi) = &paper.doi {
        record["doi"] = json!(doi);
    }
    let cid = record_cid(&record).map_err(|e| e.to_string())?;
    events.push(NewEvent::repo(
        source.clone(),
        Payload::RecordCreate(RecordWrite { did: repo, collection: lexicons::SUBMISSION.to_owned(), rkey, cid, rev, record }),
    ));
    Ok(events)
}

/// What a seed run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeedReport {
    /// Papers turned into events.
    pub papers: usize,
    /// Events appended (records and identities).
    pub events: usize,
}

/// Opens a JSON-lines file, gzip or plain (told apart by the gzip magic bytes).
fn open_lines(path: &Path) -> Result<Box<dyn BufRead>, IngestError> {
    let read_err = |source| IngestError::Read { path: path.display().to_string(), source };
    let mut file = BufReader::new(std::fs::File::open(path).map_err(read_err)?);
    if file.fill_buf().map_err(read_err)?.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file))))
    } else {
        Ok(Box::new(file))
    }
}

/// Seeds the log from a file of papers, appending in batches of `batch_papers` papers.
/// `limit` stops after that many papers.
///
/// # Errors
/// [`IngestError::BadPaper`] names the first line that is not a paper (nothing after it is
/// appended); [`IngestError::Log`] when the log refuses an append.
pub fn seed_file(path: &Path, log: &dyn EventLog, batch_papers: usize, limit: Option<usize>) -> Result<SeedReport, IngestError> {
    let lines = open_lines(path)?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let source = Source::Seed { file: file_name };
    let mut seen = HashSet::new();
    let mut report = SeedReport::default();
    let mut pending = Vec::new();
    let mut pending_papers = 0;
    for (i, line) in lines.lines().enumerate() {
        if limit.is_some_and(|l| report.papers + pending_papers >= l) {
            break;
        }
        let line = line.map_err(|source| IngestError::Read { path: path.display().to_string(), source })?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| IngestError::BadPaper { path: path.display().to_string(), line: i + 1, reason };
        let paper: Paper = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        pending.extend(paper_events(&paper, &source, &mut seen).map_err(bad)?);
        pending_papers += 1;
        if pending_papers >= batch_papers {
            log.append(&pending)?;
            report.events += pending.len();
            report.papers += pending_papers;
            pending.clear();
            pending_papers = 0;
        }
    }
    if !pending.is_empty() {
        log.append(&pending)?;
        report.events += pending.len();
        report.papers += pending_papers;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper() -> Paper {
        serde_json::from_value(json!({
            "id": "2507.10072", "title": "Graph  Neural\n Networks", "abstract": "We study graphs.",
            "authors": ["Ada Lovelace", "Alan Turing", "Ada Lovelace"], "categories": ["cs.LG", "cs.AI"],
            "date": "2025-07-15", "doi": "10.48550/arXiv.2507.10072"
        }))
        .unwrap()
    }

    #[test]
    fn events_are_deterministic_and_valid() {
        let src = Source::Seed { file: "t".into() };
        let a = paper_events(&paper(), &src, &mut HashSet::new()).unwrap();
        let b = paper_events(&paper(), &src, &mut HashSet::new()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 3, "two identities and one record");
        let Payload::RecordCreate(w) = &a[2].payload else { panic!("record last") };
        assert_eq!(w.did, account_for("Ada Lovelace").did);
        assert_eq!(w.record["title"], "Graph Neural Networks");
        assert_eq!(w.record["fields"], json!(["cs.LG", "cs.AI"]));
        assert_eq!(w.record["createdAt"], "2025-07-15T00:00:00.000Z");
        assert!(lexicons::formats::is_tid(&w.rkey) && w.rev > w.rkey);
        lexicons::Lexicons::builtin().validate_record(&w.collection, &w.record).unwrap();
        let mut seen = HashSet::new();
        paper_events(&paper(), &src, &mut seen).unwrap();
        assert_eq!(paper_events(&paper(), &src, &mut seen).unwrap().len(), 1, "known accounts are not announced again");
    }

    #[test]
    fn accounts_are_valid_identifiers() {
        for name in ["Ada Lovelace", "José Ñúñez-García", "李雷", "  "] {
            let acc = account_for(name);
            assert!(lexicons::formats::is_did(&acc.did), "{acc:?}");
            assert!(lexicons::formats::is_handle(&acc.handle), "{acc:?}");
        }
        assert_ne!(account_for("A B").did, account_for("A C").did);
    }
}
