//! `svc backfill arxiv`: arXiv's papers of a period or an archive imported through its
//! OAI-PMH interface, a page at a time: each paper an `external.paper` event (as claiming
//! imports one), appended before the next page is asked for, so a harvest that stops has
//! lost nothing it reported and goes on with `--resume <token>`.

use std::io::Write;

use event_schema::{ExternalPaper, NewEvent, Payload, Source};
use sources::arxiv_oai::{self, ArxivOai, Harvest};
use tracing::{info, warn};

use crate::config::ArxivHarvestArgs;

/// Runs the harvest; prints a JSON line per page (`{page, papers, deleted, resume?}`) and
/// one at the end (`{pages, papers, deleted, completeListSize?}`).
pub async fn harvest(args: ArxivHarvestArgs) -> anyhow::Result<()> {
    let log = super::open_log(&args.data)?;
    let oai = ArxivOai::new(arxiv_oai::etiquette(&args.arxiv_oai_url, args.sources_contact.as_deref()));
    let harvest = Harvest { from: args.from.clone(), until: args.until.clone(), set: args.set.clone() };
    let source = Source::Backfill { host: args.arxiv_oai_url.clone() };
    let progress = crate::progress::Progress::new("harvesting arXiv", "papers", 0);
    let (mut token, mut pages, mut papers, mut deleted, mut size) = (args.resume.clone(), 0u64, 0u64, 0u64, None);
    let mut out = std::io::stdout();
    loop {
        let page = match oai.list_records(&harvest, token.as_deref()).await {
            Ok(page) => page,
            Err(e) => {
                if let Some(t) = &token {
                    warn!(resume = %t, "the harvest stopped: go on with --resume");
                }
                return Err(anyhow::anyhow!("arXiv's OAI-PMH interface: {e}"));
            }
        };
        size = page.complete_list_size.or(size);
        if let Some(total) = size {
            progress.set_total(total);
        }
        let events: Vec<NewEvent> = page
            .papers
            .into_iter()
            .map(|p| NewEvent {
                key: ExternalPaper::key(&p.source, &p.external_id),
                source: source.clone(),
                payload: Payload::External(Box::new(p)),
            })
            .collect();
        let count = events.len() as u64;
        if !events.is_empty() {
            let log = log.clone();
            tokio::task::spawn_blocking(move || log.append(&events)).await??;
        }
        pages += 1;
        papers += count;
        deleted += page.deleted.len() as u64;
        progress.set(papers + deleted);
        let mut line = serde_json::json!({"page": pages, "papers": count, "deleted": page.deleted.len()});
        if let Some(t) = &page.resumption_token {
            line["resume"] = serde_json::json!(t);
        }
        writeln!(out, "{line}")?;
        token = page.resumption_token;
        if token.is_none() || args.max_pages.is_some_and(|m| pages >= m) {
            break;
        }
    }
    progress.finish();
    let mut line = serde_json::json!({"pages": pages, "papers": papers, "deleted": deleted});
    if let Some(n) = size {
        line["completeListSize"] = serde_json::json!(n);
    }
    if let Some(t) = &token {
        line["resume"] = serde_json::json!(t);
    }
    writeln!(out, "{line}")?;
    info!(pages, papers, deleted, "arXiv harvest: done");
    Ok(())
}
