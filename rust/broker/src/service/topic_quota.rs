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
        let max = limits::max_topics_per_namespace(
            namespace,
            &self.policies.namespace(namespace),
            &self.config,
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;

    fn service(dir: &std::path::Path, cfg: BrokerConfig) -> std::sync::Arc<BrokerService> {
        BrokerService::open(
            BrokerConfig {
                journal_sync_data: false,
                ..cfg
            },
            dir,
        )
        .unwrap()
    }

    #[test]
    fn a_declared_count_costs_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let svc = service(dir.path(), BrokerConfig::default());
        let base = TopicName::parse("persistent://public/default/huge").unwrap();
        svc.create_partitioned(&base, 1_000_000_000).unwrap();
        let targets = svc.partition_targets(&base, 1_000_000_000);
        assert_eq!(targets.len(), EAGER_PARTITIONS as usize);
        assert_eq!(targets[1023], base.partition(1023));
        // A partition past the eager ones counts once it exists, in index order.
        svc.topic(&base.partition(999_999_999), true).unwrap();
        svc.topic(&base.partition(5000), true).unwrap();
        let targets = svc.partition_targets(&base, 1_000_000_000);
        assert_eq!(targets.len(), EAGER_PARTITIONS as usize + 2);
        assert_eq!(targets[1024], base.partition(5000));
        assert_eq!(targets[1025], base.partition(999_999_999));
        // Pulsar counts every declared partition against maxTopicsPerNamespace.
        assert_eq!(svc.topic_count("public/default"), 1_000_000_000);
    }

    #[test]
    fn max_topics_per_namespace_counts_every_declared_partition() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            max_topics_per_namespace: 3,
            ..BrokerConfig::default()
        };
        let svc = service(dir.path(), cfg);
        svc.topic(
            &TopicName::parse("persistent://public/default/one").unwrap(),
            true,
        )
        .unwrap();
        let parted = TopicName::parse("persistent://public/default/parted").unwrap();
        svc.create_partitioned(&parted, 2).unwrap();
        svc.topic(&parted.partition(0), true).unwrap();
        // partition 1 is not loaded, yet counted (the metadata's count).
        assert_eq!(svc.topic_count("public/default"), 3);
        let e = svc.admit_new_topics("public/default", 1).unwrap_err();
        assert!(matches!(e, BrokerError::NotAllowed(m) if m == NAMESPACE_FULL));
        assert!(svc.admit_new_topics("other/ns", 3).is_ok());
    }
}
