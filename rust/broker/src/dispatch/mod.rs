//! Dispatchers (seed 000): one type per subscription kind, each owning its routing state and,
//! for the multiple-consumers kinds, its replay set:
//! * [`single_active::SingleActiveConsumer`]: Exclusive and Failover (one active consumer);
//! * [`multiple::MultipleConsumers`]: Shared (round-robin by priority level; all chunks of a
//!   chunked message to one consumer, [`chunks`]);
//! * [`sticky_key::StickyKeyConsumers`]: Key_Shared (slot owners, draining hashes).
//!
//! This module is pure routing: consumers and entries in, deliveries out. The subscription (one
//! floor up, which this module never names) keeps the consumers ([`consumers::ConsumerList`]),
//! the cursor, redelivery counts and the delayed tracker, and lends them to its dispatcher
//! through an [`Env`]; its dispatch pass decides what to do under the subscription's lock (serve
//! the replay set first, else read from the cursor), its task runs it, and each pass answers
//! with an [`Outcome`]. What a dispatcher reads from an entry is in [`entry`].
//! The non-persistent subscriptions reuse the same routing pieces ([`round_robin`],
//! [`failover`], [`key_shared`]).
//!
//! Permits are charged in messages (a batch entry holds several). Shared/Key_Shared entries with
//! a future `deliver_at_time` go to the [`delayed`] tracker. What cannot be delivered now goes to
//! the replay set (Shared/Key_Shared) or is read again (Exclusive/Failover).

pub mod chunks;
pub(crate) mod consumers;
pub mod delayed;
pub mod entry;
pub mod failover;
pub mod key_shared;
pub(crate) mod multiple;
pub mod replay;
pub mod round_robin;
pub(crate) mod single_active;
pub(crate) mod sticky_key;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::{Cursor, Position};

use self::delayed::DelayedTracker;
use self::entry::EntryInfo;
use self::key_shared::KeySharedMeta;
use self::multiple::MultipleConsumers;
use self::replay::ReplaySet;
use self::single_active::SingleActiveConsumer;
use self::sticky_key::StickyKeyConsumers;
use crate::config::BrokerConfig;
use crate::consumer::{Consumer, SubType};

/// The dispatcher of a subscription, by kind.
pub(crate) enum Dispatcher {
    /// Exclusive / Failover.
    SingleActive(SingleActiveConsumer),
    /// Shared.
    Multiple(MultipleConsumers),
    /// Key_Shared.
    StickyKey(StickyKeyConsumers),
}

impl Dispatcher {
    /// A fresh dispatcher for type `t`; `meta` and `config` set a Key_Shared one up (the first
    /// consumer's `KeySharedMeta`).
    pub(crate) fn new(t: SubType, meta: &KeySharedMeta, config: &BrokerConfig) -> Self {
        match t {
            SubType::Exclusive | SubType::Failover => {
                Dispatcher::SingleActive(SingleActiveConsumer::default())
            }
            SubType::Shared => Dispatcher::Multiple(MultipleConsumers::default()),
            SubType::KeyShared => Dispatcher::StickyKey(StickyKeyConsumers::new(meta, config)),
        }
    }

    /// Whether this dispatcher serves subscriptions of type `t`.
    pub(crate) fn serves(&self, t: SubType) -> bool {
        matches!(
            (self, t),
            (
                Dispatcher::SingleActive(_),
                SubType::Exclusive | SubType::Failover
            ) | (Dispatcher::Multiple(_), SubType::Shared)
                | (Dispatcher::StickyKey(_), SubType::KeyShared)
        )
    }

    /// The replay set (multiple-consumers kinds only).
    pub(crate) fn replay(&self) -> Option<&ReplaySet> {
        match self {
            Dispatcher::SingleActive(_) => None,
            Dispatcher::Multiple(m) => Some(&m.replay),
            Dispatcher::StickyKey(k) => Some(&k.replay),
        }
    }

    /// The replay set, to change (multiple-consumers kinds only).
    pub(crate) fn replay_mut(&mut self) -> Option<&mut ReplaySet> {
        match self {
            Dispatcher::SingleActive(_) => None,
            Dispatcher::Multiple(m) => Some(&mut m.replay),
            Dispatcher::StickyKey(k) => Some(&mut k.replay),
        }
    }

    /// Consumers joined or left.
    pub(crate) fn consumers_changed(&mut self) {
        if let Dispatcher::Multiple(m) = self {
            m.consumers_changed();
        }
    }

    /// Queues positions taken from a consumer's pending acks for redelivery, releasing their
    /// Key_Shared slots.
    pub(crate) fn queue_replay(&mut self, positions: &[Position]) {
        match self {
            Dispatcher::SingleActive(_) => {}
            Dispatcher::Multiple(m) => {
                for p in positions {
                    m.replay.insert(*p, None);
                }
            }
            Dispatcher::StickyKey(k) => {
                for p in positions {
                    let slot = k.release(*p).map(|(s, _)| s);
                    k.replay.insert(*p, slot);
                }
            }
        }
    }
}

/// What one dispatch pass did.
#[derive(Default, Debug, Clone, Copy)]
pub struct Outcome {
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Entries sent.
    pub entries: usize,
    /// Entries put (back) into the replay set.
    pub requeued: usize,
}

impl Outcome {
    pub(crate) fn record(&mut self, messages: u32, bytes: u64) {
        self.messages += u64::from(messages);
        self.bytes += bytes;
        self.entries += 1;
    }
}

/// What a dispatcher borrows from its subscription for one pass.
pub(crate) struct Env<'a> {
    /// The subscription's cursor (acknowledged entries are skipped, batch ack sets read).
    pub(crate) cursor: &'a Cursor,
    /// Partition index of the topic, -1 if not partitioned.
    pub(crate) partition: i32,
    /// Per-consumer unacked limit in force (0 = none).
    pub(crate) unacked_limit: u32,
    /// `dispatcherMaxRoundRobinBatchSize`.
    pub(crate) rr_chunk: u32,
    /// Redelivery counts (position → times queued), locked by the pass for its duration.
    pub(crate) redeliveries: Option<&'a HashMap<Position, u32>>,
    /// The delayed tracker, when delayed delivery is on, and the due cutoff (ms).
    pub(crate) delayed: Option<(&'a Mutex<DelayedTracker>, i64)>,
}

impl Env<'_> {
    /// Hands an entry with a future `deliver_at_time` to the delayed tracker; true if it took it.
    pub(crate) fn defer(&self, position: Position, info: &EntryInfo) -> bool {
        match (self.delayed, info.deliver_at) {
            (Some((tracker, cutoff)), Some(at)) => tracker.lock().add(position, at, cutoff),
            _ => false,
        }
    }

    /// The redelivery count a (replayed) entry carries.
    pub(crate) fn redelivery_count(&self, position: Position, replayed: bool) -> u32 {
        if !replayed {
            return 0;
        }
        self.redeliveries
            .and_then(|r| r.get(&position).copied())
            .unwrap_or(0)
    }

    /// Delivers one entry to `consumer` (charging its permits); false if it could not take it.
    pub(crate) fn deliver(
        &self,
        consumer: &Arc<Consumer>,
        position: Position,
        info: &EntryInfo,
        redelivery_count: u32,
        data: Bytes,
    ) -> bool {
        // Only a batch of several messages can be partly acknowledged: acknowledging the one
        // message of a batch acknowledges its entry. So the cursor's lock is skipped for the rest.
        let ack_set = (info.messages > 1)
            .then(|| self.cursor.batch_ack_set(position))
            .flatten()
            .map(|w| w.iter().map(|x| *x as i64).collect());
        consumer.deliver(
            position,
            info.messages,
            self.partition,
            redelivery_count,
            ack_set,
            data,
            self.unacked_limit,
        )
    }
}
