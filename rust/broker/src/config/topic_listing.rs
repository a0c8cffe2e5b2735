//! PIP-452's `pulsarResourcesExtendedClassName`: how a namespace's topic list (the admin API's
//! `GET /admin/v2/persistent/{tenant}/{namespace}?properties=...` and GET_TOPICS_OF_NAMESPACE's
//! `properties`) uses the properties the client sends. Pulsar loads a Java class there; pulsar_rs
//! loads none and knows two values: Pulsar's default (the properties are ignored, as Pulsar 4.2+
//! and 4.0, which had no such parameter, answer) and its own listing by the topics' properties.
//! It stands with the settings, below the service that filters.

use super::BrokerConfig;
use crate::error::BrokerError;

/// Pulsar's default `pulsarResourcesExtendedClassName`.
pub const DEFAULT_RESOURCES_EXTENDED: &str =
    "org.apache.pulsar.broker.DefaultPulsarResourcesExtended";
/// pulsar_rs's listing by the topics' own properties (those a topic was created with, or set
/// with `topics update-properties`).
pub const TOPIC_PROPERTIES_LISTING: &str = "pulsar_rs.TopicPropertiesListing";

/// What the client's properties do to a topic list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopicListing {
    /// Pulsar's `DefaultPulsarResourcesExtended`: ignored.
    Default,
    /// Only the topics whose properties hold every key with the value asked for; a partition
    /// has its partitioned topic's properties. No properties: every topic.
    ByTopicProperties,
}

impl TopicListing {
    /// The listing the settings choose.
    ///
    /// # Errors
    /// [`BrokerError::InvalidConfig`] for a class pulsar_rs does not have, or a listing by
    /// properties while topic-list watchers (which ignore properties, PIP-452) are on.
    pub fn from_config(c: &BrokerConfig) -> Result<Self, BrokerError> {
        let key = "pulsarResourcesExtendedClassName";
        let listing = match c.pulsar_resources_extended_class_name.as_str() {
            DEFAULT_RESOURCES_EXTENDED | "" => Self::Default,
            TOPIC_PROPERTIES_LISTING => Self::ByTopicProperties,
            other => {
                return Err(BrokerError::InvalidConfig {
                    key: key.into(),
                    reason: format!(
                        "pulsar_rs loads no Java class ({other}): use {DEFAULT_RESOURCES_EXTENDED} \
                         (the client's properties ignored) or {TOPIC_PROPERTIES_LISTING} (topics \
                         listed by their own properties)"
                    ),
                })
            }
        };
        if listing == Self::ByTopicProperties && c.enable_broker_topic_list_watcher {
            return Err(BrokerError::InvalidConfig {
                key: key.into(),
                reason: format!(
                    "{TOPIC_PROPERTIES_LISTING} needs enableBrokerTopicListWatcher=false: a \
                     topic-list watcher does not carry the client's properties (PIP-452)"
                ),
            });
        }
        Ok(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_pulsars_and_the_listing_by_properties_needs_the_watchers_off() {
        let d = BrokerConfig::default();
        assert!(d.enable_broker_topic_list_watcher);
        assert_eq!(
            TopicListing::from_config(&d).unwrap(),
            TopicListing::Default
        );
        let with = |text: &str| {
            BrokerConfig::from_properties(text).and_then(|c| TopicListing::from_config(&c))
        };
        let by = format!("pulsarResourcesExtendedClassName={TOPIC_PROPERTIES_LISTING}\n");
        assert!(with(&by).is_err());
        assert_eq!(
            with(&format!("{by}enableBrokerTopicListWatcher=false\n")).unwrap(),
            TopicListing::ByTopicProperties
        );
        let e = with("pulsarResourcesExtendedClassName=com.example.Mine\n").unwrap_err();
        assert!(
            e.to_string().contains("pulsarResourcesExtendedClassName"),
            "{e}"
        );
    }
}
