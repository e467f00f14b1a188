//! Event payloads, one file per family.

mod access;
mod account;
mod admin;
mod backlink;
mod external;
mod identity;
mod record;
mod rejected;
mod usage;
mod user;

pub use access::{AccessAction, AccessChange, OnceProof};
pub use account::{AccountChange, AccountStatus};
pub use admin::{AdminAction, AdminCommand, OPERATIONS_KEY};
pub use backlink::BacklinkChange;
pub use external::{CitedWork, Enrichment, ExternalAuthor, ExternalPaper, Topic};
pub use identity::IdentityChange;
pub use record::{RecordDelete, RecordWrite};
pub use rejected::Rejected;
pub use usage::{SearchImpression, UsageAction, UsageEvent};
pub use user::{LoggedActivity, UserAction, UserCommand};

use serde::Serialize;

use crate::EventKind;

/// The content of an event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Payload {
    /// A record was created in a repository.
    RecordCreate(RecordWrite),
    /// A record in a repository was replaced.
    RecordUpdate(RecordWrite),
    /// A record was deleted from a repository.
    RecordDelete(RecordDelete),
    /// An account's handle or DID document changed.
    Identity(IdentityChange),
    /// An account's hosting status changed.
    Account(AccountChange),
    /// A repository change ingest refused.
    Rejected(Rejected),
    /// A backlink created or withdrawn through the API (a command).
    Backlink(BacklinkChange),
    /// A change of roles, sessions or second factors, or an audited refusal (a command).
    Access(AccessChange),
    /// An operator's action through the admin API (a command).
    Admin(AdminCommand),
    /// A signed-in user's own action through the API (a command).
    User(UserCommand),
    /// A reader's use of an eprint: a view, a download, a search click (a command).
    Usage(UsageEvent),
    /// A search's results shown (a command).
    Search(SearchImpression),
    /// A paper fetched from an external source.
    External(Box<ExternalPaper>),
    /// What an external bibliographic service knows of an indexed eprint.
    Enrichment(Box<Enrichment>),
}

impl Payload {
    /// The kind of event this payload makes.
    pub fn kind(&self) -> EventKind {
        match self {
            Payload::RecordCreate(_) => EventKind::RecordCreate,
            Payload::RecordUpdate(_) => EventKind::RecordUpdate,
            Payload::RecordDelete(_) => EventKind::RecordDelete,
            Payload::Identity(_) => EventKind::Identity,
            Payload::Account(_) => EventKind::Account,
            Payload::Rejected(_) => EventKind::Rejected,
            Payload::Backlink(_) => EventKind::Backlink,
            Payload::Access(_) => EventKind::Access,
            Payload::Admin(_) => EventKind::Admin,
            Payload::User(_) => EventKind::User,
            Payload::Usage(_) => EventKind::Usage,
            Payload::Search(_) => EventKind::Search,
            Payload::External(_) => EventKind::External,
            Payload::Enrichment(_) => EventKind::Enrichment,
        }
    }

    /// The DID of the repository or account the event is about.
    pub fn did(&self) -> &str {
        match self {
            Payload::RecordCreate(w) | Payload::RecordUpdate(w) => &w.did,
            Payload::RecordDelete(d) => &d.did,
            Payload::Identity(i) => &i.did,
            Payload::Account(a) => &a.did,
            Payload::Rejected(r) => &r.did,
            Payload::Backlink(b) => &b.caller,
            Payload::Access(a) => &a.subject,
            Payload::Admin(a) => &a.actor,
            Payload::User(u) => &u.caller,
            // The repository of the eprint used.
            Payload::Usage(u) => u.uri.strip_prefix("at://").and_then(|r| r.split('/').next()).unwrap_or_default(),
            // No account: a searcher is a pseudonym.
            Payload::Search(_) => "",
            // No account: the paper is not in a repository.
            Payload::External(_) => "",
            // The eprint's repository.
            Payload::Enrichment(e) => e.eprint_uri.strip_prefix("at://").and_then(|r| r.split('/').next()).unwrap_or_default(),
        }
    }

    /// The collection and record key of a record event (create, update, delete).
    pub fn record(&self) -> Option<(&str, &str)> {
        match self {
            Payload::RecordCreate(w) | Payload::RecordUpdate(w) => Some((&w.collection, &w.rkey)),
            Payload::RecordDelete(d) => Some((&d.collection, &d.rkey)),
            _ => None,
        }
    }
}
