use serde::{Deserialize, Serialize};

/// An operator's action through the admin API (`pub.svc.admin.*`), as a command event: what
/// an admin deleted, which dead letter was retried or dismissed, and the life of a backfill
/// operation. Every read model that the action concerns applies it in log order, so a
/// replay reproduces it; anyone tapping the log sees it.
///
/// Keys: a content deletion is keyed by the record's repository DID (ordered with that
/// repository's events), a dead-letter release by the dead letter's own key (ordered after
/// the event it releases), an operation's events by [`OPERATIONS_KEY`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminCommand {
    /// The DID of the admin who acted, or svc's own DID for what a node does by itself
    /// (progress of an operation, one reported failed after a restart).
    pub actor: String,
    /// What was done.
    pub action: AdminAction,
}

/// The key of every operation event, so that an operation's events stay in order.
pub const OPERATIONS_KEY: &str = "svc:operations";

/// What an [`AdminCommand`] does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum AdminAction {
    /// Indexed content is taken down (`deleteContent`): every read model drops the record
    /// and keeps it out, whatever its repository writes later.
    ContentDeleted {
        /// The record's AT URI.
        uri: String,
        /// Its collection NSID.
        collection: String,
        /// Why, as the admin gave it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A dead letter of one read model leaves its dead letters: dismissed, or retried (the
    /// retried event is appended again right after this one, and parks anew if it fails
    /// again).
    DeadLetterReleased {
        /// The read model that parked it.
        model: String,
        /// The log partition of the parked event.
        partition: u32,
        /// The log offset of the parked event.
        offset: u64,
        /// Whether it is retried (or dismissed).
        retried: bool,
    },
    /// A repository host is registered (again) by an admin (`rescanPDS`).
    HostRegistered {
        /// The host's base URL.
        url: String,
    },
    /// A backfill operation begins.
    OperationStarted {
        /// The operation's id (a UUID).
        id: String,
        /// Its type: `fullReindex`, `didSync`, `freshnessScan`, `pdsScan`, …
        operation: String,
        /// Whether a node runs it (`false` for a record made by `triggerBackfill` alone).
        runs: bool,
        /// What it was given (`did`, `pdsUrl`, extra metadata), as JSON text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<String>,
    },
    /// An operation reports progress.
    OperationProgressed {
        /// The operation's id.
        id: String,
        /// Items done so far.
        processed: u64,
        /// Items in all, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
    },
    /// An admin asks a running operation to stop; the node running it stops and ends it as
    /// cancelled.
    OperationCancelRequested {
        /// The operation's id.
        id: String,
    },
    /// svc published an approved governance proposal to its governance repository (or
    /// found it could not): the one record of that repository it wrote (or found written)
    /// for the proposal. Keyed by the governance repository's DID; the publisher publishes
    /// each proposal once, and a second report of one changes nothing.
    GovernancePublished {
        /// The proposal's AT URI.
        proposal: String,
        /// The node or edge record written for it.
        uri: String,
        /// The CID written, when it was.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cid: Option<String>,
        /// Why it could not be published (a target outside the governance repository, a
        /// proposed node without a label…), when it could not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A governance role is set (docs/spec details §7): granted to a governance
    /// administrator svc was started with (`--governance-admins`), or revoked by a governance
    /// administrator (`revokeRole`: no role, the account is a community member again).
    /// Keyed by the account's DID.
    GovernanceRoleSet {
        /// The account.
        did: String,
        /// The role (`trusted-editor`, `graph-editor`, `domain-expert`, `administrator`), or
        /// none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// Why, as given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An administrator approves or rejects a pending authorship claim. Keyed by the
    /// claimed paper's key, after the claim.
    ClaimDecided {
        /// The claim.
        claim_id: u64,
        /// Approved (or rejected).
        approved: bool,
        /// The reason of a rejection.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A governance administrator decides a pending elevation request; an approval grants
    /// the role asked for. Keyed by the requester's DID, after the request.
    ElevationDecided {
        /// The request's id.
        id: String,
        /// The requester.
        did: String,
        /// Approved (or rejected).
        approved: bool,
        /// The administrator's notes or reason.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// A governance administrator delegates the writing of records of some collections to
    /// an account, until a time and within a daily limit. Keyed by the delegate's DID.
    DelegationGranted {
        /// The delegation's id (a UUID).
        id: String,
        /// The delegate.
        delegate: String,
        /// The collections (NSIDs) delegated.
        collections: Vec<String>,
        /// When it ends (RFC 3339), at most 365 days after it is granted.
        expires_at: String,
        /// The most records a day it allows.
        max_records_per_day: u32,
    },
    /// A governance administrator revokes a delegation. Keyed by the delegate's DID.
    DelegationRevoked {
        /// The delegation's id.
        id: String,
        /// The delegate.
        delegate: String,
    },
    /// svc's communities job found the communities of the shared knowledge graph by one
    /// algorithm (`getCommunities` answers the newest). Keyed `svc:communities`.
    CommunitiesComputed {
        /// `louvain` or `label-propagation`.
        algorithm: String,
        /// The nodes of the graph it read.
        nodes: u64,
        /// The edges of the graph it read.
        edges: u64,
        /// The communities: each its nodes' AT URIs, sorted; largest first.
        communities: Vec<Vec<String>>,
    },
    /// An operation ends: `completed`, `failed` or `cancelled`.
    OperationEnded {
        /// The operation's id.
        id: String,
        /// How it ended.
        status: String,
        /// Items done.
        processed: u64,
        /// Why it failed, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}
