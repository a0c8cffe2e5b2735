//! The broker's topics on Apache BookKeeper: when `metadataStoreUrl` names a ZooKeeper or etcd,
//! the clients of the bookies and of the metadata store are started (on a runtime of their own) with the
//! settings of `broker.conf` (`bookkeeperMetadataServiceUri`, `managedLedgerDefaultEnsembleSize` /
//! `WriteQuorum` / `AckQuorum`, `bookkeeperClientTimeoutInSeconds`), and every managed ledger is
//! kept there in Pulsar's formats.

use std::sync::Arc;
use std::time::Duration;

use pulsar_rs_broker::{BrokerConfig, BrokerError};
use pulsar_rs_ledger::seam::SeamBacking;
use pulsar_rs_ledger_bk::BkSettings;

/// The BookKeeper settings of a broker's configuration; `None` keeps topics in the journal.
#[must_use]
pub fn settings(config: &BrokerConfig) -> Option<BkSettings> {
    let store = config.cluster_metadata_store()?;
    let mut s = BkSettings::new(&store);
    s.bookkeeper_metadata_service_uri
        .clone_from(&config.bookkeeper_metadata_service_uri);
    s.ensemble_size = config.managed_ledger_default_ensemble_size;
    s.write_quorum = config.managed_ledger_default_write_quorum;
    s.ack_quorum = config.managed_ledger_default_ack_quorum;
    s.max_entries_per_ledger = config.managed_ledger_max_entries_per_ledger;
    s.client_timeout = Duration::from_secs(config.bookkeeper_client_timeout_in_seconds.max(1));
    Some(s)
}

/// Connects to the bookies and ZooKeeper the configuration names (blocking: call it where a
/// thread may block); `None` when it names none.
///
/// # Errors
/// ZooKeeper cannot be reached or the settings are invalid.
pub fn backing(config: &BrokerConfig) -> Result<Option<Arc<SeamBacking>>, BrokerError> {
    let Some(s) = settings(config) else {
        return Ok(None);
    };
    s.validate()?;
    tracing::info!(metadata_store = %s.metadata_store_url, ensemble = s.ensemble_size, write_quorum = s.write_quorum, ack_quorum = s.ack_quorum, "topics on BookKeeper");
    Ok(Some(Arc::new(pulsar_rs_ledger_bk::backing(&s)?)))
}
