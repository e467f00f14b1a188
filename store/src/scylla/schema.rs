//! The CQL schema of the ScyllaDB store (documented in `docs/scylla-schema.md`).
//!
//! Every versioned read-model table is one CQL table `<model>__v<version>__<name>` of the
//! same shape: partition key `p` (text), clustering key `c` (blob, ascending) and the row's
//! columns as one CBOR blob `v`. Each row write carries the log position of the event that
//! made it as its write timestamp (`USING TIMESTAMP`), so an older position never overwrites
//! a newer row and replaying a prefix twice changes nothing. Two bookkeeping tables sit
//! beside them: `svc_versions` (every version of every model and its state; the active
//! version is the one in state `active`) and `svc_checkpoints`.

use crate::TableRef;

use super::config::is_identifier;

/// Creates the keyspace.
pub fn create_keyspace(keyspace: &str, replication_factor: u32) -> String {
    format!("CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {{'class': 'NetworkTopologyStrategy', 'replication_factor': {replication_factor}}}")
}

/// Creates the bookkeeping tables.
pub fn create_bookkeeping(keyspace: &str) -> [String; 2] {
    [
        format!("CREATE TABLE IF NOT EXISTS {keyspace}.svc_versions (model text, version int, state text, PRIMARY KEY ((model), version))"),
        format!("CREATE TABLE IF NOT EXISTS {keyspace}.svc_checkpoints (consumer text, log_partition int, next_offset bigint, PRIMARY KEY ((consumer), log_partition))"),
    ]
}

/// The probe table: at connect, two rows in it tell whether the server reads clustering
/// ranges, limits and descending order (CQL test servers may not).
pub const PROBE: &str = "svc_probe";

/// The CQL table name of a read-model table, or `None` when its parts cannot form one.
pub fn table_name(table: &TableRef) -> Option<String> {
    let name = format!("{}__v{}__{}", table.model(), table.version(), table.name());
    is_identifier(&name).then_some(name)
}

/// Creates one read-model table.
pub fn create_table(keyspace: &str, name: &str) -> String {
    format!("CREATE TABLE IF NOT EXISTS {keyspace}.{name} (p text, c blob, v blob, PRIMARY KEY ((p), c)) WITH CLUSTERING ORDER BY (c ASC)")
}

/// The statements on one read-model table.
pub struct RowStatements;

impl RowStatements {
    pub fn get(ks: &str, t: &str) -> String {
        format!("SELECT c, v FROM {ks}.{t} WHERE p = ? AND c = ?")
    }
    pub fn put(ks: &str, t: &str) -> String {
        format!("INSERT INTO {ks}.{t} (p, c, v) VALUES (?, ?, ?)")
    }
    pub fn delete(ks: &str, t: &str) -> String {
        format!("DELETE FROM {ks}.{t} WHERE p = ? AND c = ?")
    }
    pub fn count(ks: &str, t: &str) -> String {
        format!("SELECT COUNT(*) FROM {ks}.{t} WHERE p = ?")
    }
    /// A whole partition, for servers that read no clustering ranges.
    pub fn partition(ks: &str, t: &str) -> String {
        format!("SELECT c, v FROM {ks}.{t} WHERE p = ?")
    }
    /// A page scan: ascending or descending, from the start or after a clustering key.
    pub fn scan(ks: &str, t: &str, reverse: bool, after: bool) -> String {
        match (reverse, after) {
            (false, false) => format!("SELECT c, v FROM {ks}.{t} WHERE p = ? LIMIT ?"),
            (false, true) => format!("SELECT c, v FROM {ks}.{t} WHERE p = ? AND c > ? LIMIT ?"),
            (true, false) => format!("SELECT c, v FROM {ks}.{t} WHERE p = ? ORDER BY c DESC LIMIT ?"),
            (true, true) => format!("SELECT c, v FROM {ks}.{t} WHERE p = ? AND c < ? ORDER BY c DESC LIMIT ?"),
        }
    }
}
