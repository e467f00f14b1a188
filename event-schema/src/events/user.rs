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
    /// `pub.svc.activity.log`: the caller is about to write a record to their repository;
    /// the record's arrival confirms it.
    ActivityLogged(Box<LoggedActivity>),
    /// `pub.svc.discovery.recordInteraction`: the caller acted on a recommended eprint.
    Interacted {
        /// The eprint.
        eprint_uri: String,
        /// `view`, `click`, `endorse`, `dismiss` or `claim`.
        kind: String,
        /// The recommendation acted on, when the client names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        recommendation_id: Option<String>,
    },
    /// `pub.svc.governance.requestElevation`: the caller asks for a governance role. It is
    /// granted at once when every eligibility rule held when asked (`granted`); otherwise
    /// the request waits for a governance administrator, with the rules that did not hold.
    ElevationRequested {
        /// The request's id (a UUID).
        id: String,
        /// The role asked for (`trusted-editor`).
        target_role: String,
        /// Granted at once.
        granted: bool,
        /// The eligibility rules that did not hold.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unmet: Vec<String>,
    },
    /// `pub.svc.claiming.startClaim`: the caller claims authorship of an imported paper.
    /// Keyed by the paper's key ([`crate::ExternalPaper::key`]), so the claims of one paper
    /// are applied in order: the claim is made only when the paper is imported, not
    /// claimed and not claimed by the caller already when it is applied.
    ClaimStarted {
        /// The request's id (a UUID), by which the caller's answer finds the claim.
        request_id: String,
        /// The paper's source.
        source: String,
        /// The paper's id at the source.
        external_id: String,
        /// The caller's position in the paper's author list (from 0), when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author_position: Option<u32>,
        /// The ORCID iD the caller gives as evidence.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        orcid: Option<String>,
        /// The claim score (0 to 100) from the evidence when asked (docs/claiming.md).
        score: u32,
        /// What the score is made of, by evidence name.
        #[serde(default)]
        evidence: std::collections::BTreeMap<String, u32>,
    },
    /// `pub.svc.claiming.completeClaim`: the claimant names the eprint she wrote in her
    /// repository for the claimed paper. Keyed by the paper's key.
    ClaimCompleted {
        /// The claim.
        claim_id: u64,
        /// The AT URI of the eprint record.
        canonical_uri: String,
    },
    /// `pub.svc.claiming.requestCoauthorship`: the caller asks the owner of an eprint to be
    /// recognised as one of its listed authors. Keyed by the eprint's URI.
    CoauthorRequested {
        /// The request's id (a UUID), by which the caller's answer finds it.
        request_id: String,
        /// The eprint.
        eprint_uri: String,
        /// The eprint's owner (its repository's DID).
        owner_did: String,
        /// The caller's name, as she gives it.
        claimant_name: String,
        /// The position in the eprint's author list (from 0).
        author_index: u32,
        /// The name listed there.
        author_name: String,
        /// A word to the owner.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// `pub.svc.claiming.approveCoauthor` / `rejectCoauthor`: the eprint's owner decides a
    /// pending co-author request. Keyed by the eprint's URI.
    CoauthorDecided {
        /// The request.
        request_id: u64,
        /// Approved (or rejected).
        approved: bool,
        /// The reason of a rejection.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// `pub.svc.claiming.dismissSuggestion`: the caller does not want a paper suggested to
    /// her again. Keyed by the caller.
    SuggestionDismissed {
        /// The paper's source (`svc` for an eprint svc indexes).
        source: String,
        /// Its id there.
        external_id: String,
    },
    /// `pub.svc.activity.markFailed`: the write the caller logged for this record failed.
    ActivityFailed {
        /// The record's collection.
        collection: String,
        /// The record's key.
        rkey: String,
        /// The client's error code.
        error_code: String,
        /// The client's error message.
        error_message: String,
    },
}

/// What `pub.svc.activity.log` announces (see [`UserAction::ActivityLogged`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedActivity {
    /// The record's collection.
    pub collection: String,
    /// The record's key.
    pub rkey: String,
    /// `create`, `update` or `delete`.
    pub write: String,
    /// What kind of activity (`eprint_submit`, `review_create`…).
    pub category: String,
    /// What the record is about, when the client says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_uri: Option<String>,
    /// Its title, when the client says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_title: Option<String>,
    /// The client's trace, span and UI context, kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// See `trace_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// See `trace_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui_context: Option<String>,
}
