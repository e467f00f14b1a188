//! The search projection against the embedded log and store: pasted titles, ranking by
//! title words, cursor paging past 10,000 results in every order, and the tags facet.

use crate::support;

use event_schema::{AccountChange, AccountStatus, NewEvent, Payload, RecordDelete, RecordWrite};
use eventlog::EventLog;
use projections::catalog::{self, Mode};
use projections::catch_up;
use projections::search::{SearchRequest, SortOrder};
use serde_json::json;
use support::*;

#[test]
fn a_pasted_title_with_a_colon_finds_its_paper() {
    let env = env();
    let did = "did:plc:cccccccccccccccccccccccc";
    let titles = ["SADL: What to Ignore? A Benchmark", "What to read next", "Reading what matters to people", "Colons: title:less"];
    let events: Vec<NewEvent> =
        titles.iter().enumerate().map(|(i, t)| write(did, &format!("3c{i}"), "3r000", submission(t, &[("C", did)], 1), false)).collect();
    env.log.append(&events).unwrap();
    project_all(&env);
    for (query, expected) in [("SADL: What to", vec![titles[0]]), ("title:next", vec![titles[1]]), ("Colons: title:less", vec![titles[3]])]
    {
        let (hits, total) = search_all(&env, query, SortOrder::Relevance, 10);
        let found: Vec<&str> = hits.iter().map(|h| h["title"].as_str().unwrap()).collect();
        assert_eq!((found, total), (expected.clone(), expected.len()), "{query}");
    }
}

#[test]
fn like_finds_uris_and_field_codes_and_keeps_them_only_for_the_commit_it_searched() {
    let env = env();
    let did = "did:plc:dddddddddddddddddddddddd";
    let paper = |i: usize, title: &str, fields: serde_json::Value| {
        let mut record = submission(title, &[("D", did)], 1);
        record["fields"] = fields;
        write(did, &format!("3d{i}"), "3r000", record, false)
    };
    env.log
        .append(&[
            paper(0, "Quasar winds", json!(["astro-ph.GA", "astro-ph.HE"])),
            paper(1, "Quasar lensing", json!(["astro-ph.CO"])),
            paper(2, "Graph colouring", json!(["math.CO"])),
        ])
        .unwrap();
    project_all(&env);
    let index = env.ctx.search.open(env.ctx.store.active_version("search").unwrap().unwrap()).unwrap();
    let found = |words: &[&str]| {
        let mut hits: Vec<(String, Vec<String>)> = index
            .like(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>(), 10)
            .unwrap()
            .iter()
            .map(|h| (h.uri.clone(), h.fields.clone()))
            .collect();
        hits.sort();
        hits
    };
    let uri = |i: usize| format!("at://{did}/{}/3d{i}", lexicons::SUBMISSION);
    let fields = |f: &[&str]| f.iter().map(|f| f.to_string()).collect::<Vec<_>>();
    let quasars = vec![(uri(0), fields(&["astro-ph.GA", "astro-ph.HE"])), (uri(1), fields(&["astro-ph.CO"]))];
    assert_eq!(found(&["quasars"]), quasars);
    assert_eq!(found(&["quasars"]), quasars, "asked again of the same commit");
    // A commit that adds a match: the answer kept for the commit before is not served.
    env.log.append(&[paper(3, "Quasar feedback", json!(["astro-ph.GA"]))]).unwrap();
    project_all(&env);
    index.reload().unwrap();
    let mut more = quasars.clone();
    more.push((uri(3), fields(&["astro-ph.GA"])));
    assert_eq!(found(&["quasars"]), more);
}

/// A document stores its URI as the eprints model's keys hold it (its DID's key, a did:plc's
/// in 16 bytes, and its record key), and hits give it back whole, for any DID.
#[test]
fn hits_give_back_the_uris_their_documents_store_compact() {
    use tantivy::schema::Value as _;
    let env = env();
    let (plc, web) = ("did:plc:ffffffffffffffffffffffff", "did:web:lab.example.org");
    env.log
        .append(&[
            write(plc, "3f0", "3r000", submission("Compact keys of quasars", &[("F", plc)], 1), false),
            write(web, "3f1", "3r000", submission("Whole keys of quasars", &[("W", web)], 2), false),
        ])
        .unwrap();
    project_all(&env);
    let (hits, total) = search_all(&env, "quasars", SortOrder::Date, 10);
    let uris: Vec<&str> = hits.iter().map(|h| h["uri"].as_str().unwrap()).collect();
    let uri = |did: &str, rkey: &str| format!("at://{did}/{}/{rkey}", lexicons::SUBMISSION);
    assert_eq!((uris, total), (vec![uri(web, "3f1").as_str(), uri(plc, "3f0").as_str()], 2));

    let version = env.ctx.store.active_version("search").unwrap().unwrap();
    let index = tantivy::Index::open_in_dir(projections::search::index_dir(env.ctx.search.root(), version)).unwrap();
    let searcher = index.reader().unwrap().searcher();
    let key = index.schema().get_field("key").unwrap();
    let mut stored: Vec<usize> = Vec::new();
    for segment in searcher.segment_readers() {
        let docs = segment.get_store_reader(1).unwrap();
        for doc in 0..segment.max_doc() {
            let doc: tantivy::TantivyDocument = docs.get(doc).unwrap();
            assert!(doc.get_first(index.schema().get_field("uri").unwrap()).is_none(), "the URI is not stored whole");
            stored.push(doc.get_first(key).and_then(|v| v.as_bytes()).unwrap().len());
        }
    }
    stored.sort();
    assert_eq!(stored, [20, format!("{web}/3f1").len()], "a did:plc's URI in 20 bytes, another DID's as its text and record key");
}

#[test]
fn words_in_the_title_rank_first() {
    let env = env();
    let did = "did:plc:eeeeeeeeeeeeeeeeeeeeeeee";
    let paper = |title: &str, abstract_text: &str| {
        let mut r = submission(title, &[("E", did)], 1);
        r["abstract"] = json!(abstract_text);
        r
    };
    let in_abstract = paper("Protein folding at scale", "We study self-supervised graph learning for molecules.");
    // The longer document: without the title boost, the other one would rank first.
    let in_title = paper(
        "Self-supervised graph learning",
        "We study protein folding at scale for molecules, with many more words around it than the other abstract has.",
    );
    env.log.append(&[write(did, "3t1", "3r000", in_abstract, false), write(did, "3t2", "3r000", in_title, false)]).unwrap();
    project_all(&env);
    for query in ["self-supervised graph", "graph learning", "Graph  LEARNING graph"] {
        let (hits, total) = search_all(&env, query, SortOrder::Relevance, 10);
        let found: Vec<&str> = hits.iter().map(|h| h["title"].as_str().unwrap()).collect();
        assert_eq!((found, total), (vec!["Self-supervised graph learning", "Protein folding at scale"], 2), "{query}");
    }
}

#[test]
fn cursor_paging_goes_past_ten_thousand_results_in_every_order() {
    let env = env();
    let did = "did:plc:dddddddddddddddddddddddd";
    let n = 10_500;
    let events: Vec<NewEvent> = (0..n)
        .map(|i| {
            let mut r = submission(&format!("Deep paging study number {i}"), &[("D", did)], 1 + (i % 28) as u32);
            if i % 3 == 0 {
                r["title"] = json!(format!("Deep paging deep paging study {i}"));
            }
            write(did, &format!("3p{i:05}"), "3r000", r, false)
        })
        .collect();
    for chunk in events.chunks(2000) {
        env.log.append(chunk).unwrap();
    }
    project(&env, "eprints");
    let v = catalog::ensure_active(&env.ctx, "search").unwrap();
    let mut p = catalog::open(&env.ctx, "search", v, Mode::Rebuild).unwrap();
    catch_up(env.log.as_ref(), p.as_mut(), 5000).unwrap();
    for sort in [SortOrder::Relevance, SortOrder::Date, SortOrder::Citations] {
        let (hits, total) = search_all(&env, "deep paging", sort, 100);
        assert_eq!(total, n);
        let uris: std::collections::HashSet<_> = hits.iter().map(|h| h["uri"].as_str().unwrap().to_owned()).collect();
        assert_eq!(uris.len(), n, "{sort:?}: every hit exactly once");
        if sort == SortOrder::Date {
            assert!(hits.windows(2).all(|w| w[0]["createdAt"].as_str() >= w[1]["createdAt"].as_str()));
        }
    }
    // A query matching some of them (every abstract repeats the first title) counts those,
    // on every page and in every order.
    let numbered = (0..n).filter(|i| i % 3 != 0).count();
    for sort in [SortOrder::Relevance, SortOrder::Date, SortOrder::Citations] {
        let (hits, total) = search_all(&env, "study title:number", sort, 1000);
        assert_eq!((hits.len(), total), (numbered, numbered), "{sort:?}");
    }
    // Relevance ranks the documents that say it twice first.
    let (hits, _) = search_all(&env, "deep paging", SortOrder::Relevance, 100);
    assert!(hits[..n / 3].iter().all(|h| h["title"].as_str().unwrap().starts_with("Deep paging deep paging")));
}

/// A `pub.svc.eprint.userTag` record on `eprint`.
fn tag(did: &str, rkey: &str, rev: &str, eprint: &str, tag: &str) -> NewEvent {
    NewEvent::repo(
        src(),
        Payload::RecordCreate(RecordWrite {
            did: did.into(),
            collection: "pub.svc.eprint.userTag".into(),
            rkey: rkey.into(),
            cid: format!("bafyrei{rkey}{rev}"),
            rev: rev.into(),
            record: json!({"eprintUri": eprint, "tag": tag, "createdAt": "2025-02-01T00:00:00Z"}),
        }),
    )
}

/// The tags facet of every eprint: `[(tag, count)]`, most frequent first, then by tag.
fn tag_facet(env: &Env) -> Vec<(String, u64)> {
    let v = env.ctx.store.active_version("search").unwrap().unwrap();
    let index = env.ctx.search.open(v).unwrap();
    let facets = index.facets(&SearchRequest::new("*", SortOrder::Relevance), &[projections::search::Facet::Tags]).unwrap();
    let mut counts: Vec<(String, u64)> = facets["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["value"].as_str().unwrap().to_owned(), b["count"].as_u64().unwrap()))
        .collect();
    counts.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    counts
}

#[test]
fn the_tags_facet_counts_the_tags_on_the_matching_eprints() {
    let env = env();
    let (a, b, c) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb", "did:plc:cccccccccccccccccccccccc");
    let p1 = format!("at://{a}/pub.svc.eprint.submission/3p1");
    let p2 = format!("at://{a}/pub.svc.eprint.submission/3p2");
    env.log
        .append(&[
            // A tag before its eprint is indexed, tags after it, in two forms of one tag.
            tag(b, "t1", "3r01", &p1, "Graph Theory"),
            write(a, "3p1", "3r01", submission("First Paper", &[("A", a)], 1), false),
            write(a, "3p2", "3r02", submission("Second Paper", &[("A", a)], 2), false),
            tag(c, "t2", "3r01", &p1, "graph-theory"),
            tag(c, "t3", "3r02", &p2, "graph theory"),
            tag(b, "t4", "3r02", &p2, "Spectra"),
            // Refused by its lexicon: left out.
            tag(b, "t5", "3r03", &p2, ""),
        ])
        .unwrap();
    project_all(&env);
    assert_eq!(tag_facet(&env), [("graph-theory".to_owned(), 2), ("spectra".to_owned(), 1)]);

    // An update moves a tag, a delete removes one, a newer version of the eprint keeps its
    // tags, and a deleted account's tags go.
    env.log
        .append(&[
            NewEvent::repo(
                src(),
                Payload::RecordUpdate(RecordWrite {
                    did: b.into(),
                    collection: "pub.svc.eprint.userTag".into(),
                    rkey: "t4".into(),
                    cid: "bafyreit4".into(),
                    rev: "3r05".into(),
                    record: json!({"eprintUri": p1, "tag": "Spectra", "createdAt": "2025-02-01T00:00:00Z"}),
                }),
            ),
            write(a, "3p2", "3r06", submission("Second Paper Revised", &[("A", a)], 2), true),
            delete_tag(c, "t3", "3r07"),
        ])
        .unwrap();
    project_all(&env);
    assert_eq!(tag_facet(&env), [("graph-theory".to_owned(), 1), ("spectra".to_owned(), 1)]);
    let req = SearchRequest::new("first", SortOrder::Relevance);
    let v = env.ctx.store.active_version("search").unwrap().unwrap();
    let first = env.ctx.search.open(v).unwrap().facets(&req, &[projections::search::Facet::Tags]).unwrap();
    assert_eq!(first["tags"].as_array().unwrap().len(), 2, "both on the first paper: {first}");
    env.log
        .append(&[NewEvent::repo(
            src(),
            Payload::Account(AccountChange { did: b.into(), active: false, status: Some(AccountStatus::Deleted) }),
        )])
        .unwrap();
    project_all(&env);
    assert_eq!(tag_facet(&env), [("graph-theory".to_owned(), 1)], "b's tags went with its account");

    // A rebuild gives the same counts.
    let live = tag_facet(&env);
    let v2 = env.ctx.store.create_version("search").unwrap();
    let mut rebuilt = catalog::open(&env.ctx, "search", v2, Mode::Rebuild).unwrap();
    catch_up(env.log.as_ref(), rebuilt.as_mut(), 2).unwrap();
    env.ctx.store.set_active_version("search", v2).unwrap();
    assert_eq!(tag_facet(&env), live);
}

/// A batch writes each document once, with the tags it ends with; a rebuild ends merged into
/// one segment, without the copies its documents left as their tags came.
#[test]
fn each_document_is_written_once_per_batch_and_a_rebuild_ends_compact() {
    let env = env();
    let (a, b) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb");
    let paper = |i: usize| format!("at://{a}/pub.svc.eprint.submission/3p{i}");
    let mut events = Vec::new();
    for i in 0..20 {
        events.push(write(a, &format!("3p{i}"), "3r01", submission(&format!("Paper {i}"), &[("A", a)], 1), false));
        for t in 0..3 {
            events.push(tag(b, &format!("t{i}x{t}"), "3r01", &paper(i), &format!("topic {t}")));
        }
    }
    env.log.append(&events).unwrap();
    let stats = |env: &Env| {
        let v = env.ctx.store.active_version("search").unwrap().unwrap();
        env.ctx.search.open(v).unwrap().segment_stats()
    };
    project(&env, "eprints");
    let v = catalog::ensure_active(&env.ctx, "search").unwrap();
    let mut live = catalog::open(&env.ctx, "search", v, Mode::Live).unwrap();
    catch_up(env.log.as_ref(), live.as_mut(), 1000).unwrap();
    let after_one_batch = stats(&env);
    assert_eq!((after_one_batch.documents, after_one_batch.deleted), (20, 0), "one write per document: {after_one_batch:?}");
    assert_eq!(tag_facet(&env), [("topic-0".to_owned(), 20), ("topic-1".to_owned(), 20), ("topic-2".to_owned(), 20)]);

    // A rebuild in batches of 4 events writes most documents again as their tags come;
    // its end merges them away.
    let v2 = env.ctx.store.create_version("search").unwrap();
    let mut rebuilt = catalog::open(&env.ctx, "search", v2, Mode::Rebuild).unwrap();
    catch_up(env.log.as_ref(), rebuilt.as_mut(), 4).unwrap();
    env.ctx.store.set_active_version("search", v2).unwrap();
    assert_eq!(stats(&env), projections::search::SegmentStats { segments: 1, documents: 20, deleted: 0 });
    assert_eq!(tag_facet(&env).len(), 3);
}

/// A document's source goes with it: a tag on an eprint deleted, or of a deleted account,
/// does not bring its document back, in a later batch or in the same one.
#[test]
fn a_tag_on_a_gone_eprint_does_not_bring_it_back() {
    let env = env();
    let (a, b, c) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb", "did:plc:cccccccccccccccccccccccc");
    let p1 = format!("at://{a}/pub.svc.eprint.submission/3p1");
    let p2 = format!("at://{c}/pub.svc.eprint.submission/3p2");
    env.log
        .append(&[
            write(a, "3p1", "3r01", submission("Kept Away", &[("A", a)], 1), false),
            write(c, "3p2", "3r01", submission("Also Away", &[("C", c)], 1), false),
            tag(b, "t1", "3r01", &p1, "first"),
        ])
        .unwrap();
    project_all(&env);
    assert_eq!(search_all(&env, "away", SortOrder::Date, 10).1, 2);
    env.log
        .append(&[
            NewEvent::repo(src(), Payload::Account(AccountChange { did: a.into(), active: false, status: Some(AccountStatus::Deleted) })),
            NewEvent::repo(
                src(),
                Payload::RecordDelete(RecordDelete {
                    did: c.into(),
                    collection: "pub.svc.eprint.submission".into(),
                    rkey: "3p2".into(),
                    rev: "3r02".into(),
                }),
            ),
            tag(b, "t2", "3r02", &p1, "second"),
        ])
        .unwrap();
    project_all(&env);
    assert_eq!(search_all(&env, "away", SortOrder::Date, 10).1, 0, "gone in the batch that deleted them");
    env.log.append(&[tag(b, "t3", "3r03", &p1, "third"), tag(b, "t4", "3r04", &p2, "fourth")]).unwrap();
    project_all(&env);
    assert_eq!(search_all(&env, "away", SortOrder::Date, 10).1, 0, "and in later ones");
}

/// Facet counts are exact over several segments, whatever their values' ranks in each:
/// checked against a count over the data, for every match and for a word's matches.
#[test]
fn facets_are_exact_over_several_segments() {
    let did = |n: usize| format!("did:plc:{n:024}");
    let paper = |i: usize| {
        // The fourth author spreads 150 values over every segment: more than are looked up
        // one by one in the largest segment's dictionary.
        let mut a = vec![did(i % 7), did(7 + (i * 13) % 40), did(50 + (i / 40) % 9), did(100 + (i * 7) % 150)];
        a.dedup();
        let title = if i.is_multiple_of(3) { format!("Odd paper {i}") } else { format!("Even paper {i}") };
        (title, a)
    };
    // Five commits: the first with enough values to count them densely, the others sparsely.
    let commits: Vec<Vec<(String, Vec<String>)>> =
        [0..400, 400..480, 480..560, 560..640, 640..720].into_iter().map(|chunk| chunk.map(paper).collect()).collect();
    author_facets_match_a_count(&commits, &["*", "odd"]);
}

/// Values the small segments lift past the large one's best, values only the small segments
/// hold, and ties that leave many values to look up, over several searches (ties at the
/// last place: the unit tests of `search::facets`).
#[test]
fn facets_are_exact_when_small_segments_change_the_ranking() {
    let did = |n: u64| format!("did:plc:{n:024}");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    // Ties everywhere: every author of the small segments may reach the twentieth place, so
    // more are looked up in the large one than one by one (from its dictionary).
    let papers = |authors: std::ops::Range<u64>, copies: usize| {
        authors.flat_map(move |a| (0..copies).map(move |c| (format!("tied paper {a} {c}"), vec![did(a)]))).collect::<Vec<_>>()
    };
    author_facets_match_a_count(&[papers(0..200, 2), papers(100..300, 2)], &["*", "tied"]);
    let words = ["alpha", "beta", "gamma"];
    let mut commits = Vec::new();
    for (size, pool) in [(500, 0..60u64), (60, 30..50), (60, 40..45), (60, 25..70), (60, 55..90)] {
        let papers = (0..size)
            .map(|i| {
                let authors: Vec<String> = (0..3).map(|_| did(pool.start + next(pool.end - pool.start))).collect();
                (format!("{} {} paper {i}", words[next(3) as usize], words[next(3) as usize]), authors)
            })
            .collect();
        commits.push(papers);
    }
    author_facets_match_a_count(&commits, &["*", "alpha", "beta", "gamma", "alpha beta"]);
}

/// Indexes each of `commits` (papers as title and author DIDs) in its own commit, so in its
/// own segment, and checks each query's author facet against a count over the papers.
fn author_facets_match_a_count(commits: &[Vec<(String, Vec<String>)>], queries: &[&str]) {
    let env = env();
    let v = catalog::ensure_active(&env.ctx, "search").unwrap();
    let mut live = catalog::open(&env.ctx, "search", v, Mode::Live).unwrap();
    let mut n = 0;
    for papers in commits {
        let events: Vec<NewEvent> = papers
            .iter()
            .map(|(title, authors)| {
                n += 1;
                let pairs: Vec<(&str, &str)> = authors.iter().map(|d| ("N", d.as_str())).collect();
                write(&authors[0], &format!("3f{n:05}"), "3r01", submission(title, &pairs, 1 + (n % 5) as u32), false)
            })
            .collect();
        env.log.append(&events).unwrap();
        catch_up(env.log.as_ref(), live.as_mut(), 10_000).unwrap();
        live.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let index = env.ctx.search.open(v).unwrap();
    assert!(index.segment_stats().segments > 1, "{:?}", index.segment_stats());
    for query in queries {
        let words: Vec<String> = query.split(' ').filter(|w| *w != "*").map(str::to_lowercase).collect();
        let mut expected: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        for (title, authors) in commits.iter().flatten() {
            let title = title.to_lowercase();
            if words.iter().all(|w| title.split(' ').any(|t| t == w)) {
                let mut distinct = authors.clone();
                distinct.sort();
                distinct.dedup();
                for a in distinct {
                    *expected.entry(a).or_default() += 1;
                }
            }
        }
        let mut expected: Vec<(String, u64)> = expected.into_iter().collect();
        expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        expected.truncate(20);
        let req = SearchRequest::new(query, SortOrder::Relevance);
        let author = [projections::search::Facet::Author];
        for (path, facets) in [("decoded", index.facets(&req, &author)), ("dictionaries", index.facets_from_dictionaries(&req, &author))] {
            let found: Vec<(String, u64)> = facets.unwrap()["author"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| (b["value"].as_str().unwrap().to_owned(), b["count"].as_u64().unwrap()))
                .collect();
            assert_eq!(found, expected, "{query}, terms {path}");
        }
    }
}

fn delete_tag(did: &str, rkey: &str, rev: &str) -> NewEvent {
    NewEvent::repo(
        src(),
        Payload::RecordDelete(RecordDelete {
            did: did.into(),
            collection: "pub.svc.eprint.userTag".into(),
            rkey: rkey.into(),
            rev: rev.into(),
        }),
    )
}

/// A kept answer is served only to the same search of the same commit: after a commit
/// that hides an account or adds a paper, the same search finds what the commit holds, and
/// the answers of the commits before are let go.
#[test]
fn kept_answers_follow_every_commit() {
    let env = env();
    let (a, c) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:cccccccccccccccccccccccc");
    env.log
        .append(&[
            write(a, "3p1", "3r01", submission("Kept Answers", &[("A", a)], 1), false),
            write(c, "3p2", "3r01", submission("Kept Answers Too", &[("C", c)], 2), false),
        ])
        .unwrap();
    project_all(&env);
    let index = env.ctx.search.open(env.ctx.store.active_version("search").unwrap().unwrap()).unwrap();
    let facets = [projections::search::Facet::Author];
    let req = SearchRequest::new("kept answers", SortOrder::Date);
    let titles = |found: &projections::search::Found| -> Vec<String> {
        found
            .results
            .hits
            .iter()
            .map(|h| serde_json::from_str::<serde_json::Value>(h).unwrap()["title"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(index.found(&req, &facets, false).is_none(), "nothing kept before the first search");
    let first = index.find(&req, &facets, false).unwrap();
    assert_eq!((titles(&first), first.results.total), (vec!["Kept Answers Too".to_owned(), "Kept Answers".to_owned()], 2));
    let again = index.found(&req, &facets, false).expect("kept for the same search of the same commit");
    assert!(std::sync::Arc::ptr_eq(&first, &again));
    assert_eq!(index.kept_answers().0, 1);
    assert!(index.found(&req, &[], false).is_none(), "another set of facets is another search");
    assert!(index.found(&SearchRequest { limit: 1, ..req.clone() }, &facets, false).is_none(), "another page is another search");

    env.log
        .append(&[NewEvent::repo(
            src(),
            Payload::Account(AccountChange { did: c.into(), active: false, status: Some(AccountStatus::Takendown) }),
        )])
        .unwrap();
    project_all(&env);
    assert!(index.found(&req, &facets, false).is_none(), "a commit makes a new generation");
    let hidden = index.find(&req, &facets, false).unwrap();
    assert_eq!((titles(&hidden), hidden.results.total), (vec!["Kept Answers".to_owned()], 1));
    assert_eq!(hidden.facets.as_ref().unwrap()["author"].as_array().unwrap().len(), 1, "the counts follow the commit too");
    assert_eq!(index.kept_answers().0, 1, "the first answer of a new commit lets go of the older commits' answers");

    env.log.append(&[write(a, "3p3", "3r02", submission("Kept Answers Three", &[("A", a)], 3), false)]).unwrap();
    project_all(&env);
    let added = index.find(&req, &facets, false).unwrap();
    assert_eq!((titles(&added), added.results.total), (vec!["Kept Answers Three".to_owned(), "Kept Answers".to_owned()], 2));
}

/// A hit's summary is read from its eprint's row in the eprints model, not from the index,
/// and a document remade from that row; a hit whose row is gone (its eprint deleted after
/// the visible commit) is left out.
#[test]
fn hits_and_remade_documents_read_the_eprints_models_rows() {
    let env = env();
    let (a, b) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb");
    let titles = ["Summaries One", "Summaries Two", "Summaries Three"];
    let events: Vec<NewEvent> = titles
        .iter()
        .enumerate()
        .map(|(i, t)| write(a, &format!("3s{i}"), "3r01", submission(t, &[("A", a)], i as u32 + 1), false))
        .collect();
    env.log.append(&events).unwrap();
    project_all(&env);
    let v = env.ctx.store.active_version("search").unwrap().unwrap();
    let index = env.ctx.search.open(v).unwrap();
    let req = SearchRequest::new("summaries", SortOrder::Date);
    let hits = |index: &projections::search::SearchIndex| -> Vec<serde_json::Value> {
        index.search(&req).unwrap().hits.iter().map(|h| serde_json::from_str(h).unwrap()).collect()
    };
    let before = hits(&index);
    let found: Vec<&str> = before.iter().map(|h| h["title"].as_str().unwrap()).collect();
    assert_eq!(found, ["Summaries Three", "Summaries Two", "Summaries One"]);
    let uri = |i: usize| format!("at://{a}/pub.svc.eprint.submission/3s{i}");
    assert_eq!(before[2]["uri"], json!(uri(0)));
    for key in ["cid", "authors", "abstract", "createdAt", "indexedAt"] {
        assert!(before[2].get(key).is_some(), "a summary shows {key}: {}", before[2]);
    }
    // The summary is the one an author's listing shows.
    let listed = projections::eprints::read::EprintsReader::new(env.ctx.store.as_ref()).unwrap().by_author(a, 10, None).unwrap();
    let listed: Vec<serde_json::Value> = listed.eprints.iter().map(|s| s.to_value()).collect();
    assert_eq!(before, listed);

    // The index keeps no record, and the node's store no row per document (search format
    // 6 kept the position each was made at there): the index holds it.
    let sources = store::TableRef::new("search", v, "sources");
    assert!(env.ctx.node.get(&sources, a, uri(0).as_bytes()).unwrap().is_none());

    // A tag on an eprint indexed by an earlier batch remakes its document from the eprints
    // model's row: found by the tag, with the record's words.
    env.log.append(&[tag(b, "t1", "3r01", &uri(0), "remade")]).unwrap();
    project_all(&env);
    assert_eq!(tag_facet(&env), [("remade".to_owned(), 1)]);
    let mut tagged = SearchRequest::new("summaries one", SortOrder::Relevance);
    tagged.tags = vec!["remade".into()];
    let found = index.search(&tagged).unwrap().hits;
    assert_eq!(found.len(), 1);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&found[0]).unwrap(), before[2]);

    // An eprint the eprints model does not hold (deleted since, or not written yet) is left
    // out of the hits, and such an answer is not kept for the next search.
    let records = store::TableRef::new("eprints", env.ctx.store.active_version("eprints").unwrap().unwrap(), "records");
    let row = env.ctx.store.get(&records, &uri(1), &[]).unwrap().unwrap();
    let mut batch = store::Batch::default();
    batch.delete(&records, &uri(1), Vec::new(), 1);
    env.ctx.store.apply(batch).unwrap();
    assert_eq!(hits(&index), [before[0].clone(), before[2].clone()]);
    let found = index.find(&req, &[], false).unwrap();
    assert!(found.results.partial && found.results.hits.len() == 2 && found.results.total == 3);
    let mut batch = store::Batch::default();
    batch.put(&records, &uri(1), Vec::new(), row, 2);
    env.ctx.store.apply(batch).unwrap();
    assert_eq!(index.find(&req, &[], false).unwrap().results.hits.len(), 3, "the partial answer was not kept");
}

/// A document remade while the eprints model has not written its record yet waits for it.
#[test]
fn a_remade_document_waits_for_the_eprints_model() {
    let env = env();
    let (a, b) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb");
    let uri = format!("at://{a}/pub.svc.eprint.submission/3w0");
    env.log.append(&[write(a, "3w0", "3r01", submission("Waiting Paper", &[("A", a)], 1), false)]).unwrap();
    let eprints = catalog::ensure_active(&env.ctx, "eprints").unwrap();
    let v = catalog::ensure_active(&env.ctx, "search").unwrap();
    let mut search = catalog::open(&env.ctx, "search", v, Mode::Live).unwrap();
    catch_up(env.log.as_ref(), search.as_mut(), 10).unwrap();
    // The tag comes in a later batch, while the eprints model has applied nothing.
    env.log.append(&[tag(b, "t1", "3r01", &uri, "patience")]).unwrap();
    let started = std::time::Instant::now();
    let behind = std::thread::spawn({
        let (log, ctx) = (env.log.clone(), env.ctx.clone());
        move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let mut p = catalog::open(&ctx, "eprints", eprints, Mode::Live).unwrap();
            catch_up(log.as_ref(), p.as_mut(), 10).unwrap();
        }
    });
    catch_up(env.log.as_ref(), search.as_mut(), 10).unwrap();
    behind.join().unwrap();
    assert!(started.elapsed() >= std::time::Duration::from_millis(300), "the tag's batch waited for the eprints model");
    assert_eq!(tag_facet(&env), [("patience".to_owned(), 1)]);
}

/// A document the eprints model has still not written a record for when the wait ends is
/// remade by a later batch, also after a restart (the commit keeps the list).
#[test]
fn a_document_the_eprints_model_lacks_is_remade_by_a_later_batch() {
    use projections::search::SearchProjection;
    let env = env();
    let (a, b) = ("did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did:plc:bbbbbbbbbbbbbbbbbbbbbbbb");
    let uri = format!("at://{a}/pub.svc.eprint.submission/3w0");
    env.log.append(&[write(a, "3w0", "3r01", submission("Deferred Paper", &[("A", a)], 1), false)]).unwrap();
    catalog::ensure_active(&env.ctx, "eprints").unwrap();
    let v = catalog::ensure_active(&env.ctx, "search").unwrap();
    let open = || {
        let ctx = &env.ctx;
        SearchProjection::open(&ctx.search, ctx.node.clone(), ctx.store.clone(), ctx.lexicons.clone(), v, Mode::Live)
            .unwrap()
            .with_eprints_wait(std::time::Duration::from_millis(50))
    };
    let mut search = open();
    catch_up(env.log.as_ref(), &mut search, 10).unwrap();
    // The tag's batch finds the eprints model (not built) behind, and goes on without it.
    env.log.append(&[tag(b, "t1", "3r01", &uri, "later")]).unwrap();
    catch_up(env.log.as_ref(), &mut search, 10).unwrap();
    assert_eq!(tag_facet(&env), [], "not remade without the record");
    drop(search);

    // After a restart and once the eprints model has the record, the next batch remakes it.
    project(&env, "eprints");
    let mut search = open();
    env.log.append(&[write(b, "3w1", "3r01", submission("Another Paper", &[("B", b)], 1), false)]).unwrap();
    catch_up(env.log.as_ref(), &mut search, 10).unwrap();
    assert_eq!(tag_facet(&env), [("later".to_owned(), 1)]);
}

/// Each of this process's threads whose name starts with `prefix`, with its niceness
/// (`/proc/self/task/<tid>/stat`, field 19; a name is cut to 15 bytes there).
#[cfg(target_os = "linux")]
fn threads_named(prefix: &str) -> std::collections::BTreeMap<u64, i64> {
    let mut found = std::collections::BTreeMap::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else { continue };
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // The fields after the name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        if let Some(nice) = fields.get(16).and_then(|n| n.parse().ok()) {
            found.insert(tid, nice);
        }
    }
    found
}

/// A projection that notes the niceness of the indexing threads its first batch started.
#[cfg(target_os = "linux")]
struct WatchingThreads {
    inner: Box<dyn projections::Projection>,
    started: Option<Vec<i64>>,
}

#[cfg(target_os = "linux")]
impl projections::Projection for WatchingThreads {
    fn model(&self) -> &'static str {
        self.inner.model()
    }
    fn version(&self) -> u32 {
        self.inner.version()
    }
    fn checkpoints(&self) -> Result<projections::Checkpoints, projections::ProjectionError> {
        self.inner.checkpoints()
    }
    fn apply_batch(&mut self, batch: &projections::EventBatch) -> Result<(), projections::ProjectionError> {
        let before = threads_named(INDEXING_THREADS);
        self.inner.apply_batch(batch)?;
        if self.started.is_none() {
            // A thread names itself once it runs: under load that can be a moment later.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            let started = loop {
                let after = threads_named(INDEXING_THREADS);
                let started: Vec<i64> = after.into_iter().filter(|(tid, _)| !before.contains_key(tid)).map(|(_, nice)| nice).collect();
                if !started.is_empty() || std::time::Instant::now() > deadline {
                    break started;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            };
            self.started = Some(started);
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), projections::ProjectionError> {
        self.inner.flush()
    }
}

/// tantivy's indexing threads, `thrd-tantivy-index<n>`, as `/proc` shows their names.
#[cfg(target_os = "linux")]
const INDEXING_THREADS: &str = "thrd-tantivy-in";

/// A rebuild's indexing yields the cores as its appliers do: tantivy's indexing threads
/// take the priority of the thread that starts them, which must be the rebuild's applier
/// (at its first batch), not the thread that opened the projection.
#[cfg(target_os = "linux")]
#[test]
fn a_rebuilds_indexing_threads_run_at_the_rebuilds_lower_priority() {
    let env = env();
    let did = "did:plc:dddddddddddddddddddddddd";
    let events: Vec<NewEvent> =
        (0..20).map(|i| write(did, &format!("3n{i}"), "3r000", submission(&format!("Niceness {i}"), &[("D", did)], 1), false)).collect();
    env.log.append(&events).unwrap();
    catalog::ensure_active(&env.ctx, "search").unwrap();
    let rebuilding = env.ctx.store.create_version("search").unwrap();
    let inner = catalog::open(&env.ctx, "search", rebuilding, Mode::Rebuild).unwrap();
    let mut watching = WatchingThreads { inner, started: None };
    let results = projections::catch_up_all(env.log.as_ref(), vec![&mut watching as &mut dyn projections::Projection], 5);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let started = watching.started.unwrap_or_default();
    assert!(started.iter().any(|nice| *nice >= 10), "the first batch started no indexing thread at the rebuild's niceness: {started:?}");
}
