//! A non-persistent subscription: its consumers and the routing of one message to one of them
//! (Exclusive/Failover: the active consumer; Shared: round-robin over consumers with permits;
//! Key_Shared: the consumer the key hashes to). No permits: the message is dropped.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use pulsar_rs_ledger::Position;

use crate::consumer::{Consumer, ConsumerEvent, SubType};
use crate::rate::Meter;
use crate::BrokerError;

struct State {
    sub_type: Option<SubType>,
    /// Sorted by (priority, name): the first is Failover's active consumer.
    consumers: Vec<Arc<Consumer>>,
    /// Shared: where the next round-robin turn starts.
    next: usize,
}

/// One subscription of a non-persistent topic.
pub struct NonPersistentSubscription {
    /// Subscription name; immutable.
    pub name: String,
    /// Consumers and routing. Short lock: held while choosing a consumer, not while sending.
    state: Mutex<State>,
    /// Messages dropped for want of permits.
    pub msg_drop: Meter,
}

impl NonPersistentSubscription {
    pub(crate) fn new(name: &str) -> Arc<Self> {
        Arc::new(NonPersistentSubscription {
            name: name.to_owned(),
            state: Mutex::new(State {
                sub_type: None,
                consumers: Vec::new(),
                next: 0,
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
        self.state.lock().consumers.clone()
    }

    /// How many consumers are attached.
    #[must_use]
    pub fn consumer_count(&self) -> usize {
        self.state.lock().consumers.len()
    }

    pub(crate) fn add_consumer(&self, consumer: Arc<Consumer>) -> Result<(), BrokerError> {
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
        st.sub_type = Some(consumer.sub_type);
        st.consumers.push(consumer);
        st.consumers
            .sort_by(|a, b| (a.priority_level, &a.name).cmp(&(b.priority_level, &b.name)));
        Ok(())
    }

    /// Detaches a consumer; returns how many remain.
    pub(crate) fn remove_consumer(&self, consumer: &Consumer) -> usize {
        let mut st = self.state.lock();
        st.consumers.retain(|c| c.handle != consumer.handle);
        st.consumers.len()
    }

    /// Picks the consumer for one message, if it has permits.
    fn pick(&self, key: Option<&[u8]>, partition: i32) -> Option<Arc<Consumer>> {
        let mut st = self.state.lock();
        let n = st.consumers.len();
        if n == 0 {
            return None;
        }
        let chosen = match st.sub_type? {
            SubType::Exclusive => Arc::clone(&st.consumers[0]),
            SubType::Failover => {
                let i = usize::try_from(partition.max(0)).unwrap_or(0) % n;
                Arc::clone(&st.consumers[i])
            }
            SubType::KeyShared => {
                let h = crate::hash::key_hash(key.unwrap_or(b"NONE_KEY"));
                Arc::clone(&st.consumers[h as usize % n])
            }
            SubType::Shared => {
                let start = st.next;
                let found = (0..n)
                    .map(|k| (start + k) % n)
                    .find(|&i| st.consumers[i].can_take());
                let i = found?;
                st.next = (i + 1) % n;
                Arc::clone(&st.consumers[i])
            }
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
