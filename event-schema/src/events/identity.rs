use serde::{Deserialize, Serialize};

/// An account's identity changed: a new handle, or a new DID document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityChange {
    /// The account's DID.
    pub did: String,
    /// The account's current handle, when the source told it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// The display name, when the source told it (seeded accounts have one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}
