//! The sticky-key dispatcher of Key_Shared subscriptions (Pulsar's
//! `PersistentStickyKeyDispatcherMultipleConsumers`): an entry goes to the owner of its key's
//! slot ([`Selector`]), and — unless the consumers allow out-of-order delivery — only when no
//! older entry of that slot waits in the replay set and no other consumer still holds
//! unacknowledged entries of it ([`Draining`], PIP-379). A replacement consumer therefore gets
//! the new entries of a replayed key right after the replayed ones, without waiting for their
//! acknowledgement.

use std::collections::{HashMap, HashSet};

use pulsar_rs_ledger::{Entry, Position};

use super::consumers::ConsumerList;
use super::entry::entry_info;
use super::env::{Env, Outcome};
use super::key_shared::{check_compatible, Draining, KeySharedMeta, Selector};
use super::replay::ReplaySet;
use crate::config::BrokerConfig;
use crate::consumer::Consumer;
use crate::error::BrokerError;

/// Why the entries of one hash wait in the replay set (a subscription's diagnosis).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyWait {
    /// The hash (slot) of their key.
    pub(crate) slot: u16,
    /// The oldest of them.
    pub(crate) position: Position,
    /// How many wait.
    pub(crate) waiting: u32,
    /// The consumer owning the hash now (its handle), if any.
    pub(crate) owner: Option<u64>,
    /// Another consumer still holding unacknowledged entries of the hash (its handle and the
    /// oldest of them), when order is kept: the owner gets the hash once they are acknowledged.
    pub(crate) holder: Option<(u64, Position)>,
}

/// Routing state of a Key_Shared subscription; guarded by the subscription's state lock.
pub(crate) struct StickyKeyConsumers {
    /// Slot → owner.
    selector: Selector,
    /// Slot → consumer holding unacknowledged entries of it.
    draining: Draining,
    /// From the first consumer's `KeySharedMeta`.
    allow_out_of_order: bool,
    /// Entries to deliver before reading new ones, with their slots.
    pub(crate) replay: ReplaySet,
}

impl StickyKeyConsumers {
    /// The dispatcher set up by the first consumer's settings.
    pub(crate) fn new(meta: &KeySharedMeta, config: &BrokerConfig) -> Self {
        StickyKeyConsumers {
            selector: Selector::new(
                meta.mode,
                config.subscription_key_shared_use_consistent_hashing,
                config.subscription_key_shared_consistent_hashing_replica_points,
            ),
            draining: Draining::default(),
            allow_out_of_order: meta.allow_out_of_order_delivery,
            replay: ReplaySet::default(),
        }
    }

    /// Gives a joining consumer its slots.
    ///
    /// # Errors
    /// See [`Selector::add`].
    pub(crate) fn add(
        &mut self,
        consumer: &Consumer,
        meta: &KeySharedMeta,
    ) -> Result<(), BrokerError> {
        let active = KeySharedMeta {
            mode: self.selector.mode(),
            ranges: Vec::new(),
            allow_out_of_order_delivery: self.allow_out_of_order,
        };
        check_compatible(&active, meta)?;
        self.selector.add(consumer.handle, &consumer.name, meta)
    }

    /// Takes a leaving consumer's slots away.
    pub(crate) fn remove(&mut self, handle: u64) {
        self.selector.remove(handle);
    }

    /// The inclusive slot ranges owned by a consumer.
    pub(crate) fn ranges_of(&self, handle: u64) -> Vec<(u32, u32)> {
        self.selector.ranges_of(handle)
    }

    /// Forgets which consumers hold which slots (the subscription restarts from mark-delete).
    pub(crate) fn clear_draining(&mut self) {
        self.draining.clear();
    }

    /// A delivered entry was acknowledged or taken back: its slot, and whether that freed it.
    pub(crate) fn release(&mut self, position: Position) -> Option<(u16, bool)> {
        self.draining.release(position)
    }

    /// The hashes whose entries wait in the replay set, oldest first (at most `max` of them,
    /// each with all its waiting entries counted), with their owner and any other holder; and
    /// how many hashes wait in all.
    pub(crate) fn waiting_keys(&self, max: usize) -> (Vec<KeyWait>, usize) {
        let mut out: Vec<KeyWait> = Vec::new();
        let mut index: HashMap<u16, usize> = HashMap::new();
        let mut others: HashSet<u16> = HashSet::new();
        for (position, slot) in self.replay.iter() {
            let Some(slot) = slot else { continue };
            if let Some(&i) = index.get(&slot) {
                out[i].waiting += 1;
                continue;
            }
            if out.len() >= max {
                others.insert(slot);
                continue;
            }
            let owner = self.selector.owner(slot);
            let holder = if self.allow_out_of_order {
                None
            } else {
                self.draining
                    .holder(slot)
                    .filter(|&h| Some(h) != owner)
                    .map(|h| (h, self.draining.oldest_pending_of(slot).unwrap_or(position)))
            };
            index.insert(slot, out.len());
            out.push(KeyWait {
                slot,
                position,
                waiting: 1,
                owner,
                holder,
            });
        }
        let total = out.len() + others.len();
        (out, total)
    }

    /// Takes up to `n` replay positions whose slot's owner can take them now, in order.
    pub(crate) fn take_ready(
        &mut self,
        n: usize,
        consumers: &ConsumerList,
    ) -> Vec<(Position, Option<u16>)> {
        let Self {
            selector,
            draining,
            allow_out_of_order,
            replay,
        } = self;
        replay.take_ready(n, |slot| {
            let Some(owner) = selector.owner(slot) else {
                return false;
            };
            consumers.by_handle(owner).is_some_and(|c| c.can_take())
                && (*allow_out_of_order || draining.holder(slot).is_none_or(|h| h == owner))
        })
    }

    /// The consumer an entry of `slot` goes to now, if any. `blocked`: slots of which a replayed
    /// entry was put back in this pass.
    fn route(
        &self,
        slot: u16,
        replayed: bool,
        blocked: &HashSet<u16>,
        consumers: &ConsumerList,
    ) -> Option<std::sync::Arc<Consumer>> {
        let owner = self.selector.owner(slot)?;
        if !self.allow_out_of_order {
            // Order: a key with older entries waiting, or still held by another consumer
            // (draining), waits too.
            let waiting = if replayed {
                blocked.contains(&slot)
            } else {
                self.replay.has_slot(slot)
            };
            if waiting || self.draining.holder(slot).is_some_and(|h| h != owner) {
                return None;
            }
        }
        consumers.by_handle(owner).filter(|c| c.can_take()).cloned()
    }

    /// Hands entries to the owners of their keys; `replayed` entries carry their redelivery count.
    pub(crate) fn dispatch(
        &mut self,
        consumers: &ConsumerList,
        env: &Env<'_>,
        entries: Vec<Entry>,
        replayed: bool,
    ) -> Outcome {
        let mut out = Outcome::default();
        let mut blocked: HashSet<u16> = HashSet::new();
        for entry in entries {
            let pos = entry.position;
            if env.cursor.is_acked(pos) {
                continue;
            }
            let info = entry_info(&entry.data);
            if env.defer(pos, &info) {
                continue;
            }
            let slot = self.selector.slot_of(info.key.as_deref());
            let target = self.route(slot, replayed, &blocked, consumers);
            let len = entry.data.len() as u64;
            let count = env.redelivery_count(pos, replayed);
            match target {
                Some(c) if env.deliver(&c, pos, &info, count, entry.data) => {
                    out.record(info.messages, len);
                    self.draining.delivered(pos, slot, c.handle);
                }
                _ => {
                    self.replay.insert(pos, Some(slot));
                    out.requeued += 1;
                    if replayed {
                        blocked.insert(slot);
                    }
                }
            }
        }
        out
    }
}
