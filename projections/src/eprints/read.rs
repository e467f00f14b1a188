//! Reading the eprints read model (its active version).

use std::sync::Arc;
use std::time::{Duration, Instant};

use store::{Columns, Scan, Store, TableRef, Value};

use super::{accounts, by_author, by_external_id, name_words, records, repo_of, MODEL};
use crate::submission::SummaryJson;
use crate::ProjectionError;

/// An indexed eprint.
#[derive(Debug, Clone)]
pub struct Eprint {
    /// The record's AT URI.
    pub uri: String,
    /// The repository DID.
    pub did: String,
    /// The record's CID.
    pub cid: String,
    /// The record in the contract's shape: the JSON text the projection wrote, served as
    /// it is (neither parsed nor checked again on the way out).
    pub record: String,
    /// When the event that wrote it entered the log.
    pub indexed_at: String,
}

/// An eprint's record row as the model last wrote it, a deletion included
/// ([`EprintsReader::written_each`]): what the search index remakes a document from when
/// the eprint's tags or citations change.
#[derive(Debug, Clone)]
pub struct Written {
    /// The log ordinal of the event that wrote the row.
    pub ordinal: u64,
    /// The revision written (or deleted).
    pub rev: String,
    /// The eprint, unless the row marks it deleted.
    pub eprint: Option<Eprint>,
}

impl Written {
    /// The eprint's submission as the model holds it (the record normalized again, which
    /// gives back what it was made from), unless the row marks it deleted.
    pub fn submission(&self) -> Option<crate::submission::Submission> {
        let record = serde_json::from_str(&self.eprint.as_ref()?.record).ok()?;
        crate::submission::normalize(&record).ok()
    }
}

/// How long a model that takes eprints from this model's rows waits for it to apply the
/// events it needs ([`EprintsReader::past`]).
pub const WAIT: Duration = Duration::from_secs(10);

/// How often a model waiting for this one ([`EprintsReader::past`]) looks again.
pub const POLL: Duration = Duration::from_millis(20);

/// Whether `checkpoints` have passed the event at log `ordinal`.
pub fn passed(checkpoints: &crate::Checkpoints, ordinal: u64) -> bool {
    let at = event_schema::Position::from_ordinal(ordinal);
    checkpoints.get(&at.partition).is_some_and(|next| *next > at.offset)
}

/// An eprint's title and identifiers ([`EprintsReader::title_and_ids`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TitleAndIds {
    /// The repository DID.
    pub did: String,
    /// The title, when the record has one.
    pub title: Option<String>,
    /// `arxiv:…` and `doi:…` identifiers.
    pub ids: Vec<String>,
}

/// An account as the read model knows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Account {
    /// The current handle, if known.
    pub handle: Option<String>,
    /// The display name, if known.
    pub display_name: Option<String>,
    /// The display name of its `pub.svc.actor.profile` record, if it wrote one.
    pub profile_name: Option<String>,
    /// When the index first saw the DID as a user (its first record or identity event),
    /// RFC 3339; `None` for an account it knows only from account events.
    pub first_seen: Option<String>,
    /// The account is not active (taken down, suspended, deactivated or deleted): its
    /// content is hidden from every query until it is active again.
    pub hidden: bool,
}

/// An eprint's detail as the store holds it: its record row and its repository's account
/// row, shared with the store's row cache and read in place (nothing is copied out).
#[derive(Debug, Clone)]
pub struct Detail {
    repo: String,
    record: Arc<Columns>,
    account: Option<Arc<Columns>>,
}

impl Detail {
    /// The repository DID.
    pub fn did(&self) -> &str {
        &self.repo
    }

    /// The record's CID.
    pub fn cid(&self) -> &str {
        text(&self.record, "cid").unwrap_or_default()
    }

    /// The record's JSON text, as [`Eprint::record`].
    pub fn record(&self) -> &str {
        text(&self.record, "record").unwrap_or_default()
    }

    /// When the event that wrote it entered the log.
    pub fn indexed_at(&self) -> &str {
        text(&self.record, "indexedAt").unwrap_or_default()
    }

    /// The repository's current handle, if known.
    pub fn handle(&self) -> Option<&str> {
        text(self.account.as_deref()?, "handle")
    }

    /// The repository's display name, if known.
    pub fn display_name(&self) -> Option<&str> {
        text(self.account.as_deref()?, "displayName")
    }

    /// The repository's account is not active, as [`Account::hidden`].
    pub fn hidden(&self) -> bool {
        self.account.as_deref().is_some_and(inactive)
    }
}

impl Account {
    /// The words the account is found by: [`name_words`] of its handle, its display name
    /// and its profile record's display name.
    pub fn name_words(&self) -> std::collections::BTreeSet<String> {
        name_words(self.handle.as_deref(), &[self.display_name.as_deref(), self.profile_name.as_deref()])
    }
}

/// A user author search found ([`crate::search::people::People::authors`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorMatch {
    /// The user's DID.
    pub did: String,
    /// Its handle and display name.
    pub account: Account,
}

/// A page of author search ([`crate::search::people::People::authors`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorSearch {
    /// The users found, in index order.
    pub authors: Vec<AuthorMatch>,
    /// The index key to continue after, if there may be more.
    pub next: Option<Vec<u8>>,
}

/// A page of an author's eprints.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorPage {
    /// Eprint summaries, newest first.
    pub eprints: Vec<SummaryJson>,
    /// Where the next page starts, if there may be one.
    pub next: Option<Vec<u8>>,
    /// How many eprints the author has in all.
    pub total: i64,
}

fn text<'a>(c: &'a Columns, k: &str) -> Option<&'a str> {
    c.get(k).and_then(Value::as_text)
}

/// Whether a record row marks its record deleted.
fn deleted(row: &Columns) -> bool {
    row.get("deleted").and_then(Value::as_bool) == Some(true)
}

/// Whether an account row marks its account not active.
fn inactive(row: &Columns) -> bool {
    row.get("active").and_then(Value::as_bool) == Some(false)
}

/// The eprint in a record row, unless the row marks it deleted.
fn eprint_of(uri: &str, row: &Columns) -> Option<Eprint> {
    if deleted(row) {
        return None;
    }
    let text = |k: &str| text(row, k).unwrap_or_default().to_owned();
    Some(Eprint {
        uri: uri.to_owned(),
        did: repo_of(uri).to_owned(),
        cid: text("cid"),
        record: text("record"),
        indexed_at: text("indexedAt"),
    })
}

/// The account in an account row (an absent row is the default account).
pub(super) fn account_of(row: &Columns) -> Account {
    Account {
        handle: text(row, "handle").map(str::to_owned),
        display_name: text(row, "displayName").map(str::to_owned),
        profile_name: text(row, "profileName").map(str::to_owned),
        first_seen: text(row, "firstSeen").map(str::to_owned),
        hidden: inactive(row),
    }
}

/// Reads the active version of the eprints model.
pub struct EprintsReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

impl<'a> EprintsReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<EprintsReader<'a>, ProjectionError> {
        Ok(EprintsReader { store, version: store.active_version(MODEL)? })
    }

    /// A mark of the state of the rows this reader reads (its version's,
    /// [`Store::state_mark_of`]), with the version: an answer read from them alone stays
    /// right while [`EprintsReader::unchanged_since`] holds, whatever other models write.
    /// `None` while a write to them is under way, where the store cannot tell, or before the
    /// model has a version.
    pub fn state_mark(&self) -> Option<(u32, u64)> {
        let v = self.version?;
        Some((v, self.store.state_mark_of(&records(v))?))
    }

    /// Whether no write that may change the rows read under `mark` began since
    /// ([`EprintsReader::state_mark`]).
    pub fn unchanged_since(&self, (version, mark): (u32, u64)) -> bool {
        self.store.unchanged_since_of(&records(version), mark)
    }

    /// A reader once the model's active version has applied the events at `ordinals` (log
    /// ordinals), looking every 20 ms for up to `wait`, and whether it had. A model that
    /// takes an eprint from these rows when one of its own events needs it (the inbox, the
    /// usage model) reads it no older than that event: a later row is the state the
    /// model's own later events of the eprint bring it to, and those are then stale. After
    /// `wait` (the eprints model stopped, or held for a swap), a reader of what it holds.
    pub fn past(store: &'a dyn Store, ordinals: &[u64], wait: Duration) -> Result<(EprintsReader<'a>, bool), ProjectionError> {
        let deadline = Instant::now() + wait;
        loop {
            let reader = EprintsReader::new(store)?;
            let applied = reader.applied()?;
            let past = applied.is_some_and(|a| ordinals.iter().all(|o| passed(&a, *o)));
            if past || Instant::now() >= deadline {
                return Ok((reader, past));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The eprint at `uri`, unless absent or deleted.
    pub fn get(&self, uri: &str) -> Result<Option<Eprint>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        let row = crate::rows::shared_row(self.store, &records(v), uri)?;
        Ok(row.and_then(|row| eprint_of(uri, &row)))
    }

    /// The record rows of `uris`, in order (deletions included), in one read.
    pub fn written_each(&self, uris: &[&str]) -> Result<Vec<Option<Written>>, ProjectionError> {
        let Some(v) = self.version else { return Ok(vec![None; uris.len()]) };
        let rows = crate::rows::rows_of(self.store, &records(v), uris)?;
        Ok(uris
            .iter()
            .zip(rows)
            .map(|(uri, row)| {
                let row = row?;
                let ordinal = row.get("ordinal").and_then(Value::as_int).unwrap_or_default().max(0) as u64;
                Some(Written { ordinal, rev: text(&row, "rev").unwrap_or_default().to_owned(), eprint: eprint_of(uri, &row) })
            })
            .collect())
    }

    /// The summaries of the live eprints of `uris`, in order (`None`: absent or deleted),
    /// in one read: what a search's hits show.
    pub fn summaries(&self, uris: &[&str]) -> Result<Vec<Option<SummaryJson>>, ProjectionError> {
        let Some(v) = self.version else { return Ok(vec![None; uris.len()]) };
        let rows = crate::rows::rows_of(self.store, &records(v), uris)?;
        Ok(uris
            .iter()
            .zip(rows)
            .map(|(uri, row)| {
                let row = row.filter(|row| !deleted(row))?;
                let (cid, indexed_at) = (text(&row, "cid").unwrap_or_default(), text(&row, "indexedAt").unwrap_or_default());
                SummaryJson::of_record(uri, cid, text(&row, "record")?, indexed_at).ok()
            })
            .collect())
    }

    /// Where in the log the active version stands (`None`: there is none).
    pub fn applied(&self) -> Result<Option<crate::Checkpoints>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        Ok(Some(self.store.checkpoints(&store::consumer_name(MODEL, v))?))
    }

    /// The title of the eprint at `uri` and the identifiers its record carries (as
    /// [`crate::search::ids::of_record`] gives them), with its repository's DID, unless
    /// absent or deleted: read from the record's text without building the record.
    pub fn title_and_ids(&self, uri: &str) -> Result<Option<TitleAndIds>, ProjectionError> {
        let Some(row) = self.live_row(uri)? else { return Ok(None) };
        let Some(record) = text(&row, "record") else { return Ok(None) };
        let (title, ids) = crate::search::ids::title_and_ids_of_json(record);
        Ok(Some(TitleAndIds { did: repo_of(uri).to_owned(), title, ids }))
    }

    /// The repository DID and the title (when the record has one) of the eprint at `uri`,
    /// unless absent or deleted: only the title is read from the record's text.
    pub fn title(&self, uri: &str) -> Result<Option<(String, Option<String>)>, ProjectionError> {
        #[derive(serde::Deserialize)]
        struct Title {
            #[serde(default)]
            title: serde_json::Value,
        }
        let Some(row) = self.live_row(uri)? else { return Ok(None) };
        let Some(record) = text(&row, "record") else { return Ok(None) };
        let title = serde_json::from_str::<Title>(record).ok().and_then(|t| t.title.as_str().map(str::to_owned));
        Ok(Some((repo_of(uri).to_owned(), title)))
    }

    /// The record row of the eprint at `uri`, shared, unless absent or deleted.
    fn live_row(&self, uri: &str) -> Result<Option<Arc<Columns>>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        Ok(crate::rows::shared_row(self.store, &records(v), uri)?.filter(|row| !deleted(row)))
    }

    /// What the model knows of an account.
    pub fn account(&self, did: &str) -> Result<Account, ProjectionError> {
        let Some(v) = self.version else { return Ok(Account::default()) };
        Ok(crate::rows::shared_row(self.store, &accounts(v), did)?.map(|row| account_of(&row)).unwrap_or_default())
    }

    /// The accounts of `dids`, in order: one read of the rows ([`EprintsReader::account`]
    /// for each).
    pub fn accounts(&self, dids: &[&str]) -> Result<Vec<Account>, ProjectionError> {
        let Some(v) = self.version else { return Ok(vec![Account::default(); dids.len()]) };
        let table = accounts(v);
        let keys: Vec<(&TableRef, &str, &[u8])> = dids.iter().map(|did| (&table, *did, &[][..])).collect();
        Ok(self.store.get_each(&keys)?.iter().map(|row| row.as_deref().map(account_of).unwrap_or_default()).collect())
    }

    /// Whether each of `dids` is hidden (deactivated, taken down, deleted), in order: one
    /// read of the rows, shared rather than copied. An account the model has not seen is not.
    pub fn hidden(&self, dids: &[&str]) -> Result<Vec<bool>, ProjectionError> {
        let Some(v) = self.version else { return Ok(vec![false; dids.len()]) };
        let table = accounts(v);
        let keys: Vec<(&TableRef, &str, &[u8])> = dids.iter().map(|did| (&table, *did, &[][..])).collect();
        Ok(self.store.get_each(&keys)?.iter().map(|row| row.as_deref().is_some_and(inactive)).collect())
    }

    /// The eprint at `uri` (unless absent or deleted) with its repository's account, both
    /// read at one snapshot of the store. The repository is the URI's authority, which the
    /// caller has checked to be a DID.
    pub fn detail(&self, uri: &str) -> Result<Option<Detail>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        let repo = repo_of(uri);
        let (records, accounts) = (records(v), accounts(v));
        let mut rows = self.store.get_each(&[(&records, uri, &[]), (&accounts, repo, &[])])?.into_iter();
        let (Some(record), Some(account)) = (rows.next().flatten(), rows.next()) else { return Ok(None) };
        if deleted(&record) {
            return Ok(None);
        }
        Ok(Some(Detail { repo: repo.to_owned(), record, account }))
    }

    /// A page of an author's eprints, newest first, starting after `after`.
    pub fn by_author(&self, did: &str, limit: usize, after: Option<Vec<u8>>) -> Result<AuthorPage, ProjectionError> {
        let Some(v) = self.version else { return Ok(AuthorPage { eprints: Vec::new(), next: None, total: 0 }) };
        let page = self.store.scan(&by_author(v), did, &Scan { after, limit, reverse: true })?;
        let uris: Vec<String> = page.rows.iter().filter_map(|r| super::author_listed_uri(&r.clustering, &r.columns)).collect();
        let uris: Vec<&str> = uris.iter().map(String::as_str).collect();
        let mut eprints = Vec::with_capacity(uris.len());
        let mut hidden: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
        for (uri, row) in uris.iter().zip(crate::rows::rows_of(self.store, &records(v), &uris)?) {
            let Some(row) = row else { continue };
            let repo = repo_of(uri);
            let is_hidden = match hidden.get(repo) {
                Some(h) => *h,
                None => {
                    let h = self.account(repo)?.hidden;
                    hidden.insert(repo.to_owned(), h);
                    h
                }
            };
            if is_hidden {
                continue;
            }
            let record = text(&row, "record").ok_or_else(|| ProjectionError::Corrupt("eprint row without record".into()))?;
            let cid = text(&row, "cid").unwrap_or_default();
            let indexed_at = text(&row, "indexedAt").unwrap_or_default();
            let summary = SummaryJson::of_record(uri, cid, record, indexed_at)
                .map_err(|e| ProjectionError::Corrupt(format!("eprint row record: {e}")))?;
            eprints.push(summary);
        }
        let total = self.store.count(&by_author(v), did)? as i64;
        Ok(AuthorPage { eprints, next: page.next, total })
    }

    /// The URIs of up to `limit` live eprints whose record carries an identifier (`doi:…` or
    /// `arxiv:…`, as [`crate::search::ids::of_query`] gives it; an arXiv paper is known by
    /// its id and its DOI), in URI order (hidden ones included: the caller shows only what it
    /// reads back).
    pub fn by_external_id(&self, id: &str, limit: usize) -> Result<Vec<String>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let page = self.store.scan(&by_external_id(v), id, &Scan { after: None, limit, reverse: false })?;
        Ok(page.rows.iter().filter_map(|r| super::uri_of_key(&r.clustering)).collect())
    }

    /// The URIs of up to `limit` eprints `did` is an author of, newest first (hidden ones
    /// included: the caller shows only what it reads back).
    pub fn uris_by_author(&self, did: &str, limit: usize) -> Result<Vec<String>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let page = self.store.scan(&by_author(v), did, &Scan { after: None, limit, reverse: true })?;
        Ok(page.rows.iter().filter_map(|r| super::author_listed_uri(&r.clustering, &r.columns)).collect())
    }

    /// When the index first saw `did` as a user (RFC 3339), or `None` for a DID it does not
    /// know: its account's `firstSeen`.
    pub fn user_first_seen(&self, did: &str) -> Result<Option<String>, ProjectionError> {
        Ok(self.account(did)?.first_seen)
    }

    /// How many listing rows an author has (their eprints, co-authored ones included).
    pub fn author_eprint_count(&self, did: &str) -> Result<u64, ProjectionError> {
        let Some(v) = self.version else { return Ok(0) };
        Ok(self.store.count(&by_author(v), did)?)
    }
}
