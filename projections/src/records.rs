//! The lifecycle every record table shares: a write replaces the record as held, a delete
//! leaves a tombstone at its revision, a take-down a tombstone above every revision, and an
//! account deletion a tombstone for each of its records. In each case the record as held
//! first leaves the listings it appears in; only how a model lists its records differs
//! ([`Listings`]). Where a model keeps a deleted record's place ([`Listings::placeholder`]:
//! reviews and annotations keep a thread's shape), a delete or take-down leaves a
//! placeholder instead, in the same listings. Each change also supersedes the record's dead letter, if one is parked
//! ([`Parking::supersede`]). The eprints and attached models use it, and so will the models
//! to come.

use store::{Columns, Store, TableRef, Value};

use crate::deadletter::Parking;
use crate::rows::{is_deleted, is_placeholder, is_stale, taken_down, tombstone};
use crate::staged::Staged;
use crate::ProjectionError;

/// How a model lists its records.
pub(crate) trait Listings {
    /// Removes the listing rows of `existing`, the record at `uri` as the model holds it (a
    /// tombstone is in no listing; a placeholder is in those of the record it stands for).
    fn unlist(&self, st: &mut Staged, uri: &str, existing: &Columns, position: u64) -> Result<(), ProjectionError>;

    /// The placeholder that replaces `existing`, a live record or a placeholder, when it is
    /// deleted (as `tombstone` says): a row that stays in the record's listings (those that
    /// give a thread its shape; it may leave others) without its content. `None` (the
    /// default) for a record that leaves its listings.
    fn placeholder(
        &self,
        _st: &mut Staged,
        _existing: &Columns,
        _tombstone: &Columns,
        _position: u64,
    ) -> Result<Option<Columns>, ProjectionError> {
        Ok(None)
    }
}

/// A model's table of records (partition: the record URI), with its listings.
pub(crate) struct RecordTable<'a, L: ?Sized> {
    store: &'a dyn Store,
    table: TableRef,
    listings: &'a L,
    letters: Parking<'a>,
}

impl<'a, L: Listings + ?Sized> RecordTable<'a, L> {
    /// The record table `table` of a model whose records are listed by `listings` and
    /// whose dead letters are `letters`.
    pub(crate) fn new(store: &'a dyn Store, table: TableRef, listings: &'a L, letters: Parking<'a>) -> RecordTable<'a, L> {
        RecordTable { store, table, listings, letters }
    }

    /// The record at `uri` as held (a tombstone included).
    pub(crate) fn get(&self, st: &mut Staged, uri: &str) -> Result<Option<Columns>, ProjectionError> {
        Ok(st.get(self.store, &self.table, uri, &[])?)
    }

    /// Makes way for a write of `uri` at `rev`: `false` when the model holds that revision
    /// or a later one (a tombstone included), so the write is skipped; otherwise the record
    /// as held leaves its listings, an older parked revision is superseded, and the caller
    /// writes the new one ([`Self::put`]).
    pub(crate) fn replace(&self, st: &mut Staged, uri: &str, rev: &str, position: u64) -> Result<bool, ProjectionError> {
        let existing = self.get(st, uri)?;
        if is_stale(existing.as_ref(), rev) {
            return Ok(false);
        }
        if let Some(existing) = &existing {
            self.unlist(st, uri, existing, position)?;
        }
        self.letters.supersede(st, uri, Some(rev), position)?;
        Ok(true)
    }

    /// Writes the record row of `uri`.
    pub(crate) fn put(&self, st: &mut Staged, uri: &str, row: Columns, position: u64) {
        st.put(&self.table, uri, Vec::new(), row, position);
    }

    /// Deletes `uri` as of `rev`: a tombstone (or a placeholder), unless the model holds a
    /// later revision.
    pub(crate) fn delete(&self, st: &mut Staged, uri: &str, rev: &str, position: u64) -> Result<(), ProjectionError> {
        let existing = self.get(st, uri)?;
        if is_stale(existing.as_ref(), rev) {
            return Ok(());
        }
        self.letters.supersede(st, uri, Some(rev), position)?;
        self.leave(st, uri, existing, tombstone(uri, Value::Text(rev.to_owned()), position), position)
    }

    /// Takes down `uri` (`pub.svc.admin.deleteContent`): its tombstone (or placeholder)
    /// keeps every later write out.
    pub(crate) fn take_down(&self, st: &mut Staged, uri: &str, position: u64) -> Result<(), ProjectionError> {
        let existing = self.get(st, uri)?;
        self.letters.supersede(st, uri, None, position)?;
        self.leave(st, uri, existing, taken_down(uri, position), position)
    }

    /// Writes `tombstone` in place of `existing`: its placeholder, which keeps its
    /// listings, when the model keeps one; otherwise it leaves its listings.
    fn leave(
        &self,
        st: &mut Staged,
        uri: &str,
        existing: Option<Columns>,
        tombstone: Columns,
        position: u64,
    ) -> Result<(), ProjectionError> {
        if let Some(existing) = &existing {
            if !is_deleted(existing) || is_placeholder(existing) {
                if let Some(placeholder) = self.listings.placeholder(st, existing, &tombstone, position)? {
                    self.put(st, uri, placeholder, position);
                    return Ok(());
                }
            }
            self.unlist(st, uri, existing, position)?;
        }
        self.put(st, uri, tombstone, position);
        Ok(())
    }

    /// Removes each of `uris` (the records of a deleted account): each leaves its listings
    /// (a placeholder too) and becomes a tombstone at the revision held.
    pub(crate) fn remove_all(&self, st: &mut Staged, uris: impl IntoIterator<Item = String>, position: u64) -> Result<(), ProjectionError> {
        for uri in uris {
            self.letters.supersede(st, &uri, None, position)?;
            let Some(existing) = self.get(st, &uri)? else { continue };
            if is_deleted(&existing) && !is_placeholder(&existing) {
                continue;
            }
            self.unlist(st, &uri, &existing, position)?;
            let rev = existing.get("rev").cloned().unwrap_or(Value::Null);
            self.put(st, &uri, tombstone(&uri, rev, position), position);
        }
        Ok(())
    }

    /// Removes a held record from its listings (a tombstone is in none; a placeholder is).
    fn unlist(&self, st: &mut Staged, uri: &str, existing: &Columns, position: u64) -> Result<(), ProjectionError> {
        if is_deleted(existing) && !is_placeholder(existing) {
            return Ok(());
        }
        self.listings.unlist(st, uri, existing, position)
    }
}
