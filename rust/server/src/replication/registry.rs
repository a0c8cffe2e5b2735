//! What replicators run on this broker ([`Replicators`], kept in the server's context) and
//! what each shows in stats ([`Status`]). Written by the replication check task
//! (`super::spawn`), read by the stats and metrics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use pulsar_rs_broker::nonpersistent::NonPersistentTopic;
use pulsar_rs_broker::topic::Topic;
use pulsar_rs_broker::Meter;
use tokio::task::AbortHandle;

/// What a replicator shows in stats. Written by its task, read by stats and metrics.
#[derive(Default)]
pub struct Status {
    /// When its producer connected to the remote cluster, ms since the epoch on the broker's
    /// clock; 0 while it is not connected. Relaxed: a lone statistic.
    connected_since_ms: AtomicU64,
    /// The URL of the remote broker it connected to last. Short lock, never across an await.
    address: Mutex<Option<String>>,
    /// Messages and bytes the remote cluster receipted.
    pub msg_out: Meter,
    /// A non-persistent topic's messages dropped: not connected, or its queue full (Pulsar's
    /// `NonPersistentReplicator` `msgDropRate`); always 0 for a persistent topic's.
    pub msg_drop: Meter,
}

impl Status {
    pub(super) fn connected(&self, address: &str, now_ms: u64) {
        *self.address.lock() = Some(address.to_owned());
        // Relaxed: a statistic.
        self.connected_since_ms
            .store(now_ms.max(1), Ordering::Relaxed);
    }

    pub(super) fn disconnected(&self) {
        // Relaxed: a statistic.
        self.connected_since_ms.store(0, Ordering::Relaxed);
    }

    /// When the producer connected (ms since the epoch), while it is connected.
    #[must_use]
    pub fn connected_since_ms(&self) -> Option<u64> {
        // Relaxed: a statistic.
        Some(self.connected_since_ms.load(Ordering::Relaxed)).filter(|&t| t > 0)
    }

    /// Whether the producer is open on the remote cluster.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.connected_since_ms().is_some()
    }

    /// The URL of the remote broker it connected to last.
    #[must_use]
    pub fn address(&self) -> Option<String> {
        self.address.lock().clone()
    }
}

/// The topic object a replicator replicates (a reload makes a new one, and a new replicator).
#[derive(Clone)]
pub(super) enum Replicated {
    /// A persistent topic's, read from its replication cursor.
    Persistent(Weak<Topic>),
    /// A non-persistent topic's, tapped on publish.
    NonPersistent(Weak<NonPersistentTopic>),
}

/// One running replicator.
pub(super) struct Running {
    /// The topic object it replicates.
    pub(super) topic: Replicated,
    /// What it shows in stats.
    pub(super) status: Arc<Status>,
    /// Its task, aborted when it must stop.
    pub(super) task: AbortHandle,
}

/// A topic and its replicators: each remote cluster and whether it is connected.
pub(super) type TopicReplicators = (Weak<Topic>, Vec<(String, bool)>);

/// The replicators running on this broker, by (topic, remote cluster).
#[derive(Default)]
pub struct Replicators {
    /// Written by the check task only; read by stats. Short lock, never across an await.
    pub(super) running: Mutex<HashMap<(String, String), Running>>,
}

impl Replicators {
    /// The replicators of `topic` (its full name), by remote cluster, sorted.
    #[must_use]
    pub fn of_topic(&self, topic: &str) -> Vec<(String, Arc<Status>)> {
        let mut v: Vec<(String, Arc<Status>)> = self
            .running
            .lock()
            .iter()
            .filter(|((t, _), _)| t == topic)
            .map(|((_, r), run)| (r.clone(), Arc::clone(&run.status)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Each persistent topic with replicators: its remote clusters and whether each is
    /// connected.
    pub(super) fn by_topic(&self) -> Vec<TopicReplicators> {
        let mut by: HashMap<&str, TopicReplicators> = HashMap::new();
        let running = self.running.lock();
        for ((topic, remote), run) in running.iter() {
            let Replicated::Persistent(weak) = &run.topic else {
                continue;
            };
            by.entry(topic.as_str())
                .or_insert_with(|| (weak.clone(), Vec::new()))
                .1
                .push((remote.clone(), run.status.is_connected()));
        }
        by.into_values().collect()
    }

    pub(super) fn stop_all(&self) {
        for (_, run) in self.running.lock().drain() {
            run.task.abort();
        }
    }
}
