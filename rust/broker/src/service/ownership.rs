//! A cluster's say over this broker's topics: with an ownership check set (the cluster's
//! ownership of each topic's bundle), a topic this broker does not own is neither loaded nor
//! deleted here ([`BrokerError::NotServed`]: its owner serves it, and its ledger is shared
//! storage), and the topics this broker knows of are brought to the storage's on a listing
//! (topics created or deleted through other brokers). A broker on its own serves every topic.

use std::collections::HashSet;

use crate::error::BrokerError;
use crate::naming::TopicName;

use super::BrokerService;

/// Whether this broker owns a topic's bundle (see [`BrokerService::set_ownership_check`]).
pub type OwnershipCheck = Box<dyn Fn(&TopicName) -> bool + Send + Sync>;

// The namespace of Pulsar's system topics (the transaction coordinator's), served by every
// broker for its own coordinators.
use crate::policies::limits::SYSTEM_NAMESPACE;

impl BrokerService {
    /// Makes topic loads depend on `owns` (the cluster's ownership of the topic's bundle):
    /// a topic this broker does not own is refused with [`BrokerError::NotServed`]. The
    /// `pulsar/system` namespace (this broker's transaction coordinator) is exempt. Only the
    /// first call has an effect.
    pub fn set_ownership_check(&self, owns: OwnershipCheck) {
        let _ = self.ownership.set(owns);
    }

    /// Whether this broker owns `name`'s bundle (always, on a broker of its own). Unlike
    /// [`BrokerService::check_served`], `pulsar/system` is not exempt: a coordinator's assign
    /// partition is owned by one broker of a cluster.
    #[must_use]
    pub fn owns_bundle_of(&self, name: &TopicName) -> bool {
        self.ownership.get().is_none_or(|owns| owns(name))
    }

    /// Refuses a topic this broker does not serve (see [`BrokerService::set_ownership_check`]).
    pub(super) fn check_served(&self, name: &TopicName) -> Result<(), BrokerError> {
        match self.ownership.get() {
            Some(owns) if name.namespace_name() != SYSTEM_NAMESPACE && !owns(name) => Err(
                BrokerError::not_served(&name.to_string(), &name.namespace_name()),
            ),
            _ => Ok(()),
        }
    }
}

impl BrokerService {
    /// In a cluster, brings the topics this broker knows of to the ones its storage holds
    /// (the cluster's: created or deleted through other brokers), keeping the loaded ones; on
    /// its own, the broker's record is already complete. Blocking: reads the metadata store.
    ///
    /// # Errors
    /// Metadata store failures.
    pub fn refresh_known_topics(&self) -> Result<(), BrokerError> {
        if self.ownership.get().is_none() {
            return Ok(());
        }
        let stored: HashSet<TopicName> = self
            .storage
            .ledger_names()?
            .iter()
            .filter_map(|n| TopicName::from_ledger_name(n))
            .collect();
        // Lock order as in `topic`: topics, then known; neither is held across the read above.
        let topics = self.topics.lock();
        let mut known = self.known.lock();
        known.retain(|t| stored.contains(t) || topics.contains_key(t));
        known.extend(stored);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    use crate::config::BrokerConfig;
    use crate::error::BrokerError;
    use crate::naming::TopicName;
    use crate::service::BrokerService;

    #[test]
    fn a_topic_another_broker_owns_is_neither_loaded_nor_deleted_here() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            journal_sync_data: false,
            ..BrokerConfig::default()
        };
        let svc = BrokerService::open(cfg, dir.path()).unwrap();
        let owned = Arc::new(AtomicBool::new(true));
        let flag = Arc::clone(&owned);
        // Relaxed: a test's single flag, read after the store that set it on the same thread.
        svc.set_ownership_check(Box::new(move |_| flag.load(Ordering::Relaxed)));
        let t = TopicName::parse("persistent://public/default/owned-elsewhere").unwrap();
        svc.topic(&t, true).unwrap();
        let parted = TopicName::parse("persistent://public/default/parted").unwrap();
        svc.create_partitioned(&parted, 2).unwrap();
        svc.topic(&parted.partition(0), true).unwrap();

        owned.store(false, Ordering::Relaxed);
        let other = TopicName::parse("persistent://public/default/never-loaded").unwrap();
        assert!(matches!(
            svc.topic(&other, true),
            Err(BrokerError::NotServed(_))
        ));
        assert!(matches!(
            svc.delete_topic(&t, false),
            Err(BrokerError::NotServed(_))
        ));
        assert!(
            svc.loaded_topic(&t).is_some(),
            "the topic stays for its owner"
        );
        // Deleting the partitioned topic forgets it here; its partitions are their owners'.
        svc.delete_partitioned(&parted, false).unwrap();
        assert!(svc.loaded_topic(&parted.partition(0)).is_some());
        // The transaction coordinator's namespace is every broker's own.
        let system = TopicName::parse("persistent://pulsar/system/transaction_log_0").unwrap();
        assert!(svc.topic(&system, true).is_ok());

        owned.store(true, Ordering::Relaxed);
        svc.delete_topic(&t, false).unwrap();
        assert!(svc.loaded_topic(&t).is_none());
    }
}
