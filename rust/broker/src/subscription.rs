//! A subscription: a cursor plus the consumers attached to it, and its dispatcher.
//!
//! The dispatcher (seed 000) is one task per subscription. It waits until some consumer has
//! permits, serves the replay set (redeliveries) first, otherwise reads from the cursor — a read
//! at the end parks until an entry is added — and hands entries out: to the active consumer for
//! Exclusive/Failover, round-robin in chunks of at most `dispatcherMaxRoundRobinBatchSize` by
//! priority level for Shared. Permits are charged in messages (a batch entry holds several);
//! entries nobody could take go to the replay set. A subscription never waits on another.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::{Cursor, Entry, Position};
use tokio::sync::Notify;

use crate::consumer::{Consumer, ConsumerEvent, SubType};
use crate::rate::{Meter, RateLimiter};
use crate::{BrokerConfig, BrokerError};

/// What a dispatcher needs to know about an entry, read from its stored metadata.
#[derive(Clone, Debug, Default)]
pub struct EntryInfo {
    /// Messages in the entry (1 unless batched).
    pub messages: u32,
    /// Ordering key, else partition key (Key_Shared routing).
    pub key: Option<Bytes>,
    /// `deliver_at_time` in ms, if set.
    pub deliver_at: Option<i64>,
}

/// Reads [`EntryInfo`] from a stored entry (`[magic][crc][size][metadata][payload]`). A damaged
/// entry counts as one message with no key; it is still delivered and the client's checksum
/// check rejects it.
#[must_use]
pub fn entry_info(data: &Bytes) -> EntryInfo {
    match pulsar_rs_proto::parse_stored_entry(data) {
        Ok((md, _)) => EntryInfo {
            messages: md
                .num_messages_in_batch
                .map_or(1, |n| u32::try_from(n.max(1)).unwrap_or(1)),
            key: md
                .ordering_key
                .or_else(|| md.partition_key.map(Bytes::from)),
            deliver_at: md.deliver_at_time,
        },
        Err(_) => EntryInfo {
            messages: 1,
            key: None,
            deliver_at: None,
        },
    }
}

struct State {
    /// Type fixed by the first consumer; may change when none is attached.
    sub_type: Option<SubType>,
    /// Attached consumers, sorted by (priority level, name).
    consumers: Vec<Arc<Consumer>>,
    /// Failover/Exclusive: the consumer receiving messages.
    active: Option<u64>,
    /// Shared: index of the next consumer in round-robin order.
    next: usize,
}

/// (topic-level, subscription-level) dispatch rate limiters.
type DispatchLimiters = (Option<Arc<RateLimiter>>, Option<Arc<RateLimiter>>);

/// One subscription of a topic.
pub struct Subscription {
    /// Subscription name; immutable.
    pub name: String,
    /// Topic name, for logs and stats; immutable.
    pub topic: String,
    /// Partition index of the topic (-1 if not partitioned); immutable.
    pub partition: i32,
    /// The cursor; shared with nobody else.
    pub cursor: Arc<Cursor>,
    /// Persisted or a reader's; immutable.
    pub durable: bool,
    /// Broker settings; immutable.
    config: Arc<BrokerConfig>,
    /// Consumers and routing state. Short lock; never held across `.await` or entry I/O.
    state: Mutex<State>,
    /// Entries to redeliver before reading new ones (ordered). Short lock.
    replay: Mutex<BTreeSet<Position>>,
    /// Redelivery counts (position → times queued for replay); removed on ack. Short lock.
    redeliveries: Mutex<HashMap<Position, u32>>,
    /// Wakes the dispatcher: permits, consumers, redeliveries, acks that unblock.
    wake: Notify,
    /// Set when the subscription is closed or deleted; the dispatcher exits.
    closed: AtomicBool,
    /// Messages and bytes dispatched.
    pub out: Meter,
    /// Dispatch rate limiters: the topic's (shared by its subscriptions) and this one's.
    /// Replaced by policy changes; read once per dispatch pass.
    limiters: Mutex<DispatchLimiters>,
}

impl Subscription {
    /// Creates the subscription and starts its dispatcher task on the current Tokio runtime.
    #[must_use]
    pub fn start(
        name: &str,
        topic: &str,
        partition: i32,
        cursor: Arc<Cursor>,
        durable: bool,
        config: Arc<BrokerConfig>,
    ) -> Arc<Self> {
        cursor.set_active(false);
        let sub = Arc::new(Subscription {
            name: name.to_owned(),
            topic: topic.to_owned(),
            partition,
            cursor,
            durable,
            config,
            state: Mutex::new(State {
                sub_type: None,
                consumers: Vec::new(),
                active: None,
                next: 0,
            }),
            replay: Mutex::new(BTreeSet::new()),
            redeliveries: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            closed: AtomicBool::new(false),
            out: Meter::default(),
            limiters: Mutex::new((None, None)),
        });
        let weak = Arc::downgrade(&sub);
        tokio::spawn(async move { dispatch_loop(weak).await });
        sub
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

    /// The subscription type (of the attached consumers), if any consumer ever attached.
    #[must_use]
    pub fn sub_type(&self) -> Option<SubType> {
        self.state.lock().sub_type
    }

    /// Attached consumers.
    #[must_use]
    pub fn consumers(&self) -> Vec<Arc<Consumer>> {
        self.state.lock().consumers.clone()
    }

    /// The active consumer of an Exclusive/Failover subscription.
    #[must_use]
    pub fn active_consumer(&self) -> Option<u64> {
        self.state.lock().active
    }

    fn unacked_limit(&self) -> u32 {
        match self.sub_type() {
            Some(t) if t.is_multi() && self.durable => {
                self.config.max_unacked_messages_per_consumer
            }
            _ => 0,
        }
    }

    /// Attaches a consumer.
    ///
    /// # Errors
    /// [`BrokerError::ConsumerBusy`] for a second Exclusive consumer or a type mismatch.
    pub fn add_consumer(&self, consumer: Arc<Consumer>) -> Result<(), BrokerError> {
        let mut st = self.state.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(BrokerError::NotAllowed(format!(
                "subscription {} is closed",
                self.name
            )));
        }
        if !st.consumers.is_empty() {
            if st.sub_type != Some(consumer.sub_type) {
                return Err(BrokerError::ConsumerBusy(format!(
                    "Subscription {} is of type {}, cannot attach a {} consumer",
                    self.name,
                    st.sub_type.map_or("?", SubType::as_str),
                    consumer.sub_type.as_str()
                )));
            }
            if consumer.sub_type == SubType::Exclusive {
                return Err(BrokerError::ConsumerBusy(format!(
                    "Exclusive consumer is already connected to {}",
                    self.name
                )));
            }
        }
        if consumer.sub_type == SubType::KeyShared {
            return Err(BrokerError::NotAllowed(
                "Key_Shared subscriptions are not supported yet".into(),
            ));
        }
        let first = st.consumers.is_empty();
        st.sub_type = Some(consumer.sub_type);
        st.consumers.push(consumer);
        st.consumers.sort_by(|a, b| {
            (a.priority_level, &a.name, a.id).cmp(&(b.priority_level, &b.name, b.id))
        });
        if first {
            // As Pulsar: the first consumer starts from the first unacknowledged entry.
            self.replay.lock().clear();
            self.cursor.rewind();
            self.cursor.set_active(true);
        }
        self.update_active(&mut st, first);
        drop(st);
        self.wake.notify_one();
        Ok(())
    }

    /// Detaches a consumer; Shared: its unacknowledged messages go to the others.
    pub fn remove_consumer(&self, consumer_id: u64) -> Option<Arc<Consumer>> {
        let mut st = self.state.lock();
        let idx = st.consumers.iter().position(|c| c.id == consumer_id)?;
        let c = st.consumers.remove(idx);
        c.close();
        if st.consumers.is_empty() {
            self.cursor.set_active(false);
        }
        let multi = st.sub_type.is_some_and(SubType::is_multi);
        self.update_active(&mut st, false);
        drop(st);
        if multi {
            let pending = c.take_pending(None);
            self.queue_replay(&pending);
        }
        self.wake.notify_one();
        Some(c)
    }

    /// Recomputes the active consumer for Exclusive/Failover; on a change, tells every consumer
    /// and rewinds so the new active one receives everything not acknowledged.
    fn update_active(&self, st: &mut State, first: bool) {
        let Some(t) = st.sub_type else { return };
        if t.is_multi() {
            return;
        }
        let new = if st.consumers.is_empty() {
            None
        } else {
            let top = st.consumers[0].priority_level;
            let group: Vec<&Arc<Consumer>> = st
                .consumers
                .iter()
                .filter(|c| c.priority_level == top)
                .collect();
            let idx = if self.partition >= 0 {
                self.partition as usize % group.len()
            } else {
                0
            };
            Some(group[idx].id)
        };
        let changed = new != st.active;
        st.active = new;
        for c in &st.consumers {
            // Every consumer hears the current state when something changed; a newcomer always.
            if changed || first {
                c.notify(ConsumerEvent::ActiveConsumerChange {
                    consumer_id: c.id,
                    active: Some(c.id) == new,
                });
            }
        }
        if changed && !first {
            self.replay.lock().clear();
            self.cursor.rewind();
        }
    }

    /// The consumer with this id, if attached.
    #[must_use]
    pub fn consumer(&self, consumer_id: u64) -> Option<Arc<Consumer>> {
        self.state
            .lock()
            .consumers
            .iter()
            .find(|c| c.id == consumer_id)
            .cloned()
    }

    /// FLOW: the consumer grants `n` more permits.
    pub fn flow(&self, consumer: &Consumer, n: u32) {
        consumer.permits.add(i64::from(n));
        self.wake.notify_one();
    }

    /// Individual acks. `ack_set` (batch index ack) carries Pulsar's bitset with 1 = unacked.
    pub fn ack_individual(&self, consumer: &Consumer, ids: &[(Position, Option<Vec<i64>>)]) {
        let limit = self.unacked_limit();
        let was_blocked = consumer.is_blocked();
        let mut whole = Vec::with_capacity(ids.len());
        for (p, ack_set) in ids {
            match ack_set {
                Some(bits) if !bits.is_empty() => {
                    let words: Vec<u64> = bits.iter().map(|b| *b as u64).collect();
                    if self.cursor.ack_batch_index(*p, &words) {
                        whole.push(*p);
                    }
                }
                _ => whole.push(*p),
            }
        }
        self.cursor.delete(&whole);
        let mut redeliveries = self.redeliveries.lock();
        for p in &whole {
            redeliveries.remove(p);
        }
        drop(redeliveries);
        for p in &whole {
            if consumer.settle(*p, limit).is_none() {
                // Acked through another consumer (after a redelivery): settle wherever it is.
                for c in self.consumers() {
                    if c.settle(*p, limit).is_some() {
                        break;
                    }
                }
            }
        }
        if was_blocked && !consumer.is_blocked() {
            self.wake.notify_one();
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
        self.cursor.mark_delete(position)?;
        consumer.settle_upto(position, self.unacked_limit());
        self.redeliveries.lock().retain(|p, _| *p > position);
        Ok(())
    }

    fn queue_replay(&self, positions: &[Position]) {
        if positions.is_empty() {
            return;
        }
        let track = self.config.subscription_redelivery_tracker_enabled;
        let mut counts = self.redeliveries.lock();
        let mut replay = self.replay.lock();
        for p in positions {
            if track {
                *counts.entry(*p).or_insert(0) += 1;
            }
            replay.insert(*p);
        }
    }

    /// REDELIVER_UNACKNOWLEDGED_MESSAGES. Shared: the named (or all) pending messages of this
    /// consumer are replayed. Exclusive/Failover: rewind to mark-delete.
    pub fn redeliver(&self, consumer: &Consumer, ids: Option<&[Position]>) {
        if self.sub_type().is_some_and(SubType::is_multi) {
            let taken = consumer.take_pending(ids);
            self.queue_replay(&taken);
        } else {
            consumer.take_pending(None);
            self.replay.lock().clear();
            self.cursor.rewind();
        }
        self.wake.notify_one();
    }

    /// Disconnects every consumer (they reconnect), as Pulsar does before a seek or unload.
    pub fn disconnect_all(&self) {
        let consumers: Vec<Arc<Consumer>> = std::mem::take(&mut self.state.lock().consumers);
        for c in &consumers {
            c.close();
            c.notify(ConsumerEvent::Closed { consumer_id: c.id });
        }
        let mut st = self.state.lock();
        st.active = None;
        drop(st);
        self.cursor.set_active(false);
        self.replay.lock().clear();
        self.redeliveries.lock().clear();
        self.wake.notify_one();
    }

    /// Resets the cursor to `position` after disconnecting the consumers.
    pub fn seek(&self, position: Position) {
        self.disconnect_all();
        self.cursor.reset(position);
    }

    /// Resets the cursor to the first entry published at or after `timestamp_ms`.
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

    /// Entries waiting for redelivery.
    #[must_use]
    pub fn replay_len(&self) -> usize {
        self.replay.lock().len()
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

    /// Reads up to `n` replay entries (those not acknowledged meanwhile).
    fn read_replay(&self, n: usize) -> Result<Vec<(Entry, bool)>, BrokerError> {
        let positions: Vec<Position> = {
            let mut replay = self.replay.lock();
            let take: Vec<Position> = replay.iter().take(n).copied().collect();
            for p in &take {
                replay.remove(p);
            }
            take
        };
        let mut out = Vec::with_capacity(positions.len());
        for p in positions {
            if self.cursor.is_acked(p) {
                continue;
            }
            let ml = self.cursor.ledger();
            if let Some(e) = ml.read_entries(p, 1, u64::MAX, p)?.into_iter().next() {
                if e.position == p {
                    out.push((e, true));
                }
            }
        }
        Ok(out)
    }

    /// How many entries the dispatcher may read now, or `None` if no consumer can take any.
    fn read_budget(&self) -> Option<usize> {
        let st = self.state.lock();
        let permits: i64 = match st.sub_type {
            Some(t) if t.is_multi() => {
                let total_unacked: i64 = st.consumers.iter().map(|c| c.unacked()).sum();
                let sub_limit = i64::from(self.config.max_unacked_messages_per_subscription);
                if self.durable && sub_limit > 0 && total_unacked >= sub_limit {
                    return None;
                }
                st.consumers
                    .iter()
                    .filter(|c| c.can_take())
                    .map(|c| c.permits.get())
                    .sum()
            }
            Some(_) => st
                .active
                .and_then(|a| st.consumers.iter().find(|c| c.id == a))
                .filter(|c| !c.is_closed())
                .map_or(0, |c| c.permits.get()),
            None => 0,
        };
        let max = i64::from(self.config.dispatcher_max_read_batch_size);
        (permits > 0).then(|| usize::try_from(permits.min(max)).unwrap_or(1))
    }

    /// Hands entries to consumers; what nobody takes goes to the replay set. Returns the
    /// messages and bytes sent.
    fn dispatch(&self, entries: Vec<(Entry, bool)>) -> (u64, u64) {
        let (mut sent_msgs, mut sent_bytes) = (0u64, 0u64);
        let limit = self.unacked_limit();
        let rr = self.config.dispatcher_max_round_robin_batch_size;
        let mut leftovers = Vec::new();
        let mut st = self.state.lock();
        let multi = st.sub_type.is_some_and(SubType::is_multi);
        let mut given_in_chunk = 0u32;
        for (entry, replayed) in entries {
            if self.cursor.is_acked(entry.position) {
                continue;
            }
            let info = entry_info(&entry.data);
            let target = if multi {
                pick_round_robin(&mut st, &mut given_in_chunk, rr)
            } else {
                st.active
                    .and_then(|a| st.consumers.iter().find(|c| c.id == a).cloned())
            };
            let Some(consumer) = target else {
                leftovers.push(entry.position);
                continue;
            };
            let redelivery_count = if replayed && multi {
                self.redeliveries
                    .lock()
                    .get(&entry.position)
                    .copied()
                    .unwrap_or(0)
            } else {
                0
            };
            let ack_set = self
                .cursor
                .batch_ack_set(entry.position)
                .map(|w| w.iter().map(|x| *x as i64).collect());
            let len = entry.data.len() as u64;
            if consumer.deliver(
                entry.position,
                info.messages,
                self.partition,
                redelivery_count,
                ack_set,
                entry.data,
                limit,
            ) {
                self.out.record(u64::from(info.messages), len);
                sent_msgs += u64::from(info.messages);
                sent_bytes += len;
            } else {
                leftovers.push(entry.position);
            }
        }
        drop(st);
        if !leftovers.is_empty() {
            if multi {
                self.replay.lock().extend(leftovers);
            } else {
                // Single active consumer: re-read from mark-delete when one can take messages.
                self.cursor.rewind();
            }
        }
        (sent_msgs, sent_bytes)
    }
}

/// Picks the next Shared consumer: the best priority level with a consumer that can take
/// messages, round-robin inside it, switching after `chunk` entries.
fn pick_round_robin(st: &mut State, given: &mut u32, chunk: u32) -> Option<Arc<Consumer>> {
    let n = st.consumers.len();
    if n == 0 {
        return None;
    }
    let best = st
        .consumers
        .iter()
        .filter(|c| c.can_take())
        .map(|c| c.priority_level)
        .min()?;
    if *given >= chunk {
        st.next += 1;
        *given = 0;
    }
    for i in 0..n {
        let idx = (st.next + i) % n;
        let c = &st.consumers[idx];
        if c.priority_level == best && c.can_take() {
            if i != 0 {
                *given = 0;
            }
            st.next = idx;
            *given += 1;
            return Some(Arc::clone(c));
        }
    }
    None
}

async fn dispatch_loop(weak: std::sync::Weak<Subscription>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(sub) = weak.upgrade() else { return };
        if sub.is_closed() {
            return;
        }
        let Some(mut budget) = sub.read_budget() else {
            sub.wake.notified().await;
            continue;
        };
        // Dispatch rate limits: wait for tokens, then read no more messages than they allow.
        let limiters = sub.dispatch_limiters();
        let wait = limiters
            .iter()
            .map(|l| l.wait_time())
            .max()
            .unwrap_or_default();
        if !wait.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = sub.wake.notified() => {}
            }
            continue;
        }
        for l in &limiters {
            if let (Some(m), _) = l.available() {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let allowed = m.floor().max(1.0) as usize;
                budget = budget.min(allowed);
            }
        }
        let has_replay = sub.replay_len() > 0;
        let read = if has_replay {
            sub.read_replay(budget)
        } else {
            let cursor = Arc::clone(&sub.cursor);
            let outcome = tokio::select! {
                r = cursor.read_entries_or_wait(budget) => Some(r),
                () = sub.wake.notified() => None,
            };
            match outcome {
                None => continue,
                Some(r) => r
                    .map(|v| v.into_iter().map(|e| (e, false)).collect())
                    .map_err(BrokerError::from),
            }
        };
        match read {
            Ok(entries) => {
                backoff = Duration::from_millis(100);
                let (msgs, bytes) = sub.dispatch(entries);
                for l in &limiters {
                    l.consume(msgs, bytes);
                }
            }
            Err(e) => {
                if sub.is_closed() {
                    return;
                }
                tracing::warn!(topic = %sub.topic, subscription = %sub.name, error = %e, "dispatcher read failed; backing off");
                drop(sub);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        }
    }
}
