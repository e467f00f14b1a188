//! The arXiv client against the arXiv fixture server: papers by id and by search, every
//! field read; and each fault a source can show (slow, rate limiting, malformed, huge,
//! down) answered within the deadline with the right error, the circuit opening after
//! repeated failures, answers kept an hour.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sources::arxiv::{self, Arxiv};
use sources::fixtures::{Fault, FixtureServer};
use sources::{Etiquette, Source, SourceError, SourceQuery, Sources};

/// arXiv's etiquette with a short interval and deadline, so the faults show quickly.
fn etiquette(url: &str) -> Etiquette {
    let mut e = arxiv::etiquette(url, Some("ops@example.org"));
    e.interval = Duration::from_millis(5);
    e.deadline = Duration::from_millis(1500);
    e.breaker_threshold = 3;
    e
}

fn uncached(url: &str) -> Etiquette {
    Etiquette { cache_for: Duration::ZERO, ..etiquette(url) }
}

#[tokio::test]
async fn a_paper_by_id_and_by_search_with_every_field() {
    let server = FixtureServer::arxiv().await;
    let client = Arxiv::new(etiquette(&server.url));
    let paper = client.get("arXiv:2509.21237v1").await.unwrap().expect("in the fixtures");
    assert_eq!(paper.source, "arxiv");
    assert_eq!(paper.external_id, "2509.21237");
    assert_eq!(paper.title, "Query-Centric Graph Retrieval Augmented Generation");
    assert_eq!(paper.authors.len(), 5);
    assert!(!paper.abstract_text.contains('\n') && paper.abstract_text.len() > 200, "the abstract on one line");
    assert_eq!(paper.url, "http://arxiv.org/abs/2509.21237v1");
    assert_eq!(paper.pdf_url.as_deref(), Some("http://arxiv.org/pdf/2509.21237v1"));
    assert_eq!(paper.doi.as_deref(), Some("10.48550/arXiv.2509.21237"));
    assert!(paper.publication_date.as_deref().is_some_and(|d| d.starts_with("2025-09")));
    assert!(!paper.categories.is_empty());
    assert_eq!(paper.plugin, "arxiv-atom");
    assert!(client.get("2509.99999").await.unwrap().is_none(), "an id arXiv has not");
    assert!(client.get("not an id").await.unwrap().is_none(), "not an id: not even asked");

    let found = client.search(&SourceQuery { text: "graph generation".into(), author: None, limit: 10 }).await.unwrap();
    let mut ids: Vec<&str> = found.iter().map(|p| p.external_id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["2509.21237", "2604.24104"]);
    let by_author =
        client.search(&SourceQuery { text: String::new(), author: Some(found[0].authors[0].name.clone()), limit: 10 }).await.unwrap();
    assert_eq!(by_author.len(), 1);
}

#[test]
fn affiliations_are_read_from_the_arxiv_extension() {
    let xml = r#"<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom"><entry>
        <id>http://arxiv.org/abs/hep-ex/0307015v1</id><title>Multi-Electron
        Production</title><summary>  S </summary>
        <author><name>A. Aktas</name><arxiv:affiliation>DESY</arxiv:affiliation></author>
        <entry-not-an-author/></entry><entry><id>http://arxiv.org/abs/hep-ex/0307016v1</id></entry></feed>"#;
    let papers = arxiv::parse_feed(xml, "2026-11-27T00:00:00Z").unwrap();
    assert_eq!(papers.len(), 1, "an entry without a title is left out");
    assert_eq!(papers[0].external_id, "hep-ex/0307015");
    assert_eq!(papers[0].title, "Multi-Electron Production");
    assert_eq!(papers[0].authors[0].affiliation.as_deref(), Some("DESY"));
}

#[tokio::test]
async fn each_fault_is_answered_within_the_deadline_with_its_error() {
    let server = FixtureServer::arxiv().await;
    let client = Arxiv::new(uncached(&server.url));
    let query = SourceQuery { text: "graph".into(), author: None, limit: 5 };
    let timed = |f: Fault| {
        server.set_fault(f);
        let started = Instant::now();
        let client = &client;
        let query = &query;
        async move { (client.search(query).await, started.elapsed()) }
    };

    let (r, took) = timed(Fault::Slow(Duration::from_secs(5))).await;
    assert!(matches!(r, Err(SourceError::Timeout { .. })), "{r:?}");
    assert!(took < Duration::from_millis(2000), "answered at the deadline: {took:?}");

    let (r, took) = timed(Fault::RateLimited(120)).await;
    assert_eq!(r.unwrap_err(), SourceError::RateLimited { name: "arxiv", retry_after_s: 120 });
    assert!(took < Duration::from_millis(500), "a wait past the deadline is not waited: {took:?}");

    let (r, _) = timed(Fault::Malformed).await;
    assert!(matches!(r, Err(SourceError::Malformed { .. })), "{r:?}");

    let (r, took) = timed(Fault::Huge(6 * 1024 * 1024)).await;
    assert_eq!(r.unwrap_err(), SourceError::TooLarge { name: "arxiv", limit: 5 * 1024 * 1024 });
    assert!(took < Duration::from_millis(1500), "{took:?}");

    let (r, _) = timed(Fault::None).await;
    assert!(r.unwrap().len() >= 2, "it answers again once the fault is gone");
}

#[tokio::test]
async fn a_failing_source_opens_its_circuit_and_is_not_called() {
    let server = FixtureServer::arxiv().await;
    let client = Arxiv::new(Etiquette { retries: 0, ..uncached(&server.url) });
    server.set_fault(Fault::Down);
    for _ in 0..3 {
        assert!(matches!(client.get("2509.21237").await, Err(SourceError::Status { status: 500, .. })));
    }
    let calls = server.calls();
    assert!(matches!(client.get("2509.21237").await, Err(SourceError::CircuitOpen { .. })));
    assert_eq!(server.calls(), calls, "not called while the circuit is open");
}

#[tokio::test]
async fn retries_ride_out_a_brief_failure_and_answers_are_kept() {
    let server = FixtureServer::arxiv().await;
    let client = Arc::new(Arxiv::new(etiquette(&server.url)));
    server.set_fault(Fault::Down);
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.get("2503.11731").await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.set_fault(Fault::None);
    let paper = pending.await.unwrap().unwrap().expect("found after a retry");
    assert_eq!(paper.external_id, "2503.11731");
    let calls = server.calls();
    assert!(calls >= 2);
    client.get("2503.11731").await.unwrap().unwrap();
    assert_eq!(server.calls(), calls, "the second ask is answered from the cache");
}

#[tokio::test]
async fn a_search_of_several_sources_reports_the_one_that_failed() {
    let (good, bad) = (FixtureServer::arxiv().await, FixtureServer::arxiv().await);
    bad.set_fault(Fault::Down);
    struct Renamed(Arxiv);
    #[async_trait::async_trait]
    impl Source for Renamed {
        fn name(&self) -> &'static str {
            "mirror"
        }
        async fn search(&self, q: &SourceQuery) -> Result<Vec<sources::ExternalPaper>, SourceError> {
            self.0.search(q).await
        }
        async fn get(&self, id: &str) -> Result<Option<sources::ExternalPaper>, SourceError> {
            self.0.get(id).await
        }
    }
    let all = Sources::new([
        Arc::new(Arxiv::new(etiquette(&good.url))) as Arc<dyn Source>,
        Arc::new(Renamed(Arxiv::new(Etiquette { retries: 0, ..uncached(&bad.url) }))),
    ]);
    let (papers, errors) = all.search(&[], &SourceQuery { text: "simplification".into(), author: None, limit: 5 }).await;
    assert_eq!(papers.iter().map(|p| p.external_id.as_str()).collect::<Vec<_>>(), ["2505.16392"]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].0, "mirror");
    assert!(matches!(errors[0].1, SourceError::Status { status: 500, .. }), "{:?}", errors[0].1);
}

/// The PDF proxy fetches only arXiv's `/pdf/…` links (or those of the host it is pointed
/// at), by their path from that host.
#[tokio::test]
async fn only_arxiv_pdf_links_are_fetched_from_the_pdf_host() {
    let server = FixtureServer::arxiv().await;
    let client =
        Arxiv::new(etiquette(&server.url)).with_pdfs(Etiquette { interval: Duration::ZERO, ..arxiv::pdf_etiquette(&server.url, None) });
    for url in ["http://arxiv.org/pdf/2503.11731v1", "https://export.arxiv.org/pdf/2503.11731", &format!("{}/pdf/2503.11731v2", server.url)]
    {
        assert!(client.serves_pdf(url), "{url}");
    }
    for url in ["https://arxiv.org/abs/2503.11731", "https://evil.example/pdf/2503.11731", "ftp://arxiv.org/pdf/2503.11731", "not a url"] {
        assert!(!client.serves_pdf(url), "{url}");
        assert_eq!(client.pdf(url).await.unwrap(), None, "{url}");
    }
    let pdf = client.pdf("http://arxiv.org/pdf/2503.11731v1").await.unwrap().expect("the fixture's PDF");
    assert_eq!(&pdf[..], sources::fixtures::ARXIV_PDF);
    assert_eq!(client.pdf("http://arxiv.org/pdf/9912.99999v1").await.unwrap(), None, "no such paper");
}
