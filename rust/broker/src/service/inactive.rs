//! Inactive-topic deletion, as Pulsar's `BrokerService.checkGC` / `PersistentTopic.checkGC`,
//! run every `brokerDeleteInactiveTopicsFrequencySeconds` when
//! `brokerDeleteInactiveTopicsEnabled`.
//!
//! A topic's `inactiveTopicPolicies` (topic, else namespace, else the broker's
//! `brokerDeleteInactiveTopicsMode` / `...MaxInactiveDurationSeconds` / `...Enabled`) decide:
//! * a topic with a connected producer is always active;
//! * `delete_when_no_subscriptions`: so is one with any subscription (durable or a reader's);
//! * `delete_when_subscriptions_caught_up`: so is one where any subscription has a backlog;
//!   caught-up consumers do not keep it (Pulsar disconnects them, apache/pulsar#18283);
//! * in either mode, so is one whose replication cursors hold entries not yet replicated.
//!
//! Each check that finds a topic active sets its `lastActive`; so do its load and a producer
//! leaving. A topic inactive for `maxInactiveDurationSeconds`, and not within its retention
//! time of `lastActive` (retention −1 keeps it forever), is deleted: consumers disconnected,
//! subscriptions, data and cursors deleted, and for a non-partitioned topic its schema and
//! topic policies. A partition's deletion also removes the partitioned topic's metadata once
//! no partition is left, when `brokerDeleteInactivePartitionedTopicMetadataEnabled`.
//! Non-persistent topics are deleted when they have no producer and no subscription for
//! `maxInactiveDurationSeconds` (the mode does not apply; Pulsar's `NonPersistentTopic.isActive`).
//! Topics of the system namespace `pulsar/system` are never deleted (Pulsar's `SystemTopic`).

use std::sync::atomic::Ordering::Relaxed;

use super::BrokerService;
use crate::config::inactive_topic_mode::InactiveTopicDeleteMode;
use crate::naming::TopicName;
use crate::nonpersistent::NonPersistentTopic;
use crate::topic::Topic;

// Pulsar's system namespace: its topics are never garbage-collected.
use crate::policies::limits::SYSTEM_NAMESPACE;

/// Pulsar's `PersistentTopic.isActive(mode)` for a topic of a v2 (global) namespace.
pub(super) fn is_active(topic: &Topic, mode: InactiveTopicDeleteMode) -> bool {
    let subs = topic.subscriptions();
    let kept_by_subscriptions = match mode {
        InactiveTopicDeleteMode::DeleteWhenNoSubscriptions => !subs.is_empty(),
        InactiveTopicDeleteMode::DeleteWhenSubscriptionsCaughtUp => {
            subs.iter().any(|s| s.cursor.backlog() > 0)
        }
    };
    // What a replicator has not sent yet keeps the topic: deleting it would lose that for the
    // remote cluster (Pulsar checks its replicators' backlog before deleting).
    let kept_for_replication = topic
        .replication_cursors()
        .iter()
        .any(|(_, c)| c.backlog() > 0);
    kept_by_subscriptions || kept_for_replication || !topic.producers().is_empty()
}

pub(super) fn seconds_ms(s: i64) -> u64 {
    u64::try_from(s).unwrap_or(0).saturating_mul(1000)
}

impl BrokerService {
    /// Pulsar's `BrokerService.checkGC`: deletes inactive topics.
    /// Returns the names of the topics deleted.
    pub fn check_gc(&self) -> Vec<TopicName> {
        check_gc(self, self.clock().now_ms())
    }
}

/// One check of every loaded topic at `now` (ms on the broker's clock); returns the topics
/// deleted.
pub(crate) fn check_gc(service: &BrokerService, now: u64) -> Vec<TopicName> {
    let mut deleted = Vec::new();
    for t in service.loaded_topics() {
        if check_persistent(service, &t, now) {
            deleted.push(t.name.clone());
        }
    }
    for t in service.non_persistent_topics() {
        if check_non_persistent(service, &t, now) {
            deleted.push(t.name.clone());
        }
    }
    for name in &deleted {
        tracing::info!(topic = %name, "topic deleted successfully due to inactivity");
        if name.partition_index().is_some()
            && service
                .config
                .broker_delete_inactive_partitioned_topic_metadata_enabled
        {
            match service.delete_partitioned_if_unused(&name.base()) {
                Ok(true) => {
                    tracing::info!(topic = %name.base(), "partitioned topic metadata deleted due to inactivity");
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(topic = %name.base(), error = %e, "deleting partitioned topic metadata");
                }
            }
        }
    }
    deleted
}

fn check_persistent(service: &BrokerService, topic: &Topic, now: u64) -> bool {
    if topic.name.namespace_name() == SYSTEM_NAMESPACE {
        return false;
    }
    let eff = topic.effective_policy();
    let policy = eff.inactive;
    if !policy.delete_while_inactive {
        return false;
    }
    let mode = policy.inactive_topic_delete_mode;
    if is_active(topic, mode) {
        // Relaxed: see `Topic::last_active_ms`.
        topic.last_active_ms.store(now, Relaxed);
        return false;
    }
    let idle_for = now.saturating_sub(topic.last_active_ms.load(Relaxed));
    if idle_for < seconds_ms(policy.max_inactive_duration_seconds) {
        return false;
    }
    // Pulsar's `shouldTopicBeRetained`: within the retention time of its last activity.
    let retention_ms = eff.retention.0;
    if retention_ms < 0 || idle_for < u64::try_from(retention_ms).unwrap_or(0) {
        return false;
    }
    // Checked again under the broker's topics lock: a producer or subscription that arrived
    // since keeps the topic (Pulsar's `delete` fails with TopicBusy then).
    match service.delete_if_idle(&topic.name, |t| !is_active(t, mode)) {
        Ok(deleted) => deleted,
        Err(e) => {
            tracing::warn!(topic = %topic.name, error = %e, "inactive topic deletion failed");
            false
        }
    }
}

fn check_non_persistent(service: &BrokerService, topic: &NonPersistentTopic, now: u64) -> bool {
    let policy = service.policies.effective(&topic.name).inactive;
    if !policy.delete_while_inactive || topic.name.namespace_name() == SYSTEM_NAMESPACE {
        return false;
    }
    let active =
        |t: &NonPersistentTopic| !t.subscriptions().is_empty() || !t.producers().is_empty();
    if active(topic) {
        // Relaxed: see `NonPersistentTopic::last_active_ms`.
        topic.last_active_ms.store(now, Relaxed);
        return false;
    }
    let idle_for = now.saturating_sub(topic.last_active_ms.load(Relaxed));
    if idle_for <= seconds_ms(policy.max_inactive_duration_seconds) {
        return false;
    }
    service.remove_non_persistent_if_idle(&topic.name, |t| !active(t))
}

#[cfg(test)]
mod tests {
    use crate::config::inactive_topic_mode::InactiveTopicDeleteMode;
    use crate::config::BrokerConfig;
    use crate::policies::InactiveTopicPolicies;

    #[test]
    fn pulsar_keys_are_implemented_with_pulsars_defaults() {
        // As in Pulsar's broker.conf: an empty max duration means "the check frequency".
        let c = BrokerConfig::from_properties(
            "brokerDeleteInactiveTopicsEnabled=true\nbrokerDeleteInactiveTopicsFrequencySeconds=7\n\
             brokerDeleteInactiveTopicsMode=delete_when_subscriptions_caught_up\n\
             brokerDeleteInactiveTopicsMaxInactiveDurationSeconds=\n\
             brokerDeleteInactivePartitionedTopicMetadataEnabled=true\n\
             ttlDurationDefaultInSeconds=30\nmessageExpiryCheckIntervalInMinutes=2\n",
        )
        .unwrap();
        assert!(
            c.unimplemented_keys.is_empty(),
            "{:?}",
            c.unimplemented_keys
        );
        assert_eq!(
            InactiveTopicPolicies::from_config(&c),
            InactiveTopicPolicies {
                inactive_topic_delete_mode:
                    InactiveTopicDeleteMode::DeleteWhenSubscriptionsCaughtUp,
                max_inactive_duration_seconds: 7,
                delete_while_inactive: true,
            }
        );
        assert_eq!(c.ttl_duration_default_in_seconds, 30);
        assert_eq!(c.message_expiry_check_interval_in_minutes, 2);
        let d = BrokerConfig::default();
        assert!(d.broker_delete_inactive_topics_enabled);
        assert_eq!(
            InactiveTopicPolicies::from_config(&d).max_inactive_duration_seconds,
            60
        );
        assert_eq!(d.message_expiry_check_interval_in_minutes, 5);
        let bad = BrokerConfig::from_properties("brokerDeleteInactiveTopicsMode=never\n")
            .and_then(|c| c.validate());
        assert!(bad.is_err());
    }

    #[test]
    fn policy_json_is_pulsars() {
        let p: InactiveTopicPolicies = serde_json::from_str(
            r#"{"inactiveTopicDeleteMode":"delete_when_no_subscriptions","maxInactiveDurationSeconds":60,"deleteWhileInactive":true}"#,
        )
        .unwrap();
        assert_eq!(
            p.inactive_topic_delete_mode,
            InactiveTopicDeleteMode::DeleteWhenNoSubscriptions
        );
        assert!(serde_json::from_str::<InactiveTopicPolicies>(
            r#"{"inactiveTopicDeleteMode":"x"}"#
        )
        .is_err());
    }
}
