//! A consumer attached to a subscription: its FLOW permits, the messages delivered to it and not
//! yet acknowledged (pending acks), and the sink through which the dispatcher reaches its
//! connection. The broker knows nothing of sockets: the server implements [`ConsumerSink`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::Position;

use crate::permits::PermitCounter;
use crate::rate::Meter;

/// Subscription types, as numbered on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubType {
    /// One consumer; a second one is refused.
    Exclusive,
    /// Round-robin across consumers.
    Shared,
    /// One active consumer, others on standby.
    Failover,
    /// Messages of one key always go to one consumer.
    KeyShared,
}

impl SubType {
    /// From the wire value (numbered by proto's `CommandSubscribe.SubType`).
    #[must_use]
    pub fn from_wire(v: i32) -> Option<Self> {
        use pulsar_rs_proto::pb::command_subscribe::SubType as Wire;
        Some(match Wire::try_from(v).ok()? {
            Wire::Exclusive => SubType::Exclusive,
            Wire::Shared => SubType::Shared,
            Wire::Failover => SubType::Failover,
            Wire::KeyShared => SubType::KeyShared,
        })
    }

    /// Pulsar's display name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SubType::Exclusive => "Exclusive",
            SubType::Shared => "Shared",
            SubType::Failover => "Failover",
            SubType::KeyShared => "Key_Shared",
        }
    }

    /// Whether several consumers receive messages at once (individual-ack mode).
    #[must_use]
    pub fn is_multi(self) -> bool {
        matches!(self, SubType::Shared | SubType::KeyShared)
    }
}

/// What the broker asks a consumer's connection to send.
#[derive(Debug, Clone)]
pub enum ConsumerEvent {
    /// Deliver one entry.
    Message {
        /// Consumer id on its connection.
        consumer_id: u64,
        /// Entry position.
        position: Position,
        /// Partition index, -1 for non-partitioned topics.
        partition: i32,
        /// Times this entry was redelivered.
        redelivery_count: u32,
        /// Batch bitset (1 = deliver) when part of the batch is already acknowledged.
        ack_set: Option<Vec<i64>>,
        /// The stored entry bytes, sent unchanged.
        data: Bytes,
    },
    /// Failover: this consumer became active or inactive.
    ActiveConsumerChange {
        /// Consumer id.
        consumer_id: u64,
        /// Whether it is now the active one.
        active: bool,
    },
    /// The topic was terminated and this consumer's subscription has acknowledged everything
    /// in it (Pulsar's `REACHED_END_OF_TOPIC`): nothing more will come.
    ReachedEndOfTopic {
        /// Consumer id.
        consumer_id: u64,
    },
    /// The broker closed the consumer (seek, topic deletion); the client reconnects.
    Closed {
        /// Consumer id.
        consumer_id: u64,
    },
}

/// The connection side of a consumer.
pub trait ConsumerSink: Send + Sync + 'static {
    /// Queues an event; false if the connection is gone.
    fn send(&self, event: ConsumerEvent) -> bool;
    /// Whether the connection can take more messages now (Netty's `isWritable()`): the
    /// dispatcher stops feeding a consumer whose connection is not, and the sink pokes the
    /// subscription when it is again.
    fn is_writable(&self) -> bool {
        true
    }
}

/// Source of [`Consumer::handle`]s. Relaxed: only uniqueness matters.
static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);

/// One attached consumer.
pub struct Consumer {
    /// Id chosen by the client, unique on its connection only; immutable.
    pub id: u64,
    /// Broker-wide unique handle: how a subscription tells its consumers apart (two connections
    /// may use the same consumer id); immutable.
    pub handle: u64,
    /// Consumer name; immutable.
    pub name: String,
    /// Lower is preferred; immutable.
    pub priority_level: i32,
    /// Subscription type it attached with; immutable.
    pub sub_type: SubType,
    /// Client address, for stats; immutable.
    pub address: String,
    /// When it attached; immutable.
    pub connected_since: SystemTime,
    /// FLOW credit in messages: added by the connection, charged by the dispatcher.
    pub permits: PermitCounter,
    /// Messages delivered and not acknowledged (batch-aware). Updated by dispatcher and acks.
    unacked: AtomicI64,
    /// Set when `unacked` reached `maxUnackedMessagesPerConsumer`; cleared at half.
    blocked: AtomicBool,
    /// Delivered, unacknowledged entries → messages in them, in position order (so a
    /// cumulative ack settles only what it covers). Short lock, by dispatcher and acks.
    pending: Mutex<BTreeMap<Position, u32>>,
    /// Where events go; owned by the connection.
    sink: Arc<dyn ConsumerSink>,
    /// The broker's clock, for the consume and ack timestamps; immutable.
    clock: Arc<dyn pulsar_rs_clock::Clock>,
    /// Messages and bytes sent.
    pub out: Meter,
    /// Messages acknowledged.
    pub acks: Meter,
    /// Messages redelivered.
    pub redelivered: Meter,
    /// Chunks of chunked messages delivered; recorded by the dispatcher (`dispatch::Env`).
    pub chunked: Meter,
    /// Set when detached; further deliveries are refused.
    closed: AtomicBool,
    /// Set once the consumer was told the end of its terminated topic is reached (it is told
    /// once); set by whoever notices first (an ack, the termination, its FLOW).
    reached_end: AtomicBool,
    /// Subscribed with `readCompacted`: served the compacted view up to the horizon. Set by the
    /// connection before the consumer is attached; read by the dispatcher.
    read_compacted: AtomicBool,
    /// Entries delivered (`out` counts messages): for the admin stats' `avgMessagesPerEntry`.
    /// Updated by the dispatcher in [`Consumer::deliver`].
    pub entries_out: AtomicU64,
    /// When an entry was last delivered (ms since the epoch, 0 = never). Updated by the
    /// dispatcher in [`Consumer::deliver`]; read by the admin stats.
    pub last_consumed_ms: AtomicU64,
    /// When an ack last settled messages of this consumer (ms, 0 = never). Updated by acks.
    pub last_acked_ms: AtomicU64,
    /// When the consumer last sent FLOW (ms, 0 = never). Updated by [`crate::Subscription::flow`].
    pub last_flow_ms: AtomicU64,
    /// The client's version string and the consumer's metadata (SUBSCRIBE's `metadata`), for
    /// the admin stats; set once by the connection before the consumer is attached.
    client: std::sync::OnceLock<(String, Vec<(String, String)>)>,
}

impl Consumer {
    /// A consumer with no permits yet.
    #[must_use]
    pub fn new(
        id: u64,
        name: String,
        priority_level: i32,
        sub_type: SubType,
        address: String,
        sink: Arc<dyn ConsumerSink>,
        clock: Arc<dyn pulsar_rs_clock::Clock>,
    ) -> Arc<Self> {
        Arc::new(Consumer {
            id,
            // Relaxed: a unique number, no other memory depends on it.
            handle: NEXT_HANDLE.fetch_add(1, Ordering::Relaxed),
            name,
            priority_level,
            sub_type,
            address,
            connected_since: pulsar_rs_clock::system_time_of_ms(clock.now_ms()),
            permits: PermitCounter::new(),
            unacked: AtomicI64::new(0),
            blocked: AtomicBool::new(false),
            pending: Mutex::new(BTreeMap::new()),
            sink,
            clock,
            out: Meter::default(),
            acks: Meter::default(),
            redelivered: Meter::default(),
            chunked: Meter::default(),
            closed: AtomicBool::new(false),
            reached_end: AtomicBool::new(false),
            read_compacted: AtomicBool::new(false),
            entries_out: AtomicU64::new(0),
            last_consumed_ms: AtomicU64::new(0),
            last_acked_ms: AtomicU64::new(0),
            last_flow_ms: AtomicU64::new(0),
            client: std::sync::OnceLock::new(),
        })
    }

    /// Records the client's version and the consumer's metadata (once; later calls are ignored).
    pub fn set_client(&self, version: String, metadata: Vec<(String, String)>) {
        let _ = self.client.set((version, metadata));
    }

    /// The client's version string ("" when not recorded).
    #[must_use]
    pub fn client_version(&self) -> &str {
        self.client.get().map_or("", |c| c.0.as_str())
    }

    /// The consumer's metadata, as given at SUBSCRIBE.
    #[must_use]
    pub fn metadata(&self) -> &[(String, String)] {
        self.client.get().map_or(&[], |c| c.1.as_slice())
    }

    /// Marks the consumer as reading the compacted view (before it is attached).
    pub fn set_read_compacted(&self, on: bool) {
        // Relaxed: set before the consumer is shared; attaching it takes the subscription lock,
        // which publishes the value to the dispatcher.
        self.read_compacted.store(on, Ordering::Relaxed);
    }

    /// Whether the consumer reads the compacted view (`readCompacted`).
    #[must_use]
    pub fn reads_compacted(&self) -> bool {
        // Relaxed: written once before attachment (see `set_read_compacted`).
        self.read_compacted.load(Ordering::Relaxed)
    }

    /// Unacknowledged messages.
    #[must_use]
    pub fn unacked(&self) -> i64 {
        // Relaxed: a gauge; the dispatcher re-checks on each pass.
        self.unacked.load(Ordering::Relaxed)
    }

    /// Whether dispatch to it is blocked by the unacked limit.
    #[must_use]
    pub fn is_blocked(&self) -> bool {
        // Relaxed: a hint re-evaluated on every dispatch pass.
        self.blocked.load(Ordering::Relaxed)
    }

    /// Whether it can take a message now.
    #[must_use]
    pub fn can_take(&self) -> bool {
        self.permits.get() > 0 && !self.is_blocked() && !self.is_closed() && self.is_writable()
    }

    /// Whether its connection can take more messages now.
    #[must_use]
    pub fn is_writable(&self) -> bool {
        self.sink.is_writable()
    }

    /// Whether it was detached.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        // Acquire: pairs with the Release in `close`, so a closed consumer is seen as such.
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) fn close(&self) {
        // Release: see `is_closed`.
        self.closed.store(true, Ordering::Release);
    }

    /// Sends a non-message event.
    pub fn notify(&self, event: ConsumerEvent) -> bool {
        self.sink.send(event)
    }

    /// Tells the consumer its terminated topic has nothing more for it (once).
    pub(crate) fn reached_end_of_topic(&self) {
        // Relaxed: the swap alone decides who sends; no other memory depends on it.
        if !self.reached_end.swap(true, Ordering::Relaxed) {
            self.notify(ConsumerEvent::ReachedEndOfTopic {
                consumer_id: self.id,
            });
        }
    }

    /// Delivers one entry: charges permits, records it as pending. False if the connection is gone.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deliver(
        &self,
        position: Position,
        messages: u32,
        partition: i32,
        redelivery_count: u32,
        ack_set: Option<Vec<i64>>,
        data: Bytes,
        unacked_limit: u32,
    ) -> bool {
        if self.is_closed() {
            return false;
        }
        let len = data.len() as u64;
        let sent = self.sink.send(ConsumerEvent::Message {
            consumer_id: self.id,
            position,
            partition,
            redelivery_count,
            ack_set,
            data,
        });
        if !sent {
            // The connection is gone; until it detaches us, take nothing more (a dispatcher
            // retrying a dead sink would spin).
            self.close();
            return false;
        }
        self.permits.charge(i64::from(messages));
        self.out.record(u64::from(messages), len);
        // Relaxed: statistics read by the admin API; nothing is published through them.
        self.entries_out.fetch_add(1, Ordering::Relaxed);
        self.last_consumed_ms
            .store(self.clock.now_ms(), Ordering::Relaxed);
        if redelivery_count > 0 {
            self.redelivered.record(u64::from(messages), len);
        }
        if self.pending.lock().insert(position, messages).is_none() {
            // Relaxed: a gauge (see `unacked`).
            let now = self
                .unacked
                .fetch_add(i64::from(messages), Ordering::Relaxed)
                + i64::from(messages);
            if unacked_limit > 0 && now >= i64::from(unacked_limit) {
                self.blocked.store(true, Ordering::Relaxed);
            }
        }
        true
    }

    /// Drops `position` from the pending acks; returns its message count if it was pending.
    pub(crate) fn settle(&self, position: Position, unacked_limit: u32) -> Option<u32> {
        let n = self.pending.lock().remove(&position)?;
        self.after_settle(i64::from(n), unacked_limit);
        Some(n)
    }

    /// The message count of a pending (delivered, unacknowledged) entry.
    #[must_use]
    pub fn pending_messages(&self, position: Position) -> Option<u32> {
        self.pending.lock().get(&position).copied()
    }

    /// The first `max` pending entries with their message counts, in position order.
    #[must_use]
    pub fn pending_entries(&self, max: usize) -> Vec<(Position, u32)> {
        self.pending
            .lock()
            .iter()
            .take(max)
            .map(|(&p, &n)| (p, n))
            .collect()
    }

    /// Pending entries.
    #[must_use]
    pub fn pending_len(&self) -> usize {
        self.pending.lock().len()
    }

    /// Drops every pending position at or before `upto` (cumulative ack).
    pub(crate) fn settle_upto(&self, upto: Position, unacked_limit: u32) {
        // Everything after `upto` stays: one split, not a removal per acknowledged entry.
        let after = Position::new(upto.ledger_id, upto.entry_id.saturating_add(1));
        let mut pending = self.pending.lock();
        let rest = pending.split_off(&after);
        let covered = std::mem::replace(&mut *pending, rest);
        drop(pending);
        let total: i64 = covered.values().copied().map(i64::from).sum();
        self.after_settle(total, unacked_limit);
    }

    fn after_settle(&self, n: i64, unacked_limit: u32) {
        // Relaxed: gauges; see `unacked` and `is_blocked`.
        let now = self.unacked.fetch_sub(n, Ordering::Relaxed) - n;
        self.acks.record(u64::try_from(n).unwrap_or(0), 0);
        // Relaxed: a statistic for the admin API.
        self.last_acked_ms
            .store(self.clock.now_ms(), Ordering::Relaxed);
        if self.is_blocked() && now <= i64::from(unacked_limit / 2) {
            self.blocked.store(false, Ordering::Relaxed);
        }
    }

    /// Takes the pending acks (some or all) for redelivery; returns the positions. Unblocks the
    /// consumer if that brings it to half of `unacked_limit` (0 = no limit).
    pub(crate) fn take_pending(
        &self,
        only: Option<&[Position]>,
        unacked_limit: u32,
    ) -> Vec<Position> {
        let mut pending = self.pending.lock();
        let taken: Vec<(Position, u32)> = match only {
            Some(ids) => ids
                .iter()
                .filter_map(|p| pending.remove(p).map(|n| (*p, n)))
                .collect(),
            None => std::mem::take(&mut *pending).into_iter().collect(),
        };
        drop(pending);
        let n: i64 = taken.iter().map(|(_, n)| i64::from(*n)).sum();
        // Relaxed: a gauge; see `unacked` and `is_blocked`.
        let now = self.unacked.fetch_sub(n, Ordering::Relaxed) - n;
        if unacked_limit == 0 || now <= i64::from(unacked_limit / 2) {
            self.blocked.store(false, Ordering::Relaxed);
        }
        taken.into_iter().map(|(p, _)| p).collect()
    }

    /// Pending positions (for stats and tests).
    #[must_use]
    pub fn pending_positions(&self) -> Vec<Position> {
        self.pending.lock().keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Open;
    impl ConsumerSink for Open {
        fn send(&self, _: ConsumerEvent) -> bool {
            true
        }
    }

    #[test]
    fn a_cumulative_ack_settles_exactly_what_is_at_or_before_it() {
        let c = Consumer::new(
            1,
            "c".into(),
            0,
            SubType::Exclusive,
            String::new(),
            Arc::new(Open),
            Arc::new(pulsar_rs_clock::SystemClock),
        );
        let at = |l, e| Position::new(l, e);
        for (pos, n) in [(at(3, 7), 2), (at(3, 8), 1), (at(4, 0), 5), (at(4, 1), 1)] {
            assert!(c.deliver(pos, n, -1, 0, None, Bytes::new(), 0));
        }
        assert_eq!(c.unacked(), 9);
        c.settle_upto(at(3, 8), 0);
        assert_eq!(c.pending_positions(), vec![at(4, 0), at(4, 1)]);
        assert_eq!(c.unacked(), 6);
        // An ack past the last entry of a ledger covers that ledger only up to it.
        c.settle_upto(at(3, i64::MAX), 0);
        assert_eq!(c.unacked(), 6);
        c.settle_upto(at(4, 0), 0);
        assert_eq!(c.pending_positions(), vec![at(4, 1)]);
        assert_eq!(c.unacked(), 1);
    }
}
