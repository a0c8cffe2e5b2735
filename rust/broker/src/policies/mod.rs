//! Namespace and topic policies, with Pulsar's admin JSON field names: publish rate, dispatch
//! rates, backlog quotas ([`backlog_quota`]), retention, message TTL and inactive-topic
//! policies, and their validation. A topic's effective policy is its own, else its namespace's,
//! else the broker default from `broker.conf`; [`store`] keeps and resolves them.

pub mod backlog_quota;
pub mod delivery_delay;
pub mod limits;
pub mod offload;
pub mod replication;
pub mod store;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use self::backlog_quota::BacklogQuota;
use self::limits::Limits;
use crate::config::inactive_topic_mode::InactiveTopicDeleteMode;
use crate::config::schema_strategy::Strategy;
use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// `PublishRate`: messages and bytes per second a topic accepts (−1 or 0 = unlimited).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublishRate {
    /// Messages per second.
    #[serde(default = "minus_one")]
    pub publish_throttling_rate_in_msg: i64,
    /// Bytes per second.
    #[serde(default = "minus_one")]
    pub publish_throttling_rate_in_byte: i64,
}

/// `DispatchRate`: messages and bytes per period a topic or subscription dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DispatchRate {
    /// Messages per period (−1 or 0 = unlimited).
    #[serde(default = "minus_one")]
    pub dispatch_throttling_rate_in_msg: i64,
    /// Bytes per period (−1 or 0 = unlimited).
    #[serde(default = "minus_one")]
    pub dispatch_throttling_rate_in_byte: i64,
    /// Whether the limit is relative to the publish rate (accepted, not implemented).
    #[serde(default)]
    pub relative_to_publish_rate: bool,
    /// Period in seconds (default 1).
    #[serde(default = "one")]
    pub rate_period_in_second: i64,
}

/// `RetentionPolicies`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retention {
    /// Minutes to keep consumed data (−1 = forever).
    pub retention_time_in_minutes: i64,
    /// MiB of consumed data to keep (−1 = unlimited).
    #[serde(rename = "retentionSizeInMB")]
    pub retention_size_in_mb: i64,
}

/// Pulsar's `PersistencePolicies`: the bookies a topic's new ledgers are striped over (E), copied
/// to (Qw) and acknowledged by (Qa). A field left out of a request body takes Pulsar's default
/// (2, 2, 2, 0.0), as its no-argument constructor gives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistencePolicies {
    /// Ensemble size (E).
    pub bookkeeper_ensemble: i32,
    /// Write quorum (Qw).
    pub bookkeeper_write_quorum: i32,
    /// Ack quorum (Qa).
    pub bookkeeper_ack_quorum: i32,
    /// Mark-delete persist rate limit (kept and shown; cursors here persist on their own schedule).
    pub managed_ledger_max_mark_delete_rate: f64,
    /// A managed-ledger storage class (Pulsar 4's field; kept and shown, not chosen from;
    /// left out of the JSON when unset, as Pulsar's mapper leaves nulls out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_ledger_storage_class_name: Option<String>,
}

impl Default for PersistencePolicies {
    fn default() -> Self {
        PersistencePolicies {
            bookkeeper_ensemble: 2,
            bookkeeper_write_quorum: 2,
            bookkeeper_ack_quorum: 2,
            managed_ledger_max_mark_delete_rate: 0.0,
            managed_ledger_storage_class_name: None,
        }
    }
}

impl PersistencePolicies {
    /// Pulsar's `validatePersistencePolicies` with the broker's `managedLedgerMax*` bounds:
    /// `Err` holds Pulsar's message (a 400 over REST).
    ///
    /// # Errors
    /// A quorum outside 1..=its bound, or E ≥ Qw ≥ Qa broken.
    pub fn check(&self, max: (usize, usize, usize)) -> Result<(), String> {
        let within = |v: i32, bound: usize| v > 0 && usize::try_from(v).is_ok_and(|v| v <= bound);
        if !within(self.bookkeeper_ensemble, max.0) {
            return Err(format!("Bookkeeper-Ensemble must be <= {} and > 0.", max.0));
        }
        if !within(self.bookkeeper_write_quorum, max.1) {
            return Err(format!(
                "Bookkeeper-WriteQuorum must be <= {} and > 0.",
                max.1
            ));
        }
        if !within(self.bookkeeper_ack_quorum, max.2) {
            return Err(format!(
                "Bookkeeper-AckQuorum must be <= {} and > 0.",
                max.2
            ));
        }
        if self.bookkeeper_ensemble < self.bookkeeper_write_quorum
            || self.bookkeeper_write_quorum < self.bookkeeper_ack_quorum
        {
            return Err(format!(
                "Bookkeeper Ensemble ({}) >= WriteQuorum ({}) >= AckQuorum ({})",
                self.bookkeeper_ensemble, self.bookkeeper_write_quorum, self.bookkeeper_ack_quorum
            ));
        }
        Ok(())
    }

    /// The quorums new ledgers take.
    #[must_use]
    pub fn quorums(&self) -> pulsar_rs_ledger::seam::Quorums {
        let n = |v: i32| usize::try_from(v.max(1)).unwrap_or(1);
        pulsar_rs_ledger::seam::Quorums {
            ensemble: n(self.bookkeeper_ensemble),
            write: n(self.bookkeeper_write_quorum),
            ack: n(self.bookkeeper_ack_quorum),
        }
    }
}

/// Pulsar's `InactiveTopicPolicies`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InactiveTopicPolicies {
    /// What counts as activity besides producers.
    #[serde(default)]
    pub inactive_topic_delete_mode: InactiveTopicDeleteMode,
    /// Seconds a topic must stay inactive before it is deleted.
    #[serde(default)]
    pub max_inactive_duration_seconds: i64,
    /// Whether inactive topics are deleted at all.
    #[serde(default)]
    pub delete_while_inactive: bool,
}

impl InactiveTopicPolicies {
    /// The broker's inactive-topic policy, from its settings (Pulsar: the maximum inactive
    /// duration defaults to the check frequency).
    #[must_use]
    pub fn from_config(config: &BrokerConfig) -> Self {
        InactiveTopicPolicies {
            inactive_topic_delete_mode: InactiveTopicDeleteMode::parse(
                &config.broker_delete_inactive_topics_mode,
            )
            .unwrap_or_default(),
            max_inactive_duration_seconds: i64::from(
                config
                    .broker_delete_inactive_topics_max_inactive_duration_seconds
                    .unwrap_or(config.broker_delete_inactive_topics_frequency_seconds),
            ),
            delete_while_inactive: config.broker_delete_inactive_topics_enabled,
        }
    }
}

fn minus_one() -> i64 {
    -1
}

fn one() -> i64 {
    1
}

/// Pulsar's `AuthPolicies`: actions (`produce`, `consume`, ...) granted to roles on the
/// namespace, on single topics of it (by full topic name) and subscription roles. The broker
/// stores them; the server's authorizer reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthPolicies {
    /// Role → actions on every topic of the namespace.
    #[serde(default)]
    pub namespace_auth: BTreeMap<String, BTreeSet<String>>,
    /// Topic → role → actions.
    #[serde(default)]
    pub destination_auth: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// Subscription → roles allowed on it.
    #[serde(default)]
    pub subscription_auth_roles: BTreeMap<String, BTreeSet<String>>,
}

impl AuthPolicies {
    /// Whether nothing is granted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.namespace_auth.is_empty()
            && self.destination_auth.is_empty()
            && self.subscription_auth_roles.is_empty()
    }
}

/// Every policy of one namespace or topic; `None` = inherit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policies {
    /// Publish rate.
    pub publish_rate: Option<PublishRate>,
    /// Topic dispatch rate.
    pub dispatch_rate: Option<DispatchRate>,
    /// Per-subscription dispatch rate.
    pub subscription_dispatch_rate: Option<DispatchRate>,
    /// Backlog quotas by type (`destination_storage`, `message_age`).
    #[serde(default)]
    pub backlog_quota_map: HashMap<String, BacklogQuota>,
    /// Retention.
    pub retention: Option<Retention>,
    /// Ensemble and quorums of new ledgers on BookKeeper; Pulsar's `persistence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistence: Option<PersistencePolicies>,
    /// Deduplication on or off (`None`: inherit; broker `brokerDeduplicationEnabled`).
    #[serde(default)]
    pub deduplication_enabled: Option<bool>,
    /// Message TTL in seconds (0 = never expire); Pulsar's `message_ttl_in_seconds` (topic
    /// policy `messageTTLInSeconds`).
    #[serde(
        default,
        rename = "message_ttl_in_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub message_ttl_in_seconds: Option<i64>,
    /// Inactive-topic deletion; Pulsar's `inactive_topic_policies`.
    #[serde(
        default,
        rename = "inactive_topic_policies",
        skip_serializing_if = "Option::is_none"
    )]
    pub inactive_topic_policies: Option<InactiveTopicPolicies>,
    /// Automatic compaction threshold in bytes (0 = off; `None`: inherit; broker
    /// `brokerServiceCompactionThresholdInBytes`). Pulsar's namespace field name.
    #[serde(
        default,
        rename = "compaction_threshold",
        skip_serializing_if = "Option::is_none"
    )]
    pub compaction_threshold: Option<i64>,
    /// Schema compatibility strategy (`UNDEFINED`/`None`: inherit; broker
    /// `schemaCompatibilityStrategy`); Pulsar's `schema_compatibility_strategy`.
    #[serde(
        default,
        rename = "schema_compatibility_strategy",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema_compatibility_strategy: Option<Strategy>,
    /// Whether producers may add schema versions (`None`: inherit; broker
    /// `isAllowAutoUpdateSchemaEnabled`); Pulsar's `is_allow_auto_update_schema`.
    #[serde(
        default,
        rename = "is_allow_auto_update_schema",
        skip_serializing_if = "Option::is_none"
    )]
    pub is_allow_auto_update_schema: Option<bool>,
    /// Whether producers without a schema are refused on topics with one (`None`: inherit;
    /// broker `isSchemaValidationEnforced`); Pulsar's `schema_validation_enforced`.
    #[serde(
        default,
        rename = "schema_validation_enforced",
        skip_serializing_if = "Option::is_none"
    )]
    pub schema_validation_enforced: Option<bool>,
    /// Most producers per topic (0 = unlimited; `None`: inherit). Namespace path
    /// `maxProducersPerTopic`, topic path `maxProducers`.
    #[serde(
        default,
        rename = "max_producers_per_topic",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_producers_per_topic: Option<i32>,
    /// Most consumers per topic (namespace `maxConsumersPerTopic`, topic `maxConsumers`).
    #[serde(
        default,
        rename = "max_consumers_per_topic",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_consumers_per_topic: Option<i32>,
    /// Most consumers per subscription (`maxConsumersPerSubscription` at both levels).
    #[serde(
        default,
        rename = "max_consumers_per_subscription",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_consumers_per_subscription: Option<i32>,
    /// Most subscriptions per topic (`maxSubscriptionsPerTopic` at both levels).
    #[serde(
        default,
        rename = "max_subscriptions_per_topic",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_subscriptions_per_topic: Option<i32>,
    /// Most topics in the namespace (namespace documents only; `maxTopicsPerNamespace`).
    #[serde(
        default,
        rename = "max_topics_per_namespace",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_topics_per_namespace: Option<i32>,
    /// Most bytes in one message (topic documents only; `maxMessageSize`).
    #[serde(
        default,
        rename = "max_message_size",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_message_size: Option<i32>,
    /// Permissions (namespace documents only), Pulsar's `auth_policies`.
    #[serde(
        default,
        rename = "auth_policies",
        skip_serializing_if = "AuthPolicies::is_empty"
    )]
    pub auth_policies: AuthPolicies,
    /// Fields of Pulsar's namespace `Policies` document this broker stores and returns but does
    /// not apply (`deduplicationEnabled`, `message_ttl_in_seconds`, ...), by their JSON names.
    #[serde(flatten)]
    pub other: std::collections::BTreeMap<String, serde_json::Value>,
}

/// A namespace's `autoTopicCreationOverride` (Pulsar's `AutoTopicCreationOverride`): whether
/// unknown topics of the namespace are created on use, and how, in place of the broker's
/// `allowAutoTopicCreation`, `allowAutoTopicCreationType` and `defaultNumPartitions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoTopicCreationOverride {
    /// Whether unknown topics are created on use.
    pub allow_auto_topic_creation: bool,
    /// `partitioned` or `non-partitioned` (required when creation is allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_type: Option<String>,
    /// Partitions of an auto-created partitioned topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_num_partitions: Option<i32>,
}

impl AutoTopicCreationOverride {
    /// The JSON field of the namespace `Policies` document holding it.
    pub const FIELD: &'static str = "autoTopicCreationOverride";

    /// Pulsar's `AutoTopicCreationOverrideImpl.validateOverride`: the reason it is invalid.
    ///
    /// # Errors
    /// The message Pulsar gives.
    pub fn validate(&self) -> Result<(), String> {
        if !self.allow_auto_topic_creation {
            return Ok(());
        }
        let t = self.topic_type.as_deref().unwrap_or("null");
        match t {
            "partitioned" => match self.default_num_partitions {
                None => Err(
                    "[defaultNumPartitions] cannot be null when the type is partitioned.".into(),
                ),
                Some(n) if n < 1 => {
                    Err("[defaultNumPartitions] cannot be less than 1 for partition type.".into())
                }
                Some(_) => Ok(()),
            },
            "non-partitioned" if self.default_num_partitions.is_some() => Err(
                "[defaultNumPartitions] is not allowed to be set when the type is non-partition."
                    .into(),
            ),
            "non-partitioned" => Ok(()),
            other => Err(format!("Unknown topic type [{other}]")),
        }
    }

    /// The override stored in a namespace's policies, if any (and readable).
    #[must_use]
    pub fn of(p: &Policies) -> Option<Self> {
        let v = p.other.get(Self::FIELD).filter(|v| !v.is_null())?;
        serde_json::from_value(v.clone()).ok()
    }
}

/// The resolved policy of one topic.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effective {
    /// Publish limit (messages/s, bytes/s); 0 = none.
    pub publish: (f64, f64),
    /// Topic dispatch limit (messages/s, bytes/s); 0 = none.
    pub dispatch: (f64, f64),
    /// Subscription dispatch limit (messages/s, bytes/s); 0 = none.
    pub subscription_dispatch: (f64, f64),
    /// Size quota.
    pub backlog_size: Option<BacklogQuota>,
    /// Time quota.
    pub backlog_time: Option<BacklogQuota>,
    /// Retention (time in ms, size in bytes), −1 = unlimited.
    pub retention: (i64, i64),
    /// Deduplication on.
    pub deduplication: bool,
    /// Message TTL in seconds (0 = none): topic, else namespace, else `ttlDurationDefaultInSeconds`.
    pub message_ttl_seconds: i64,
    /// Inactive-topic policy: topic, else namespace, else the broker's.
    pub inactive: InactiveTopicPolicies,
    /// Automatic compaction threshold in bytes (0 = off).
    pub compaction_threshold: i64,
    /// Schema compatibility strategy (never `UNDEFINED`).
    pub schema_compatibility_strategy: Strategy,
    /// Producers may add schema versions.
    pub allow_auto_update_schema: bool,
    /// Producers without a schema are refused on topics with one.
    pub schema_validation_enforced: bool,
    /// Count and size limits.
    pub limits: Limits,
    /// Most unacked messages per consumer of a Shared/Key_Shared subscription (0 = none):
    /// topic `maxUnackedMessagesOnConsumer`, else namespace `max_unacked_messages_per_consumer`,
    /// else `maxUnackedMessagesPerConsumer`.
    pub max_unacked_per_consumer: u32,
    /// Most unacked messages per subscription (0 = none): topic
    /// `maxUnackedMessagesOnSubscription`, else namespace `max_unacked_messages_per_subscription`,
    /// else `maxUnackedMessagesPerSubscription`.
    pub max_unacked_per_subscription: u32,
    /// Delayed delivery on: topic `delayedDeliveryEnabled`, else namespace
    /// `delayed_delivery_policies.active`, else `delayedDeliveryEnabled`.
    pub delayed_delivery: bool,
    /// PIP-437's maximum and fixed delivery delays ([`delivery_delay`]).
    pub delivery_delay: delivery_delay::DeliveryDelay,
    /// Subscriptions are created on first subscribe: topic `autoSubscriptionCreationOverride`,
    /// else the namespace's, else `allowAutoSubscriptionCreation`.
    pub allow_auto_subscription_creation: bool,
    /// Offload settings, resolved field by field ([`offload::resolve`]).
    pub offload: std::collections::BTreeMap<String, String>,
}

fn positive(v: i64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    if v > 0 {
        v as f64
    } else {
        0.0
    }
}

impl DispatchRate {
    /// (messages/s, bytes/s) over its period; 0 = that dimension unlimited.
    #[must_use]
    pub fn per_second(&self) -> (f64, f64) {
        let period = positive(self.rate_period_in_second).max(1.0);
        (
            positive(self.dispatch_throttling_rate_in_msg) / period,
            positive(self.dispatch_throttling_rate_in_byte) / period,
        )
    }
}

/// The key a topic's properties (PIP-452 lists topics by them) are kept under in its
/// policies document.
pub const TOPIC_PROPERTIES: &str = "properties";

/// PIP-447: the namespace policy naming the topic property keys its topics' metrics may carry
/// as labels (Pulsar's `Policies.allowed_topic_properties_for_metrics`).
pub const ALLOWED_TOPIC_PROPERTIES_FOR_METRICS: &str = "allowed_topic_properties_for_metrics";

/// The key of a refused retention policy ([`BrokerError::InvalidConfig`]): Pulsar answers its
/// refusals 400 where other policies' are 412.
pub const RETENTION: &str = "retention";

/// Pulsar's `validateRetentionPolicies`: each limit at least -1 (no limit), and a 0 only beside
/// another 0 (no retention).
///
/// # Errors
/// Pulsar's message.
pub fn check_retention(time_in_minutes: i64, size_in_mb: i64) -> Result<(), &'static str> {
    if size_in_mb < -1 {
        return Err("Invalid retention policy: size limit must be >= -1");
    }
    if time_in_minutes < -1 {
        return Err("Invalid retention policy: time limit must be >= -1");
    }
    if (time_in_minutes == 0) != (size_in_mb == 0) {
        return Err("Invalid retention policy: Setting a single time or size limit to 0 is invalid when one of the limits has a non-zero value. Use the value of -1 instead of 0 to ignore a specific limit. To disable retention both limits must be set to 0.");
    }
    Ok(())
}

/// Validates a policy document before it is stored.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming the bad field, its reason a whole sentence (Pulsar's
/// where Pulsar has one), which the admin API answers alone.
pub fn validate(p: &Policies) -> Result<(), BrokerError> {
    let bad = |key: &str, reason: &str| BrokerError::InvalidConfig {
        key: key.into(),
        reason: reason.into(),
    };
    if let Some(r) = &p.publish_rate {
        if r.publish_throttling_rate_in_msg < -1 || r.publish_throttling_rate_in_byte < -1 {
            return Err(bad(
                "publishRate",
                "Invalid publishRate: rates must be >= -1",
            ));
        }
    }
    for (key, r) in [
        ("dispatchRate", &p.dispatch_rate),
        ("subscriptionDispatchRate", &p.subscription_dispatch_rate),
    ] {
        if let Some(r) = r {
            if r.dispatch_throttling_rate_in_msg < -1
                || r.dispatch_throttling_rate_in_byte < -1
                || r.rate_period_in_second < 1
            {
                return Err(bad(
                    key,
                    &format!("Invalid {key}: rates must be >= -1 and ratePeriodInSecond >= 1"),
                ));
            }
        }
    }
    for (kind, q) in &p.backlog_quota_map {
        if kind != "destination_storage" && kind != "message_age" {
            return Err(bad(
                "backlogQuotaType",
                "Invalid backlogQuotaType: must be destination_storage or message_age",
            ));
        }
        if q.limit_size < -1 || q.limit_time < -1 {
            return Err(bad(
                "backlogQuota",
                "Invalid backlogQuota: limitSize and limitTime must be >= -1",
            ));
        }
    }
    if p.message_ttl_in_seconds.is_some_and(|t| t < 0) {
        return Err(bad("messageTTL", "Invalid value for message TTL"));
    }
    if p.compaction_threshold.is_some_and(|t| t < 0) {
        return Err(bad(
            "compactionThreshold",
            "Invalid compactionThreshold: must be >= 0",
        ));
    }
    if let Some(r) = &p.retention {
        check_retention(r.retention_time_in_minutes, r.retention_size_in_mb)
            .map_err(|why| bad(RETENTION, why))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::backlog_quota::RetentionPolicy;
    use super::*;

    #[test]
    fn pulsar_json_names_parse() {
        let r: PublishRate = serde_json::from_str(
            r#"{"publishThrottlingRateInMsg":10,"publishThrottlingRateInByte":-1}"#,
        )
        .unwrap();
        assert_eq!(r.publish_throttling_rate_in_msg, 10);
        let q: BacklogQuota =
            serde_json::from_str(r#"{"limitSize":1024,"policy":"consumer_backlog_eviction"}"#)
                .unwrap();
        assert_eq!(q.policy, RetentionPolicy::ConsumerBacklogEviction);
        assert_eq!(q.limit_time, -1);
        let d: DispatchRate =
            serde_json::from_str(r#"{"dispatchThrottlingRateInMsg":100,"ratePeriodInSecond":2}"#)
                .unwrap();
        assert_eq!(d.per_second(), (50.0, 0.0));
        assert!(serde_json::from_str::<PublishRate>(r#"{"bogus":1}"#).is_err());
    }
}
