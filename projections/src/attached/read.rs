//! Reading the attached read model (its active version).

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::Value as Json;
use store::{Columns, Scan, Store, Value};

use super::collections::Listing;
use super::{backlink_sources, backlinks, listing, records, sizes, MODEL};
use crate::eprints::read::{Account, EprintsReader, TitleAndIds};
use crate::rows::{is_deleted, is_placeholder};
use crate::ProjectionError;

/// An indexed record of an attached collection.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The record's AT URI.
    pub uri: String,
    /// The repository DID.
    pub did: String,
    /// The collection NSID.
    pub collection: String,
    /// The record's CID.
    pub cid: String,
    /// The record in its view shape (see [`super::collections::Normalized::view`]).
    pub view: Json,
    /// When the event that wrote it entered the log.
    pub indexed_at: String,
    /// The repository's account.
    pub account: Account,
    /// Its `createdAt` in µs: with the URI, its key in every listing.
    pub created_at: i64,
    /// A placeholder: the record was deleted or taken down, and keeps its place (a review
    /// or annotation in a thread); `view` holds no content.
    pub deleted: bool,
}

impl Item {
    /// A text field of its view (`""` when absent or not text).
    pub fn text(&self, field: &str) -> &str {
        self.view[field].as_str().unwrap_or_default()
    }

    /// The item's key in the listings it appears in (a cursor after it).
    pub fn listing_key(&self) -> Vec<u8> {
        crate::rows::listing_key(self.created_at, &self.uri)
    }
}

/// A backlink (`#backlink` of the API).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Backlink {
    /// The log position of the event that first made it.
    pub id: i64,
    /// The AT URI of the record that links.
    pub source_uri: String,
    /// What kind of record links.
    pub source_type: String,
    /// The AT URI of the record linked to.
    pub target_uri: String,
    /// Text around the link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// When its latest event entered the log.
    pub indexed_at: String,
    /// Withdrawn (soft-deleted).
    pub deleted: bool,
}

impl Backlink {
    fn of(c: &Columns) -> Backlink {
        Backlink {
            id: c.get("id").and_then(Value::as_int).unwrap_or_default(),
            source_uri: text(c, "sourceUri").to_owned(),
            source_type: text(c, "sourceType").to_owned(),
            target_uri: text(c, "targetUri").to_owned(),
            context: c.get("context").and_then(Value::as_text).map(str::to_owned),
            indexed_at: text(c, "indexedAt").to_owned(),
            deleted: c.get("deleted").and_then(Value::as_bool) == Some(true),
        }
    }
}

/// A page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Records, newest first.
    pub items: Vec<Item>,
    /// Where the next page starts, if there may be one.
    pub next: Option<Vec<u8>>,
    /// How many records the listing holds in all.
    pub total: u64,
}

fn text<'a>(c: &'a Columns, k: &str) -> &'a str {
    c.get(k).and_then(Value::as_text).unwrap_or_default()
}

/// Reads the active version of the attached model, with the accounts of the eprints model.
pub struct AttachedReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
    eprints: EprintsReader<'a>,
    accounts: RefCell<HashMap<String, Account>>,
}

impl<'a> AttachedReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<AttachedReader<'a>, ProjectionError> {
        Ok(AttachedReader {
            store,
            version: store.active_version(MODEL)?,
            eprints: EprintsReader::new(store)?,
            accounts: RefCell::default(),
        })
    }

    /// What the model knows of an account (read once per reader).
    pub fn account(&self, did: &str) -> Result<Account, ProjectionError> {
        if let Some(a) = self.accounts.borrow().get(did) {
            return Ok(a.clone());
        }
        let a = self.eprints.account(did)?;
        self.accounts.borrow_mut().insert(did.to_owned(), a.clone());
        Ok(a)
    }

    /// The item of a record row (a placeholder included), unless deleted without one or
    /// its account is hidden.
    fn item(&self, uri: &str, row: &Columns) -> Result<Option<Item>, ProjectionError> {
        let deleted = is_deleted(row);
        if deleted && !is_placeholder(row) {
            return Ok(None);
        }
        let did = text(row, "did");
        let account = self.account(did)?;
        if account.hidden {
            return Ok(None);
        }
        let view = serde_json::from_str(text(row, "view")).map_err(|e| ProjectionError::Corrupt(format!("attached row {uri}: {e}")))?;
        Ok(Some(Item {
            uri: uri.to_owned(),
            did: did.to_owned(),
            collection: text(row, "collection").to_owned(),
            cid: text(row, "cid").to_owned(),
            view,
            indexed_at: text(row, "indexedAt").to_owned(),
            account,
            created_at: row.get("createdAt").and_then(Value::as_int).unwrap_or_default(),
            deleted,
        }))
    }

    /// The title of the eprint at `uri`, when svc indexes it (and its account is not hidden).
    pub fn eprint_title(&self, uri: &str) -> Result<Option<String>, ProjectionError> {
        let Some((did, title)) = self.eprints.title(uri)? else { return Ok(None) };
        Ok(if self.account(&did)?.hidden { None } else { title })
    }

    /// The title (if any) and identifiers of the eprint at `uri`, when svc indexes it (and
    /// its account is not hidden): [`EprintsReader::title_and_ids`].
    pub fn eprint_title_and_ids(&self, uri: &str) -> Result<Option<TitleAndIds>, ProjectionError> {
        let Some(eprint) = self.eprints.title_and_ids(uri)? else { return Ok(None) };
        if self.account(&eprint.did)?.hidden {
            return Ok(None);
        }
        Ok(Some(eprint))
    }

    /// The eprints reader this reader reads accounts with.
    pub fn eprints(&self) -> &EprintsReader<'a> {
        &self.eprints
    }

    /// The record at `uri` (or its placeholder), unless absent, deleted or hidden.
    pub fn get(&self, uri: &str) -> Result<Option<Item>, ProjectionError> {
        let Some(v) = self.version else { return Ok(None) };
        match self.store.get(&records(v), uri, &[])? {
            Some(row) => self.item(uri, &row),
            None => Ok(None),
        }
    }

    /// How many records a listing holds.
    pub fn count(&self, list: &Listing) -> Result<u64, ProjectionError> {
        Ok(self.counts(std::slice::from_ref(list))?[0])
    }

    /// How many records each of several listings holds, read at one snapshot, in order.
    pub fn counts(&self, lists: &[Listing]) -> Result<Vec<u64>, ProjectionError> {
        let Some(v) = self.version else { return Ok(vec![0; lists.len()]) };
        let table = sizes(v);
        let keys: Vec<(&store::TableRef, &str, &[u8])> = lists.iter().map(|l| (&table, l.0.as_str(), &[][..])).collect();
        let rows = self.store.get_each(&keys)?;
        Ok(rows.iter().map(|r| r.as_ref().and_then(|c| c.get("n").and_then(Value::as_int)).unwrap_or(0).max(0) as u64).collect())
    }

    /// The first `limit` keys of a set listing ([`super::collections::SetMember`]), in key
    /// order.
    pub fn keys(&self, set: &Listing, limit: usize) -> Result<Vec<String>, ProjectionError> {
        self.keys_from(set, "", limit)
    }

    /// The keys of a set listing that start with `prefix`, in key order, up to `limit`: one
    /// range of the set, read page by page.
    pub fn keys_from(&self, set: &Listing, prefix: &str, limit: usize) -> Result<Vec<String>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        let mut after = (!prefix.is_empty()).then(|| crate::rows::listing_key(0, prefix));
        loop {
            let page = self.store.scan(&listing(v), &set.0, &Scan { after, limit: limit.clamp(1, 500), reverse: false })?;
            for r in &page.rows {
                let key = text(&r.columns, "key");
                if !key.starts_with(prefix) || out.len() == limit {
                    return Ok(out);
                }
                out.push(key.to_owned());
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// The first `limit` keys of a ranked listing ([`super::collections::pairs::ranked`])
    /// with their counts, most shared first.
    pub fn ranked(&self, list: &Listing, limit: usize) -> Result<Vec<(String, u64)>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        let mut after = None;
        while out.len() < limit {
            let page = self.store.scan(&listing(v), &list.0, &Scan { after, limit: (limit - out.len()).clamp(1, 500), reverse: false })?;
            out.extend(
                page.rows
                    .iter()
                    .map(|r| (text(&r.columns, "key").to_owned(), r.columns.get("n").and_then(Value::as_int).unwrap_or(0).max(0) as u64)),
            );
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// A page of a listing, newest first, starting after `after`: `next` is set exactly when
    /// more rows follow (one row more than asked for is read to know).
    pub fn page(&self, list: &Listing, limit: usize, after: Option<Vec<u8>>) -> Result<Page, ProjectionError> {
        let Some(v) = self.version else { return Ok(Page { items: Vec::new(), next: None, total: 0 }) };
        // The listing's size row is kept with its rows in every batch: an empty listing (most
        // are: an eprint nobody cites) costs that one cached row, not a range read.
        let total = self.count(list)?;
        if total == 0 {
            return Ok(Page { items: Vec::new(), next: None, total });
        }
        let mut rows = self.store.scan(&listing(v), &list.0, &Scan { after, limit: limit + 1, reverse: true })?.rows;
        let next = crate::rows::cut_page(&mut rows, limit);
        let uris: Vec<&str> = rows.iter().map(|r| text(&r.columns, "uri")).collect();
        let mut items = Vec::with_capacity(uris.len());
        for (uri, row) in uris.iter().zip(crate::rows::rows_of(self.store, &records(v), &uris)?) {
            if let Some(item) = row.map(|row| self.item(uri, &row)).transpose()?.flatten() {
                items.push(item);
            }
        }
        Ok(Page { items, next, total })
    }

    /// How many live backlinks `target` has (of one source type).
    pub fn backlink_count(&self, target: &str, source_type: Option<&str>) -> Result<u64, ProjectionError> {
        let Some(v) = self.version else { return Ok(0) };
        let row = self.store.get(&sizes(v), &super::backlink_count(target, source_type), &[])?;
        Ok(row.and_then(|c| c.get("n").and_then(Value::as_int)).unwrap_or(0).max(0) as u64)
    }

    /// A page of the live backlinks to `target` (of one source type), by source URI, after
    /// `after`: the backlinks and whether more follow. Reads until the page is full.
    pub fn backlinks_page(
        &self,
        target: &str,
        source_type: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Backlink>, bool), ProjectionError> {
        let Some(v) = self.version else { return Ok((Vec::new(), false)) };
        let mut out = Vec::new();
        let mut scan = Scan { after: after.map(|a| a.as_bytes().to_vec()), limit: (limit + 1).clamp(1, 500), reverse: false };
        loop {
            let page = self.store.scan(&backlinks(v), target, &scan)?;
            for row in &page.rows {
                let b = Backlink::of(&row.columns);
                if !b.deleted && source_type.is_none_or(|t| b.source_type == t) {
                    if out.len() == limit {
                        return Ok((out, true));
                    }
                    out.push(b);
                }
            }
            match page.next {
                Some(next) => scan.after = Some(next),
                None => return Ok((out, false)),
            }
        }
    }

    /// The backlinks to `target` (deleted ones too), by source URI, up to `max`.
    pub fn backlinks_to(&self, target: &str, max: usize) -> Result<Vec<Backlink>, ProjectionError> {
        self.backlink_rows(&backlinks, target, max)
    }

    /// The backlinks from `source` (deleted ones too), by target URI, up to `max`.
    pub fn backlinks_from(&self, source: &str, max: usize) -> Result<Vec<Backlink>, ProjectionError> {
        self.backlink_rows(&backlink_sources, source, max)
    }

    fn backlink_rows(&self, table: &dyn Fn(u32) -> store::TableRef, partition: &str, max: usize) -> Result<Vec<Backlink>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        Ok(crate::rows::scan_partition(self.store, &table(v), partition, max)?.iter().map(|r| Backlink::of(&r.columns)).collect())
    }

    /// A page of the records of `list` that `keep` keeps (all of them when `None`), newest
    /// first, after `after`: reads on until the page is full or `max` rows were read; the
    /// total counts the kept records among the first `max` (exact below that).
    pub fn page_where(
        &self,
        list: &Listing,
        limit: usize,
        after: Option<Vec<u8>>,
        keep: Option<&dyn Fn(&Item) -> bool>,
        max: usize,
    ) -> Result<Page, ProjectionError> {
        let Some(keep) = keep else { return self.page(list, limit, after) };
        let mut items = Vec::new();
        let (mut scan, mut read, mut next) = (after, 0, None);
        'pages: loop {
            let page = self.page(list, 200, scan)?;
            read += page.items.len();
            for item in page.items {
                if keep(&item) {
                    if items.len() == limit {
                        next = items.last().map(Item::listing_key);
                        break 'pages;
                    }
                    items.push(item);
                }
            }
            match page.next {
                Some(n) if read < max => scan = Some(n),
                _ => break,
            }
        }
        let total = self.all(list, max)?.iter().filter(|i| keep(i)).count() as u64;
        Ok(Page { items, next, total })
    }

    /// Every record of a listing, newest first, up to `max`.
    pub fn all(&self, list: &Listing, max: usize) -> Result<Vec<Item>, ProjectionError> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = self.page(list, max.saturating_sub(out.len()).clamp(1, 500), after)?;
            out.extend(page.items);
            match page.next {
                Some(next) if out.len() < max => after = Some(next),
                _ => return Ok(out),
            }
        }
    }
}
