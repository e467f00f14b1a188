//! Reading the inbox read model (its active version).

use serde_json::Value as Json;
use store::{Scan, Store, Value};

use super::{after_seen, inbox_key, table, MODEL};
use crate::attached::collections::Kind;
use crate::ProjectionError;

/// One notification: a review or endorsement on one of the recipient's eprints.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The record's AT URI.
    pub uri: String,
    /// The eprint it is about.
    pub eprint: String,
    /// Who wrote it.
    pub did: String,
    /// The record in the attached model's view shape (content, contributions…).
    pub view: Json,
    /// Whether svc indexed it at or before the recipient's `seenAt`.
    pub is_read: bool,
}

/// A page of an inbox, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The notifications.
    pub notifications: Vec<Notification>,
    /// Where the next page starts, if there may be one.
    pub next: Option<Vec<u8>>,
}

/// A page of what was written on an account's papers.
#[derive(Debug, Clone, PartialEq)]
pub struct PapersPage {
    /// The record URIs, newest first.
    pub uris: Vec<String>,
    /// Where the next page starts, if there may be one.
    pub next: Option<Vec<u8>>,
    /// How many there are in all.
    pub total: u64,
}

/// What a recipient has seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    /// When the recipient last marked notifications seen (µs), if ever.
    pub seen_at: Option<i64>,
    /// Unread reviews.
    pub reviews: u64,
    /// Unread endorsements.
    pub endorsements: u64,
}

impl Seen {
    /// The unread count of `kind`.
    pub fn unread(&self, kind: Kind) -> u64 {
        if kind == Kind::Review {
            self.reviews
        } else {
            self.endorsements
        }
    }
}

/// Reads the active version of the inbox model.
pub struct InboxReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

impl<'a> InboxReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<InboxReader<'a>, ProjectionError> {
        Ok(InboxReader { store, version: store.active_version(MODEL)? })
    }

    /// What `recipient` has seen and how much is unread: one row read.
    pub fn seen(&self, recipient: &str) -> Result<Seen, ProjectionError> {
        let Some(v) = self.version else { return Ok(Seen::default()) };
        let Some(c) = self.store.get(&table(v, "state"), recipient, &[])? else { return Ok(Seen::default()) };
        let count = |k: Kind| c.get(k.as_str()).and_then(Value::as_int).unwrap_or(0).max(0) as u64;
        Ok(Seen { seen_at: c.get("seenAt").and_then(Value::as_int), reviews: count(Kind::Review), endorsements: count(Kind::Endorsement) })
    }

    /// A page of the notifications of `kind` for `recipient`, newest first, after `after`:
    /// every one (by the records' `createdAt`), or only the unread ones (by the time svc
    /// indexed them). A bounded read: `limit` + 1 rows of the inbox, and their records.
    pub fn page(
        &self,
        recipient: &str,
        kind: Kind,
        unread_only: bool,
        limit: usize,
        after: Option<Vec<u8>>,
    ) -> Result<Page, ProjectionError> {
        let Some(v) = self.version else { return Ok(Page { notifications: Vec::new(), next: None }) };
        let seen_at = self.seen(recipient)?.seen_at;
        let listing = table(v, if unread_only { "unread" } else { "inbox" });
        let mut rows = self.store.scan(&listing, &inbox_key(recipient, kind), &Scan { after, limit: limit + 1, reverse: true })?.rows;
        if unread_only {
            if let Some(seen) = seen_at {
                let first_unread = after_seen(seen);
                rows.retain(|r| r.clustering > first_unread);
            }
        }
        let next = crate::rows::cut_page(&mut rows, limit);
        let uris: Vec<&str> = rows.iter().filter_map(|r| r.columns.get("uri").and_then(Value::as_text)).collect();
        let mut notifications = Vec::with_capacity(uris.len());
        for (uri, row) in uris.iter().zip(crate::rows::rows_of(self.store, &table(v, "items"), &uris)?) {
            let Some(c) = row.filter(|c| c.get("live").and_then(Value::as_bool) == Some(true)) else { continue };
            let text = |k: &str| c.get(k).and_then(Value::as_text).unwrap_or_default().to_owned();
            let indexed_at = c.get("indexedAt").and_then(Value::as_int).unwrap_or_default();
            notifications.push(Notification {
                uri: (*uri).to_owned(),
                eprint: text("eprint"),
                did: text("did"),
                view: serde_json::from_str(&text("view")).unwrap_or_default(),
                is_read: seen_at.is_some_and(|s| indexed_at <= s),
            });
        }
        Ok(Page { notifications, next })
    }

    /// A page of what was written of `kind` on the eprints `did` is listed on (their own
    /// records included), newest first, after `after`.
    pub fn on_papers(&self, did: &str, kind: Kind, limit: usize, after: Option<Vec<u8>>) -> Result<PapersPage, ProjectionError> {
        let Some(v) = self.version else { return Ok(PapersPage { uris: Vec::new(), next: None, total: 0 }) };
        let mut rows = self.store.scan(&table(v, "papers"), &inbox_key(did, kind), &Scan { after, limit: limit + 1, reverse: true })?.rows;
        let next = crate::rows::cut_page(&mut rows, limit);
        let uris = rows.iter().filter_map(|r| r.columns.get("uri").and_then(Value::as_text)).map(str::to_owned).collect();
        let total = self.store.get(&table(v, "state"), did, &[])?;
        let total = total.and_then(|c| c.get(&format!("papers:{kind}")).and_then(Value::as_int)).unwrap_or(0).max(0) as u64;
        Ok(PapersPage { uris, next, total })
    }
}
