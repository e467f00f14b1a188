//! Projections against the embedded log and store: updates, deletes, stale revisions,
//! idempotent re-application, batches cut short and blue-green versions (search: `search.rs`).

use crate::support;

use std::sync::Arc;

use event_schema::{AccountChange, AccountStatus, IdentityChange, NewEvent, Payload};
use eventlog::{EmbeddedLog, EventLog};
use projections::catalog::{self, Context, Mode};
use projections::eprints::read::EprintsReader;
use projections::search::SortOrder;
use projections::{catch_up, catch_up_all, EventBatch, Projection};
use serde_json::json;
use store::EmbeddedStore;
use support::*;

#[test]
fn updates_deletes_and_stale_revisions() {
    let env = env();
    let (a, b) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb");
    env.log
        .append(&[
            NewEvent::repo(
                src(),
                Payload::Identity(IdentityChange { did: a.into(), handle: Some("a.test".into()), display_name: Some("A".into()) }),
            ),
            write(a, "3aaa", "3r01", submission("Original Title", &[("A", a), ("B", b)], 1), false),
            write(a, "3bbb", "3r02", submission("Second Paper", &[("A", a)], 2), false),
            // An update drops author B.
            write(a, "3aaa", "3r03", submission("Revised Title", &[("A", a)], 1), true),
            // A stale update (older rev) arrives late: skipped.
            write(a, "3aaa", "3r00", submission("Stale Title", &[("A", a), ("B", b)], 1), true),
            delete(a, "3bbb", "3r04"),
            NewEvent::repo(src(), Payload::Identity(IdentityChange { did: a.into(), handle: Some("a2.test".into()), display_name: None })),
        ])
        .unwrap();
    project_all(&env);
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    let uri = format!("at://{a}/pub.svc.eprint.submission/3aaa");
    let record: serde_json::Value = serde_json::from_str(&reader.get(&uri).unwrap().unwrap().record).unwrap();
    assert_eq!(record["title"], "Revised Title");
    let (detail, eprint, account) = (reader.detail(&uri).unwrap().unwrap(), reader.get(&uri).unwrap().unwrap(), reader.account(a).unwrap());
    assert_eq!(
        (detail.did(), detail.cid(), detail.record(), detail.indexed_at()),
        (&*eprint.did, &*eprint.cid, &*eprint.record, &*eprint.indexed_at)
    );
    assert_eq!(
        (detail.handle(), detail.display_name(), detail.hidden()),
        (account.handle.as_deref(), account.display_name.as_deref(), account.hidden)
    );
    assert!(reader.detail(&format!("at://{a}/pub.svc.eprint.submission/3bbb")).unwrap().is_none());
    assert!(reader.get(&format!("at://{a}/pub.svc.eprint.submission/3bbb")).unwrap().is_none());
    let page = reader.by_author(a, 10, None).unwrap();
    assert_eq!((page.total, page.eprints.len()), (1, 1));
    assert_eq!(page.eprints[0].to_value()["title"], "Revised Title");
    assert_eq!(reader.by_author(b, 10, None).unwrap().total, 0);
    let account = reader.account(a).unwrap();
    assert_eq!((account.handle.as_deref(), account.display_name.as_deref()), (Some("a2.test"), Some("A")));
    let (hits, total) = search_all(&env, "title", SortOrder::Relevance, 10);
    assert_eq!(total, 1);
    assert_eq!(hits[0]["title"], "Revised Title");
    assert_eq!(search_all(&env, "stale", SortOrder::Relevance, 10).1, 0);
    assert_eq!(search_all(&env, "second", SortOrder::Relevance, 10).1, 0);
}

#[test]
fn a_deleted_account_is_removed_and_a_deactivated_one_hidden() {
    let env = env();
    let (a, b) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb");
    let account = |did: &str, active: bool, status: Option<AccountStatus>| {
        NewEvent::repo(src(), Payload::Account(AccountChange { did: did.into(), active, status }))
    };
    // The first batch: A's older paper and B's paper listing A.
    env.log
        .append(&[
            write(a, "3aaa", "3r01", submission("Gadget theory", &[("A", a)], 1), false),
            write(b, "3bbb", "3r01", submission("Gadget practice", &[("B", b), ("A", a)], 2), false),
        ])
        .unwrap();
    project_all(&env);
    // The second: A writes again and is deleted in the same batch; B is deactivated.
    env.log
        .append(&[
            write(a, "3ccc", "3r02", submission("Gadget futures", &[("A", a), ("B", b)], 3), false),
            account(a, false, Some(AccountStatus::Deleted)),
            account(b, false, Some(AccountStatus::Deactivated)),
        ])
        .unwrap();
    project_all(&env);
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    for rkey in ["3aaa", "3ccc"] {
        assert!(reader.get(&format!("at://{a}/pub.svc.eprint.submission/{rkey}")).unwrap().is_none(), "{rkey} is removed");
    }
    // Gone from every listing, including B's (A's third paper listed B).
    assert_eq!(reader.by_author(b, 10, None).unwrap().total, 1);
    assert_eq!(reader.by_author(a, 10, None).unwrap().total, 1, "only B's paper listing A is left");
    // B's own paper stays in the model (B is only hidden, and may come back).
    assert!(reader.get(&format!("at://{b}/pub.svc.eprint.submission/3bbb")).unwrap().is_some());
    assert!(reader.account(b).unwrap().hidden);
    // Search: A's documents are deleted, B's hidden.
    assert_eq!(search_all(&env, "gadget", SortOrder::Relevance, 10).1, 0);
    env.log.append(&[account(b, true, None)]).unwrap();
    project_all(&env);
    let (hits, total) = search_all(&env, "gadget", SortOrder::Relevance, 10);
    assert_eq!((total, hits[0]["title"].clone()), (1, json!("Gadget practice")));
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    let b_page = reader.by_author(b, 10, None).unwrap();
    assert_eq!((b_page.eprints.len(), b_page.eprints[0].to_value()["title"].clone()), (1, json!("Gadget practice")));
}

/// A backfill run beside the live stream appends its creates (at the repository's current
/// revision) and deletes in between the stream's events for the same records. Whatever the
/// order they reach the log in, the read models end in the same state: the newest revision
/// of each record wins.
#[test]
fn backfill_and_live_events_commute() {
    let a = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
    let delete = |rkey: &str, rev: &str| delete(a, rkey, rev);
    let events = [
        // Live: x written at r1, then updated at r3 (after the backfill's snapshot at r2).
        write(a, "3xxx", "3r01", submission("X one", &[("A", a)], 1), false),
        write(a, "3xxx", "3r03", submission("X three", &[("A", a)], 1), true),
        // Backfill at r2: x as it was then, y present; z gone (deleted at r2).
        write(a, "3xxx", "3r02", submission("X two", &[("A", a)], 1), false),
        write(a, "3yyy", "3r02", submission("Y two", &[("A", a)], 2), false),
        delete("3zzz", "3r02"),
        // Live: z written at r1 (the backfill's delete must win), y deleted at r4.
        write(a, "3zzz", "3r01", submission("Z one", &[("A", a)], 3), false),
        delete("3yyy", "3r04"),
    ];
    let state = |order: &[usize]| {
        let env = env();
        let batch: Vec<NewEvent> = order.iter().map(|i| events[*i].clone()).collect();
        env.log.append(&batch).unwrap();
        project_all(&env);
        let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
        let titles: Vec<Option<String>> = ["3xxx", "3yyy", "3zzz"]
            .iter()
            .map(|rkey| {
                reader.get(&format!("at://{a}/pub.svc.eprint.submission/{rkey}")).unwrap().map(|e| {
                    let record: serde_json::Value = serde_json::from_str(&e.record).unwrap();
                    record["title"].as_str().unwrap().to_owned()
                })
            })
            .collect();
        (titles, reader.by_author(a, 10, None).unwrap().total, search_all(&env, "*", SortOrder::Date, 10).1)
    };
    let expected = (vec![Some("X three".to_owned()), None, None], 1, 1);
    // Stream order, reversed, and every rotation of the stream order.
    let n = events.len();
    let mut orders: Vec<Vec<usize>> = vec![(0..n).rev().collect()];
    orders.extend((0..n).map(|k| (0..n).map(|i| (i + k) % n).collect()));
    for order in orders {
        assert_eq!(state(&order), expected, "order {order:?}");
    }
}

#[test]
fn applying_a_prefix_twice_gives_the_same_read_model() {
    let env = env();
    let did = "did:plc:cccccccccccccccccccccccc";
    let events: Vec<NewEvent> = (0..40)
        .map(|i| {
            write(did, &format!("3k{i:03}"), &format!("3r{i:03}"), submission(&format!("Paper {i}"), &[("C", did)], 1 + i % 28), false)
        })
        .collect();
    env.log.append(&events).unwrap();
    let v = catalog::ensure_active(&env.ctx, "eprints").unwrap();
    let mut p = catalog::open(&env.ctx, "eprints", v, Mode::Live).unwrap();
    // Apply the first half, then apply it again from the start, as after a crash before the
    // checkpoint was written, then the rest.
    let first_half: Vec<_> = (0..4).flat_map(|part| env.log.read(part, 0, 5).unwrap()).collect();
    let batch = EventBatch::new(first_half, p.checkpoints().unwrap());
    p.apply_batch(&batch).unwrap();
    p.apply_batch(&batch).unwrap();
    catch_up(env.log.as_ref(), p.as_mut(), 7).unwrap();
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    let page = reader.by_author(did, 100, None).unwrap();
    assert_eq!((page.total, page.eprints.len()), (40, 40));
}

#[test]
fn a_live_catch_up_ends_with_a_commit_and_one_merged_segment() {
    let env = env();
    let did = "did:plc:mmmmmmmmmmmmmmmmmmmmmmmm";
    let n = 3000;
    let events: Vec<NewEvent> = (0..n)
        .map(|i| write(did, &format!("3m{i:05}"), "3r000", submission(&format!("Merged study {i}"), &[("M", did)], 1), false))
        .collect();
    for chunk in events.chunks(500) {
        env.log.append(chunk).unwrap();
    }
    support::project(&env, "eprints");
    let v = catalog::ensure_active(&env.ctx, "search").unwrap();
    let mut p = catalog::open(&env.ctx, "search", v, Mode::Live).unwrap();
    // Small batches: every one but the last says more events are waiting.
    catch_up(env.log.as_ref(), p.as_mut(), 100).unwrap();
    assert_eq!(p.durable_checkpoints().unwrap(), p.checkpoints().unwrap(), "the end of a catch-up is committed at once");
    let index = env.ctx.search.open(v).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while index.segment_count() > 1 {
        assert!(std::time::Instant::now() < deadline, "still {} segments a minute after the catch-up", index.segment_count());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (hits, total) = search_all(&env, "merged study", SortOrder::Date, 1000);
    assert_eq!((hits.len(), total), (n, n));
}

#[test]
fn a_rebuilt_version_is_built_beside_the_active_one() {
    let env = env();
    let did = "did:plc:eeeeeeeeeeeeeeeeeeeeeeee";
    env.log.append(&[write(did, "3zzz", "3r001", submission("Blue Green", &[("E", did)], 3), false)]).unwrap();
    project_all(&env);
    let store = env.ctx.store.clone();
    let v1 = store.active_version("eprints").unwrap().unwrap();
    let v2 = store.create_version("eprints").unwrap();
    let mut p = catalog::open(&env.ctx, "eprints", v2, Mode::Rebuild).unwrap();
    catch_up(env.log.as_ref(), p.as_mut(), 100).unwrap();
    // Until the swap, readers see v1; after it, v2, with the same content.
    assert_eq!(store.active_version("eprints").unwrap(), Some(v1));
    let before = EprintsReader::new(store.as_ref()).unwrap().by_author(did, 10, None).unwrap();
    store.set_active_version("eprints", v2).unwrap();
    catalog::drop_version(&env.ctx, "eprints", v1).unwrap();
    let after = EprintsReader::new(store.as_ref()).unwrap().by_author(did, 10, None).unwrap();
    assert_eq!(before, after);
}

#[test]
fn one_reader_feeds_projections_that_stand_at_different_checkpoints() {
    let env = env();
    let did = "did:plc:eeeeeeeeeeeeeeeeeeeeeeee";
    let events: Vec<NewEvent> = (0..60)
        .map(|i| {
            write(
                did,
                &format!("3e{i:03}"),
                &format!("3r{i:03}"),
                submission(&format!("Shared read {i}"), &[("E", did)], 1 + i % 28),
                false,
            )
        })
        .collect();
    env.log.append(&events).unwrap();
    let mut models: Vec<_> = catalog::MODELS
        .iter()
        .map(|m| {
            let v = catalog::ensure_active(&env.ctx, m).unwrap();
            catalog::open(&env.ctx, m, v, Mode::Live).unwrap()
        })
        .collect();
    // The eprints model is ahead (as after a crash between its store commit and the search
    // index's commit): the shared reader starts at the search model's checkpoints, and the
    // eprints model re-applies what it has without doubling anything.
    let ahead: Vec<_> = (0..4).flat_map(|part| env.log.read(part, 0, 8).unwrap()).collect();
    let next = ahead.iter().map(|e| (e.position.partition, e.position.offset + 1)).collect();
    models[0].apply_batch(&EventBatch::new(ahead, next)).unwrap();
    let results = catch_up_all(env.log.as_ref(), models.iter_mut().map(|m| m.as_mut() as &mut dyn Projection).collect(), 16);
    assert!(results.iter().all(|r| *r.as_ref().unwrap() == 60), "{results:?}");
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    let page = reader.by_author(did, 100, None).unwrap();
    assert_eq!((page.total, page.eprints.len()), (60, 60));
    assert_eq!(search_all(&env, "shared read", SortOrder::Date, 7).1, 60);
}

/// An embedded store that cuts one batch short, the way a crash can leave a batch on a
/// store without atomic batches (ScyllaDB): only the first `cut` writes land, no checkpoint.
struct CutShort {
    inner: EmbeddedStore,
    cut: std::sync::Mutex<Option<usize>>,
    last_len: std::sync::atomic::AtomicUsize,
}

impl store::Store for CutShort {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn get(&self, t: &store::TableRef, p: &str, c: &[u8]) -> Result<Option<store::Columns>, store::StoreError> {
        self.inner.get(t, p, c)
    }
    fn get_many(&self, t: &store::TableRef, keys: &[(String, Vec<u8>)]) -> Result<Vec<Option<store::Columns>>, store::StoreError> {
        self.inner.get_many(t, keys)
    }
    fn count(&self, t: &store::TableRef, p: &str) -> Result<u64, store::StoreError> {
        self.inner.count(t, p)
    }
    fn scan(&self, t: &store::TableRef, p: &str, s: &store::Scan) -> Result<store::Page, store::StoreError> {
        self.inner.scan(t, p, s)
    }
    fn apply(&self, batch: store::Batch) -> Result<(), store::StoreError> {
        let writes: Vec<store::Op> = batch.ops.iter().filter(|op| !matches!(op, store::Op::Checkpoint { .. })).cloned().collect();
        self.last_len.store(writes.len(), std::sync::atomic::Ordering::SeqCst);
        match self.cut.lock().unwrap().take() {
            Some(cut) => {
                self.inner.apply(store::Batch { ops: writes.into_iter().take(cut).collect(), deferred: false })?;
                Err(store::StoreError::Unavailable("crashed mid-batch".into()))
            }
            None => self.inner.apply(batch),
        }
    }
    fn checkpoints(&self, consumer: &str) -> Result<std::collections::BTreeMap<u32, u64>, store::StoreError> {
        self.inner.checkpoints(consumer)
    }
    fn active_version(&self, model: &str) -> Result<Option<u32>, store::StoreError> {
        self.inner.active_version(model)
    }
    fn versions(&self, model: &str) -> Result<std::collections::BTreeMap<u32, store::VersionState>, store::StoreError> {
        self.inner.versions(model)
    }
    fn create_version(&self, model: &str) -> Result<u32, store::StoreError> {
        self.inner.create_version(model)
    }
    fn set_active_version(&self, model: &str, version: u32) -> Result<(), store::StoreError> {
        self.inner.set_active_version(model, version)
    }
    fn retire_version(&self, model: &str, version: u32) -> Result<(), store::StoreError> {
        self.inner.retire_version(model, version)
    }
    fn drop_version(&self, model: &str, version: u32, tables: &[&str]) -> Result<(), store::StoreError> {
        self.inner.drop_version(model, version, tables)
    }
    fn check(&self) -> Result<(), store::StoreError> {
        self.inner.check()
    }
}

/// Records, listings and accounts of the eprints model, for comparing two builds.
fn eprints_dump(store: &dyn store::Store, dids: &[&str], uris: &[String]) -> Vec<String> {
    let reader = EprintsReader::new(store).unwrap();
    let mut out = Vec::new();
    for did in dids {
        let page = reader.by_author(did, 100, None).unwrap();
        out.push(format!(
            "{did} lists {}: {:?}",
            page.total,
            page.eprints.iter().map(|e| e.to_value()).map(|e| (e["uri"].clone(), e["title"].clone())).collect::<Vec<_>>()
        ));
        let account = reader.account(did).unwrap();
        out.push(format!("{did} account {:?} {:?}", account.handle, account.display_name));
    }
    for uri in uris {
        out.push(format!("{uri}: {:?}", reader.get(uri).unwrap().map(|e| e.record)));
    }
    out
}

#[test]
fn a_batch_cut_short_is_completed_by_applying_it_again() {
    let (a, b) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb");
    let delete = |rkey: &str, rev: &str| delete(a, rkey, rev);
    let handle = |did: &str, h: &str| {
        NewEvent::repo(src(), Payload::Identity(IdentityChange { did: did.into(), handle: Some(h.into()), display_name: None }))
    };
    let before = [
        write(a, "3k1", "3r01", submission("One", &[("A", a), ("B", b)], 1), false),
        write(a, "3k2", "3r02", submission("Two", &[("A", a)], 2), false),
        handle(a, "a.test"),
    ];
    let batch = [
        write(a, "3k1", "3r03", submission("One revised", &[("A", a)], 1), true),
        write(a, "3k1", "3r04", submission("One again", &[("A", a), ("B", b)], 1), true),
        delete("3k2", "3r05"),
        write(a, "3k3", "3r06", submission("Three", &[("B", b), ("A", a)], 3), false),
        write(a, "3k2", "3r07", submission("Two reborn", &[("B", b)], 2), false),
        write(b, "3k9", "3r01", submission("Nine", &[("B", b)], 9), false),
        handle(a, "a2.test"),
        handle(b, "b.test"),
        write(a, "3k3", "3r08", submission("Three final", &[("A", a)], 3), true),
    ];
    let uris: Vec<String> = ["3k1", "3k2", "3k3"]
        .iter()
        .map(|k| format!("at://{a}/pub.svc.eprint.submission/{k}"))
        .chain([format!("at://{b}/pub.svc.eprint.submission/3k9")])
        .collect();
    // The log and store of one run; `cut` cuts the second batch after that many writes.
    let run = |cut: Option<usize>| {
        let dir = tempfile::tempdir().unwrap();
        let log = EmbeddedLog::open(&dir.path().join("log"), 1).unwrap();
        let store = Arc::new(CutShort {
            inner: EmbeddedStore::open(&dir.path().join("store")).unwrap(),
            cut: Default::default(),
            last_len: Default::default(),
        });
        let ctx = Context::single(store.clone(), &dir.path().join("search"));
        let v = catalog::ensure_active(&ctx, "eprints").unwrap();
        let mut p = catalog::open(&ctx, "eprints", v, Mode::Live).unwrap();
        log.append(&before).unwrap();
        catch_up(&log, p.as_mut(), 100).unwrap();
        log.append(&batch).unwrap();
        *store.cut.lock().unwrap() = cut;
        if cut.is_some() {
            assert!(catch_up(&log, p.as_mut(), 100).is_err());
        }
        catch_up(&log, p.as_mut(), 100).unwrap();
        (eprints_dump(store.as_ref(), &[a, b], &uris), store.last_len.load(std::sync::atomic::Ordering::SeqCst))
    };
    let (clean, writes) = run(None);
    assert!(clean.iter().any(|l| l.contains("Three final")), "{clean:#?}");
    assert!(writes > 10);
    for cut in 0..=writes {
        assert_eq!(run(Some(cut)).0, clean, "cut after {cut} of {writes} writes");
    }
}

/// A deletion keeps an older write of the same record out when that write arrives in a
/// later batch (the tombstone is read back from the store, not from the batch).
#[test]
fn a_deletion_keeps_an_older_write_out_in_a_later_batch() {
    let env = env();
    let a = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
    env.log.append(&[write(a, "3zzz", "3r01", submission("Zebra one", &[("A", a)], 1), false), delete(a, "3zzz", "3r02")]).unwrap();
    project_all(&env);
    env.log.append(&[write(a, "3zzz", "3r01", submission("Zebra one", &[("A", a)], 1), false)]).unwrap();
    project_all(&env);
    assert_eq!(search_all(&env, "zebra", SortOrder::Relevance, 10).1, 0);
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    assert!(reader.get(&format!("at://{a}/pub.svc.eprint.submission/3zzz")).unwrap().is_none());
    // A newer write comes back.
    env.log.append(&[write(a, "3zzz", "3r03", submission("Zebra three", &[("A", a)], 1), false)]).unwrap();
    project_all(&env);
    assert_eq!(search_all(&env, "zebra", SortOrder::Relevance, 10).1, 1);
}

#[test]
fn an_invalid_submission_holds_nothing_back_in_the_model_or_the_index() {
    let env = env();
    let a = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
    env.log
        .append(&[
            write(a, "3bad", "3r01", json!({"title": "No authors"}), false),
            write(a, "3ccc", "3r02", submission("Later Paper", &[("A", a)], 2), false),
            delete(a, "3old", "3r03"),
        ])
        .unwrap();
    project_all(&env);
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    assert!(reader.get(&format!("at://{a}/pub.svc.eprint.submission/3ccc")).unwrap().is_some(), "not held behind the invalid record");
    assert_eq!(search_all(&env, "later", SortOrder::Relevance, 10).1, 1, "in the index too");
    let version = env.ctx.store.active_version("eprints").unwrap().unwrap();
    let letters = || projections::deadletter::list(env.ctx.store.as_ref(), "eprints", version, 10).unwrap();
    assert_eq!(letters().len(), 1);
    assert_eq!(letters()[0].superseded_by, None);

    // A valid revision of the parked record supersedes its letter, in the model and the index.
    env.log.append(&[write(a, "3bad", "3r04", submission("Mended Paper", &[("A", a)], 2), false)]).unwrap();
    project_all(&env);
    assert!(letters().is_empty());
    let superseded = projections::deadletter::list_superseded(env.ctx.store.as_ref(), "eprints", version, 10).unwrap();
    assert!(superseded[0].superseded_by.is_some(), "{superseded:?}");
    assert_eq!(search_all(&env, "mended", SortOrder::Relevance, 10).1, 1);
}

/// A data directory an earlier svc left with an event held back behind a dead letter of
/// its key (a letter with `heldOffset`, the event not applied, the checkpoint past it): the
/// upgrade's releases apply it, in log order, and leave the real dead letter alone.
#[test]
fn events_an_earlier_svc_held_back_are_released_on_upgrade() {
    use store::{Batch, Columns, Value};
    let env = env();
    project_all(&env);
    let a = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
    let bad = env.log.append(&[write(a, "3bad", "3r01", json!({"title": "No authors"}), false)]).unwrap()[0];
    let good = env.log.append(&[write(a, "3ccc", "3r02", submission("Waited Paper", &[("A", a)], 2), false)]).unwrap()[0];
    let version = env.ctx.store.active_version("eprints").unwrap().unwrap();
    // The rows the earlier svc wrote: the head's letter, the held one, the checkpoint past both.
    let letter = |p: event_schema::Position, held: Option<event_schema::Position>| {
        let mut c = Columns::new();
        c.insert("partition".into(), Value::Int(i64::from(p.partition)));
        c.insert("offset".into(), Value::Int(p.offset as i64));
        c.insert("key".into(), Value::Text(a.into()));
        c.insert("kind".into(), Value::Text("record.create".into()));
        c.insert("reason".into(), Value::Text("held back".into()));
        if let Some(h) = held {
            c.insert("heldPartition".into(), Value::Int(i64::from(h.partition)));
            c.insert("heldOffset".into(), Value::Int(h.offset as i64));
        }
        let mut k = p.offset.to_be_bytes().to_vec();
        k.extend_from_slice(&p.partition.to_be_bytes());
        (k, c)
    };
    let mut batch = Batch::default();
    let table = projections::deadletter::table("eprints", version);
    for (k, c) in [letter(bad, None), letter(good, Some(bad))] {
        batch.put(&table, "all", k, c, 1);
    }
    batch.checkpoint(&store::consumer_name("eprints", version), good.partition, good.offset + 1);
    env.ctx.store.apply(batch).unwrap();
    let reader = EprintsReader::new(env.ctx.store.as_ref()).unwrap();
    let uri = format!("at://{a}/pub.svc.eprint.submission/3ccc");
    assert!(reader.get(&uri).unwrap().is_none(), "held");

    let (held, events) = projections::deadletter::held_releases(env.ctx.store.as_ref(), env.log.as_ref(), &catalog::MODELS).unwrap();
    assert_eq!((held, events.len()), (1, 2), "the release, then the event again");
    env.log.append(&events).unwrap();
    project_all(&env);
    assert!(reader.get(&uri).unwrap().is_some(), "applied on upgrade");
    let letters = projections::deadletter::list(env.ctx.store.as_ref(), "eprints", version, 10).unwrap();
    assert_eq!(letters.iter().map(|l| (l.position(), l.held_behind)).collect::<Vec<_>>(), [((bad.partition, bad.offset), None)]);
    assert_eq!(projections::deadletter::held_releases(env.ctx.store.as_ref(), env.log.as_ref(), &catalog::MODELS).unwrap().0, 0);
}

/// A version built with an older row format (here, one marked format 0) is reported as
/// needing a replay; a version built by this svc, or before formats were recorded (no
/// mark: format 1), is not. (On the inbox model, still at format 1.)
#[test]
fn a_version_of_an_older_format_needs_a_replay() {
    let env = env();
    env.log
        .append(&[write(
            "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa",
            "3k001",
            "3r001",
            submission("Formats", &[("A", "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa")], 1),
            false,
        )])
        .unwrap();
    project_all(&env);
    let v = env.ctx.store.active_version("inbox").unwrap().unwrap();
    assert_eq!(catalog::format_of(&env.ctx, "inbox", v).unwrap(), 1);
    assert_eq!(catalog::needs_replay(&env.ctx, "inbox").unwrap(), None);

    let meta = store::TableRef::new("inbox", v, "meta");
    let mut batch = store::Batch::default();
    batch.put(&meta, "format", Vec::new(), [("format".to_owned(), store::Value::Int(0))].into_iter().collect(), 1);
    env.ctx.store.apply(batch).unwrap();
    assert_eq!(catalog::needs_replay(&env.ctx, "inbox").unwrap(), Some((0, 1)));
    assert_eq!(catalog::needs_replay(&env.ctx, "attached").unwrap(), None, "one model at a time");

    // A version without the mark was built before formats were recorded: format 1.
    let mut batch = store::Batch::default();
    batch.delete(&meta, "format", Vec::new(), 2);
    env.ctx.store.apply(batch).unwrap();
    assert_eq!(catalog::format_of(&env.ctx, "inbox", v).unwrap(), 1);

    // A rebuild writes this svc's format.
    let new = catalog::create_version(&env.ctx, "inbox").unwrap();
    assert_eq!(catalog::format_of(&env.ctx, "inbox", new).unwrap(), 1);
}
