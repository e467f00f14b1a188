//! Where the ScyllaDB store connects: parsed from `scylla://HOST:PORT[,HOST:PORT][/KEYSPACE][?replication_factor=N]`.

use crate::StoreError;

/// The keyspace used when the URL names none.
pub const DEFAULT_KEYSPACE: &str = "svc";

/// How to reach a ScyllaDB cluster and which keyspace holds the read models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScyllaConfig {
    /// Contact points, `host:port` each.
    pub nodes: Vec<String>,
    /// The keyspace (created when missing).
    pub keyspace: String,
    /// The replication factor the keyspace is created with.
    pub replication_factor: u32,
}

impl ScyllaConfig {
    /// Parses a `scylla://` URL.
    pub fn from_url(url: &str) -> Result<ScyllaConfig, StoreError> {
        let bad = |why: &str| StoreError::Config(format!("bad store URL {url:?}: {why}"));
        let rest = url.strip_prefix("scylla://").ok_or_else(|| bad("expected scylla://HOST:PORT[,HOST:PORT][/KEYSPACE]"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hosts, keyspace) = rest.split_once('/').unwrap_or((rest, ""));
        let nodes: Vec<String> = hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).map(str::to_owned).collect();
        if nodes.is_empty() {
            return Err(bad("no host"));
        }
        for node in &nodes {
            let (host, port) = node.rsplit_once(':').ok_or_else(|| bad("every host needs a :PORT"))?;
            if host.is_empty() || port.parse::<u16>().is_err() {
                return Err(bad(&format!("{node:?} is not HOST:PORT")));
            }
        }
        let keyspace = if keyspace.is_empty() { DEFAULT_KEYSPACE } else { keyspace };
        if !is_identifier(keyspace) {
            return Err(bad("the keyspace must be lower-case letters, digits and _ (at most 48), starting with a letter"));
        }
        let mut replication_factor = 1;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("replication_factor", n)) => {
                    replication_factor =
                        n.parse().ok().filter(|n| *n > 0).ok_or_else(|| bad("replication_factor must be a positive integer"))?;
                }
                _ => return Err(bad(&format!("unknown parameter {pair:?}"))),
            }
        }
        Ok(ScyllaConfig { nodes, keyspace: keyspace.to_owned(), replication_factor })
    }
}

/// Whether `s` is a CQL identifier that needs no quoting.
pub(crate) fn is_identifier(s: &str) -> bool {
    s.len() <= 48
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_keyspace_and_replication() {
        let c = ScyllaConfig::from_url("scylla://a:9042,b:9043/reads?replication_factor=3").unwrap();
        assert_eq!(c.nodes, ["a:9042", "b:9043"]);
        assert_eq!(c.keyspace, "reads");
        assert_eq!(c.replication_factor, 3);
        let c = ScyllaConfig::from_url("scylla://127.0.0.1:9042").unwrap();
        assert_eq!(c.keyspace, DEFAULT_KEYSPACE);
        assert_eq!(c.replication_factor, 1);
    }

    #[test]
    fn refuses_bad_urls() {
        for url in [
            "kafka://a:1",
            "scylla://",
            "scylla://a",
            "scylla://a:x",
            "scylla://a:1/Bad-Name",
            "scylla://a:1?replication_factor=0",
            "scylla://a:1?x=1",
        ] {
            assert!(matches!(ScyllaConfig::from_url(url), Err(StoreError::Config(_))), "{url}");
        }
    }
}
