//! The single-active-consumer dispatcher of Exclusive and Failover subscriptions (Pulsar's
//! `PersistentDispatcherSingleActiveConsumer`, seed 004).
//!
//! The active consumer is picked from the top-priority group of the sorted consumers by
//! [`pick_active`]. When it changes the others' pending messages are dropped and the cursor
//! rewinds to mark-delete so the new active one receives everything not acknowledged. On a
//! Failover subscription with `activeConsumerFailoverDelayTimeMillis` > 0 that happens when the
//! delay is over, the first consumer's included, and only then is every consumer told who is
//! active, as Pulsar's `scheduleReadOnActiveConsumer` does it: the previous one can acknowledge
//! what it is processing, and a client hears about a consumer after it has registered it (the
//! Go client drops a notice for a consumer whose subscribe it has not finished). On Exclusive,
//! or without a delay, every consumer is told at once. A newcomer that does not change the
//! active consumer is told at once that it is not active. Nothing is replayed: what the active
//! consumer cannot take is read again from the cursor.

use std::sync::Arc;

use pulsar_rs_ledger::Entry;

use super::consumers::ConsumerList;
use super::entry::entry_info;
use super::env::{Env, Outcome};
use super::failover::pick_active;
use crate::consumer::{Consumer, ConsumerEvent};

/// What the active consumer is picked from, besides the consumers.
pub(crate) struct FailoverSettings<'a> {
    /// Topic name (the failover ring hashes it).
    pub(crate) topic: &'a str,
    /// Partition index, -1 if not partitioned.
    pub(crate) partition: i32,
    /// `activeConsumerFailoverConsistentHashing`.
    pub(crate) consistent: bool,
    /// `activeConsumerFailoverDelayTimeMillis`.
    pub(crate) delay_ms: u64,
    /// A Failover subscription (the delay and the active-consumer notices are Failover's
    /// only, as in Pulsar).
    pub(crate) failover: bool,
}

/// Routing state of an Exclusive/Failover subscription; guarded by the subscription's state lock.
#[derive(Default)]
pub(crate) struct SingleActiveConsumer {
    /// Handle of the consumer receiving messages.
    active: Option<u64>,
    /// Failover: the active consumer changed; rewind and dispatch to it only from this time
    /// (ms on the subscription's clock).
    hold_until_ms: Option<u64>,
}

impl SingleActiveConsumer {
    /// Whether a Failover change is in its delay (nothing goes out meanwhile).
    pub(crate) fn is_holding(&self) -> bool {
        self.hold_until_ms.is_some()
    }

    /// The handle of the active consumer, if any.
    pub(crate) fn active_handle(&self) -> Option<u64> {
        self.active
    }

    /// Until when a Failover change is held (ms on the subscription's clock), if it is.
    pub(crate) fn hold_until_ms(&self) -> Option<u64> {
        self.hold_until_ms
    }

    /// Forgets the active consumer and any delay (all consumers were disconnected).
    pub(crate) fn reset(&mut self) {
        self.active = None;
        self.hold_until_ms = None;
    }

    /// Recomputes the active consumer after consumers joined or left (`first`: the subscription
    /// had none before; `newcomer`: the consumer that just joined). Returns whether the cursor
    /// must rewind now.
    pub(crate) fn update(
        &mut self,
        consumers: &ConsumerList,
        settings: &FailoverSettings<'_>,
        now_ms: u64,
        first: bool,
        newcomer: Option<u64>,
    ) -> bool {
        let all = consumers.all();
        let new = all.first().and_then(|head| {
            let top = head.priority_level;
            let group: Vec<&Arc<Consumer>> =
                all.iter().take_while(|c| c.priority_level == top).collect();
            let names: Vec<&str> = group.iter().map(|c| c.name.as_str()).collect();
            pick_active(
                &names,
                settings.topic,
                settings.partition,
                settings.consistent,
            )
            .map(|i| group[i].handle)
        });
        let changed = new != self.active;
        self.active = new;
        let delayed = changed && settings.failover && settings.delay_ms > 0 && new.is_some();
        // Only a Failover subscription's consumers hear who is active (Pulsar's
        // `notifyActiveConsumerChanged`); an Exclusive one's single consumer is never told.
        for c in all.iter().filter(|_| settings.failover) {
            let told = if changed {
                !delayed
            } else {
                newcomer == Some(c.handle)
            };
            if told {
                c.notify(ConsumerEvent::ActiveConsumerChange {
                    consumer_id: c.id,
                    active: Some(c.handle) == new,
                });
            }
        }
        if !changed {
            return false;
        }
        // Messages the previous active consumer has not acknowledged go to the new one.
        for c in all {
            if Some(c.handle) != new {
                c.take_pending(None, 0);
            }
        }
        if delayed {
            // A change during a delay keeps the delay running (Pulsar keeps its one task).
            self.hold_until_ms
                .get_or_insert(now_ms.saturating_add(settings.delay_ms));
            false
        } else {
            self.hold_until_ms = None;
            !first
        }
    }

    /// Ends a Failover delay that is over, telling every consumer who is active.
    /// `Err(until_ms)` while it lasts; `Ok(true)` when it just ended (the cursor must rewind:
    /// the new active consumer gets all unacknowledged).
    pub(crate) fn check_hold(
        &mut self,
        consumers: &ConsumerList,
        now_ms: u64,
    ) -> Result<bool, u64> {
        match self.hold_until_ms {
            Some(until) if now_ms < until => Err(until),
            Some(_) => {
                self.hold_until_ms = None;
                for c in consumers.all() {
                    c.notify(ConsumerEvent::ActiveConsumerChange {
                        consumer_id: c.id,
                        active: Some(c.handle) == self.active,
                    });
                }
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The active consumer.
    pub(crate) fn target(&self, consumers: &ConsumerList) -> Option<Arc<Consumer>> {
        self.active
            .and_then(|a| consumers.by_handle(a))
            .map(Arc::clone)
    }

    /// Permits of the active consumer, 0 if it cannot take messages now.
    pub(crate) fn permits(&self, consumers: &ConsumerList) -> i64 {
        self.active
            .and_then(|a| consumers.by_handle(a))
            .filter(|c| !c.is_closed() && c.is_writable())
            .map_or(0, |c| c.permits.get())
    }

    /// Sends entries to `target` (the active consumer, taken under the lock; called without it).
    /// Stops at the first entry it cannot take and moves the cursor's read position back to it.
    pub(crate) fn dispatch(
        target: Option<&Arc<Consumer>>,
        env: &Env<'_>,
        entries: Vec<Entry>,
    ) -> Outcome {
        let mut out = Outcome::default();
        for entry in entries {
            if env.cursor.is_acked(entry.position) {
                continue;
            }
            let info = entry_info(&entry.data);
            let pos = entry.position;
            let len = entry.data.len() as u64;
            let sent = target.is_some_and(|c| env.deliver(c, pos, &info, 0, entry.data));
            if !sent {
                // Read it again when a consumer can take it.
                env.cursor.seek_read_position(pos);
                break;
            }
            out.record(info.messages, len);
        }
        out
    }
}
