//! Author search: a tantivy index of the users the index knows, beside each version of the
//! search index (`<data>/search/v<N>/people/`), one document per user: its DID, its
//! lowercased handle and the other words of its names ([`crate::eprints::name_words`]).
//! The search projection keeps it from the eprints model's account rows; what a user is
//! called, and whether it is hidden, is read from those rows when a search is answered.
//!
//! Before search format 6 the eprints model kept this in its `users` table, a store row per
//! word and user: 68 MB of the 442 MB a 95,000-paper corpus took; this index takes 19 MB
//! there (docs/capacity.md).

use std::collections::BTreeSet;
use std::path::Path;

use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value as _, STORED};
use tantivy::{DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term, TERMINATED};

use crate::did_key;
use crate::eprints::read::{Account, AuthorMatch, AuthorSearch, EprintsReader};
use crate::ProjectionError;

/// The folder of the index inside its search index version's folder.
pub const DIR: &str = "people";

/// The indexing memory of the index's writer: tantivy's smallest (users are small
/// documents, written a few at a time).
pub(crate) const WRITER_HEAP_BYTES: usize = 15_000_000;

#[derive(Debug, Clone, Copy)]
struct Fields {
    /// The DID, exact: the key for replacing a user's document, and DID prefixes.
    did: Field,
    /// The DID's key ([`did_key`]), stored: what a found document gives back.
    key: Field,
    /// The lowercased handle, exact: handle prefixes, and one of the words author search
    /// finds a user by.
    handle: Field,
    /// The other words of [`crate::eprints::name_words`] (of the names), exact: author
    /// search by word prefix.
    word: Field,
}

fn schema() -> (Schema, Fields) {
    // Exact terms, and no field norms (nothing here is scored).
    let exact = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer("raw").set_index_option(IndexRecordOption::Basic).set_fieldnorms(false),
    );
    let mut b = Schema::builder();
    let fields = Fields {
        did: b.add_text_field("did", exact.clone()),
        key: b.add_bytes_field("key", STORED),
        handle: b.add_text_field("handle", exact.clone()),
        word: b.add_text_field("word", exact),
    };
    (b.build(), fields)
}

/// The users of one search index version, open for reading (and for writing by its
/// projection).
pub struct People {
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

/// Users found under the terms of a field that start with a prefix, in key order
/// ([`People::by_word`]).
pub struct Filed {
    /// Each user's key (the term, 0, then its DID's key) and DID.
    pub users: Vec<(Vec<u8>, String)>,
    /// Whether more may follow the last.
    pub more: bool,
}

impl People {
    /// Opens (creating if needed) the index in `dir`.
    pub(crate) fn open(dir: &Path) -> Result<People, ProjectionError> {
        std::fs::create_dir_all(dir).map_err(|e| ProjectionError::Search(format!("failed to create {}: {e}", dir.display())))?;
        let mmap = tantivy::directory::MmapDirectory::open(dir).map_err(|e| ProjectionError::Search(e.to_string()))?;
        let (schema, fields) = schema();
        let index = Index::open_or_create(mmap, schema)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(People { index, reader, fields })
    }

    /// Makes the newest commit visible.
    pub(crate) fn reload(&self) -> Result<(), ProjectionError> {
        Ok(self.reader.reload()?)
    }

    /// A writer of the index (one at a time).
    pub(crate) fn writer(&self) -> Result<IndexWriter<TantivyDocument>, ProjectionError> {
        Ok(self.index.writer_with_num_threads(1, WRITER_HEAP_BYTES)?)
    }

    /// The segments of the visible commit.
    pub(crate) fn segments(&self) -> Result<Vec<tantivy::index::SegmentId>, ProjectionError> {
        Ok(self.index.searchable_segment_ids()?)
    }

    /// The term that names `did`'s document.
    pub(crate) fn did_term(&self, did: &str) -> Term {
        Term::from_field_text(self.fields.did, did)
    }

    /// The document of user `did`, called `account`.
    pub(crate) fn document(&self, did: &str, account: &Account) -> TantivyDocument {
        let f = self.fields;
        let mut doc = TantivyDocument::default();
        doc.add_text(f.did, did);
        doc.add_bytes(f.key, &did_key::encode(did));
        // The handle is one of the words: kept in its own field alone.
        let handle = account.handle.as_deref().map(str::to_lowercase).filter(|h| !h.is_empty() && !h.contains('\0'));
        for word in account.name_words() {
            doc.add_text(if Some(&word) == handle.as_ref() { f.handle } else { f.word }, word);
        }
        doc
    }

    /// Whether the visible commit holds a document of `did`.
    pub(crate) fn knows(&self, did: &str) -> Result<bool, ProjectionError> {
        Ok(self.reader.searcher().doc_freq(&self.did_term(did))? > 0)
    }

    /// How many users the index knows.
    pub fn count(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Up to `limit` DIDs of users whose DID or lowercased handle starts with `prefix`,
    /// DIDs first, each once.
    pub fn by_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, ProjectionError> {
        let searcher = self.reader.searcher();
        let mut dids: Vec<String> = Vec::new();
        for (field, prefix) in [(self.fields.did, prefix.to_owned()), (self.fields.handle, prefix.to_lowercase())] {
            if prefix.is_empty() || dids.len() >= limit {
                continue;
            }
            for (_, did) in filed(&searcher, self.fields, &[field], prefix.as_bytes(), None, limit * 2)?.users {
                if !dids.contains(&did) && dids.len() < limit {
                    dids.push(did);
                }
            }
        }
        Ok(dids)
    }

    /// The users filed under words starting with `prefix`, after the key `after` (a
    /// previous page's last), at most `limit` of them, in key order (the word, 0, the DID's
    /// key): a user appears once for each of its words that starts with `prefix`.
    pub fn by_word(&self, prefix: &str, after: Option<&[u8]>, limit: usize) -> Result<Filed, ProjectionError> {
        let f = self.fields;
        Ok(filed(&self.reader.searcher(), f, &[f.word, f.handle], prefix.as_bytes(), after, limit)?)
    }

    /// A page of the users matching every word of `query` (each a prefix of one of their
    /// [`crate::eprints::name_words`], punctuation around it left out), in the order of the
    /// word they are found by, starting after the key `after` (a previous page's `next`).
    /// Each user is found once, under the first of its words that starts with the query's
    /// longest word; hidden accounts are left out (their names and state are `eprints`'
    /// account rows). A page reads at most `4 × limit` users' keys (at least 64), so it may
    /// hold fewer than `limit` users and still have a next page.
    pub fn authors(
        &self,
        eprints: &EprintsReader<'_>,
        query: &str,
        limit: usize,
        after: Option<Vec<u8>>,
    ) -> Result<AuthorSearch, ProjectionError> {
        let wanted: Vec<String> = query
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
            .filter(|w| !w.is_empty())
            .collect();
        let Some(word) = wanted.iter().max_by_key(|w| w.len()) else { return Ok(AuthorSearch { authors: Vec::new(), next: None }) };
        let budget = (limit * 4).max(64);
        let page = self.by_word(word, after.as_deref(), budget)?;
        let dids: Vec<&str> = page.users.iter().map(|(_, did)| did.as_str()).collect();
        let accounts = eprints.accounts(&dids)?;
        let mut authors = Vec::new();
        for ((key, did), account) in page.users.iter().zip(accounts) {
            let words = account.name_words();
            let found_by = key.split(|b| *b == 0).next().unwrap_or_default();
            let first = words.iter().find(|w| w.starts_with(word.as_str()));
            let matches = wanted.iter().all(|q| words.iter().any(|w| w.starts_with(q.as_str())));
            if account.hidden || !matches || first.map(String::as_bytes) != Some(found_by) {
                continue;
            }
            authors.push(AuthorMatch { did: did.clone(), account });
            if authors.len() == limit {
                return Ok(AuthorSearch { authors, next: Some(key.clone()) });
            }
        }
        let next = if page.more { page.users.last().map(|(key, _)| key.clone()) } else { None };
        Ok(AuthorSearch { authors, next })
    }
}

/// The users filed under the terms of `fields` that start with `prefix`, after the key
/// `after`, at most `limit`, in key order ([`People::by_word`]). Each field of each segment
/// gives its terms in order and its users of a term all at once (sorted by key here); it
/// stops once it has given `limit` after `after`, so the first `limit` of all of them are
/// among what they gave.
fn filed(searcher: &Searcher, f: Fields, fields: &[Field], prefix: &[u8], after: Option<&[u8]>, limit: usize) -> tantivy::Result<Filed> {
    let start: &[u8] = match after.map(|a| a.split(|b| *b == 0).next().unwrap_or_default()) {
        Some(term) if term >= prefix => term,
        _ => prefix,
    };
    let mut users: Vec<(Vec<u8>, String)> = Vec::new();
    let mut more = false;
    let streams = searcher.segment_readers().iter().flat_map(|segment| fields.iter().map(move |field| (segment, *field)));
    for (segment, field) in streams {
        let inverted = segment.inverted_index(field)?;
        let store = segment.get_store_reader(1)?;
        let alive = segment.alive_bitset();
        let mut stream = inverted.terms().range().ge(start).into_stream()?;
        let mut given = 0;
        while stream.advance() {
            let term = stream.key();
            if !term.starts_with(prefix) {
                break;
            }
            if given >= limit {
                more = true;
                break;
            }
            let mut postings = inverted.read_postings_from_terminfo(stream.value(), IndexRecordOption::Basic)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    let stored: TantivyDocument = store.get(doc)?;
                    let key_bytes = stored.get_first(f.key).and_then(|v| v.as_bytes()).unwrap_or_default();
                    let key = [term, &[0], key_bytes].concat();
                    if after.is_none_or(|a| key.as_slice() > a) {
                        if let Some((did, _)) = did_key::decode(key_bytes, 0) {
                            users.push((key, did));
                            given += 1;
                        }
                    }
                }
                doc = postings.advance();
            }
        }
    }
    users.sort();
    users.dedup();
    if users.len() > limit {
        users.truncate(limit);
        more = true;
    }
    Ok(Filed { users, more })
}

/// Each of `dids` that the eprints model knows as a user (its account has `firstSeen`),
/// with its account: what their documents are made from.
pub(crate) fn users_of(eprints: &EprintsReader<'_>, dids: &BTreeSet<String>) -> Result<Vec<(String, Option<Account>)>, ProjectionError> {
    let list: Vec<&str> = dids.iter().map(String::as_str).collect();
    let accounts = eprints.accounts(&list)?;
    Ok(dids.iter().cloned().zip(accounts.into_iter().map(|a| a.first_seen.is_some().then_some(a))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(n: usize, name: &str) -> (String, Account) {
        let did = format!("did:plc:{}", format!("{n:024}").bytes().map(|d| char::from(d - b'0' + b'a')).collect::<String>());
        let account = Account { handle: Some(format!("bo{n}.test")), display_name: Some(name.to_owned()), ..Account::default() };
        (did, account)
    }

    /// Users written over several commits (so several segments), some written again with
    /// other names: pages of any size give every user filed under a prefix once per
    /// matching word, in key order, and nothing a later write replaced.
    #[test]
    fn pages_over_several_segments_give_each_filed_user_once_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let people = People::open(dir.path()).unwrap();
        let mut writer = people.writer().unwrap();
        for chunk in 0..4 {
            for n in chunk * 40..(chunk + 1) * 40 {
                let (did, account) = user(n, &format!("Bob{n} Bobson"));
                writer.delete_term(people.did_term(&did));
                writer.add_document(people.document(&did, &account)).unwrap();
            }
            writer.commit().unwrap();
        }
        // Every tenth renamed: no longer a Bobson.
        for n in (0..160).step_by(10) {
            let (did, account) = user(n, "Alice Smith");
            writer.delete_term(people.did_term(&did));
            writer.add_document(people.document(&did, &account)).unwrap();
        }
        writer.commit().unwrap();
        people.reload().unwrap();
        assert!(people.segments().unwrap().len() > 1);
        assert_eq!(people.count(), 160);

        let all = people.by_word("bo", None, 10_000).unwrap();
        assert!(!all.more);
        // Each user under its handle and `bob{n}`, the Bobsons under `bobson` too.
        assert_eq!(all.users.len(), 160 + 144 + 144);
        assert!(all.users.windows(2).all(|w| w[0].0 < w[1].0), "in key order, each once");
        for limit in [1, 7, 25, 100] {
            let (mut paged, mut after) = (Vec::new(), None::<Vec<u8>>);
            loop {
                let page = people.by_word("bo", after.as_deref(), limit).unwrap();
                assert!(page.users.len() <= limit);
                paged.extend(page.users.iter().cloned());
                if !page.more {
                    break;
                }
                after = page.users.last().map(|(key, _)| key.clone());
            }
            assert_eq!(paged, all.users, "limit {limit}");
        }
        assert_eq!(people.by_prefix("BO17.", 10).unwrap(), vec![user(17, "").0]);
        assert_eq!(people.by_prefix("did:plc:", 500).unwrap().len(), 160);
        assert!(people.by_word("bobson", None, 1000).unwrap().users.iter().all(|(_, did)| !did.ends_with("a")), "renamed users left");
    }
}
