//! Where and how to reach the Kafka log: the `kafka://` URL and the client settings every
//! client of the log shares.

use rdkafka::ClientConfig;

use crate::LogError;

/// Where and how to reach the Kafka log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// Bootstrap brokers, `host:port,host:port`.
    pub brokers: String,
    /// The repository-events topic.
    pub topic: String,
    /// Partitions of a topic this log creates.
    pub partitions: u32,
    /// Replication factor of a topic this log creates.
    pub replication: i32,
    /// librdkafka settings applied to every client, after svc's own (TLS, SASL, tuning).
    pub client_settings: Vec<(String, String)>,
}

impl KafkaConfig {
    /// Parses `kafka://HOST:PORT[,HOST:PORT][?topic=NAME&replication=N&rdkafka.KEY=VALUE…]`;
    /// `partitions` is used when the topic has to be created. Every `rdkafka.KEY=VALUE` sets
    /// librdkafka property `KEY` on every client (e.g. `rdkafka.security.protocol=ssl`).
    ///
    /// # Errors
    /// [`LogError::Unavailable`] naming what is wrong with the URL.
    pub fn from_url(url: &str, partitions: u32) -> Result<KafkaConfig, LogError> {
        let bad = |why: &str| LogError::Unavailable(format!("invalid Kafka URL {url:?}: {why}"));
        let rest = url.strip_prefix("kafka://").ok_or_else(|| bad("must start with kafka://"))?;
        let (brokers, query) = rest.split_once('?').unwrap_or((rest, ""));
        let brokers = brokers.trim_end_matches('/');
        if brokers.is_empty()
            || brokers.split(',').any(|b| b.rsplit_once(':').is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err()))
        {
            return Err(bad("expected HOST:PORT[,HOST:PORT]"));
        }
        let mut config = KafkaConfig {
            brokers: brokers.to_owned(),
            topic: "svc.repo-events".into(),
            partitions: partitions.max(1),
            replication: 1,
            client_settings: Vec::new(),
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("topic", t)) if !t.is_empty() => config.topic = t.to_owned(),
                Some(("replication", n)) => {
                    config.replication = n.parse().ok().filter(|n| *n > 0).ok_or_else(|| bad("replication must be a positive number"))?
                }
                Some((key, value)) if key.len() > "rdkafka.".len() && key.starts_with("rdkafka.") => {
                    config.client_settings.push((key["rdkafka.".len()..].to_owned(), value.to_owned()));
                }
                _ => return Err(bad(&format!("unknown parameter {pair:?} (known: topic, replication, rdkafka.*)"))),
            }
        }
        Ok(config)
    }
}

/// The client settings every client of the log starts from.
pub(super) fn base_config(config: &KafkaConfig) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &config.brokers).set("client.id", "svc").set("socket.timeout.ms", "10000");
    for (key, value) in &config.client_settings {
        c.set(key, value);
    }
    c
}
