//! Namespace and topic policies, with Pulsar's admin JSON field names: publish rate, dispatch
//! rates, backlog quotas, retention, message TTL and inactive-topic policies. A topic's effective policy is its own, else its
//! namespace's, else the broker default from `broker.conf`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use pulsar_rs_ledger::MetaStore;
use serde::{Deserialize, Serialize};

use crate::config::inactive_topic_mode::InactiveTopicDeleteMode;
use crate::config::schema_strategy::Strategy;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::metadata_keys;
use crate::naming::TopicName;

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

/// What happens when a backlog quota is exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetentionPolicy {
    /// Refuse new producers (ProducerBlockedQuotaExceededError) and disconnect existing ones.
    ProducerRequestHold,
    /// Same, with ProducerBlockedQuotaExceededException: pending sends fail.
    ProducerException,
    /// Move the slowest cursor forward to bring the backlog under the limit.
    ConsumerBacklogEviction,
}

/// `BacklogQuota`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacklogQuota {
    /// Size limit in bytes (−1 = none).
    #[serde(default = "minus_one", alias = "limit")]
    pub limit_size: i64,
    /// Time limit in seconds (−1 = none).
    #[serde(default = "minus_one")]
    pub limit_time: i64,
    /// The policy applied when exceeded.
    pub policy: RetentionPolicy,
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
    fn per_second(&self) -> (f64, f64) {
        let period = positive(self.rate_period_in_second).max(1.0);
        (
            positive(self.dispatch_throttling_rate_in_msg) / period,
            positive(self.dispatch_throttling_rate_in_byte) / period,
        )
    }
}

/// Validates a policy document before it is stored.
///
/// # Errors
/// [`BrokerError::InvalidConfig`] naming the bad field.
pub fn validate(p: &Policies) -> Result<(), BrokerError> {
    let bad = |key: &str, reason: &str| BrokerError::InvalidConfig {
        key: key.into(),
        reason: reason.into(),
    };
    if let Some(r) = &p.publish_rate {
        if r.publish_throttling_rate_in_msg < -1 || r.publish_throttling_rate_in_byte < -1 {
            return Err(bad("publishRate", "rates must be >= -1"));
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
                return Err(bad(key, "rates must be >= -1 and ratePeriodInSecond >= 1"));
            }
        }
    }
    for (kind, q) in &p.backlog_quota_map {
        if kind != "destination_storage" && kind != "message_age" {
            return Err(bad(
                "backlogQuotaType",
                "must be destination_storage or message_age",
            ));
        }
        if q.limit_size < -1 || q.limit_time < -1 {
            return Err(bad("backlogQuota", "limitSize and limitTime must be >= -1"));
        }
    }
    if p.message_ttl_in_seconds.is_some_and(|t| t < 0) {
        return Err(bad("messageTTL", "Invalid value for message TTL"));
    }
    if p.compaction_threshold.is_some_and(|t| t < 0) {
        return Err(bad("compactionThreshold", "must be >= 0"));
    }
    if let Some(r) = &p.retention {
        if r.retention_time_in_minutes < -1 || r.retention_size_in_mb < -1 {
            return Err(bad(
                "retention",
                "retentionTimeInMinutes and retentionSizeInMB must be >= -1",
            ));
        }
    }
    Ok(())
}

/// Stored policies of every namespace and topic.
pub struct PolicyStore {
    /// Metadata store where policies persist.
    meta: Arc<dyn MetaStore>,
    /// Broker defaults; immutable.
    config: Arc<BrokerConfig>,
    /// Namespace (`tenant/ns`) → policies. Read on every resolve, written by the admin API.
    namespaces: RwLock<HashMap<String, Policies>>,
    /// Topic (full name) → policies.
    topics: RwLock<HashMap<String, Policies>>,
    /// Serializes updates (read, change, persist, publish). Held across the metadata fsync,
    /// which the maps' write locks are not: readers (every authorization and policy resolve)
    /// never wait for the disk.
    updates: parking_lot::Mutex<()>,
}

fn load(meta: &dyn MetaStore, prefix: &str) -> Result<HashMap<String, Policies>, BrokerError> {
    let mut out = HashMap::new();
    for key in meta.list(prefix)? {
        let Some(raw) = meta.get(&key)? else { continue };
        let p: Policies = serde_json::from_slice(&raw).map_err(|e| {
            BrokerError::Ledger(pulsar_rs_ledger::LedgerError::CorruptMetadata {
                key: key.clone(),
                reason: e.to_string(),
            })
        })?;
        out.insert(metadata_keys::name_of(&key), p);
    }
    Ok(out)
}

impl PolicyStore {
    /// Loads every stored policy.
    ///
    /// # Errors
    /// Metadata I/O or corrupt records.
    pub fn open(meta: Arc<dyn MetaStore>, config: Arc<BrokerConfig>) -> Result<Self, BrokerError> {
        let namespaces = load(meta.as_ref(), metadata_keys::NAMESPACE_POLICIES)?;
        let topics = load(meta.as_ref(), metadata_keys::TOPIC_POLICIES)?;
        Ok(PolicyStore {
            meta,
            config,
            namespaces: RwLock::new(namespaces),
            topics: RwLock::new(topics),
            updates: parking_lot::Mutex::new(()),
        })
    }

    /// Policies set on a namespace.
    #[must_use]
    pub fn namespace(&self, ns: &str) -> Policies {
        self.namespaces.read().get(ns).cloned().unwrap_or_default()
    }

    /// Whether a namespace exists (its policies record does).
    #[must_use]
    pub fn namespace_exists(&self, ns: &str) -> bool {
        self.namespaces.read().contains_key(ns)
    }

    /// Every namespace (`tenant/ns`), sorted.
    #[must_use]
    pub fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = self.namespaces.read().keys().cloned().collect();
        v.sort();
        v
    }

    /// Creates a namespace with its policies.
    ///
    /// # Errors
    /// [`BrokerError::AlreadyExists`], invalid values or metadata I/O.
    pub fn create_namespace(&self, ns: &str, p: Policies) -> Result<(), BrokerError> {
        self.create_namespace_replacing(ns, p, |_| false)
    }

    /// Creates a namespace with its policies, or replaces the policies of an existing one
    /// for which `may_replace` (given its current policies) answers true.
    ///
    /// # Errors
    /// [`BrokerError::AlreadyExists`] when it exists and may not be replaced, invalid values
    /// or metadata I/O.
    pub fn create_namespace_replacing(
        &self,
        ns: &str,
        p: Policies,
        may_replace: impl FnOnce(&Policies) -> bool,
    ) -> Result<(), BrokerError> {
        validate(&p)?;
        // The update lock is held across the check and the store write so two creations
        // cannot both succeed; the map's write lock only to publish the durable result.
        let _update = self.updates.lock();
        if self
            .namespaces
            .read()
            .get(ns)
            .is_some_and(|cur| !may_replace(cur))
        {
            return Err(BrokerError::AlreadyExists(format!("Namespace {ns}")));
        }
        self.meta.put(
            &metadata_keys::namespace_policies(ns),
            &serde_json::to_vec(&p).unwrap_or_default(),
        )?;
        self.namespaces.write().insert(ns.to_owned(), p);
        Ok(())
    }

    /// Deletes a namespace's record (the caller checks it holds no topics).
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn delete_namespace(&self, ns: &str) -> Result<(), BrokerError> {
        // Update lock: no other change interleaves; the map's write lock only to publish.
        let _update = self.updates.lock();
        self.meta.delete(&metadata_keys::namespace_policies(ns))?;
        self.namespaces.write().remove(ns);
        Ok(())
    }

    /// Policies set on a topic (a partitioned topic's partitions share their base's).
    #[must_use]
    pub fn topic(&self, t: &TopicName) -> Policies {
        self.topics
            .read()
            .get(&t.base().to_string())
            .cloned()
            .unwrap_or_default()
    }

    /// Changes a namespace's policies with `f` and persists them.
    ///
    /// # Errors
    /// Invalid values or metadata I/O.
    pub fn update_namespace(
        &self,
        ns: &str,
        f: impl FnOnce(&mut Policies),
    ) -> Result<(), BrokerError> {
        let _update = self.updates.lock();
        let mut p = self.namespaces.read().get(ns).cloned().unwrap_or_default();
        f(&mut p);
        validate(&p)?;
        self.meta.put(
            &metadata_keys::namespace_policies(ns),
            &serde_json::to_vec(&p).unwrap_or_default(),
        )?;
        // Short write lock: the new value is published once it is durable.
        self.namespaces.write().insert(ns.to_owned(), p);
        Ok(())
    }

    /// Changes a topic's policies with `f` and persists them.
    ///
    /// # Errors
    /// Invalid values or metadata I/O.
    pub fn update_topic(
        &self,
        t: &TopicName,
        f: impl FnOnce(&mut Policies),
    ) -> Result<(), BrokerError> {
        let name = t.base().to_string();
        let _update = self.updates.lock();
        let mut p = self.topics.read().get(&name).cloned().unwrap_or_default();
        f(&mut p);
        validate(&p)?;
        self.meta.put(
            &metadata_keys::topic_policies(&name),
            &serde_json::to_vec(&p).unwrap_or_default(),
        )?;
        // Short write lock: the new value is published once it is durable.
        self.topics.write().insert(name, p);
        Ok(())
    }

    /// Forgets a deleted topic's policies (as Pulsar deletes topic policies with the topic).
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn delete_topic(&self, t: &TopicName) -> Result<(), BrokerError> {
        let name = t.base().to_string();
        // Write lock: the map and the store change together.
        let mut map = self.topics.write();
        if map.remove(&name).is_some() {
            self.meta.delete(&metadata_keys::topic_policies(&name))?;
        }
        Ok(())
    }

    /// The effective policy of a topic.
    #[must_use]
    pub fn effective(&self, t: &TopicName) -> Effective {
        let tp = self.topic(t);
        let np = self.namespace(&t.namespace_name());
        let c = &self.config;
        let publish = tp.publish_rate.or(np.publish_rate).map_or(
            (
                positive(c.max_publish_rate_per_topic_in_messages),
                positive(c.max_publish_rate_per_topic_in_bytes),
            ),
            |r| {
                (
                    positive(r.publish_throttling_rate_in_msg),
                    positive(r.publish_throttling_rate_in_byte),
                )
            },
        );
        let dispatch = tp.dispatch_rate.or(np.dispatch_rate).map_or(
            (
                positive(c.dispatch_throttling_rate_per_topic_in_msg),
                positive(c.dispatch_throttling_rate_per_topic_in_byte),
            ),
            |r| r.per_second(),
        );
        let subscription_dispatch = tp
            .subscription_dispatch_rate
            .or(np.subscription_dispatch_rate)
            .map_or(
                (
                    positive(c.dispatch_throttling_rate_per_subscription_in_msg),
                    positive(c.dispatch_throttling_rate_per_subscription_in_byte),
                ),
                |r| r.per_second(),
            );
        let quota = |kind: &str| {
            tp.backlog_quota_map
                .get(kind)
                .or_else(|| np.backlog_quota_map.get(kind))
                .copied()
        };
        let default_policy = match c.backlog_quota_default_retention_policy.as_str() {
            "producer_exception" => RetentionPolicy::ProducerException,
            "consumer_backlog_eviction" => RetentionPolicy::ConsumerBacklogEviction,
            _ => RetentionPolicy::ProducerRequestHold,
        };
        let backlog_size = quota("destination_storage")
            .or_else(|| {
                let limit_size = c.backlog_quota_default_limit_size();
                (limit_size > 0).then_some(BacklogQuota {
                    limit_size,
                    limit_time: -1,
                    policy: default_policy,
                })
            })
            .filter(|q| q.limit_size >= 0);
        let backlog_time = quota("message_age")
            .or_else(|| {
                (c.backlog_quota_default_limit_second > 0).then_some(BacklogQuota {
                    limit_size: -1,
                    limit_time: c.backlog_quota_default_limit_second,
                    policy: default_policy,
                })
            })
            .filter(|q| q.limit_time >= 0);
        let retention = tp.retention.or(np.retention).map_or(
            (
                if c.default_retention_time_in_minutes < 0 {
                    -1
                } else {
                    c.default_retention_time_in_minutes * 60_000
                },
                if c.default_retention_size_in_mb < 0 {
                    -1
                } else {
                    c.default_retention_size_in_mb << 20
                },
            ),
            |r| {
                (
                    if r.retention_time_in_minutes < 0 {
                        -1
                    } else {
                        r.retention_time_in_minutes * 60_000
                    },
                    if r.retention_size_in_mb < 0 {
                        -1
                    } else {
                        r.retention_size_in_mb << 20
                    },
                )
            },
        );
        let deduplication = tp
            .deduplication_enabled
            .or(np.deduplication_enabled)
            .unwrap_or(c.broker_deduplication_enabled);
        let message_ttl_seconds = tp
            .message_ttl_in_seconds
            .or(np.message_ttl_in_seconds)
            .unwrap_or_else(|| i64::from(c.ttl_duration_default_in_seconds));
        let inactive = tp
            .inactive_topic_policies
            .or(np.inactive_topic_policies)
            .unwrap_or_else(|| InactiveTopicPolicies::from_config(c));
        let compaction_threshold = tp
            .compaction_threshold
            .or(np.compaction_threshold)
            .unwrap_or(c.broker_service_compaction_threshold_in_bytes);
        let schema_compatibility_strategy = [
            tp.schema_compatibility_strategy,
            np.schema_compatibility_strategy,
            Strategy::parse(&c.schema_compatibility_strategy),
        ]
        .into_iter()
        .flatten()
        .find(|s| *s != Strategy::Undefined)
        .unwrap_or(Strategy::Full);
        let allow_auto_update_schema = tp
            .is_allow_auto_update_schema
            .or(np.is_allow_auto_update_schema)
            .unwrap_or(c.is_allow_auto_update_schema_enabled);
        let schema_validation_enforced = tp
            .schema_validation_enforced
            .or(np.schema_validation_enforced)
            .unwrap_or(c.is_schema_validation_enforced);
        Effective {
            schema_compatibility_strategy,
            allow_auto_update_schema,
            schema_validation_enforced,
            publish,
            dispatch,
            subscription_dispatch,
            backlog_size,
            backlog_time,
            retention,
            deduplication,
            message_ttl_seconds,
            inactive,
            compaction_threshold,
        }
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn topic_overrides_namespace_overrides_broker() {
        let dir = tempfile::tempdir().unwrap();
        let meta: Arc<dyn MetaStore> =
            Arc::new(pulsar_rs_ledger::FileMetaStore::open(dir.path()).unwrap());
        let cfg = Arc::new(BrokerConfig {
            max_publish_rate_per_topic_in_messages: 7,
            ..BrokerConfig::default()
        });
        let store = PolicyStore::open(Arc::clone(&meta), cfg.clone()).unwrap();
        let t = TopicName::parse("persistent://a/b/t").unwrap();
        assert_eq!(store.effective(&t).publish, (7.0, 0.0));
        store
            .update_namespace("a/b", |p| {
                p.publish_rate = Some(PublishRate {
                    publish_throttling_rate_in_msg: 50,
                    publish_throttling_rate_in_byte: -1,
                });
            })
            .unwrap();
        assert_eq!(store.effective(&t).publish, (50.0, 0.0));
        store
            .update_topic(&t, |p| {
                p.publish_rate = Some(PublishRate {
                    publish_throttling_rate_in_msg: 5,
                    publish_throttling_rate_in_byte: 100,
                });
            })
            .unwrap();
        assert_eq!(store.effective(&t.partition(2)).publish, (5.0, 100.0));
        let bad = store.update_topic(&t, |p| {
            p.retention = Some(Retention {
                retention_time_in_minutes: -5,
                retention_size_in_mb: 0,
            });
        });
        assert!(bad.is_err());
        // Persisted: a new store sees the same.
        let again = PolicyStore::open(meta, cfg).unwrap();
        assert_eq!(again.effective(&t).publish, (5.0, 100.0));
    }
}
