//! Work groups on Kafka consumer groups ([`EventLog::join_group`](crate::EventLog::join_group)):
//! a member's consumer only takes part in the group's rebalances, its partitions paused.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::TopicPartitionList;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::{base_config, unavailable, KafkaLog};
use crate::{GroupMember, LogError};

/// Publishes a group member's partitions from librdkafka's rebalance callbacks, and pauses
/// them: the member's consumer only holds the membership, the worker reads through the log.
struct GroupContext {
    group: String,
    topic: String,
    assigned: watch::Sender<BTreeSet<u32>>,
}

impl GroupContext {
    fn partitions_of(&self, list: &TopicPartitionList) -> BTreeSet<u32> {
        list.elements().iter().filter(|e| e.topic() == self.topic && e.partition() >= 0).map(|e| e.partition() as u32).collect()
    }
}

impl ClientContext for GroupContext {}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        // Stop working on revoked partitions before the group hands them to someone else.
        if let Rebalance::Revoke(list) = rebalance {
            let revoked = self.partitions_of(list);
            self.assigned.send_if_modified(|owned| {
                let before = owned.len();
                owned.retain(|p| !revoked.contains(p));
                owned.len() != before
            });
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Error(e) = rebalance {
            warn!(group = self.group, error = %e, "kafka: group rebalance failed");
            return;
        }
        match consumer.assignment() {
            Ok(list) => {
                if let Err(e) = consumer.pause(&list) {
                    warn!(group = self.group, error = %e, "kafka: pausing the member's partitions failed");
                }
                let owned = self.partitions_of(&list);
                info!(group = self.group, partitions = ?owned, "kafka: group assigned partitions");
                self.assigned.send_if_modified(|current| std::mem::replace(current, owned.clone()) != owned);
            }
            Err(e) => warn!(group = self.group, error = %e, "kafka: reading the group assignment failed"),
        }
    }
}

/// Stops a member's polling thread, which then leaves the group.
struct LeaveOnDrop(Arc<AtomicBool>);

impl Drop for LeaveOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl KafkaLog {
    pub(super) fn join_kafka_group(&self, group: &str) -> Result<GroupMember, LogError> {
        let (tx, rx) = watch::channel(BTreeSet::new());
        let context = GroupContext { group: group.to_owned(), topic: self.config.topic.clone(), assigned: tx };
        let consumer: BaseConsumer<GroupContext> = base_config(&self.config)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1000")
            .set("partition.assignment.strategy", "roundrobin")
            .create_with_context(context)
            .map_err(|e| unavailable("group consumer", e))?;
        consumer.subscribe(&[&self.config.topic]).map_err(|e| unavailable("join group", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let name = group.to_owned();
        std::thread::Builder::new()
            .name("kafka-group".into())
            .spawn(move || {
                // Polling serves the group protocol and the rebalance callbacks; the member's
                // partitions are paused, so no message arrives but stragglers of a rebalance.
                while !stopped.load(Ordering::Relaxed) {
                    if let Some(Err(e)) = consumer.poll(Duration::from_millis(100)) {
                        warn!(group = name, error = %e, "kafka: group member poll failed");
                    }
                }
                consumer.unsubscribe();
                debug!(group = name, "left the group");
            })
            .map_err(|e| unavailable("group thread", e))?;
        Ok(GroupMember::new(rx, Box::new(LeaveOnDrop(stop))))
    }
}
