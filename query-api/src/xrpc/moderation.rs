//! `pub.svc.moderation.*` (beyond the contract): users report records to the moderators.
//! A report is a `command.user` event; the admin model keeps it, and admins see it in
//! `admin.listViolations` and count it in `admin.getOverview`.

use event_schema::{NewEvent, Payload, Source, UserAction, UserCommand};
use projections::attached::read::AttachedReader;
use serde_json::json;

use super::method::{Answer, Auth, Call, Routes};
use crate::body::Body;
use crate::error::ApiError;
use crate::params::parse_record_uri;
use crate::reads::blocking;

/// The namespace's methods.
pub fn routes() -> Routes {
    Routes::new().procedure("pub.svc.moderation.createReport", Auth::Required, create_report)
}

/// `createReport {targetUri, targetCollection, reason, description?}` → `{success, id}`:
/// `NotFound` for a record svc does not index (never seen, deleted or taken down); the
/// collection must be the URI's. Answers once the admin model applied the report.
async fn create_report(c: Call) -> Answer {
    let caller = c.caller()?.did.clone();
    let uri = c.input["targetUri"].as_str().unwrap_or_default().to_owned();
    parse_record_uri("targetUri", &uri)?;
    let collection = c.input["targetCollection"].as_str().unwrap_or_default().to_owned();
    let named = lexicons::formats::parse_at_uri(&uri).and_then(|u| u.collection).unwrap_or_default();
    if named != collection {
        return Err(ApiError::invalid_param("targetCollection", format!("the URI names the collection {named}, not {collection}")));
    }
    let known = blocking(&c.state, || -> Result<bool, ApiError> {
        let r = AttachedReader::new(c.state.store.as_ref())?;
        if collection == lexicons::SUBMISSION {
            return Ok(r.eprints().get(&uri)?.is_some());
        }
        Ok(r.get(&uri)?.is_some_and(|i| !i.deleted))
    })?;
    if !known {
        return Err(ApiError::not_found(format!("svc indexes no record at {uri}")));
    }
    let action = UserAction::Reported {
        target_uri: uri,
        target_collection: collection,
        reason: c.input["reason"].as_str().unwrap_or_default().to_owned(),
        description: c.input["description"].as_str().map(str::to_owned),
    };
    let event = NewEvent {
        key: caller.clone(),
        source: Source::Command {
            nsid: "pub.svc.moderation.createReport".into(),
            caller: caller.clone(),
            host: c.state.identity.public_url.clone(),
        },
        payload: Payload::User(UserCommand { caller, action }),
    };
    let position = crate::command::append(&c.state, event).await?;
    Body::json(&json!({"success": true, "id": position.ordinal().to_string()}))
}
