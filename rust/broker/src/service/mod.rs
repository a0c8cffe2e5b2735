//! `BrokerService`: the topics of one broker, their creation and lookup, partitioned-topic
//! metadata and schemas, over one [`Storage`]. Its inactive-topic GC is in [`inactive`], its
//! backlog quota checks in [`backlog_quota`], and its schema checks for attaching producers and
//! consumers in `schema_admission`, partitioned-topic metadata in `partitioned`, deletion in
//! `deletion`.

pub mod backlog_quota;
mod deletion;
pub mod inactive;
mod inactive_close;
mod metric_labels;
pub mod offload;
mod ownership;
mod partitioned;
mod schema_admission;
mod topic_listing;
pub mod topic_quota;
pub mod transactions;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_clock::{Clock, SystemClock};
use pulsar_rs_ledger::{MetaStore, Storage};

use crate::compaction::{self, Compaction};
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::metadata_keys;
use crate::naming::TopicName;
use crate::nonpersistent::NonPersistentTopic;
use crate::policies::store::PolicyStore;
use crate::schema::SchemaRegistry;
use crate::topic::Topic;
use deletion::in_use;

/// The broker's topics over one data directory.
pub struct BrokerService {
    /// Settings; immutable.
    pub config: Arc<BrokerConfig>,
    /// The data directory.
    pub storage: Arc<Storage>,
    /// Metadata records (partitioned topics, schemas).
    meta: Arc<dyn MetaStore>,
    /// Loaded topics. Short lock: never held while a topic is opened (see `loading`).
    topics: Mutex<HashMap<TopicName, Arc<Topic>>>,
    /// Topics being opened, each with its own load lock (Pulsar's map of topic futures): a
    /// second caller for the same topic waits on that lock, callers for other topics do not.
    /// Short lock on the map; an entry is removed by the load that created it.
    loading: Mutex<HashMap<TopicName, Arc<Mutex<()>>>>,
    /// Names of topics that exist in storage (loaded or not).
    known: Mutex<HashSet<TopicName>>,
    /// In a cluster, whether this broker owns a topic's bundle: a topic is loaded only where
    /// it is owned (loading opens its ledger with recovery, which would fence the owner). Set
    /// once at start by the server; unset on a broker of its own.
    ownership: std::sync::OnceLock<OwnershipCheck>,
    /// Topics whose metadata or cursor state is corrupt, with why: they are not served (their
    /// clients get the reason) while every other topic is.
    quarantined: Mutex<HashMap<TopicName, String>>,
    /// Partitioned topics and their partition counts.
    partitioned: Mutex<HashMap<TopicName, u32>>,
    /// Source of generated producer names and producer handles.
    seq: AtomicU64,
    /// Namespace and topic policies.
    pub policies: PolicyStore,
    /// Schema versions of every topic.
    pub schemas: SchemaRegistry,
    /// Loaded non-persistent topics (memory only). Short lock.
    non_persistent: Mutex<HashMap<TopicName, Arc<NonPersistentTopic>>>,
    /// The transaction coordinators hosted here ([`transactions`]); its own short lock.
    coordinators: transactions::Coordinators,
    /// In a cluster, how END_TXN reaches the topics other brokers own. Set once at start by
    /// the server, after `ownership`; unset on a broker of its own.
    buffer_client:
        std::sync::OnceLock<Arc<dyn crate::transaction::buffer_client::TransactionBufferClient>>,
    /// Makes the offloaders topics' settings name; set once at start by the server (unset:
    /// no tiered storage).
    offloaders: std::sync::OnceLock<offload::OffloaderFactory>,
    /// Notified (all waiters) when the broker's clock jumps, so timers armed on the clock's
    /// time (transaction timeouts) look at it again.
    clock_jumps: Arc<tokio::sync::Notify>,
}

pub use ownership::OwnershipCheck;

/// How unknown topics of a namespace are auto-created ([`BrokerService::auto_creation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoCreation {
    /// Whether they are created on use.
    pub allow: bool,
    /// `Some(n)`: created partitioned with `n` partitions; `None`: non-partitioned.
    pub partitions: Option<u32>,
}

impl BrokerService {
    /// Opens the data directory.
    ///
    /// # Errors
    /// Invalid settings, storage failures.
    pub fn open(config: BrokerConfig, data_dir: &Path) -> Result<Arc<Self>, BrokerError> {
        Self::open_with_clock(config, data_dir, Arc::new(SystemClock))
    }

    /// [`BrokerService::open`] on a given clock: the broker's time, which every TTL, timeout
    /// and timestamp reads (tests advance a `ManualClock` instead of sleeping).
    ///
    /// # Errors
    /// Invalid settings, storage failures.
    pub fn open_with_clock(
        config: BrokerConfig,
        data_dir: &Path,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, BrokerError> {
        config.validate()?;
        let storage = Storage::open_with_clock(data_dir, config.storage_config(), clock)?;
        Self::over(config, storage)
    }

    /// Opens the data directory on a given file system: the storage seam, through which tests
    /// inject slow or failing I/O.
    ///
    /// # Errors
    /// Invalid settings, storage failures.
    pub fn open_on(
        config: BrokerConfig,
        data_dir: &Path,
        fs: Arc<dyn pulsar_rs_ledger::vfs::Vfs>,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, BrokerError> {
        config.validate()?;
        let storage = Storage::open_on(fs, data_dir, config.storage_config(), clock, false)?;
        Self::over(config, storage)
    }

    /// Opens the data directory with every managed ledger on `backing` (BookKeeper and
    /// ZooKeeper, see [`Storage::open_on_backing`]); the directory keeps the broker's other
    /// records.
    ///
    /// # Errors
    /// Invalid settings, storage failures.
    pub fn open_on_backing(
        config: BrokerConfig,
        data_dir: &Path,
        backing: Arc<pulsar_rs_ledger::seam::SeamBacking>,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, BrokerError> {
        config.validate()?;
        let storage = Storage::open_on_backing(
            data_dir,
            config.storage_config(),
            Arc::clone(&backing),
            clock,
            false,
        )?;
        // PIP-444: ledger deletions, from every topic of this broker, under one limit.
        backing.set_max_concurrent_deletions(config.managed_ledger_delete_max_concurrent_requests);
        let service = Self::over(config, storage)?;
        // New ledgers take the `persistence` policy of their topic (or its namespace) in force
        // when each is created, as Pulsar's managed-ledger config does after a policy update.
        let policies = Arc::downgrade(&service);
        backing.set_quorum_source(Arc::new(move |ml_name| {
            let service = policies.upgrade()?;
            let topic = TopicName::from_ledger_name(ml_name)?;
            service.policies.persistence(&topic).map(|p| p.quorums())
        }));
        Ok(service)
    }

    /// Opens the managed ledgers on `backing` read-only, for export and inspection: each ledger
    /// list and cursor is read where it stands and no ledger is fenced (a ledger still open is
    /// read up to its last add confirmed), so the brokers serving those topics go on unaware.
    /// `data_dir` holds the broker's other records (policies, for one), read as they are; an
    /// empty directory will do.
    ///
    /// # Errors
    /// Invalid settings, storage failures.
    pub fn open_read_only_on_backing(
        config: BrokerConfig,
        data_dir: &Path,
        backing: Arc<pulsar_rs_ledger::seam::SeamBacking>,
    ) -> Result<Arc<Self>, BrokerError> {
        config.validate()?;
        let storage = Storage::open_on_backing(
            data_dir,
            config.storage_config(),
            backing,
            Arc::new(SystemClock),
            true,
        )?;
        Self::over(config, storage)
    }

    /// Opens the data directory read-only, for export and inspection: no lock, no
    /// housekeeping, no truncation, no writes (see [`Storage::open_read_only`]). Safe on a copy
    /// of a live broker's directory.
    ///
    /// # Errors
    /// Invalid settings, storage failures.
    pub fn open_read_only(config: BrokerConfig, data_dir: &Path) -> Result<Arc<Self>, BrokerError> {
        config.validate()?;
        let storage = Storage::open_read_only(data_dir, config.storage_config())?;
        Self::over(config, storage)
    }

    fn over(config: BrokerConfig, storage: Arc<Storage>) -> Result<Arc<Self>, BrokerError> {
        let meta = storage.meta();
        let known = storage
            .ledger_names()?
            .iter()
            .filter_map(|n| TopicName::from_ledger_name(n))
            .collect();
        let mut partitioned = HashMap::new();
        for key in meta.list(metadata_keys::PARTITIONED_TOPICS)? {
            let raw = match meta.get(&key) {
                Ok(Some(raw)) => raw,
                Ok(None) => continue,
                Err(e @ pulsar_rs_ledger::LedgerError::CorruptMetadata { .. }) => {
                    tracing::error!(error = %e, "corrupt partitioned-topic record; ignored");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let name = metadata_keys::name_of(&key);
            let Some(n) = std::str::from_utf8(&raw).ok().and_then(|s| s.parse().ok()) else {
                tracing::error!(
                    key,
                    "corrupt partitioned-topic record (not a partition count); ignored"
                );
                continue;
            };
            if let Ok(t) = TopicName::parse(&name) {
                partitioned.insert(t, n);
            }
        }
        let config = Arc::new(config);
        let policies = PolicyStore::open(Arc::clone(&meta), Arc::clone(&config))?;
        let schemas = SchemaRegistry::new(Arc::clone(&meta), storage.clock());
        let service = Arc::new(BrokerService {
            config,
            storage,
            meta: Arc::clone(&meta),
            topics: Mutex::new(HashMap::new()),
            loading: Mutex::new(HashMap::new()),
            known: Mutex::new(known),
            ownership: std::sync::OnceLock::new(),
            offloaders: std::sync::OnceLock::new(),
            quarantined: Mutex::new(HashMap::new()),
            partitioned: Mutex::new(partitioned),
            seq: AtomicU64::new(0),
            policies,
            schemas,
            non_persistent: Mutex::new(HashMap::new()),
            coordinators: transactions::Coordinators::default(),
            buffer_client: std::sync::OnceLock::new(),
            clock_jumps: Arc::new(tokio::sync::Notify::new()),
        });
        let jumped = Arc::downgrade(&service);
        service.clock().on_jump(Box::new(move || {
            if let Some(service) = jumped.upgrade() {
                service.clock_jumped();
            }
        }));
        Ok(service)
    }

    /// The broker's clock jumped (a test's `ManualClock`): every dispatcher plans again at
    /// once, so delayed messages now due go out and a Failover delay now over ends, and every
    /// transaction timeout looks at the clock again.
    fn clock_jumped(&self) {
        self.clock_jumps.notify_waiters();
        for topic in self.loaded_topics() {
            for sub in topic.subscriptions() {
                sub.poke();
            }
        }
    }

    /// The broker's clock: every TTL, timeout and timestamp reads it.
    #[must_use]
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.storage.clock()
    }

    /// A fresh number for generated names and handles.
    pub fn next_seq(&self) -> u64 {
        // Relaxed: only uniqueness matters.
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// The metadata store (records beside the broker's own, e.g. the admin API's dynamic
    /// configuration).
    #[must_use]
    pub fn meta_store(&self) -> Arc<dyn MetaStore> {
        Arc::clone(&self.meta)
    }

    /// How unknown topics of `ns` are auto-created: the namespace's
    /// `autoTopicCreationOverride` when set, else the broker's `allowAutoTopicCreation`,
    /// `allowAutoTopicCreationType` and `defaultNumPartitions`.
    #[must_use]
    pub fn auto_creation(&self, ns: &str) -> AutoCreation {
        let over = crate::policies::AutoTopicCreationOverride::of(&self.policies.namespace(ns));
        match over {
            Some(o) => AutoCreation {
                allow: o.allow_auto_topic_creation,
                partitions: (o.topic_type.as_deref() == Some("partitioned"))
                    .then(|| o.default_num_partitions.and_then(|n| u32::try_from(n).ok()))
                    .flatten(),
            },
            None => AutoCreation {
                allow: self.config.allow_auto_topic_creation,
                partitions: (self.config.allow_auto_topic_creation_type == "partitioned")
                    .then_some(self.config.default_num_partitions),
            },
        }
    }

    /// Namespaces (`tenant/ns`) holding a stored topic or a partitioned topic.
    #[must_use]
    pub fn namespaces_with_topics(&self) -> std::collections::BTreeSet<String> {
        let mut out: std::collections::BTreeSet<String> = self
            .known
            .lock()
            .iter()
            .map(TopicName::namespace_name)
            .collect();
        out.extend(
            self.partitioned
                .lock()
                .keys()
                .map(TopicName::namespace_name),
        );
        out
    }

    /// Every non-partitioned topic and partition stored in a namespace.
    #[must_use]
    pub fn topics_of_namespace(&self, namespace: &str) -> Vec<TopicName> {
        let mut v: Vec<TopicName> = self
            .known
            .lock()
            .iter()
            .filter(|t| t.namespace_name() == namespace)
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Returns a loaded topic, loading it from storage or creating it as allowed.
    ///
    /// # Errors
    /// [`BrokerError::TopicNotFound`] when absent and not creatable; storage failures.
    pub fn topic(&self, name: &TopicName, create: bool) -> Result<Arc<Topic>, BrokerError> {
        if !name.is_persistent() {
            return Err(BrokerError::NotAllowed(format!(
                "{name} is non-persistent: it has no managed ledger"
            )));
        }
        if let Some(t) = self.topics.lock().get(name) {
            return Ok(Arc::clone(t));
        }
        // One load per topic at a time, without the broker-wide map lock: the per-topic lock
        // is held across the storage I/O, so callers for this topic wait and others do not.
        let slot = Arc::clone(self.loading.lock().entry(name.clone()).or_default());
        let _loading = slot.lock();
        let result = self.load_topic(name, create);
        // Short lock: the entry goes once the topic is in `topics` (or failed to load).
        self.loading.lock().remove(name);
        result
    }

    /// Opens a topic from storage (or creates it) and adds it to `topics`. Called with the
    /// topic's load lock held.
    fn load_topic(&self, name: &TopicName, create: bool) -> Result<Arc<Topic>, BrokerError> {
        if let Some(t) = self.topics.lock().get(name) {
            return Ok(Arc::clone(t));
        }
        self.check_served(name)?;
        let mut exists = self.known.lock().contains(name);
        // In a cluster another broker may have created it (its ledger is shared storage): a
        // topic this broker never met is looked up there before it is called missing.
        if !exists
            && self.ownership.get().is_some()
            && self.storage.ledger_exists(&name.ledger_name())?
        {
            self.known.lock().insert(name.clone());
            exists = true;
        }
        let is_partition_of_known =
            name.partition_index().is_some() && self.partitioned.lock().contains_key(&name.base());
        if !exists
            && !(create
                && (is_partition_of_known || self.auto_creation(&name.namespace_name()).allow))
        {
            return Err(BrokerError::TopicNotFound(name.to_string()));
        }
        if !exists && !is_partition_of_known {
            self.admit_new_topics(&name.namespace_name(), 1)?;
        }
        let loaded = self
            .storage
            .open_ledger(&name.ledger_name(), self.config.ledger_config())
            .and_then(|ledger| {
                // Read now so a corrupt schema record quarantines the topic.
                self.schemas.versions(&name.base().to_string())?;
                Ok(ledger)
            });
        let ledger = match loaded {
            Ok(l) => l,
            Err(pulsar_rs_ledger::LedgerError::CorruptMetadata { key, reason }) => {
                let why = format!("topic {name} is quarantined: its metadata record {key:?} is corrupt ({reason})");
                tracing::error!(topic = %name, "{why}");
                self.quarantined.lock().insert(name.clone(), why.clone());
                return Err(BrokerError::Ledger(
                    pulsar_rs_ledger::LedgerError::CorruptMetadata { key, reason: why },
                ));
            }
            Err(e) => return Err(e.into()),
        };
        let compaction = Compaction::open(
            compaction::topic_dir(self.storage.dir(), &name.ledger_name()),
            self.storage.backing().cloned(),
            &ledger,
            self.config.topic_compaction_retain_null_key,
        );
        let topic = Topic::new(name.clone(), ledger, Arc::clone(&self.config), compaction);
        let effective = self.policies.effective(name);
        self.apply_offload(&topic, &effective.offload);
        topic.apply_policy(effective);
        if self
            .config
            .offload_properties
            .get("triggerOffloadOnTopicLoad")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            topic.ledger.maybe_offload();
        }
        // Before any producer can write (Pulsar's `checkReplication` in the topic's load): a
        // replicated topic's messages from now on are kept for each remote cluster.
        for remote in self
            .policies
            .remote_clusters(name, &self.config.cluster_name)
        {
            topic.replication_cursor(&remote)?;
        }
        // Before any consumer can attach (the topic is not in `topics` yet).
        self.restore_txn_acks(&topic)?;
        self.known.lock().insert(name.clone());
        self.topics.lock().insert(name.clone(), Arc::clone(&topic));
        Ok(topic)
    }

    /// Topics found corrupt (metadata or cursor state) with the reason, sorted by name.
    #[must_use]
    pub fn quarantined_topics(&self) -> Vec<(TopicName, String)> {
        let mut v: Vec<(TopicName, String)> = self
            .quarantined
            .lock()
            .iter()
            .map(|(t, why)| (t.clone(), why.clone()))
            .collect();
        v.sort();
        v
    }

    /// A non-persistent topic, created on first use when `create` (memory only).
    ///
    /// # Errors
    /// [`BrokerError::TopicNotFound`] when absent and not creatable.
    pub fn non_persistent_topic(
        &self,
        name: &TopicName,
        create: bool,
    ) -> Result<Arc<NonPersistentTopic>, BrokerError> {
        let mut map = self.non_persistent.lock();
        if let Some(t) = map.get(name) {
            return Ok(Arc::clone(t));
        }
        let is_partition_of_known =
            name.partition_index().is_some() && self.partitioned.lock().contains_key(&name.base());
        if !(create && (is_partition_of_known || self.auto_creation(&name.namespace_name()).allow))
        {
            return Err(BrokerError::TopicNotFound(name.to_string()));
        }
        let t = NonPersistentTopic::new(name.clone(), self.clock());
        map.insert(name.clone(), Arc::clone(&t));
        Ok(t)
    }

    /// Removes a non-persistent topic (Pulsar's delete and unload of one: either way it is
    /// gone until next used, as nothing of it is stored), closing its consumers; returns its
    /// producers' handles, for the server to close them. Without `force`, a topic with
    /// producers or consumers connected is refused and left as it is.
    ///
    /// # Errors
    /// [`BrokerError::TopicNotFound`]; [`BrokerError::TopicBusy`].
    pub fn remove_non_persistent(
        &self,
        name: &TopicName,
        force: bool,
    ) -> Result<Vec<u64>, BrokerError> {
        let topic = {
            // Lock: held across the check and the removal, so no client is admitted between.
            let mut map = self.non_persistent.lock();
            let Some(t) = map.get(name) else {
                return Err(BrokerError::TopicNotFound(name.to_string()));
            };
            if !force {
                in_use(t.usage_count())?;
            }
            map.remove(name)
        };
        Ok(topic.map(|t| t.close()).unwrap_or_default())
    }

    /// Removes the non-persistent topics `which` picks (a bundle this broker gave up in a
    /// cluster), closing their consumers; returns their producers' handles, for the server to
    /// close them. Their clients look them up again.
    pub fn remove_non_persistent_where(&self, which: impl Fn(&TopicName) -> bool) -> Vec<u64> {
        let gone: Vec<Arc<NonPersistentTopic>> = {
            // Short lock: the removal only; topics are closed after it.
            let mut map = self.non_persistent.lock();
            let names: Vec<TopicName> = map.keys().filter(|n| which(n)).cloned().collect();
            names.iter().filter_map(|n| map.remove(n)).collect()
        };
        gone.into_iter().flat_map(|t| t.close()).collect()
    }

    /// The topics of a namespace a client discovers (GET_TOPICS_OF_NAMESPACE, REST
    /// `namespaces/{tenant}/{ns}/topics`), as Pulsar's `NamespaceService.getListOfTopics`:
    /// `persistent` → every persistent topic and the partitions of partitioned ones;
    /// `non_persistent` → the non-persistent topics loaded on the broker (they exist only while
    /// loaded). Sorted full names.
    #[must_use]
    pub fn discoverable_topics(
        &self,
        namespace: &str,
        persistent: bool,
        non_persistent: bool,
    ) -> Vec<String> {
        let mut out: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        if persistent {
            out.extend(
                self.topics_of_namespace(namespace)
                    .iter()
                    .map(ToString::to_string),
            );
            for (t, n) in self.partitioned_topics(namespace) {
                if t.is_persistent() {
                    out.extend(
                        self.partition_targets(&t, n)
                            .iter()
                            .map(ToString::to_string),
                    );
                }
            }
        }
        if non_persistent {
            out.extend(
                self.non_persistent_topics()
                    .iter()
                    .filter(|t| t.name.namespace_name() == namespace)
                    .map(|t| t.name.to_string()),
            );
        }
        out.into_iter().collect()
    }

    /// Loaded non-persistent topics.
    #[must_use]
    pub fn non_persistent_topics(&self) -> Vec<Arc<NonPersistentTopic>> {
        self.non_persistent.lock().values().cloned().collect()
    }

    /// A loaded topic, without loading.
    #[must_use]
    pub fn loaded_topic(&self, name: &TopicName) -> Option<Arc<Topic>> {
        self.topics.lock().get(name).cloned()
    }

    /// All loaded topics.
    #[must_use]
    pub fn loaded_topics(&self) -> Vec<Arc<Topic>> {
        self.topics.lock().values().cloned().collect()
    }

    /// Unloads every loaded topic whose managed ledger another owner fenced (on BookKeeper), as
    /// Pulsar's `PersistentTopic` closes itself on a `ManagedLedgerFencedException`: its
    /// consumers are disconnected and its producers' handles returned (the server closes them),
    /// so clients reconnect and the next use opens the topic afresh from the bookies.
    pub fn unload_fenced_topics(&self) -> Vec<u64> {
        self.unload_where(
            |t| t.ledger.is_fenced(),
            "another owner fenced the topic: unloading it",
        )
    }

    /// Unloads the loaded topics `which` selects (a bundle this broker no longer owns, a
    /// fenced ledger): each is closed (its consumers told CloseConsumer, its ledger closed) and
    /// forgotten until it is loaded again; returns the handles of their producers, for the
    /// server to tell them CloseProducer so their clients look the topic up again.
    pub fn unload_where(&self, which: impl Fn(&Topic) -> bool, why: &str) -> Vec<u64> {
        let chosen: Vec<Arc<Topic>> = {
            let mut topics = self.topics.lock();
            let names: Vec<TopicName> = topics
                .iter()
                .filter(|(_, t)| which(t))
                .map(|(n, _)| n.clone())
                .collect();
            names.iter().filter_map(|n| topics.remove(n)).collect()
        };
        if !chosen.is_empty() {
            // One line per call: a namespace's unload may close 100 000 topics.
            tracing::info!(topics = chosen.len(), "{why}");
        }
        let mut handles = Vec::new();
        for t in chosen {
            tracing::debug!(topic = %t.name, "{why}");
            handles.extend(t.take_producers());
            t.close();
        }
        handles
    }

    /// Unloads the loaded topic `name` if `which` still holds for it (checked under the topics
    /// lock); the handles of its producers, or none when it was not loaded or `which` failed.
    pub fn unload_if(&self, name: &TopicName, which: impl Fn(&Topic) -> bool) -> Option<Vec<u64>> {
        let topic = {
            // Short lock: the check and the removal together, the close after it.
            let mut topics = self.topics.lock();
            if !topics.get(name).is_some_and(|t| which(t)) {
                return None;
            }
            topics.remove(name)?
        };
        let handles = topic.take_producers();
        topic.close();
        Some(handles)
    }

    /// Pulsar's `BrokerService.checkMessageExpiry`: message TTL on every loaded topic.
    pub fn check_message_expiry(&self, now_ms: u64) {
        for t in self.loaded_topics() {
            t.check_message_expiry(now_ms);
        }
    }

    /// Re-applies policies to the loaded topics they concern (after an admin change).
    pub fn refresh_policies(&self) {
        for t in self.loaded_topics() {
            let effective = self.policies.effective(&t.name);
            self.apply_offload(&t, &effective.offload);
            t.apply_policy(effective);
        }
        // As Pulsar's `applyUpdatedTopicPolicies`: a policy change checks message expiry.
        self.check_message_expiry(self.clock().now_ms());
    }

    /// Deduplication upkeep of every loaded topic: time-based snapshots and forgetting inactive
    /// producers (run every `brokerDeduplicationSnapshotFrequencyInSeconds`).
    pub fn deduplication_tick(&self, now_ms: u64) {
        for t in self.loaded_topics() {
            t.dedup.tick(now_ms, t.ledger.last_confirmed());
        }
    }

    /// Starts a compaction of a loaded or stored topic on a blocking thread; `Ok(false)` if one
    /// is already running (Pulsar answers 409 "Compaction already running").
    ///
    /// # Errors
    /// [`BrokerError::TopicNotFound`]; storage failures loading the topic.
    pub fn trigger_compaction(&self, name: &TopicName) -> Result<bool, BrokerError> {
        let topic = self.topic(name, false)?;
        if !topic.compaction.try_start() {
            return Ok(false);
        }
        let ledger = Arc::clone(&topic.ledger);
        let compaction = Arc::clone(&topic.compaction);
        tokio::task::spawn_blocking(move || compaction.run_started(&ledger));
        Ok(true)
    }

    /// The compaction monitor (every `brokerServiceCompactionMonitorIntervalInSeconds`): starts a
    /// compaction of each loaded topic whose effective `compactionThreshold` is positive and
    /// exceeded by the `__compaction` cursor's backlog (the topic's size before the first run),
    /// as Pulsar's `PersistentTopic.checkCompaction`. Returns the topics started.
    pub fn compaction_tick(&self) -> Vec<TopicName> {
        let mut started = Vec::new();
        for t in self.loaded_topics() {
            let threshold = t.effective_policy().compaction_threshold;
            if threshold <= 0 {
                continue;
            }
            let backlog = Compaction::backlog_estimate(&t.ledger);
            if backlog > threshold.unsigned_abs() && t.compaction.try_start() {
                // Called from a blocking thread: run here, one topic after the other.
                t.compaction.run_started(&t.ledger);
                started.push(t.name.clone());
            }
        }
        started
    }

    /// Closes every topic and the storage.
    ///
    /// # Errors
    /// Storage failures while persisting state.
    pub fn close(&self) -> Result<(), BrokerError> {
        let topics: Vec<Arc<Topic>> = self.topics.lock().drain().map(|(_, t)| t).collect();
        for t in topics {
            t.close();
        }
        self.storage.close()?;
        Ok(())
    }
}
