//! `pub.svc.log.*` (beyond the contract): the live tap of the log ([`crate::tap`]).

use axum::extract::ws::WebSocketUpgrade;
use axum::response::Response;
use projections::access::Role;

use super::{Auth, Call, Routes};
use crate::error::{ApiError, ErrorCode};
use crate::tap::{self, Audience, Filter, Subscription};

/// The methods of `pub.svc.log`.
pub fn routes() -> Routes {
    Routes::new().subscription("pub.svc.log.subscribe", Auth::Open, subscribe)
}

/// `subscribe`: anyone follows the public events; an admin (by a credential sent with the
/// upgrade) follows every event, secrets redacted.
fn subscribe(call: Call, upgrade: WebSocketUpgrade) -> Response {
    let audience = if call.caller.as_ref().is_some_and(|c| c.has(Role::Admin)) { Audience::Admin } else { Audience::Public };
    let filter = match Filter::new(
        &call.params.strs("wantedKinds"),
        &call.params.strs("wantedCollections"),
        &call.params.strs("wantedDids"),
        audience,
    ) {
        Ok(f) => f,
        Err(e) => return tap::refuse(upgrade, e),
    };
    let Some(permit) = call.state.tap.admit() else {
        let e =
            ApiError::new(ErrorCode::ServiceUnavailable, "this node serves as many log subscribers as it may: try another node or later");
        return tap::refuse(upgrade, e);
    };
    let state = call.state.clone();
    let cursor = call.params.str("cursor").map(str::to_owned);
    // The cursor is resolved (a few log reads for a time) once the socket is open: a
    // refused one is the socket's one frame.
    upgrade.max_write_buffer_size(tap::WRITE_BUFFER).on_upgrade(move |socket| async move {
        match Subscription::start(&state.log, cursor.as_deref(), filter, audience).await {
            Ok(subscription) => tap::follow(socket, state.tap.clone(), subscription, permit).await,
            Err(e) => tap::close(socket, &e).await,
        }
    })
}
