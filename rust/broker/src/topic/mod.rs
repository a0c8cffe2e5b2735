//! A topic: its managed ledger, producers and subscriptions. Producer admission is in
//! [`producers`], publishing in [`publish`], message deduplication in [`dedup`] and
//! termination in [`terminate`].

pub mod dedup;
pub mod producers;
pub mod publish;
pub mod repl_source;
pub mod replicated_subscriptions;
pub mod replication;
pub mod table_cursor;
pub mod terminate;
pub mod transaction;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use pulsar_rs_ledger::{ManagedLedger, Position};
use tokio::sync::oneshot;

use self::dedup::{Deduplication, DEDUP_CURSOR};
use crate::compaction::{Compaction, COMPACTION_CURSOR};
use crate::config::BrokerConfig;
use crate::dispatch::entry::entry_info;
use crate::error::BrokerError;
use crate::naming::TopicName;
use crate::policies::backlog_quota::RetentionPolicy;
use crate::policies::Effective;
use crate::rate::Meter;
use crate::rate::RateLimiter;
use crate::subscription::{expiry, Subscription};

pub use pulsar_rs_ledger::AddCompletion;

/// Producer access modes, as numbered on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessMode {
    /// Any number of producers.
    Shared,
    /// Only this producer; fails if others exist.
    Exclusive,
    /// Wait until exclusive access is possible (queued behind the current producers).
    WaitForExclusive,
    /// Take exclusive access, fencing the others.
    ExclusiveWithFencing,
}

impl AccessMode {
    /// From the wire value (numbered by proto's `ProducerAccessMode`; absent or unknown =
    /// Shared).
    #[must_use]
    pub fn from_wire(v: Option<i32>) -> Self {
        use pulsar_rs_proto::pb::ProducerAccessMode as Wire;
        match v.and_then(|v| Wire::try_from(v).ok()) {
            Some(Wire::Exclusive) => AccessMode::Exclusive,
            Some(Wire::WaitForExclusive) => AccessMode::WaitForExclusive,
            Some(Wire::ExclusiveWithFencing) => AccessMode::ExclusiveWithFencing,
            Some(Wire::Shared) | None => AccessMode::Shared,
        }
    }
}

/// An attached producer, as the topic sees it.
#[derive(Clone, Debug)]
pub struct ProducerInfo {
    /// Broker-wide unique handle (not the client's producer id).
    pub handle: u64,
    /// Producer name.
    pub name: String,
    /// Access mode.
    pub access_mode: AccessMode,
    /// Client address.
    pub address: String,
    /// The client's id for it on its connection (PRODUCER's `producer_id`).
    pub producer_id: u64,
    /// When it was created.
    pub connected_since: std::time::SystemTime,
    /// The client's version string (CONNECT's `client_version`).
    pub client_version: String,
    /// The producer's metadata (PRODUCER's `metadata`).
    pub metadata: Vec<(String, String)>,
    /// Its publish counters: recorded by its connection on each SEND, read by the admin stats.
    pub meters: Arc<ProducerMeters>,
}

/// One producer's publish counters (each [`Meter`] has its own Relaxed atomics).
#[derive(Debug, Default)]
pub struct ProducerMeters {
    /// Messages and bytes published.
    pub msg_in: Meter,
    /// Chunks of chunked messages published.
    pub chunked: Meter,
}

/// A WaitForExclusive producer queued for its turn.
struct Waiter {
    /// The producer to attach when promoted.
    info: ProducerInfo,
    /// Told the topic epoch on promotion, or ProducerFenced when an ExclusiveWithFencing
    /// producer takes the topic first.
    ready: oneshot::Sender<Result<u64, BrokerError>>,
}

/// One (partition of a) topic.
pub struct Topic {
    /// Fully qualified name; immutable.
    pub name: TopicName,
    /// Partition index, -1 when not a partition; immutable.
    pub partition: i32,
    /// The topic's log; immutable handle.
    pub ledger: Arc<ManagedLedger>,
    /// Broker settings; immutable.
    config: Arc<BrokerConfig>,
    /// Subscriptions by name. Short lock; never held across `.await`.
    subscriptions: Mutex<HashMap<String, Arc<Subscription>>>,
    /// Connected producers by name. Short lock.
    producers: Mutex<HashMap<String, ProducerInfo>>,
    /// Messages and bytes published.
    pub msg_in: Meter,
    /// Publish time (ms) of the last message written (Pulsar's `lastPublishTimeStamp`, PIP-431);
    /// 0 until a message is written or [`Topic::last_publish_time_ms`] reads it back. Raised by
    /// publishers (`fetch_max`) and by that read-back; read by the admin stats.
    pub(crate) last_publish_ms: std::sync::atomic::AtomicU64,
    /// Producers fenced by an ExclusiveWithFencing producer, drained by the server.
    fenced: Mutex<Vec<u64>>,
    /// WaitForExclusive producers in arrival order. Locked only while `producers` is held
    /// (order: producers, then waiting), for the access-mode decision and promotion.
    waiting: Mutex<std::collections::VecDeque<Waiter>>,
    /// Topic epoch (Pulsar's `topicEpoch`), raised by each exclusive admission; guarded by the
    /// `producers` lock (only changed under it).
    epoch: std::sync::atomic::AtomicU64,
    /// Rate limiters and quotas from the effective policy; replaced when policies change.
    /// Read on every SEND and dispatch pass: a short read lock, never held across `.await`.
    limits: RwLock<Limits>,
    /// The producer-blocking backlog quota policy currently exceeded, if any.
    quota_blocked: Mutex<Option<RetentionPolicy>>,
    /// Message deduplication (its own lock inside).
    pub dedup: Arc<Deduplication>,
    /// Pulsar's `lastActive`: set at load, when a producer leaves and by each inactive-topic
    /// check that finds the topic active (`crate::service::inactive`); ms on the broker's
    /// clock. Relaxed: a lone timestamp, nothing is published with it.
    pub(crate) last_active_ms: std::sync::atomic::AtomicU64,
    /// Compaction: the compacted view and run state (its own locks inside).
    pub compaction: Arc<Compaction>,
    /// When this process loaded the topic (ms since the epoch; its cursors were opened then).
    /// Immutable.
    pub loaded_ms: u64,
    /// SENDs that found the topic's publish rate limit exhausted (Pulsar's
    /// `publishRateLimitedTimes`). Incremented by the connection; Relaxed: a statistic.
    pub publish_rate_limited: std::sync::atomic::AtomicU64,
    /// Set by the connection when a chunk of a chunked message is published (Pulsar's
    /// `msgChunkPublished`); Relaxed: a statistic.
    pub chunk_published: std::sync::atomic::AtomicBool,
    /// SENDs refused for asking a longer delivery delay than the topic allows (PIP-437's
    /// `pulsar.broker.topic.messages.delayed.rejected`); bumped by the connections' SEND path,
    /// read by `/metrics`. Relaxed: a counter for statistics.
    pub delayed_rejected: std::sync::atomic::AtomicU64,
    /// The transaction buffer, when transactions are enabled; immutable handle (its own lock
    /// inside), rebuilt from the ledger before any subscription dispatches.
    pub txn_buffer: Option<Arc<crate::transaction::buffer::TransactionBuffer>>,
    /// Set once the topic may hold server markers of replicated subscriptions (a replication
    /// cursor or a replicated subscription at load, a marker written or received); never
    /// cleared. Shared with the subscriptions, whose dispatchers look for markers only then.
    /// Relaxed: a hint (see `Subscription::may_hold_markers`).
    pub(crate) may_hold_markers: Arc<std::sync::atomic::AtomicBool>,
    /// Replicated subscriptions' snapshots in progress ([`replicated_subscriptions`]); a short
    /// lock, never across `.await` (the markers it returns are written after).
    snapshots: Mutex<crate::replicated_subscriptions::controller::Controller>,
    /// Message-TTL state and counters of each replication cursor, by remote cluster (Pulsar's
    /// replicator `expiryMonitor`): created by the first check. Short lock (a lookup).
    replication_expiry:
        Mutex<HashMap<String, Arc<crate::subscription::expiry_monitor::ExpiryMonitor>>>,
}

/// What the effective policy turns into at runtime.
#[derive(Default)]
struct Limits {
    effective: Effective,
    publish: Option<Arc<RateLimiter>>,
    dispatch: Option<Arc<RateLimiter>>,
}

impl Topic {
    pub(crate) fn new(
        name: TopicName,
        ledger: Arc<ManagedLedger>,
        config: Arc<BrokerConfig>,
        compaction: Arc<Compaction>,
    ) -> Arc<Self> {
        let partition = name
            .partition_index()
            .map_or(-1, |i| i32::try_from(i).unwrap_or(-1));
        let dedup_config = Arc::clone(&config);
        let clock = Arc::clone(ledger.clock());
        let now = clock.now_ms();
        let topic = Arc::new(Topic {
            name,
            partition,
            ledger,
            config,
            subscriptions: Mutex::new(HashMap::new()),
            producers: Mutex::new(HashMap::new()),
            msg_in: Meter::default(),
            last_publish_ms: std::sync::atomic::AtomicU64::new(0),
            fenced: Mutex::new(Vec::new()),
            waiting: Mutex::new(std::collections::VecDeque::new()),
            epoch: std::sync::atomic::AtomicU64::new(0),
            limits: RwLock::new(Limits::default()),
            quota_blocked: Mutex::new(None),
            dedup: Deduplication::new(Arc::clone(&dedup_config), clock),
            last_active_ms: std::sync::atomic::AtomicU64::new(now),
            compaction,
            loaded_ms: now,
            publish_rate_limited: std::sync::atomic::AtomicU64::new(0),
            chunk_published: std::sync::atomic::AtomicBool::new(false),
            delayed_rejected: std::sync::atomic::AtomicU64::new(0),
            txn_buffer: dedup_config
                .transaction_coordinator_enabled
                .then(|| Arc::new(crate::transaction::buffer::TransactionBuffer::new())),
            may_hold_markers: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            snapshots: Mutex::new(
                crate::replicated_subscriptions::controller::Controller::new(
                    &dedup_config.cluster_name,
                    dedup_config
                        .replicated_subscriptions_snapshot_timeout_seconds
                        .saturating_mul(1000),
                ),
            ),
            replication_expiry: Mutex::new(HashMap::new()),
        });
        if topic.ledger.cursors().iter().any(|c| {
            topic.is_replication_cursor(c.name())
                || c.properties()
                    .contains_key(crate::replicated_subscriptions::REPLICATED_PROPERTY)
        }) {
            topic.note_marker();
        }
        // Before any dispatcher starts: uncommitted and aborted messages stay hidden.
        topic.recover_transaction_buffer();
        if let Some(tb) = &topic.txn_buffer {
            topic.compaction.set_transaction_buffer(Arc::clone(tb));
        }
        // Durable subscriptions survive restarts: the ledger recovered their cursors.
        for cursor in topic.ledger.cursors().into_iter().filter(|c| {
            c.is_durable()
                && c.name() != DEDUP_CURSOR
                && c.name() != COMPACTION_CURSOR
                && c.name() != table_cursor::TABLE_CURSOR
                && !topic.is_replication_cursor(c.name())
        }) {
            let name = cursor.name().to_owned();
            let sub = topic.start_subscription(&name, cursor, true);
            topic.subscriptions.lock().insert(sub.name.clone(), sub);
        }
        topic
    }

    /// Starts a subscription's dispatcher with the topic's current dispatch limits.
    fn start_subscription(
        &self,
        name: &str,
        cursor: Arc<pulsar_rs_ledger::Cursor>,
        durable: bool,
    ) -> Arc<Subscription> {
        let sub = Subscription::start(
            name,
            &self.name.to_string(),
            self.partition,
            cursor,
            durable,
            Arc::clone(&self.config),
        );
        sub.set_compaction(Arc::clone(&self.compaction));
        sub.share_marker_flag(Arc::clone(&self.may_hold_markers));
        if let Some(tb) = &self.txn_buffer {
            sub.set_transaction_buffer(Arc::clone(tb));
        }
        let limits = self.limits.read();
        let e = &limits.effective;
        sub.set_policy(
            e.max_unacked_per_consumer,
            e.max_unacked_per_subscription,
            e.delayed_delivery,
        );
        let (m, b) = limits.effective.subscription_dispatch;
        sub.set_dispatch_limiters(
            limits.dispatch.clone(),
            RateLimiter::new(m, b).map(Arc::new),
        );
        sub
    }

    /// Applies an effective policy: rate limiters, retention, subscription dispatch limits.
    pub fn apply_policy(&self, effective: Effective) {
        if let Err(e) = self
            .dedup
            .set_enabled(effective.deduplication, &self.ledger)
        {
            tracing::warn!(topic = %self.name, error = %e, "switching deduplication");
        }
        let mut limits = self.limits.write();
        if limits.effective == effective {
            return;
        }
        let (pm, pb) = effective.publish;
        let (dm, db) = effective.dispatch;
        let publish = RateLimiter::new(pm, pb).map(Arc::new);
        let dispatch = RateLimiter::new(dm, db).map(Arc::new);
        let (sm, sb) = effective.subscription_dispatch;
        for sub in self.subscriptions() {
            sub.set_dispatch_limiters(dispatch.clone(), RateLimiter::new(sm, sb).map(Arc::new));
            sub.set_policy(
                effective.max_unacked_per_consumer,
                effective.max_unacked_per_subscription,
                effective.delayed_delivery,
            );
        }
        self.ledger
            .set_retention(effective.retention.0, effective.retention.1);
        *limits = Limits {
            effective,
            publish,
            dispatch,
        };
    }

    /// The count and size limits currently applied (a copy; read on every SEND).
    #[must_use]
    pub fn limits(&self) -> crate::policies::limits::Limits {
        self.limits.read().effective.limits
    }

    /// The delivery-delay limits (PIP-437) a SEND is held to: `None` while delayed delivery is
    /// off on the topic (its messages' `deliver_at_time` means nothing then). Read on every SEND.
    #[must_use]
    pub fn delivery_delay(&self) -> Option<crate::policies::delivery_delay::DeliveryDelay> {
        // Read lock for two copies; only `apply_policy` writes, and nothing is awaited here.
        let limits = self.limits.read();
        limits
            .effective
            .delayed_delivery
            .then_some(limits.effective.delivery_delay)
    }

    /// The effective policy currently applied.
    #[must_use]
    pub fn effective_policy(&self) -> Effective {
        self.limits.read().effective.clone()
    }

    /// Pulsar's `PersistentTopic.checkMessageExpiry`: with a TTL, expires messages on every
    /// subscription except the compaction one (see [`expiry`]).
    pub fn check_message_expiry(&self, now_ms: u64) {
        let ttl = self.effective_policy().message_ttl_seconds;
        let Ok(ttl) = u64::try_from(ttl) else { return };
        if ttl == 0 {
            return;
        }
        for sub in self.subscriptions() {
            if sub.name == COMPACTION_CURSOR {
                continue;
            }
            if let Err(e) = expiry::expire_messages(&sub, ttl, now_ms) {
                tracing::warn!(topic = %self.name, subscription = %sub.name, error = %e, "message expiry check failed");
            }
        }
        // And what waits for another cluster, as Pulsar's `checkMessageExpiry` does for its
        // replicators.
        for (remote, _) in self.replication_cursors() {
            if let Err(e) = self.expire_replication(&remote, ttl, now_ms) {
                tracing::warn!(topic = %self.name, remote = %remote, error = %e, "replication expiry check failed");
            }
        }
    }

    /// The publish rate limiter, if the topic has a publish rate.
    #[must_use]
    pub fn publish_limiter(&self) -> Option<Arc<RateLimiter>> {
        self.limits.read().publish.clone()
    }

    /// The producer-blocking backlog quota currently exceeded, if any.
    #[must_use]
    pub fn quota_blocked(&self) -> Option<RetentionPolicy> {
        *self.quota_blocked.lock()
    }

    pub(crate) fn set_quota_blocked(&self, v: Option<RetentionPolicy>) {
        *self.quota_blocked.lock() = v;
    }

    /// The cursors whose backlog the topic keeps, by name: each durable subscription's and
    /// each replicator's (`pulsar.repl.{remote}`: what that cluster has not received yet). As
    /// Pulsar's `ManagedLedger.getSlowestConsumer` over its durable cursors, they are what
    /// backlog quotas measure and evict, and what the topic's backlog size and age report.
    #[must_use]
    pub fn backlog_cursors(&self) -> Vec<(String, Arc<pulsar_rs_ledger::Cursor>)> {
        let subscriptions = self.subscriptions().into_iter().filter(|s| s.durable);
        let mut cursors: Vec<_> = subscriptions
            .map(|s| (s.name.clone(), Arc::clone(&s.cursor)))
            .collect();
        let prefix = &self.config.replicator_prefix;
        cursors.extend(
            self.replication_cursors()
                .into_iter()
                .map(|(remote, c)| (replication::cursor_name(prefix, &remote), c)),
        );
        cursors
    }

    /// Estimated backlog size of the slowest of [`Topic::backlog_cursors`] (DESIGN 2.4), in
    /// bytes.
    #[must_use]
    pub fn backlog_size(&self) -> u64 {
        self.backlog_cursors()
            .iter()
            .map(|(_, c)| c.estimated_backlog_size())
            .max()
            .unwrap_or(0)
    }

    /// Publish time of the first unacknowledged entry of the slowest of
    /// [`Topic::backlog_cursors`] (ms).
    ///
    /// # Errors
    /// Storage failures reading it.
    pub fn oldest_unacked_publish_time(&self) -> Result<Option<u64>, BrokerError> {
        let Some(slowest) = self
            .backlog_cursors()
            .iter()
            .map(|(_, c)| c.mark_delete_position())
            .min()
        else {
            return Ok(None);
        };
        crate::subscription::backlog_age::first_publish_time_after(&self.ledger, slowest)
    }

    /// The subscription `name`, if it exists.
    #[must_use]
    pub fn subscription(&self, name: &str) -> Option<Arc<Subscription>> {
        self.subscriptions.lock().get(name).cloned()
    }

    /// Whether a consumer from `address` may join this topic (Pulsar's `maxConsumersPerTopic`,
    /// `maxSameAddressConsumersPerTopic`) and, given, subscription `sub`
    /// (`maxConsumersPerSubscription`). Pulsar checks the topic's limits before it gets or
    /// creates the subscription, so callers ask once without `sub`, then again with it.
    ///
    /// # Errors
    /// [`BrokerError::ConsumerBusy`] with Pulsar's message.
    pub fn admit_consumer(
        &self,
        sub: Option<&Subscription>,
        address: &str,
    ) -> Result<(), BrokerError> {
        let limits = self.limits.read().effective.limits;
        let per_subscription = sub.is_some() && limits.max_consumers_per_subscription > 0;
        if limits.max_consumers == 0 && limits.max_same_address_consumers == 0 && !per_subscription
        {
            return Ok(()); // no limit: nothing to count
        }
        let host = producers::host_of(address);
        let (mut on_topic, mut same_address) = (0, 0);
        for s in self.subscriptions() {
            for c in s.consumers() {
                on_topic += 1;
                same_address += usize::from(producers::host_of(&c.address) == host);
            }
        }
        limits.admit_consumer(
            on_topic,
            same_address,
            sub.map_or(0, |s| s.consumers().len()),
        )
    }

    /// Producers and consumers connected to the topic (Pulsar's `currentUsageCount`).
    #[must_use]
    pub fn usage_count(&self) -> usize {
        // Locks: the producers' table, then each subscription's consumers, one at a time.
        let producers = self.producers.lock().len();
        producers
            + self
                .subscriptions()
                .iter()
                .map(|s| s.consumers().len())
                .sum::<usize>()
    }

    /// All subscriptions.
    #[must_use]
    pub fn subscriptions(&self) -> Vec<Arc<Subscription>> {
        self.subscriptions.lock().values().cloned().collect()
    }

    /// Gets or creates a durable subscription; a new one starts at the end, or at the first entry
    /// if `earliest`.
    ///
    /// # Errors
    /// [`BrokerError::SubscriptionNotFound`] if absent and auto-creation is off; storage errors.
    pub fn durable_subscription(
        &self,
        name: &str,
        earliest: bool,
        create: bool,
    ) -> Result<Arc<Subscription>, BrokerError> {
        if let Some(s) = self.subscription(name) {
            if !s.durable {
                // As Pulsar's PersistentTopic.getDurableSubscription.
                return Err(BrokerError::NotAllowed(
                    "NonDurable subscription with the same name already exists.".into(),
                ));
            }
            return Ok(s);
        }
        if !create {
            return Err(BrokerError::SubscriptionNotFound {
                subscription: name.to_owned(),
                topic: self.name.to_string(),
            });
        }
        let limits = self.limits.read().effective.limits;
        limits.admit_subscription(&self.name.to_string(), self.subscriptions.lock().len())?;
        let cursor = self.ledger.open_cursor_at(name, earliest)?;
        let sub = self.start_subscription(name, cursor, true);
        let mut subs = self.subscriptions.lock();
        Ok(Arc::clone(subs.entry(name.to_owned()).or_insert(sub)))
    }

    /// Gets or creates a non-durable subscription (reader) whose reading starts after `start`.
    ///
    /// As Pulsar's `PersistentTopic.getNonDurableSubscription`: an existing reader subscription
    /// of that name is reused as it is (`start` is ignored; this is how a reader that was
    /// disconnected by its own seek finds its reset cursor again), and a durable subscription of
    /// that name is never replaced.
    ///
    /// # Errors
    /// [`BrokerError::NotAllowed`] if a durable subscription has this name, or if a new one would
    /// pass the topic's `maxSubscriptionsPerTopic` (readers count, as in Pulsar).
    pub fn reader_subscription(
        &self,
        name: &str,
        start: Position,
    ) -> Result<Arc<Subscription>, BrokerError> {
        if let Some(s) = self.subscription(name) {
            if s.durable {
                return Err(BrokerError::NotAllowed(
                    "Durable subscription with the same name already exists.".into(),
                ));
            }
            return Ok(s);
        }
        // Pulsar's getNonDurableSubscription: a reader is a subscription too, within the limit.
        let limits = self.limits.read().effective.limits;
        limits.admit_subscription(&self.name.to_string(), self.subscriptions.lock().len())?;
        let cursor = self.ledger.open_non_durable_cursor(name, start);
        if cursor.is_durable() {
            // A durable cursor open without a subscription (another user of the ledger).
            return Err(BrokerError::NotAllowed(
                "Durable subscription with the same name already exists.".into(),
            ));
        }
        let sub = self.start_subscription(name, cursor, false);
        let mut subs = self.subscriptions.lock();
        let kept = Arc::clone(subs.entry(name.to_owned()).or_insert(Arc::clone(&sub)));
        drop(subs);
        if !Arc::ptr_eq(&kept, &sub) {
            sub.close(); // lost a race with another reader of that name; they share `kept`
        }
        if kept.durable {
            return Err(BrokerError::NotAllowed(
                "Durable subscription with the same name already exists.".into(),
            ));
        }
        Ok(kept)
    }

    /// Removes a subscription (unsubscribe, or a reader's last consumer leaving), with its
    /// pending-ack log.
    ///
    /// # Errors
    /// Storage failures deleting the cursor or the log.
    pub fn remove_subscription(&self, name: &str) -> Result<(), BrokerError> {
        let sub = self.subscriptions.lock().remove(name);
        if let Some(sub) = sub {
            sub.close();
            if sub.durable {
                self.ledger.delete_cursor(name)?;
                // Its pending-ack log goes with it (opened at load whenever one exists).
                if let Some(store) = sub.pending_ack_store.get() {
                    store.delete()?;
                }
            } else {
                sub.cursor.close()?;
            }
        }
        Ok(())
    }

    /// The last message id: (position, batch index or -1). (-1,-1) when the topic is empty.
    ///
    /// # Errors
    /// Storage failures reading the last entry.
    pub fn last_message_id(&self) -> Result<(Position, i32), BrokerError> {
        // With transactions: the last visible message (apache/pulsar#21466, #22572).
        let Some(lac) = self.last_visible_position()? else {
            return Ok((Position::new(-1, -1), -1));
        };
        let entries = self.ledger.read_entries(lac, 1, u64::MAX, lac)?;
        Ok((lac, entries.first().map_or(-1, last_batch_index)))
    }

    /// Pulsar's `lastPublishTimeStamp` (PIP-431): the publish time (ms) of the last message
    /// written, 0 if none. After a load (restart, unload) it is read back from the last entry
    /// the first time it is asked, as Pulsar recovers it; 0 while that entry cannot be read.
    /// May read an entry (blocking I/O).
    pub fn last_publish_time_ms(&self) -> u64 {
        // Relaxed throughout: a statistic; fetch_max never lowers what a publisher raised.
        use std::sync::atomic::Ordering::Relaxed;
        let known = self.last_publish_ms.load(Relaxed);
        if known > 0 {
            return known;
        }
        let lac = self.ledger.last_confirmed();
        if lac.entry_id < 0 {
            return 0;
        }
        let read = self
            .ledger
            .read_entries(lac, 1, u64::MAX, lac)
            .ok()
            .and_then(|es| es.into_iter().next())
            .and_then(|e| pulsar_rs_proto::parse_stored_entry(&e.data).ok())
            .map_or(0, |(md, _)| md.publish_time);
        self.last_publish_ms.fetch_max(read, Relaxed);
        self.last_publish_ms.load(Relaxed)
    }

    /// The last message id a `readCompacted` consumer is told (Pulsar 4.x
    /// `ServerCnx.getLargestBatchIndexWhenPossible` with `readCompacted`): when the topic is
    /// compacted up to its last entry (or has none left), the last message of the compacted
    /// view — (-1,-1) if the view is empty, e.g. its last key was deleted — otherwise the
    /// topic's last message. Blocking I/O.
    ///
    /// # Errors
    /// Storage failures reading the last entry.
    pub fn last_message_id_compacted(&self) -> Result<(Position, i32), BrokerError> {
        let lac = self.ledger.last_confirmed();
        match self.compaction.view() {
            Some(view) if lac.entry_id < 0 || lac <= view.horizon => {
                Ok(view.last_entry()?.map_or((Position::new(-1, -1), -1), |e| {
                    (e.position, last_batch_index(&e))
                }))
            }
            _ => self.last_message_id(),
        }
    }

    /// Stops every dispatcher and closes the ledger.
    pub fn close(&self) {
        // Transactions ended since the last snapshot: one more, so the next load replays little.
        if self.txn_buffer.as_ref().is_some_and(|tb| {
            // Relaxed: see `TransactionBuffer::snapshot_due`.
            tb.stats
                .ended_since_snapshot
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
        }) {
            if let Err(e) = self.take_txn_buffer_snapshot() {
                tracing::warn!(topic = %self.name, error = %e, "a transaction buffer snapshot");
            }
        }
        for s in self.subscriptions.lock().drain().map(|(_, s)| s) {
            s.disconnect_all();
            s.close();
            if let Some(store) = s.pending_ack_store.get() {
                store.close();
            }
        }
        if let Err(e) = self.ledger.close() {
            tracing::warn!(topic = %self.name, error = %e, "closing topic ledger");
        }
    }
}

/// The batch index of an entry's last message: -1 unless it is a batch.
fn last_batch_index(e: &pulsar_rs_ledger::Entry) -> i32 {
    match pulsar_rs_proto::parse_stored_entry(&e.data) {
        Ok((md, _)) if md.num_messages_in_batch.is_some() => {
            i32::try_from(entry_info(&e.data).messages).unwrap_or(1) - 1
        }
        _ => -1,
    }
}
