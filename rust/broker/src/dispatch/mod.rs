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
//! through an `env::Env`; its dispatch pass decides what to do under the subscription's lock
//! (serve the replay set first, else read from the cursor), its task runs it, and each pass
//! answers with an [`env::Outcome`]. What a dispatcher reads from an entry is in [`entry`].
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
pub mod env;
pub mod failover;
pub mod key_shared;
pub(crate) mod multiple;
pub mod replay;
pub mod round_robin;
pub(crate) mod single_active;
pub(crate) mod sticky_key;

use pulsar_rs_ledger::Position;

use self::key_shared::KeySharedMeta;
use self::multiple::MultipleConsumers;
use self::replay::ReplaySet;
use self::single_active::SingleActiveConsumer;
use self::sticky_key::StickyKeyConsumers;
use crate::config::BrokerConfig;
use crate::consumer::SubType;

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
