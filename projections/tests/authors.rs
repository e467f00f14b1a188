//! Author search (the search model's index of users, made from the eprints model's
//! accounts) against the embedded log and store: handles, display names and profile names
//! as they change, hidden accounts, pages that find each author once, and a replay that
//! gives the same answers.

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
fn search(ctx: &Context, q: &str, limit: usize) -> Vec<usize> {
    let index = ctx.search.open(ctx.store.active_version("search").unwrap().unwrap()).unwrap();
    let r = EprintsReader::new(ctx.store.as_ref()).unwrap();
    let (mut found, mut after) = (Vec::new(), None);
    loop {
        let page = index.people().authors(&r, q, limit, after).unwrap();
        assert!(page.authors.len() <= limit);
        found.extend(page.authors.iter().map(|a| number(&a.did)));
        match page.next {
            Some(next) => after = Some(next),
            None => return found,
        }
    }
}

/// The DIDs of the users whose DID or handle starts with `prefix` (`searchUsers`).
fn by_prefix(ctx: &Context, prefix: &str) -> Vec<String> {
    let index = ctx.search.open(ctx.store.active_version("search").unwrap().unwrap()).unwrap();
    index.people().by_prefix(prefix, 10).unwrap()
}

/// Builds the eprints model then the search index (which reads its accounts) from the log.
fn project(ctx: &Context, log: &EmbeddedLog, mode: Mode, batch: usize) {
    for model in ["eprints", "search"] {
        let version = match mode {
            Mode::Live => catalog::ensure_active(ctx, model).unwrap(),
            _ => ctx.store.create_version(model).unwrap(),
        };
        let mut p = catalog::open(ctx, model, version, mode).unwrap();
        catch_up(log, p.as_mut(), batch).unwrap();
        p.flush().unwrap();
        if mode != Mode::Live {
            drop(p);
            ctx.store.set_active_version(model, version).unwrap();
        }
    }
}

#[test]
fn authors_are_found_by_their_handles_and_names_once_each_and_a_replay_finds_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
    let ctx = Context::single(store.clone(), &dir.path().join("search"));
    let step = |events: Vec<NewEvent>| {
        log.append(&events).unwrap();
        project(&ctx, &log, Mode::Live, 2);
    };

    step(vec![
        identity(1, "ada.test", Some("Ada Lovelace")),
        identity(2, "grace.test", Some("Grace Hopper")),
        identity(3, "adam.test", Some("Adam Smith-Jones")),
        identity(4, "lovelace-fan.test", None),
    ]);
    assert_eq!(search(&ctx, "ada", 10), vec![1, 3], "handles and names by prefix, each author once");
    assert_eq!(search(&ctx, "LOVE", 10), vec![1, 4]);
    assert_eq!(search(&ctx, "ada love", 10), vec![1], "every word must match");
    assert_eq!(search(&ctx, "jones", 10), vec![3], "a name's parts are words of their own");
    assert_eq!(search(&ctx, "smith-jones", 10), vec![3]);
    assert_eq!(search(&ctx, "grace.test", 10), vec![2]);
    assert_eq!(search(&ctx, "nobody", 10), Vec::<usize>::new());

    // A new handle and a profile's name replace what the author was found by.
    step(vec![identity(2, "rear-admiral.test", None), profile(2, "3l0000000000a", "Amazing Grace")]);
    assert_eq!(search(&ctx, "grace.test", 10), Vec::<usize>::new(), "the old handle is gone");
    assert!(by_prefix(&ctx, "grace").is_empty(), "the old handle is gone");
    assert_eq!(by_prefix(&ctx, "REAR-"), vec![did(2)]);
    assert_eq!(search(&ctx, "rear", 10), vec![2]);
    assert_eq!(search(&ctx, "amazing", 10), vec![2]);
    assert_eq!(search(&ctx, "hopper", 10), vec![2], "the display name still counts");
    step(vec![unprofile(2, "3l0000000000b")]);
    assert_eq!(search(&ctx, "amazing", 10), Vec::<usize>::new());

    // A hidden account is not found until it is active again.
    step(vec![status(1, false, Some(AccountStatus::Takendown))]);
    assert_eq!(search(&ctx, "ada", 10), vec![3]);
    step(vec![status(1, true, None)]);
    assert_eq!(search(&ctx, "ada", 10), vec![1, 3]);

    // Many authors sharing a prefix, each under several matching words: pages of any size
    // find every one of them exactly once.
    let many: Vec<NewEvent> = (10..210).map(|n| identity(n, &format!("bo{n}.test"), Some(&format!("Bob{n} Bobson Bobbins")))).collect();
    step(many);
    let all: Vec<usize> = (10..210).collect();
    for limit in [1, 7, 25, 100] {
        let mut found = search(&ctx, "bo", limit);
        assert_eq!(found.len(), 200, "limit {limit}: each author once");
        found.sort_unstable();
        assert_eq!(found, all, "limit {limit}");
    }
    assert_eq!(search(&ctx, "bobson bob17", 100), vec![17, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179]);

    let before: Vec<Vec<usize>> = ["ada", "love", "rear", "hopper", "bo", "bob1"].iter().map(|q| search(&ctx, q, 10)).collect();
    project(&ctx, &log, Mode::Rebuild, 3);
    let after: Vec<Vec<usize>> = ["ada", "love", "rear", "hopper", "bo", "bob1"].iter().map(|q| search(&ctx, q, 10)).collect();
    assert_eq!(after, before, "the replay finds the same authors");
}

/// Rows written before eprints format 4 named the eprint's URI (an author's listing) in
/// their values; rows written since leave it to their keys. Both are read alike, and a
/// deleted account's records leave listings of either. A user is known from its account
/// (`firstSeen`), and found by its DID or handle.
#[test]
fn listing_rows_of_either_format_are_read_alike_and_users_are_known_by_their_accounts() {
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
    let by_author = TableRef::new("eprints", v, "by_author");
    assert!(rows(&by_author, &ada).iter().all(|r| r.columns.is_empty()), "a listing row is its key");
    for partition in ["by_did", "by_handle", "by_name"] {
        assert!(rows(&TableRef::new("eprints", v, "users"), partition).is_empty(), "no user rows in the store (eprints format 9)");
    }
    // When the index first saw a user: its account's.
    let account = store.get(&TableRef::new("eprints", v, "accounts"), &ada, &[]).unwrap().unwrap();
    let first_seen = account.get("firstSeen").and_then(Value::as_text).unwrap().to_owned();
    assert!(first_seen.starts_with("20"), "{first_seen}");
    assert_eq!(EprintsReader::new(store).unwrap().user_first_seen(&ada).unwrap(), Some(first_seen));
    assert_eq!(EprintsReader::new(store).unwrap().user_first_seen(&did(9)).unwrap(), None, "a DID the index never saw");
    assert_eq!((by_prefix(&env.ctx, "ada"), by_prefix(&env.ctx, &adam)), (vec![ada.clone(), adam.clone()], vec![adam.clone()]));
    assert_eq!(by_prefix(&env.ctx, "did:plc:author"), vec![ada.clone(), adam.clone()], "DIDs by prefix");
    let index = env.ctx.search.open(store.active_version("search").unwrap().unwrap()).unwrap();
    assert_eq!(index.people().count(), 2);

    // Ada's older listing row, as format 3 wrote it.
    let mut batch = Batch::default();
    let named = |name: &str, value: &str| Columns::from([(name.to_owned(), Value::Text(value.to_owned()))]);
    let older = rows(&by_author, &ada).remove(0);
    batch.put(&by_author, &ada, older.clustering, named("uri", &uri("3p1")), 1);
    store.apply(batch).unwrap();
    let reader = EprintsReader::new(store).unwrap();
    let page = reader.by_author(&ada, 10, None).unwrap();
    assert_eq!(page.eprints.iter().map(|e| e.uri()).collect::<Vec<_>>(), [uri("3p2"), uri("3p1")]);
    assert_eq!(reader.uris_by_author(&ada, 10).unwrap(), [uri("3p2"), uri("3p1")]);

    env.log.append(&[status(1, false, Some(AccountStatus::Deleted))]).unwrap();
    project_all(&env);
    assert!(rows(&by_author, &ada).is_empty(), "a deleted account's records leave its listing");
    assert!(EprintsReader::new(store).unwrap().uris_by_author(&ada, 10).unwrap().is_empty());
    assert_eq!(search(&env.ctx, "ada", 10), vec![2], "a deleted account is hidden from author search");
}

/// Listing keys hold an eprint's URI compact (its DID's key and its record key, eprints
/// format 7); those builds before wrote with the URI short (the DID as text, format 6) or
/// whole (format 5) are read alike, and replaced when the eprint changes. A record row
/// names neither its URI nor its listings (they follow from its record); the rows of
/// earlier builds, which name them (and the form of their keys), are unlisted as they say.
#[test]
fn listings_keyed_by_earlier_forms_of_the_uri_are_read_and_replaced() {
    use crate::support::{env, project_all, submission, write};
    use store::{Batch, Scan, TableRef, Value};

    // Each earlier form: the URI as its keys held it, and the record row's flag for it.
    let (ada, adam) = (did(1), did(2));
    let uri = format!("at://{ada}/pub.svc.eprint.submission/3p1");
    let compact = [projections::did_key::encode(&ada).as_slice(), b"/3p1"].concat();
    let forms =
        [(compact.clone(), Some("compactKeys")), (format!("{ada}/3p1").into_bytes(), Some("shortKeys")), (uri.clone().into_bytes(), None)];
    for (older, flag) in forms {
        let label = format!("{flag:?}");
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

        let mut row = store.get(&records, &uri, &[]).unwrap().unwrap();
        let mut held: Vec<&str> = row.keys().map(String::as_str).collect();
        held.sort();
        assert_eq!(held, ["cid", "indexedAt", "ordinal", "record", "rev"], "a record row holds what nothing else gives");

        // The rows as the earlier format wrote them.
        let mut batch = Batch::default();
        let mut listing_at = 0;
        for partition in [&ada, &adam] {
            let row = rows(&by_author, partition).remove(0);
            listing_at = (u64::from_be_bytes(row.clustering[..8].try_into().unwrap()) ^ (1 << 63)) as i64;
            batch.delete(&by_author, partition, row.clustering.clone(), 1);
            let mut key = row.clustering[..8].to_vec();
            key.extend_from_slice(&older);
            batch.put(&by_author, partition, key, row.columns, 1);
        }
        batch.delete(&by_id, "doi:10.1234/x", compact.clone(), 1);
        batch.put(&by_id, "doi:10.1234/x", older.clone(), Default::default(), 1);
        let text = |t: &str| Value::Text(t.to_owned());
        row.insert("uri".into(), text(&uri));
        row.insert("did".into(), text(&ada));
        row.insert("listed".into(), text(&serde_json::json!([ada, adam]).to_string()));
        row.insert("listingAt".into(), Value::Int(listing_at));
        row.insert("listingByData".into(), Value::Bool(true));
        row.insert("deleted".into(), Value::Bool(false));
        if let Some(flag) = flag {
            row.insert(flag.into(), Value::Bool(true));
        }
        batch.put(&records, &uri, Vec::new(), row, 1);
        store.apply(batch).unwrap();

        let reader = EprintsReader::new(store).unwrap();
        assert_eq!(reader.uris_by_author(&adam, 10).unwrap(), std::slice::from_ref(&uri), "{label}");
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
        assert!(rows(&by_author, &adam).is_empty(), "{label}: {:?}", rows(&by_author, &adam));
        assert_eq!(rows(&by_author, &ada).len(), 1);
        assert!(rows(&by_id, "doi:10.1234/x").is_empty(), "{label}");
        let reader = EprintsReader::new(store).unwrap();
        assert_eq!(reader.uris_by_author(&ada, 10).unwrap(), std::slice::from_ref(&uri));
        assert_eq!(reader.by_external_id("doi:10.1234/y", 10).unwrap(), std::slice::from_ref(&uri));
    }
}

/// The index of users is made from the eprints model's accounts: users whose events the
/// eprints model has not applied yet wait (in the index's commit, across a restart) and
/// are written once it has; a DID's first record makes it a user, found by its DID.
#[test]
fn users_wait_for_the_eprints_model_and_are_written_once_it_has_applied_their_events() {
    use crate::support::{env, submission, write};
    use projections::search::SearchProjection;

    let env = env();
    let eprints_version = catalog::ensure_active(&env.ctx, "eprints").unwrap();
    let search_version = catalog::ensure_active(&env.ctx, "search").unwrap();
    let open_search = || {
        SearchProjection::open(
            &env.ctx.search,
            env.ctx.node.clone(),
            env.ctx.store.clone(),
            env.ctx.lexicons.clone(),
            search_version,
            Mode::Live,
        )
        .unwrap()
        .with_eprints_wait(std::time::Duration::from_millis(50))
    };
    let (ada, bo) = (did(1), did(2));
    env.log
        .append(&[identity(1, "ada.test", Some("Ada Lovelace")), write(&bo, "3p1", "3r01", submission("One", &[("Bo", &bo)], 1), false)])
        .unwrap();
    // The index first, the eprints model not yet: nobody is written, and the commit keeps
    // who waits.
    {
        let mut indexer = open_search();
        catch_up(env.log.as_ref(), &mut indexer, 10).unwrap();
    }
    assert!(search(&env.ctx, "ada", 10).is_empty());
    assert!(by_prefix(&env.ctx, &bo).is_empty());

    let mut eprints = catalog::open(&env.ctx, "eprints", eprints_version, Mode::Live).unwrap();
    catch_up(env.log.as_ref(), eprints.as_mut(), 10).unwrap();
    // Reopened (as after a restart) with nothing new in the log: its flush writes them.
    let mut indexer = open_search();
    catch_up(env.log.as_ref(), &mut indexer, 10).unwrap();
    assert_eq!(search(&env.ctx, "lovelace", 10), vec![1]);
    assert_eq!(by_prefix(&env.ctx, &bo), vec![bo.clone()], "a first record makes a user, found by its DID");
    assert_eq!(by_prefix(&env.ctx, "ADA.T"), vec![ada.clone()]);

    // A new handle and names replace the old ones.
    env.log.append(&[identity(1, "countess.test", Some("Augusta King"))]).unwrap();
    catch_up(env.log.as_ref(), eprints.as_mut(), 10).unwrap();
    catch_up(env.log.as_ref(), &mut indexer, 10).unwrap();
    assert!(by_prefix(&env.ctx, "ada.t").is_empty(), "the old handle is gone");
    assert_eq!(search(&env.ctx, "lovelace", 10), Vec::<usize>::new(), "the old names are gone");
    assert_eq!(search(&env.ctx, "augusta", 10), vec![1]);
}
