//! `pub.svc.eprint.*`.

use projections::search::SortOrder;

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::eprints::{self, SearchArgs};

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new()
        .query("pub.svc.eprint.getSubmission", get_submission)
        .query("pub.svc.eprint.listByAuthor", list_by_author)
        .aliases(&[("did", "author")])
        .query_async("pub.svc.eprint.searchSubmissions", Auth::Open, search_submissions)
        .aliases(&[("q", "query"), ("author", "authors")])
}

/// `pub.svc.eprint.getSubmission`: params `uri`, `cid?`.
fn get_submission(c: &Call) -> Answer {
    eprints::get(&c.state, c.str("uri"), c.params.str("cid"))
}

/// `pub.svc.eprint.listByAuthor`: params `author` (alias `did`), `limit`, `cursor`.
fn list_by_author(c: &Call) -> Answer {
    Body::json(&eprints::list_by_author(&c.state, c.str("author"), c.limit(25), c.params.str("cursor"))?)
}

/// `pub.svc.eprint.searchSubmissions`: `sortBy` wins over `sort` when both are sent.
async fn search_submissions(c: Call) -> Answer {
    let p = &c.params;
    let sort = match (p.str("sortBy"), p.str("sort")) {
        (Some("date"), _) | (None, Some("recent")) => SortOrder::Date,
        (Some("citations"), _) => SortOrder::Citations,
        _ => SortOrder::Relevance,
    };
    let args = SearchArgs {
        query: p.str("query").unwrap_or_default().to_owned(),
        fields: p.strs("fields"),
        authors: p.strs("authors"),
        from: p.str("dateFrom").map(|v| ("dateFrom", v.to_owned())),
        to: p.str("dateTo").map(|v| ("dateTo", v.to_owned())),
        sort: Some(sort),
        limit: c.limit(25),
        cursor: p.str("cursor").map(str::to_owned),
    };
    eprints::search(&c.state, args).await?.into_body("submissions")
}
