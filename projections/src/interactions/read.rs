//! Reading the interactions read model (its active version).

use std::collections::BTreeSet;

use store::{Scan, Store};

use super::{table, MODEL};
use crate::ProjectionError;

/// Reads the active version of the interactions model.
pub struct InteractionsReader<'a> {
    store: &'a dyn Store,
    version: Option<u32>,
}

impl<'a> InteractionsReader<'a> {
    /// A reader of the model's active version at this moment.
    pub fn new(store: &'a dyn Store) -> Result<InteractionsReader<'a>, ProjectionError> {
        Ok(InteractionsReader { store, version: store.active_version(MODEL)? })
    }

    /// The eprints `did` dismissed (up to `max`).
    pub fn dismissed(&self, did: &str, max: usize) -> Result<BTreeSet<String>, ProjectionError> {
        let Some(v) = self.version else { return Ok(BTreeSet::new()) };
        let rows = self.store.scan(&table(v, "dismissed"), did, &Scan::first(max))?.rows;
        Ok(rows.into_iter().filter_map(|r| String::from_utf8(r.clustering).ok()).collect())
    }

    /// The eprints `did` engaged with last (viewed, clicked, endorsed, claimed), newest
    /// first, each once, up to `max`.
    pub fn engaged(&self, did: &str, max: usize) -> Result<Vec<String>, ProjectionError> {
        let Some(v) = self.version else { return Ok(Vec::new()) };
        let rows = self.store.scan(&table(v, "engaged"), did, &Scan { after: None, limit: max * 4, reverse: true })?.rows;
        let mut out: Vec<String> = Vec::new();
        for r in rows {
            let Some(uri) = r.clustering.get(8..).and_then(|u| String::from_utf8(u.to_vec()).ok()) else { continue };
            if !out.contains(&uri) && out.len() < max {
                out.push(uri);
            }
        }
        Ok(out)
    }
}
