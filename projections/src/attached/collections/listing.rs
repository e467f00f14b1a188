//! Listings: the partitions of the `listing` table, and the kinds of records they list.

/// What a listing lists: the kind of record, shared by the collections of one family (both
/// entity-link collections are `entityLink`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Reviews.
    Review,
    /// Annotations.
    Annotation,
    /// Entity links.
    EntityLink,
    /// Endorsements.
    Endorsement,
    /// User tags.
    Tag,
    /// Citations.
    Citation,
    /// Related works.
    RelatedWork,
    /// Versions.
    Version,
    /// Changelogs.
    Changelog,
    /// Author profiles.
    Profile,
    /// A per-account settings record (discovery settings, profile page configuration).
    Settings,
    /// Knowledge graph nodes.
    GraphNode,
    /// Knowledge graph edges.
    GraphEdge,
    /// Reconciliations with external authorities.
    Reconciliation,
    /// Governance proposals, of nodes and of edges.
    Proposal,
    /// Votes on proposals.
    Vote,
    /// Collaboration invites.
    Invite,
    /// Acceptances of collaboration invites.
    InviteAcceptance,
    /// Margin's annotations and highlights.
    Margin,
}

impl Kind {
    /// The name in listing partitions, e.g. `relatedWork`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Review => "review",
            Kind::Annotation => "annotation",
            Kind::EntityLink => "entityLink",
            Kind::Endorsement => "endorsement",
            Kind::Tag => "tag",
            Kind::Citation => "citation",
            Kind::RelatedWork => "relatedWork",
            Kind::Version => "version",
            Kind::Changelog => "changelog",
            Kind::Profile => "profile",
            Kind::Settings => "settings",
            Kind::GraphNode => "node",
            Kind::GraphEdge => "edge",
            Kind::Reconciliation => "reconciliation",
            Kind::Proposal => "proposal",
            Kind::Vote => "vote",
            Kind::Invite => "invite",
            Kind::InviteAcceptance => "inviteAcceptance",
            Kind::Margin => "margin",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A listing: the partition of the `listing` table that lists some records, newest first.
/// Written `kind@what:key`, e.g. `review@eprint:at://…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing(pub String);

impl Listing {
    /// `kind@what:key`, in one allocation of the right size (listings are named per request).
    fn of(kind: Kind, what: &str, key: &str) -> Listing {
        let kind = kind.as_str();
        let mut name = String::with_capacity(kind.len() + what.len() + key.len() + 2);
        for part in [kind, "@", what, ":", key] {
            name.push_str(part);
        }
        Listing(name)
    }
    /// Records of `kind` about an eprint.
    pub fn on_eprint(kind: Kind, eprint: &str) -> Listing {
        Listing::of(kind, "eprint", eprint)
    }
    /// Records of `kind` written by an account.
    pub fn by_author(kind: Kind, did: &str) -> Listing {
        Listing::of(kind, "author", did)
    }
    /// Replies to a record of `kind`.
    pub fn replies(kind: Kind, parent: &str) -> Listing {
        Listing::of(kind, "parent", parent)
    }
    /// A sub-listing of `base` (a filter such as a motivation or a page).
    pub fn filtered(base: &Listing, filter: &str) -> Listing {
        Listing(format!("{}@{filter}", base.0))
    }
    /// Records of `kind` that point at `target` (a cited eprint, a related work).
    pub fn pointing_at(kind: Kind, target: &str) -> Listing {
        Listing::of(kind, "target", target)
    }
    /// Every tag record with a normalized tag.
    pub fn tagged(tag: &str) -> Listing {
        Listing(format!("tag@name:{tag}"))
    }
    /// Every tag record.
    pub fn all_tags() -> Listing {
        Listing("tag@all".into())
    }
    /// Every record of one collection (the admin listings and counts).
    pub fn collection(collection: &str) -> Listing {
        Listing(format!("all:{collection}"))
    }
    /// Every record of one repository (for deleting an account's records).
    pub fn repo(did: &str) -> Listing {
        Listing(format!("repo:{did}"))
    }
}
