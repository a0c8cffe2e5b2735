//! The settings of the BookKeeper storage, under the names a Pulsar `broker.conf` gives them:
//! `metadataStoreUrl`, `bookkeeperMetadataServiceUri`, `managedLedgerDefaultEnsembleSize`,
//! `managedLedgerDefaultWriteQuorum`, `managedLedgerDefaultAckQuorum`,
//! `managedLedgerMaxEntriesPerLedger`, `bookkeeperClientTimeoutInSeconds`. Defaults are Pulsar's
//! (2/2/2, 50 000 entries, 30 s). The digest is CRC32C and the password empty, as
//! `ManagedLedgerConfig` has them by default. A broker's settings are read by its own
//! configuration parser and handed over here (`pulsar_rs_server::bookkeeper::settings`).

use std::time::Duration;

use pulsar_rs_ledger::LedgerError;

/// Where the bookies and the metadata are, and how ledgers are made.
#[derive(Clone, Debug)]
pub struct BkSettings {
    /// `metadataStoreUrl`: `zk:host:port[,host:port]` (Pulsar's form), `host:port`, or
    /// `etcd:http://host:port[,...]`.
    pub metadata_store_url: String,
    /// `bookkeeperMetadataServiceUri`; empty: `metadata-store:{metadataStoreUrl}/ledgers`.
    pub bookkeeper_metadata_service_uri: String,
    /// `managedLedgerDefaultEnsembleSize` (E).
    pub ensemble_size: usize,
    /// `managedLedgerDefaultWriteQuorum` (Qw).
    pub write_quorum: usize,
    /// `managedLedgerDefaultAckQuorum` (Qa).
    pub ack_quorum: usize,
    /// `managedLedgerMaxEntriesPerLedger`.
    pub max_entries_per_ledger: u64,
    /// `bookkeeperClientTimeoutInSeconds`, per bookie request.
    pub client_timeout: Duration,
    /// The ledgers' password (`ManagedLedgerConfig`'s default: empty).
    pub password: Vec<u8>,
}

impl BkSettings {
    /// Pulsar's defaults on the metadata store `metadata_store_url`.
    #[must_use]
    pub fn new(metadata_store_url: &str) -> BkSettings {
        BkSettings {
            metadata_store_url: metadata_store_url.to_owned(),
            bookkeeper_metadata_service_uri: String::new(),
            ensemble_size: 2,
            write_quorum: 2,
            ack_quorum: 2,
            max_entries_per_ledger: 50_000,
            client_timeout: Duration::from_secs(30),
            password: Vec::new(),
        }
    }

    /// Checks E ≥ Qw ≥ Qa ≥ 1, as BookKeeper does when creating a ledger.
    ///
    /// # Errors
    /// [`LedgerError::InvalidConfig`] naming the offending key.
    pub fn validate(&self) -> Result<(), LedgerError> {
        let bad = |key, reason: &str| {
            Err(LedgerError::InvalidConfig {
                key,
                reason: reason.into(),
            })
        };
        if self.ack_quorum == 0 {
            return bad("managedLedgerDefaultAckQuorum", "must be at least 1");
        }
        if self.write_quorum < self.ack_quorum {
            return bad(
                "managedLedgerDefaultWriteQuorum",
                "must be at least the ack quorum",
            );
        }
        if self.ensemble_size < self.write_quorum {
            return bad(
                "managedLedgerDefaultEnsembleSize",
                "must be at least the write quorum",
            );
        }
        Ok(())
    }

    /// The store of the managed ledgers' records: `metadataStoreUrl` when it names ZooKeeper
    /// (`zk:host:port[,host:port]`) or etcd (`etcd:http://host:port[,...]`).
    ///
    /// # Errors
    /// Any other store (Oxia, ...).
    pub fn metadata_store(&self) -> Result<String, LedgerError> {
        let url = self.metadata_store_url.trim();
        if pulsar_rs_metadata_store::is_etcd(url) {
            return Ok(url.to_owned());
        }
        Ok(format!("zk:{}", self.metadata_servers()?))
    }

    /// ZooKeeper's `host:port[,host:port]` from `metadataStoreUrl` (`zk:` prefix optional).
    ///
    /// # Errors
    /// A store other than ZooKeeper (etcd, Oxia, ...).
    pub fn metadata_servers(&self) -> Result<String, LedgerError> {
        let url = self.metadata_store_url.trim();
        let servers = url.strip_prefix("zk:").unwrap_or(url);
        if servers.contains("://") || servers.starts_with("etcd:") || servers.starts_with("oxia:") {
            return Err(LedgerError::InvalidConfig {
                key: "metadataStoreUrl",
                reason: format!("only ZooKeeper is supported: {url}"),
            });
        }
        Ok(servers.trim_end_matches('/').to_owned())
    }

    /// The BookKeeper metadata service URI: `bookkeeperMetadataServiceUri`, or Pulsar's default
    /// `metadata-store:{metadataStoreUrl}/ledgers` when it is empty.
    ///
    /// # Errors
    /// As [`BkSettings::metadata_servers`]; on etcd `bookkeeperMetadataServiceUri` is required
    /// (the BookKeeper client keeps ledger metadata on ZooKeeper only).
    pub fn bookkeeper_uri(&self) -> Result<String, LedgerError> {
        if self.bookkeeper_metadata_service_uri.is_empty()
            && pulsar_rs_metadata_store::is_etcd(&self.metadata_store_url)
        {
            return Err(LedgerError::InvalidConfig {
                key: "bookkeeperMetadataServiceUri",
                reason: format!(
                    "must name BookKeeper's ZooKeeper (zk+hierarchical://host:port/ledgers) when \
                     metadataStoreUrl is etcd ({}): pulsar-rs keeps ledger metadata on ZooKeeper only",
                    self.metadata_store_url.trim()
                ),
            });
        }
        if self.bookkeeper_metadata_service_uri.is_empty() {
            Ok(format!(
                "metadata-store:zk:{}/ledgers",
                self.metadata_servers()?
            ))
        } else {
            Ok(self.bookkeeper_metadata_service_uri.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorums_and_the_bookkeeper_uri() {
        let mut s = BkSettings::new("zk:127.0.0.1:2181");
        assert_eq!((s.ensemble_size, s.write_quorum, s.ack_quorum), (2, 2, 2));
        assert_eq!(
            s.bookkeeper_uri().unwrap(),
            "metadata-store:zk:127.0.0.1:2181/ledgers"
        );
        assert!(s.password.is_empty());
        assert!(s.validate().is_ok());
        s.ack_quorum = 3;
        assert!(s.validate().is_err());
        assert!(BkSettings::new("etcd:http://x:2379")
            .metadata_servers()
            .is_err());
        let mut etcd = BkSettings::new("etcd:http://x:2379");
        assert_eq!(etcd.metadata_store().unwrap(), "etcd:http://x:2379");
        assert!(etcd.bookkeeper_uri().is_err());
        etcd.bookkeeper_metadata_service_uri = "zk+hierarchical://z:2181/ledgers".into();
        assert_eq!(
            etcd.bookkeeper_uri().unwrap(),
            "zk+hierarchical://z:2181/ledgers"
        );
        assert_eq!(s.metadata_store().unwrap(), "zk:127.0.0.1:2181");
        assert!(BkSettings::new("oxia://x:1").metadata_store().is_err());
    }
}
