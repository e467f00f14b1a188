//! The inbox model against the embedded log and store: deliveries, withdrawals, the read
//! state, co-authors added later, and a replay that gives the same inboxes.

use std::sync::Arc;

use event_schema::{NewEvent, Payload, RecordDelete, RecordWrite, Source, UserAction, UserCommand};
use eventlog::{EmbeddedLog, EventLog};
use projections::attached::collections::Kind;
use projections::catalog::{self, Context, Mode};
use projections::catch_up;
use projections::inbox::read::InboxReader;
use serde_json::{json, Value};
use store::{EmbeddedStore, Store};

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";
const CAROL: &str = "did:plc:carol0000000000000000000";

fn src() -> Source {
    Source::Manual { note: "inbox test".into() }
}

fn write(did: &str, collection: &str, rkey: &str, rev: &str, record: Value) -> NewEvent {
    let w =
        RecordWrite { did: did.into(), collection: collection.into(), rkey: rkey.into(), cid: "bafyrei".into(), rev: rev.into(), record };
    NewEvent::repo(src(), Payload::RecordCreate(w))
}

fn delete(did: &str, collection: &str, rkey: &str, rev: &str) -> NewEvent {
    NewEvent::repo(
        src(),
        Payload::RecordDelete(RecordDelete { did: did.into(), collection: collection.into(), rkey: rkey.into(), rev: rev.into() }),
    )
}

fn paper(authors: &[&str]) -> Value {
    let authors: Vec<Value> = authors.iter().enumerate().map(|(i, d)| json!({"name": format!("A{i}"), "did": d, "order": i + 1})).collect();
    json!({"title": "Sparse", "abstract": "About sparse.", "authors": authors, "fields": ["cs.LG"], "createdAt": "2025-01-01T00:00:00Z"})
}

fn review(did: &str, rkey: &str, rev: &str) -> NewEvent {
    let eprint = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    write(
        did,
        "pub.svc.review.comment",
        rkey,
        rev,
        json!({"eprintUri": eprint, "body": [{"type": "text", "content": rkey}], "createdAt": "2025-01-02T00:00:00Z"}),
    )
}

fn seen(did: &str, at: &str) -> NewEvent {
    let action = UserAction::NotificationsSeen { seen_at: at.into() };
    NewEvent { key: did.into(), source: src(), payload: Payload::User(UserCommand { caller: did.into(), action }) }
}

#[test]
fn inboxes_follow_records_authors_and_the_read_state_and_a_replay_gives_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
    let ctx = Context::single(store.clone(), &dir.path().join("search"));
    // The eprints model first, as a projector applies a batch: the first item written on
    // an eprint reads who it notifies from there.
    let open = |model: &str| catalog::open(&ctx, model, catalog::ensure_active(&ctx, model).unwrap(), Mode::Live).unwrap();
    let (mut eprints, mut p) = (open("eprints"), open("inbox"));
    let mut step = |events: Vec<NewEvent>| {
        log.append(&events).unwrap();
        catch_up(log.as_ref(), eprints.as_mut(), 2).unwrap();
        catch_up(log.as_ref(), p.as_mut(), 2).unwrap();
    };
    let state = |who: &str| {
        let r = InboxReader::new(store.as_ref()).unwrap();
        let page = r.page(who, Kind::Review, false, 10, None).unwrap();
        let listed: Vec<(String, bool)> =
            page.notifications.iter().map(|n| (n.uri.rsplit('/').next().unwrap().to_owned(), n.is_read)).collect();
        (r.seen(who).unwrap().reviews, listed)
    };

    // A review before its eprint is indexed is delivered when the eprint comes.
    step(vec![review(BOB, "r1", "3l0000000000a"), write(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000b", paper(&[ALICE]))]);
    assert_eq!(state(ALICE), (1, vec![("r1".into(), false)]));
    step(vec![seen(ALICE, "2999-01-01T00:00:00Z")]);
    assert_eq!(state(ALICE), (0, vec![("r1".into(), true)]));
    step(vec![review(BOB, "r2", "3l0000000000c"), review(ALICE, "r3", "3l0000000000c")]);
    assert_eq!(state(ALICE).1.len(), 2, "her own review is no news");
    step(vec![delete(BOB, "pub.svc.review.comment", "r1", "3l0000000000d")]);
    assert_eq!(state(ALICE).1.len(), 1);
    // Carol joins the authors: she gets what was written on it, unread.
    step(vec![write(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000e", paper(&[ALICE, CAROL]))]);
    assert_eq!(state(CAROL), (2, vec![("r2".into(), false), ("r3".into(), false)]), "Alice's review is news to Carol");
    // And leaves them again.
    step(vec![write(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000f", paper(&[ALICE]))]);
    assert_eq!(state(CAROL), (0, vec![]));

    // An eprint nothing was written on costs the inbox no row; the first review on it
    // reads who it notifies from the eprints model.
    step(vec![write(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000g", paper(&[ALICE, CAROL]))]);
    let rows = store::TableRef::new("inbox", store.active_version("inbox").unwrap().unwrap(), "eprints");
    let p2 = format!("at://{ALICE}/pub.svc.eprint.submission/p2");
    assert!(store.get(&rows, &p2, &[]).unwrap().is_none());
    let mut on_p2 = review(BOB, "r4", "3l0000000000h");
    if let Payload::RecordCreate(w) = &mut on_p2.payload {
        w.record["eprintUri"] = json!(p2);
    }
    step(vec![on_p2]);
    assert!(store.get(&rows, &p2, &[]).unwrap().is_some());
    assert_eq!(state(CAROL), (1, vec![("r4".into(), false)]));

    let before = (state(ALICE), state(CAROL));
    // The inbox rebuilt alone: the eprints model holds each eprint's last revision when
    // the first item on it comes, and the revisions before are stale.
    let v2 = store.create_version("inbox").unwrap();
    let mut rebuilt = catalog::open(&ctx, "inbox", v2, Mode::Rebuild).unwrap();
    catch_up(log.as_ref(), rebuilt.as_mut(), 3).unwrap();
    rebuilt.flush().unwrap();
    store.set_active_version("inbox", v2).unwrap();
    assert_eq!((state(ALICE), state(CAROL)), before, "the replay gives the same inboxes");
}
