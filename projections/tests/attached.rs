//! The attached model, collection by collection, against the embedded log and store: a
//! create is listed where its collection lists it, an update replaces it, an older revision
//! is skipped, a delete unlists it, and a record its lexicon refuses is a dead letter while
//! the next one of another repository is applied. Then a replay into a new version gives the
//! same rows. Nothing waits behind a dead letter; the next change of its record supersedes it.

use std::sync::Arc;

use event_schema::{AdminAction, AdminCommand, NewEvent, Payload, RecordDelete, RecordWrite, Source};
use eventlog::{EmbeddedLog, EventLog};
use projections::attached::collections::{self, Kind, Listing};
use projections::attached::read::AttachedReader;
use projections::catalog::{self, Context, Mode};
use projections::{catch_up, deadletter};
use serde_json::{json, Value};
use store::{EmbeddedStore, Store};

const DID: &str = "did:plc:writer000000000000000000";
const EPRINT: &str = "at://did:plc:author000000000000000000/pub.svc.eprint.submission/3l0000000000a";
const NODE_A: &str = "at://did:plc:governance0000000000000/pub.svc.graph.node/a";
const NODE_B: &str = "at://did:plc:governance0000000000000/pub.svc.graph.node/b";

fn event(collection: &str, rkey: &str, rev: &str, record: Option<Value>) -> NewEvent {
    event_by(DID, collection, rkey, rev, record)
}

fn event_by(did: &str, collection: &str, rkey: &str, rev: &str, record: Option<Value>) -> NewEvent {
    let source = Source::Manual { note: "attached test".into() };
    match record {
        Some(record) => NewEvent::repo(
            source,
            Payload::RecordCreate(RecordWrite {
                did: did.into(),
                collection: collection.into(),
                rkey: rkey.into(),
                cid: format!("bafyrei{rev}"),
                rev: rev.into(),
                record,
            }),
        ),
        None => NewEvent::repo(
            source,
            Payload::RecordDelete(RecordDelete { did: did.into(), collection: collection.into(), rkey: rkey.into(), rev: rev.into() }),
        ),
    }
}

/// One case: a collection, a valid record and a variant of it, an invalid record, the listing
/// it shows in, and the view field that tells the variant apart.
struct Case {
    collection: &'static str,
    valid: Value,
    changed: Value,
    invalid: Value,
    listing: Listing,
    field: &'static str,
}

fn at(s: &str) -> String {
    format!("2025-03-0{s}T00:00:00Z")
}

fn cases() -> Vec<Case> {
    let body = |t: &str| json!([{"type": "text", "content": t}]);
    let quote = json!({"type": "TextQuoteSelector", "exact": "the bound"});
    vec![
        Case {
            collection: "pub.svc.review.comment",
            valid: json!({"eprintUri": EPRINT, "body": body("first"), "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "body": body("second"), "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::Review, EPRINT),
            field: "content",
        },
        Case {
            collection: "pub.svc.annotation.comment",
            valid: json!({"eprintUri": EPRINT, "body": body("first"), "target": {"selector": quote}, "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "body": body("second"), "target": {"selector": quote}, "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "body": body("no target"), "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::Annotation, EPRINT),
            field: "content",
        },
        Case {
            collection: "pub.svc.annotation.entityLink",
            valid: json!({"eprintUri": EPRINT, "target": {"source": EPRINT, "selector": quote}, "linkedEntity": {"type": "author", "did": DID, "displayName": "A"}, "confidence": 100, "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "target": {"source": EPRINT, "selector": quote}, "linkedEntity": {"type": "author", "did": DID, "displayName": "A"}, "confidence": 900, "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "target": {"source": EPRINT, "selector": quote}, "linkedEntity": {"type": "author", "did": DID, "displayName": "A"}, "confidence": 5000, "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::EntityLink, EPRINT),
            field: "confidence",
        },
        Case {
            collection: "pub.svc.review.entityLink",
            valid: json!({"eprintUri": EPRINT, "target": {"source": EPRINT, "selector": quote}, "linkedEntity": {"type": "eprint", "uri": EPRINT, "title": "T"}, "confidence": 100, "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "target": {"source": EPRINT, "selector": quote}, "linkedEntity": {"type": "eprint", "uri": EPRINT, "title": "T"}, "confidence": 200, "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "target": {"source": EPRINT, "selector": quote}, "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::EntityLink, EPRINT),
            field: "confidence",
        },
        Case {
            collection: "pub.svc.review.endorsement",
            valid: json!({"eprintUri": EPRINT, "contributions": ["data"], "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "contributions": ["empirical"], "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "contributions": [], "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::Endorsement, EPRINT),
            field: "contributions",
        },
        Case {
            collection: "pub.svc.eprint.userTag",
            valid: json!({"eprintUri": EPRINT, "tag": "graphs", "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "tag": "trees", "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "tag": "x".repeat(101), "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::Tag, EPRINT),
            field: "tag",
        },
        Case {
            collection: "pub.svc.eprint.citation",
            valid: json!({"eprintUri": EPRINT, "citedWork": {"title": "A"}, "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "citedWork": {"title": "B"}, "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "citedWork": {"doi": "10.1/x"}, "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::Citation, EPRINT),
            field: "citedWork",
        },
        Case {
            collection: "pub.svc.eprint.relatedWork",
            valid: json!({"eprintUri": EPRINT, "relatedUri": EPRINT, "relationType": "related", "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "relatedUri": EPRINT, "relationType": "extends", "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "relationType": "related", "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::RelatedWork, EPRINT),
            field: "relationType",
        },
        Case {
            collection: "pub.svc.eprint.version",
            valid: json!({"eprintUri": EPRINT, "versionNumber": 2, "changes": "a", "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "versionNumber": 3, "changes": "b", "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "versionNumber": 0, "changes": "a", "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::Version, EPRINT),
            field: "versionNumber",
        },
        Case {
            collection: "pub.svc.eprint.changelog",
            valid: json!({"eprintUri": EPRINT, "version": {"major": 1, "minor": 0, "patch": 1}, "sections": [], "createdAt": at("1")}),
            changed: json!({"eprintUri": EPRINT, "version": {"major": 1, "minor": 0, "patch": 2}, "sections": [], "createdAt": at("1")}),
            invalid: json!({"eprintUri": EPRINT, "sections": [], "createdAt": at("1")}),
            listing: Listing::on_eprint(Kind::Changelog, EPRINT),
            field: "version",
        },
        Case {
            collection: "pub.svc.graph.node",
            valid: json!({"id": "n1", "kind": "type", "subkind": "field", "label": "Graph Theory", "status": "established", "createdAt": at("1")}),
            changed: json!({"id": "n1", "kind": "type", "subkind": "field", "label": "Graph Theory", "status": "deprecated", "createdAt": at("1")}),
            invalid: json!({"kind": "type", "label": "No id", "status": "established", "createdAt": at("1")}),
            listing: Listing::filtered(&Listing::by_author(Kind::GraphNode, DID), &collections::graph::prefix_filter("gra")),
            field: "status",
        },
        Case {
            collection: "pub.svc.graph.edge",
            valid: json!({"id": "e1", "sourceUri": NODE_A, "targetUri": NODE_B, "relationSlug": "broader", "status": "established", "createdAt": at("1")}),
            changed: json!({"id": "e1", "sourceUri": NODE_A, "targetUri": NODE_B, "relationSlug": "broader", "status": "deprecated", "createdAt": at("1")}),
            invalid: json!({"id": "e1", "sourceUri": NODE_A, "targetUri": NODE_A, "relationSlug": "broader", "status": "established", "createdAt": at("1")}),
            listing: collections::graph::edges_to(NODE_B, Some("broader")),
            field: "status",
        },
        Case {
            collection: "pub.svc.graph.nodeProposal",
            valid: json!({"proposalType": "create", "kind": "type", "proposedNode": {"label": "Graphs"}, "rationale": "a", "createdAt": at("1")}),
            changed: json!({"proposalType": "create", "kind": "type", "proposedNode": {"label": "Graphs"}, "rationale": "b", "createdAt": at("1")}),
            invalid: json!({"proposalType": "deprecate", "kind": "type", "rationale": "no target", "createdAt": at("1")}),
            listing: collections::governance::proposals_of_type("create"),
            field: "rationale",
        },
        Case {
            collection: "pub.svc.graph.edgeProposal",
            valid: json!({"proposalType": "deprecate", "targetEdgeUri": NODE_B, "rationale": "a", "createdAt": at("1")}),
            changed: json!({"proposalType": "deprecate", "targetEdgeUri": NODE_B, "rationale": "b", "createdAt": at("1")}),
            invalid: json!({"proposalType": "create", "rationale": "no edge", "createdAt": at("1")}),
            listing: collections::governance::proposals_of_type("deprecate"),
            field: "rationale",
        },
        Case {
            collection: "pub.svc.graph.vote",
            valid: json!({"proposalUri": NODE_A, "vote": "approve", "createdAt": at("1")}),
            changed: json!({"proposalUri": NODE_A, "vote": "reject", "createdAt": at("1")}),
            invalid: json!({"proposalUri": NODE_A, "vote": "maybe", "createdAt": at("1")}),
            listing: collections::governance::votes_on(NODE_A),
            field: "vote",
        },
        Case {
            collection: "pub.svc.graph.reconciliation",
            valid: json!({"sourceUri": NODE_A, "targetSystem": "wikidata", "targetId": "Q1", "confidence": 900, "status": "proposed", "createdAt": at("1")}),
            changed: json!({"sourceUri": NODE_A, "targetSystem": "wikidata", "targetId": "Q1", "confidence": 900, "status": "verified", "createdAt": at("1")}),
            invalid: json!({"targetSystem": "wikidata", "targetId": "Q1", "confidence": 900, "status": "proposed", "createdAt": at("1")}),
            listing: Listing::pointing_at(Kind::Reconciliation, NODE_A),
            field: "status",
        },
    ]
}

/// The attached model's live projection over an embedded log and store of its own.
struct Model {
    _dir: tempfile::TempDir,
    log: Arc<EmbeddedLog>,
    store: Arc<dyn Store>,
    ctx: Context,
    version: u32,
    projection: Box<dyn projections::Projection>,
}

impl Model {
    fn open() -> Model {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
        let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
        let ctx = Context::single(store.clone(), &dir.path().join("search"));
        let version = catalog::ensure_active(&ctx, "attached").unwrap();
        let projection = catalog::open(&ctx, "attached", version, Mode::Live).unwrap();
        Model { _dir: dir, log, store, ctx, version, projection }
    }

    /// Appends `events` and applies everything appended.
    fn step(&mut self, events: Vec<NewEvent>) {
        self.log.append(&events).unwrap();
        catch_up(self.log.as_ref(), self.projection.as_mut(), 100).unwrap();
    }

    /// Replays the log into a new version, `batch` events at a time: the version.
    fn rebuild(&self, batch: usize) -> u32 {
        let version = self.store.create_version("attached").unwrap();
        let mut rebuilt = catalog::open(&self.ctx, "attached", version, Mode::Rebuild).unwrap();
        catch_up(self.log.as_ref(), rebuilt.as_mut(), batch).unwrap();
        version
    }
}

#[test]
fn every_collection_creates_updates_skips_stale_revisions_deletes_and_parks_invalid_records() {
    let mut m = Model::open();
    let (store, version) = (m.store.clone(), m.version);
    let mut step = |events: Vec<NewEvent>| m.step(events);
    let view = |listing: &Listing| {
        let reader = AttachedReader::new(store.as_ref()).unwrap();
        let page = reader.page(listing, 10, None).unwrap();
        (page.total, page.items.first().map(|i| i.view.clone()))
    };
    for (i, case) in cases().into_iter().enumerate() {
        let (rkey, bad) = (format!("r{i}"), format!("bad{i}"));
        let c = case.collection;
        let before = view(&case.listing).0;
        step(vec![event(c, &rkey, "3l0000000000b", Some(case.valid.clone()))]);
        let (total, first) = view(&case.listing);
        assert_eq!(total, before + 1, "{c}: created");
        let held = first.unwrap()[case.field].clone();
        // An update replaces the view; an older revision replayed later is skipped.
        step(vec![
            event(c, &rkey, "3l0000000000d", Some(case.changed.clone())),
            event(c, &rkey, "3l0000000000c", Some(case.valid.clone())),
        ]);
        let (total, first) = view(&case.listing);
        assert_eq!(total, before + 1, "{c}: updated in place");
        assert_ne!(first.unwrap()[case.field], held, "{c}: the update shows, the stale write does not");
        // An invalid record is a dead letter; the record after it, of another repository, is
        // applied.
        let dead_before = deadletter::count(store.as_ref(), "attached", version).unwrap();
        step(vec![
            event_by(&format!("did:plc:careless{i:016}"), c, &bad, "3l0000000000e", Some(case.invalid.clone())),
            event(c, &format!("{rkey}x"), "3l0000000000f", Some(case.valid.clone())),
        ]);
        assert_eq!(deadletter::count(store.as_ref(), "attached", version).unwrap(), dead_before + 1, "{c}: invalid record parked");
        assert_eq!(view(&case.listing).0, before + 2, "{c}: the next record applied");
        // A delete older than the record is skipped; a newer one unlists it.
        step(vec![event(c, &rkey, "3l0000000000a", None)]);
        assert_eq!(view(&case.listing).0, before + 2, "{c}: a stale delete is skipped");
        step(vec![event(c, &rkey, "3l0000000000z", None), event(c, &format!("{rkey}x"), "3l0000000000z", None)]);
        if collections::find(c).unwrap().keeps_place() {
            let (total, first) = view(&case.listing);
            assert_eq!((total, first.unwrap()["content"].clone()), (before + 2, json!("")), "{c}: deleted, its place kept");
        } else {
            assert_eq!(view(&case.listing).0, before, "{c}: deleted");
        }
    }

    // A replay into a new version holds the same listing sizes and dead letters.
    let v2 = m.rebuild(7);
    assert_eq!(deadletter::count(store.as_ref(), "attached", v2).unwrap(), deadletter::count(store.as_ref(), "attached", version).unwrap());
}

/// The release of dead letter `at` of the attached model, as the admin API appends it.
fn release(did: &str, (partition, offset): (u32, u64), retried: bool) -> NewEvent {
    let action = AdminAction::DeadLetterReleased { model: "attached".into(), partition, offset, retried };
    NewEvent {
        key: did.into(),
        source: Source::Manual { note: "attached test".into() },
        payload: Payload::Admin(AdminCommand { actor: "did:plc:admin".into(), action }),
    }
}

#[test]
fn nothing_waits_behind_a_dead_letter_and_a_later_change_of_its_record_supersedes_it() {
    let mut m = Model::open();
    let (store, version) = (m.store.clone(), m.version);
    let mut step = |events: Vec<NewEvent>| m.step(events);
    let tags = Listing::on_eprint(Kind::Tag, EPRINT);
    let listed = || AttachedReader::new(store.as_ref()).unwrap().page(&tags, 10, None).unwrap().total;
    let letters = || {
        let mut all = deadletter::list(store.as_ref(), "attached", version, 100).unwrap();
        all.extend(deadletter::list_superseded(store.as_ref(), "attached", version, 100).unwrap());
        all.sort_by_key(|l| l.offset);
        all
    };
    let (tag, other) = ("pub.svc.eprint.userTag", "did:plc:other0000000000000000000");
    let good = |t: &str| json!({"eprintUri": EPRINT, "tag": t, "createdAt": at("1")});
    let bad = || Some(json!({"eprintUri": EPRINT, "tag": "", "createdAt": at("1")}));

    // An invalid tag parks; the writer's next tag and its deletion of another apply at once.
    step(vec![
        event(tag, "t0", "3l0000000000a", Some(good("old"))),
        event(tag, "bad", "3l0000000000b", bad()),
        event(tag, "t1", "3l0000000000c", Some(good("graphs"))),
        event(tag, "t0", "3l0000000000d", None),
        event_by(other, tag, "t2", "3l0000000000b", Some(good("trees"))),
    ]);
    assert_eq!(listed(), 2, "the writer's later tag shows and her deleted one is gone");
    let parked = letters();
    assert_eq!(parked.len(), 1, "{parked:?}");
    assert_eq!((parked[0].superseded_by, parked[0].held_behind), (None, None));

    // An older revision of the parked record does not supersede it; a later valid one does.
    step(vec![event(tag, "bad", "3l0000000000a", Some(good("older")))]);
    assert_eq!(letters()[0].superseded_by, None);
    step(vec![event(tag, "bad", "3l0000000000e", Some(good("fixed")))]);
    let superseded = letters();
    assert_eq!(superseded.len(), 1, "kept, marked");
    assert!(superseded[0].superseded_by.is_some_and(|(_, o)| o > superseded[0].offset), "{superseded:?}");
    assert_eq!(deadletter::count(store.as_ref(), "attached", version).unwrap(), 0, "no longer counted");
    assert_eq!(listed(), 3, "the fixed tag shows");

    // A delete supersedes a parked letter too.
    step(vec![event(tag, "bad2", "3l0000000000f", bad()), event(tag, "bad2", "3l0000000000g", None)]);
    assert!(letters().iter().all(|l| l.superseded_by.is_some()), "{:?}", letters());

    // Retried, a letter that parks again is a new letter; dismissed, it is gone.
    step(vec![event(tag, "bad3", "3l0000000000h", bad())]);
    let open = letters().into_iter().find(|l| l.superseded_by.is_none()).unwrap();
    step(vec![release(DID, open.position(), true), event(tag, "bad3", "3l0000000000h", bad())]);
    let again = letters().into_iter().find(|l| l.superseded_by.is_none()).unwrap();
    assert!(again.offset > open.offset && letters().len() == 3, "{:?}", letters());
    step(vec![release(DID, again.position(), false)]);
    assert_eq!(letters().len(), 2);
    step(vec![event(tag, "bad3", "3l0000000000i", Some(good("late")))]);
    assert_eq!(listed(), 4, "a released record's next revision applies");

    // A replay gives the same letters and the same listing.
    let v2 = m.rebuild(3);
    let mut replayed = deadletter::list(store.as_ref(), "attached", v2, 100).unwrap();
    replayed.extend(deadletter::list_superseded(store.as_ref(), "attached", v2, 100).unwrap());
    replayed.sort_by_key(|l| l.offset);
    assert_eq!(
        replayed.iter().map(|l| (l.position(), l.superseded_by)).collect::<Vec<_>>(),
        letters().iter().map(|l| (l.position(), l.superseded_by)).collect::<Vec<_>>()
    );
}

#[test]
fn a_deleted_or_taken_down_reply_keeps_its_place_in_the_thread_without_its_text() {
    let mut m = Model::open();
    let store = m.store.clone();
    let review = "pub.svc.review.comment";
    let uri = |rkey: &str| format!("at://{DID}/{review}/{rkey}");
    let body = |text: &str, parent: Option<String>| {
        let mut r = json!({"eprintUri": EPRINT, "body": [{"type": "text", "content": text}], "createdAt": at("1")});
        if let Some(p) = parent {
            r["parentComment"] = json!(p);
        }
        Some(r)
    };
    m.step(vec![
        event(review, "root", "3l0000000000a", body("The root.", None)),
        event(review, "mid", "3l0000000000b", body("Secret middle words.", Some(uri("root")))),
        event(review, "leaf", "3l0000000000c", body("The leaf.", Some(uri("mid")))),
    ]);
    // The author deletes the middle reply; an admin takes the root down.
    m.step(vec![event(review, "mid", "3l0000000000d", None)]);
    let take_down = AdminAction::ContentDeleted { uri: uri("root"), collection: review.into(), reason: Some("abuse".into()) };
    m.step(vec![NewEvent {
        key: DID.into(),
        source: Source::Manual { note: "attached test".into() },
        payload: Payload::Admin(AdminCommand { actor: "did:plc:admin".into(), action: take_down }),
    }]);
    let check = |version: u32| {
        let reader = AttachedReader::new(store.as_ref()).unwrap();
        let on_eprint = reader.page(&Listing::on_eprint(Kind::Review, EPRINT), 10, None).unwrap();
        assert_eq!(on_eprint.total, 3, "every place kept");
        let placeholders: Vec<&str> = on_eprint.items.iter().filter(|i| i.deleted).map(|i| i.uri.rsplit('/').next().unwrap()).collect();
        assert_eq!(placeholders.len(), 2, "{placeholders:?}");
        let mid = reader.all(&Listing::replies(Kind::Review, &uri("root")), 10).unwrap();
        assert_eq!((mid.len(), mid[0].deleted), (1, true), "the deleted reply under its parent");
        assert_eq!(mid[0].view["parentReviewUri"], json!(uri("root")));
        assert_eq!((mid[0].view["content"].clone(), mid[0].did.as_str()), (json!(""), DID));
        let leaf = reader.all(&Listing::replies(Kind::Review, &uri("mid")), 10).unwrap();
        assert_eq!((leaf.len(), leaf[0].deleted), (1, false), "and the reply under it");
        assert!(reader.get(&uri("root")).unwrap().unwrap().deleted);
        // The text is gone from every row of the version.
        let table = store::TableRef::new("attached", version, "records");
        for rkey in ["root", "mid"] {
            let row = store.get(&table, &uri(rkey), &[]).unwrap().unwrap();
            let text = format!("{row:?}");
            assert!(!text.contains("Secret") && !text.contains("The root"), "{rkey}: {text}");
        }
    };
    check(m.version);
    // A later write of a taken-down record stays out; the replay gives the same placeholders.
    m.step(vec![event(review, "root", "3l0000000000z", body("Back again.", None))]);
    assert!(AttachedReader::new(store.as_ref()).unwrap().get(&uri("root")).unwrap().unwrap().deleted);
    let v2 = m.rebuild(2);
    store.set_active_version("attached", v2).unwrap();
    check(v2);
}
