//! One XRPC method as a namespace registers it ([`Routes`]), and the steps every call goes
//! through before its handler ([`Method::prepare`]): the HTTP method, the parameters
//! validated against the lexicon (after aliases), the caller, and for a procedure the JSON
//! body, bounded and validated, and the client (address, user agent).

use std::borrow::Cow;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::http::{header, HeaderValue, Method as HttpMethod};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use lexicons::{LexiconError, Params};
use projections::access::Role;
use serde_json::Value;

use crate::body::Body;
use crate::error::ApiError;
use crate::identity::{Caller, Resolved};
use crate::state::AppState;
use crate::xrpc::kept::KeptAnswers;

/// The largest procedure body accepted.
pub const MAX_BODY: usize = 64 * 1024;

/// What a handler answers.
pub type Answer = Result<Body, ApiError>;

/// A query (GET), a procedure (POST) or a subscription (a WebSocket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Read-only, parameters in the query string.
    Query,
    /// A change, input in a JSON body.
    Procedure,
    /// A stream of messages over a WebSocket, parameters in the query string of the
    /// upgrade request.
    Subscription,
}

/// Who may call a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Anyone; no credential is read.
    Open,
    /// A verified caller only (a service-auth token for the method or a session access
    /// token): 401 otherwise.
    Required,
    /// A verified caller holding the role (`admin` holds every role): 401 without a caller,
    /// 403 without the role.
    Role(Role),
}

/// One call, once [`Method::prepare`] has checked it.
pub struct Call {
    /// The shared state.
    pub state: AppState,
    /// The parameters, validated against the method's lexicon.
    pub params: Params,
    /// A procedure's input, validated against its lexicon (`Null` for a query).
    pub input: Value,
    /// The verified caller (always present unless the method is [`Auth::Open`], where it is
    /// present when a valid credential was sent).
    pub caller: Option<Caller>,
    /// The client, as a procedure sees it (empty for a query).
    pub client: Client,
}

/// The client of a procedure: its address (behind trusted proxies, the forwarded one) and
/// its user agent.
#[derive(Debug, Clone, Default)]
pub struct Client {
    /// The client's address, when known.
    pub ip: Option<std::net::IpAddr>,
    /// The `User-Agent` header.
    pub user_agent: Option<String>,
}

impl Call {
    /// The verified caller of a method registered [`Auth::Required`].
    pub fn caller(&self) -> Result<&Caller, ApiError> {
        self.caller.as_ref().ok_or_else(|| ApiError::auth_required("this method needs credentials"))
    }

    /// A string parameter, `""` when absent.
    pub fn str(&self, name: &str) -> &str {
        self.params.str(name).unwrap_or_default()
    }

    /// The `limit` parameter, `default` when absent (its bounds are the lexicon's).
    pub fn limit(&self, default: usize) -> usize {
        self.params.int("limit").map_or(default, |l| l.max(0) as usize)
    }

    /// The command event of this call to `nsid` (principle 1): `payload` under the log key
    /// `key`, its source the method, the verified caller and this service's address.
    pub fn command(&self, nsid: &str, key: &str, payload: event_schema::Payload) -> event_schema::NewEvent {
        let caller = self.caller.as_ref().map(|k| k.did.clone()).unwrap_or_default();
        event_schema::NewEvent {
            key: key.to_owned(),
            source: event_schema::Source::Command { nsid: nsid.to_owned(), caller, host: self.state.identity.public_url.clone() },
            payload,
        }
    }
}

type BoxedHandler = Arc<dyn Fn(Call) -> Pin<Box<dyn Future<Output = Answer> + Send>> + Send + Sync>;

enum Handler {
    /// Answers from the read models at once, on the request's task.
    Read(fn(&Call) -> Answer),
    /// As [`Handler::Read`], for an answer that is a function of the query string and the
    /// read models alone: kept per state of the store, in the node's [`KeptAnswers`]
    /// ([`crate::state::Shared::kept_answers`]).
    Kept(fn(&Call) -> Answer),
    /// Awaits something (a search slot, a repository host, the log).
    Async(BoxedHandler),
    /// Takes over the connection once the upgrade to a WebSocket is answered.
    Subscribe(fn(Call, WebSocketUpgrade) -> Response),
}

/// A registered XRPC method.
pub struct Method {
    /// The NSID.
    pub nsid: &'static str,
    /// Query or procedure.
    pub kind: Kind,
    /// Who may call it.
    pub auth: Auth,
    /// Parameter aliases `(alias, canonical)`: an alias is used only when its canonical
    /// name is absent.
    pub aliases: &'static [(&'static str, &'static str)],
    handler: Handler,
}

impl Method {
    /// Checks a request up to the handler's work (see the module docs). Credentials are
    /// checked before the body is read, so an anonymous caller learns nothing from it.
    pub async fn prepare(&self, state: AppState, request: Request) -> Result<Call, ApiError> {
        let http = request.method();
        match self.kind {
            Kind::Query if http != HttpMethod::GET && http != HttpMethod::HEAD => {
                return Err(ApiError::wrong_method(format!("{} is a query: use GET", self.nsid), Some("GET, HEAD")));
            }
            Kind::Procedure if http != HttpMethod::POST => {
                return Err(ApiError::wrong_method(format!("{} is a procedure: use POST", self.nsid), Some("POST")));
            }
            Kind::Subscription if http != HttpMethod::GET => {
                return Err(ApiError::wrong_method(
                    format!("{} is a subscription: connect with a WebSocket (GET)", self.nsid),
                    Some("GET"),
                ));
            }
            _ => {}
        }
        let caller = request.extensions().get::<Resolved>().and_then(|r| r.0.clone());
        match (self.auth, &caller) {
            (Auth::Open, _) => {}
            (Auth::Required | Auth::Role(_), None) => {
                return Err(ApiError::auth_required(format!("{} needs credentials (Authorization: Bearer …)", self.nsid)));
            }
            (Auth::Role(role), Some(c)) if !c.has(role) => {
                return Err(ApiError::missing_role(role, c.top_role(), self.nsid.starts_with("pub.svc.admin.")));
            }
            _ => {}
        }
        let params = parse_params(&state, self.nsid, request.uri().query().unwrap_or_default(), self.aliases)?;
        let (input, client) = match self.kind {
            Kind::Query | Kind::Subscription => (Value::Null, Client::default()),
            Kind::Procedure => {
                let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
                let client = Client {
                    ip: state.auth.limits.client_ip(peer, request.headers()),
                    user_agent: request.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(str::to_owned),
                };
                (read_input(&state, self.nsid, request).await?, client)
            }
        };
        Ok(Call { state, params, input, caller, client })
    }

    /// Answers a request.
    pub async fn answer(&self, state: AppState, request: Request) -> Response {
        match &self.handler {
            Handler::Kept(f) => return self.answer_kept(*f, state, request).await,
            Handler::Subscribe(f) => return self.subscribe(*f, state, request).await,
            _ => {}
        }
        let result = match self.prepare(state, request).await {
            Ok(call) => match &self.handler {
                Handler::Read(f) => f(&call),
                Handler::Async(f) => f(call).await,
                Handler::Kept(_) | Handler::Subscribe(_) => unreachable!("answered above"),
            },
            Err(e) => Err(e),
        };
        match result {
            Ok(body) => body.into_response(),
            Err(e) => e.into_response(),
        }
    }

    /// Answers a subscription: a request that is no WebSocket upgrade gets an HTTP error in
    /// the XRPC envelope; an upgrade whose credentials or parameters are refused is upgraded
    /// and closed at once with that error as its one frame (a WebSocket client sees no HTTP
    /// answer to a refused upgrade).
    async fn subscribe(&self, f: fn(Call, WebSocketUpgrade) -> Response, state: AppState, request: Request) -> Response {
        let (mut parts, body) = request.into_parts();
        let upgrade = WebSocketUpgrade::from_request_parts(&mut parts, &state).await;
        let request = Request::from_parts(parts, body);
        let Ok(upgrade) = upgrade else {
            let e = match self.prepare(state, request).await {
                Err(e) => e,
                Ok(_) => ApiError::invalid_request(format!(
                    "{} is a subscription: connect with a WebSocket (GET with Upgrade: websocket)",
                    self.nsid
                )),
            };
            return e.into_response();
        };
        match self.prepare(state, request).await {
            Ok(call) => f(call, upgrade),
            Err(e) => crate::tap::refuse(upgrade, e),
        }
    }

    /// Answers a request to a method whose answers are kept: the kept answer to the same
    /// query string at the store's present state, else a new one, kept if no write began
    /// while it was computed. (Errors are not kept.) A method that needs a caller checks
    /// the caller's credential before anything kept is served.
    async fn answer_kept(&self, f: fn(&Call) -> Answer, state: AppState, request: Request) -> Response {
        let kept = state.kept_answers.clone();
        let kept = kept.as_ref();
        let read = request.method() == HttpMethod::GET || request.method() == HttpMethod::HEAD;
        let mark = if read { state.store.state_mark() } else { None };
        // Methods share the node's kept answers: each query string under its method's NSID.
        let query = format!("{}?{}", self.nsid, request.uri().query().unwrap_or_default());
        let query = query.as_str();
        let gzip = accepts_gzip(request.headers());
        let open = self.auth == Auth::Open;
        if let (Some(mark), true) = (mark, open) {
            if let Some(answer) = kept.get(query, mark) {
                return kept_response(kept, query, answer, gzip);
            }
        }
        let query = mark.map(|_| query.to_owned());
        let call = match self.prepare(state.clone(), request).await {
            Ok(call) => call,
            Err(e) => return e.into_response(),
        };
        if let (Some(mark), Some(query), false) = (mark, &query, open) {
            if let Some(answer) = kept.get(query, mark) {
                return kept_response(kept, query, answer, gzip);
            }
        }
        let result = f(&call);
        if let (Ok(body), Some(mark), Some(query)) = (&result, mark, query) {
            if state.store.unchanged_since(mark) {
                kept.keep(query, mark, body.clone());
            }
        }
        match result {
            Ok(body) => ([(header::VARY, HeaderValue::from_static("accept-encoding"))], body).into_response(),
            Err(e) => e.into_response(),
        }
    }
}

/// Whether a request's `Accept-Encoding` names gzip (and does not refuse it with `q=0`).
fn accepts_gzip(headers: &axum::http::HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|coding| {
        let mut parts = coding.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let refused = parts.any(|p| p.strip_prefix("q=").is_some_and(|q| q.parse::<f32>().is_ok_and(|q| q == 0.0)));
        (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
    })
}

/// A kept answer to `query`: gzipped for a client that accepts it (compressed the first
/// time one is sent it again, [`KeptAnswers::gzipped`]); `Vary: Accept-Encoding` either way,
/// for caches in front of svc.
fn kept_response(kept: &KeptAnswers, query: &str, answer: crate::xrpc::kept::Kept, gzip: bool) -> Response {
    let vary = (header::VARY, HeaderValue::from_static("accept-encoding"));
    let answer = if gzip { kept.gzipped(query, answer.clone()).unwrap_or(answer) } else { answer };
    match answer.gzip {
        Some(compressed) if gzip => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static(answer.body.content_type())),
                (header::CONTENT_ENCODING, HeaderValue::from_static("gzip")),
                vary,
            ],
            compressed,
        )
            .into_response(),
        _ => ([vary], answer.body).into_response(),
    }
}

/// A procedure's JSON body, bounded and validated against its lexicon.
async fn read_input(state: &AppState, nsid: &str, request: Request) -> Result<Value, ApiError> {
    let (parts, body) = request.into_parts();
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    let body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| ApiError::invalid_request(format!("the body could not be read whole, or is larger than {MAX_BODY} bytes")))?;
    // An empty body is an empty object: procedures without input (the admin triggers) are
    // often called without one.
    let input: Value = if body.is_empty() {
        Value::Object(serde_json::Map::new())
    } else if !is_json {
        return Err(ApiError::invalid_request(format!("{nsid} takes a JSON body (Content-Type: application/json)")));
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::invalid_request(format!("the body is not JSON: {e}")))?
    };
    state.lexicons.validate_input(nsid, &input).map_err(lexicon_error)?;
    Ok(input)
}

fn lexicon_error(e: LexiconError) -> ApiError {
    match e {
        LexiconError::Invalid(v) => ApiError::invalid_param(&v.path, v.message),
        other => ApiError::from_error(other),
    }
}

/// Parses and validates a query string. (Its pairs borrow from the query where nothing was
/// escaped; invalid UTF-8 in an escape becomes U+FFFD, as in every form decoder.)
pub fn parse_params(state: &AppState, nsid: &str, query: &str, aliases: &[(&str, &str)]) -> Result<Params, ApiError> {
    let mut raw: Vec<(Cow<str>, Cow<str>)> = form_urlencoded::parse(query.as_bytes()).collect();
    for (alias, canonical) in aliases {
        if !raw.iter().any(|(k, _)| k == canonical) {
            for (k, _) in raw.iter_mut().filter(|(k, _)| k == alias) {
                *k = Cow::Borrowed(canonical);
            }
        }
    }
    state.lexicons.validate_params(nsid, &raw).map_err(lexicon_error)
}

/// The methods of one or more namespaces, each registered once.
#[derive(Default)]
pub struct Routes(Vec<Method>);

impl Routes {
    /// No methods yet.
    pub fn new() -> Routes {
        Routes::default()
    }

    fn push(mut self, nsid: &'static str, kind: Kind, auth: Auth, handler: Handler) -> Routes {
        assert!(!self.0.iter().any(|m| m.nsid == nsid), "{nsid} is registered twice");
        self.0.push(Method { nsid, kind, auth, aliases: &[], handler });
        self
    }

    /// A query answered from the read models at once, on the request's task.
    pub fn query(self, nsid: &'static str, auth: Auth, handler: fn(&Call) -> Answer) -> Routes {
        self.push(nsid, Kind::Query, auth, Handler::Read(handler))
    }

    /// A query that awaits (a search slot, a repository host, another task).
    pub fn query_async<F, Fut>(self, nsid: &'static str, auth: Auth, handler: F) -> Routes
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        self.push(nsid, Kind::Query, auth, Handler::Async(Arc::new(move |call| Box::pin(handler(call)))))
    }

    /// A subscription: `handler` answers the upgrade and serves the socket.
    pub fn subscription(self, nsid: &'static str, auth: Auth, handler: fn(Call, WebSocketUpgrade) -> Response) -> Routes {
        self.push(nsid, Kind::Subscription, auth, Handler::Subscribe(handler))
    }

    /// A procedure.
    pub fn procedure<F, Fut>(self, nsid: &'static str, auth: Auth, handler: F) -> Routes
    where
        F: Fn(Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        self.push(nsid, Kind::Procedure, auth, Handler::Async(Arc::new(move |call| Box::pin(handler(call)))))
    }

    /// Keeps the answers of the method registered last per state of the store
    /// ([`KeptAnswers`]): for a query answered at once whose answer is a function of its
    /// query string and the read models alone (no caller, no clock, no search index), open
    /// or asked by any verified caller (the answer the same for each).
    pub fn kept(mut self) -> Routes {
        let last = self.0.last_mut().expect("a method to keep the answers of");
        assert!(
            matches!(last.auth, Auth::Open | Auth::Required),
            "{}: a method behind a role is not kept (its answers are few and its callers fewer)",
            last.nsid
        );
        let Handler::Read(f) = last.handler else { panic!("{}: only a query answered at once can be kept", last.nsid) };
        last.handler = Handler::Kept(f);
        self
    }

    /// Sets the parameter aliases of the method registered last.
    pub fn aliases(mut self, aliases: &'static [(&'static str, &'static str)]) -> Routes {
        if let Some(last) = self.0.last_mut() {
            last.aliases = aliases;
        }
        self
    }

    /// Both sets of methods.
    pub fn merge(self, other: Routes) -> Routes {
        other.0.into_iter().fold(self, |routes, m| {
            assert!(!routes.0.iter().any(|r| r.nsid == m.nsid), "{} is registered twice", m.nsid);
            let mut routes = routes;
            routes.0.push(m);
            routes
        })
    }

    /// The registered methods.
    pub fn methods(&self) -> &[Method] {
        &self.0
    }

    /// One static route per method, `/xrpc/<nsid>`.
    pub fn into_router(self) -> Router<AppState> {
        self.0.into_iter().fold(Router::new(), |router, method| {
            let method = Arc::new(method);
            let path = format!("/xrpc/{}", method.nsid);
            router.route(
                &path,
                any(move |State(state): State<AppState>, request: Request| {
                    let method = method.clone();
                    async move { method.answer(state, request).await }
                }),
            )
        })
    }
}
