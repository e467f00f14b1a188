//! Local servers that answer as the sources do, from the committed fixtures
//! (`sources/fixtures/`, with their source and date), with faults a test can switch on:
//! slow answers, rate limiting, malformed or oversized bodies, server errors. Tests start
//! one per source on a free port and point svc's base URL at it; no test calls the internet.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// The arXiv fixtures: (id, Atom entry).
pub const ARXIV_ENTRIES: &[(&str, &str)] = &[
    ("2503.11731", include_str!("../fixtures/arxiv/2503.11731.xml")),
    ("2505.16392", include_str!("../fixtures/arxiv/2505.16392.xml")),
    ("2509.21237", include_str!("../fixtures/arxiv/2509.21237.xml")),
    ("2603.10233", include_str!("../fixtures/arxiv/2603.10233.xml")),
    ("2604.24104", include_str!("../fixtures/arxiv/2604.24104.xml")),
];

/// The records arXiv's OAI-PMH interface answers with (metadata format `arXiv`), one of
/// them deleted.
const ARXIV_OAI_RECORDS: &str = include_str!("../fixtures/arxiv/oai_records.xml");

/// How many records a page of the OAI-PMH fixture holds (arXiv's are 1,000 long).
pub const ARXIV_OAI_PAGE: usize = 2;

/// The PDF the arXiv fixture serves for each of its papers (`/pdf/<id>v<n>`).
pub const ARXIV_PDF: &[u8] = include_bytes!("../fixtures/arxiv/paper.pdf");

/// The registries' fixtures: (the answer's wrapper, the items it wraps).
const ORCID_ITEMS: &str = include_str!("../fixtures/registries/orcid.json");
const ROR_ITEMS: &str = include_str!("../fixtures/registries/ror.json");
const WIKIDATA_ITEMS: &str = include_str!("../fixtures/registries/wikidata.json");
const FAST_ITEMS: &str = include_str!("../fixtures/registries/fast.json");
const OPENALEX_ITEMS: &str = include_str!("../fixtures/registries/openalex.json");
const OPENALEX_WORKS: &str = include_str!("../fixtures/registries/openalex_works.json");
const OPENREVIEW_ITEMS: &str = include_str!("../fixtures/registries/openreview.json");
/// Crossref's works and Semantic Scholar's papers, as their APIs give one.
const CROSSREF_WORKS: &str = include_str!("../fixtures/crossref/works.json");
const SEMANTIC_SCHOLAR_PAPERS: &str = include_str!("../fixtures/semanticscholar/papers.json");

/// The Semantic Scholar API key the fixture server takes (`x-api-key`); any other key is
/// refused with 403, as Semantic Scholar refuses an invalid one. Requests without a key are
/// answered (its public pool).
pub const SEMANTIC_SCHOLAR_KEY: &str = "fixture-s2-key";

/// What a fixture server does instead of answering well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Nothing: it answers from its fixtures.
    None,
    /// It answers after this long.
    Slow(Duration),
    /// It answers 429 with this `Retry-After` (seconds).
    RateLimited(u64),
    /// It answers 200 with a body that is not the source's format.
    Malformed,
    /// It answers 200 with a body of this many bytes.
    Huge(usize),
    /// It answers 500.
    Down,
    /// It answers 503 with this `Retry-After` (seconds) once, then well (arXiv's OAI-PMH
    /// flow control).
    BusyOnce(u64),
}

#[derive(Clone)]
struct Shared {
    fault: Arc<Mutex<Fault>>,
    calls: Arc<AtomicU64>,
}

/// A running fixture server; it stops when dropped.
pub struct FixtureServer {
    /// Its base URL (`http://127.0.0.1:<port>`).
    pub url: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl FixtureServer {
    /// An arXiv API (`GET /api/query` with `id_list` or `search_query`, `max_results`)
    /// answering from [`ARXIV_ENTRIES`], arXiv's PDF host (`GET /pdf/<id>v<n>`:
    /// [`ARXIV_PDF`] for each of them), and its OAI-PMH interface (`GET /oai`,
    /// `ListRecords` in the `arXiv` format with `from`, `until`, `set`, pages of
    /// [`ARXIV_OAI_PAGE`] records continued by `resumptionToken`).
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn arxiv() -> FixtureServer {
        let routes = Router::new().route("/api/query", get(arxiv_query)).route("/pdf/{id}", get(arxiv_pdf)).route("/oai", get(arxiv_oai));
        FixtureServer::serve(routes).await
    }

    /// A Crossref REST API (`GET /works` with `query.bibliographic`, `query.author`, `rows`;
    /// `GET /works/{DOI}`) answering from the committed Crossref works.
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn crossref() -> FixtureServer {
        FixtureServer::serve(crossref_routes()).await
    }

    /// ORCID (its search and its OAuth token endpoint), ROR, Wikidata, FAST, OpenAlex,
    /// OpenReview, Semantic Scholar's Graph API (`/graph/v1/paper/search`,
    /// `/graph/v1/paper/{id}`) and the platforms of [`FixtureServer::platforms`] at one
    /// address (each API's own path; Crossref's of [`FixtureServer::crossref`] under
    /// `/crossref`, its paths being OpenAlex's),
    /// answering from the committed registry fixtures: the items every word of the query
    /// occurs in (an ORCID `orcid:<iD>` query: the person of that iD).
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn registries() -> FixtureServer {
        let routes = Router::new()
            .route("/v3.0/expanded-search/", get(orcid))
            .route("/v2/organizations", get(ror))
            .route("/w/api.php", get(wikidata))
            .route("/searchfast/fastsuggest", get(fast))
            .route("/authors", get(openalex))
            .route("/works/{*id}", get(openalex_work))
            .route("/works", get(openalex_works))
            .route("/profiles/search", get(openreview))
            .route("/graph/v1/paper/search", get(s2_search))
            .route("/graph/v1/paper/{id}", get(s2_paper))
            .route("/oauth/token", axum::routing::post(orcid_token))
            .nest("/crossref", crossref_routes())
            .merge(platform_routes(Router::new()));
        FixtureServer::serve(routes).await
    }

    /// GitHub, GitLab, Zenodo and Software Heritage at one address (each API's own path),
    /// answering from the committed platform fixtures for `octocat/Hello-World`,
    /// `diaspora/graph-retrieval`, Zenodo record 7654321 and the archive's visit of the
    /// GitHub repository; 404 for anything else, as each platform answers.
    ///
    /// # Panics
    /// When no local port can be bound.
    pub async fn platforms() -> FixtureServer {
        FixtureServer::serve(platform_routes(Router::new())).await
    }

    /// A server of `routes` on a free local port.
    async fn serve(routes: Router<Shared>) -> FixtureServer {
        let shared = Shared { fault: Arc::new(Mutex::new(Fault::None)), calls: Arc::new(AtomicU64::new(0)) };
        let app = routes.with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a local port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FixtureServer { url, shared, task }
    }

    /// Switches a fault on (or off with [`Fault::None`]).
    pub fn set_fault(&self, fault: Fault) {
        *self.shared.fault.lock().unwrap_or_else(|e| e.into_inner()) = fault;
    }

    /// How many requests it has received.
    pub fn calls(&self) -> u64 {
        self.shared.calls.load(Ordering::SeqCst)
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The fault's answer, if one is on (after its delay, for a slow one).
async fn faulty(shared: &Shared) -> Option<Response> {
    shared.calls.fetch_add(1, Ordering::SeqCst);
    let fault = shared.fault.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match fault {
        Fault::None => None,
        Fault::Slow(d) => {
            tokio::time::sleep(d).await;
            None
        }
        Fault::RateLimited(s) => {
            Some((StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, s.to_string())], "Rate exceeded.").into_response())
        }
        Fault::Malformed => Some(
            (StatusCode::OK, [(header::CONTENT_TYPE, "application/atom+xml")], "<html><body>Gateway page</body></html>").into_response(),
        ),
        Fault::Huge(n) => {
            let mut body = String::from(r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>"#);
            body.push_str(&"x".repeat(n.saturating_sub(body.len() + 16)));
            body.push_str("</title></feed>");
            Some((StatusCode::OK, [(header::CONTENT_TYPE, "application/atom+xml")], body).into_response())
        }
        Fault::Down => Some((StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response()),
        Fault::BusyOnce(s) => {
            *shared.fault.lock().unwrap_or_else(|e| e.into_inner()) = Fault::None;
            Some((StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, s.to_string())], "Retry after").into_response())
        }
    }
}

async fn arxiv_query(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let max: usize = q.get("max_results").and_then(|m| m.parse().ok()).unwrap_or(10);
    let matches: Vec<&str> = if let Some(ids) = q.get("id_list").filter(|i| !i.is_empty()) {
        let ids: Vec<&str> = ids.split(',').map(str::trim).collect();
        if let Some(bad) = ids.iter().find(|id| crate::arxiv::normalize_id(id).is_none()) {
            // arXiv answers a malformed id with an error entry, HTTP 400.
            let entry = format!(
                "<entry><id>http://arxiv.org/api/errors#incorrect_id_format_for_{bad}</id><title>Error</title><summary>incorrect id format for {bad}</summary></entry>"
            );
            return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/atom+xml")], feed(&[&entry], 1)).into_response();
        }
        ARXIV_ENTRIES
            .iter()
            .filter(|(id, _)| ids.iter().any(|i| crate::arxiv::normalize_id(i).as_deref() == Some(*id)))
            .map(|(_, e)| *e)
            .collect()
    } else {
        let query = q.get("search_query").map(String::as_str).unwrap_or_default().to_lowercase();
        // Every term (`all:word`, `au:"a name"`, joined by AND) must occur in the entry.
        let terms: Vec<String> = query
            .split(" and ")
            .map(|t| t.split_once(':').map_or(t, |(_, v)| v).trim_matches(|c: char| c == '"' || c.is_whitespace()).to_owned())
            .filter(|t| !t.is_empty())
            .collect();
        ARXIV_ENTRIES
            .iter()
            .map(|(_, e)| *e)
            .filter(|e| !terms.is_empty() && terms.iter().all(|t| e.to_lowercase().contains(t.as_str())))
            .collect()
    };
    let total = matches.len();
    let page: Vec<&str> = matches.into_iter().take(max).collect();
    ([(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")], feed(&page, total)).into_response()
}

fn feed(entries: &[&str], total: usize) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query</title>
  <id>http://arxiv.org/api/fixture</id>
  <updated>2026-11-27T00:00:00-05:00</updated>
  <opensearch:totalResults xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{total}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">0</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">{}</opensearch:itemsPerPage>
{}</feed>
"#,
        entries.len(),
        entries.concat()
    )
}

/// The items of `fixture` every word of `query` occurs in (case aside), at most `limit`.
fn matching(fixture: &str, query: &str, limit: usize) -> Vec<serde_json::Value> {
    let items: Vec<serde_json::Value> = serde_json::from_str(fixture).expect("a fixture is a JSON list");
    let words: Vec<String> =
        query.split(|c: char| c.is_whitespace() || c == '+').filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    items
        .into_iter()
        .filter(|i| !words.is_empty() && words.iter().all(|w| i.to_string().to_lowercase().contains(w.as_str())))
        .take(limit)
        .collect()
}

fn json_answer(value: serde_json::Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json;charset=UTF-8")], value.to_string()).into_response()
}

fn param<'a>(q: &'a HashMap<String, String>, name: &str) -> &'a str {
    q.get(name).map(String::as_str).unwrap_or_default()
}

fn rows(q: &HashMap<String, String>, name: &str) -> usize {
    q.get(name).and_then(|r| r.parse().ok()).unwrap_or(10)
}

async fn orcid(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let query = param(&q, "q");
    let query = query.strip_prefix("orcid:").unwrap_or(query);
    let found = matching(ORCID_ITEMS, query, rows(&q, "rows"));
    json_answer(
        serde_json::json!({"expanded-result": if found.is_empty() { serde_json::Value::Null } else { found.clone().into() }, "num-found": found.len()}),
    )
}

async fn ror(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let found = matching(ROR_ITEMS, param(&q, "affiliation"), 100);
    json_answer(serde_json::json!({"number_of_results": found.len(), "items": found}))
}

async fn wikidata(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let found = matching(WIKIDATA_ITEMS, param(&q, "search"), rows(&q, "limit"));
    json_answer(serde_json::json!({"searchinfo": {"search": param(&q, "search")}, "search": found, "success": 1}))
}

async fn fast(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let found = matching(FAST_ITEMS, param(&q, "query"), rows(&q, "rows"));
    json_answer(serde_json::json!({"responseHeader": {"status": 0}, "response": {"numFound": found.len(), "start": 0, "docs": found}}))
}

async fn arxiv_pdf(State(shared): State<Shared>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let unversioned = id.rsplit_once('v').filter(|(_, n)| n.chars().all(|c| c.is_ascii_digit())).map_or(id.as_str(), |(i, _)| i);
    if !ARXIV_ENTRIES.iter().any(|(known, _)| *known == unversioned) {
        return StatusCode::NOT_FOUND.into_response();
    }
    ([(header::CONTENT_TYPE, "application/pdf")], ARXIV_PDF).into_response()
}

const GITHUB_REPO: &str = include_str!("../fixtures/platforms/github.json");
const GITLAB_PROJECT: &str = include_str!("../fixtures/platforms/gitlab.json");
const ZENODO_RECORD: &str = include_str!("../fixtures/platforms/zenodo.json");
const SWH_VISIT: &str = include_str!("../fixtures/platforms/swh.json");

/// The platforms' routes (GitHub, GitLab, Zenodo, Software Heritage).
fn platform_routes(router: Router<Shared>) -> Router<Shared> {
    router
        .route("/repos/{owner}/{repo}", get(github_repo))
        .route("/api/v4/projects/{id}", get(gitlab_project))
        .route("/api/records/{id}", get(zenodo_record))
        .route("/api/1/origin/{*rest}", get(swh_visit))
}

/// A fixture answered as its platform answers it, or the platform's 404.
async fn platform_answer(shared: &Shared, found: bool, body: &'static str) -> Response {
    if let Some(answer) = faulty(shared).await {
        return answer;
    }
    if !found {
        return (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "application/json")], r#"{"message":"Not Found"}"#).into_response();
    }
    ([(header::CONTENT_TYPE, "application/json; charset=utf-8")], body).into_response()
}

async fn github_repo(State(shared): State<Shared>, axum::extract::Path((owner, repo)): axum::extract::Path<(String, String)>) -> Response {
    platform_answer(&shared, owner == "octocat" && repo == "Hello-World", GITHUB_REPO).await
}

async fn gitlab_project(State(shared): State<Shared>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    platform_answer(&shared, id == "diaspora/graph-retrieval", GITLAB_PROJECT).await
}

async fn zenodo_record(State(shared): State<Shared>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    platform_answer(&shared, id == "7654321", ZENODO_RECORD).await
}

async fn swh_visit(State(shared): State<Shared>, axum::extract::Path(rest): axum::extract::Path<String>) -> Response {
    let origin = rest.strip_suffix("/visit/latest/").or_else(|| rest.strip_suffix("/visit/latest")).unwrap_or_default();
    // The archive normalizes the scheme's double slash away in paths; accept both.
    let known = ["https://github.com/octocat/Hello-World", "https:/github.com/octocat/Hello-World"].contains(&origin);
    platform_answer(&shared, known, SWH_VISIT).await
}

/// The client the ORCID fixture's OAuth knows: (client id, secret).
pub const ORCID_CLIENT: (&str, &str) = ("APP-FIXTURE0000000", "fixture-secret");
/// The authorization code the ORCID fixture exchanges for Josiah Carberry's iD.
pub const ORCID_CODE: &str = "Q70Y3A";

/// ORCID's token endpoint: [`ORCID_CODE`], from [`ORCID_CLIENT`] with a redirect URI,
/// answers ORCID's token response naming `0000-0002-1825-0097`; any other code is
/// `invalid_grant`, another client `invalid_client`, as ORCID answers them.
async fn orcid_token(State(shared): State<Shared>, axum::extract::Form(form): axum::extract::Form<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if (field("client_id"), field("client_secret")) != ORCID_CLIENT {
        let body =
            serde_json::json!({"error": "invalid_client", "error_description": "Client not found: the client id or secret is wrong"});
        return (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response();
    }
    if field("grant_type") != "authorization_code" || field("code") != ORCID_CODE || field("redirect_uri").is_empty() {
        let body =
            serde_json::json!({"error": "invalid_grant", "error_description": "Invalid authorization code: the code is unknown or used"});
        return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response();
    }
    json_answer(serde_json::json!({
        "access_token": "f5af9f51-07e6-4332-8f1a-c0c11c1e3728", "token_type": "bearer",
        "refresh_token": "f725f747-3a65-49f6-a231-3e8944ce464d", "expires_in": 631138518,
        "scope": "/authenticate", "name": "Josiah Carberry", "orcid": "0000-0002-1825-0097"
    }))
}

async fn openreview(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let found = matching(OPENREVIEW_ITEMS, param(&q, "term"), rows(&q, "limit"));
    json_answer(serde_json::json!({"profiles": found, "count": found.len()}))
}

async fn openalex(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let found = matching(OPENALEX_ITEMS, param(&q, "search"), rows(&q, "per-page"));
    json_answer(serde_json::json!({"meta": {"count": found.len(), "page": 1, "per_page": rows(&q, "per-page")}, "results": found}))
}

/// OpenAlex's work by `doi:<DOI>` (a DOI is case-insensitive), 404 for another.
/// OpenAlex's works search: the works every word of `search` occurs in, or those of the ids
/// an `openalex:` filter names.
async fn openalex_works(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    // `filter=openalex:W1|W2`: the works of those ids; otherwise a search.
    let found = match param(&q, "filter").strip_prefix("openalex:") {
        Some(ids) => {
            let ids: Vec<&str> = ids.split('|').collect();
            let works: Vec<serde_json::Value> = serde_json::from_str(OPENALEX_WORKS).expect("a fixture is a JSON list");
            works
                .into_iter()
                .filter(|w| w["id"].as_str().is_some_and(|i| ids.contains(&i.trim_start_matches("https://openalex.org/"))))
                .collect()
        }
        None => matching(OPENALEX_WORKS, param(&q, "search"), rows(&q, "per-page")),
    };
    json_answer(serde_json::json!({"meta": {"count": found.len(), "page": 1, "per_page": rows(&q, "per-page")}, "results": found}))
}

async fn openalex_work(State(shared): State<Shared>, axum::extract::Path(id): axum::extract::Path<String>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let works: Vec<serde_json::Value> = serde_json::from_str(OPENALEX_WORKS).expect("a fixture is a JSON list");
    // A work by its DOI (`doi:10.…`) or by its OpenAlex id (`W…`).
    let wanted = |w: &serde_json::Value| match id.strip_prefix("doi:") {
        Some(doi) => w["doi"].as_str().is_some_and(|d| d.trim_start_matches("https://doi.org/") == doi.to_lowercase()),
        None => w["id"].as_str().is_some_and(|i| i.trim_start_matches("https://openalex.org/") == id),
    };
    match works.into_iter().find(wanted) {
        Some(w) => json_answer(w),
        None => (StatusCode::NOT_FOUND, "{\"error\": \"NotFoundError\"}").into_response(),
    }
}

fn crossref_routes() -> Router<Shared> {
    Router::new().route("/works", get(crossref_works)).route("/works/{*doi}", get(crossref_work))
}

/// Crossref's works search: the works every word of `query.bibliographic` and
/// `query.author` occurs in, in Crossref's `work-list` message.
async fn crossref_works(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let terms = format!("{} {}", param(&q, "query.bibliographic"), param(&q, "query.author"));
    let found = matching(CROSSREF_WORKS, &terms, rows(&q, "rows"));
    json_answer(serde_json::json!({
        "status": "ok", "message-type": "work-list", "message-version": "1.0.0",
        "message": {"facets": {}, "total-results": found.len(), "items": found, "items-per-page": rows(&q, "rows"),
                    "query": {"start-index": 0, "search-terms": terms.trim()}}
    }))
}

/// Crossref's work of a DOI (case aside), or its plain-text 404.
async fn crossref_work(State(shared): State<Shared>, axum::extract::Path(doi): axum::extract::Path<String>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let works: Vec<serde_json::Value> = serde_json::from_str(CROSSREF_WORKS).expect("a fixture is a JSON list");
    match works.into_iter().find(|w| w["DOI"].as_str().is_some_and(|d| d.eq_ignore_ascii_case(&doi))) {
        Some(w) => json_answer(serde_json::json!({"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": w})),
        None => (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain")], "Resource not found.").into_response(),
    }
}

/// Semantic Scholar's refusal of a key it does not know.
fn s2_refused(headers: &axum::http::HeaderMap) -> Option<Response> {
    let key = headers.get("x-api-key")?;
    (key.as_bytes() != SEMANTIC_SCHOLAR_KEY.as_bytes()).then(|| (StatusCode::FORBIDDEN, "{\"message\":\"Forbidden\"}").into_response())
}

/// The fields of a paper a Graph API request asks for (`fields=`), `paperId` always.
fn s2_fields(paper: serde_json::Value, fields: &str) -> serde_json::Value {
    let wanted: Vec<&str> = fields.split(',').map(str::trim).filter(|f| !f.is_empty()).collect();
    match paper {
        serde_json::Value::Object(o) => o.into_iter().filter(|(k, _)| k == "paperId" || wanted.contains(&k.as_str())).collect(),
        other => other,
    }
}

/// Semantic Scholar's paper search: the papers every word of `query` occurs in.
async fn s2_search(State(shared): State<Shared>, headers: axum::http::HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await.or_else(|| s2_refused(&headers)) {
        return answer;
    }
    let found = matching(SEMANTIC_SCHOLAR_PAPERS, param(&q, "query"), rows(&q, "limit"));
    let data: Vec<serde_json::Value> = found.into_iter().map(|p| s2_fields(p, param(&q, "fields"))).collect();
    json_answer(serde_json::json!({"total": data.len(), "offset": 0, "data": data}))
}

/// Semantic Scholar's paper of an id, or its JSON 404.
async fn s2_paper(
    State(shared): State<Shared>,
    headers: axum::http::HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(answer) = faulty(&shared).await.or_else(|| s2_refused(&headers)) {
        return answer;
    }
    let papers: Vec<serde_json::Value> = serde_json::from_str(SEMANTIC_SCHOLAR_PAPERS).expect("a fixture is a JSON list");
    match papers.into_iter().find(|p| p["paperId"] == id.as_str()) {
        Some(p) => json_answer(s2_fields(p, param(&q, "fields"))),
        None => (StatusCode::NOT_FOUND, format!("{{\"error\":\"Paper with id {id} not found\"}}")).into_response(),
    }
}

/// arXiv's OAI-PMH `ListRecords`: the fixture records whose datestamp is within
/// `from`..=`until` and whose set is `set` (or under it), a page at a time; its errors as
/// arXiv answers them (HTTP 200, an `<error>` element).
async fn arxiv_oai(State(shared): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    if let Some(answer) = faulty(&shared).await {
        return answer;
    }
    let envelope = |body: String| {
        let xml = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://www.openarchives.org/OAI/2.0/ http://www.openarchives.org/OAI/2.0/OAI-PMH.xsd">
<responseDate>2026-11-27T00:00:00Z</responseDate>
<request verb="ListRecords">http://oaipmh.arxiv.org/oai</request>
{body}
</OAI-PMH>
"#
        );
        ([(header::CONTENT_TYPE, "text/xml; charset=utf-8")], xml).into_response()
    };
    let error = |code: &str, why: &str| envelope(format!(r#"<error code="{code}">{why}</error>"#));
    if param(&q, "verb") != "ListRecords" {
        return error("badVerb", "Illegal verb");
    }
    // The token names the harvest and where it is: `from|until|set|offset`.
    let (from, until, set, offset) = match q.get("resumptionToken") {
        Some(token) => {
            let parts: Vec<&str> = token.split('|').collect();
            match (parts.as_slice(), parts.get(3).and_then(|o| o.parse::<usize>().ok())) {
                ([from, until, set, _], Some(offset)) => (from.to_string(), until.to_string(), set.to_string(), offset),
                _ => return error("badResumptionToken", "Invalid or expired resumption token"),
            }
        }
        None if param(&q, "metadataPrefix") != "arXiv" => return error("cannotDisseminateFormat", "Unknown metadata format"),
        None => (param(&q, "from").to_owned(), param(&q, "until").to_owned(), param(&q, "set").to_owned(), 0),
    };
    let doc = roxmltree::Document::parse(ARXIV_OAI_RECORDS).expect("the fixture is XML");
    let records: Vec<&str> = doc
        .root_element()
        .children()
        .filter(|r| r.has_tag_name("record"))
        .filter(|r| {
            let field = |name: &str| r.descendants().find(|d| d.has_tag_name(name)).and_then(|d| d.text()).unwrap_or_default().to_owned();
            let (stamp, spec) = (field("datestamp"), field("setSpec"));
            (from.is_empty() || stamp.as_str() >= from.as_str())
                && (until.is_empty() || stamp.as_str() <= until.as_str())
                && (set.is_empty() || spec == set || spec.starts_with(&format!("{set}:")))
        })
        .map(|r| &ARXIV_OAI_RECORDS[r.range()])
        .collect();
    if records.is_empty() {
        return error("noRecordsMatch", "No records match");
    }
    let page: Vec<&str> = records.iter().skip(offset).take(ARXIV_OAI_PAGE).copied().collect();
    let next = offset + ARXIV_OAI_PAGE;
    let token = if next < records.len() {
        format!(r#"<resumptionToken cursor="{offset}" completeListSize="{}">{from}|{until}|{set}|{next}</resumptionToken>"#, records.len())
    } else {
        format!(r#"<resumptionToken cursor="{offset}" completeListSize="{}"/>"#, records.len())
    };
    envelope(format!("<ListRecords>\n{}\n{token}\n</ListRecords>", page.join("\n")))
}
