//! A follower of the whole topic ([`crate::Follower`]): a consumer of its own, assigned
//! every partition at the follower's offsets, that streams what the broker has as it comes,
//! without the shared reader's lock or a watermark (which lags on some brokers).

use std::time::{Duration, Instant};

use event_schema::{codec, Envelope, Position};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Message, Offset, TopicPartitionList};

use super::config::base_config;
use super::{unavailable, KafkaConfig};
use crate::{Follower, LogError};

/// A consumer following every partition.
pub(super) struct KafkaFollower {
    consumer: BaseConsumer,
}

impl KafkaFollower {
    /// A follower of `config`'s topic from `from`, the next offset of each partition.
    pub(super) fn start(config: &KafkaConfig, from: &[u64]) -> Result<KafkaFollower, LogError> {
        // librdkafka wants a group even for assigned reads; this one never commits.
        let consumer: BaseConsumer = base_config(config)
            .set("group.id", "svc.tap")
            .set("fetch.wait.max.ms", "50")
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "false")
            .create()
            .map_err(|e| unavailable("follower", e))?;
        let mut partitions = TopicPartitionList::new();
        for (p, offset) in from.iter().enumerate() {
            partitions
                .add_partition_offset(&config.topic, p as i32, Offset::Offset(*offset as i64))
                .map_err(|e| unavailable("partition list", e))?;
        }
        consumer.assign(&partitions).map_err(|e| unavailable("assign", e))?;
        Ok(KafkaFollower { consumer })
    }
}

impl Follower for KafkaFollower {
    fn next_events(&mut self, max: usize, wait: Duration) -> Result<Vec<Envelope>, LogError> {
        let deadline = Instant::now() + wait;
        let mut out = Vec::new();
        while out.len() < max {
            // Waits for the first event only; then takes what has come.
            let wait = if out.is_empty() { deadline.saturating_duration_since(Instant::now()) } else { Duration::ZERO };
            match self.consumer.poll(wait) {
                None => break,
                Some(Err(KafkaError::PartitionEOF(_))) => {}
                Some(Err(e)) => return Err(unavailable("fetch", e)),
                Some(Ok(message)) => {
                    let position = Position { partition: message.partition() as u32, offset: message.offset() as u64 };
                    let event = codec::decode(position, message.payload().unwrap_or_default()).map_err(|source| LogError::Corrupt {
                        partition: position.partition,
                        offset: position.offset,
                        source,
                    })?;
                    out.push(event);
                }
            }
            if out.is_empty() && Instant::now() >= deadline {
                break;
            }
        }
        Ok(out)
    }
}
