use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A reader's use of an eprint, recorded through the API (`pub.svc.metrics.record*`, a
/// command): a view, a download, a click or download from a search's results, or the time
/// spent on a result. Keyed by the eprint's URI, so the uses of one eprint are applied in
/// order (the 30-second double-click rule compares neighbours).
///
/// The viewer is a pseudonym: a keyed hash of the caller's DID, or of an anonymous
/// client's address and user agent (COUNTER's session identity), never either itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageEvent {
    /// The viewer's pseudonym (32 hex digits).
    pub viewer: String,
    /// Whether the client's user agent is on the COUNTER-Robots list: the use is kept in
    /// the log but not counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub robot: bool,
    /// The eprint used.
    pub uri: String,
    /// What the viewer did.
    pub action: UsageAction,
    /// When, if not when the log accepted the event: uses written after the fact (`svc seed
    /// --social` generates 60 days of them). The API never sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<DateTime<Utc>>,
}

/// The actions of [`UsageEvent`]. Read in one pass ([`UsageAction::deserialize`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum UsageAction {
    /// `recordView`: the eprint's page was shown.
    View {
        /// Where the viewer came from, as the client says (`search`, `feed`…).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    /// `recordDownload`: the eprint's document was downloaded.
    Download {
        /// The document's format (a `pub.svc.defs#documentFormat` value).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<String>,
    },
    /// `recordSearchClick`: a search result was opened.
    SearchClick {
        /// The displayed result list, when the client names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        impression_id: Option<String>,
        /// The query, when the client sends it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        query: Option<String>,
        /// The result's position in the list (0 is the first).
        position: u32,
    },
    /// `recordSearchDownload`: a search result's document was downloaded from the list.
    SearchDownload {
        /// The displayed result list.
        impression_id: String,
    },
    /// `recordDwellTime`: how long the viewer stayed on the eprint.
    DwellTime {
        /// The displayed result list the eprint was opened from, when the client names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        impression_id: Option<String>,
        /// Milliseconds.
        duration_ms: u64,
    },
}

/// Reads the form serde's `tag = "action"` writes in one pass over the map, as
/// [`crate::Source`] is read (the derived reader buffers the map first; a stream of views
/// is read event by event). Unknown fields are ignored, as the derived reader ignores them.
impl<'de> Deserialize<'de> for UsageAction {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<UsageAction, D::Error> {
        use crate::given;

        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        enum Kind {
            View,
            Download,
            SearchClick,
            SearchDownload,
            DwellTime,
        }

        /// Every action's fields.
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Fields {
            action: Kind,
            source: Option<String>,
            format: Option<String>,
            impression_id: Option<String>,
            query: Option<String>,
            position: Option<u32>,
            duration_ms: Option<u64>,
        }

        let f = Fields::deserialize(deserializer)?;
        Ok(match f.action {
            Kind::View => UsageAction::View { source: f.source },
            Kind::Download => UsageAction::Download { format: f.format },
            Kind::SearchClick => {
                UsageAction::SearchClick { impression_id: f.impression_id, query: f.query, position: given(f.position, "position")? }
            }
            Kind::SearchDownload => UsageAction::SearchDownload { impression_id: given(f.impression_id, "impressionId")? },
            Kind::DwellTime => UsageAction::DwellTime { impression_id: f.impression_id, duration_ms: given(f.duration_ms, "durationMs")? },
        })
    }
}

impl UsageAction {
    /// The action's name in the log (`view`, `download`…).
    pub fn name(&self) -> &'static str {
        match self {
            UsageAction::View { .. } => "view",
            UsageAction::Download { .. } => "download",
            UsageAction::SearchClick { .. } => "searchClick",
            UsageAction::SearchDownload { .. } => "searchDownload",
            UsageAction::DwellTime { .. } => "dwellTime",
        }
    }
}

/// A search's results shown (`searchSubmissions`): the impression that later clicks and
/// downloads name. Keyed by the impression's id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchImpression {
    /// The id the search answered (`impressionId`).
    pub impression_id: String,
    /// The searcher's pseudonym (as [`UsageEvent::viewer`]).
    pub viewer: String,
    /// The query, as sent.
    pub query: String,
    /// How many eprints matched.
    pub hits: u64,
}
