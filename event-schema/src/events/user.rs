use serde::{Deserialize, Serialize};

/// A signed-in user's own action through the API (a command): what concerns only the
/// caller, such as marking notifications seen. Keyed by the caller's DID, so one user's
/// actions are applied in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserCommand {
    /// The DID of the verified caller.
    pub caller: String,
    /// What the caller did.
    pub action: UserAction,
}

/// The actions of [`UserCommand`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum UserAction {
    /// `pub.svc.notification.updateSeen`: the caller has seen every notification svc
    /// indexed up to `seen_at`.
    NotificationsSeen {
        /// When, as the caller says (RFC 3339, not in the future).
        seen_at: String,
    },
    /// `pub.svc.moderation.createReport`: the caller reports a record to the moderators.
    Reported {
        /// The AT URI of the record reported.
        target_uri: String,
        /// Its collection.
        target_collection: String,
        /// `spam`, `inappropriate`, `copyright`, `misinformation` or `other`.
        reason: String,
        /// What the caller adds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}
