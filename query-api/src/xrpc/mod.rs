//! XRPC routing by NSID: `/xrpc/<nsid>`.
//!
//! Each namespace has one module here whose `routes()` registers each of its methods once,
//! beside its handler: NSID, query or procedure, auth level ([`method::Routes`]). Served
//! methods validate their parameters and input against their lexicon
//! ([`method::Method::prepare`]); the contract's other operations ([`catalog`]) answer 501
//! `NotImplemented`; anything else is 404 `NotFound`. The served set is what is
//! registered ([`served`]), so nothing lists it by hand.

mod activity;
mod actor;
pub mod admin;
mod alpha;
mod annotation;
mod author;
mod backlink;
pub mod catalog;
mod claiming;
mod collaboration;
mod collection;
mod discovery;
mod endorsement;
mod eprint;
pub mod governance;
mod graph;
mod import;
pub mod kept;
mod log;
pub mod method;
mod metrics;
mod moderation;
mod notification;
mod resolve;
mod review;
pub mod sync;
mod tag;

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;

use crate::error::ApiError;
use crate::state::AppState;
pub use method::{parse_params, Auth, Call, Kind, Routes};

/// Every method this build serves, by namespace.
pub fn methods() -> Routes {
    Routes::new()
        .merge(eprint::routes())
        .merge(review::routes())
        .merge(annotation::routes())
        .merge(endorsement::routes())
        .merge(tag::routes())
        .merge(discovery::routes())
        .merge(graph::routes())
        .merge(collection::routes())
        .merge(collaboration::routes())
        .merge(governance::routes())
        .merge(author::routes())
        .merge(backlink::routes())
        .merge(import::routes())
        .merge(claiming::routes())
        .merge(notification::routes())
        .merge(metrics::routes())
        .merge(moderation::routes())
        .merge(sync::routes())
        .merge(activity::routes())
        .merge(actor::routes())
        .merge(admin::routes())
        .merge(alpha::routes())
        .merge(resolve::routes())
        .merge(log::routes())
}

/// The NSIDs this build serves, sorted.
pub fn served() -> Vec<&'static str> {
    let mut nsids: Vec<&'static str> = methods().methods().iter().map(|m| m.nsid).collect();
    nsids.sort_unstable();
    nsids
}

/// The XRPC routes of `methods`: one static route per method (matched without capturing
/// the NSID), and `/xrpc/{nsid}` for the rest.
pub fn routes(methods: Routes) -> Router<AppState> {
    methods.into_router().route("/xrpc/{nsid}", any(unserved))
}

/// Answers an NSID this build does not serve: 501 for the contract's other operations and
/// those svc knows beyond it, 404 for anything else.
async fn unserved(Path(nsid): Path<String>) -> Response {
    if catalog::is_named(&nsid) || catalog::is_beyond(&nsid) {
        ApiError::not_implemented(&nsid).into_response()
    } else {
        ApiError::not_found(format!("no XRPC method {nsid}")).into_response()
    }
}
