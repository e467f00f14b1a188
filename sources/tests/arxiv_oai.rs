//! arXiv's OAI-PMH interface, against the arXiv fixture server (which answers `ListRecords`
//! in the `arXiv` metadata format, two records a page): every field of a record read, a
//! harvest followed page by page to its end, deleted records told apart, the date and set
//! filters passed on, an empty list and OAI-PMH errors, and arXiv's 503 flow control waited
//! out.

use std::time::Duration;

use sources::arxiv_oai::{self, ArxivOai, Harvest};
use sources::fixtures::{Fault, FixtureServer};
use sources::{Etiquette, SourceError};

fn client(url: &str) -> ArxivOai {
    ArxivOai::new(Etiquette { interval: Duration::ZERO, ..arxiv_oai::etiquette(&format!("{url}/oai"), Some("ops@example.org")) })
}

#[tokio::test]
async fn a_harvest_is_read_page_by_page_to_its_end() {
    let server = FixtureServer::arxiv().await;
    let oai = client(&server.url);
    let harvest = Harvest::default();
    let first = oai.list_records(&harvest, None).await.unwrap();
    assert_eq!(first.papers.iter().map(|p| p.external_id.as_str()).collect::<Vec<_>>(), ["2503.11731", "2505.16392"]);
    assert_eq!(first.complete_list_size, Some(6));
    let paper = &first.papers[0];
    assert_eq!((paper.source.as_str(), paper.plugin.as_str()), ("arxiv", "arxiv-oai"));
    assert_eq!(paper.url, "https://arxiv.org/abs/2503.11731");
    assert_eq!(paper.pdf_url.as_deref(), Some("https://arxiv.org/pdf/2503.11731"));
    assert_eq!(paper.authors[0].name, "Xianming Zeng");
    assert_eq!(paper.publication_date.as_deref(), Some("2025-03-18"));
    assert!(paper.categories.first().is_some_and(|c| c.starts_with("cs.")), "{:?}", paper.categories);
    assert!(!paper.abstract_text.starts_with(' ') && !paper.abstract_text.is_empty());

    let (mut ids, mut deleted, mut token, mut pages) = (Vec::new(), Vec::new(), first.resumption_token.clone(), 1);
    ids.extend(first.papers.into_iter().map(|p| p.external_id));
    while let Some(t) = token {
        let page = oai.list_records(&harvest, Some(&t)).await.unwrap();
        ids.extend(page.papers.into_iter().map(|p| p.external_id));
        deleted.extend(page.deleted);
        token = page.resumption_token;
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(ids, ["2503.11731", "2505.16392", "2509.21237", "2603.10233", "2604.24104"]);
    assert_eq!(deleted, ["2604.00001"]);
}

#[tokio::test]
async fn filters_errors_and_flow_control() {
    let server = FixtureServer::arxiv().await;
    let oai = client(&server.url);
    let since = Harvest { from: Some("2026-01-01".into()), until: Some("2026-03-31".into()), set: Some("cs".into()) };
    let page = oai.list_records(&since, None).await.unwrap();
    assert_eq!(page.papers.iter().map(|p| p.external_id.as_str()).collect::<Vec<_>>(), ["2603.10233"]);
    assert_eq!(page.resumption_token, None, "one page");
    let math = Harvest { set: Some("math".into()), ..Harvest::default() };
    assert_eq!(oai.list_records(&math, None).await.unwrap(), arxiv_oai::Page::default(), "noRecordsMatch is an empty list");
    let err = oai.list_records(&Harvest::default(), Some("not-a-token")).await.unwrap_err();
    assert!(err.to_string().contains("badResumptionToken"), "{err}");

    // arXiv asks the harvester to wait: it does, and goes on.
    server.set_fault(Fault::BusyOnce(1));
    let started = std::time::Instant::now();
    let page = oai.list_records(&since, None).await.unwrap();
    assert_eq!(page.papers.len(), 1);
    assert!(started.elapsed() >= Duration::from_secs(1), "waited as asked");

    server.set_fault(Fault::Malformed);
    assert!(matches!(oai.list_records(&since, None).await.unwrap_err(), SourceError::Malformed { name: "arxiv-oai", .. }));
}
