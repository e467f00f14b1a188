use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::events::Payload;

/// Where an event sits in the log: its partition and its offset in that partition.
///
/// Offsets grow strictly within a partition. In the embedded log they are also unique and
/// growing across partitions, so an offset alone names an event there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Position {
    /// The partition the event's key hashes to.
    pub partition: u32,
    /// The event's offset within its partition.
    pub offset: u64,
}

impl Position {
    /// A number unique to this position across the whole log (the offset, then the
    /// partition in the low 8 bits; logs have at most 256 partitions). Read models use it
    /// as a stable tie-breaker and row key: offsets alone repeat across partitions on Kafka.
    pub fn ordinal(&self) -> u64 {
        (self.offset << 8) | u64::from(self.partition & 0xff)
    }

    /// The position an [`ordinal`](Self::ordinal) names, with the low 8 bits of its
    /// partition (the whole partition on logs of at most 256).
    pub fn from_ordinal(ordinal: u64) -> Position {
        Position { partition: (ordinal & 0xff) as u32, offset: ordinal >> 8 }
    }
}

/// What produced an event. Read in one pass ([`Source::deserialize`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Source {
    /// `svc seed` from a file of papers.
    Seed {
        /// The file name the papers came from.
        file: String,
    },
    /// A relay's or PDS's firehose.
    Firehose {
        /// The stream's base URL.
        url: String,
        /// The stream's sequence number of the frame.
        seq: i64,
    },
    /// A Jetstream instance (JSON events, not signed).
    Jetstream {
        /// The instance's base URL.
        url: String,
        /// The event's time (microseconds since the epoch), Jetstream's cursor.
        #[serde(rename = "timeUs")]
        time_us: i64,
    },
    /// A repository fetched whole (backfill) or one record refreshed.
    Backfill {
        /// The host the repository was fetched from.
        host: String,
    },
    /// A procedure of the API called by a verified caller (such as
    /// `pub.svc.sync.refreshRecord`); the event is what the procedure found.
    Command {
        /// The procedure's NSID.
        nsid: String,
        /// The DID that signed the caller's token.
        caller: String,
        /// The repository host the record was read from.
        host: String,
    },
    /// A test or a tool that appended the event directly.
    Manual {
        /// Free text naming the tool.
        note: String,
    },
}

/// Reads the form serde's `tag = "type"` writes in one pass over the map: the derived
/// reader of an internally tagged enum first copies the whole map into a buffer of its own,
/// and every event read from the log has a source (a fifth of the cost of decoding a view's
/// event, docs/performance.md, fifty-seventh session). Unknown fields are ignored, as the
/// derived reader ignores them.
impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Source, D::Error> {
        use crate::given;

        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        enum Kind {
            Seed,
            Firehose,
            Jetstream,
            Backfill,
            Command,
            Manual,
        }

        /// Every variant's fields.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            #[serde(rename = "type")]
            kind: Kind,
            file: Option<String>,
            url: Option<String>,
            seq: Option<i64>,
            time_us: Option<i64>,
            host: Option<String>,
            nsid: Option<String>,
            caller: Option<String>,
            note: Option<String>,
        }

        let f = Fields::deserialize(deserializer)?;
        Ok(match f.kind {
            Kind::Seed => Source::Seed { file: given(f.file, "file")? },
            Kind::Firehose => Source::Firehose { url: given(f.url, "url")?, seq: given(f.seq, "seq")? },
            Kind::Jetstream => Source::Jetstream { url: given(f.url, "url")?, time_us: given(f.time_us, "timeUs")? },
            Kind::Backfill => Source::Backfill { host: given(f.host, "host")? },
            Kind::Command => {
                Source::Command { nsid: given(f.nsid, "nsid")?, caller: given(f.caller, "caller")?, host: given(f.host, "host")? }
            }
            Kind::Manual => Source::Manual { note: given(f.note, "note")? },
        })
    }
}

/// The kind of an event, derived from its payload. Its string form is part of the public
/// log interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A record was created.
    RecordCreate,
    /// A record was replaced.
    RecordUpdate,
    /// A record was deleted.
    RecordDelete,
    /// An account's handle or DID document changed.
    Identity,
    /// An account's hosting status changed.
    Account,
    /// Ingest refused a repository change.
    Rejected,
    /// A backlink was created or withdrawn through the API.
    Backlink,
    /// Roles, sessions or second factors changed, or a credential was refused.
    Access,
    /// An operator's action through the admin API.
    Admin,
    /// A signed-in user's own action through the API.
    User,
    /// A reader's use of an eprint, recorded through the API.
    Usage,
    /// A search's results shown.
    Search,
    /// A paper fetched from an external source.
    External,
    /// What an external bibliographic service knows of an indexed eprint.
    Enrichment,
}

impl EventKind {
    /// Every kind, in a stable order.
    pub const ALL: [EventKind; 14] = [
        EventKind::RecordCreate,
        EventKind::RecordUpdate,
        EventKind::RecordDelete,
        EventKind::Identity,
        EventKind::Account,
        EventKind::Rejected,
        EventKind::Backlink,
        EventKind::Access,
        EventKind::Admin,
        EventKind::User,
        EventKind::Usage,
        EventKind::Search,
        EventKind::External,
        EventKind::Enrichment,
    ];

    /// The kind's name on the wire and in the JSON view.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::RecordCreate => "repo.record.create",
            EventKind::RecordUpdate => "repo.record.update",
            EventKind::RecordDelete => "repo.record.delete",
            EventKind::Identity => "repo.identity",
            EventKind::Account => "repo.account",
            EventKind::Rejected => "repo.rejected",
            EventKind::Backlink => "command.backlink",
            EventKind::Access => "command.access",
            EventKind::Admin => "command.admin",
            EventKind::User => "command.user",
            EventKind::Usage => "command.usage",
            EventKind::Search => "command.search",
            EventKind::External => "external.paper",
            EventKind::Enrichment => "external.enrichment",
        }
    }

    /// Parses a kind name.
    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event as a producer hands it to the log: the log adds the position and the time.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// The ordering key: the repository DID for repository events.
    pub key: String,
    /// What produced the event.
    pub source: Source,
    /// The event's content.
    pub payload: Payload,
}

impl NewEvent {
    /// A repository event keyed by its DID.
    pub fn repo(source: Source, payload: Payload) -> NewEvent {
        NewEvent { key: payload.did().to_owned(), source, payload }
    }
}

/// An event as it sits in the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    /// Where the event sits in the log.
    pub position: Position,
    /// The ordering key.
    pub key: String,
    /// The kind, derived from the payload.
    pub kind: String,
    /// The schema version the event was written with.
    pub schema_version: u16,
    /// When the log accepted the event. Read models use it as `indexedAt`, so a replay
    /// reproduces it.
    pub appended_at: DateTime<Utc>,
    /// What produced the event.
    pub source: Source,
    /// The event's content, upcast to the current version.
    pub payload: Payload,
}

impl Envelope {
    /// The JSON view of the event, one line of `svc log tail`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}
