//! `GET /api/v1/eprints/{uri}/integrations` in process, against the platforms' fixture
//! server: an eprint linking a GitHub repository, a GitLab project, a Zenodo record and a
//! figshare dataset gets what each platform says (the archive's visit of the GitHub
//! repository too); a repository GitHub does not know is left out; a platform down is named
//! in `sourceErrors` while the others' answers stand; an unknown eprint is 404 in the REST
//! envelope.

use crate::support;

use axum::http::StatusCode;
use serde_json::json;
use sources::fixtures::{Fault, FixtureServer};
use support::*;

const ALICE: &str = "did:plc:alice000000000000000000";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eprints_code_and_data_links_are_described_by_their_platforms() {
    let platforms = FixtureServer::platforms().await;
    let mut f = Fixture::with_platforms(&platforms.url);
    let mut paper = submission("Graph Retrieval", ALICE, "2025-03-01T00:00:00Z");
    paper["repositories"] = json!({
        "code": [
            {"url": "https://github.com/octocat/Hello-World", "platformSlug": "github"},
            {"url": "https://github.com/nobody/nothing", "platformSlug": "github"},
            {"url": "https://gitlab.com/diaspora/graph-retrieval", "platformSlug": "gitlab"}
        ],
        "data": [
            {"doi": "10.5281/zenodo.7654321", "platformSlug": "zenodo"},
            {"doi": "10.6084/m9.figshare.123", "url": "https://figshare.com/articles/123", "platformSlug": "figshare",
             "label": "Raw graphs", "accessStatement": "CC BY 4.0"}
        ]
    });
    f.apply(vec![create(ALICE, "pub.svc.eprint.submission", "p1", "3l0000000000a", paper)]);
    let uri = format!("at://{ALICE}/pub.svc.eprint.submission/p1");
    let path = format!("/api/v1/eprints/{}/integrations", enc(&uri));

    let (status, got) = f.get(&path).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(got["eprintUri"], uri);
    assert!(got["lastUpdated"].is_string());
    assert_eq!(
        got["github"],
        json!([{"type": "github", "owner": "octocat", "repo": "Hello-World", "url": "https://github.com/octocat/Hello-World",
                "stars": 80, "forks": 9, "language": "Python", "description": "This your first repo!", "license": "MIT",
                "lastUpdated": "2011-01-26T19:06:43Z", "topics": ["octocat", "atom", "electron", "api"]}]),
        "the repository GitHub does not know is left out"
    );
    assert_eq!(got["gitlab"][0]["pathWithNamespace"], "diaspora/graph-retrieval");
    assert_eq!((got["gitlab"][0]["stars"].as_u64(), got["gitlab"][0]["visibility"].as_str()), (Some(21), Some("public")));
    assert_eq!(
        got["zenodo"],
        json!([{"type": "zenodo", "doi": "10.5281/zenodo.7654321", "conceptDoi": "10.5281/zenodo.7654320",
                "title": "Graph retrieval benchmark data", "url": "https://zenodo.org/records/7654321", "resourceType": "dataset",
                "accessRight": "open", "version": "v1.2", "stats": {"downloads": 1520, "views": 4310}}])
    );
    let archived: Vec<(&str, bool)> = got["softwareHeritage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["originUrl"].as_str().unwrap(), a["archived"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        archived,
        [
            ("https://github.com/octocat/Hello-World", true),
            ("https://github.com/nobody/nothing", false),
            ("https://gitlab.com/diaspora/graph-retrieval", false)
        ]
    );
    assert_eq!(got["softwareHeritage"][0]["lastSnapshotSwhid"], "swh:1:snp:6b7d0e6e5e1c83c8e1d3b6c5d7f3c2f2a1b0c9d8");
    assert_eq!(
        got["datasets"],
        json!([{"type": "figshare", "doi": "10.6084/m9.figshare.123", "title": "Raw graphs", "url": "https://figshare.com/articles/123",
                "description": "CC BY 4.0"}])
    );
    assert!(got.get("sourceErrors").is_none(), "{got}");

    // Kept an hour: asked again, the platforms are not called.
    let calls = platforms.calls();
    assert_eq!(f.get(&path).await.1["github"], got["github"]);
    assert_eq!(platforms.calls(), calls, "answered from what was kept");

    let (status, body) =
        f.get(&format!("/api/v1/eprints/{}/integrations", enc(&format!("at://{ALICE}/pub.svc.eprint.submission/none")))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("NOT_FOUND")), "{body}");
    assert_eq!(f.get("/api/v1/eprints/not-a-uri/integrations").await.0, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_down_is_named_and_the_rest_stands() {
    let platforms = FixtureServer::platforms().await;
    let mut f = Fixture::with_platforms(&platforms.url);
    let mut paper = submission("Graph Retrieval", ALICE, "2025-03-01T00:00:00Z");
    paper["repositories"] = json!({"code": [{"url": "https://github.com/octocat/Hello-World"}],
                                   "data": [{"doi": "10.6084/m9.figshare.9", "platformSlug": "figshare"}]});
    f.apply(vec![create(ALICE, "pub.svc.eprint.submission", "p2", "3l0000000000a", paper)]);
    platforms.set_fault(Fault::Down);
    let (status, got) =
        f.get(&format!("/api/v1/eprints/{}/integrations", enc(&format!("at://{ALICE}/pub.svc.eprint.submission/p2")))).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    let named: Vec<&str> = got["sourceErrors"].as_array().unwrap().iter().map(|e| e["source"].as_str().unwrap()).collect();
    assert_eq!(named, ["github", "softwareHeritage"], "{got}");
    assert_eq!(got["datasets"][0]["doi"], "10.6084/m9.figshare.9", "what the record says stands");
    assert!(got.get("github").is_none());
}
