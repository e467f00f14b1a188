//! `pub.svc.metrics.*` in process: uses recorded through the log and counted by COUNTER's
//! rules (robots apart, double clicks once, viewers by pseudonym), read back as counts,
//! windows and trending, now and as of a past time; `getSubmission` reports the counts; a
//! hostile client is held to its limit; bad input is refused in the envelope.

use crate::support;

use axum::body::Body as HttpBody;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";
const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const CHROME: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

fn paper(rkey: &str) -> String {
    format!("at://{ALICE}/pub.svc.eprint.submission/{rkey}")
}

/// `POST /xrpc/pub.svc.metrics.<method>` with `body`, as a client with `agent`.
async fn record(f: &Fixture, method: &str, agent: &str, token: Option<&str>, body: Value) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(format!("/xrpc/pub.svc.metrics.{method}"))
        .header("content-type", "application/json")
        .header("user-agent", agent);
    if let Some(t) = token {
        request = request.header("authorization", format!("Bearer {t}"));
    }
    let (status, _, json) = f.send(request.body(HttpBody::from(body.to_string())).unwrap()).await;
    (status, json)
}

async fn view(f: &Fixture, rkey: &str, agent: &str) -> StatusCode {
    record(f, "recordView", agent, None, json!({"uri": paper(rkey)})).await.0
}

async fn get(f: &Fixture, path: &str) -> Value {
    let (status, body) = f.get(path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

fn setup() -> Fixture {
    let mut f = Fixture::new();
    let mut maths = submission("Graph Colourings", ALICE, "2025-01-02T00:00:00Z");
    maths["fields"] = json!(["math.CO"]);
    f.apply(vec![
        create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", submission("Sparse Transformers", ALICE, "2025-01-01T00:00:00Z")),
        create(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000b", maths),
        create(
            ALICE,
            "pub.svc.review.comment",
            "r1",
            "3l0000000000c",
            json!({"eprintUri": paper("p1"), "body": [{"type": "text", "content": "Good."}], "createdAt": "2025-01-03T00:00:00Z"}),
        ),
    ]);
    f.live();
    f
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uses_are_recorded_counted_by_the_rules_and_read_back() {
    let f = setup();
    let before = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    // Uses answer once in the log; the counts follow.
    let count = |rkey: &'static str| {
        let f = &f;
        async move {
            f.settled("usage").await;
            get(f, &format!("/xrpc/pub.svc.metrics.getViewCount?uri={}", enc(&paper(rkey)))).await["count"].clone()
        }
    };

    // A view, the same viewer again (a double click), another browser (another viewer).
    let (status, body) = record(&f, "recordView", FIREFOX, None, json!({"uri": paper("p1"), "source": "search"})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"success": true})));
    assert_eq!(count("p1").await, json!(1));
    assert_eq!(view(&f, "p1", FIREFOX).await, StatusCode::OK);
    assert_eq!(count("p1").await, json!(1));
    assert_eq!(view(&f, "p1", CHROME).await, StatusCode::OK);
    assert_eq!(count("p1").await, json!(2));
    // A robot is recorded and not counted.
    assert_eq!(view(&f, "p1", GOOGLEBOT).await, StatusCode::OK);
    assert_eq!(count("p1").await, json!(2));
    // A signed-in reader is one viewer wherever from; a viewerDid not the caller's is not
    // believed (it would let anyone mint viewers).
    let alice = login(&f, ALICE, "alice-1").await;
    let (status, _) =
        record(&f, "recordView", FIREFOX, Some(&alice), json!({"uri": paper("p1"), "viewerDid": "did:plc:someoneelse"})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(count("p1").await, json!(3));
    let (status, _) = record(&f, "recordView", CHROME, Some(&alice), json!({"uri": paper("p1")})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(count("p1").await, json!(3));

    for (method, body) in [
        ("recordDownload", json!({"uri": paper("p1"), "format": "pdf"})),
        ("recordSearchClick", json!({"uri": paper("p1"), "query": "sparse", "position": 0})),
        ("recordSearchClick", json!({"uri": paper("p2"), "impressionId": "imp-1", "position": 3})),
        ("recordSearchDownload", json!({"uri": paper("p2"), "impressionId": "imp-1"})),
        ("recordDwellTime", json!({"uri": paper("p1"), "durationMs": 3000})),
        ("recordDwellTime", json!({"uri": paper("p1"), "impressionId": "imp-1", "dwellTimeMs": 1000})),
    ] {
        let (status, answer) = record(&f, method, CHROME, None, body.clone()).await;
        assert_eq!((status, answer), (StatusCode::OK, json!({"success": true})), "{method} {body}");
    }
    f.settled("usage").await;
    let m = get(&f, &format!("/xrpc/pub.svc.metrics.getMetrics?uri={}", enc(&paper("p1")))).await;
    assert_eq!(
        (&m["views"], &m["totalViews"], &m["uniqueViews"], &m["downloads"], &m["totalDownloads"]),
        (&json!(3), &json!(3), &json!(3), &json!(1), &json!(1)),
        "{m}"
    );
    assert_eq!(
        (&m["views24h"], &m["views7d"], &m["views30d"], &m["uniqueViewersIn"]["24h"]),
        (&json!(3), &json!(3), &json!(3), &json!(3)),
        "{m}"
    );
    assert_eq!((&m["reviews"], &m["endorsements"], &m["citations"]), (&json!(1), &json!(0), &json!(0)), "{m}");
    assert_eq!(
        (&m["robotRequests"], &m["doubleClicks"], &m["searchClicks"], &m["meanDwellTimeMs"]),
        (&json!(1), &json!(2), &json!(1), &json!(2000)),
        "{m}"
    );
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(m["history"]["views"], json!([{"date": today, "count": 3}]), "{m}");
    assert!(m.get("shares").is_none(), "nothing svc indexes records a share: {m}");
    // As of before any use: nothing yet.
    let then = get(&f, &format!("/xrpc/pub.svc.metrics.getMetrics?uri={}&asOf={}", enc(&paper("p1")), enc(&before))).await;
    assert_eq!((&then["views"], &then["downloads"], &then["history"]["views"]), (&json!(0), &json!(0), &json!([])), "{then}");

    // getSubmission reports the same counts.
    let detail = get(&f, &format!("/xrpc/pub.svc.eprint.getSubmission?uri={}", enc(&paper("p1")))).await;
    assert_eq!(detail["metrics"], json!({"views": 3, "downloads": 1, "citations": 0}), "{}", detail["metrics"]);

    // Trending: p1 (three views, a download) before p2 (a download from a search list).
    let t = get(&f, "/xrpc/pub.svc.metrics.getTrending?window=24h").await;
    let order: Vec<&str> = t["trending"].as_array().unwrap().iter().map(|e| e["title"].as_str().unwrap()).collect();
    assert_eq!(
        (order, &t["window"], &t["hasMore"]),
        (vec!["Sparse Transformers", "Graph Colourings"], &json!("24h"), &json!(false)),
        "{t}"
    );
    let score = t["trending"][0]["score"].as_f64().unwrap();
    assert!(score > 3.9 && score <= 4.0, "four uses just now: {t}");
    let uris = |v: &Value| v["trending"].as_array().unwrap().iter().map(|e| e["uri"].clone()).collect::<Vec<_>>();
    assert_eq!(uris(&get(&f, "/xrpc/pub.svc.metrics.getTrending?period=day").await), uris(&t));
    // The reader's fields first, marked; the contract's comma-separated form.
    let mine = get(&f, "/xrpc/pub.svc.metrics.getTrending?period=week&fieldUris=math.CO,q-bio.NC&limit=1").await;
    assert_eq!(
        (&mine["trending"][0]["title"], &mine["trending"][0]["inUserFields"], &mine["hasMore"]),
        (&json!("Graph Colourings"), &json!(true), &json!(true)),
        "{mine}"
    );
    let next = get(
        &f,
        &format!(
            "/xrpc/pub.svc.metrics.getTrending?period=week&fieldUris=math.CO,q-bio.NC&limit=1&cursor={}",
            mine["cursor"].as_str().unwrap()
        ),
    )
    .await;
    assert_eq!(
        (&next["trending"][0]["title"], &next["trending"][0]["inUserFields"], &next["hasMore"]),
        (&json!("Sparse Transformers"), &json!(false), &json!(false)),
        "{next}"
    );
    let past = get(&f, &format!("/xrpc/pub.svc.metrics.getTrending?asOf={}", enc(&before))).await;
    assert_eq!(past["trending"], json!([]), "{past}");

    // Admins see the same uses: the overview, the velocity, the series.
    query_api::xrpc::admin::bootstrap(&f.state, &[ALICE.to_owned()]).await.unwrap();
    let admin = login(&f, ALICE, "alice-admin").await;
    let admin_get = |path: String| {
        let (f, admin) = (&f, admin.clone());
        async move {
            let (status, body) = f.get_as(&path, &admin).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            body
        }
    };
    let overview = admin_get("/xrpc/pub.svc.admin.getMetricsOverview?days=1".into()).await;
    assert_eq!(
        (&overview["period"], &overview["periodInfo"]["days"], &overview["trending"][0]["uri"]),
        (&json!("24h"), &json!(1), &json!(paper("p1"))),
        "{overview}"
    );
    assert_eq!(admin_get("/xrpc/pub.svc.admin.getMetricsOverview?days=30".into()).await["period"], json!("30d"));
    let velocity = admin_get("/xrpc/pub.svc.admin.getTrendingVelocity?window=24h".into()).await;
    let first = &velocity["items"][0];
    assert_eq!(
        (&first["uri"], &first["views"], &first["downloads"], &first["velocity"], &first["trend"]),
        (&json!(paper("p1")), &json!(3), &json!(1), &json!(4.0), &json!("rising")),
        "{velocity}"
    );
    let series = admin_get("/xrpc/pub.svc.admin.getViewDownloadTimeSeries".into()).await;
    assert_eq!(
        (series["series"].as_array().map(Vec::len), &series["totalViews"], &series["totalDownloads"]),
        (Some(31), &json!(3), &json!(2)),
        "{series}"
    );
    let hourly = admin_get(format!("/xrpc/pub.svc.admin.getViewDownloadTimeSeries?uri={}&granularity=hour", enc(&paper("p1")))).await;
    assert_eq!((&hourly["uri"], &hourly["totalViews"], &hourly["totalDownloads"]), (&json!(paper("p1")), &json!(3), &json!(1)), "{hourly}");
    // Searches: each result list is an impression; a click names it; queries that found
    // nothing are counted.
    let search = |q: &'static str| {
        let f = &f;
        async move { get(f, &format!("/xrpc/pub.svc.eprint.searchSubmissions?impression=true&query={}", enc(q))).await }
    };
    // Without impression=true, a search records nothing and answers no id.
    assert!(get(&f, "/xrpc/pub.svc.eprint.searchSubmissions?query=sparse").await.get("impressionId").is_none());
    let found = search("sparse transformers").await;
    let impression = found["impressionId"].as_str().unwrap().to_owned();
    assert_eq!(found["total"], json!(1), "{found}");
    search("xyzzy  Nothing").await;
    let again = search("XYZZY nothing").await;
    assert_ne!(again["impressionId"], json!(impression));
    let (status, _) =
        record(&f, "recordSearchClick", FIREFOX, None, json!({"uri": paper("p1"), "impressionId": impression, "position": 2})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = record(&f, "recordSearchDownload", FIREFOX, None, json!({"uri": paper("p1"), "impressionId": impression})).await;
    assert_eq!(status, StatusCode::OK);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let analytics = loop {
        let a = admin_get("/xrpc/pub.svc.admin.getSearchAnalytics".into()).await;
        // Uses and impressions answer before they are applied: wait for all of them.
        let applied = a["impressions"] == 3 && a["clickedImpressions"] == 1 && a["searchDownloads"] == 2;
        if applied || std::time::Instant::now() > deadline {
            break a;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    // Two clicks before (no impression named) and this one; one of three impressions
    // clicked, at rank 3.
    assert_eq!(
        (
            &analytics["impressions"],
            &analytics["clicks"],
            &analytics["clickedImpressions"],
            &analytics["searchDownloads"],
            &analytics["zeroResults"]
        ),
        (&json!(3), &json!(3), &json!(1), &json!(2), &json!(2)),
        "{analytics}"
    );
    assert!((analytics["meanReciprocalRank"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-6, "{analytics}");
    assert!((analytics["clickThroughRate"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9, "{analytics}");
    assert_eq!(analytics["zeroResultQueries"], json!([{"query": "xyzzy nothing", "count": 2}]), "{analytics}");

    for (path, status) in [
        ("/xrpc/pub.svc.admin.getViewDownloadTimeSeries?granularity=hour&from=2020-01-01T00:00:00Z".to_owned(), StatusCode::BAD_REQUEST),
        (
            "/xrpc/pub.svc.admin.getViewDownloadTimeSeries?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z".to_owned(),
            StatusCode::BAD_REQUEST,
        ),
        (
            format!("/xrpc/pub.svc.admin.getViewDownloadTimeSeries?uri={}", enc(&format!("at://{ALICE}/pub.svc.eprint.submission/nope"))),
            StatusCode::NOT_FOUND,
        ),
        ("/xrpc/pub.svc.admin.getTrendingVelocity?window=1y".to_owned(), StatusCode::BAD_REQUEST),
        ("/xrpc/pub.svc.admin.getMetricsOverview?days=91".to_owned(), StatusCode::BAD_REQUEST),
    ] {
        let (got, body) = f.get_as(&path, &admin).await;
        assert_eq!(got, status, "{path}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_in_the_envelope() {
    let f = setup();
    let unknown = format!("at://{ALICE}/pub.svc.eprint.submission/nope");
    let review = format!("at://{ALICE}/pub.svc.review.comment/r1");
    let future = (chrono::Utc::now() + chrono::Duration::days(2)).to_rfc3339();
    for (method, body, status) in [
        ("recordView", json!({"uri": unknown}), StatusCode::NOT_FOUND),
        ("recordView", json!({"uri": review}), StatusCode::NOT_FOUND),
        ("recordView", json!({}), StatusCode::BAD_REQUEST),
        ("recordView", json!({"uri": "not a uri"}), StatusCode::BAD_REQUEST),
        ("recordDownload", json!({"uri": paper("p1"), "format": 7}), StatusCode::BAD_REQUEST),
        ("recordDwellTime", json!({"uri": paper("p1"), "durationMs": -5}), StatusCode::BAD_REQUEST),
        ("recordDwellTime", json!({"uri": paper("p1")}), StatusCode::BAD_REQUEST),
        ("recordSearchClick", json!({"uri": paper("p1")}), StatusCode::BAD_REQUEST),
        ("recordSearchClick", json!({"uri": paper("p1"), "position": -1}), StatusCode::BAD_REQUEST),
        ("recordSearchDownload", json!({"uri": paper("p1")}), StatusCode::BAD_REQUEST),
    ] {
        let (got, answer) = record(&f, method, FIREFOX, None, body.clone()).await;
        assert_eq!(got, status, "{method} {body}: {answer}");
        assert!(answer["error"].is_string() && answer["message"].is_string(), "{method} {body}: {answer}");
    }
    for (path, status) in [
        (format!("/xrpc/pub.svc.metrics.getMetrics?uri={}", enc(&unknown)), StatusCode::NOT_FOUND),
        (format!("/xrpc/pub.svc.metrics.getViewCount?uri={}", enc(&unknown)), StatusCode::NOT_FOUND),
        ("/xrpc/pub.svc.metrics.getMetrics".into(), StatusCode::BAD_REQUEST),
        (format!("/xrpc/pub.svc.metrics.getMetrics?uri={}&asOf={}", enc(&paper("p1")), enc(&future)), StatusCode::BAD_REQUEST),
        (format!("/xrpc/pub.svc.metrics.getMetrics?uri={}&asOf=yesterday", enc(&paper("p1"))), StatusCode::BAD_REQUEST),
        ("/xrpc/pub.svc.metrics.getTrending?window=5d".into(), StatusCode::BAD_REQUEST),
        ("/xrpc/pub.svc.metrics.getTrending?limit=0".into(), StatusCode::BAD_REQUEST),
        ("/xrpc/pub.svc.metrics.getTrending?cursor=%25%25".into(), StatusCode::BAD_REQUEST),
        (format!("/xrpc/pub.svc.metrics.getTrending?asOf={}", enc(&future)), StatusCode::BAD_REQUEST),
    ] {
        let (got, answer) = f.get(&path).await;
        assert_eq!(got, status, "{path}: {answer}");
        assert!(answer["error"].is_string(), "{path}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_views_from_one_viewer_count_once_and_the_excess_is_refused() {
    let mut f = Fixture::with_limits(query_api::identity::limits::LimitSettings { tiers: Some([1_000_000; 4]), ..Default::default() });
    f.apply(vec![create(
        ALICE,
        "pub.svc.eprint.submission",
        "p1",
        "3l0000000000a",
        submission("Sparse Transformers", ALICE, "2025-01-01T00:00:00Z"),
    )]);
    f.live();
    let mut answered = std::collections::BTreeMap::new();
    let started = std::time::Instant::now();
    for _ in 0..10_000 {
        *answered.entry(view(&f, "p1", FIREFOX).await).or_insert(0) += 1;
    }
    // The limit's burst, and one more per second it refilled while the loop ran.
    let burst = query_api::identity::viewers::USES_PER_MINUTE as i32;
    let accepted = answered.get(&StatusCode::OK).copied().unwrap_or(0);
    assert!(accepted >= burst && accepted <= burst + started.elapsed().as_secs() as i32 + 1, "{answered:?}");
    assert_eq!(answered.get(&StatusCode::TOO_MANY_REQUESTS), Some(&(10_000 - accepted)), "{answered:?}");
    // Another viewer is not held back by the first.
    assert_eq!(view(&f, "p1", CHROME).await, StatusCode::OK);
    f.settled("usage").await;
    let m = get(&f, &format!("/xrpc/pub.svc.metrics.getMetrics?uri={}", enc(&paper("p1")))).await;
    // Those recorded came within 30 s of each other: one click, and Chrome's.
    assert_eq!((&m["views"], &m["doubleClicks"], &m["uniqueViews"]), (&json!(2), &json!(accepted - 1), &json!(2)), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_accounts_eprints_leave_trending_and_the_pages_stay_full() {
    use event_schema::{AccountChange, AccountStatus, NewEvent, Payload, Source};
    const BOB: &str = "did:plc:bob00000000000000000000";
    let bobs = |rkey: &str| format!("at://{BOB}/pub.svc.eprint.submission/{rkey}");
    let mut f = setup();
    f.apply(vec![
        create(BOB, "pub.svc.eprint.submission", "b1", "3l0000000000d", submission("Bob's First", BOB, "2025-01-04T00:00:00Z")),
        create(BOB, "pub.svc.eprint.submission", "b2", "3l0000000000e", submission("Bob's Second", BOB, "2025-01-05T00:00:00Z")),
    ]);
    f.settled("eprints").await;
    f.settled("usage").await;
    // Alice's papers lead (three viewers each), Bob's follow (one, then two).
    for agent in [FIREFOX, CHROME, "curl-like reader/1.0"] {
        assert_eq!(view(&f, "p1", agent).await, StatusCode::OK);
        assert_eq!(view(&f, "p2", agent).await, StatusCode::OK);
    }
    for (rkey, agents) in [("b1", &[FIREFOX][..]), ("b2", &[FIREFOX, CHROME][..])] {
        for agent in agents {
            let (status, body) = record(&f, "recordView", agent, None, json!({"uri": bobs(rkey)})).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
    f.settled("usage").await;
    let titles = |t: &Value| t["trending"].as_array().unwrap().iter().map(|e| e["title"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let all = get(&f, "/xrpc/pub.svc.metrics.getTrending?window=24h").await;
    assert_eq!(titles(&all).len(), 4, "{all}");

    // Alice's account taken down: her papers leave every page, and a page of two is still two.
    f.apply(vec![NewEvent::repo(
        Source::Manual { note: "test".into() },
        Payload::Account(AccountChange { did: ALICE.into(), active: false, status: Some(AccountStatus::Takendown) }),
    )]);
    f.settled("eprints").await;
    // Her papers were found shown at their views before (and kept so, per state of the
    // store): a view of one now finds none.
    assert_eq!(view(&f, "p1", FIREFOX).await, StatusCode::NOT_FOUND);
    let page = get(&f, "/xrpc/pub.svc.metrics.getTrending?window=24h&limit=2").await;
    assert_eq!((titles(&page), &page["hasMore"]), (vec!["Bob's Second".to_owned(), "Bob's First".to_owned()], &json!(false)), "{page}");
    let mine = get(&f, "/xrpc/pub.svc.metrics.getTrending?window=24h&fieldUris=math.CO").await;
    assert_eq!(titles(&mine), vec!["Bob's Second".to_owned(), "Bob's First".to_owned()], "{mine}");
    assert!(mine["trending"].as_array().unwrap().iter().all(|e| e["inUserFields"] == json!(false)), "{mine}");
}
