//! Crossref as a source of papers, against the Crossref fixture server (which answers the
//! REST API's `/works` and `/works/{DOI}` in its documented format): every field read, a
//! work by DOI in any form, searches by words and by author, and Crossref failing named as
//! Crossref with nothing malformed passed on.

use std::time::Duration;

use sources::crossref::{self, Crossref};
use sources::fixtures::{Fault, FixtureServer};
use sources::{Etiquette, Source, SourceError, SourceQuery};

fn client(url: &str) -> Crossref {
    let e =
        Etiquette { interval: Duration::ZERO, retries: 0, cache_for: Duration::ZERO, ..crossref::etiquette(url, Some("ops@example.org")) };
    Crossref::new(e)
}

#[tokio::test]
async fn works_are_papers_with_every_field() {
    let server = FixtureServer::crossref().await;
    let cr = client(&server.url);
    let paper = cr.get("https://doi.org/10.1145/3696410.3714001").await.unwrap().expect("in the fixtures");
    assert_eq!(
        (paper.source.as_str(), paper.external_id.as_str(), paper.plugin.as_str()),
        ("crossref", "10.1145/3696410.3714001", "crossref-works")
    );
    assert_eq!(paper.doi.as_deref(), Some("10.1145/3696410.3714001"));
    assert_eq!(paper.title, "Query-Centric Graph Retrieval Augmented Generation");
    assert_eq!(paper.url, "https://doi.org/10.1145/3696410.3714001");
    assert_eq!(paper.publication_date.as_deref(), Some("2025-04-28"));
    assert_eq!(
        paper.abstract_text,
        "Graph-based retrieval-augmented generation enriches large language models with external knowledge. We introduce QCG-RAG, a query-centric graph framework for multi-hop chunk retrieval."
    );
    assert_eq!(paper.pdf_url.as_deref(), Some("https://dl.acm.org/doi/pdf/10.1145/3696410.3714001"));
    assert_eq!(paper.categories, ["Computer Networks and Communications", "Software"]);
    let first = &paper.authors[0];
    assert_eq!(
        (first.name.as_str(), first.orcid.as_deref(), first.affiliation.as_deref()),
        ("Yaxiong Wu", Some("0009-0000-0000-0015"), Some("University of Glasgow"))
    );
    assert_eq!((paper.authors[1].name.as_str(), paper.authors[1].orcid.as_deref()), ("Jianyuan Bo", None));

    // Crossref's own test DOI, asked for in upper case: no PDF link (its one link is not one).
    let carberry = cr.get("doi:10.5555/12345678").await.unwrap().expect("in the fixtures");
    assert_eq!((carberry.pdf_url, carberry.authors[0].orcid.as_deref()), (None, Some("0000-0002-1825-0097")));
    assert_eq!(cr.get("10.5555/00000000").await.unwrap(), None, "Crossref has no such work");
    assert_eq!(cr.get("W4402000001").await.unwrap(), None, "not a DOI");

    let found = cr.search(&SourceQuery { text: "silly string".into(), author: None, limit: 5 }).await.unwrap();
    assert_eq!(found.iter().map(|p| p.external_id.as_str()).collect::<Vec<_>>(), ["10.5555/12345678"]);
    let by_author = cr.search(&SourceQuery { text: String::new(), author: Some("Yaxiong Wu".into()), limit: 5 }).await.unwrap();
    assert_eq!(by_author.iter().map(|p| p.external_id.as_str()).collect::<Vec<_>>(), ["10.1145/3696410.3714001"]);
}

#[tokio::test]
async fn crossref_failing_is_named_and_nothing_malformed_is_read() {
    let server = FixtureServer::crossref().await;
    let cr = client(&server.url);
    server.set_fault(Fault::Malformed);
    let err = cr.get("10.5555/12345678").await.unwrap_err();
    assert!(matches!(err, SourceError::Malformed { name: "crossref", .. }), "{err:?}");
    server.set_fault(Fault::RateLimited(30));
    let err = cr.search(&SourceQuery { text: "silly".into(), author: None, limit: 5 }).await.unwrap_err();
    assert_eq!(err, SourceError::RateLimited { name: "crossref", retry_after_s: 30 });
}
