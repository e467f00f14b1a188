//! The newest repository revision seen per DID, so that followers skip commits replayed by a
//! relay. Bounded: the read models check revisions themselves, so forgetting an entry can
//! only let a stale commit reach the log, where every model skips it; it never loses one.

use std::collections::HashMap;

/// How many DIDs are remembered before the memory starts over (~100 bytes each).
pub(crate) const MAX_REMEMBERED: usize = 1_000_000;

/// The last revision seen of each repository, for at most a fixed number of repositories.
#[derive(Debug)]
pub(crate) struct LastRevs {
    revs: HashMap<String, String>,
    limit: usize,
}

impl LastRevs {
    /// An empty memory of [`MAX_REMEMBERED`] repositories.
    pub(crate) fn new() -> LastRevs {
        LastRevs::with_limit(MAX_REMEMBERED)
    }

    fn with_limit(limit: usize) -> LastRevs {
        LastRevs { revs: HashMap::new(), limit }
    }

    /// The last revision seen of `did`, if remembered.
    pub(crate) fn get(&self, did: &str) -> Option<&str> {
        self.revs.get(did).map(String::as_str)
    }

    /// Remembers `rev` as the last revision of `did`. A new repository when the memory is
    /// full starts it over.
    pub(crate) fn remember(&mut self, did: &str, rev: &str) {
        if let Some(last) = self.revs.get_mut(did) {
            rev.clone_into(last);
            return;
        }
        if self.revs.len() >= self.limit {
            tracing::info!(remembered = self.revs.len(), "forgetting the last revisions seen; the read models still skip stale ones");
            self.revs.clear();
        }
        self.revs.insert(did.to_owned(), rev.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_last_revision_and_stays_bounded() {
        let mut revs = LastRevs::with_limit(3);
        revs.remember("did:plc:a", "3k1");
        revs.remember("did:plc:a", "3k2");
        assert_eq!(revs.get("did:plc:a"), Some("3k2"));
        revs.remember("did:plc:b", "3k1");
        revs.remember("did:plc:c", "3k1");
        // Updating a known repository never forgets.
        revs.remember("did:plc:c", "3k5");
        assert_eq!((revs.get("did:plc:a"), revs.get("did:plc:c")), (Some("3k2"), Some("3k5")));
        // A fourth repository starts the memory over.
        revs.remember("did:plc:d", "3k9");
        assert_eq!(revs.revs.len(), 1);
        assert_eq!((revs.get("did:plc:a"), revs.get("did:plc:d")), (None, Some("3k9")));
    }
}
