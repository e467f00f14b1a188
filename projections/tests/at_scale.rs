//! The attached model's counts at ten times the old per-request cap: 150,000 tag records
//! over 75,000 eprints and 30,000 endorsements, some deleted, some rewritten, one account
//! deleted; every tag's statistics and every endorsed eprint's summary counts checked
//! against a count made by brute force over the events appended.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use event_schema::{AccountChange, AccountStatus, NewEvent, Payload, RecordDelete, RecordWrite, Source};
use eventlog::{EmbeddedLog, EventLog};
use projections::attached::collections::endorsement::{self, CONTRIBUTIONS};
use projections::attached::collections::tag::stats;
use projections::attached::collections::{normalize_tag, Kind, Listing};
use projections::attached::read::AttachedReader;
use projections::catalog::{self, Context, Mode};
use projections::catch_up;
use serde_json::json;
use store::{EmbeddedStore, Store};

const PAPERS: u64 = 75_000;
const TAGS: u64 = 150_000;
const ENDORSEMENTS: u64 = 30_000;

/// A small deterministic generator (xorshift), so that every run checks the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

fn write(did: &str, collection: &str, rkey: &str, rev: &str, record: serde_json::Value) -> NewEvent {
    let w =
        RecordWrite { did: did.into(), collection: collection.into(), rkey: rkey.into(), cid: "bafyrei".into(), rev: rev.into(), record };
    NewEvent::repo(Source::Manual { note: "at scale".into() }, Payload::RecordCreate(w))
}

fn eprint(i: u64) -> String {
    format!("at://did:plc:author{:019}/pub.svc.eprint.submission/p{i}", i % 997)
}

fn tagger(i: u64) -> String {
    format!("did:plc:tagger{i:018}")
}

/// One tag by brute force: uses, eprints, taggers, uses per written form.
type TagTruth<'a> = (u64, BTreeSet<&'a str>, BTreeSet<&'a str>, BTreeMap<&'a str, u64>);

/// One eprint's endorsements by brute force: how many, by whom, per contribution type.
type PaperTruth<'a> = (u64, BTreeSet<&'a str>, BTreeMap<&'a str, u64>);

/// What the events say, counted by brute force.
#[derive(Default)]
struct Truth {
    /// Live tag records: URI → (normalized tag, form, eprint, tagger).
    tags: BTreeMap<String, (String, String, String, String)>,
    /// Live endorsements: URI → (eprint, endorser, contributions).
    endorsements: BTreeMap<String, (String, String, Vec<&'static str>)>,
}

#[test]
fn every_tag_and_endorsement_count_matches_a_brute_force_count_at_ten_times_the_old_cap() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(EmbeddedLog::open(&dir.path().join("log"), 4).unwrap());
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.path().join("store")).unwrap());
    let ctx = Context::single(store.clone(), &dir.path().join("search"));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut truth = Truth::default();
    let forms = ["Machine Learning", "#machine_learning", "graphs", "Graph Theory", "retrieval", "NLP", "nlp", "optimization"];
    let mut events = Vec::new();
    for i in 0..TAGS {
        // A long tail of tags, and a few very common ones far past the old cap.
        let form = if i % 3 == 0 { forms[rng.next(forms.len() as u64) as usize].to_owned() } else { format!("topic {}", rng.next(400)) };
        let (paper, who) = (eprint(rng.next(PAPERS)), tagger(rng.next(5_000)));
        let rkey = format!("t{i}");
        let record = json!({"eprintUri": paper, "tag": form, "createdAt": "2025-03-01T00:00:00Z"});
        events.push(write(&who, "pub.svc.eprint.userTag", &rkey, "3l0000000000a", record));
        truth.tags.insert(format!("at://{who}/pub.svc.eprint.userTag/{rkey}"), (normalize_tag(&form), form, paper, who));
    }
    for i in 0..ENDORSEMENTS {
        let (paper, who) = (eprint(rng.next(2_000)), tagger(rng.next(5_000)));
        let mut kinds: Vec<&'static str> = (0..1 + rng.next(3)).map(|_| CONTRIBUTIONS[rng.next(15) as usize]).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let rkey = format!("e{i}");
        let record = json!({"eprintUri": paper, "contributions": kinds, "createdAt": "2025-03-01T00:00:00Z"});
        events.push(write(&who, "pub.svc.review.endorsement", &rkey, "3l0000000000a", record));
        truth.endorsements.insert(format!("at://{who}/pub.svc.review.endorsement/{rkey}"), (paper, who, kinds));
    }
    // Deletes of one record in twenty; one account deleted with everything it wrote.
    let mut deletes = Vec::new();
    for uri in truth.tags.keys().chain(truth.endorsements.keys()).step_by(20) {
        let parsed = lexicons::formats::parse_at_uri(uri).unwrap();
        let d = RecordDelete {
            did: parsed.authority.into(),
            collection: parsed.collection.unwrap().into(),
            rkey: parsed.rkey.unwrap().into(),
            rev: "3l0000000000b".into(),
        };
        deletes.push((uri.clone(), NewEvent::repo(Source::Manual { note: "at scale".into() }, Payload::RecordDelete(d))));
    }
    for (uri, event) in deletes {
        truth.tags.remove(&uri);
        truth.endorsements.remove(&uri);
        events.push(event);
    }
    let gone = tagger(7);
    let account = AccountChange { did: gone.clone(), active: false, status: Some(AccountStatus::Deleted) };
    events.push(NewEvent::repo(Source::Manual { note: "at scale".into() }, Payload::Account(account)));
    truth.tags.retain(|_, t| t.3 != gone);
    truth.endorsements.retain(|_, e| e.1 != gone);
    for chunk in events.chunks(10_000) {
        log.append(chunk).unwrap();
    }
    let version = catalog::ensure_active(&ctx, "attached").unwrap();
    let mut model = catalog::open(&ctx, "attached", version, Mode::Rebuild).unwrap();
    catch_up(log.as_ref(), model.as_mut(), 2_000).unwrap();
    model.flush().unwrap();
    let r = AttachedReader::new(store.as_ref()).unwrap();

    // Every tag: uses, distinct eprints, taggers and forms with their uses.
    let mut by_tag: BTreeMap<&str, TagTruth> = BTreeMap::new();
    for (tag, form, paper, who) in truth.tags.values() {
        let t = by_tag.entry(tag).or_default();
        t.0 += 1;
        t.1.insert(paper);
        t.2.insert(who);
        *t.3.entry(form).or_default() += 1;
    }
    assert!(by_tag.values().any(|t| t.0 > 10_000), "a tag past the old cap of 10,000 records");
    for (tag, (uses, papers, taggers, forms)) in &by_tag {
        assert_eq!(r.count(&Listing::tagged(tag)).unwrap(), *uses, "{tag}: uses");
        assert_eq!(r.count(&stats::eprints(tag)).unwrap(), papers.len() as u64, "{tag}: eprints");
        assert_eq!(r.count(&stats::taggers(tag)).unwrap(), taggers.len() as u64, "{tag}: taggers");
        let kept: BTreeMap<String, u64> =
            r.keys(&stats::forms(tag), 100).unwrap().into_iter().map(|f| (f.clone(), r.count(&stats::in_form(tag, &f)).unwrap())).collect();
        let expected: BTreeMap<String, u64> = forms.iter().map(|(f, n)| ((*f).to_owned(), *n)).collect();
        assert_eq!(kept, expected, "{tag}: forms");
    }
    // Every two tags: how many eprints carry both, each tag's co-occurring tags ranked by it.
    let mut on_paper: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (tag, _, paper, _) in truth.tags.values() {
        on_paper.entry(paper).or_default().insert(tag);
    }
    let mut shared: BTreeMap<&str, BTreeMap<&str, u64>> = BTreeMap::new();
    for tags in on_paper.values() {
        for a in tags {
            for b in tags.iter().filter(|b| *b != a) {
                *shared.entry(a).or_default().entry(b).or_default() += 1;
            }
        }
    }
    assert!(shared.values().any(|with| with.values().any(|n| *n > 100)), "pairs sharing many eprints");
    for tag in by_tag.keys() {
        let mut expected: Vec<(String, u64)> = shared.get(tag).into_iter().flatten().map(|(b, n)| ((*b).to_owned(), *n)).collect();
        expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        assert_eq!(r.ranked(&stats::cooccurring(tag), usize::MAX).unwrap(), expected, "{tag}: co-occurring tags");
    }
    assert_eq!(
        r.keys(&stats::on_eprint_distinct(&eprint(3)), 100).unwrap(),
        on_paper.get(eprint(3).as_str()).into_iter().flatten().map(|t| (*t).to_owned()).collect::<Vec<_>>()
    );

    // The word index finds every tag in use, and no other.
    let indexed: BTreeSet<String> =
        r.keys_from(&stats::word_index(), "", usize::MAX).unwrap().iter().map(|k| stats::tag_of(k).to_owned()).collect();
    assert_eq!(indexed, by_tag.keys().map(|t| (*t).to_owned()).collect::<BTreeSet<_>>());

    // Every endorsed eprint: the total, the distinct endorsers, each contribution type.
    let mut by_paper: BTreeMap<&str, PaperTruth> = BTreeMap::new();
    for (paper, who, kinds) in truth.endorsements.values() {
        let p = by_paper.entry(paper).or_default();
        p.0 += 1;
        p.1.insert(who);
        for k in kinds {
            *p.2.entry(k).or_default() += 1;
        }
    }
    for (paper, (total, endorsers, kinds)) in &by_paper {
        let on_eprint = Listing::on_eprint(Kind::Endorsement, paper);
        assert_eq!(r.count(&on_eprint).unwrap(), *total, "{paper}: endorsements");
        assert_eq!(r.count(&endorsement::endorsers(paper)).unwrap(), endorsers.len() as u64, "{paper}: endorsers");
        for kind in CONTRIBUTIONS {
            let n = r.count(&Listing::filtered(&on_eprint, &endorsement::contribution(kind))).unwrap();
            assert_eq!(n, kinds.get(kind).copied().unwrap_or(0), "{paper}: {kind}");
        }
    }
}
