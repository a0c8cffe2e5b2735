//! A non-persistent subscription: its consumers and the routing of one message to one of them,
//! with the routing pieces of the persistent dispatchers ([`crate::dispatch`]), as Pulsar's
//! non-persistent dispatchers share theirs with the persistent ones:
//! * Exclusive/Failover: the active consumer of [`pick_active`] (partition index modulo the
//!   top-priority group sorted by name; a non-partitioned topic counts as partition 0, as
//!   Pulsar's `NonPersistentSubscription` does "to pick a predictable consumer");
//! * Shared: [`RoundRobin`] by priority level, one message per turn;
//! * Key_Shared: the owner of the key's slot in a [`Selector`] made from the first consumer's
//!   `KeySharedMeta` and the broker's settings (AUTO_SPLIT or STICKY ranges); a consumer whose
//!   mode or out-of-order setting differs is refused ([`check_compatible`]).
//!
//! No permits: the message is dropped (and counted). Nothing is replayed: there is no storage.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::Position;

use crate::config::BrokerConfig;
use crate::consumer::{Consumer, ConsumerEvent, SubType};
use crate::dispatch::consumers::ConsumerList;
use crate::dispatch::failover::pick_active;
use crate::dispatch::key_shared::{check_compatible, KeySharedMeta, Selector};
use crate::dispatch::round_robin::RoundRobin;
use crate::error::BrokerError;
use crate::rate::Meter;

/// Consumers and routing; guarded by [`NonPersistentSubscription::state`].
struct State {
    /// Type fixed by the first consumer; may change when none is attached.
    sub_type: Option<SubType>,
    /// Sorted by (priority level, name, handle).
    consumers: ConsumerList,
    /// Shared: round-robin position.
    rr: RoundRobin,
    /// Key_Shared: slot owners; made by the first consumer.
    selector: Option<Selector>,
    /// Key_Shared: the first consumer's settings, which every joining consumer must share.
    key_shared: KeySharedMeta,
}

/// One subscription of a non-persistent topic.
pub struct NonPersistentSubscription {
    /// Subscription name; immutable.
    pub name: String,
    /// Topic name (the failover ring hashes it); immutable.
    topic: String,
    /// Consumers and routing: written by the connection (join, leave), read by publishers
    /// choosing a consumer. Short lock: held while choosing, not while sending.
    state: Mutex<State>,
    /// Messages dropped for want of permits.
    pub msg_drop: Meter,
}

impl NonPersistentSubscription {
    pub(crate) fn new(name: &str, topic: &str) -> Arc<Self> {
        Arc::new(NonPersistentSubscription {
            name: name.to_owned(),
            topic: topic.to_owned(),
            state: Mutex::new(State {
                sub_type: None,
                consumers: ConsumerList::default(),
                rr: RoundRobin::default(),
                selector: None,
                key_shared: KeySharedMeta::default(),
            }),
            msg_drop: Meter::default(),
        })
    }

    /// The type of the attached consumers.
    #[must_use]
    pub fn sub_type(&self) -> Option<SubType> {
        self.state.lock().sub_type
    }

    /// Attached consumers.
    #[must_use]
    pub fn consumers(&self) -> Vec<Arc<Consumer>> {
        self.state.lock().consumers.all().to_vec()
    }

    /// How many consumers are attached.
    #[must_use]
    pub fn consumer_count(&self) -> usize {
        self.state.lock().consumers.len()
    }

    pub(crate) fn add_consumer(
        &self,
        consumer: Arc<Consumer>,
        meta: &KeySharedMeta,
        config: &BrokerConfig,
    ) -> Result<(), BrokerError> {
        let mut st = self.state.lock();
        match st.sub_type {
            Some(t) if !st.consumers.is_empty() && t != consumer.sub_type => {
                return Err(BrokerError::ConsumerBusy(
                    "Subscription is of different type".into(),
                ));
            }
            Some(SubType::Exclusive) if !st.consumers.is_empty() => {
                return Err(BrokerError::ConsumerBusy(
                    "Exclusive consumer is already connected".into(),
                ));
            }
            _ => {}
        }
        let empty = st.consumers.is_empty();
        if consumer.sub_type == SubType::KeyShared {
            if empty {
                st.key_shared = meta.clone();
            } else {
                check_compatible(&st.key_shared, meta)?;
            }
            let selector = match &mut st.selector {
                Some(s) if !empty => s,
                other => other.insert(Selector::new(
                    meta.mode,
                    config.subscription_key_shared_use_consistent_hashing,
                    config.subscription_key_shared_consistent_hashing_replica_points,
                )),
            };
            selector.add(consumer.handle, &consumer.name, meta)?;
        }
        st.sub_type = Some(consumer.sub_type);
        st.consumers.add(consumer);
        st.rr.refresh();
        Ok(())
    }

    /// Detaches a consumer; returns how many remain.
    pub(crate) fn remove_consumer(&self, consumer: &Consumer) -> usize {
        let mut st = self.state.lock();
        st.consumers.remove(consumer.handle);
        st.rr.refresh();
        if let Some(s) = st.selector.as_mut() {
            s.remove(consumer.handle);
        }
        st.consumers.len()
    }

    /// Picks the consumer for one message, if it has permits.
    fn pick(&self, key: Option<&[u8]>, partition: i32) -> Option<Arc<Consumer>> {
        let mut st = self.state.lock();
        let State {
            sub_type,
            consumers,
            rr,
            selector,
            ..
        } = &mut *st;
        let all = consumers.all();
        let head = all.first()?;
        let chosen = match (*sub_type)? {
            SubType::Exclusive | SubType::Failover => {
                let group: Vec<&Arc<Consumer>> = all
                    .iter()
                    .take_while(|c| c.priority_level == head.priority_level)
                    .collect();
                let names: Vec<&str> = group.iter().map(|c| c.name.as_str()).collect();
                // A non-partitioned topic counts as partition 0 (Pulsar's non-persistent rule).
                let i = pick_active(&names, &self.topic, partition.max(0), false)?;
                Arc::clone(group[i])
            }
            SubType::KeyShared => {
                let selector = selector.as_ref()?;
                let owner = selector.owner(selector.slot_of(key))?;
                Arc::clone(consumers.by_handle(owner)?)
            }
            // One message per turn, as Pulsar's non-persistent dispatcher.
            SubType::Shared => rr.pick(all, 1)?,
        };
        chosen.can_take().then_some(chosen)
    }

    /// Delivers one entry to one consumer; false (and counted as dropped) when none can take it.
    pub(crate) fn send(
        &self,
        stored: &Bytes,
        messages: u32,
        key: Option<&[u8]>,
        partition: i32,
    ) -> bool {
        let Some(c) = self.pick(key, partition) else {
            self.msg_drop
                .record(u64::from(messages), stored.len() as u64);
            return false;
        };
        // Pulsar's non-persistent entries all carry message id 0:0.
        let sent = c.notify(ConsumerEvent::Message {
            consumer_id: c.id,
            position: Position::new(0, 0),
            partition,
            redelivery_count: 0,
            ack_set: None,
            data: stored.clone(),
        });
        if sent {
            c.permits.charge(i64::from(messages));
            c.out.record(u64::from(messages), stored.len() as u64);
        } else {
            self.msg_drop
                .record(u64::from(messages), stored.len() as u64);
        }
        sent
    }
}
