//! Non-persistent topics (`non-persistent://`), as Pulsar's `NonPersistentTopic`: messages are
//! handed straight to the consumers attached at publish time and never stored. A subscription
//! whose chosen consumer has no permits drops the message and counts it (`msgDropRate`).
//! Acknowledgements, redelivery, seek and skip are accepted and do nothing; the backlog is 0.
//! A geo-replicated one hands each message to its replicators' taps too
//! ([`NonPersistentTopic::set_replication_tap`]), which send it on or drop it.

mod subscription;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

pub use subscription::NonPersistentSubscription;

use crate::config::BrokerConfig;
use crate::consumer::{Consumer, SubType};
use crate::dispatch::key_shared::KeySharedMeta;
use crate::error::BrokerError;
use crate::naming::TopicName;
use crate::rate::Meter;

/// A replicator's tap (the server's `NonPersistentReplicator`): handed each stored entry published
/// on the topic and its message count; it sends it on or drops and counts it, never blocking.
pub type ReplicationTap = Arc<dyn Fn(&Bytes, u32) + Send + Sync>;

/// One (partition of a) non-persistent topic.
pub struct NonPersistentTopic {
    /// Fully qualified name; immutable.
    pub name: TopicName,
    /// Partition index, -1 when not a partition; immutable.
    pub partition: i32,
    /// Subscriptions by name. Short lock; never held while delivering.
    subscriptions: Mutex<HashMap<String, Arc<NonPersistentSubscription>>>,
    /// Producer names → broker-wide handles. Short lock.
    producers: Mutex<HashMap<String, u64>>,
    /// Messages and bytes published.
    pub msg_in: Meter,
    /// Messages dropped for want of permits, over all subscriptions.
    pub msg_drop: Meter,
    /// Pulsar's `lastActive`: set at creation, when a producer leaves and by each
    /// inactive-topic check that finds the topic active (`crate::service::inactive`); ms on the
    /// broker's clock. Relaxed: a lone timestamp, nothing is published with it.
    pub(crate) last_active_ms: std::sync::atomic::AtomicU64,
    /// The broker's clock; immutable.
    clock: Arc<dyn pulsar_rs_clock::Clock>,
    /// The replicators' taps by remote cluster. Written by the server's replication check,
    /// read on each publish. Short lock: the taps are called after it is released.
    replication_taps: Mutex<Vec<(String, ReplicationTap)>>,
}

impl NonPersistentTopic {
    /// An empty topic.
    #[must_use]
    pub fn new(name: TopicName, clock: Arc<dyn pulsar_rs_clock::Clock>) -> Arc<Self> {
        let partition = name
            .partition_index()
            .map_or(-1, |i| i32::try_from(i).unwrap_or(-1));
        Arc::new(NonPersistentTopic {
            name,
            partition,
            subscriptions: Mutex::new(HashMap::new()),
            producers: Mutex::new(HashMap::new()),
            msg_in: Meter::default(),
            msg_drop: Meter::default(),
            last_active_ms: std::sync::atomic::AtomicU64::new(clock.now_ms()),
            clock,
            replication_taps: Mutex::new(Vec::new()),
        })
    }

    /// Registers a producer.
    ///
    /// # Errors
    /// [`BrokerError::ProducerBusy`] if the name is taken.
    pub fn add_producer(&self, name: &str, handle: u64) -> Result<(), BrokerError> {
        let mut p = self.producers.lock();
        if p.contains_key(name) {
            return Err(BrokerError::ProducerBusy(format!(
                "Producer with name '{name}' is already connected to topic"
            )));
        }
        p.insert(name.to_owned(), handle);
        Ok(())
    }

    /// Whether one more producer and, for `consumer_on`, one more consumer of that subscription
    /// fit the topic's count limits (Pulsar applies them to non-persistent topics too; the
    /// subscription count limit is for durable subscriptions only, as in Pulsar).
    ///
    /// # Errors
    /// [`BrokerError::ProducerBusy`] / [`BrokerError::ConsumerBusy`] with Pulsar's messages.
    pub fn admit(
        &self,
        limits: &crate::policies::limits::Limits,
        consumer_on: Option<&str>,
    ) -> Result<(), BrokerError> {
        let Some(sub) = consumer_on else {
            let producers = self.producers.lock().len();
            return limits.admit_producer(&self.name.to_string(), producers, 0);
        };
        let subs = self.subscriptions();
        let on_topic = subs.iter().map(|s| s.consumer_count()).sum();
        let on_sub = subs
            .iter()
            .find(|s| s.name == sub)
            .map_or(0, |s| s.consumer_count());
        limits.admit_consumer(on_topic, 0, on_sub)
    }

    /// Producers and consumers connected (a topic in use is not deleted without `force`).
    #[must_use]
    pub fn usage_count(&self) -> usize {
        // Locks: the producers' table, then each subscription's consumers, one at a time.
        let producers = self.producers.lock().len();
        producers
            + self
                .subscriptions()
                .iter()
                .map(|s| s.consumer_count())
                .sum::<usize>()
    }

    /// Closes the topic (it was unloaded or deleted): each consumer is told `CloseConsumer`
    /// (its client subscribes again, to a new topic of that name), and the producers' handles
    /// are returned for the server to tell them `CloseProducer`. Nothing is stored, so nothing
    /// else remains.
    pub fn close(&self) -> Vec<u64> {
        let subs: Vec<Arc<NonPersistentSubscription>> =
            self.subscriptions.lock().drain().map(|(_, s)| s).collect();
        for c in subs.iter().flat_map(|s| s.consumers()) {
            c.close();
            c.notify(crate::consumer::ConsumerEvent::Closed { consumer_id: c.id });
        }
        self.producers.lock().drain().map(|(_, h)| h).collect()
    }

    /// Unregisters a producer.
    pub fn remove_producer(&self, name: &str, handle: u64) {
        let mut p = self.producers.lock();
        if p.get(name) == Some(&handle) {
            p.remove(name);
            // Pulsar's `handleProducerRemoved`.
            // Relaxed: see the field.
            self.last_active_ms
                .store(self.clock.now_ms(), std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Connected producer names.
    #[must_use]
    pub fn producers(&self) -> Vec<String> {
        self.producers.lock().keys().cloned().collect()
    }

    /// Hands one stored entry (`messages` messages) to every subscription, each delivering it to
    /// one consumer with permits or dropping it.
    pub fn publish(&self, stored: &Bytes, messages: u32) {
        self.msg_in.record(u64::from(messages), stored.len() as u64);
        let key = pulsar_rs_proto::parse_stored_entry(stored)
            .ok()
            .and_then(|(md, _)| {
                md.ordering_key
                    .map(|k| k.to_vec())
                    .or(md.partition_key.map(String::into_bytes))
            });
        for sub in self.subscriptions() {
            if !sub.send(stored, messages, key.as_deref(), self.partition) {
                self.msg_drop
                    .record(u64::from(messages), stored.len() as u64);
            }
        }
        // Lock: a copy of the list (cheap `Arc` clones) so no tap runs under it.
        let taps: Vec<ReplicationTap> = self
            .replication_taps
            .lock()
            .iter()
            .map(|(_, tap)| Arc::clone(tap))
            .collect();
        for tap in taps {
            tap(stored, messages);
        }
    }

    /// Installs the tap of the replicator towards `remote` (replacing an earlier one).
    pub fn set_replication_tap(&self, remote: &str, tap: ReplicationTap) {
        // Lock: see the field.
        let mut taps = self.replication_taps.lock();
        taps.retain(|(r, _)| r != remote);
        taps.push((remote.to_owned(), tap));
    }

    /// Removes the tap towards `remote` if it is still `tap` (a newer replicator's stays).
    pub fn remove_replication_tap(&self, remote: &str, tap: &ReplicationTap) {
        // Lock: see the field.
        self.replication_taps
            .lock()
            .retain(|(r, t)| r != remote || !Arc::ptr_eq(t, tap));
    }

    /// The remote clusters whose replicators tap this topic, sorted.
    #[must_use]
    pub fn replication_remotes(&self) -> Vec<String> {
        // Lock: see the field.
        let mut v: Vec<String> = self
            .replication_taps
            .lock()
            .iter()
            .map(|(r, _)| r.clone())
            .collect();
        v.sort();
        v
    }

    /// Attaches a consumer, creating the subscription.
    ///
    /// # Errors
    /// [`BrokerError::ConsumerBusy`] for a conflicting type or a second Exclusive consumer.
    pub fn subscribe(
        &self,
        name: &str,
        consumer: Arc<Consumer>,
        key_shared: &KeySharedMeta,
        config: &BrokerConfig,
    ) -> Result<Arc<NonPersistentSubscription>, BrokerError> {
        let topic = self.name.to_string();
        let sub = {
            let mut subs = self.subscriptions.lock();
            Arc::clone(
                subs.entry(name.to_owned())
                    .or_insert_with(|| NonPersistentSubscription::new(name, &topic)),
            )
        };
        sub.add_consumer(consumer, key_shared, config)?;
        Ok(sub)
    }

    /// Detaches a consumer; a subscription left without consumers is removed (Pulsar deletes
    /// non-persistent subscriptions when their last consumer leaves).
    pub fn unsubscribe_consumer(&self, sub: &NonPersistentSubscription, consumer: &Consumer) {
        if sub.remove_consumer(consumer) == 0 {
            let mut subs = self.subscriptions.lock();
            if subs.get(&sub.name).is_some_and(|s| s.consumer_count() == 0) {
                subs.remove(&sub.name);
            }
        }
    }

    /// All subscriptions.
    #[must_use]
    pub fn subscriptions(&self) -> Vec<Arc<NonPersistentSubscription>> {
        self.subscriptions.lock().values().cloned().collect()
    }

    /// The subscription type of a live subscription, if any.
    #[must_use]
    pub fn sub_type(&self, name: &str) -> Option<SubType> {
        self.subscriptions
            .lock()
            .get(name)
            .and_then(|s| s.sub_type())
    }
}

#[cfg(test)]
mod tests;
