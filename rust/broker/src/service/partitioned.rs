//! Partitioned-topic metadata of `BrokerService`: each partitioned topic's partition count, kept
//! in memory and under Pulsar's metadata key (`metadata_keys::partitioned_topic`); creation
//! (explicit or by auto-creation), adoption of a count another broker wrote, updates and removal.

use super::{AutoCreation, BrokerService};
use crate::error::BrokerError;
use crate::metadata_keys;
use crate::naming::TopicName;

/// The metadata key of a partitioned topic's partition count.
pub(super) fn partitions_key(base: &TopicName) -> String {
    metadata_keys::partitioned_topic(&base.to_string())
}

impl BrokerService {
    /// Partition count of a topic (0 = not partitioned). With auto-creation of partitioned
    /// topics, an unknown topic is created partitioned.
    ///
    /// # Errors
    /// Storage failures when auto-creating.
    pub fn partitions(&self, name: &TopicName, auto_create: bool) -> Result<u32, BrokerError> {
        let base = name.base();
        if let Some(n) = self.partitioned.lock().get(&base) {
            return Ok(if name.partition_index().is_some() {
                0
            } else {
                *n
            });
        }
        let exists = self.known.lock().contains(name);
        if exists || !auto_create || name.partition_index().is_some() {
            return Ok(0);
        }
        let auto = self.auto_creation(&name.namespace_name());
        if let AutoCreation {
            allow: true,
            partitions: Some(n),
        } = auto
        {
            self.admit_new_topics(&name.namespace_name(), n)?;
            self.create_partitioned(name, n)?;
            return Ok(n);
        }
        Ok(0)
    }

    /// Creates partitioned-topic metadata with `n` partitions.
    ///
    /// # Errors
    /// [`BrokerError::AlreadyExists`], invalid counts, storage failures.
    pub fn create_partitioned(&self, name: &TopicName, n: u32) -> Result<(), BrokerError> {
        if n == 0 {
            return Err(BrokerError::NotAllowed(
                "number of partitions must be more than 0".into(),
            ));
        }
        if name.partition_index().is_some() {
            return Err(BrokerError::NotAllowed(
                "a partition cannot itself be partitioned".into(),
            ));
        }
        let mut p = self.partitioned.lock();
        // Pulsar's texts: a partitioned topic, or a plain topic of the name.
        if p.contains_key(name) {
            return Err(BrokerError::AlreadyExists("Partitioned topic".into()));
        }
        if self.known.lock().contains(name) {
            return Err(BrokerError::AlreadyExists("This topic".into()));
        }
        self.meta
            .put(&partitions_key(name), n.to_string().as_bytes())?;
        p.insert(name.clone(), n);
        Ok(())
    }

    /// Takes a partitioned topic's count from the cluster's metadata store (another broker
    /// created or raised it): recorded here too, so this broker serves its partitions as its
    /// own. A count already known is replaced.
    ///
    /// # Errors
    /// A partition name; storage failures.
    pub fn adopt_partitioned(&self, name: &TopicName, n: u32) -> Result<(), BrokerError> {
        if name.partition_index().is_some() || n == 0 {
            return Err(BrokerError::NotAllowed(
                "a partitioned topic's base name and a count above 0".into(),
            ));
        }
        // Held across the metadata write, as `update_partitioned`.
        let mut p = self.partitioned.lock();
        if p.get(name) == Some(&n) {
            return Ok(());
        }
        self.meta
            .put(&partitions_key(name), n.to_string().as_bytes())?;
        p.insert(name.clone(), n);
        Ok(())
    }

    /// Forgets the record of a partitioned topic the cluster's store no longer has (deleted
    /// through another broker), leaving its partitions' data alone (their owners delete it).
    /// Whether there was a record.
    ///
    /// # Errors
    /// Storage failures.
    pub fn forget_partitioned(&self, name: &TopicName) -> Result<bool, BrokerError> {
        // Held across the metadata write, as `adopt_partitioned`.
        let mut p = self.partitioned.lock();
        if p.remove(name).is_none() {
            return Ok(false);
        }
        self.meta.delete(&partitions_key(name))?;
        Ok(true)
    }

    /// Raises the partition count of a partitioned topic to `n` (Pulsar's
    /// `updatePartitionedTopic`: the count only grows; the new partitions are created on first
    /// use, as at creation).
    ///
    /// # Errors
    /// [`BrokerError::TopicNotFound`] when `name` is not partitioned, [`BrokerError::NotAllowed`]
    /// when `n` is not above the current count, storage failures.
    pub fn update_partitioned(&self, name: &TopicName, n: u32) -> Result<(), BrokerError> {
        // Held across the metadata write so two updates cannot interleave.
        let mut p = self.partitioned.lock();
        let current = *p
            .get(name)
            .ok_or_else(|| BrokerError::TopicNotFound(format!("partitioned topic {name}")))?;
        if n <= current {
            return Err(BrokerError::NotAllowed(
                "Number of new partitions must be greater than existing number of partitions"
                    .into(),
            ));
        }
        self.meta
            .put(&partitions_key(name), n.to_string().as_bytes())?;
        p.insert(name.clone(), n);
        Ok(())
    }

    /// Partitioned topics of a namespace (`tenant/ns`), with their counts.
    #[must_use]
    pub fn partitioned_topics(&self, namespace: &str) -> Vec<(TopicName, u32)> {
        let mut v: Vec<(TopicName, u32)> = self
            .partitioned
            .lock()
            .iter()
            .filter(|(t, _)| t.namespace_name() == namespace)
            .map(|(t, n)| (t.clone(), *n))
            .collect();
        v.sort();
        v
    }
}
