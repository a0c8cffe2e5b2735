//! Pulsar's count and size limits on a topic (`maxProducersPerTopic`, `maxConsumersPerTopic`,
//! `maxConsumersPerSubscription`, `maxSubscriptionsPerTopic`, the same-address limits and the
//! topic's `maxMessageSize`), resolved as Pulsar resolves them: the topic policy, else the
//! namespace policy, else the broker setting; 0 means unlimited at every level. The checks
//! return Pulsar's errors with Pulsar's messages, so the topic and subscription code only asks.

use super::Policies;
use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// The resolved limits of one topic (0 = unlimited).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Producers on the topic.
    pub max_producers: u32,
    /// Consumers on the topic, all subscriptions together.
    pub max_consumers: u32,
    /// Consumers on one subscription.
    pub max_consumers_per_subscription: u32,
    /// Subscriptions on the topic.
    pub max_subscriptions: u32,
    /// Producers from one client address (broker setting only, as in Pulsar).
    pub max_same_address_producers: u32,
    /// Consumers from one client address (broker setting only, as in Pulsar).
    pub max_same_address_consumers: u32,
    /// Bytes of one message (topic policy only; `None`: the broker's `maxMessageSize`, which
    /// the connection enforces on every frame).
    pub max_message_size: Option<u32>,
}

/// Pulsar's system namespace (`NamespaceService.isSystemServiceNamespace`): its topics are
/// system topics, which Pulsar holds to none of the count limits (`AbstractTopic.isSystemTopic`
/// in `isProducersExceeded`, `isConsumersExceededOnTopic`, `checkMaxSubscriptionsPerTopicExceed`,
/// the dispatchers' subscription check and `BrokerService.checkMaxTopicsPerNamespace`).
pub const SYSTEM_NAMESPACE: &str = "pulsar/system";

/// A policy value as a limit: a negative one counts as unset, as Pulsar's
/// `AbstractTopic.normalizeValue` reads it (the admin paths refuse negatives: [`validate`]).
fn limit(v: Option<i32>) -> Option<u32> {
    v.and_then(|v| u32::try_from(v).ok())
}

impl Limits {
    /// The limits of a topic with policies `topic`, in a namespace with policies `namespace`.
    #[must_use]
    pub fn resolve(topic: &Policies, namespace: &Policies, c: &BrokerConfig) -> Self {
        let pick =
            |t: Option<i32>, n: Option<i32>, broker: u32| limit(t).or(limit(n)).unwrap_or(broker);
        Limits {
            max_producers: pick(
                topic.max_producers_per_topic,
                namespace.max_producers_per_topic,
                c.max_producers_per_topic,
            ),
            max_consumers: pick(
                topic.max_consumers_per_topic,
                namespace.max_consumers_per_topic,
                c.max_consumers_per_topic,
            ),
            max_consumers_per_subscription: pick(
                topic.max_consumers_per_subscription,
                namespace.max_consumers_per_subscription,
                c.max_consumers_per_subscription,
            ),
            max_subscriptions: pick(
                topic.max_subscriptions_per_topic,
                namespace.max_subscriptions_per_topic,
                c.max_subscriptions_per_topic,
            ),
            max_same_address_producers: c.max_same_address_producers_per_topic,
            max_same_address_consumers: c.max_same_address_consumers_per_topic,
            max_message_size: limit(topic.max_message_size).filter(|m| *m > 0),
        }
    }

    /// The limits of a system topic: its `maxMessageSize` only (no count limit).
    #[must_use]
    pub fn of_system_topic(self) -> Self {
        Limits {
            max_message_size: self.max_message_size,
            ..Limits::default()
        }
    }

    /// Whether one more producer may join a topic with `producers` producers, `same_address`
    /// of them from the new one's address.
    ///
    /// # Errors
    /// [`BrokerError::ProducerBusy`] with Pulsar's messages (`ServerCnx.handleProducer` names
    /// the topic; `AbstractTopic.internalAddProducer` does not for the address limit).
    pub fn admit_producer(
        &self,
        topic: &str,
        producers: usize,
        same_address: usize,
    ) -> Result<(), BrokerError> {
        if reached(self.max_producers, producers) {
            return Err(BrokerError::ProducerBusy(format!(
                "Topic '{topic}' reached max producers limit"
            )));
        }
        if reached(self.max_same_address_producers, same_address) {
            return Err(BrokerError::ProducerBusy(
                "Topic reached max same address producers limit".into(),
            ));
        }
        Ok(())
    }

    /// Whether one more consumer may join the topic (`consumers` on it, `same_address` of them
    /// from the new one's address) and its subscription (`on_subscription` there).
    ///
    /// # Errors
    /// [`BrokerError::ConsumerBusy`] with Pulsar's messages.
    pub fn admit_consumer(
        &self,
        consumers: usize,
        same_address: usize,
        on_subscription: usize,
    ) -> Result<(), BrokerError> {
        if reached(self.max_consumers, consumers) {
            return Err(BrokerError::ConsumerBusy(
                "Topic reached max consumers limit".into(),
            ));
        }
        if reached(self.max_same_address_consumers, same_address) {
            return Err(BrokerError::ConsumerBusy(
                "Topic reached max same address consumers limit".into(),
            ));
        }
        if reached(self.max_consumers_per_subscription, on_subscription) {
            return Err(BrokerError::ConsumerBusy(
                "Subscription reached max consumers limit".into(),
            ));
        }
        Ok(())
    }

    /// Whether a new subscription may be added to a topic with `subscriptions` of them.
    ///
    /// # Errors
    /// [`BrokerError::NotAllowed`] with Pulsar's message.
    pub fn admit_subscription(&self, topic: &str, subscriptions: usize) -> Result<(), BrokerError> {
        if reached(self.max_subscriptions, subscriptions) {
            return Err(BrokerError::NotAllowed(format!(
                "Exceed the maximum number of subscriptions of the topic: {topic}"
            )));
        }
        Ok(())
    }

    /// Whether a message of `size` bytes (metadata and payload) fits the topic's policy.
    ///
    /// # Errors
    /// [`BrokerError::NotAllowed`] with Pulsar's message.
    pub fn admit_message(&self, size: usize) -> Result<(), BrokerError> {
        match self.max_message_size {
            Some(max) if size > max as usize => Err(BrokerError::NotAllowed(
                "Exceed maximum message size".into(),
            )),
            _ => Ok(()),
        }
    }
}

/// Whether `count` already reached a `max` (0 = unlimited).
fn reached(max: u32, count: usize) -> bool {
    max > 0 && count >= max as usize
}

/// How many topics the namespace `name` may hold: its policy, else the broker's setting
/// (0 = unlimited; always for [`SYSTEM_NAMESPACE`]).
#[must_use]
pub fn max_topics_per_namespace(name: &str, namespace: &Policies, c: &BrokerConfig) -> u32 {
    if name == SYSTEM_NAMESPACE {
        return 0;
    }
    limit(namespace.max_topics_per_namespace).unwrap_or(c.max_topics_per_namespace)
}

/// Checks the limit fields of a policy document as stored: a topic's `maxMessageSize` within
/// `broker_max_message_size`. Negative count limits are stored as given (an old namespace
/// document may carry -1, as Pulsar accepts it) and read as unset ([`Limits::resolve`]); the
/// admin paths that set one refuse a negative value themselves, with Pulsar's 412.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming the field.
pub fn validate(p: &Policies, broker_max_message_size: u32) -> Result<(), BrokerError> {
    if p.max_message_size
        .is_some_and(|m| m < 0 || i64::from(m) > i64::from(broker_max_message_size))
    {
        return Err(BrokerError::InvalidConfig {
            key: "maxMessageSize".into(),
            reason: "topic-level maxMessageSize must be greater than or equal to 0 and must be \
                     smaller than that in the broker-level"
                .into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_then_namespace_then_broker() {
        let c = BrokerConfig {
            max_producers_per_topic: 5,
            max_consumers_per_topic: 7,
            ..BrokerConfig::default()
        };
        let ns = Policies {
            max_producers_per_topic: Some(3),
            max_consumers_per_topic: Some(0),
            ..Policies::default()
        };
        let topic = Policies {
            max_producers_per_topic: Some(1),
            ..Policies::default()
        };
        let l = Limits::resolve(&topic, &ns, &c);
        assert_eq!(l.max_producers, 1);
        // 0 in the namespace policy means unlimited there, whatever the broker says.
        assert_eq!(l.max_consumers, 0);
        assert_eq!(
            Limits::resolve(&Policies::default(), &ns, &c).max_producers,
            3
        );
        assert_eq!(
            Limits::resolve(&Policies::default(), &Policies::default(), &c).max_producers,
            5
        );
        // A negative value (an old namespace document's -1) is unset, as Pulsar reads it.
        let old = Policies {
            max_producers_per_topic: Some(-1),
            ..Policies::default()
        };
        assert_eq!(
            Limits::resolve(&Policies::default(), &old, &c).max_producers,
            5
        );
    }

    #[test]
    fn system_topics_have_no_count_limits() {
        let c = BrokerConfig {
            max_producers_per_topic: 1,
            max_topics_per_namespace: 1,
            ..BrokerConfig::default()
        };
        let topic = Policies {
            max_message_size: Some(100),
            max_subscriptions_per_topic: Some(1),
            ..Policies::default()
        };
        let l = Limits::resolve(&topic, &Policies::default(), &c).of_system_topic();
        assert_eq!(
            l,
            Limits {
                max_message_size: Some(100),
                ..Limits::default()
            }
        );
        let ns = Policies::default();
        assert_eq!(max_topics_per_namespace(SYSTEM_NAMESPACE, &ns, &c), 0);
        assert_eq!(max_topics_per_namespace("public/default", &ns, &c), 1);
    }

    #[test]
    fn checks_answer_as_pulsar() {
        let l = Limits {
            max_producers: 1,
            max_consumers_per_subscription: 2,
            max_subscriptions: 1,
            max_message_size: Some(10),
            ..Limits::default()
        };
        assert!(l.admit_producer("t", 0, 0).is_ok());
        let e = l.admit_producer("t", 1, 0).unwrap_err();
        assert!(
            matches!(e, BrokerError::ProducerBusy(m) if m == "Topic 't' reached max producers limit")
        );
        assert!(l.admit_consumer(9, 9, 1).is_ok());
        assert!(matches!(
            l.admit_consumer(0, 0, 2),
            Err(BrokerError::ConsumerBusy(_))
        ));
        assert!(matches!(
            l.admit_subscription("t", 1),
            Err(BrokerError::NotAllowed(_))
        ));
        assert!(l.admit_message(10).is_ok());
        assert!(l.admit_message(11).is_err());
        assert!(Limits::default()
            .admit_producer("t", 1_000_000, 1_000_000)
            .is_ok());
    }

    #[test]
    fn the_limit_settings_are_applied_not_ignored() {
        let keys = [
            ("maxNumPartitionsPerPartitionedTopic", 2),
            ("maxTopicsPerNamespace", 3),
            ("maxSubscriptionsPerTopic", 4),
            ("maxProducersPerTopic", 5),
            ("maxConsumersPerTopic", 6),
            ("maxConsumersPerSubscription", 7),
            ("maxSameAddressProducersPerTopic", 8),
            ("maxSameAddressConsumersPerTopic", 9),
            ("maxMessageSize", 10_000),
        ];
        let map = keys
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::json!(v)))
            .collect();
        let c = BrokerConfig::from_json_map(map).unwrap();
        assert!(
            c.unimplemented_keys.is_empty(),
            "{:?}",
            c.unimplemented_keys
        );
        assert_eq!(
            [
                c.max_num_partitions_per_partitioned_topic,
                c.max_topics_per_namespace,
                c.max_subscriptions_per_topic,
                c.max_producers_per_topic,
                c.max_consumers_per_topic,
                c.max_consumers_per_subscription,
                c.max_same_address_producers_per_topic,
                c.max_same_address_consumers_per_topic,
                c.max_message_size,
            ],
            [2, 3, 4, 5, 6, 7, 8, 9, 10_000]
        );
        let l = Limits::resolve(&Policies::default(), &Policies::default(), &c);
        assert_eq!(
            (l.max_subscriptions, l.max_producers, l.max_consumers),
            (4, 5, 6)
        );
        assert_eq!(
            (
                l.max_consumers_per_subscription,
                l.max_same_address_producers,
                l.max_same_address_consumers
            ),
            (7, 8, 9)
        );
    }

    #[test]
    fn validation_messages() {
        // A stored -1 is kept (read as unset); the admin paths refuse it themselves.
        let p = Policies {
            max_subscriptions_per_topic: Some(-1),
            ..Policies::default()
        };
        assert!(validate(&p, 100).is_ok());
        let p = Policies {
            max_message_size: Some(101),
            ..Policies::default()
        };
        assert!(validate(&p, 100).is_err());
        let p = Policies {
            max_message_size: Some(100),
            ..Policies::default()
        };
        assert!(validate(&p, 100).is_ok());
    }
}
