//! `pub.svc.discovery.getSimilar` in process: each signal finds the eprint it should (text,
//! shared author, direct citation, co-citation, bibliographic coupling, shared fields), the
//! request's weights and types choose among them, collaborative is reported unavailable,
//! and bad input is refused.

use crate::support;

use axum::http::StatusCode;
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const BOB: &str = "did:plc:bob00000000000000000000";

fn uri(did: &str, rkey: &str) -> String {
    format!("at://{did}/pub.svc.eprint.submission/{rkey}")
}

fn paper(title: &str, did: &str, field: &str) -> Value {
    let mut p = submission(title, did, "2025-01-01T00:00:00Z");
    p["fields"] = json!([field]);
    p
}

fn cites(did: &str, rkey: &str, from: &str, to: &str) -> event_schema::NewEvent {
    create(
        did,
        "pub.svc.eprint.citation",
        rkey,
        "3l0000000000z",
        json!({"eprintUri": from, "citedWork": {"title": "a work", "svcUri": to}, "citationType": "cites", "createdAt": "2025-02-01T00:00:00Z"}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_signal_finds_its_eprint_and_the_weights_choose() {
    let mut f = Fixture::new();
    let sub = "pub.svc.eprint.submission";
    f.apply(vec![
        create(ALICE, sub, "p1", "3l0000000000a", paper("Sparse Attention Transformers", ALICE, "cs.LG")),
        create(BOB, sub, "p2", "3l0000000000a", paper("Sparse Attention for Long Documents", BOB, "cs.LG")),
        create(ALICE, sub, "p3", "3l0000000000b", paper("Bounds on Graph Colourings", ALICE, "math.CO")),
        create(BOB, sub, "p4", "3l0000000000b", paper("Quantum Error Correction", BOB, "quant-ph")),
        create(BOB, sub, "p5", "3l0000000000c", paper("Protein Folding Dynamics", BOB, "q-bio.BM")),
        create(BOB, sub, "p6", "3l0000000000d", paper("Galaxy Rotation Curves", BOB, "astro-ph.GA")),
        create(BOB, sub, "p7", "3l0000000000e", paper("Turbulent Flows in Pipes", BOB, "physics.flu-dyn")),
        // p4 cites p1 and p5: p5 is co-cited with p1. p1 and p6 both cite p7: coupled.
        cites(BOB, "c1", &uri(BOB, "p4"), &uri(ALICE, "p1")),
        cites(BOB, "c2", &uri(BOB, "p4"), &uri(BOB, "p5")),
        cites(ALICE, "c3", &uri(ALICE, "p1"), &uri(BOB, "p7")),
        cites(BOB, "c4", &uri(BOB, "p6"), &uri(BOB, "p7")),
    ]);
    let similar = |query: String| {
        let f = &f;
        async move {
            let (status, body) = f.get(&format!("/xrpc/pub.svc.discovery.getSimilar?uri={}&limit=20{query}", enc(&uri(ALICE, "p1")))).await;
            assert_eq!(status, StatusCode::OK, "{query}: {body}");
            body
        }
    };
    let all = similar(String::new()).await;
    let reasons = |body: &Value, rkey: &str| -> Vec<String> {
        let entry = body["related"].as_array().unwrap().iter().find(|r| r["uri"].as_str().unwrap().ends_with(&format!("/{rkey}")));
        entry.map(|e| e["reasons"].as_array().unwrap().iter().map(|r| r.as_str().unwrap().to_owned()).collect()).unwrap_or_default()
    };
    assert!(reasons(&all, "p2").contains(&"semantic".to_owned()), "{all}");
    assert!(reasons(&all, "p2").contains(&"topic".to_owned()), "{all}");
    assert_eq!(reasons(&all, "p3"), ["author"], "{all}");
    assert_eq!(reasons(&all, "p4"), ["citation"], "{all}");
    assert_eq!(reasons(&all, "p5"), ["co-citation"], "{all}");
    assert_eq!(reasons(&all, "p6"), ["bibliographic-coupling"], "{all}");
    assert_eq!(reasons(&all, "p7"), ["citation"], "{all}");
    assert!(!all["related"].to_string().contains("/p1\""), "not itself: {all}");
    assert_eq!(
        (
            &all["eprint"]["title"],
            &all["signals"]["semantic"],
            &all["signals"]["collaborative"].as_str().map(|s| s.starts_with("unavailable"))
        ),
        (&json!("Sparse Attention Transformers"), &json!("computed"), &Some(true))
    );
    let scores: Vec<f64> = all["related"].as_array().unwrap().iter().map(|r| r["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]) && scores.iter().all(|s| *s > 0.0 && *s <= 1.0), "{scores:?}");

    // Only the author network: Alice's other paper alone.
    let authors = similar("&includeTypes=author".into()).await;
    assert_eq!(authors["related"].as_array().unwrap().len(), 1, "{authors}");
    assert_eq!((&authors["related"][0]["uri"], &authors["signals"]["semantic"]), (&json!(uri(ALICE, "p3")), &json!("not asked")));
    // Text alone ranks the text match first.
    let text = similar("&weightSemantic=100&weightCoCitation=0&weightConceptOverlap=0&weightAuthorNetwork=0".into()).await;
    assert_eq!(text["related"][0]["uri"], json!(uri(BOB, "p2")), "{text}");
    let (_, limited) = f.get(&format!("/xrpc/pub.svc.discovery.getSimilar?uri={}&limit=2", enc(&uri(ALICE, "p1")))).await;
    assert_eq!(limited["related"].as_array().map(Vec::len), Some(2), "{limited}");
    assert_eq!(limited["related"][0], all["related"][0]);

    for (query, status) in [
        (format!("?uri={}", enc(&uri(ALICE, "nope"))), StatusCode::NOT_FOUND),
        ("".to_owned(), StatusCode::BAD_REQUEST),
        (format!("?uri={}&limit=21", enc(&uri(ALICE, "p1"))), StatusCode::BAD_REQUEST),
        (format!("?uri={}&includeTypes=vibes", enc(&uri(ALICE, "p1"))), StatusCode::BAD_REQUEST),
        (format!("?uri={}&weightSemantic=101", enc(&uri(ALICE, "p1"))), StatusCode::BAD_REQUEST),
    ] {
        let (got, body) = f.get(&format!("/xrpc/pub.svc.discovery.getSimilar{query}")).await;
        assert_eq!(got, status, "{query}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recommendations_follow_what_the_caller_engaged_with_and_a_dismissal_holds() {
    let mut f = Fixture::new();
    let sub = "pub.svc.eprint.submission";
    const CAROL: &str = "did:plc:carol0000000000000000000";
    f.apply(vec![
        create(ALICE, sub, "p1", "3l0000000000a", paper("Sparse Attention Transformers", ALICE, "cs.LG")),
        create(BOB, sub, "p2", "3l0000000000a", paper("Sparse Attention for Long Documents", BOB, "cs.LG")),
        create(BOB, sub, "p3", "3l0000000000b", paper("Efficient Sparse Attention Kernels", BOB, "cs.LG")),
        create(BOB, sub, "p4", "3l0000000000c", paper("Protein Folding Dynamics", BOB, "q-bio.BM")),
        create(CAROL, sub, "c1", "3l0000000000a", paper("Notes on Graph Colourings", CAROL, "math.CO")),
    ]);
    f.live();
    let carol = login(&f, CAROL, "carol-1").await;
    let recommended = |token: String| {
        let f = &f;
        async move {
            let (status, body) = f.get_as("/xrpc/pub.svc.discovery.getRecommendations?limit=10", &token).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["recommendations"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
        }
    };
    // Carol views p1: its likes come, p1 itself and her own paper do not.
    let (status, answer) =
        f.post_as("/xrpc/pub.svc.discovery.recordInteraction", Some(&carol), json!({"eprintUri": uri(ALICE, "p1"), "type": "view"})).await;
    assert_eq!((status, answer), (StatusCode::OK, json!({"recorded": true})));
    let first = recommended(carol.clone()).await;
    assert!(first.contains(&uri(BOB, "p2")) && first.contains(&uri(BOB, "p3")), "{first:?}");
    assert!(!first.contains(&uri(ALICE, "p1")) && !first.contains(&uri(CAROL, "c1")), "{first:?}");
    let (_, body) = f.get_as("/xrpc/pub.svc.discovery.getRecommendations?limit=1", &carol).await;
    assert!(body["recommendations"][0]["reason"].as_str().unwrap().contains("Sparse Attention Transformers"), "{body}");
    assert_eq!(body["cursor"], json!("1"));
    // Dismissed (the contract's `uri`): it does not come back.
    let (status, _) =
        f.post_as("/xrpc/pub.svc.discovery.recordInteraction", Some(&carol), json!({"uri": uri(BOB, "p2"), "type": "dismiss"})).await;
    assert_eq!(status, StatusCode::OK);
    let after = recommended(carol.clone()).await;
    assert!(!after.contains(&uri(BOB, "p2")) && after.contains(&uri(BOB, "p3")), "{after:?}");
    // Bad input and no credential.
    for (body, status) in [
        (json!({"eprintUri": uri(BOB, "nope"), "type": "view"}), StatusCode::NOT_FOUND),
        (json!({"eprintUri": uri(BOB, "p3"), "type": "stare"}), StatusCode::BAD_REQUEST),
        (json!({"type": "view"}), StatusCode::BAD_REQUEST),
    ] {
        let (got, answer) = f.post_as("/xrpc/pub.svc.discovery.recordInteraction", Some(&carol), body.clone()).await;
        assert_eq!(got, status, "{body}: {answer}");
    }
    assert_eq!(f.get("/xrpc/pub.svc.discovery.getRecommendations").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(f.get_as("/xrpc/pub.svc.discovery.getRecommendations?cursor=x", &carol).await.0, StatusCode::BAD_REQUEST);
}
