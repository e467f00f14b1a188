//! `svc seed`: papers in either arXiv JSON-lines form (plain or gzip; [`crate::arxiv`])
//! become repository events, deterministically.
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
//! - A line that cannot become a record the submission lexicon accepts (not JSON, no
//!   authors, a bad date, a title over 500 characters…) is skipped and counted by reason,
//!   with its line number; in strict mode it ends the run instead.
//!
//! The same file always gives the same DIDs, record keys, CIDs and events. Re-running a
//! seed appends the same events again; the read models skip them (their revision is not
//! newer than what they hold), so nothing is doubled.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use chrono::NaiveDate;
use data_encoding::BASE32_NOPAD;
use event_schema::{IdentityChange, NewEvent, Payload, RecordWrite, Source};
use eventlog::EventLog;
use lexicons::{LexiconError, Lexicons};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use tracing::warn;

pub use crate::arxiv::Paper;
use crate::repo::{record_cid, tid};
use crate::social::{SeededPaper, SocialGenerator};
use crate::usage::UsageGenerator;
use crate::IngestError;

/// The most authors a submission record may list.
const MAX_AUTHORS: usize = 100;

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
/// The record is checked against the submission lexicon before any event is made: seeding
/// never writes a record its own lexicon refuses.
///
/// # Errors
/// [`SkipReason`] for a paper that cannot become a valid record: no authors, a date that is
/// not `YYYY-MM-DD`, or a record the lexicon refuses (say a title over 500 characters).
pub fn paper_events(paper: &Paper, source: &Source, lexicons: &Lexicons, seen: &mut HashSet<String>) -> Result<Vec<NewEvent>, SkipReason> {
    if paper.authors.iter().all(|a| a.trim().is_empty()) {
        return Err(SkipReason::new("no authors", None));
    }
    let date = NaiveDate::parse_from_str(&paper.date, "%Y-%m-%d")
        .map_err(|e| SkipReason::new("date is not YYYY-MM-DD", Some(format!("{:?}: {e}", paper.date))))?;
    let midnight = date.and_hms_opt(0, 0, 0).map(|d| d.and_utc().timestamp_micros()).unwrap_or_default().max(0) as u64;
    let id_hash = Sha256::digest(paper.id.as_bytes());
    let within_day = u64::from_be_bytes(id_hash[..8].try_into().unwrap_or_default()) % 86_400_000_000;
    let clock_id = u16::from_be_bytes([id_hash[8], id_hash[9]]) & 0x3ff;
    let rkey = tid(midnight + within_day, clock_id);
    let rev = tid(midnight + within_day + 1, clock_id);

    let mut accounts = Vec::new();
    let mut authors = Vec::new();
    for name in paper.authors.iter().map(|n| squash_whitespace(n)).filter(|n| !n.is_empty()).take(MAX_AUTHORS) {
        let account = account_for(&name);
        authors.push(json!({"name": name, "did": account.did, "order": authors.len() + 1}));
        accounts.push((account, name));
    }
    let repo = accounts[0].0.did.clone();
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
    if let Err(e) = lexicons.validate_record(lexicons::SUBMISSION, &record) {
        let detail = e.to_string();
        return Err(match e {
            LexiconError::Invalid(v) => SkipReason::new(format!("refused by the submission lexicon: {}: {}", v.path, v.message), None),
            _ => SkipReason::new("refused by the submission lexicon", Some(detail)),
        });
    }
    let cid = record_cid(&record).map_err(|e| SkipReason::new("not encodable as DAG-CBOR", Some(e.to_string())))?;
    let mut events = Vec::new();
    for (account, name) in accounts {
        if seen.insert(account.did.clone()) {
            events.push(NewEvent::repo(
                source.clone(),
                Payload::Identity(IdentityChange { did: account.did, handle: Some(account.handle), display_name: Some(name) }),
            ));
        }
    }
    events.push(NewEvent::repo(
        source.clone(),
        Payload::RecordCreate(RecordWrite { did: repo, collection: lexicons::SUBMISSION.to_owned(), rkey, cid, rev, record }),
    ));
    Ok(events)
}

/// Why a line of a seed file did not become a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipReason {
    /// The kind of fault, the same for every line with it (what reports group by).
    pub kind: String,
    /// What exactly was wrong on this line, when there is more to say.
    pub detail: Option<String>,
}

impl SkipReason {
    fn new(kind: impl Into<String>, detail: Option<String>) -> SkipReason {
        SkipReason { kind: kind.into(), detail }
    }

    /// A line that is not a paper in JSON: serde's message without its position (the
    /// column differs on every line).
    fn not_a_paper(e: &serde_json::Error) -> SkipReason {
        let message = e.to_string();
        let kind = message.split(" at line ").next().unwrap_or(&message);
        SkipReason::new(format!("not a paper: {kind}"), None)
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{} ({d})", self.kind),
            None => f.write_str(&self.kind),
        }
    }
}

/// The lines skipped for one reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Skips {
    /// How many.
    pub count: usize,
    /// The first few line numbers (1-based), at most [`FIRST_LINES`].
    pub lines: Vec<usize>,
}

/// How many line numbers a report keeps per reason.
pub const FIRST_LINES: usize = 5;

/// What a seed run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeedReport {
    /// Papers turned into events.
    pub papers: usize,
    /// Events appended (records and identities).
    pub events: usize,
    /// Lines skipped, by reason.
    pub skipped: BTreeMap<String, Skips>,
    /// Records of the scholarly layer (`--social`), by collection.
    pub layer: BTreeMap<String, usize>,
}

impl SeedReport {
    /// Lines skipped in all.
    pub fn skipped_lines(&self) -> usize {
        self.skipped.values().map(|s| s.count).sum()
    }

    fn skip(&mut self, line: usize, reason: &SkipReason) {
        let skips = self.skipped.entry(reason.kind.clone()).or_default();
        skips.count += 1;
        if skips.lines.len() < FIRST_LINES {
            skips.lines.push(line);
        }
    }
}

/// How to seed.
#[derive(Debug, Clone)]
pub struct SeedOptions {
    /// Papers per append (one durable write each).
    pub batch_papers: usize,
    /// Stop after this many papers.
    pub limit: Option<usize>,
    /// Stop at the first line that cannot become a record, appending nothing after it,
    /// instead of skipping it.
    pub strict: bool,
    /// Also write a scholarly layer (reviews, annotations, endorsements, tags, citations…)
    /// by made-up accounts ([`crate::social`]).
    pub social: bool,
    /// Write the arXiv taxonomy ([`crate::taxonomy`]) to this governance repository first,
    /// so the papers' fields resolve to graph nodes.
    pub taxonomy: Option<String>,
    /// Also write each paper as imported from arXiv ([`import_event`]), as claiming it from
    /// arXiv would, so that the import and claiming searches have papers to find.
    pub imports: bool,
}

impl Default for SeedOptions {
    fn default() -> Self {
        SeedOptions { batch_papers: 1000, limit: None, strict: false, social: false, taxonomy: None, imports: false }
    }
}

/// How far a seed run has read, for progress displays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeedProgress {
    /// Bytes of the file read so far (compressed bytes for a gzip file).
    pub bytes: u64,
    /// The file's size in bytes.
    pub total_bytes: u64,
    /// Papers turned into events so far.
    pub papers: usize,
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Opens a JSON-lines file, gzip or plain (told apart by the gzip magic bytes); the counter
/// follows the bytes read from the file itself.
fn open_lines(path: &Path, read: Arc<AtomicU64>) -> Result<Box<dyn BufRead>, IngestError> {
    let read_err = |source| IngestError::Read { path: path.display().to_string(), source };
    let mut file = BufReader::new(Counting { inner: std::fs::File::open(path).map_err(read_err)?, read });
    if file.fill_buf().map_err(read_err)?.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file))))
    } else {
        Ok(Box::new(file))
    }
}

/// Seeds the log from a file of papers, appending in batches of `options.batch_papers`
/// papers. A line that cannot become a valid record is skipped and counted by reason (or,
/// with `options.strict`, ends the run). `on_progress` is called after every append.
///
/// # Errors
/// [`IngestError::BadPaper`] names the first line that cannot become a record, in strict
/// mode (nothing after it is appended); [`IngestError::Read`] when the file cannot be read;
/// [`IngestError::Log`] when the log refuses an append.
pub fn seed_file(
    path: &Path,
    log: &dyn EventLog,
    options: &SeedOptions,
    on_progress: &mut dyn FnMut(SeedProgress),
) -> Result<SeedReport, IngestError> {
    let read_err = |source| IngestError::Read { path: path.display().to_string(), source };
    let total_bytes = std::fs::metadata(path).map_err(read_err)?.len();
    let bytes = Arc::new(AtomicU64::new(0));
    let lines = open_lines(path, bytes.clone())?;
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let source = Source::Seed { file: file_name };
    let lexicons = Lexicons::builtin();
    let mut seen = HashSet::new();
    let mut social = options.social.then(|| SocialGenerator::new(source.clone()));
    let mut usage = options.social.then(|| UsageGenerator::new(source.clone()));
    let mut report = SeedReport::default();
    let mut pending = Vec::new();
    if let Some(governance) = &options.taxonomy {
        pending = crate::taxonomy::Taxonomy::arxiv().events(governance, &source, &lexicons)?;
        report.layer.insert(crate::taxonomy::NODE.into(), pending.iter().filter(|e| is_write_of(e, crate::taxonomy::NODE)).count());
        report.layer.insert(crate::taxonomy::EDGE.into(), pending.iter().filter(|e| is_write_of(e, crate::taxonomy::EDGE)).count());
    }
    let mut pending_papers = 0;
    let mut flush = |pending: &mut Vec<NewEvent>, pending_papers: &mut usize, report: &mut SeedReport| -> Result<(), IngestError> {
        if !pending.is_empty() {
            log.append(pending)?;
        }
        report.events += pending.len();
        report.papers += *pending_papers;
        pending.clear();
        *pending_papers = 0;
        on_progress(SeedProgress { bytes: bytes.load(Ordering::Relaxed), total_bytes, papers: report.papers });
        Ok(())
    };
    for (i, line) in lines.lines().enumerate() {
        if options.limit.is_some_and(|l| report.papers + pending_papers >= l) {
            break;
        }
        let line = line.map_err(read_err)?;
        if line.trim().is_empty() {
            continue;
        }
        let events = Paper::from_line(&line).map_err(|e| SkipReason::not_a_paper(&e)).and_then(|paper| {
            let mut events = paper_events(&paper, &source, &lexicons, &mut seen)?;
            if options.imports {
                events.push(import_event(&paper, &source));
            }
            if let (Some(generator), Some(usage)) = (social.as_mut(), usage.as_mut()) {
                if let Some(seeded) = seeded_paper(&paper, &events) {
                    events.extend(generator.events_for(&paper, &seeded));
                    events.extend(usage.events_for(&seeded));
                }
            }
            Ok(events)
        });
        match events {
            Ok(events) => {
                pending.extend(events);
                pending_papers += 1;
            }
            Err(reason) if options.strict => {
                return Err(IngestError::BadPaper { path: path.display().to_string(), line: i + 1, reason: reason.to_string() });
            }
            Err(reason) => {
                if report.skipped.get(&reason.kind).is_none_or(|s| s.count < FIRST_LINES) {
                    warn!(line = i + 1, reason = %reason, "skipping a line of the seed file");
                }
                report.skip(i + 1, &reason);
            }
        }
        if pending_papers >= options.batch_papers {
            flush(&mut pending, &mut pending_papers, &mut report)?;
        }
    }
    flush(&mut pending, &mut pending_papers, &mut report)?;
    if let Some(generator) = social {
        report.layer.extend(generator.counts.into_iter().map(|(c, n)| (c.to_owned(), n)));
    }
    if let Some(usage) = usage {
        report.layer.insert("command.usage".into(), usage.events);
    }
    Ok(report)
}

/// A paper as imported from arXiv: the `external.paper` event `startClaimFromExternal`
/// appends for it, with the paper's own metadata, fetched (for determinism) on the day it
/// appeared, by the client `seed`.
pub fn import_event(paper: &Paper, source: &Source) -> NewEvent {
    let id = paper.id.clone();
    NewEvent {
        key: event_schema::ExternalPaper::key("arxiv", &id),
        source: source.clone(),
        payload: Payload::External(Box::new(event_schema::ExternalPaper {
            source: "arxiv".into(),
            url: format!("https://arxiv.org/abs/{id}"),
            pdf_url: Some(format!("https://arxiv.org/pdf/{id}")),
            title: paper.title.clone(),
            abstract_text: paper.abstract_text.clone(),
            authors: paper
                .authors
                .iter()
                .map(|name| event_schema::ExternalAuthor { name: name.clone(), orcid: None, affiliation: None })
                .collect(),
            publication_date: Some(paper.date.clone()),
            categories: paper.categories.clone(),
            doi: paper.doi.clone(),
            plugin: "seed".into(),
            fetched_at: format!("{}T00:00:00Z", paper.date),
            external_id: id,
        })),
    }
}

fn is_write_of(event: &NewEvent, collection: &str) -> bool {
    matches!(&event.payload, Payload::RecordCreate(w) if w.collection == collection)
}

/// The seeded submission among a paper's events, as the scholarly layer refers to it.
fn seeded_paper(paper: &Paper, events: &[NewEvent]) -> Option<SeededPaper> {
    events.iter().find_map(|e| match &e.payload {
        Payload::RecordCreate(w) if w.collection == lexicons::SUBMISSION => Some(SeededPaper {
            uri: w.uri(),
            title: w.record.get("title").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned(),
            owner: SeedAccount { did: w.did.clone(), handle: String::new() },
            date: paper.date.clone(),
        }),
        _ => None,
    })
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
        let lex = Lexicons::builtin();
        let a = paper_events(&paper(), &src, &lex, &mut HashSet::new()).unwrap();
        let b = paper_events(&paper(), &src, &lex, &mut HashSet::new()).unwrap();
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
        paper_events(&paper(), &src, &lex, &mut seen).unwrap();
        assert_eq!(paper_events(&paper(), &src, &lex, &mut seen).unwrap().len(), 1, "known accounts are not announced again");
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

    fn line(id: &str, title: &str, authors: &[&str], date: &str) -> String {
        json!({"id": id, "title": title, "abstract": "A.", "authors": authors, "categories": ["cs.CL"], "date": date}).to_string()
    }

    #[test]
    fn a_file_may_mix_the_data_sets_lines_and_the_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mixed.jsonl");
        let lines = [line("2507.10072", "Data set form", &["Ada Lovelace"], "2025-07-15"), crate::arxiv::SNAPSHOT_LINE.to_owned()];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let log = eventlog::EmbeddedLog::open(&dir.path().join("data"), 1).unwrap();
        let report = seed_file(&path, &log, &SeedOptions::default(), &mut |_| {}).unwrap();
        assert_eq!((report.papers, report.skipped_lines()), (2, 0), "{:?}", report.skipped);
        let records: Vec<serde_json::Value> = log
            .read_merged(0, 100)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.payload {
                Payload::RecordCreate(w) => Some(w.record),
                _ => None,
            })
            .collect();
        let snapshot = records.iter().find(|r| r["externalIds"]["arxivId"] == "0704.0001").unwrap();
        assert_eq!(snapshot["title"], "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies");
        assert_eq!(snapshot["authors"][0]["name"], "C. Balázs");
        assert_eq!(snapshot["authors"].as_array().unwrap().len(), 4);
        assert_eq!(snapshot["fields"], json!(["hep-ph"]));
        assert_eq!(snapshot["createdAt"], "2007-04-02T00:00:00.000Z");
        assert_eq!(snapshot["doi"], "10.1103/PhysRevD.76.013009");
    }

    #[test]
    fn lines_that_cannot_become_records_are_skipped_and_reported_by_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("papers.jsonl");
        let long_title = "T".repeat(512);
        let lines = [
            line("1", "Good one", &["Ada Lovelace"], "2020-01-01"),
            line("2", "No authors", &[], "2020-01-01"),
            "{not json".to_owned(),
            line("3", &long_title, &["Alan Turing"], "2020-01-01"),
            line("4", "Bad date", &["Alan Turing"], "01/02/2020"),
            line("5", "Blank authors", &["  "], "2020-01-01"),
            String::new(),
            line("6", "Good two", &["Grace Hopper"], "2021-01-01"),
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let log = eventlog::EmbeddedLog::open(&dir.path().join("data"), 1).unwrap();
        let mut calls = 0;
        let report = seed_file(&path, &log, &SeedOptions::default(), &mut |p| {
            calls += 1;
            assert_eq!(p.total_bytes, std::fs::metadata(&path).unwrap().len());
        })
        .unwrap();
        assert!(calls >= 1);
        assert_eq!((report.papers, report.events), (2, 4), "two records and their two authors");
        assert_eq!(report.skipped_lines(), 5);
        assert_eq!(report.skipped["no authors"], Skips { count: 2, lines: vec![2, 6] });
        assert_eq!(report.skipped["date is not YYYY-MM-DD"].lines, vec![5]);
        assert_eq!(report.skipped["refused by the submission lexicon: title: must be at most 500 characters"].lines, vec![4]);
        assert!(report.skipped.keys().any(|k| k.starts_with("not a paper: ")), "{:?}", report.skipped);
        // Every record written is one its own lexicon accepts.
        let lex = Lexicons::builtin();
        for event in log.read_merged(0, 100).unwrap() {
            if let Payload::RecordCreate(w) = &event.payload {
                lex.validate_record(&w.collection, &w.record).unwrap();
            }
        }

        let strict = SeedOptions { strict: true, ..SeedOptions::default() };
        let log = eventlog::EmbeddedLog::open(&dir.path().join("strict"), 1).unwrap();
        match seed_file(&path, &log, &strict, &mut |_| {}) {
            Err(IngestError::BadPaper { line: 2, reason, .. }) => assert_eq!(reason, "no authors"),
            other => panic!("strict mode stops at line 2: {other:?}"),
        }
        assert!(log.read_merged(0, 10).unwrap().is_empty(), "nothing of the batch is appended");
    }
}
