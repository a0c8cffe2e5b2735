//! Topic deletion in `BrokerService`, as Pulsar's `deleteTopic` and `deletePartitionedTopic`:
//! refused while producers or consumers are connected unless forced, the topic's ledger,
//! compacted ledger, schema and policies removed with it; a namespace's topics at once; and the
//! inactive-topic GC's deletions that re-check idleness under the topics' lock.

use std::sync::Arc;

use super::partitioned::partitions_key;
use super::BrokerService;
use crate::compaction;
use crate::error::BrokerError;
use crate::naming::TopicName;
use crate::nonpersistent::NonPersistentTopic;
use crate::topic::Topic;

impl BrokerService {
    /// Deletes a topic (closing it) and its stored data, as Pulsar's `deleteTopic`: without
    /// `force`, a topic with producers or consumers connected is refused and left untouched;
    /// with it, its consumers are disconnected and its producers' handles returned, for the
    /// server to close them.
    ///
    /// # Errors
    /// [`BrokerError::TopicNotFound`]; [`BrokerError::TopicBusy`]; [`BrokerError::NotServed`]
    /// in a cluster when another broker owns it; storage failures.
    pub fn delete_topic(&self, name: &TopicName, force: bool) -> Result<Vec<u64>, BrokerError> {
        // In a cluster only the owner deletes a topic (its ledger is shared storage).
        self.check_served(name)?;
        let topic = {
            // Lock: held across the check and the removal, so no client is admitted between.
            let mut topics = self.topics.lock();
            if !force {
                busy(topics.get(name))?;
            }
            topics.remove(name)
        };
        let known = self.known.lock().remove(name);
        if topic.is_none() && !known {
            return Err(BrokerError::TopicNotFound(name.to_string()));
        }
        let mut producers = Vec::new();
        // The compacted ledger is read before the topic closes (closing closes its cursors).
        let (ledger, compacted) = match topic {
            Some(t) => {
                producers = t.take_producers();
                let compacted = compaction::compacted_ledger_id(&t.ledger);
                t.close();
                (Arc::clone(&t.ledger), compacted)
            }
            None => {
                let l = self
                    .storage
                    .open_ledger(&name.ledger_name(), self.config.ledger_config())?;
                let compacted = compaction::compacted_ledger_id(&l);
                (l, compacted)
            }
        };
        let subscriptions = ledger.persisted_cursor_names()?;
        ledger.delete()?;
        // Its subscriptions' pending-ack logs, as Pulsar deletes them with the topic.
        for sub in subscriptions {
            let log = crate::transaction::pending_ack_store::ledger_name(name, &sub)?;
            if self.storage.ledger_exists(&log)? {
                self.storage
                    .open_ledger(&log, self.config.ledger_config())?
                    .delete()?;
            }
        }
        if let (Some(b), Some(id)) = (self.storage.backing(), compacted) {
            compaction::on_bookies::delete(b, id); // as Pulsar deletes a topic's compacted ledger
        }
        let dir = compaction::topic_dir(self.storage.dir(), &name.ledger_name());
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %dir.display(), error = %e, "removing compacted ledgers");
            }
        }
        Ok(producers)
    }

    /// Deletes partitioned-topic metadata and every partition (in a cluster, every partition
    /// this broker owns: the others are their owners' to delete). Without `force`, a partition
    /// with producers or consumers connected refuses the whole delete before anything is
    /// deleted (Pulsar answers "Topic has active producers/subscriptions"); with it, the
    /// producers' handles of every partition are returned, for the server to close them.
    ///
    /// # Errors
    /// [`BrokerError::TopicNotFound`]; [`BrokerError::TopicBusy`]; storage failures.
    pub fn delete_partitioned(
        &self,
        name: &TopicName,
        force: bool,
    ) -> Result<Vec<u64>, BrokerError> {
        if !force {
            self.partitioned_idle(name)?;
        }
        let n = self
            .partitioned
            .lock()
            .remove(name)
            .ok_or_else(|| BrokerError::TopicNotFound(name.to_string()))?;
        let mut producers = Vec::new();
        for partition in self.partition_targets(name, n) {
            match self.delete_topic(&partition, force) {
                Ok(handles) => producers.extend(handles),
                // In a cluster, another broker's partition is deleted by its owner.
                Err(BrokerError::TopicNotFound(_) | BrokerError::NotServed(_)) => {}
                Err(e) => return Err(e),
            }
        }
        self.meta.delete(&partitions_key(name))?;
        Ok(producers)
    }

    /// Deletes every persistent topic of `namespace` with `force` (Pulsar's forced namespace
    /// delete, before the namespace itself goes): each partitioned topic with its partitions,
    /// then every other topic; their producers' handles are returned, for the server to close
    /// them. The work is one topic at a time, over what exists.
    ///
    /// # Errors
    /// Storage failures (the topics deleted so far stay deleted).
    pub fn delete_namespace_topics(&self, namespace: &str) -> Result<Vec<u64>, BrokerError> {
        let mut producers = Vec::new();
        for (name, _) in self.partitioned_topics(namespace) {
            match self.delete_partitioned(&name, true) {
                Ok(handles) => producers.extend(handles),
                Err(BrokerError::TopicNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        for name in self.topics_of_namespace(namespace) {
            match self.delete_topic(&name, true) {
                Ok(handles) => producers.extend(handles),
                Err(BrokerError::TopicNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(producers)
    }

    /// Whether a partitioned topic may be deleted without `force`: none of the partitions this
    /// broker serves has producers or consumers connected (a cluster checks this before it
    /// deletes the store's record).
    ///
    /// # Errors
    /// [`BrokerError::TopicBusy`] in Pulsar's words for a partitioned topic;
    /// [`BrokerError::TopicNotFound`].
    pub fn partitioned_idle(&self, name: &TopicName) -> Result<(), BrokerError> {
        let n = self
            .partitioned
            .lock()
            .get(name)
            .copied()
            .ok_or_else(|| BrokerError::TopicNotFound(name.to_string()))?;
        let partitions = self.partition_targets(name, n);
        // Lock: the topics table, for the look only.
        let topics = self.topics.lock();
        for p in &partitions {
            busy(topics.get(p)).map_err(|_| {
                BrokerError::TopicBusy("Topic has active producers/subscriptions".into())
            })?;
        }
        Ok(())
    }

    /// Deletes a loaded topic if `idle` still holds under the topics lock (inactive-topic GC,
    /// [`inactive`]): its consumers are disconnected, its subscriptions, data and cursors
    /// deleted and, for a non-partitioned topic, its schema and topic policies (as Pulsar's
    /// `PersistentTopic.delete`). Returns whether it was deleted.
    ///
    /// # Errors
    /// Storage failures.
    pub(crate) fn delete_if_idle(
        &self,
        name: &TopicName,
        idle: impl FnOnce(&Topic) -> bool,
    ) -> Result<bool, BrokerError> {
        let topic = {
            // Lock order as in `topic`: topics, then known. Held across the check so no
            // lookup finds the topic between the check and its removal.
            let mut topics = self.topics.lock();
            match topics.get(name) {
                Some(t) if idle(t) => {}
                _ => return Ok(false),
            }
            self.known.lock().remove(name);
            topics.remove(name)
        };
        let Some(topic) = topic else { return Ok(false) };
        topic.close();
        topic.ledger.delete()?;
        if name.partition_index().is_none() {
            self.schemas.remove(&name.to_string())?;
            self.policies.delete_topic(name)?;
        }
        Ok(true)
    }

    /// Removes a non-persistent topic if `idle` still holds under the map's lock.
    pub(crate) fn remove_non_persistent_if_idle(
        &self,
        name: &TopicName,
        idle: impl FnOnce(&NonPersistentTopic) -> bool,
    ) -> bool {
        let mut map = self.non_persistent.lock();
        if map.get(name).is_some_and(|t| idle(t)) {
            map.remove(name);
            return true;
        }
        false
    }

    /// Deletes a partitioned topic's metadata (and its schema and policies) when none of its
    /// partitions is stored any more; non-persistent partitions are never stored, so theirs is
    /// deleted outright (Pulsar's `tryToDeletePartitionedMetadata`). Returns whether it was.
    ///
    /// # Errors
    /// Metadata I/O.
    pub(crate) fn delete_partitioned_if_unused(
        &self,
        base: &TopicName,
    ) -> Result<bool, BrokerError> {
        {
            // Lock order as in `create_partitioned`: partitioned, then known.
            let mut p = self.partitioned.lock();
            let Some(n) = p.get(base).copied() else {
                return Ok(false);
            };
            if base.is_persistent() {
                let known = self.known.lock();
                if known
                    .iter()
                    .any(|t| t.partition_index().is_some_and(|i| i < n) && t.base() == *base)
                {
                    return Ok(false);
                }
            }
            self.meta.delete(&partitions_key(base))?;
            p.remove(base);
        }
        self.schemas.remove(&base.to_string())?;
        self.policies.delete_topic(base)?;
        Ok(true)
    }
}

/// Pulsar's `TopicBusyException` for a loaded topic with producers or consumers connected.
pub(super) fn busy(topic: Option<&Arc<Topic>>) -> Result<(), BrokerError> {
    in_use(topic.map_or(0, |t| t.usage_count()))
}

/// Pulsar's refusal of a delete while `n` producers and consumers are connected.
pub(super) fn in_use(n: usize) -> Result<(), BrokerError> {
    match n {
        0 => Ok(()),
        n => Err(BrokerError::TopicBusy(format!(
            "Topic has {n} connected producers/consumers"
        ))),
    }
}
