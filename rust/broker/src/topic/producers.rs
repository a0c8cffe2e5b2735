//! A topic's producers: admission by access mode (Shared, Exclusive, WaitForExclusive with its
//! queue of waiters, ExclusiveWithFencing), the topic epoch, fencing and removal.

use tokio::sync::oneshot;

use super::{AccessMode, ProducerInfo, Topic, Waiter};
use crate::error::BrokerError;

/// How [`Topic::add_producer`] admitted a producer.
#[derive(Debug)]
pub enum Admission {
    /// Attached now, with the topic epoch (raised by each exclusive admission).
    Ready(u64),
    /// Queued (WaitForExclusive): resolves with the topic epoch once attached, or with
    /// ProducerFenced.
    Queued(oneshot::Receiver<Result<u64, BrokerError>>),
}

/// The host part of a client address (`ip:port`, `[v6]:port`): Pulsar's same-address limits
/// compare clients by IP, not by connection.
pub(crate) fn host_of(address: &str) -> &str {
    address.rsplit_once(':').map_or(address, |(host, _)| host)
}

impl Topic {
    /// Whether the producer `name` with `handle` is still attached (not closed or taken by the
    /// broker: an unload, a delete, a fence).
    #[must_use]
    pub fn has_producer(&self, name: &str, handle: u64) -> bool {
        self.producers
            .lock()
            .get(name)
            .is_some_and(|p| p.handle == handle)
    }

    /// Unregisters every producer and returns their handles (the server closes them).
    pub fn take_producers(&self) -> Vec<u64> {
        self.producers
            .lock()
            .drain()
            .map(|(_, p)| {
                self.dedup.producer_removed(&p.name);
                p.handle
            })
            .collect()
    }

    /// Registers a producer, applying Pulsar's access modes (`AbstractTopic`):
    /// Exclusive against an exclusive or shared producer → ProducerFenced; Shared against an
    /// exclusive producer → ProducerBusy; ExclusiveWithFencing fences every producer and fails
    /// the queued WaitForExclusive ones; WaitForExclusive queues behind any producer. An
    /// exclusive producer reconnecting with an epoch older than the topic's is fenced.
    ///
    /// # Errors
    /// [`BrokerError::ProducerBusy`] (name taken, or Shared against exclusive),
    /// [`BrokerError::ProducerFenced`], [`BrokerError::TopicTerminated`].
    pub fn add_producer(
        &self,
        info: ProducerInfo,
        producer_epoch: Option<u64>,
    ) -> Result<Admission, BrokerError> {
        if self.is_terminated() {
            return Err(BrokerError::TopicTerminated(
                super::terminate::TERMINATED.into(),
            ));
        }
        // Relaxed (epoch): only read and written under the producers lock held below.
        use std::sync::atomic::Ordering::Relaxed;
        // Read before the producer locks (apply_policy holds this lock alone).
        let limits = self.limits.read().effective.limits;
        let mut producers = self.producers.lock();
        let mut waiting = self.waiting.lock();
        if producers.contains_key(&info.name) {
            return Err(BrokerError::ProducerBusy(format!(
                "Producer with name '{}' is already connected to topic",
                info.name
            )));
        }
        let same_address = if limits.max_same_address_producers > 0 {
            let host = host_of(&info.address);
            producers
                .values()
                .filter(|p| host_of(&p.address) == host)
                .count()
        } else {
            0 // not limited: not counted
        };
        limits.admit_producer(&self.name.to_string(), producers.len(), same_address)?;
        let current = self.epoch.load(Relaxed);
        if let (Some(e), AccessMode::Exclusive | AccessMode::ExclusiveWithFencing) =
            (producer_epoch, info.access_mode)
        {
            if e < current {
                return Err(BrokerError::ProducerFenced(format!(
                    "Topic epoch has already moved. Current epoch: {current}, Producer epoch: {e}"
                )));
            }
        }
        let exclusive = producers
            .values()
            .find(|p| p.access_mode != AccessMode::Shared)
            .or_else(|| waiting.front().map(|w| &w.info))
            .map(|p| p.name.clone());
        match info.access_mode {
            AccessMode::Shared => {
                if let Some(name) = exclusive {
                    return Err(BrokerError::ProducerBusy(format!(
                        "Topic has an existing exclusive producer: {name}"
                    )));
                }
                producers.insert(info.name.clone(), info);
                return Ok(Admission::Ready(current));
            }
            AccessMode::Exclusive => {
                if let Some(name) = exclusive {
                    return Err(BrokerError::ProducerFenced(format!(
                        "Topic has an existing exclusive producer: {name}"
                    )));
                }
                if !producers.is_empty() {
                    return Err(BrokerError::ProducerFenced(
                        "Topic has existing shared producers".into(),
                    ));
                }
            }
            AccessMode::WaitForExclusive => {
                if !producers.is_empty() || !waiting.is_empty() {
                    let (tx, rx) = oneshot::channel();
                    waiting.push_back(Waiter { info, ready: tx });
                    return Ok(Admission::Queued(rx));
                }
            }
            AccessMode::ExclusiveWithFencing => {
                let others: Vec<u64> = producers.drain().map(|(_, p)| p.handle).collect();
                self.fenced.lock().extend(others);
                for w in waiting.drain(..) {
                    let _ = w
                        .ready
                        .send(Err(BrokerError::ProducerFenced("Fenced out".into())));
                }
            }
        }
        let epoch = producer_epoch.unwrap_or(current + 1).max(current);
        self.epoch.store(epoch, Relaxed);
        self.dedup.producer_added(&info.name);
        producers.insert(info.name.clone(), info);
        Ok(Admission::Ready(epoch))
    }

    /// Producers fenced since the last call (the server closes them).
    #[must_use]
    pub fn take_fenced(&self) -> Vec<u64> {
        std::mem::take(&mut *self.fenced.lock())
    }

    /// Unregisters a producer by name (or drops it from the WaitForExclusive queue); once the
    /// topic has no producer, the first queued WaitForExclusive producer takes it.
    pub fn remove_producer(&self, name: &str, handle: u64) {
        // Relaxed (epoch): only read and written under the producers lock.
        use std::sync::atomic::Ordering::Relaxed;
        let mut producers = self.producers.lock();
        let mut waiting = self.waiting.lock();
        if producers.get(name).is_some_and(|p| p.handle == handle) {
            producers.remove(name);
            self.dedup.producer_removed(name);
            // Pulsar's `handleProducerRemoved`.
            self.last_active_ms
                .store(self.ledger.clock().now_ms(), Relaxed);
        }
        waiting.retain(|w| w.info.handle != handle);
        while producers.is_empty() {
            let Some(w) = waiting.pop_front() else { break };
            let epoch = self.epoch.load(Relaxed) + 1;
            let info = w.info.clone();
            // A waiter whose connection went away no longer listens: try the next one.
            if w.ready.send(Ok(epoch)).is_ok() {
                self.epoch.store(epoch, Relaxed);
                producers.insert(info.name.clone(), info);
            }
        }
    }

    /// WaitForExclusive producers queued for the topic.
    #[must_use]
    pub fn waiting_producers(&self) -> usize {
        self.waiting.lock().len()
    }

    /// Connected producers.
    #[must_use]
    pub fn producers(&self) -> Vec<ProducerInfo> {
        self.producers.lock().values().cloned().collect()
    }
}
