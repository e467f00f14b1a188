//! OpenAlex as a source of papers, against the registries fixture server (which answers
//! OpenAlex's `/works` and `/works/{id}` in its documented format): every field read, a work
//! by id in either form, a search, and OpenAlex down named as OpenAlex.

use std::time::Duration;

use sources::fixtures::{Fault, FixtureServer};
use sources::openalex::{self, OpenAlex};
use sources::{Etiquette, Source, SourceError, SourceQuery};

fn client(url: &str) -> OpenAlex {
    let e =
        Etiquette { interval: Duration::ZERO, retries: 0, cache_for: Duration::ZERO, ..openalex::etiquette(url, Some("ops@example.org")) };
    OpenAlex::new(e)
}

#[tokio::test]
async fn works_are_papers_with_every_field() {
    let server = FixtureServer::registries().await;
    let oa = client(&server.url);
    let paper = oa.get("https://openalex.org/W4402000001").await.unwrap().expect("in the fixtures");
    assert_eq!((paper.source.as_str(), paper.external_id.as_str(), paper.plugin.as_str()), ("openalex", "W4402000001", "openalex-works"));
    assert_eq!(paper.title, "Query-Centric Graph Retrieval Augmented Generation");
    assert_eq!(paper.url, "https://openalex.org/W4402000001");
    assert_eq!(paper.doi.as_deref(), Some("10.48550/arxiv.2509.21237"));
    assert_eq!(paper.publication_date.as_deref(), Some("2025-09-25"));
    assert_eq!(paper.abstract_text, "Graph-based retrieval-augmented generation centres on queries.");
    assert_eq!(paper.pdf_url.as_deref(), Some("https://arxiv.org/pdf/2509.21237"));
    assert_eq!(paper.categories, ["Topic Modeling", "Natural Language Processing Techniques"]);
    let first = &paper.authors[0];
    assert_eq!(
        (first.name.as_str(), first.orcid.as_deref(), first.affiliation.as_deref()),
        ("Yaxiong Wu", Some("0009-0000-0000-0015"), Some("University of Glasgow"))
    );
    assert_eq!(paper.authors.len(), 2);
    assert_eq!(oa.get("W4402000002").await.unwrap().map(|p| p.pdf_url), Some(None), "no open PDF");
    assert_eq!(oa.get("W1").await.unwrap(), None, "OpenAlex has no such work");
    assert_eq!(oa.get("10.1234/x").await.unwrap(), None, "not a work id");

    let found = oa.search(&SourceQuery { text: "gaussian splatting".into(), author: None, limit: 5 }).await.unwrap();
    assert_eq!(found.iter().map(|p| p.external_id.as_str()).collect::<Vec<_>>(), ["W4402000002"]);

    server.set_fault(Fault::Down);
    let err = oa.get("W4402000001").await.unwrap_err();
    assert_eq!(err, SourceError::Status { name: "openalex", status: 500 });
}
