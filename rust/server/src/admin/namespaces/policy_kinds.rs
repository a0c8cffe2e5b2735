//! The policies the generic policy routes of [`super::policies`] know: each path's name at
//! namespace and topic level ([`Kind`], [`kind`]), its JSON view in Pulsar's shape ([`view`])
//! and, for topic documents, the keys a policy is kept under ([`topic_keys`]).

// Helpers return the ready 4xx response as their error (as in `policies`).
#![allow(clippy::result_large_err)]

use axum::http::StatusCode;
use axum::response::Response;
use pulsar_rs_broker::policies::delivery_delay;
use pulsar_rs_broker::policies::replication::RATE_FIELD;
use pulsar_rs_broker::policies::{Policies, TOPIC_PROPERTIES as PROPERTIES};
use serde_json::Value;

use crate::http::fail;

/// Which policy a path names.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    PublishRate,
    DispatchRate,
    SubscriptionDispatchRate,
    BacklogQuota,
    BacklogQuotaMap,
    Retention,
    Deduplication,
    MessageTtl,
    InactiveTopicPolicies,
    CompactionThreshold,
    SchemaCompatibilityStrategy,
    IsAllowAutoUpdateSchema,
    SchemaValidationEnforced,
    MaxProducers,
    MaxConsumers,
    MaxConsumersPerSubscription,
    MaxSubscriptions,
    MaxTopics,
    MaxMessageSize,
    Persistence,
    // Topic level only, kept in the topic's document under Pulsar's `TopicPolicies` names.
    SubscribeRate,
    DeduplicationSnapshotInterval,
    ReplicatorDispatchRate,
    OffloadPolicies,
    AutoSubscriptionCreation,
    ReplicationClusters,
    MaxUnackedOnConsumer,
    MaxUnackedOnSubscription,
    DelayedDelivery,
    /// PIP-437's longest delivery delay (seconds), both levels.
    MaxDelayedDeliveryTime,
    /// PIP-437's fixed delivery delay (seconds), both levels.
    FixedDelayedDeliveryTime,
    /// A topic's properties (Pulsar keeps them with the managed ledger or the partitioned
    /// topic's metadata; here in the topic's document, deleted with the topic).
    Properties,
}

/// Where a policy path is: a namespace's or a topic's (some policies exist at one level only,
/// and Pulsar's messages name the path).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Namespace,
    Topic,
}

pub(super) fn kind(name: &str, level: Level) -> Result<Kind, Response> {
    let limit = match (name, level) {
        ("maxProducersPerTopic", Level::Namespace) | ("maxProducers", Level::Topic) => {
            Some(Kind::MaxProducers)
        }
        ("maxConsumersPerTopic", Level::Namespace) | ("maxConsumers", Level::Topic) => {
            Some(Kind::MaxConsumers)
        }
        ("maxConsumersPerSubscription", _) => Some(Kind::MaxConsumersPerSubscription),
        ("maxSubscriptionsPerTopic", _) => Some(Kind::MaxSubscriptions),
        ("maxTopicsPerNamespace", Level::Namespace) => Some(Kind::MaxTopics),
        ("maxMessageSize", Level::Topic) => Some(Kind::MaxMessageSize),
        ("subscribeRate", Level::Topic) => Some(Kind::SubscribeRate),
        ("deduplicationSnapshotInterval", Level::Topic) => {
            Some(Kind::DeduplicationSnapshotInterval)
        }
        // The topic's `TopicPolicies` field; the namespace's, this cluster's entry of the
        // `Policies` document's per-cluster map.
        ("replicatorDispatchRate", _) => Some(Kind::ReplicatorDispatchRate),
        ("offloadPolicies", Level::Topic) => Some(Kind::OffloadPolicies),
        ("autoSubscriptionCreation", Level::Topic) => Some(Kind::AutoSubscriptionCreation),
        ("replication", Level::Topic) => Some(Kind::ReplicationClusters),
        ("maxUnackedMessagesOnConsumer", Level::Topic) => Some(Kind::MaxUnackedOnConsumer),
        ("maxUnackedMessagesOnSubscription", Level::Topic) => Some(Kind::MaxUnackedOnSubscription),
        ("delayedDelivery", Level::Topic) => Some(Kind::DelayedDelivery),
        ("properties", Level::Topic) => Some(Kind::Properties),
        ("maxDelayedDeliveryTime", _) => Some(Kind::MaxDelayedDeliveryTime),
        ("fixedDelayedDeliveryTime", _) => Some(Kind::FixedDelayedDeliveryTime),
        _ => None,
    };
    if let Some(k) = limit {
        return Ok(k);
    }
    Ok(match name {
        "publishRate" => Kind::PublishRate,
        "dispatchRate" => Kind::DispatchRate,
        "subscriptionDispatchRate" => Kind::SubscriptionDispatchRate,
        "backlogQuota" => Kind::BacklogQuota,
        "backlogQuotaMap" => Kind::BacklogQuotaMap,
        "retention" => Kind::Retention,
        // Namespace path `deduplication`, topic path `deduplicationEnabled` (as Pulsar's).
        "deduplication" | "deduplicationEnabled" => Kind::Deduplication,
        "messageTTL" => Kind::MessageTtl,
        "inactiveTopicPolicies" => Kind::InactiveTopicPolicies,
        "compactionThreshold" => Kind::CompactionThreshold,
        "schemaCompatibilityStrategy" => Kind::SchemaCompatibilityStrategy,
        "isAllowAutoUpdateSchema" => Kind::IsAllowAutoUpdateSchema,
        "schemaValidationEnforced" => Kind::SchemaValidationEnforced,
        "persistence" => Kind::Persistence,
        other => {
            return Err(fail(
                StatusCode::NOT_FOUND,
                format!("unknown policy or path {other:?}"),
            ))
        }
    })
}

pub(super) fn view(p: &Policies, k: Kind) -> Value {
    let v = match k {
        Kind::PublishRate => serde_json::to_value(p.publish_rate),
        Kind::DispatchRate => serde_json::to_value(p.dispatch_rate),
        Kind::SubscriptionDispatchRate => serde_json::to_value(p.subscription_dispatch_rate),
        Kind::BacklogQuota | Kind::BacklogQuotaMap => serde_json::to_value(&p.backlog_quota_map),
        Kind::Retention => serde_json::to_value(p.retention),
        Kind::Deduplication => serde_json::to_value(p.deduplication_enabled),
        Kind::MessageTtl => serde_json::to_value(p.message_ttl_in_seconds),
        Kind::InactiveTopicPolicies => serde_json::to_value(p.inactive_topic_policies),
        Kind::CompactionThreshold => serde_json::to_value(p.compaction_threshold),
        // Pulsar answers UNDEFINED when nothing is set here.
        Kind::SchemaCompatibilityStrategy => {
            serde_json::to_value(p.schema_compatibility_strategy.unwrap_or_default())
        }
        Kind::IsAllowAutoUpdateSchema => serde_json::to_value(p.is_allow_auto_update_schema),
        Kind::SchemaValidationEnforced => {
            serde_json::to_value(p.schema_validation_enforced.unwrap_or(false))
        }
        Kind::MaxProducers => serde_json::to_value(p.max_producers_per_topic),
        Kind::MaxConsumers => serde_json::to_value(p.max_consumers_per_topic),
        Kind::MaxConsumersPerSubscription => serde_json::to_value(p.max_consumers_per_subscription),
        Kind::MaxSubscriptions => serde_json::to_value(p.max_subscriptions_per_topic),
        // Pulsar answers 0 when the namespace sets nothing (the broker's value is not shown).
        Kind::MaxTopics => serde_json::to_value(p.max_topics_per_namespace.unwrap_or(0)),
        Kind::MaxMessageSize => serde_json::to_value(p.max_message_size),
        Kind::Persistence => serde_json::to_value(&p.persistence),
        Kind::DelayedDelivery => return delayed_delivery_view(p),
        // A topic without properties has the empty map.
        Kind::Properties => {
            return p
                .other
                .get(PROPERTIES)
                .cloned()
                .unwrap_or_else(|| Value::Object(serde_json::Map::new()))
        }
        k => {
            return topic_keys(k)
                .first()
                .and_then(|key| p.other.get(*key).cloned())
                .unwrap_or(Value::Null)
        }
    };
    v.unwrap_or(Value::Null)
}

/// The `TopicPolicies` field names (Pulsar's) a topic-only policy is kept under.
pub(super) fn topic_keys(k: Kind) -> &'static [&'static str] {
    match k {
        Kind::SubscribeRate => &["subscribeRate"],
        Kind::DeduplicationSnapshotInterval => &["deduplicationSnapshotIntervalSeconds"],
        Kind::ReplicatorDispatchRate => &[RATE_FIELD],
        Kind::OffloadPolicies => &["offloadPolicies"],
        Kind::AutoSubscriptionCreation => &["autoSubscriptionCreationOverride"],
        Kind::ReplicationClusters => &["replicationClusters"],
        Kind::MaxUnackedOnConsumer => &["maxUnackedMessagesOnConsumer"],
        Kind::MaxUnackedOnSubscription => &["maxUnackedMessagesOnSubscription"],
        Kind::DelayedDelivery => &[
            "delayedDeliveryEnabled",
            "delayedDeliveryTickTimeMillis",
            "delayedDeliveryMaxDelayInMillis",
        ],
        Kind::MaxDelayedDeliveryTime => &[delivery_delay::MAX_KEY],
        Kind::FixedDelayedDeliveryTime => &[delivery_delay::FIXED_KEY],
        _ => &[],
    }
}

/// Pulsar's `DelayedDeliveryPolicies` of a topic's fields, or `null` when neither the switch
/// nor the tick time is set (as Pulsar's `getDelayedDeliveryPolicies`).
pub(super) fn delayed_delivery_view(p: &Policies) -> Value {
    let get = |key: &str| p.other.get(key).filter(|v| !v.is_null());
    let (active, tick) = (
        get("delayedDeliveryEnabled"),
        get("delayedDeliveryTickTimeMillis"),
    );
    if active.is_none() && tick.is_none() {
        return Value::Null;
    }
    serde_json::json!({
        "tickTime": tick.cloned().unwrap_or(Value::from(0)),
        "active": active.cloned().unwrap_or(Value::Bool(false)),
        "maxDeliveryDelayInMillis": get("delayedDeliveryMaxDelayInMillis")
            .cloned()
            .unwrap_or(Value::from(0)),
    })
}

/// A value as JSON (`null` if it cannot be).
pub(super) fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}
