//! PIP-447 (Pulsar 4.2): custom labels on a topic's metrics. With
//! `exposeCustomTopicMetricLabelsEnabled`, a topic's properties (set at creation or by
//! `update-properties`; a partition has its partitioned topic's) whose keys are allowed become
//! labels of every metric of the topic. The keys allowed are the namespace's
//! `allowed_topic_properties_for_metrics` policy when it names some, else the broker's
//! `allowedTopicPropertyKeysForMetrics`.

use serde_json::Value;

use super::BrokerService;
use crate::naming::TopicName;
use crate::policies::ALLOWED_TOPIC_PROPERTIES_FOR_METRICS;

/// The labels every topic metric has already: a property never replaces them.
const STANDARD_LABELS: &[&str] = &[
    "cluster",
    "namespace",
    "topic",
    "subscription",
    "remote_cluster",
    "le",
    "quantile",
];

/// Whether `key` is a Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not `__` reserved).
fn is_label_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with("__")
}

impl BrokerService {
    /// The topic property keys allowed as metric labels in `namespace`.
    #[must_use]
    pub fn allowed_metric_label_keys(&self, namespace: &str) -> Vec<String> {
        let from_namespace: Vec<String> = match self
            .policies
            .namespace(namespace)
            .other
            .get(ALLOWED_TOPIC_PROPERTIES_FOR_METRICS)
        {
            Some(Value::Array(keys)) => keys
                .iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        if from_namespace.is_empty() {
            self.config.allowed_topic_property_keys_for_metrics.clone()
        } else {
            from_namespace
        }
    }

    /// The custom labels of `topic`'s metrics, key order, as `(name, value)` pairs: none unless
    /// `exposeCustomTopicMetricLabelsEnabled` and the topic is persistent. A key that is no Prometheus label name, or is one
    /// of the standard labels, is left out.
    #[must_use]
    pub fn custom_metric_labels(&self, topic: &TopicName) -> Vec<(String, String)> {
        // Persistent topics only, as Pulsar's `PersistentTopicAttributes`.
        if !self.config.expose_custom_topic_metric_labels_enabled || !topic.is_persistent() {
            return Vec::new();
        }
        let allowed = self.allowed_metric_label_keys(&topic.namespace_name());
        if allowed.is_empty() {
            return Vec::new();
        }
        self.topic_properties(topic)
            .into_iter()
            .filter(|(k, _)| {
                allowed.iter().any(|a| a == k)
                    && is_label_name(k)
                    && !STANDARD_LABELS.contains(&k.as_str())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::is_label_name;

    #[test]
    fn label_names_are_prometheus_ones() {
        assert!(is_label_name("sla_tier"));
        assert!(is_label_name("_team2"));
        assert!(!is_label_name("2team"));
        assert!(!is_label_name("app-owner"));
        assert!(!is_label_name("__name"));
        assert!(!is_label_name(""));
    }
}
