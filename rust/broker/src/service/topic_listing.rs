//! PIP-452: a namespace's topic list and the properties a client lists it with (the admin
//! API's `?properties=k1=v1,k2=v2`, GET_TOPICS_OF_NAMESPACE's `properties`), as
//! `pulsarResourcesExtendedClassName` chooses ([`TopicListing`]): ignored (Pulsar's default),
//! or only the topics whose own properties hold every pair.

use std::collections::BTreeMap;

use serde_json::Value;

use super::BrokerService;
use crate::config::topic_listing::TopicListing;
use crate::naming::TopicName;
use crate::policies::TOPIC_PROPERTIES;

impl BrokerService {
    /// The properties of a topic (a partition: its partitioned topic's), as stored with its
    /// policies when it was created or its properties were updated.
    #[must_use]
    pub fn topic_properties(&self, name: &TopicName) -> BTreeMap<String, String> {
        match self.policies.topic(name).other.get(TOPIC_PROPERTIES) {
            Some(Value::Object(m)) => m
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect(),
            _ => BTreeMap::new(),
        }
    }

    /// `topics` as the listing answers them for a client that sent `properties`: all of them
    /// unless the listing is by the topics' properties and the client sent some.
    #[must_use]
    pub fn list_by_properties(
        &self,
        topics: Vec<String>,
        properties: &BTreeMap<String, String>,
    ) -> Vec<String> {
        // Validated when the broker started; a bad value there never gets here.
        let listing = TopicListing::from_config(&self.config).unwrap_or(TopicListing::Default);
        if listing == TopicListing::Default || properties.is_empty() {
            return topics;
        }
        topics
            .into_iter()
            .filter(|t| {
                let Ok(name) = TopicName::parse(t) else {
                    return false;
                };
                let own = self.topic_properties(&name);
                properties.iter().all(|(k, v)| own.get(k) == Some(v))
            })
            .collect()
    }
}
