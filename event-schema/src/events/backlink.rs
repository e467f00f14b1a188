use serde::{Deserialize, Serialize};

/// A backlink to a record, from another application's record (a Bluesky post, a Leaflet
/// list, a WhiteWind blog…): what `pub.svc.backlink.create` and `pub.svc.backlink.delete`
/// append, as command events of a verified caller. Keyed by the source's URI, so every
/// change of one source's backlinks is applied in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacklinkChange {
    /// The AT URI of the record that links.
    pub source_uri: String,
    /// What kind of record links (`cosmik.collection`, `leaflet.list`, `whitewind.blog`,
    /// `bluesky.post`, `bluesky.embed`, `other`).
    pub source_type: String,
    /// The AT URI of the record linked to.
    pub target_uri: String,
    /// Text around the link, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The backlink is withdrawn (a soft delete: it stays, marked deleted).
    pub deleted: bool,
    /// The DID of the verified caller.
    pub caller: String,
}
