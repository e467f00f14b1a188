use serde::{Deserialize, Serialize};

/// A record created or replaced in a repository.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordWrite {
    /// The repository's DID.
    pub did: String,
    /// The record's collection NSID.
    pub collection: String,
    /// The record key.
    pub rkey: String,
    /// The CID of the record's DAG-CBOR encoding.
    pub cid: String,
    /// The repository revision (a TID) of the commit that wrote the record.
    pub rev: String,
    /// The record in the AT Protocol JSON data model.
    pub record: serde_json::Value,
}

impl RecordWrite {
    /// The record's AT URI.
    pub fn uri(&self) -> String {
        format!("at://{}/{}/{}", self.did, self.collection, self.rkey)
    }
}

/// A record deleted from a repository.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordDelete {
    /// The repository's DID.
    pub did: String,
    /// The record's collection NSID.
    pub collection: String,
    /// The record key.
    pub rkey: String,
    /// The repository revision of the commit that deleted the record.
    pub rev: String,
}

impl RecordDelete {
    /// The deleted record's AT URI.
    pub fn uri(&self) -> String {
        format!("at://{}/{}/{}", self.did, self.collection, self.rkey)
    }
}
