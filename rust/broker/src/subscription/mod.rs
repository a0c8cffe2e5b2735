//! A subscription: a cursor plus the consumers attached to it, and its dispatcher.
//!
//! This module holds the subscription's consumers, cursor and redelivery counts, and everything
//! the connection calls (consumers joining and leaving, FLOW, acks, redelivery, seek). Routing
//! belongs to its dispatcher ([`crate::dispatch::Dispatcher`]: a single active consumer for
//! Exclusive/Failover, round-robin for Shared, slot ownership and draining hashes for
//! Key_Shared), which owns its routing state and replay set. The subscription's dispatch pass
//! (`pass.rs`) and the task that runs it (`task.rs`) live here too. A subscription never waits on
//! another.

pub mod backlog_age;
pub mod compacted_read;
pub mod diagnosis;
pub mod expiry;
pub mod expiry_monitor;
mod pass;
mod replicated;
mod task;
#[cfg(test)]
mod tests;
mod txn;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pulsar_rs_ledger::{Clock, Cursor, Position};
use tokio::sync::Notify;

use self::expiry_monitor::ExpiryMonitor;
use crate::config::BrokerConfig;
use crate::consumer::{Consumer, ConsumerEvent, SubType};
use crate::dispatch::consumers::ConsumerList;
use crate::dispatch::delayed::DelayedTracker;
use crate::dispatch::key_shared::KeySharedMeta;
use crate::dispatch::single_active::FailoverSettings;
use crate::dispatch::Dispatcher;
use crate::error::BrokerError;
use crate::rate::{Meter, RateLimiter};

/// Consumers and their dispatcher; guarded by [`Subscription::state`].
struct State {
    /// Type fixed by the first consumer; may change when none is attached.
    sub_type: Option<SubType>,
    /// Attached consumers, sorted by (priority level, name, handle).
    consumers: ConsumerList,
    /// Routing state and replay set of the subscription's type; set by the first consumer.
    dispatcher: Option<Dispatcher>,
}

/// (topic-level, subscription-level) dispatch rate limiters.
type DispatchLimiters = (Option<Arc<RateLimiter>>, Option<Arc<RateLimiter>>);

/// One subscription of a topic.
///
/// Lock order: `state` → `redeliveries` → `delayed`; each is short and never held
/// across `.await` or entry I/O.
pub struct Subscription {
    /// Subscription name; immutable.
    pub name: String,
    /// Topic name, for logs, stats and the failover ring; immutable.
    pub topic: String,
    /// Partition index of the topic (-1 if not partitioned); immutable.
    pub partition: i32,
    /// The cursor; shared with nobody else.
    pub cursor: Arc<Cursor>,
    /// Persisted or a reader's; immutable.
    pub durable: bool,
    /// Broker settings; immutable.
    config: Arc<BrokerConfig>,
    /// The topic's effective unacked limits (per consumer, per subscription; 0 = none) and
    /// delayed-delivery switch: the broker's until the topic applies its policy.
    unacked_limits: (AtomicU32, AtomicU32),
    delayed_delivery: AtomicBool,
    /// Consumers and the dispatcher (routing state, replay set); written by the connection
    /// (join, leave, acks, redeliveries) and by the dispatcher task.
    state: Mutex<State>,
    /// Redelivery counts (position → times queued for redelivery); removed on ack.
    redeliveries: Mutex<HashMap<Position, u32>>,
    /// Delayed entries (Shared/Key_Shared), owned by the dispatcher; cleared on a rewind.
    delayed: Mutex<DelayedTracker>,
    /// Wakes the dispatcher: permits, consumers, redeliveries, acks that unblock.
    wake: Notify,
    /// Bumped by every event that may make waiting replay entries deliverable (FLOW, acks,
    /// consumers joining or leaving, redeliveries); the dispatcher retries a replay set in which
    /// nothing could be delivered only after it changed.
    changes: AtomicU64,
    /// Set when the subscription's unacked messages reached `maxUnackedMessagesPerSubscription`;
    /// cleared at half. Written by the dispatcher, read by stats.
    blocked_on_unacked: AtomicBool,
    /// Set when the subscription is closed or deleted; the dispatcher exits.
    closed: AtomicBool,
    /// Messages and bytes dispatched.
    pub out: Meter,
    /// Message TTL state and counters ([`expiry`]); its own atomics.
    pub expiry: ExpiryMonitor,
    /// Dispatch rate limiters: the topic's (shared by its subscriptions) and this one's.
    /// Replaced by policy changes; read once per dispatch pass.
    limiters: Mutex<DispatchLimiters>,
    /// The topic's compaction (its compacted view for `readCompacted` consumers); set once by
    /// the topic when it starts the subscription.
    compaction: std::sync::OnceLock<Arc<crate::compaction::Compaction>>,
    /// The topic's transaction buffer (max read position, aborted transactions); set once by
    /// the topic when it starts the subscription, absent without transactions.
    txn_buffer: std::sync::OnceLock<Arc<crate::transaction::buffer::TransactionBuffer>>,
    /// Acks held by open transactions ([`txn`]); its own lock inside.
    pub pending_acks: crate::transaction::pending_ack::PendingAcks,
    /// The durable log of those acks, opened by the topic load when it exists or by the
    /// first transactional ack (one initialiser runs, the others wait for it).
    pub pending_ack_store:
        tokio::sync::OnceCell<Arc<crate::transaction::pending_ack_store::PendingAckStore>>,
    /// Time for the Failover delay and delayed delivery; the system clock but in tests.
    /// Immutable after construction.
    clock: Arc<dyn Clock>,
    /// Timestamps and throttling counts for the admin `stats` (Pulsar's `SubscriptionStats`).
    pub stats: SubscriptionStats,
    /// PIP-492's oldest unacknowledged publish time ([`backlog_age`]); its own short lock,
    /// written by the backlog quota check, read by `/metrics`.
    pub backlog_age: backlog_age::BacklogAge,
    /// Replicated subscriptions ([`replicated`]): whether this one is, its snapshots, the one
    /// due. Written by the connection (subscribe, acks), the dispatcher (markers read) and the
    /// topic (updates); a short lock taken alone, never across `.await`.
    replicated: Mutex<replicated::Replicated>,
    /// The topic's "may hold server markers" flag, shared once by the topic when it starts the
    /// subscription (absent in tests that build a bare subscription).
    markers: std::sync::OnceLock<Arc<AtomicBool>>,
}

/// A subscription's statistics beyond its meters, kept for the admin `stats`. Every field is a
/// Relaxed atomic: each is an independent statistic, read without publishing other memory.
#[derive(Debug, Default)]
pub struct SubscriptionStats {
    /// When the subscription was opened in this process (ms since the epoch); set at creation.
    pub opened_ms: AtomicU64,
    /// Last FLOW from any of its consumers (ms, 0 = never); updated by [`Subscription::flow`].
    pub last_flow_ms: AtomicU64,
    /// Last dispatch of entries (ms, 0 = never); updated by the dispatcher.
    pub last_consumed_ms: AtomicU64,
    /// Last ack received (ms, 0 = never); updated by the ack methods.
    pub last_acked_ms: AtomicU64,
    /// Last time an ack moved the mark-delete position forward (ms, 0 = never); updated by the
    /// ack methods.
    pub last_mark_delete_advanced_ms: AtomicU64,
    /// Dispatch passes held back by the subscription's message-rate limit; updated by the
    /// dispatcher task.
    pub throttled_msgs_by_subscription: AtomicU64,
    /// Same, by the subscription's byte-rate limit.
    pub throttled_bytes_by_subscription: AtomicU64,
    /// Same, by the topic's message-rate dispatch limit.
    pub throttled_msgs_by_topic: AtomicU64,
    /// Same, by the topic's byte-rate dispatch limit.
    pub throttled_bytes_by_topic: AtomicU64,
}

impl Subscription {
    /// Creates the subscription without a dispatcher task (benchmarks and tests drive
    /// [`Subscription::dispatch_once`] themselves).
    #[must_use]
    pub fn new(
        name: &str,
        topic: &str,
        partition: i32,
        cursor: Arc<Cursor>,
        durable: bool,
        config: Arc<BrokerConfig>,
    ) -> Self {
        cursor.set_active(false);
        let cursor_properties = if durable {
            cursor.properties()
        } else {
            std::collections::BTreeMap::new()
        };
        let replicated_enabled = config.enable_replicated_subscriptions;
        let replicated_max =
            config.replicated_subscriptions_snapshot_max_cached_per_subscription as usize;
        let clock = Arc::clone(cursor.ledger().clock());
        let opened_ms = clock.now_ms();
        Subscription {
            name: name.to_owned(),
            topic: topic.to_owned(),
            partition,
            cursor,
            durable,
            unacked_limits: (
                AtomicU32::new(config.max_unacked_messages_per_consumer),
                AtomicU32::new(config.max_unacked_messages_per_subscription),
            ),
            delayed_delivery: AtomicBool::new(config.delayed_delivery_enabled),
            config,
            state: Mutex::new(State {
                sub_type: None,
                consumers: ConsumerList::default(),
                dispatcher: None,
            }),
            redeliveries: Mutex::new(HashMap::new()),
            delayed: Mutex::new(DelayedTracker::default()),
            wake: Notify::new(),
            changes: AtomicU64::new(0),
            blocked_on_unacked: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            out: Meter::default(),
            expiry: ExpiryMonitor::default(),
            limiters: Mutex::new((None, None)),
            compaction: std::sync::OnceLock::new(),
            txn_buffer: std::sync::OnceLock::new(),
            pending_acks: crate::transaction::pending_ack::PendingAcks::default(),
            pending_ack_store: tokio::sync::OnceCell::new(),
            clock,
            stats: SubscriptionStats {
                opened_ms: AtomicU64::new(opened_ms),
                ..SubscriptionStats::default()
            },
            backlog_age: backlog_age::BacklogAge::default(),
            replicated: Mutex::new(replicated::Replicated::from_cursor(
                &cursor_properties,
                replicated_enabled,
                replicated_max,
            )),
            markers: std::sync::OnceLock::new(),
        }
    }

    /// Replaces the clock (tests: a `ManualClock` drives the Failover delay and delayed
    /// delivery). Only before the subscription is shared.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The subscription clock's time in ms.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Sets the topic's effective unacked limits (per consumer, per subscription; 0 = none) and
    /// delayed-delivery switch.
    pub fn set_policy(&self, per_consumer: u32, per_subscription: u32, delayed_delivery: bool) {
        // Relaxed: independent settings read at the next dispatch pass, which the poke wakes.
        self.unacked_limits.0.store(per_consumer, Ordering::Relaxed);
        self.unacked_limits
            .1
            .store(per_subscription, Ordering::Relaxed);
        self.delayed_delivery
            .store(delayed_delivery, Ordering::Relaxed);
        self.poke();
    }

    /// The per-subscription unacked limit in force (0 = none).
    pub(crate) fn subscription_unacked_limit(&self) -> u32 {
        // Relaxed: an independent setting (see `set_policy`).
        self.unacked_limits.1.load(Ordering::Relaxed)
    }

    /// Whether delayed delivery is on for this topic.
    pub(crate) fn delayed_delivery(&self) -> bool {
        // Relaxed: an independent setting (see `set_policy`).
        self.delayed_delivery.load(Ordering::Relaxed)
    }

    /// Sets the topic-level and subscription-level dispatch limiters.
    pub fn set_dispatch_limiters(
        &self,
        topic: Option<Arc<RateLimiter>>,
        own: Option<Arc<RateLimiter>>,
    ) {
        *self.limiters.lock() = (topic, own);
        self.wake.notify_one();
    }

    fn dispatch_limiters(&self) -> Vec<Arc<RateLimiter>> {
        let l = self.limiters.lock();
        l.0.iter().chain(l.1.iter()).cloned().collect()
    }

    /// Counts a dispatch pass held back by rate limits, by the limits that had no token left.
    pub(crate) fn note_dispatch_throttled(&self) {
        let l = self.limiters.lock();
        let st = &self.stats;
        let count = |limiter: &Option<Arc<RateLimiter>>, msgs: &AtomicU64, bytes: &AtomicU64| {
            if let Some(limiter) = limiter {
                let (m, b) = limiter.available();
                // Relaxed: statistics for the admin API.
                if m.is_some_and(|m| m < 1.0) {
                    msgs.fetch_add(1, Ordering::Relaxed);
                }
                if b.is_some_and(|b| b < 1.0) {
                    bytes.fetch_add(1, Ordering::Relaxed);
                }
            }
        };
        count(
            &l.0,
            &st.throttled_msgs_by_topic,
            &st.throttled_bytes_by_topic,
        );
        count(
            &l.1,
            &st.throttled_msgs_by_subscription,
            &st.throttled_bytes_by_subscription,
        );
    }

    /// Gives the subscription its topic's compaction (once; later calls are ignored).
    pub fn set_compaction(&self, c: Arc<crate::compaction::Compaction>) {
        let _ = self.compaction.set(c);
    }

    /// The topic's compaction, if the topic gave it.
    #[must_use]
    pub fn compaction(&self) -> Option<&Arc<crate::compaction::Compaction>> {
        self.compaction.get()
    }

    /// The subscription type (of the attached consumers), if any consumer ever attached.
    #[must_use]
    pub fn sub_type(&self) -> Option<SubType> {
        self.state.lock().sub_type
    }

    /// Attached consumers.
    #[must_use]
    pub fn consumers(&self) -> Vec<Arc<Consumer>> {
        self.state.lock().consumers.all().to_vec()
    }

    /// The active consumer of an Exclusive/Failover subscription.
    #[must_use]
    pub fn active_consumer(&self) -> Option<Arc<Consumer>> {
        let st = self.state.lock();
        match &st.dispatcher {
            Some(Dispatcher::SingleActive(single)) => single.target(&st.consumers),
            _ => None,
        }
    }

    /// The Key_Shared slot ranges (inclusive) owned by a consumer.
    #[must_use]
    pub fn key_shared_ranges(&self, consumer: &Consumer) -> Vec<(u32, u32)> {
        let st = self.state.lock();
        match &st.dispatcher {
            Some(Dispatcher::StickyKey(k)) => k.ranges_of(consumer.handle),
            _ => Vec::new(),
        }
    }

    /// The per-consumer unacked limit in force (0 = none): Shared/Key_Shared durable only.
    fn unacked_limit(&self) -> u32 {
        match self.sub_type() {
            Some(t) if t.is_multi() && self.durable => {
                // Relaxed: an independent setting (see `set_policy`).
                self.unacked_limits.0.load(Ordering::Relaxed)
            }
            _ => 0,
        }
    }

    /// Signals the dispatcher that something changed (also: a consumer's connection became
    /// writable again).
    pub fn poke(&self) {
        // Relaxed: a change counter; the Notify gives the happens-before edge.
        self.changes.fetch_add(1, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// Whether a consumer of `sub_type` may join, as far as the subscription's type goes: one
    /// of another type than its consumers' is refused, and so is a second Exclusive one
    /// (`ConsumerBusy`, as Pulsar's `PersistentSubscription.addConsumer` and its dispatchers,
    /// which check this before `maxConsumersPerSubscription`).
    ///
    /// # Errors
    /// [`BrokerError::ConsumerBusy`] with the reason.
    pub fn admits_type(&self, sub_type: SubType) -> Result<(), BrokerError> {
        self.joinable(&self.state.lock(), sub_type)
    }

    fn joinable(&self, st: &State, sub_type: SubType) -> Result<(), BrokerError> {
        if st.consumers.is_empty() {
            return Ok(());
        }
        // Apache Pulsar 4.0's messages (`PersistentSubscription.addConsumer`, the Exclusive
        // dispatcher).
        if st.sub_type != Some(sub_type) {
            return Err(BrokerError::ConsumerBusy(format!(
                "Subscription is of different type. Active subscription type of '{}' is different \
                 than the connecting consumer's type '{}'.",
                st.sub_type.map_or("?", SubType::as_str),
                sub_type.as_str()
            )));
        }
        if sub_type == SubType::Exclusive {
            return Err(BrokerError::ConsumerBusy(
                "Exclusive consumer is already connected".into(),
            ));
        }
        Ok(())
    }

    /// Attaches a consumer. `key_shared` carries the client's `KeySharedMeta` (Key_Shared only;
    /// absent = AUTO_SPLIT).
    ///
    /// # Errors
    /// [`BrokerError::ConsumerBusy`] for a second Exclusive consumer or a type mismatch;
    /// [`BrokerError::ConsumerAssign`] for conflicting STICKY ranges.
    pub fn add_consumer(
        &self,
        consumer: Arc<Consumer>,
        key_shared: Option<KeySharedMeta>,
    ) -> Result<(), BrokerError> {
        let mut st = self.state.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(BrokerError::NotAllowed(format!(
                "subscription {} is closed",
                self.name
            )));
        }
        self.joinable(&st, consumer.sub_type)?;
        let first = st.consumers.is_empty();
        let State {
            sub_type,
            consumers,
            dispatcher,
        } = &mut *st;
        let t = consumer.sub_type;
        let meta = key_shared.unwrap_or_default();
        if t == SubType::KeyShared && !self.config.subscription_key_shared_enable {
            return Err(BrokerError::NotAllowed(
                "Key_Shared subscriptions are disabled (subscriptionKeySharedEnable)".into(),
            ));
        }
        // Key_Shared: the first consumer's settings make the dispatcher; the others keep theirs
        // (a Shared round-robin position survives the subscription becoming empty, as before).
        let fresh = t == SubType::KeyShared && first;
        let d = match dispatcher {
            Some(d) if d.serves(t) && !fresh => d,
            other => other.insert(Dispatcher::new(t, &meta, &self.config)),
        };
        if let Dispatcher::StickyKey(k) = d {
            k.add(&consumer, &meta)?;
        }
        *sub_type = Some(t);
        consumers.add(Arc::clone(&consumer));
        d.consumers_changed();
        if first {
            // As Pulsar: the first consumer starts from the first unacknowledged entry; delayed
            // entries are found again on the way.
            if let Some(replay) = d.replay_mut() {
                replay.clear();
            }
            self.delayed.lock().clear();
            if let Dispatcher::StickyKey(k) = d {
                k.clear_draining();
            }
            self.cursor.rewind();
            self.cursor.set_active(true);
        }
        self.update_active(&mut st, first, Some(consumer.handle));
        drop(st);
        self.poke();
        Ok(())
    }

    /// Detaches a consumer; Shared/Key_Shared: its unacknowledged messages go to the others.
    pub fn remove_consumer(&self, consumer: &Consumer) -> Option<Arc<Consumer>> {
        let mut st = self.state.lock();
        let c = st.consumers.remove(consumer.handle)?;
        c.close();
        match st.dispatcher.as_mut() {
            Some(Dispatcher::StickyKey(k)) => k.remove(c.handle),
            Some(Dispatcher::Multiple(m)) => m.consumer_removed(c.handle),
            Some(d) => d.consumers_changed(),
            None => {}
        }
        let last = st.consumers.is_empty();
        if last {
            self.cursor.set_active(false);
        }
        let multi = st.sub_type.is_some_and(SubType::is_multi);
        self.update_active(&mut st, false, None);
        if multi {
            // As Pulsar 4.x (apache/pulsar#17060): a leaving consumer's pending messages are
            // replayed without counting a redelivery; only REDELIVER_UNACKNOWLEDGED_MESSAGES
            // counts. With the last consumer gone, the tracker is cleared
            // (`clearComponentsAfterRemovedAllConsumers`): the next one re-reads from mark-delete.
            let pending = c.take_pending(None, 0);
            self.queue_replay_locked(&mut st, &pending, false);
            if last {
                self.redeliveries.lock().clear();
            }
        }
        drop(st);
        self.poke();
        Some(c)
    }

    /// Exclusive/Failover: recomputes the active consumer (see
    /// [`crate::dispatch::single_active`]) and rewinds the cursor when it says so.
    fn update_active(&self, st: &mut State, first: bool, newcomer: Option<u64>) {
        let State {
            consumers,
            dispatcher,
            sub_type,
            ..
        } = st;
        let Some(Dispatcher::SingleActive(single)) = dispatcher else {
            return;
        };
        let settings = FailoverSettings {
            topic: &self.topic,
            partition: self.partition,
            consistent: self.config.active_consumer_failover_consistent_hashing,
            delay_ms: self.config.active_consumer_failover_delay_time_millis,
            failover: *sub_type == Some(SubType::Failover),
        };
        if single.update(consumers, &settings, self.now_ms(), first, newcomer) {
            self.cursor.rewind();
        }
    }

    /// FLOW: the consumer grants `n` more permits.
    pub fn flow(&self, consumer: &Consumer, n: u32) {
        consumer.permits.add(i64::from(n));
        let now = self.now_ms();
        // Relaxed: statistics for the admin API.
        consumer.last_flow_ms.store(now, Ordering::Relaxed);
        self.stats.last_flow_ms.store(now, Ordering::Relaxed);
        self.poke();
        // A consumer asking for more of a terminated topic it has acknowledged entirely
        // (Pulsar's read failing with NoMoreEntriesToRead, with no backlog).
        if self.at_end_of_topic() {
            consumer.reached_end_of_topic();
        }
    }

    /// Takes acknowledged `positions` off the unacked count of `consumer`, or of whichever
    /// consumer holds them (a position acked through another consumer after a redelivery).
    pub(super) fn settle_acked(&self, consumer: &Consumer, positions: &[Position], limit: u32) {
        let mut others: Option<Vec<Arc<Consumer>>> = None;
        for p in positions {
            if consumer.settle(*p, limit).is_none() {
                let list = others.get_or_insert_with(|| self.consumers());
                for c in list.iter() {
                    if c.settle(*p, limit).is_some() {
                        break;
                    }
                }
            }
        }
    }

    /// Individual acks. `ack_set` (batch index ack) carries Pulsar's bitset with 1 = unacked;
    /// with `acknowledgmentAtBatchIndexLevelEnabled=false` such an ack is ignored, as Pulsar's
    /// cursor without `batchDeletedIndexes` does (`ManagedCursorImpl.asyncDelete`).
    pub fn ack_individual(&self, consumer: &Consumer, ids: &[(Position, Option<Vec<i64>>)]) {
        let limit = self.unacked_limit();
        let was_blocked = consumer.is_blocked();
        let batch_index_acks = self.config.acknowledgment_at_batch_index_level_enabled;
        let mut whole = Vec::with_capacity(ids.len());
        for (p, ack_set) in ids {
            match ack_set {
                Some(bits) if !bits.is_empty() && !batch_index_acks => {}
                Some(bits) if !bits.is_empty() => {
                    let words: Vec<u64> = bits.iter().map(|b| *b as u64).collect();
                    if self.cursor.ack_batch_index(*p, &words) {
                        whole.push(*p);
                    }
                }
                _ => whole.push(*p),
            }
        }
        let mark_delete = self.cursor.mark_delete_position();
        self.cursor.delete(&whole);
        self.note_ack(mark_delete);
        {
            let mut redeliveries = self.redeliveries.lock();
            if !redeliveries.is_empty() {
                for p in &whole {
                    redeliveries.remove(p);
                }
            }
        }
        let mut freed = false;
        self.settle_acked(consumer, &whole, limit);
        {
            let mut st = self.state.lock();
            if let Some(Dispatcher::StickyKey(k)) = st.dispatcher.as_mut() {
                for p in &whole {
                    if let Some((_, true)) = k.release(*p) {
                        freed = true;
                    }
                }
            }
        }
        // Relaxed: a flag re-evaluated by the dispatcher, which the poke wakes.
        let sub_blocked = self.blocked_on_unacked.load(Ordering::Relaxed);
        if freed || sub_blocked || (was_blocked && !consumer.is_blocked()) {
            self.poke();
        }
        self.check_end_of_topic();
    }

    /// On a terminated topic, once everything is acknowledged, tells every consumer the end of
    /// the topic is reached (Pulsar's `checkAndApplyReachedEndOfTopicOrTopicMigration`, after
    /// acks, on termination and on a read finding nothing more).
    pub fn check_end_of_topic(&self) {
        if self.at_end_of_topic() {
            for c in self.consumers() {
                c.reached_end_of_topic();
            }
        }
    }

    /// Whether the topic is terminated and everything in it acknowledged here.
    fn at_end_of_topic(&self) -> bool {
        self.cursor.ledger().is_terminated() && self.cursor.backlog() == 0
    }

    /// Stats: an ack arrived; the mark-delete position was `before` it.
    fn note_ack(&self, before: Position) {
        let now = self.now_ms();
        // Relaxed: statistics for the admin API.
        self.stats.last_acked_ms.store(now, Ordering::Relaxed);
        let mark_delete = self.cursor.mark_delete_position();
        if mark_delete > before {
            self.stats
                .last_mark_delete_advanced_ms
                .store(now, Ordering::Relaxed);
            self.mark_delete_advanced(mark_delete);
        }
    }

    /// Cumulative ack (Exclusive/Failover): everything up to `position`.
    ///
    /// # Errors
    /// A position past the end of the topic.
    pub fn ack_cumulative(
        &self,
        consumer: &Consumer,
        position: Position,
    ) -> Result<(), BrokerError> {
        let mark_delete = self.cursor.mark_delete_position();
        self.cursor.mark_delete(position)?;
        self.note_ack(mark_delete);
        consumer.settle_upto(position, self.unacked_limit());
        self.redeliveries.lock().retain(|p, _| *p > position);
        self.check_end_of_topic();
        Ok(())
    }

    /// A cumulative ack of a message inside a batch (`ack_set`: Pulsar's bitset, 1 = not yet
    /// acknowledged): as Pulsar's `asyncMarkDelete` with an ack set, everything before the
    /// batch's entry is acknowledged and the entry keeps its bitset (acknowledged whole once
    /// every index is). Acking the whole entry would lose the batch's later messages.
    ///
    /// # Errors
    /// A position past the end of the topic.
    pub fn ack_cumulative_in_batch(
        &self,
        consumer: &Consumer,
        position: Position,
        ack_set: Vec<i64>,
    ) -> Result<(), BrokerError> {
        let before = self.cursor.ledger().previous_position(position);
        if before > self.cursor.mark_delete_position() {
            self.ack_cumulative(consumer, before)?;
        }
        // Without batch-index acks the entry itself stays (Pulsar's `asyncMarkDelete` takes
        // a position with an ack set to the one before it).
        if self.config.acknowledgment_at_batch_index_level_enabled {
            self.ack_individual(consumer, &[(position, Some(ack_set))]);
        }
        Ok(())
    }

    /// Queues positions taken from a consumer's pending acks for redelivery (counting it when
    /// `count`: the client asked for it), and releases their Key_Shared slots.
    fn queue_replay_locked(&self, st: &mut State, positions: &[Position], count: bool) {
        if positions.is_empty() {
            return;
        }
        if count && self.config.subscription_redelivery_tracker_enabled {
            let mut counts = self.redeliveries.lock();
            for p in positions {
                *counts.entry(*p).or_insert(0) += 1;
            }
        }
        if let Some(d) = st.dispatcher.as_mut() {
            d.queue_replay(positions);
        }
    }

    /// REDELIVER_UNACKNOWLEDGED_MESSAGES. Shared/Key_Shared: the named (or all) pending messages
    /// of this consumer are replayed. Exclusive/Failover: rewind to mark-delete.
    pub fn redeliver(&self, consumer: &Consumer, ids: Option<&[Position]>) {
        let limit = self.unacked_limit();
        let mut st = self.state.lock();
        if st.sub_type.is_some_and(SubType::is_multi) {
            let taken = consumer.take_pending(ids, limit);
            self.queue_replay_locked(&mut st, &taken, true);
        } else {
            consumer.take_pending(None, limit);
            let holding = match st.dispatcher.as_mut() {
                Some(Dispatcher::SingleActive(single)) => single.is_holding(),
                Some(d) => {
                    if let Some(replay) = d.replay_mut() {
                        replay.clear();
                    }
                    false
                }
                None => false,
            };
            if !holding {
                self.cursor.rewind();
            }
        }
        drop(st);
        self.poke();
    }

    /// Disconnects every consumer (they reconnect), as Pulsar does before a seek or unload.
    pub fn disconnect_all(&self) {
        let mut st = self.state.lock();
        let consumers: Vec<Arc<Consumer>> = st.consumers.take_all();
        match st.dispatcher.as_mut() {
            Some(Dispatcher::SingleActive(single)) => single.reset(),
            Some(Dispatcher::StickyKey(_)) => st.dispatcher = None,
            Some(Dispatcher::Multiple(m)) => m.restart(),
            None => {}
        }
        drop(st);
        for c in &consumers {
            c.close();
            c.notify(ConsumerEvent::Closed { consumer_id: c.id });
        }
        self.cursor.set_active(false);
        self.redeliveries.lock().clear();
        self.delayed.lock().clear();
        self.poke();
    }

    /// Resets the cursor to `position` after disconnecting the consumers.
    pub fn seek(&self, position: Position) {
        self.disconnect_all();
        self.cursor.reset(position);
    }

    /// Resets the cursor to the first entry published at or after `timestamp_ms` (the official
    /// Python client's suite seeks to a message's own publish time and expects that message).
    ///
    /// # Errors
    /// Storage failures while searching.
    pub fn seek_by_time(&self, timestamp_ms: u64) -> Result<(), BrokerError> {
        self.disconnect_all();
        self.cursor.reset_by_time(timestamp_ms)?;
        Ok(())
    }

    /// Unacknowledged messages across consumers.
    #[must_use]
    pub fn unacked_messages(&self) -> i64 {
        self.consumers().iter().map(|c| c.unacked()).sum()
    }

    /// Whether dispatch is paused by `maxUnackedMessagesPerSubscription`.
    #[must_use]
    pub fn is_blocked_on_unacked(&self) -> bool {
        // Relaxed: a gauge.
        self.blocked_on_unacked.load(Ordering::Relaxed)
    }

    /// Entries waiting for redelivery.
    #[must_use]
    pub fn replay_len(&self) -> usize {
        let st = self.state.lock();
        st.dispatcher
            .as_ref()
            .and_then(Dispatcher::replay)
            .map_or(0, |r| r.len())
    }

    /// Entries held by the delayed delivery tracker.
    #[must_use]
    pub fn delayed_len(&self) -> usize {
        self.delayed.lock().len()
    }

    /// Stops the dispatcher.
    pub fn close(&self) {
        // Release: the dispatcher's Acquire load sees the close before it next reads.
        self.closed.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    fn is_closed(&self) -> bool {
        // Acquire: see `close`.
        self.closed.load(Ordering::Acquire)
    }
}
