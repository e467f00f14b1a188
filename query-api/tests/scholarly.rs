//! The scholarly layer in process: every attached collection written as repository events,
//! projected, and read through its operations; updates, deletes, stale revisions, invalid
//! records and deleted accounts.

use crate::support;

use axum::http::StatusCode;
use event_schema::{AccountChange, AccountStatus, NewEvent, Payload, Source};
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";
const CAROL: &str = "did:plc:carol0000000000000000000";

fn paper(rkey: &str) -> String {
    format!("at://{ALICE}/pub.svc.eprint.submission/{rkey}")
}

fn body(text: &str) -> Value {
    json!([{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": text}])
}

/// Two papers by Alice; Bob reviews the first, Alice replies, Carol replies to her; an
/// annotation with a text selector on page 2, an entity link, endorsements, tags, a citation,
/// a related work, a version, a changelog and Bob's profile.
fn scholarly() -> Fixture {
    let mut f = Fixture::new();
    let p1 = paper("p1");
    let p2 = paper("p2");
    let review = format!("at://{BOB}/pub.svc.review.comment/r1");
    let reply = format!("at://{ALICE}/pub.svc.review.comment/r2");
    let annotation = format!("at://{BOB}/pub.svc.annotation.comment/a1");
    f.apply(vec![
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Transformers", ALICE, "2024-05-01T00:00:00Z")),
        create(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000b", submission("Dense Retrieval", ALICE, "2024-06-01T00:00:00Z")),
        create(BOB, "pub.svc.review.comment", "r1", "3l0000000000c", json!({
            "eprintUri": p1, "body": body("The ablation in section 4 is convincing."), "motivationFallback": "commenting",
            "createdAt": "2024-07-01T00:00:00Z"})),
        create(ALICE, "pub.svc.review.comment", "r2", "3l0000000000d", json!({
            "eprintUri": p1, "body": body("Thank you."), "parentComment": review, "createdAt": "2024-07-02T00:00:00Z"})),
        create(CAROL, "pub.svc.review.comment", "r3", "3l0000000000e", json!({
            "eprintUri": p1, "body": body("Agreed."), "parentComment": reply, "createdAt": "2024-07-03T00:00:00Z"})),
        create(BOB, "pub.svc.annotation.comment", "a1", "3l0000000000f", json!({
            "eprintUri": p1, "body": body("Is this bound tight?"), "motivationFallback": "questioning",
            "target": {"selector": {"$type": "pub.svc.annotation.comment#textQuoteSelector", "type": "TextQuoteSelector", "exact": "the bound is tight"},
                       "refinedBy": {"type": "TextPositionSelector", "pageNumber": 1, "start": 120, "end": 138}},
            "createdAt": "2024-07-04T00:00:00Z"})),
        create(ALICE, "pub.svc.annotation.comment", "a2", "3l0000000000g", json!({
            "eprintUri": p1, "body": body("Yes, see lemma 2."), "parentAnnotation": annotation,
            "target": {"selector": {"type": "TextQuoteSelector", "exact": "the bound is tight"}, "refinedBy": {"type": "TextPositionSelector", "pageNumber": 1, "start": 120, "end": 138}},
            "createdAt": "2024-07-05T00:00:00Z"})),
        create(BOB, "pub.svc.annotation.entityLink", "e1", "3l0000000000h", json!({
            "eprintUri": p1, "target": {"source": p1, "selector": {"type": "TextQuoteSelector", "exact": "transformer"},
                                        "refinedBy": {"type": "TextPositionSelector", "start": 10, "end": 21, "pageNumber": 1}},
            "linkedEntity": {"type": "externalId", "system": "wikidata", "identifier": "Q85810444", "label": "Transformer"},
            "confidence": 900, "createdAt": "2024-07-06T00:00:00Z"})),
        create(BOB, "pub.svc.review.endorsement", "n1", "3l0000000000i", json!({
            "eprintUri": p1, "contributions": ["methodological", "empirical"], "comment": "Solid.", "createdAt": "2024-07-07T00:00:00Z"})),
        create(CAROL, "pub.svc.review.endorsement", "n2", "3l0000000000j", json!({
            "eprintUri": p1, "contributions": ["empirical"], "createdAt": "2024-07-08T00:00:00Z"})),
        create(BOB, "pub.svc.eprint.userTag", "t1", "3l0000000000k", json!({"eprintUri": p1, "tag": "Machine Learning", "createdAt": "2024-07-09T00:00:00Z"})),
        create(CAROL, "pub.svc.eprint.userTag", "t2", "3l0000000000l", json!({"eprintUri": p1, "tag": "#machine_learning", "createdAt": "2024-07-10T00:00:00Z"})),
        create(CAROL, "pub.svc.eprint.userTag", "t3", "3l0000000000m", json!({"eprintUri": p2, "tag": "machine-learning", "createdAt": "2024-07-10T00:00:00Z"})),
        create(CAROL, "pub.svc.eprint.userTag", "t4", "3l0000000000n", json!({"eprintUri": p2, "tag": "retrieval", "createdAt": "2024-07-10T00:00:00Z"})),
        create(ALICE, "pub.svc.eprint.citation", "c1", "3l0000000000o", json!({
            "eprintUri": p2, "citedWork": {"title": "Sparse Transformers", "svcUri": p1, "year": 2024}, "citationType": "extends",
            "createdAt": "2024-07-11T00:00:00Z"})),
        create(ALICE, "pub.svc.eprint.relatedWork", "w1", "3l0000000000p", json!({
            "eprintUri": p2, "relatedUri": p1, "relationType": "extends", "description": "Builds on it.", "createdAt": "2024-07-12T00:00:00Z"})),
        create(ALICE, "pub.svc.eprint.version", "v1", "3l0000000000q", json!({
            "eprintUri": p1, "versionNumber": 2, "changes": "Fixed a typo.", "createdAt": "2024-07-13T00:00:00Z"})),
        create(ALICE, "pub.svc.eprint.changelog", "l1", "3l0000000000r", json!({
            "eprintUri": p1, "version": {"major": 1, "minor": 1, "patch": 0}, "sections": [{"category": "corrections", "items": [{"description": "Typo in eq. 3"}]}],
            "createdAt": "2024-07-13T00:00:00Z"})),
        create(BOB, "pub.svc.actor.profile", "self", "3l0000000000s", json!({"displayName": "Bob Reviewer", "bio": "Reads papers."})),
    ]);
    f
}

#[tokio::test]
async fn reviews_list_thread_and_filter() {
    let mut f = scholarly();
    let (status, body) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}", enc(&paper("p1")))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["total"], 3);
    assert_eq!(body["hasMore"], false);
    let reviews = body["reviews"].as_array().unwrap();
    assert_eq!(reviews[2]["content"], "The ablation in section 4 is convincing.");
    assert_eq!(reviews[2]["author"]["did"], BOB);
    assert_eq!(reviews[2]["replyCount"], 1);
    assert_eq!(reviews[1]["parentReviewUri"], format!("at://{BOB}/pub.svc.review.comment/r1"));

    // Paging: two pages of 2 and 1, and the second page's cursor is absent.
    let (_, page1) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?uri={}&limit=2", enc(&paper("p1")))).await;
    assert_eq!((page1["reviews"].as_array().unwrap().len(), page1["hasMore"].as_bool()), (2, Some(true)));
    let cursor = page1["cursor"].as_str().unwrap();
    let (_, page2) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?uri={}&limit=2&cursor={cursor}", enc(&paper("p1")))).await;
    assert_eq!((page2["reviews"].as_array().unwrap().len(), page2["hasMore"].as_bool()), (1, Some(false)));
    assert!(page2.get("cursor").is_none());

    let (_, replying) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}&motivation=replying", enc(&paper("p1")))).await;
    assert_eq!(replying["total"], 2);
    let (_, inline) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}&inlineOnly=true", enc(&paper("p1")))).await;
    assert_eq!(inline["total"], 0);
    // An inline review: each filter and their combination is a listing of its own.
    f.apply(vec![create(CAROL, "pub.svc.review.comment", "r9", "3l0000000000x", json!({
        "eprintUri": paper("p1"), "body": [{"$type": "pub.svc.richtext.defs#textItem", "type": "text", "content": "Is eq. 3 right?"}], "motivationFallback": "questioning",
        "target": {"selector": {"type": "TextQuoteSelector", "exact": "eq. 3"}}, "createdAt": "2024-07-09T00:00:00Z"}))]);
    for (query, total) in
        [("inlineOnly=true", 1), ("motivation=questioning&inlineOnly=true", 1), ("motivation=replying&inlineOnly=true", 0)]
    {
        let (_, listed) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}&{query}", enc(&paper("p1")))).await;
        assert_eq!(listed["total"], total, "{query}: {listed}");
    }
    let (_, by_bob) = f.get(&format!("/xrpc/pub.svc.review.listForAuthor?reviewerDid={BOB}")).await;
    assert_eq!(by_bob["total"], 1);

    let (status, thread) =
        f.get(&format!("/xrpc/pub.svc.review.getThread?uri={}", enc(&format!("at://{BOB}/pub.svc.review.comment/r1")))).await;
    assert_eq!(status, StatusCode::OK, "{thread}");
    assert_eq!(thread["totalReplies"], 2);
    assert_eq!(thread["replies"][0]["author"]["did"], ALICE);
    assert_eq!(thread["replies"][0]["replies"][0]["content"], "Agreed.");
    let (status, missing) =
        f.get(&format!("/xrpc/pub.svc.review.getThread?uri={}", enc(&format!("at://{BOB}/pub.svc.review.comment/zz")))).await;
    assert_eq!((status, missing["error"].as_str()), (StatusCode::NOT_FOUND, Some("NotFound")));
}

#[tokio::test]
async fn annotations_by_eprint_page_thread_and_author() {
    let f = scholarly();
    let p1 = enc(&paper("p1"));
    let (status, body) = f.get(&format!("/xrpc/pub.svc.annotation.listForEprint?eprintUri={p1}&includeEntityLinks=true")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["total"], 2);
    assert_eq!(body["entityLinks"][0]["linkedEntity"]["identifier"], "Q85810444");
    assert_eq!(body["entityLinks"][0]["confidence"], 0.9);
    let (_, no_links) = f.get(&format!("/xrpc/pub.svc.annotation.listForEprint?eprintUri={p1}")).await;
    assert!(no_links.get("entityLinks").is_none());
    // The refinement's 0-indexed page 1 is page 2 of the API.
    let (_, page) = f.get(&format!("/xrpc/pub.svc.annotation.listForPage?eprintUri={p1}&pageNumber=2")).await;
    assert_eq!(page["pageNumber"], 2);
    assert_eq!(page["annotations"].as_array().unwrap().len(), 2, "{page}");
    assert_eq!(page["annotations"][0]["target"]["selector"]["exact"], "the bound is tight");
    assert_eq!(page["entityLinks"].as_array().unwrap().len(), 1);
    let (_, other) = f.get(&format!("/xrpc/pub.svc.annotation.listForPage?eprintUri={p1}&pageNumber=3")).await;
    assert_eq!(other["annotations"].as_array().unwrap().len(), 0);
    let (_, filtered) = f.get(&format!("/xrpc/pub.svc.annotation.listForEprint?eprintUri={p1}&pageNumber=2&motivation=questioning")).await;
    assert_eq!(filtered["total"], 1);

    let (_, thread) =
        f.get(&format!("/xrpc/pub.svc.annotation.getThread?uri={}", enc(&format!("at://{BOB}/pub.svc.annotation.comment/a1")))).await;
    assert_eq!(thread["totalReplies"], 1, "{thread}");
    assert_eq!(thread["thread"][0]["depth"], 0);
    assert_eq!(thread["thread"][1]["parentAnnotationUri"], format!("at://{BOB}/pub.svc.annotation.comment/a1"));
    let (_, by_bob) = f.get(&format!("/xrpc/pub.svc.annotation.listByAuthor?annotatorDid={BOB}")).await;
    assert_eq!(by_bob["total"], 1);
}

#[tokio::test]
async fn endorsements_summary_and_list() {
    let mut f = scholarly();
    let p1 = enc(&paper("p1"));
    let (status, summary) = f.get(&format!("/xrpc/pub.svc.endorsement.getSummary?uri={p1}")).await;
    assert_eq!(status, StatusCode::OK, "{summary}");
    assert_eq!(summary["totalEndorsements"], 2);
    assert_eq!(summary["endorserCount"], 2);
    assert_eq!(summary["byContribution"], json!({"empirical": 2, "methodological": 1}));
    let (_, list) = f.get(&format!("/xrpc/pub.svc.endorsement.listForEprint?uri={p1}&contributionType=methodological")).await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["endorsements"][0]["endorser"]["did"], BOB);
    assert_eq!(list["summary"]["totalEndorsements"], 2);
    // Per endorser, and on an author's papers (beyond the contract).
    let (_, mine) = f.get(&format!("/xrpc/pub.svc.endorsement.listForUser?endorserDid={BOB}")).await;
    assert_eq!((&mine["total"], &mine["endorsements"][0]["eprintUri"]), (&json!(1), &json!(paper("p1"))), "{mine}");
    let (_, typed) = f.get(&format!("/xrpc/pub.svc.endorsement.listForUser?endorserDid={CAROL}&contributionType=methodological")).await;
    assert_eq!(typed["total"], 0, "{typed}");
    let (_, typed) = f.get(&format!("/xrpc/pub.svc.endorsement.listForUser?endorserDid={CAROL}&contributionType=empirical")).await;
    assert_eq!(typed["total"], 1, "{typed}");
    let (_, on_papers) = f.get(&format!("/xrpc/pub.svc.endorsement.listForAuthorPapers?authorDid={ALICE}&limit=1")).await;
    assert_eq!(
        (&on_papers["total"], &on_papers["hasMore"], on_papers["endorsements"].as_array().map(Vec::len)),
        (&json!(2), &json!(true), Some(1)),
        "{on_papers}"
    );
    let (_, none) = f.get(&format!("/xrpc/pub.svc.endorsement.listForAuthorPapers?authorDid={BOB}")).await;
    assert_eq!(none["total"], 0);
    assert_eq!(f.get("/xrpc/pub.svc.endorsement.listForUser?endorserDid=bob").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(f.get("/xrpc/pub.svc.endorsement.listForAuthorPapers").await.0, StatusCode::BAD_REQUEST);

    // An account endorsing twice is one endorser; it stops being one with its last record.
    f.apply(vec![create(
        BOB,
        "pub.svc.review.endorsement",
        "n3",
        "3l0000000000y",
        json!({
        "eprintUri": paper("p1"), "contributions": ["data"], "createdAt": "2024-07-20T00:00:00Z"}),
    )]);
    let (_, summary) = f.get(&format!("/xrpc/pub.svc.endorsement.getSummary?uri={p1}")).await;
    assert_eq!((&summary["totalEndorsements"], &summary["endorserCount"]), (&json!(3), &json!(2)), "{summary}");
    let bob = summary["endorsers"].as_array().unwrap().iter().find(|e| e["did"] == BOB).unwrap().clone();
    assert_eq!(bob["contributions"].as_array().map(Vec::len), Some(3), "{bob}");
    f.apply(vec![delete(BOB, "pub.svc.review.endorsement", "n1", "3l0000000000z")]);
    let (_, summary) = f.get(&format!("/xrpc/pub.svc.endorsement.getSummary?uri={p1}")).await;
    assert_eq!((&summary["endorserCount"], &summary["byContribution"]["data"]), (&json!(2), &json!(1)), "{summary}");
    f.apply(vec![delete(BOB, "pub.svc.review.endorsement", "n3", "3l0000000000z")]);
    let (_, summary) = f.get(&format!("/xrpc/pub.svc.endorsement.getSummary?uri={p1}")).await;
    assert_eq!((&summary["totalEndorsements"], &summary["endorserCount"]), (&json!(1), &json!(1)), "{summary}");
    assert_eq!(summary["endorsers"][0]["did"], CAROL);
}

#[tokio::test]
async fn tags_in_every_form_are_one_tag() {
    let mut f = scholarly();
    let (_, on_p1) = f.get(&format!("/xrpc/pub.svc.tag.listForEprint?uri={}", enc(&paper("p1")))).await;
    let tags = on_p1["tags"].as_array().unwrap();
    assert_eq!(tags.len(), 2);
    assert!(tags.iter().all(|t| t["normalizedForm"] == "machine-learning"));
    // p2 shares the tag and adds "retrieval": a co-occurrence suggestion for p1.
    let suggestion = &on_p1["suggestions"][0];
    assert_eq!(
        (&suggestion["normalizedForm"], &suggestion["matchedTerm"], &suggestion["confidence"], &suggestion["source"]),
        (&json!("retrieval"), &json!("machine-learning"), &json!(100), &json!("cooccurrence")),
        "{on_p1}"
    );
    let (_, on_p2) = f.get(&format!("/xrpc/pub.svc.tag.listForEprint?uri={}", enc(&paper("p2")))).await;
    assert_eq!(on_p2["suggestions"], json!([]), "p2 holds every tag that co-occurs: {on_p2}");
    let (_, for_p1) = f.get(&format!("/xrpc/pub.svc.tag.getSuggestions?uri={}", enc(&paper("p1")))).await;
    assert_eq!(for_p1["suggestions"][0]["displayForm"], "retrieval", "{for_p1}");

    let (status, detail) = f.get("/xrpc/pub.svc.tag.getDetail?tag=Machine%20Learning").await;
    assert_eq!(status, StatusCode::OK, "{detail}");
    assert_eq!(
        (detail["usageCount"].as_u64(), detail["eprintCount"].as_u64(), detail["taggerCount"].as_u64()),
        (Some(3), Some(2), Some(2))
    );
    assert!(detail["qualityScore"].as_u64().unwrap() > 0);
    let (_, found) = f.get("/xrpc/pub.svc.tag.search?q=learn").await;
    assert_eq!(found["tags"][0]["normalizedForm"], "machine-learning", "{found}");
    let (_, none) = f.get("/xrpc/pub.svc.tag.search?query=learn&minQuality=100").await;
    assert_eq!(none["total"], 0);
    let (_, suggestions) = f.get("/xrpc/pub.svc.tag.getSuggestions?q=ret").await;
    assert_eq!(suggestions["suggestions"][0]["normalizedForm"], "retrieval");
    // Search narrowed to a tag, in any of its forms (svc's extension).
    let (status, tagged) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&tags=Machine%20Learning").await;
    assert_eq!((status, tagged["total"].as_u64()), (StatusCode::OK, Some(2)), "{tagged}");
    let (_, retrieval) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&tag=%23retrieval").await;
    assert_eq!(retrieval["total"], 1, "{retrieval}");
    assert_eq!(retrieval["submissions"][0]["uri"], paper("p2"));
    let (_, none) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&tags=nobody-uses-this").await;
    assert_eq!(none["total"], 0);
    // Most cited first: p2 cites p1.
    let (_, cited) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&sortBy=citations").await;
    let order: Vec<&str> = cited["submissions"].as_array().unwrap().iter().filter_map(|s| s["uri"].as_str()).collect();
    assert_eq!(order, [paper("p1"), paper("p2")], "{cited}");
    f.apply(vec![delete(ALICE, "pub.svc.eprint.citation", "c1", "3l0000000000p")]);
    let (_, cited) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&sortBy=citations").await;
    let order: Vec<&str> = cited["submissions"].as_array().unwrap().iter().filter_map(|s| s["uri"].as_str()).collect();
    assert_eq!(order, [paper("p2"), paper("p1")], "the citation withdrawn, nothing is cited: the newest first {cited}");
    // The eprints of a tag (beyond the contract), newest first, in pages.
    let (status, listed) = f.get("/xrpc/pub.svc.tag.listEprints?tag=%23machine_learning&limit=1").await;
    assert_eq!((status, &listed["total"], &listed["eprints"][0]["uri"]), (StatusCode::OK, &json!(2), &json!(paper("p2"))), "{listed}");
    let cursor = listed["cursor"].as_str().unwrap();
    let (_, rest) = f.get(&format!("/xrpc/pub.svc.tag.listEprints?tag=machine-learning&limit=1&cursor={}", enc(cursor))).await;
    assert_eq!((&rest["eprints"][0]["uri"], rest.get("cursor")), (&json!(paper("p1")), None), "{rest}");
    let (status, e) = f.get("/xrpc/pub.svc.tag.listEprints?tag=nobody-uses-this").await;
    assert_eq!((status, e["error"].as_str()), (StatusCode::NOT_FOUND, Some("TagNotFound")));
    assert_eq!(f.get("/xrpc/pub.svc.tag.listEprints?tag=%23%23").await.0, StatusCode::BAD_REQUEST);
    assert_eq!(f.get("/xrpc/pub.svc.tag.listEprints").await.0, StatusCode::BAD_REQUEST);
    let (status, trending) = f.get("/xrpc/pub.svc.tag.getTrending?timeWindow=month").await;
    assert_eq!(status, StatusCode::OK, "{trending}");
    assert_eq!(trending["timeWindow"], "month");
    // p2 losing its machine-learning tag shares no tag with p1 any more: no suggestion.
    f.apply(vec![delete(CAROL, "pub.svc.eprint.userTag", "t3", "3l0000000000z")]);
    let (_, on_p1) = f.get(&format!("/xrpc/pub.svc.tag.listForEprint?uri={}", enc(&paper("p1")))).await;
    assert_eq!(on_p1["suggestions"], json!([]), "{on_p1}");
}

#[tokio::test]
async fn citations_related_works_and_the_citation_graph() {
    let f = scholarly();
    let (_, citations) = f.get(&format!("/xrpc/pub.svc.eprint.listCitations?uri={}", enc(&paper("p2")))).await;
    assert_eq!(citations["total"], 1, "{citations}");
    assert_eq!(citations["citations"][0]["citedWork"]["title"], "Sparse Transformers");
    let (_, related) = f.get(&format!("/xrpc/pub.svc.eprint.listRelatedWorks?eprintUri={}", enc(&paper("p2")))).await;
    assert_eq!(related["relatedWorks"][0]["targetTitle"], "Sparse Transformers", "{related}");
    assert_eq!(related["relatedWorks"][0]["curatorDid"], ALICE);
    let (_, cited) = f.get(&format!("/xrpc/pub.svc.discovery.getCitations?uri={}&direction=cited", enc(&paper("p1")))).await;
    assert_eq!(cited["counts"], json!({"citing": 0, "cited": 1}), "{cited}");
    assert_eq!(cited["citations"][0]["eprintUri"], paper("p2"));
    let (status, _) = f.get(&format!("/xrpc/pub.svc.discovery.getCitations?uri={}", enc(&paper("nope")))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn author_profile() {
    let f = scholarly();
    let (status, bob) = f.get(&format!("/xrpc/pub.svc.author.getProfile?did={BOB}")).await;
    assert_eq!(status, StatusCode::OK, "{bob}");
    assert_eq!(bob["profile"]["displayName"], "Bob Reviewer");
    assert_eq!(bob["metrics"]["reviewCount"], 1);
    assert_eq!(bob["metrics"]["endorsementCount"], 1);
    let (_, alice) = f.get(&format!("/xrpc/pub.svc.author.getProfile?did={ALICE}")).await;
    assert_eq!(alice["metrics"]["eprintCount"], 2);
    assert_eq!(alice["eprints"].as_array().unwrap().len(), 2);
    let (status, _) = f.get("/xrpc/pub.svc.author.getProfile?did=did:plc:nobody").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Author search (beyond the contract) finds Bob by his profile's name.
    let (status, found) = f.get("/xrpc/pub.svc.author.searchAuthors?q=Bob%20rev").await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(found, json!({"authors": [{"did": BOB, "handle": "handle.invalid", "displayName": "Bob Reviewer", "eprintCount": 0}]}));
    let (_, none) = f.get("/xrpc/pub.svc.author.searchAuthors?q=carol").await;
    assert_eq!(none, json!({"authors": []}));
    for bad in ["", "?q=%20", "?q=bob&cursor=not-a-cursor", "?q=bob&limit=0", "?q=bob&limit=101"] {
        let (status, body) = f.get(&format!("/xrpc/pub.svc.author.searchAuthors{bad}")).await;
        assert_eq!((status, &body["error"]), (StatusCode::BAD_REQUEST, &json!("InvalidRequest")), "{bad}: {body}");
    }
}

#[tokio::test]
async fn updates_deletes_stale_revisions_invalid_records_and_deleted_accounts() {
    let mut f = scholarly();
    let p1 = enc(&paper("p1"));
    // An update moves the review to another motivation; an older revision replayed later is skipped.
    f.apply(vec![
        update(BOB, "pub.svc.review.comment", "r1", "3l0000000000z", json!({
            "eprintUri": paper("p1"), "body": body("Revised: convincing."), "motivationFallback": "questioning", "createdAt": "2024-07-01T00:00:00Z"})),
        update(BOB, "pub.svc.review.comment", "r1", "3l0000000000y", json!({
            "eprintUri": paper("p1"), "body": body("stale"), "createdAt": "2024-07-01T00:00:00Z"})),
    ]);
    let (_, q) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={p1}&motivation=questioning")).await;
    assert_eq!(q["reviews"][0]["content"], "Revised: convincing.", "{q}");
    let (_, c) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={p1}&motivation=commenting")).await;
    assert_eq!(c["total"], 0);

    // A delete removes the tag from every listing; a delete older than the record is skipped.
    f.apply(vec![
        delete(BOB, "pub.svc.eprint.userTag", "t1", "3l0000000000x"),
        delete(CAROL, "pub.svc.eprint.userTag", "t2", "3l0000000000a"),
    ]);
    let (_, tags) = f.get(&format!("/xrpc/pub.svc.tag.listForEprint?uri={p1}")).await;
    assert_eq!(tags["tags"].as_array().unwrap().len(), 1, "{tags}");

    // An invalid record is a dead letter.
    f.apply(vec![
        create(
            BOB,
            "pub.svc.review.endorsement",
            "bad",
            "3l0000000001a",
            json!({"eprintUri": paper("p1"), "contributions": [], "createdAt": "2024-07-07T00:00:00Z"}),
        ),
        create(
            ALICE,
            "pub.svc.review.endorsement",
            "twice",
            "3l0000000001b",
            json!({"eprintUri": paper("p1"), "contributions": ["data", "data"], "createdAt": "2024-07-07T00:00:00Z"}),
        ),
    ]);
    let version = store::Store::active_version(f.state.store.as_ref(), "attached").unwrap().unwrap();
    let dead = projections::deadletter::list(f.state.store.as_ref(), "attached", version, 10).unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");
    assert!(dead[0].reason.contains("contributions") && dead[1].reason.contains("twice"), "{dead:?}");

    // A deleted account's records leave every listing.
    f.apply(vec![NewEvent::repo(
        Source::Manual { note: "test".into() },
        Payload::Account(AccountChange { did: CAROL.into(), active: false, status: Some(AccountStatus::Deleted) }),
    )]);
    let (_, summary) = f.get(&format!("/xrpc/pub.svc.endorsement.getSummary?uri={p1}")).await;
    assert_eq!(summary["totalEndorsements"], 1, "{summary}");
    let (_, retrieval) = f.get("/xrpc/pub.svc.tag.getDetail?tag=retrieval").await;
    assert_eq!(retrieval["error"], "TagNotFound");
}

#[tokio::test]
async fn a_taken_down_account_is_hidden_from_every_listing() {
    let mut f = scholarly();
    f.apply(vec![NewEvent::repo(
        Source::Manual { note: "test".into() },
        Payload::Account(AccountChange { did: BOB.into(), active: false, status: Some(AccountStatus::Takendown) }),
    )]);
    let (_, reviews) = f.get(&format!("/xrpc/pub.svc.review.listForEprint?eprintUri={}", enc(&paper("p1")))).await;
    assert!(reviews["reviews"].as_array().unwrap().iter().all(|r| r["author"]["did"] != BOB), "{reviews}");
    let (status, _) = f.get(&format!("/xrpc/pub.svc.author.getProfile?did={BOB}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_eprint_detail_counts_what_is_attached_and_lists_its_history() {
    let mut f = scholarly();
    let path = format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&paper("p1")));
    let (status, body) = f.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["counts"],
        json!({"reviews": 3, "annotations": 2, "endorsements": 2, "tags": 2, "citations": 0, "relatedWorks": 0, "citedBy": 1})
    );
    assert_eq!(body["metrics"]["citations"], 1);
    assert_eq!(body["versions"][0]["versionNumber"], 2);
    assert_eq!(body["changelogs"][0]["sections"][0]["category"], "corrections");
    // The changelogs on their own (beyond the contract).
    let changelog = format!("at://{ALICE}/pub.svc.eprint.changelog/l1");
    let (status, one) = f.get(&format!("/xrpc/pub.svc.eprint.getChangelog?uri={}", enc(&changelog))).await;
    assert_eq!((status, &one["version"]["minor"], &one["author"]["did"]), (StatusCode::OK, &json!(1), &json!(ALICE)), "{one}");
    let (_, listed) = f.get(&format!("/xrpc/pub.svc.eprint.listChangelogs?eprintUri={}", enc(&paper("p1")))).await;
    assert_eq!((&listed["total"], &listed["changelogs"][0]["uri"]), (&json!(1), &json!(changelog)), "{listed}");
    let review = format!("at://{BOB}/pub.svc.review.comment/r1");
    assert_eq!(f.get(&format!("/xrpc/pub.svc.eprint.getChangelog?uri={}", enc(&review))).await.0, StatusCode::NOT_FOUND);
    assert_eq!(f.get("/xrpc/pub.svc.eprint.getChangelog?uri=nope").await.0, StatusCode::BAD_REQUEST);
    f.apply(vec![delete(BOB, "pub.svc.eprint.userTag", "t1", "3l0000000000x")]);
    let (_, body) = f.get(&path).await;
    assert_eq!(body["counts"]["tags"], 1);
}

fn backlink(source: &str, kind: &str, target: &str, deleted: bool) -> NewEvent {
    NewEvent {
        key: source.into(),
        source: Source::Command { nsid: "pub.svc.backlink.create".into(), caller: BOB.into(), host: "http://svc.test".into() },
        payload: Payload::Backlink(event_schema::BacklinkChange {
            source_uri: source.into(),
            source_type: kind.into(),
            target_uri: target.into(),
            context: Some("worth reading".into()),
            deleted,
            caller: BOB.into(),
        }),
    }
}

#[tokio::test]
async fn backlinks_are_listed_counted_and_softly_deleted() {
    let mut f = scholarly();
    let post = format!("at://{BOB}/app.bsky.feed.post/3l0000000000a");
    let list = format!("at://{CAROL}/pub.leaflet.list/3l0000000000b");
    f.apply(vec![backlink(&post, "bluesky.post", &paper("p1"), false), backlink(&list, "leaflet.list", &paper("p1"), false)]);
    let p1 = enc(&paper("p1"));
    let (status, counts) = f.get(&format!("/xrpc/pub.svc.backlink.getCounts?targetUri={p1}")).await;
    assert_eq!(status, StatusCode::OK, "{counts}");
    assert_eq!((counts["total"].as_u64(), counts["blueskyPosts"].as_u64(), counts["leafletLists"].as_u64()), (Some(2), Some(1), Some(1)));
    let (_, listed) = f.get(&format!("/xrpc/pub.svc.backlink.list?uri={p1}&sourceType=bluesky.post")).await;
    assert_eq!(listed["backlinks"][0]["sourceUri"], post.as_str(), "{listed}");
    let id = listed["backlinks"][0]["id"].as_i64().unwrap();
    // A delete is soft: the backlink leaves the answers; a re-created one keeps its id.
    f.apply(vec![backlink(&post, "bluesky.post", &paper("p1"), true)]);
    let (_, counts) = f.get(&format!("/xrpc/pub.svc.backlink.getCounts?targetUri={p1}")).await;
    assert_eq!(counts["total"], 1);
    f.apply(vec![backlink(&post, "bluesky.post", &paper("p1"), false)]);
    let (_, listed) = f.get(&format!("/xrpc/pub.svc.backlink.list?targetUri={p1}&sourceType=bluesky.post")).await;
    assert_eq!(listed["backlinks"][0]["id"].as_i64(), Some(id));
    assert_eq!(f.get(&format!("/xrpc/pub.svc.backlink.getCounts?targetUri={p1}")).await.1["total"], 2, "counted again");
    // In pages, by source URI.
    let (_, first) = f.get(&format!("/xrpc/pub.svc.backlink.list?targetUri={p1}&limit=1")).await;
    assert_eq!((&first["hasMore"], &first["backlinks"][0]["sourceUri"]), (&json!(true), &json!(post)), "{first}");
    let cursor = enc(first["cursor"].as_str().unwrap());
    let (_, second) = f.get(&format!("/xrpc/pub.svc.backlink.list?targetUri={p1}&limit=1&cursor={cursor}")).await;
    assert_eq!((&second["hasMore"], &second["backlinks"][0]["sourceUri"]), (&json!(false), &json!(list)), "{second}");
    // Creating and deleting need a verified caller.
    let (status, body) = f
        .call(
            axum::http::Method::POST,
            "/xrpc/pub.svc.backlink.create",
            Some(json!({"sourceUri": post, "sourceType": "other", "targetUri": paper("p1")})),
        )
        .await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::UNAUTHORIZED, Some("AuthRequired")));
}

#[tokio::test]
async fn search_counts_facets_and_marks_the_matched_words() {
    let f = scholarly();
    let (status, body) =
        f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=transformers&facets=fields&facets=year&facets=author&highlight=true").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["total"], 1);
    assert_eq!(body["facets"]["fields"], json!([{"value": "cs.LG", "count": 1}]));
    assert_eq!(body["facets"]["year"], json!([{"value": 2024, "count": 1}]));
    assert_eq!(body["facets"]["author"][0]["value"], ALICE);
    assert_eq!(body["highlights"][0]["title"], "Sparse <mark>Transformers</mark>", "{body}");
    assert!(body["highlights"][0]["abstract"].as_str().unwrap().contains("<mark>Transformers</mark>"), "{body}");
    let (_, all) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&facets=year").await;
    assert_eq!(all["facets"]["year"], json!([{"value": 2024, "count": 2}]));
    assert!(all.get("highlights").is_none());
    // Tags count eprints, in their normalized form, whatever form each tagger wrote.
    let (_, tagged) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=*&facets=tags").await;
    assert_eq!(
        tagged["facets"]["tags"],
        json!([{"value": "machine-learning", "count": 2}, {"value": "retrieval", "count": 1}]),
        "{tagged}"
    );
    let (_, one) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=transformers&facets=tags").await;
    assert_eq!(one["facets"]["tags"], json!([{"value": "machine-learning", "count": 1}]), "{one}");
    let (status, _) = f.get("/xrpc/pub.svc.eprint.searchSubmissions?query=x&facets=colour").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
