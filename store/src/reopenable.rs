//! A redb database that can be closed and opened again while the process runs: the only way
//! to empty redb's page cache, which a catch-up fills with pages nobody will read again.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use redb::Database;

use crate::StoreError;

/// The database, behind a lock every transaction holds a read guard of for its life, so
/// that [`ReopenableDb::reopen`] closes it with no transaction open.
pub(crate) struct ReopenableDb {
    path: PathBuf,
    /// `None` only if opening it again failed.
    db: RwLock<Option<Database>>,
}

/// The open database; hold it for as long as a transaction begun from it lives.
pub(crate) struct DbGuard<'a>(RwLockReadGuard<'a, Option<Database>>);

impl Deref for DbGuard<'_> {
    type Target = Database;

    fn deref(&self) -> &Database {
        self.0.as_ref().expect("a guard is only made over an open database")
    }
}

impl ReopenableDb {
    /// `db`, opened from `path`.
    pub fn new(db: Database, path: PathBuf) -> ReopenableDb {
        ReopenableDb { path, db: RwLock::new(Some(db)) }
    }

    /// The open database.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] if opening it again failed.
    pub fn get(&self) -> Result<DbGuard<'_>, StoreError> {
        let guard = self.db.read().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            return Err(StoreError::Unavailable(format!("{} is closed (dropped, or it could not be opened again)", self.path.display())));
        }
        Ok(DbGuard(guard))
    }

    /// Closes the database once no transaction is open (new ones wait), then opens it
    /// again with `open`.
    pub fn reopen(&self, open: impl FnOnce(&Path) -> Result<Database, StoreError>) -> Result<(), StoreError> {
        let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(open_db) = db.take() {
            open_db.close().map_err(|e| StoreError::Unavailable(format!("could not close {}: {e}", self.path.display())))?;
        }
        *db = Some(open(&self.path)?);
        Ok(())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the database once no transaction is open; later calls to
    /// [`ReopenableDb::get`] fail.
    pub fn close(&self) -> Result<(), StoreError> {
        let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(open_db) = db.take() {
            open_db.close().map_err(|e| StoreError::Unavailable(format!("could not close {}: {e}", self.path.display())))?;
        }
        Ok(())
    }

    /// Replaces the file, once no transaction is open (new ones wait), with the one `write`
    /// makes from the open database at the path it is given (beside this file); then opens
    /// that. A crash before the replacing rename leaves this file as it was (and the new one
    /// beside it, which the next replacement removes first); the rename is atomic.
    pub fn replace(
        &self,
        write: impl FnOnce(&Database, &Path) -> Result<(), StoreError>,
        open: impl FnOnce(&Path) -> Result<Database, StoreError>,
    ) -> Result<(), StoreError> {
        let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
        let Some(open_db) = db.as_ref() else { return Ok(()) };
        let new = self.path.with_extension("redb.new");
        let failed = |what: &str, e: std::io::Error| StoreError::Unavailable(format!("failed to {what} {}: {e}", new.display()));
        match std::fs::remove_file(&new) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(failed("remove", e)),
            _ => {}
        }
        if let Err(e) = write(open_db, &new) {
            // A full disk, most likely: the file stays as it was, and the copy goes.
            let _ = std::fs::remove_file(&new);
            return Err(e);
        }
        if let Some(old) = db.take() {
            old.close().map_err(|e| StoreError::Unavailable(format!("could not close {}: {e}", self.path.display())))?;
        }
        let renamed = std::fs::rename(&new, &self.path).map_err(|e| failed("rename", e));
        // Opened again whether or not the rename worked: the file at the path is whole.
        *db = Some(open(&self.path)?);
        renamed
    }

    /// Compacts the file once no transaction is open (new ones wait): the pages freed by
    /// dropped tables and deleted rows go back to the file system.
    pub fn compact(&self) -> Result<(), StoreError> {
        let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
        let Some(open_db) = db.as_mut() else { return Ok(()) };
        while open_db.compact().map_err(|e| StoreError::Unavailable(format!("could not compact {}: {e}", self.path.display())))? {}
        Ok(())
    }
}
