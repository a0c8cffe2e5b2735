//! "Why is this subscription not delivering?": what holds each consumer and the subscription back
//! at this moment, read from the same state the dispatch pass (`pass.rs`) decides on: consumers
//! without permits, unacked-message limits, a connection that cannot take more, a Failover change
//! in its delay, Key_Shared hashes waiting for their owner or held by the consumer that had them
//! (PIP-379's draining hashes), the Key_Shared look-ahead, delayed messages not yet due, an open
//! transaction's max read position, acks held by open transactions, and dispatch rate limits.
//!
//! Apache Pulsar 4.0 announced such an API and has not shipped it; the names here are Pulsar's
//! (its settings and stats fields). The admin call (`.../subscription/{sub}/diagnosis`) adds
//! what needs an entry read: the oldest unacknowledged message's publish time and the keys of
//! the waiting hashes.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use pulsar_rs_ledger::Position;
use serde::Serialize;

use super::Subscription;
use crate::consumer::Consumer;
use crate::dispatch::sticky_key::KeyWait;
use crate::dispatch::Dispatcher;

/// At most this many waiting Key_Shared hashes are named (the others are counted).
pub const MAX_KEYS_NAMED: usize = 20;

/// One thing holding delivery back, as the admin call names it (`reason`, then its fields).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "reason",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub enum Blocker {
    /// Messages wait and no consumer is connected.
    NoConsumers,
    /// A consumer has no permits: its client's receiver queue is full (the application has not
    /// taken messages from it) or the client has not sent FLOW yet.
    NoPermits {
        /// Consumer name.
        consumer: String,
    },
    /// A consumer's connection cannot take more now (its client does not read its socket).
    NotWritable {
        /// Consumer name.
        consumer: String,
    },
    /// A consumer reached `maxUnackedMessagesPerConsumer` (resumes at half).
    ConsumerUnackedLimit {
        /// Consumer name.
        consumer: String,
        /// Its unacknowledged messages.
        unacked_messages: i64,
        /// The limit in force.
        limit: u32,
    },
    /// The subscription reached `maxUnackedMessagesPerSubscription` (resumes at half).
    SubscriptionUnackedLimit {
        /// Unacknowledged messages across its consumers.
        unacked_messages: i64,
        /// The limit in force.
        limit: u32,
    },
    /// Failover: the active consumer changed; it gets messages after
    /// `activeConsumerFailoverDelayTimeMillis`.
    FailoverDelay {
        /// The new active consumer.
        consumer: String,
        /// When its delay ends (ms since the epoch).
        until: u64,
    },
    /// Key_Shared: messages of a hash wait and no consumer's ranges cover it (Sticky mode).
    NoConsumerForKey {
        /// The hash.
        hash: u16,
        /// The oldest waiting message of it.
        message_id: String,
        /// How many of its messages wait.
        waiting: u32,
    },
    /// Key_Shared: the hash's owner cannot take messages now (see its own blockers).
    KeyOwnerCannotTake {
        /// The hash.
        hash: u16,
        /// The oldest waiting message of it.
        message_id: String,
        /// How many of its messages wait.
        waiting: u32,
        /// The consumer owning the hash.
        owner: String,
    },
    /// Key_Shared (PIP-379 draining hash): the hash moved to `owner`, but `holder` still has
    /// unacknowledged messages of it; `owner` gets the hash's messages once they are acknowledged
    /// (or `holder` leaves).
    KeyHeldByOtherConsumer {
        /// The hash.
        hash: u16,
        /// The oldest waiting message of it.
        message_id: String,
        /// How many of its messages wait.
        waiting: u32,
        /// The consumer owning the hash now.
        owner: String,
        /// The consumer holding its unacknowledged messages.
        holder: String,
        /// The oldest of those.
        holder_message_id: String,
    },
    /// Key_Shared: the replay set holds as many messages as the look-ahead allows
    /// (`keySharedLookAheadMsgInReplayThresholdPerConsumer` × consumers, at most
    /// `...PerSubscription`): no new message is read until some leave it.
    LookAheadLimit {
        /// Messages waiting in the replay set.
        messages_in_replay: usize,
        /// The limit.
        limit: usize,
    },
    /// Delayed messages not due yet.
    DelayedDelivery {
        /// How many are held.
        messages: usize,
        /// When the next is due (ms since the epoch).
        next_delivery_at: i64,
    },
    /// An open transaction: dispatch stops before its first message (the max read position)
    /// until it commits or aborts.
    OpenTransaction {
        /// The transaction (`(most,least)`).
        transaction: String,
        /// Its first message on the topic.
        message_id: String,
        /// The last message dispatch may read.
        max_read_position: String,
    },
    /// Messages acknowledged in open transactions: neither redelivered nor removed until the
    /// transactions end (they hold the mark-delete position back).
    PendingTransactionAcks {
        /// Transactions holding acks.
        transactions: usize,
    },
    /// A dispatch rate limit has no tokens left now (`dispatchRate` of the topic, or
    /// `subscriptionDispatchRate`).
    DispatchRateLimit {
        /// `topic` or `subscription`.
        scope: &'static str,
        /// Messages per second (0: not limited).
        dispatch_throttling_rate_in_msg: f64,
        /// Bytes per second (0: not limited).
        dispatch_throttling_rate_in_byte: f64,
        /// How long until the next message may go.
        wait_ms: u64,
    },
}

/// A consumer as the diagnosis sees it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerState {
    /// Its name.
    pub consumer_name: String,
    /// FLOW permits left.
    pub available_permits: i64,
    /// Delivered, not acknowledged.
    pub unacked_messages: i64,
    /// Held by `maxUnackedMessagesPerConsumer`.
    pub blocked_consumer_on_unacked_msgs: bool,
    /// Whether its connection can take more now.
    pub writable: bool,
    /// Exclusive/Failover: whether it is the active consumer (absent for Shared/Key_Shared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
}

/// What holds a subscription's delivery back now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// Subscription type (absent before a consumer attached).
    #[serde(rename = "type")]
    pub sub_type: Option<&'static str>,
    /// Messages not acknowledged yet (Pulsar's `msgBacklog` counts entries the same way).
    pub msg_backlog: u64,
    /// Whether anything waits to be delivered (beyond the read position, or to be replayed or
    /// delayed): when false, everything was delivered and the blockers below can only be held
    /// acks.
    pub waiting_for_delivery: bool,
    /// The mark-delete position.
    pub mark_delete_position: String,
    /// The read position.
    pub read_position: String,
    /// The oldest unacknowledged message, if any.
    #[serde(skip)]
    pub oldest_unacked: Option<Position>,
    /// Messages waiting to be delivered again (redeliveries, Key_Shared entries waiting for
    /// their hash).
    pub messages_in_replay: usize,
    /// Key_Shared hashes waiting, beyond the ones named in `blockers`.
    pub waiting_hashes_not_named: usize,
    /// The consumers.
    pub consumers: Vec<ConsumerState>,
    /// What holds delivery back, most basic first; empty when nothing does.
    pub blockers: Vec<Blocker>,
}

/// An unacknowledged message (entry) of a subscription.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnackedEntry {
    /// `ledger:entry`.
    pub message_id: String,
    /// Messages in the entry (a batch holds several).
    pub messages: u32,
    /// Times it was queued for redelivery.
    pub redelivery_count: u32,
}

/// One consumer's delivered, unacknowledged entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerUnacked {
    /// Its name.
    pub consumer_name: String,
    /// Its unacknowledged entries, oldest first.
    pub entries: Vec<UnackedEntry>,
}

/// The unacknowledged messages of a subscription: delivered to each consumer and not
/// acknowledged, and waiting to be delivered again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unacked {
    /// Each consumer's delivered, unacknowledged entries (oldest first).
    pub consumers: Vec<ConsumerUnacked>,
    /// Entries waiting in the replay set (redeliveries, Key_Shared entries waiting for their
    /// hash), oldest first.
    pub waiting_for_redelivery: Vec<UnackedEntry>,
    /// Whether `limit` cut any list.
    pub truncated: bool,
}

/// What the diagnosis reads under the subscription's lock.
struct Locked {
    consumers: Vec<Arc<Consumer>>,
    sub_type: Option<&'static str>,
    /// Exclusive/Failover: (active consumer, held until).
    single: Option<(Option<u64>, Option<u64>)>,
    key_shared: bool,
    keys: Vec<KeyWait>,
    /// Key_Shared hashes waiting in all.
    hashes: usize,
    replay: usize,
}

impl Subscription {
    /// What holds this subscription's delivery back now.
    #[must_use]
    pub fn diagnose(&self) -> Diagnosis {
        let locked = self.read_locked();
        let delayed = {
            let d = self.delayed.lock();
            (d.len(), d.next_at())
        };
        let unacked: i64 = locked.consumers.iter().map(|c| c.unacked()).sum();
        let waiting = self.cursor.has_more_entries() || locked.replay > 0 || delayed.0 > 0;
        let name_of = |handle: u64| {
            locked
                .consumers
                .iter()
                .find(|c| c.handle == handle)
                .map_or_else(|| format!("#{handle}"), |c| c.name.clone())
        };
        let mut blockers = Vec::new();
        if waiting {
            self.consumer_blockers(&locked, unacked, &mut blockers);
            key_blockers(&locked, &name_of, &mut blockers);
            if locked.key_shared {
                let limit = self.key_shared_look_ahead(locked.consumers.len());
                if locked.replay >= limit {
                    blockers.push(Blocker::LookAheadLimit {
                        messages_in_replay: locked.replay,
                        limit,
                    });
                }
            }
            if let (n, Some(at)) = delayed {
                blockers.push(Blocker::DelayedDelivery {
                    messages: n,
                    next_delivery_at: at,
                });
            }
            self.rate_blockers(&mut blockers);
        }
        if let Some((txn, at)) = self.txn_buffer.get().and_then(|tb| tb.oldest_ongoing()) {
            blockers.push(Blocker::OpenTransaction {
                transaction: txn.to_string(),
                message_id: at.to_string(),
                max_read_position: self.max_read_position().to_string(),
            });
        }
        let transactions = self.pending_acks.transactions();
        if transactions > 0 {
            blockers.push(Blocker::PendingTransactionAcks { transactions });
        }
        Diagnosis {
            sub_type: locked.sub_type,
            msg_backlog: self.cursor.backlog(),
            waiting_for_delivery: waiting,
            mark_delete_position: self.cursor.mark_delete_position().to_string(),
            read_position: self.cursor.read_position().to_string(),
            oldest_unacked: self.cursor.nth_unacked_position(1),
            messages_in_replay: locked.replay,
            waiting_hashes_not_named: locked.hashes.saturating_sub(locked.keys.len()),
            consumers: consumer_states(&locked),
            blockers,
        }
    }

    /// Up to `limit` unacknowledged entries per consumer and of the replay set, with their
    /// redelivery counts (Pulsar 4.0's announced "unacknowledged message details").
    #[must_use]
    pub fn unacked(&self, limit: usize) -> Unacked {
        let (consumers, replay) = {
            let st = self.state.lock();
            let replay: Vec<(Position, usize)> = st
                .dispatcher
                .as_ref()
                .and_then(Dispatcher::replay)
                .map(|r| {
                    let len = r.len();
                    r.iter().take(limit).map(|(p, _)| (p, len)).collect()
                })
                .unwrap_or_default();
            (st.consumers.all().to_vec(), replay)
        };
        let mut truncated = replay.first().is_some_and(|&(_, len)| len > limit);
        let pending: Vec<(String, Vec<(Position, u32)>)> = consumers
            .iter()
            .map(|c| {
                truncated |= c.pending_len() > limit;
                (c.name.clone(), c.pending_entries(limit))
            })
            .collect();
        // Taken alone (after the consumers' own locks were released): see the lock order.
        let counts = self.redeliveries.lock();
        let entry = |p: Position, messages: u32| UnackedEntry {
            message_id: p.to_string(),
            messages,
            redelivery_count: counts.get(&p).copied().unwrap_or(0),
        };
        Unacked {
            consumers: pending
                .into_iter()
                .map(|(consumer_name, entries)| ConsumerUnacked {
                    consumer_name,
                    entries: entries.into_iter().map(|(p, n)| entry(p, n)).collect(),
                })
                .collect(),
            waiting_for_redelivery: replay.into_iter().map(|(p, _)| entry(p, 1)).collect(),
            truncated,
        }
    }

    /// The state read under the lock (released before anything else is read).
    fn read_locked(&self) -> Locked {
        let st = self.state.lock();
        let (single, (keys, hashes), key_shared) = match &st.dispatcher {
            Some(Dispatcher::SingleActive(s)) => (
                Some((s.active_handle(), s.hold_until_ms())),
                (Vec::new(), 0),
                false,
            ),
            Some(Dispatcher::StickyKey(k)) => (None, k.waiting_keys(MAX_KEYS_NAMED), true),
            _ => (None, (Vec::new(), 0), false),
        };
        Locked {
            consumers: st.consumers.all().to_vec(),
            sub_type: st.sub_type.map(crate::consumer::SubType::as_str),
            single,
            key_shared,
            keys,
            hashes,
            replay: st
                .dispatcher
                .as_ref()
                .and_then(Dispatcher::replay)
                .map_or(0, |r| r.len()),
        }
    }

    /// No consumers; each consumer that dispatch would use and cannot; the Failover delay; the
    /// subscription's unacked limit.
    fn consumer_blockers(&self, locked: &Locked, unacked: i64, out: &mut Vec<Blocker>) {
        if locked.consumers.is_empty() {
            out.push(Blocker::NoConsumers);
            return;
        }
        let now_ms = self.now_ms();
        let consumer_limit = self.unacked_limit();
        for c in &locked.consumers {
            if let Some((active, hold)) = locked.single {
                if active != Some(c.handle) {
                    continue;
                }
                if let Some(until) = hold.filter(|&u| u > now_ms) {
                    out.push(Blocker::FailoverDelay {
                        consumer: c.name.clone(),
                        until,
                    });
                }
            }
            if c.permits.get() <= 0 {
                out.push(Blocker::NoPermits {
                    consumer: c.name.clone(),
                });
            }
            if c.is_blocked() {
                out.push(Blocker::ConsumerUnackedLimit {
                    consumer: c.name.clone(),
                    unacked_messages: c.unacked(),
                    limit: consumer_limit,
                });
            }
            if !c.is_writable() {
                out.push(Blocker::NotWritable {
                    consumer: c.name.clone(),
                });
            }
        }
        let limit = self.subscription_unacked_limit();
        // Relaxed: a gauge written by the dispatcher (see `blocked_on_unacked`).
        let blocked = self.blocked_on_unacked.load(Ordering::Relaxed);
        if locked.single.is_none()
            && self.durable
            && limit > 0
            && (blocked || unacked >= i64::from(limit))
        {
            out.push(Blocker::SubscriptionUnackedLimit {
                unacked_messages: unacked,
                limit,
            });
        }
    }

    /// The dispatch rate limits with no token left now.
    fn rate_blockers(&self, out: &mut Vec<Blocker>) {
        let limiters = self.limiters.lock().clone();
        for (scope, limiter) in [("topic", limiters.0), ("subscription", limiters.1)] {
            let Some(limiter) = limiter else { continue };
            let wait = limiter.wait_time();
            if wait.is_zero() {
                continue;
            }
            let (msgs, bytes) = limiter.rates();
            out.push(Blocker::DispatchRateLimit {
                scope,
                dispatch_throttling_rate_in_msg: msgs,
                dispatch_throttling_rate_in_byte: bytes,
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            });
        }
    }
}

/// Each waiting Key_Shared hash that cannot go now, and why.
fn key_blockers(locked: &Locked, name_of: &dyn Fn(u64) -> String, out: &mut Vec<Blocker>) {
    for k in &locked.keys {
        let message_id = k.position.to_string();
        let Some(owner) = k.owner else {
            out.push(Blocker::NoConsumerForKey {
                hash: k.slot,
                message_id,
                waiting: k.waiting,
            });
            continue;
        };
        if let Some((holder, held)) = k.holder {
            out.push(Blocker::KeyHeldByOtherConsumer {
                hash: k.slot,
                message_id,
                waiting: k.waiting,
                owner: name_of(owner),
                holder: name_of(holder),
                holder_message_id: held.to_string(),
            });
            continue;
        }
        let ready = locked
            .consumers
            .iter()
            .find(|c| c.handle == owner)
            .is_some_and(|c| c.can_take());
        if !ready {
            out.push(Blocker::KeyOwnerCannotTake {
                hash: k.slot,
                message_id,
                waiting: k.waiting,
                owner: name_of(owner),
            });
        }
    }
}

/// The consumers' own state.
fn consumer_states(locked: &Locked) -> Vec<ConsumerState> {
    locked
        .consumers
        .iter()
        .map(|c| ConsumerState {
            consumer_name: c.name.clone(),
            available_permits: c.permits.get(),
            unacked_messages: c.unacked(),
            blocked_consumer_on_unacked_msgs: c.is_blocked(),
            writable: c.is_writable(),
            active: locked.single.map(|(a, _)| a == Some(c.handle)),
        })
        .collect()
}
