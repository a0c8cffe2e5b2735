//! Pulsar's topic-count limits on a namespace (`maxTopicsPerNamespace`, the namespace policy of
//! that name over the broker setting) and on a partitioned topic
//! (`maxNumPartitionsPerPartitionedTopic`), and the bound on the work a declared partition
//! count can cause ([`EAGER_PARTITIONS`], [`BrokerService::partition_targets`]). Counting walks
//! the broker's own maps of what exists, never a declared number of partitions one by one.

use super::BrokerService;
use crate::error::BrokerError;
use crate::naming::TopicName;
use crate::policies::limits;

/// How many partitions of a partitioned topic are created with it (Pulsar creates them all);
/// the others are created when first used. Admin calls over a partitioned topic act on these
/// and on any other partition that exists, so one request's work never grows with a declared
/// count (a `PUT .../partitions` of 1 000 000 000 costs what 1 024 partitions cost).
pub const EAGER_PARTITIONS: u32 = 1024;

/// Pulsar's message when a namespace is full (REST 409/412, wire `NotAllowedError`).
pub const NAMESPACE_FULL: &str = "Exceed maximum number of topics in namespace.";

impl BrokerService {
    /// Persistent topics in `namespace` as Pulsar counts them for `maxTopicsPerNamespace`:
    /// every non-partitioned topic, and every partition of every partitioned topic (created or
    /// not yet: the metadata's count).
    #[must_use]
    pub fn topic_count(&self, namespace: &str) -> u64 {
        let partitioned: Vec<(TopicName, u32)> = self
            .partitioned_topics(namespace)
            .into_iter()
            .filter(|(t, _)| t.is_persistent())
            .collect();
        let plain = self
            .topics_of_namespace(namespace)
            .iter()
            .filter(|t| {
                t.is_persistent()
                    && !(t.partition_index().is_some()
                        && partitioned.iter().any(|(base, _)| *base == t.base()))
            })
            .count() as u64;
        plain + partitioned.iter().map(|(_, n)| u64::from(*n)).sum::<u64>()
    }

    /// Whether `adding` more persistent topics fit in `namespace`.
    ///
    /// # Errors
    /// [`BrokerError::NotAllowed`] with Pulsar's message when they do not.
    pub fn admit_new_topics(&self, namespace: &str, adding: u32) -> Result<(), BrokerError> {
        let max =
            limits::max_topics_per_namespace(&self.policies.namespace(namespace), &self.config);
        if max > 0 && self.topic_count(namespace) + u64::from(adding) > u64::from(max) {
            return Err(BrokerError::NotAllowed(NAMESPACE_FULL.into()));
        }
        Ok(())
    }

    /// The partitions of `base` (with `n` partitions) that admin calls act on: the first
    /// [`EAGER_PARTITIONS`] and every other one that exists, in index order.
    #[must_use]
    pub fn partition_targets(&self, base: &TopicName, n: u32) -> Vec<TopicName> {
        let mut out: Vec<TopicName> = (0..n.min(EAGER_PARTITIONS))
            .map(|i| base.partition(i))
            .collect();
        if n > EAGER_PARTITIONS {
            let mut later: Vec<TopicName> = self
                .known
                .lock()
                .iter()
                .filter(|t| {
                    t.partition_index()
                        .is_some_and(|i| i >= EAGER_PARTITIONS && i < n)
                        && t.base() == *base
                })
                .cloned()
                .collect();
            later.sort_by_key(TopicName::partition_index);
            out.extend(later);
        }
        out
    }

    /// The broker's `maxNumPartitionsPerPartitionedTopic` (0 = unlimited).
    #[must_use]
    pub fn max_partitions(&self) -> u32 {
        self.config.max_num_partitions_per_partitioned_topic
    }
}
