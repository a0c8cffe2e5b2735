//! Tiered storage for the broker's topics: the offloader each topic's resolved settings name
//! (made by an [`OffloaderFactory`] the server installs, which knows the object stores), applied
//! to its managed ledger with the thresholds, the deletion lag and the read priority.

use std::collections::BTreeMap;
use std::sync::Arc;

use pulsar_rs_ledger::{LedgerOffloader, OffloadPolicy, ReadPriority};

use super::BrokerService;
use crate::policies::offload::{
    number, DELETION_LAG, READ_PRIORITY, THRESHOLD_BYTES, THRESHOLD_SECONDS,
};
use crate::topic::Topic;

/// Makes (or finds) the offloader resolved settings name: `Ok(None)` when they name no driver,
/// `Err` with the reason when they name a bad one.
pub type OffloaderFactory = Arc<
    dyn Fn(&BTreeMap<String, String>) -> Result<Option<Arc<dyn LedgerOffloader>>, String>
        + Send
        + Sync,
>;

impl BrokerService {
    /// Installs the offloader factory (once, by the server, before topics load); a second
    /// call is ignored.
    pub fn set_offloader_factory(&self, factory: OffloaderFactory) {
        let _ = self.offloaders.set(factory);
    }

    /// The offloader the settings name, if any (a bad driver is logged and means none).
    #[must_use]
    pub fn offloader_for(
        &self,
        settings: &BTreeMap<String, String>,
    ) -> Option<Arc<dyn LedgerOffloader>> {
        let factory = self.offloaders.get()?;
        match factory(settings) {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %e, "offload settings name no usable offloader");
                None
            }
        }
    }

    /// Applies a topic's resolved offload settings to its managed ledger.
    pub(crate) fn apply_offload(&self, topic: &Topic, settings: &BTreeMap<String, String>) {
        let policy = OffloadPolicy {
            offloader: self.offloader_for(settings),
            threshold_bytes: number(settings, THRESHOLD_BYTES),
            threshold_seconds: number(settings, THRESHOLD_SECONDS),
            deletion_lag_ms: number(settings, DELETION_LAG),
            read_priority: settings
                .get(READ_PRIORITY)
                .and_then(|p| ReadPriority::parse(p.trim()))
                .unwrap_or_default(),
        };
        topic.ledger.set_offload_policy(policy);
    }
}
