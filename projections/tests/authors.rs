//! Author search (the eprints model's `by_name` index) against the embedded log and store:
//! handles, display names and profile names as they change, hidden accounts, pages that
//! find each author once, and a replay that gives the same answers.

use std::sync::Arc;

use event_schema::{AccountChange, AccountStatus, IdentityChange, NewEvent, Payload, RecordDelete, RecordWrite, Source};
use eventlog::{EmbeddedLog, EventLog};
use projections::catalog::{self, Context, Mode};
use projections::catch_up;
use projections::eprints::read::EprintsReader;
use serde_json::json;
use store::{EmbeddedStore, Store};

fn src() -> Source {
    Source::Manual { note: "author search test".into() }
}

/// Author `n`'s DID: a `did:plc` of 24 base32 characters (its 18 digits as the letters
/// `a`–`j`), which the model's keys hold compact (`projections::did_key`).
fn did(n: usize) -> String {
    let digits: String = format!("{n:018}").bytes().map(|d| char::from(d - b'0' + b'a')).collect();
    format!("did:plc:author{digits}")
}

/// The number of author `did` ([`did`]).
fn number(did: &str) -> usize {
    did.trim_start_matches("did:plc:author").bytes().fold(0, |n, d| n * 10 + usize::from(d - b'a'))
}

fn identity(n: usize, handle: &str, name: Option<&str>) -> NewEvent {
    let change = IdentityChange { did: did(n), handle: Some(handle.into()), display_name: name.map(str::to_owned) };
    NewEvent::repo(src(), Payload::Identity(change))
}

fn profile(n: usize, rev: &str, name: &str) -> NewEvent {
    let w = RecordWrite {
        did: did(n),
        collection: "pub.svc.actor.profile".into(),
        rkey: "self".into(),
        cid: "bafyrei".into(),
        rev: rev.into(),
        record: json!({"$type": "pub.svc.actor.profile", "displayName": name}),
    };
    NewEvent::repo(src(), Payload::RecordCreate(w))
}

fn unprofile(n: usize, rev: &str) -> NewEvent {
    let d = RecordDelete { did: did(n), collection: "pub.svc.actor.profile".into(), rkey: "self".into(), rev: rev.into() };
    NewEvent::repo(src(), Payload::RecordDelete(d))
}

fn status(n: usize, active: bool, status: Option<AccountStatus>) -> NewEvent {
    NewEvent::repo(src(), Payload::Account(AccountChange { did: did(n), active, status }))
}

/// Every author `q` finds, page by page (`limit` a page), as their DIDs' numbers.
fn search(store: &dyn Store, q: &str, limit: usize) -> Vec<usize> {
    let r = EprintsReader::new(store).unwrap();
    let (mut found, mut after) = (Vec::new(), None);
    loop {
        let page = r.search_authors(q, limit, after).unwrap();
        assert!(page.authors.len() <= limit);
        found.extend(page.authors.iter().map(|a| number(&a.did)));
        match page.next {
            Some(next) => after = Some(next),
            None => return found,
        }
    }
}

#[test]
fn authors_are_found_by_their_handles_and_names_once_each_and_a_replay_finds_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
    let ctx = Context::single(store.clone(), &dir.path().join("search"));
    let version = catalog::ensure_active(&ctx, "eprints").unwrap();
    let mut p = catalog::open(&ctx, "eprints", version, Mode::Live).unwrap();
    let mut step = |events: Vec<NewEvent>| {
        log.append(&events).unwrap();
        catch_up(log.as_ref(), p.as_mut(), 2).unwrap();
    };

    step(vec![
        identity(1, "ada.test", Some("Ada Lovelace")),
        identity(2, "grace.test", Some("Grace Hopper")),
        identity(3, "adam.test", Some("Adam Smith-Jones")),
        identity(4, "lovelace-fan.test", None),
    ]);
    assert_eq!(search(store.as_ref(), "ada", 10), vec![1, 3], "handles and names by prefix, each author once");
    assert_eq!(search(store.as_ref(), "LOVE", 10), vec![1, 4]);
    assert_eq!(search(store.as_ref(), "ada love", 10), vec![1], "every word must match");
    assert_eq!(search(store.as_ref(), "jones", 10), vec![3], "a name's parts are words of their own");
    assert_eq!(search(store.as_ref(), "smith-jones", 10), vec![3]);
    assert_eq!(search(store.as_ref(), "grace.test", 10), vec![2]);
    assert_eq!(search(store.as_ref(), "nobody", 10), Vec::<usize>::new());

    // A new handle and a profile's name replace what the author was found by.
    step(vec![identity(2, "rear-admiral.test", None), profile(2, "3l0000000000a", "Amazing Grace")]);
    assert_eq!(search(store.as_ref(), "grace.test", 10), Vec::<usize>::new(), "the old handle is gone");
    assert_eq!(search(store.as_ref(), "rear", 10), vec![2]);
    assert_eq!(search(store.as_ref(), "amazing", 10), vec![2]);
    assert_eq!(search(store.as_ref(), "hopper", 10), vec![2], "the display name still counts");
    step(vec![unprofile(2, "3l0000000000b")]);
    assert_eq!(search(store.as_ref(), "amazing", 10), Vec::<usize>::new());

    // A hidden account is not found until it is active again.
    step(vec![status(1, false, Some(AccountStatus::Takendown))]);
    assert_eq!(search(store.as_ref(), "ada", 10), vec![3]);
    step(vec![status(1, true, None)]);
    assert_eq!(search(store.as_ref(), "ada", 10), vec![1, 3]);

    // Many authors sharing a prefix, each under several matching words: pages of any size
    // find every one of them exactly once.
    let many: Vec<NewEvent> = (10..210).map(|n| identity(n, &format!("bo{n}.test"), Some(&format!("Bob{n} Bobson Bobbins")))).collect();
    step(many);
    let all: Vec<usize> = (10..210).collect();
    for limit in [1, 7, 25, 100] {
        let mut found = search(store.as_ref(), "bo", limit);
        assert_eq!(found.len(), 200, "limit {limit}: each author once");
        found.sort_unstable();
        assert_eq!(found, all, "limit {limit}");
    }
    assert_eq!(search(store.as_ref(), "bobson bob17", 100), vec![17, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179]);

    let before: Vec<Vec<usize>> = ["ada", "love", "rear", "hopper", "bo", "bob1"].iter().map(|q| search(store.as_ref(), q, 10)).collect();
    let v2 = store.create_version("eprints").unwrap();
    let mut rebuilt = catalog::open(&ctx, "eprints", v2, Mode::Rebuild).unwrap();
    catch_up(log.as_ref(), rebuilt.as_mut(), 3).unwrap();
    rebuilt.flush().unwrap();
    store.set_active_version("eprints", v2).unwrap();
    let after: Vec<Vec<usize>> = ["ada", "love", "rear", "hopper", "bo", "bob1"].iter().map(|q| search(store.as_ref(), q, 10)).collect();
    assert_eq!(after, before, "the replay finds the same authors");
}

/// Rows written before eprints format 4 named the account's DID (author search's `by_name`)
/// and the eprint's URI (an author's listing) in their values, and before format 8 a user's
/// row under its DID held `firstSeen`; rows written since leave them to their keys and the
/// account. Both are read alike, and a deleted account's records leave listings
/// of either.
#[test]
fn name_and_listing_rows_of_either_format_are_read_alike() {
    use crate::support::{env, project_all, submission, write};
    use store::{Batch, Columns, Scan, TableRef, Value};

    let env = env();
    let (ada, adam) = (did(1), did(2));
    let uri = |rkey: &str| format!("at://{ada}/pub.svc.eprint.submission/{rkey}");
    env.log
        .append(&[
            identity(1, "ada.test", Some("Ada Lovelace")),
            identity(2, "adam.test", Some("Adam Smith")),
            write(&ada, "3p1", "3r01", submission("One", &[("Ada", &ada)], 1), false),
            write(&ada, "3p2", "3r01", submission("Two", &[("Ada", &ada)], 2), false),
        ])
        .unwrap();
    project_all(&env);
    let store = env.ctx.store.as_ref();
    let v = store.active_version("eprints").unwrap().unwrap();
    let rows = |table: &TableRef, partition: &str| store.scan(table, partition, &Scan::first(1000)).unwrap().rows;
    let (users, by_author) = (TableRef::new("eprints", v, "users"), TableRef::new("eprints", v, "by_author"));
    assert!(rows(&by_author, &ada).iter().all(|r| r.columns.is_empty()), "a listing row is its key");
    assert!(rows(&users, "by_handle").iter().all(|r| r.columns.is_empty()), "a handle row is its key");
    assert!(rows(&users, "by_did").iter().all(|r| r.columns.is_empty()), "a DID row is its key (eprints format 8)");
    // When the index first saw a user: its account's, read through its DID row.
    let account = store.get(&TableRef::new("eprints", v, "accounts"), &ada, &[]).unwrap().unwrap();
    let first_seen = account.get("firstSeen").and_then(Value::as_text).unwrap().to_owned();
    assert!(first_seen.starts_with("20"), "{first_seen}");
    assert_eq!(EprintsReader::new(store).unwrap().user_first_seen(&ada).unwrap(), Some(first_seen));
    assert_eq!(EprintsReader::new(store).unwrap().user_first_seen(&did(9)).unwrap(), None, "a DID the index never saw");
    let by_prefix = |prefix: &str| EprintsReader::new(store).unwrap().users_by_prefix(prefix, 10).unwrap();
    let found = (by_prefix("ada"), by_prefix(&adam));
    assert_eq!(found, (vec![ada.clone(), adam.clone()], vec![adam.clone()]));

    // Adam's name rows and Ada's older listing row, as format 3 wrote them.
    let mut batch = Batch::default();
    let named = |name: &str, value: &str| Columns::from([(name.to_owned(), Value::Text(value.to_owned()))]);
    let adam_key = projections::did_key::encode(&adam);
    assert_eq!(adam_key.len(), projections::did_key::LEN, "a did:plc is keyed compact");
    for row in rows(&users, "by_name").into_iter().filter(|r| r.clustering.ends_with(&adam_key)) {
        assert!(row.columns.is_empty(), "a name row is its key");
        batch.put(&users, "by_name", row.clustering, named("did", &adam), 1);
    }
    // and Adam's user rows as format 4 wrote them.
    for (partition, key) in [("by_did", adam.as_bytes()), ("by_handle", adam_key.as_slice())] {
        for row in rows(&users, partition).into_iter().filter(|r| r.clustering.ends_with(key)) {
            let mut columns = named("did", &adam);
            columns.insert("firstSeen".into(), Value::Text("2025-01-01T00:00:00.000Z".into()));
            batch.put(&users, partition, row.clustering, columns, 1);
        }
    }
    let older = rows(&by_author, &ada).remove(0);
    batch.put(&by_author, &ada, older.clustering, named("uri", &uri("3p1")), 1);
    store.apply(batch).unwrap();

    assert_eq!(search(store, "ada", 10), vec![1, 2]);
    assert_eq!((by_prefix("ada"), by_prefix(&adam)), found);
    assert_eq!(EprintsReader::new(store).unwrap().user_first_seen(&adam).unwrap().as_deref(), Some("2025-01-01T00:00:00.000Z"));
    assert_eq!(search(store, "smith", 10), vec![2]);
    let reader = EprintsReader::new(store).unwrap();
    let page = reader.by_author(&ada, 10, None).unwrap();
    assert_eq!(page.eprints.iter().map(|e| e.uri()).collect::<Vec<_>>(), [uri("3p2"), uri("3p1")]);
    assert_eq!(reader.uris_by_author(&ada, 10).unwrap(), [uri("3p2"), uri("3p1")]);

    env.log.append(&[status(1, false, Some(AccountStatus::Deleted))]).unwrap();
    project_all(&env);
    assert!(rows(&by_author, &ada).is_empty(), "a deleted account's records leave its listing");
    assert!(EprintsReader::new(store).unwrap().uris_by_author(&ada, 10).unwrap().is_empty());
}

/// Listing keys hold an eprint's URI compact (its DID's key and its record key, eprints
/// format 7); those builds before wrote with the URI short (the DID as text, format 6) or
/// whole (format 5) are read alike, and replaced when the eprint changes.
#[test]
fn listings_keyed_by_earlier_forms_of_the_uri_are_read_and_replaced() {
    use crate::support::{env, project_all, submission, write};
    use store::{Batch, Scan, TableRef, Value};

    // Each earlier form: the URI as its keys held it, and the record row's flag for it.
    let (ada, adam) = (did(1), did(2));
    let uri = format!("at://{ada}/pub.svc.eprint.submission/3p1");
    let forms = [(format!("{ada}/3p1"), Some("shortKeys")), (uri.clone(), None)];
    for (older, flag) in forms {
        let env = env();
        let mut record = submission("Keys", &[("Ada", &ada), ("Adam", &adam)], 1);
        record["doi"] = "10.1234/x".into();
        env.log.append(&[write(&ada, "3p1", "3r01", record.clone(), false)]).unwrap();
        project_all(&env);
        let store = env.ctx.store.as_ref();
        let v = store.active_version("eprints").unwrap().unwrap();
        let (by_author, by_id, records) = (
            TableRef::new("eprints", v, "by_author"),
            TableRef::new("eprints", v, "by_external_id"),
            TableRef::new("eprints", v, "records"),
        );
        let rows = |table: &TableRef, partition: &str| store.scan(table, partition, &Scan::first(1000)).unwrap().rows;
        let compact = [projections::did_key::encode(&ada).as_slice(), b"/3p1"].concat();
        assert_eq!(compact.len(), 20, "a did:plc's URI in 20 bytes");
        assert_eq!(rows(&by_author, &adam)[0].clustering[8..], compact, "a listing key holds the URI compact");
        assert_eq!(rows(&by_id, "doi:10.1234/x")[0].clustering, compact);

        // The rows as the earlier format wrote them.
        let mut batch = Batch::default();
        for partition in [&ada, &adam] {
            let row = rows(&by_author, partition).remove(0);
            batch.delete(&by_author, partition, row.clustering.clone(), 1);
            let mut key = row.clustering[..8].to_vec();
            key.extend_from_slice(older.as_bytes());
            batch.put(&by_author, partition, key, row.columns, 1);
        }
        batch.delete(&by_id, "doi:10.1234/x", compact.clone(), 1);
        batch.put(&by_id, "doi:10.1234/x", older.clone().into_bytes(), Default::default(), 1);
        let mut row = store.get(&records, &uri, &[]).unwrap().unwrap();
        assert_eq!(row.remove("compactKeys"), Some(Value::Bool(true)));
        if let Some(flag) = flag {
            row.insert(flag.into(), Value::Bool(true));
        }
        batch.put(&records, &uri, Vec::new(), row, 1);
        store.apply(batch).unwrap();

        let reader = EprintsReader::new(store).unwrap();
        assert_eq!(reader.uris_by_author(&adam, 10).unwrap(), std::slice::from_ref(&uri), "{older}");
        assert_eq!(
            reader.by_author(&ada, 10, None).unwrap().eprints.iter().map(|e| e.uri().to_owned()).collect::<Vec<_>>(),
            std::slice::from_ref(&uri)
        );
        assert_eq!(reader.by_external_id("doi:10.1234/x", 10).unwrap(), std::slice::from_ref(&uri));

        // An update without Adam and with another DOI removes the earlier rows.
        let mut record = submission("Keys, revised", &[("Ada", &ada)], 1);
        record["doi"] = "10.1234/y".into();
        env.log.append(&[write(&ada, "3p1", "3r02", record, true)]).unwrap();
        project_all(&env);
        assert!(rows(&by_author, &adam).is_empty(), "{older}: {:?}", rows(&by_author, &adam));
        assert_eq!(rows(&by_author, &ada).len(), 1);
        assert!(rows(&by_id, "doi:10.1234/x").is_empty(), "{older}");
        let reader = EprintsReader::new(store).unwrap();
        assert_eq!(reader.uris_by_author(&ada, 10).unwrap(), std::slice::from_ref(&uri));
        assert_eq!(reader.by_external_id("doi:10.1234/y", 10).unwrap(), std::slice::from_ref(&uri));
    }
}

/// A user's rows under its handle and the words of its names hold its DID's key (eprints
/// format 7); those a build before keyed by the DID's text are read alike, and removed
/// when the handle or names change.
#[test]
fn user_rows_keyed_by_a_did_as_text_are_read_and_removed() {
    use crate::support::{env, project_all};
    use store::{Batch, Scan, TableRef};

    let env = env();
    env.log.append(&[identity(1, "ada.test", Some("Ada Lovelace"))]).unwrap();
    project_all(&env);
    let store = env.ctx.store.as_ref();
    let v = store.active_version("eprints").unwrap().unwrap();
    let users = TableRef::new("eprints", v, "users");
    let rows = |partition: &str| store.scan(&users, partition, &Scan::first(1000)).unwrap().rows;
    let (ada, key) = (did(1), projections::did_key::encode(&did(1)));
    let mut batch = Batch::default();
    for partition in ["by_handle", "by_name"] {
        let held = rows(partition);
        assert!(!held.is_empty() && held.iter().all(|r| r.clustering.ends_with(&key)), "{partition}: keyed compact");
        for row in held {
            batch.delete(&users, partition, row.clustering.clone(), 1);
            let mut text = row.clustering[..row.clustering.len() - key.len()].to_vec();
            text.extend_from_slice(ada.as_bytes());
            batch.put(&users, partition, text, row.columns, 1);
        }
    }
    store.apply(batch).unwrap();
    let reader = EprintsReader::new(store).unwrap();
    assert_eq!(reader.users_by_prefix("ada.t", 10).unwrap(), std::slice::from_ref(&ada));
    assert_eq!(search(store, "lovelace", 10), vec![1]);

    env.log.append(&[identity(1, "countess.test", Some("Augusta King"))]).unwrap();
    project_all(&env);
    assert!(EprintsReader::new(store).unwrap().users_by_prefix("ada.t", 10).unwrap().is_empty(), "the old handle's row is gone");
    assert_eq!(search(store, "lovelace", 10), Vec::<usize>::new(), "the old names' rows are gone");
    assert_eq!(search(store, "augusta", 10), vec![1]);
    assert!(rows("by_name").iter().chain(&rows("by_handle")).all(|r| r.clustering.ends_with(&key)), "only compact keys are left");
}
