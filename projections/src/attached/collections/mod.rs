//! The collections of the attached model, one entry each in [`COLLECTIONS`]: its NSID, the
//! [`Kind`] its listings are of, whether admins and services may take its records down, and
//! its normalizer (one file each), which turns a record into its view and the listings it
//! appears in. Adding a collection is one entry, one normalizer and its lexicon.

mod citation;
pub mod collaboration;
mod comment;
pub mod endorsement;
mod entity_link;
pub mod governance;
pub mod graph;
mod history;
mod listing;
pub mod margin;
mod profile;
mod related_work;
pub mod tag;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

pub use listing::{Kind, Listing};

/// Reviews.
pub const REVIEW: &str = "pub.svc.review.comment";
/// Inline annotations.
pub const ANNOTATION: &str = "pub.svc.annotation.comment";
/// Entity links on annotations.
pub const ANNOTATION_ENTITY_LINK: &str = "pub.svc.annotation.entityLink";
/// Entity links on reviews.
pub const REVIEW_ENTITY_LINK: &str = "pub.svc.review.entityLink";
/// Endorsements.
pub const ENDORSEMENT: &str = "pub.svc.review.endorsement";
/// User tags.
pub const USER_TAG: &str = "pub.svc.eprint.userTag";
/// Citations.
pub const CITATION: &str = "pub.svc.eprint.citation";
/// Related works.
pub const RELATED_WORK: &str = "pub.svc.eprint.relatedWork";
/// Versions.
pub const VERSION: &str = "pub.svc.eprint.version";
/// Changelogs.
pub const CHANGELOG: &str = "pub.svc.eprint.changelog";
/// Author profiles (record key `self`).
pub const PROFILE: &str = "pub.svc.actor.profile";
/// A user's discovery preferences (record key `self`).
pub const DISCOVERY_SETTINGS: &str = "pub.svc.discovery.settings";
/// A user's profile page configuration (record key `self`).
pub const PROFILE_CONFIG: &str = "pub.svc.actor.profileConfig";
/// Knowledge graph nodes.
pub const GRAPH_NODE: &str = "pub.svc.graph.node";
/// Knowledge graph edges.
pub const GRAPH_EDGE: &str = "pub.svc.graph.edge";
/// Reconciliations of graph nodes with external authorities.
pub const RECONCILIATION: &str = "pub.svc.graph.reconciliation";
/// Proposals to change a node of the shared graph.
pub const NODE_PROPOSAL: &str = "pub.svc.graph.nodeProposal";
/// Proposals to change an edge of the shared graph.
pub const EDGE_PROPOSAL: &str = "pub.svc.graph.edgeProposal";
/// Votes on proposals.
pub const VOTE: &str = "pub.svc.graph.vote";

/// Collaboration invites.
pub const INVITE: &str = "pub.svc.collaboration.invite";
/// Acceptances of collaboration invites.
pub const INVITE_ACCEPTANCE: &str = "pub.svc.collaboration.inviteAcceptance";
/// A collection of the model.
#[derive(Debug)]
pub struct Collection {
    /// The NSID.
    pub nsid: &'static str,
    /// What its listings are of.
    pub kind: Kind,
    /// Whether admins (`deleteContent`) and services (`sync.deleteRecord`) may take its
    /// records down.
    pub deletable: bool,
    normalize: fn(&Record) -> Result<Normalized, String>,
    /// For a collection whose deleted records keep their place (reviews and annotations,
    /// which keep a thread's shape): the placeholder view of a record's view, without its
    /// content.
    placeholder: Option<fn(&Value) -> Value>,
}

/// Every collection of the model.
pub static COLLECTIONS: &[Collection] = &[
    Collection { nsid: REVIEW, kind: Kind::Review, deletable: true, normalize: comment::comment, placeholder: Some(comment::placeholder) },
    Collection {
        nsid: ANNOTATION,
        kind: Kind::Annotation,
        deletable: true,
        normalize: comment::comment,
        placeholder: Some(comment::placeholder),
    },
    Collection {
        nsid: ANNOTATION_ENTITY_LINK,
        kind: Kind::EntityLink,
        deletable: true,
        normalize: entity_link::entity_link,
        placeholder: None,
    },
    Collection {
        nsid: REVIEW_ENTITY_LINK,
        kind: Kind::EntityLink,
        deletable: true,
        normalize: entity_link::entity_link,
        placeholder: None,
    },
    Collection { nsid: ENDORSEMENT, kind: Kind::Endorsement, deletable: true, normalize: endorsement::endorsement, placeholder: None },
    Collection { nsid: USER_TAG, kind: Kind::Tag, deletable: true, normalize: tag::user_tag, placeholder: None },
    Collection { nsid: CITATION, kind: Kind::Citation, deletable: true, normalize: citation::citation, placeholder: None },
    Collection { nsid: RELATED_WORK, kind: Kind::RelatedWork, deletable: true, normalize: related_work::related_work, placeholder: None },
    Collection { nsid: VERSION, kind: Kind::Version, deletable: false, normalize: history::history, placeholder: None },
    Collection { nsid: CHANGELOG, kind: Kind::Changelog, deletable: false, normalize: history::history, placeholder: None },
    Collection { nsid: PROFILE, kind: Kind::Profile, deletable: false, normalize: profile::profile, placeholder: None },
    Collection { nsid: DISCOVERY_SETTINGS, kind: Kind::Settings, deletable: false, normalize: profile::settings, placeholder: None },
    Collection { nsid: PROFILE_CONFIG, kind: Kind::Settings, deletable: false, normalize: profile::settings, placeholder: None },
    Collection { nsid: GRAPH_NODE, kind: Kind::GraphNode, deletable: true, normalize: graph::node, placeholder: None },
    Collection { nsid: GRAPH_EDGE, kind: Kind::GraphEdge, deletable: true, normalize: graph::edge, placeholder: None },
    Collection { nsid: RECONCILIATION, kind: Kind::Reconciliation, deletable: true, normalize: graph::reconciliation, placeholder: None },
    Collection { nsid: NODE_PROPOSAL, kind: Kind::Proposal, deletable: true, normalize: governance::node_proposal, placeholder: None },
    Collection { nsid: EDGE_PROPOSAL, kind: Kind::Proposal, deletable: true, normalize: governance::edge_proposal, placeholder: None },
    Collection { nsid: VOTE, kind: Kind::Vote, deletable: true, normalize: governance::vote, placeholder: None },
    Collection { nsid: INVITE, kind: Kind::Invite, deletable: true, normalize: collaboration::invite, placeholder: None },
    Collection { nsid: margin::ANNOTATION, kind: Kind::Margin, deletable: true, normalize: margin::margin, placeholder: None },
    Collection { nsid: margin::HIGHLIGHT, kind: Kind::Margin, deletable: true, normalize: margin::margin, placeholder: None },
    Collection {
        nsid: INVITE_ACCEPTANCE,
        kind: Kind::InviteAcceptance,
        deletable: true,
        normalize: collaboration::acceptance,
        placeholder: None,
    },
];

impl Collection {
    /// Whether its deleted records keep their place as placeholders.
    pub fn keeps_place(&self) -> bool {
        self.placeholder.is_some()
    }

    /// The placeholder view of `view`, a record of this collection, when its deleted
    /// records keep their place; `None` when they leave their listings.
    pub fn placeholder(&self, view: &Value) -> Option<Value> {
        self.placeholder.map(|p| p(view))
    }
}

/// The collection of the model named `nsid`.
pub fn find(nsid: &str) -> Option<&'static Collection> {
    COLLECTIONS.iter().find(|c| c.nsid == nsid)
}

/// A record to normalize, with its address.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Its collection's NSID.
    pub collection: &'a str,
    /// Its collection's kind.
    pub kind: Kind,
    /// The repository.
    pub did: &'a str,
    /// The record key.
    pub rkey: &'a str,
    /// The record, as validated against its lexicon.
    pub value: &'a Value,
}

/// A record reduced to what the model keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// The record in the view shape of its operations (without the fields the reader adds:
    /// uri, cid, author, indexedAt, counts).
    pub view: Value,
    /// When the author says it was created.
    pub created_at: DateTime<Utc>,
    /// The listings it appears in (besides its repository's).
    pub lists: Vec<Listing>,
    /// The distinct sets it makes its author a member of (the endorsers of an eprint).
    pub sets: Vec<SetMember>,
}

/// Membership of a distinct set (a listing of keys, each listed once): the key is in the
/// set while the listing `by` (one of the record's `lists`: the author's records there)
/// holds a record, so two endorsements of one eprint by one account count one endorser.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SetMember {
    /// The set (a listing whose rows are keys, not records).
    pub set: String,
    /// The member's key in it.
    pub key: String,
    /// The listing whose size decides the membership.
    pub by: String,
    /// When set, every two members of the set are a pair counted in these [`pairs`] (the
    /// eprints two tags share): a member joining or leaving the set counts or uncounts it
    /// with each other member, both ways.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<String>,
}

impl SetMember {
    /// Membership of `set` under `key` while the listing `by` holds a record.
    pub fn new(set: &Listing, key: &str, by: &Listing) -> SetMember {
        SetMember { set: set.0.clone(), key: key.to_owned(), by: by.0.clone(), pairs: None }
    }

    /// The same membership, its pairs with the set's other members counted in `space`.
    pub fn paired(self, space: &str) -> SetMember {
        SetMember { pairs: Some(space.to_owned()), ..self }
    }
}

/// The counts of pairs of keys that share sets ([`SetMember::pairs`]): for each key, the
/// keys it was paired with, ranked by how many sets they share, as one listing read in key
/// order (most shared first); and each pair's count as a size.
pub mod pairs {
    use super::Listing;

    /// The size counting the sets `a` and `b` share in `space`.
    pub fn count(space: &str, a: &str, b: &str) -> String {
        format!("{space}:{a}\u{1}{b}")
    }

    /// The keys `a` shares sets with in `space`, most shared first: rows `{key, n}` under
    /// [`rank_key`].
    pub fn ranked(space: &str, a: &str) -> Listing {
        Listing(format!("{space}:{a}"))
    }

    /// The clustering key of `b`, sharing `n` sets, in a [`ranked`] listing: higher counts
    /// first, ties by key.
    pub fn rank_key(n: i64, b: &str) -> Vec<u8> {
        crate::rows::listing_key(-n, b)
    }
}

/// Normalizes a record of an attached collection that passed lexicon validation; `None`
/// for a collection the model does not keep.
///
/// # Errors
/// A reason (the dead-letter reason) for a record the lexicon allows but the model cannot
/// use, for example an endorsement naming a contribution twice.
pub fn normalize(collection: &str, did: &str, rkey: &str, record: &Value) -> Option<Result<Normalized, String>> {
    let c = find(collection)?;
    Some((c.normalize)(&Record { collection: c.nsid, kind: c.kind, did, rkey, value: record }))
}

fn text<'a>(r: &'a Value, k: &str) -> Option<&'a str> {
    r.get(k).and_then(Value::as_str)
}

fn created_at(r: &Value) -> Result<DateTime<Utc>, String> {
    text(r, "createdAt")
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.with_timezone(&Utc))
        .ok_or_else(|| "createdAt: must be an RFC 3339 datetime".to_owned())
}

/// The plain text of rich-text items (their `content`, or a reference's `label`), joined by
/// spaces; a plain string is itself.
pub fn plain_text(body: &Value) -> String {
    match body {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(s.as_str()),
                other => text(other, "content").or_else(|| text(other, "text")).or_else(|| text(other, "label")),
            })
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        Value::Object(_) => text(body, "text").unwrap_or_default().to_owned(),
        _ => String::new(),
    }
}

/// The normalized form of a tag: lower case, `#` and surrounding spaces and punctuation
/// dropped, runs of spaces, `_` and `-` one `-`. "Machine Learning", "#machine_learning" and
/// "machine-learning" are one tag.
pub fn normalize_tag(tag: &str) -> String {
    let mut out = String::with_capacity(tag.len());
    let mut pending_dash = false;
    for ch in tag.trim().trim_start_matches('#').chars().flat_map(char::to_lowercase) {
        if ch.is_whitespace() || ch == '_' || ch == '-' {
            pending_dash = !out.is_empty();
        } else if ch.is_alphanumeric() || "+.#/&'".contains(ch) {
            if pending_dash {
                out.push('-');
                pending_dash = false;
            }
            out.push(ch);
        }
    }
    out.trim_end_matches(['.', '/', '&', '\'']).to_owned()
}

fn object(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())
}

fn get(r: &Value, k: &str) -> Value {
    r.get(k).cloned().unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tag_forms_are_one_tag() {
        for form in ["Machine Learning", "#machine_learning", "machine-learning", "  MACHINE  learning "] {
            assert_eq!(normalize_tag(form), "machine-learning", "{form}");
        }
        assert_eq!(normalize_tag("C++"), "c++");
        assert_eq!(normalize_tag("!!!"), "");
    }

    #[test]
    fn rich_text_becomes_plain_text() {
        let body = json!([{"type": "text", "content": "See"}, {"type": "nodeRef", "label": "graphs"}, {"type": "text", "content": ""}]);
        assert_eq!(plain_text(&body), "See graphs");
    }

    #[test]
    fn every_collection_is_listed_once_with_its_own_kind() {
        for (i, c) in COLLECTIONS.iter().enumerate() {
            assert!(COLLECTIONS[..i].iter().all(|d| d.nsid != c.nsid), "{} is listed twice", c.nsid);
            assert!(std::ptr::eq(find(c.nsid).unwrap(), c));
        }
        assert!(find("pub.svc.eprint.submission").is_none(), "submissions are the eprints model's");
        assert_eq!(find(PROFILE).unwrap().kind, Kind::Profile);
        assert_eq!(find(REVIEW_ENTITY_LINK).unwrap().kind, Kind::EntityLink);
    }

    #[test]
    fn a_reply_is_listed_under_its_parent() {
        let r = json!({"eprintUri": "at://did:plc:a/pub.svc.eprint.submission/1", "body": [{"type": "text", "content": "Yes"}],
                       "parentComment": "at://did:plc:b/pub.svc.review.comment/1", "createdAt": "2025-01-01T00:00:00Z"});
        let n = normalize(REVIEW, "did:plc:c", "r", &r).unwrap().unwrap();
        assert_eq!(n.view["motivation"], "replying");
        assert_eq!(n.view["parentReviewUri"], "at://did:plc:b/pub.svc.review.comment/1");
        assert!(n.lists.contains(&Listing::replies(Kind::Review, "at://did:plc:b/pub.svc.review.comment/1")));
    }
}
