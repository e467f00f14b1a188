use serde::{Deserialize, Serialize};

/// A repository change that ingest refused (a commit whose signature does not verify, a CAR
/// whose blocks do not match their CIDs, …). Kept in the log so that the refusal is
/// auditable, replays reproduce it, and the projections list it in their dead letters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejected {
    /// The repository DID.
    pub did: String,
    /// The revision of the refused commit, if it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// Why it was refused.
    pub reason: String,
}
