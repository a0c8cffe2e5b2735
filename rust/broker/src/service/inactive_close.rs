//! PIP-470 (Pulsar 5.0): inactive topics closed instead of deleted, when
//! `brokerCloseInactiveTopicsEnabled` (which the settings allow only with
//! `brokerDeleteInactiveTopicsEnabled=false` and `delete_when_no_subscriptions`), on the same
//! schedule (`brokerDeleteInactiveTopicsFrequencySeconds`).
//!
//! A persistent topic without producers, subscriptions or a replication backlog for its policy's
//! `maxInactiveDurationSeconds` is unloaded: closed and forgotten, its data, cursors, schema and
//! policies kept, its metric series gone; the next producer or consumer loads it again. As
//! Pulsar's: closing wins over a `deleteWhileInactive` policy (nothing is deleted), and a topic
//! whose policy's mode is `delete_when_subscriptions_caught_up` is left alone (its caught-up
//! consumers would see it closed and reloaded forever). Retention does not apply: nothing is
//! deleted. Non-persistent topics are not closed (closing one would lose nothing to keep).

use std::sync::atomic::Ordering::Relaxed;

use super::inactive::{is_active, seconds_ms};
use super::BrokerService;
use crate::config::inactive_topic_mode::InactiveTopicDeleteMode;
use crate::naming::TopicName;
use crate::policies::limits::SYSTEM_NAMESPACE;

impl BrokerService {
    /// One PIP-470 check of every loaded persistent topic at `now` (ms on the broker's clock):
    /// the names of the topics closed, and the handles of producers that attached while one
    /// was being closed (for the server to close them too).
    pub fn close_inactive_topics(&self, now: u64) -> (Vec<TopicName>, Vec<u64>) {
        let mode = InactiveTopicDeleteMode::DeleteWhenNoSubscriptions;
        let mut closed = Vec::new();
        let mut handles = Vec::new();
        for topic in self.loaded_topics() {
            if topic.name.namespace_name() == SYSTEM_NAMESPACE {
                continue;
            }
            let policy = topic.effective_policy().inactive;
            if policy.inactive_topic_delete_mode != mode {
                continue;
            }
            if is_active(&topic, mode) {
                // Relaxed: see `Topic::last_active_ms`.
                topic.last_active_ms.store(now, Relaxed);
                continue;
            }
            let idle_for = now.saturating_sub(topic.last_active_ms.load(Relaxed));
            if idle_for < seconds_ms(policy.max_inactive_duration_seconds) {
                continue;
            }
            // Checked again under the broker's topics lock: a producer or subscription that
            // arrived since keeps it loaded.
            if let Some(h) = self.unload_if(&topic.name, |t| !is_active(t, mode)) {
                tracing::info!(topic = %topic.name, "topic closed due to inactivity; its data is kept");
                handles.extend(h);
                closed.push(topic.name.clone());
            }
        }
        (closed, handles)
    }
}
