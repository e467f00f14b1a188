use serde::{Deserialize, Serialize};

/// An account's hosting status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountChange {
    /// The account's DID.
    pub did: String,
    /// Whether the account's content may be shown.
    pub active: bool,
    /// Why the account is inactive, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AccountStatus>,
}

/// Why an account is inactive, as the firehose's `#account` frame says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccountStatus {
    /// Taken down by a moderator.
    Takendown,
    /// Suspended for a while.
    Suspended,
    /// Deactivated by its owner.
    Deactivated,
    /// Deleted for good.
    Deleted,
    /// Another status this build does not know.
    #[serde(untagged)]
    Other(String),
}

impl AccountStatus {
    /// The status a stream names (`takendown`, `suspended`, `deactivated`, `deleted`, or
    /// another kept as is).
    pub fn from_name(name: &str) -> AccountStatus {
        match name {
            "takendown" => AccountStatus::Takendown,
            "suspended" => AccountStatus::Suspended,
            "deactivated" => AccountStatus::Deactivated,
            "deleted" => AccountStatus::Deleted,
            other => AccountStatus::Other(other.to_owned()),
        }
    }
}
