//! The policy store: every namespace's and topic's stored policies, persisted in the metadata
//! store and cached, and the effective policy of a topic (its own, else its namespace's, else
//! the broker default from `broker.conf`).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use pulsar_rs_ledger::MetaStore;

use super::backlog_quota::{BacklogQuota, RetentionPolicy};
use super::limits::{self, Limits};
use super::{positive, validate, Effective, InactiveTopicPolicies, PersistencePolicies, Policies};
use crate::config::schema_strategy::Strategy;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::metadata_keys;
use crate::naming::TopicName;

/// Stored policies of every namespace and topic.
pub struct PolicyStore {
    /// Metadata store where policies persist.
    meta: Arc<dyn MetaStore>,
    /// Broker defaults; immutable.
    pub(super) config: Arc<BrokerConfig>,
    /// Namespace (`tenant/ns`) → policies. Read on every resolve, written by the admin API.
    namespaces: RwLock<HashMap<String, Policies>>,
    /// Topic (full name) → policies.
    topics: RwLock<HashMap<String, Policies>>,
    /// Serializes updates (read, change, persist, publish). Held across the metadata fsync,
    /// which the maps' write locks are not: readers (every authorization and policy resolve)
    /// never wait for the disk.
    updates: parking_lot::Mutex<()>,
    /// In a cluster, namespace → the version of the cluster's `Policies` document its policies
    /// here were last installed from, so a document read before a newer one was installed is
    /// never installed over it. Locked only while `updates` is held (lock order: `updates`,
    /// then this), for a map lookup.
    cluster_versions: parking_lot::Mutex<HashMap<String, i32>>,
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
            cluster_versions: parking_lot::Mutex::new(HashMap::new()),
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
        limits::validate(&p, self.config.max_message_size)?;
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
        self.cluster_versions.lock().remove(ns);
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
        self.change_namespace(ns, f).map(|_| ())
    }

    /// As [`PolicyStore::update_namespace`], answering the policies before and after the
    /// change (a cluster member shares what changed).
    ///
    /// # Errors
    /// Invalid values or metadata I/O.
    pub fn change_namespace(
        &self,
        ns: &str,
        f: impl FnOnce(&mut Policies),
    ) -> Result<(Policies, Policies), BrokerError> {
        let _update = self.updates.lock();
        let before = self.namespaces.read().get(ns).cloned().unwrap_or_default();
        let mut p = before.clone();
        f(&mut p);
        validate(&p)?;
        limits::validate(&p, self.config.max_message_size)?;
        self.meta.put(
            &metadata_keys::namespace_policies(ns),
            &serde_json::to_vec(&p).unwrap_or_default(),
        )?;
        // Short write lock: the new value is published once it is durable.
        self.namespaces.write().insert(ns.to_owned(), p.clone());
        Ok((before, p))
    }

    /// Installs a namespace's policies as the cluster's metadata store holds them (set through
    /// any broker of the cluster), creating the namespace here if needed. They are not
    /// validated again: the broker that wrote them did, and a value this broker would have
    /// refused is still the cluster's. `version` is the document's version in the cluster's
    /// store: one older than the version last installed is not installed (a document read
    /// before this broker wrote a newer one). Whether anything changed.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn install_namespace(
        &self,
        ns: &str,
        p: Policies,
        version: i32,
    ) -> Result<bool, BrokerError> {
        let _update = self.updates.lock();
        {
            let mut versions = self.cluster_versions.lock();
            if versions.get(ns).is_some_and(|&seen| version < seen) {
                return Ok(false);
            }
            versions.insert(ns.to_owned(), version);
        }
        if self.namespaces.read().get(ns) == Some(&p) {
            return Ok(false);
        }
        self.meta.put(
            &metadata_keys::namespace_policies(ns),
            &serde_json::to_vec(&p).unwrap_or_default(),
        )?;
        // Short write lock: the new value is published once it is durable.
        self.namespaces.write().insert(ns.to_owned(), p);
        Ok(true)
    }

    /// Forgets the cluster document's version of a namespace the cluster's store no longer
    /// has (one created again there starts from version 0).
    pub fn forget_cluster_version(&self, ns: &str) {
        let _update = self.updates.lock();
        self.cluster_versions.lock().remove(ns);
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
        limits::validate(&p, self.config.max_message_size)?;
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

    /// PIP-422 (Pulsar 4.1's `topicPolicies delete`): forgets every policy set on a topic (the
    /// local and the global ones; here one document), also for a topic that no longer exists.
    /// Its properties stay: they are the topic's, not policies (Pulsar keeps them with its
    /// managed ledger). Whether there was anything to forget.
    ///
    /// # Errors
    /// Metadata I/O.
    pub fn delete_topic_policies(&self, t: &TopicName) -> Result<bool, BrokerError> {
        let name = t.base().to_string();
        let _update = self.updates.lock();
        let Some(before) = self.topics.read().get(&name).cloned() else {
            return Ok(false);
        };
        let mut kept = Policies::default();
        if let Some(p) = before.other.get(super::TOPIC_PROPERTIES) {
            kept.other
                .insert(super::TOPIC_PROPERTIES.to_owned(), p.clone());
        }
        if kept == before {
            return Ok(false);
        }
        if kept == Policies::default() {
            self.meta.delete(&metadata_keys::topic_policies(&name))?;
            // Short write lock: the record is gone once the store no longer has it.
            self.topics.write().remove(&name);
        } else {
            self.meta.put(
                &metadata_keys::topic_policies(&name),
                &serde_json::to_vec(&kept).unwrap_or_default(),
            )?;
            // Short write lock: the new value is published once it is durable.
            self.topics.write().insert(name, kept);
        }
        Ok(true)
    }

    /// The `persistence` policy of a topic: its own, else its namespace's; `None`: the broker's
    /// `managedLedgerDefault*` settings.
    #[must_use]
    pub fn persistence(&self, t: &TopicName) -> Option<PersistencePolicies> {
        self.topic(t)
            .persistence
            .or_else(|| self.namespace(&t.namespace_name()).persistence)
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
        // Kept under Pulsar's field names among the documents' other fields (the topic's
        // `TopicPolicies` names, the namespace's `Policies` names).
        let other = |p: &Policies, key: &str| p.other.get(key).filter(|v| !v.is_null()).cloned();
        let unacked = |topic_key: &str, ns_key: &str, broker: u32| {
            other(&tp, topic_key)
                .or_else(|| other(&np, ns_key))
                .and_then(|v| v.as_u64())
                .map_or(broker, |v| u32::try_from(v).unwrap_or(u32::MAX))
        };
        let max_unacked_per_consumer = unacked(
            "maxUnackedMessagesOnConsumer",
            "max_unacked_messages_per_consumer",
            c.max_unacked_messages_per_consumer,
        );
        let max_unacked_per_subscription = unacked(
            "maxUnackedMessagesOnSubscription",
            "max_unacked_messages_per_subscription",
            c.max_unacked_messages_per_subscription,
        );
        let delayed_delivery = other(&tp, "delayedDeliveryEnabled")
            .or_else(|| {
                other(&np, "delayed_delivery_policies").and_then(|d| d.get("active").cloned())
            })
            .and_then(|v| v.as_bool())
            .unwrap_or(c.delayed_delivery_enabled);
        let auto_subscription = |p: &Policies| {
            other(p, "autoSubscriptionCreationOverride").and_then(|o| {
                o.get("allowAutoSubscriptionCreation")
                    .and_then(|v| v.as_bool())
            })
        };
        let allow_auto_subscription_creation = auto_subscription(&tp)
            .or_else(|| auto_subscription(&np))
            .unwrap_or(c.allow_auto_subscription_creation);
        let offload = super::offload::resolve(&tp, &np, c);
        let delivery_delay = super::delivery_delay::DeliveryDelay::resolve(&tp, &np, c);
        Effective {
            delivery_delay,
            allow_auto_subscription_creation,
            offload,
            max_unacked_per_consumer,
            max_unacked_per_subscription,
            delayed_delivery,
            limits: if t.namespace_name() == super::limits::SYSTEM_NAMESPACE {
                Limits::resolve(&tp, &np, c).of_system_topic()
            } else {
                Limits::resolve(&tp, &np, c)
            },
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
    use crate::policies::{PublishRate, Retention};

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

    #[test]
    fn a_cluster_document_older_than_the_one_installed_is_not_installed() {
        let dir = tempfile::tempdir().unwrap();
        let meta: Arc<dyn MetaStore> =
            Arc::new(pulsar_rs_ledger::FileMetaStore::open(dir.path()).unwrap());
        let store = PolicyStore::open(meta, Arc::new(BrokerConfig::default())).unwrap();
        let with_ttl = |ttl: i64| Policies {
            message_ttl_in_seconds: Some(ttl),
            ..Policies::default()
        };
        let ttl = |store: &PolicyStore| store.namespace("a/b").message_ttl_in_seconds;
        assert!(store.install_namespace("a/b", with_ttl(10), 3).unwrap());
        // Read before version 3 was written: stale.
        assert!(!store.install_namespace("a/b", with_ttl(5), 2).unwrap());
        assert_eq!(ttl(&store), Some(10));
        assert!(store.install_namespace("a/b", with_ttl(20), 4).unwrap());
        assert_eq!(ttl(&store), Some(20));
        // Gone from the cluster's store and created there again: versions start over.
        store.forget_cluster_version("a/b");
        assert!(store.install_namespace("a/b", with_ttl(30), 0).unwrap());
        assert_eq!(ttl(&store), Some(30));
    }
}
