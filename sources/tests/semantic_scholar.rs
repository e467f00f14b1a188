//! Semantic Scholar as a source of papers, against the registries fixture server (which
//! answers the Graph API's paper search and paper lookup in its documented format): every
//! field read, the fields asked for, the API key sent (and a wrong one refused as Semantic
//! Scholar refuses it), and Semantic Scholar down named as itself.

use std::time::Duration;

use sources::fixtures::{Fault, FixtureServer, SEMANTIC_SCHOLAR_KEY};
use sources::semantic_scholar::{self, SemanticScholar};
use sources::{Etiquette, Source, SourceError, SourceQuery};

fn client(url: &str, key: Option<&str>) -> SemanticScholar {
    let e = Etiquette { interval: Duration::ZERO, retries: 0, cache_for: Duration::ZERO, ..semantic_scholar::etiquette(url, key) };
    SemanticScholar::new(e)
}

#[tokio::test]
async fn papers_are_read_with_every_field() {
    let server = FixtureServer::registries().await;
    let s2 = client(&server.url, Some(SEMANTIC_SCHOLAR_KEY));
    let sha = "649def34f8be52c8b66281af98ae884c09aef38b";
    let paper = s2.get(&format!("https://www.semanticscholar.org/paper/{sha}")).await.unwrap().expect("in the fixtures");
    assert_eq!(
        (paper.source.as_str(), paper.external_id.as_str(), paper.plugin.as_str()),
        ("semanticscholar", sha, "semanticscholar-graph")
    );
    assert_eq!(paper.title, "Construction of the Literature Graph in Semantic Scholar");
    assert_eq!(paper.doi.as_deref(), Some("10.18653/v1/n18-3011"));
    assert_eq!(paper.publication_date.as_deref(), Some("2018-05-06"));
    assert_eq!(paper.pdf_url.as_deref(), Some("https://www.aclweb.org/anthology/N18-3011.pdf"));
    assert_eq!(paper.categories, ["Computer Science"]);
    assert_eq!(paper.authors.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["Waleed Ammar", "Dirk Groeneveld"]);
    assert!(paper.abstract_text.starts_with("We describe a deployed scalable system"), "{}", paper.abstract_text);
    assert_eq!(s2.get(&"0".repeat(40)).await.unwrap(), None, "no such paper");
    assert_eq!(s2.get("10.1145/3589335.3651526").await.unwrap(), None, "a DOI is Crossref's to look up");

    let found = s2.search(&SourceQuery { text: "query-centric graph".into(), author: Some("Yaxiong Wu".into()), limit: 5 }).await.unwrap();
    assert_eq!(found.iter().map(|p| p.external_id.as_str()).collect::<Vec<_>>(), ["5c6e8a3b2d41f0e9a7b8c6d5e4f3a2b1c0d9e8f7"]);
    assert_eq!(found[0].doi.as_deref(), Some("10.48550/arxiv.2509.21237"));
}

#[tokio::test]
async fn the_key_is_sent_and_failures_are_named() {
    let server = FixtureServer::registries().await;
    let query = SourceQuery { text: "literature graph".into(), author: None, limit: 5 };
    assert_eq!(client(&server.url, None).search(&query).await.unwrap().len(), 1, "the public pool answers without a key");
    let err = client(&server.url, Some("not-the-key")).search(&query).await.unwrap_err();
    assert_eq!(err, SourceError::Status { name: "semanticscholar", status: 403 });
    server.set_fault(Fault::Down);
    let err = client(&server.url, Some(SEMANTIC_SCHOLAR_KEY)).search(&query).await.unwrap_err();
    assert_eq!(err, SourceError::Status { name: "semanticscholar", status: 500 });
}
