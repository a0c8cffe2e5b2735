//! The storage layer's settings as the broker settings give them: the storage-wide
//! [`StorageConfig`] and the per-ledger [`LedgerConfig`] of `pulsar_rs_ledger`.

use std::time::Duration;

use pulsar_rs_ledger::{LedgerConfig, StorageConfig};

use super::BrokerConfig;

/// The scheme Pulsar's `metadataStoreUrl` gives an etcd store.
pub const ETCD_SCHEME: &str = "etcd:";

impl BrokerConfig {
    /// The metadata store of the cluster this broker joins, whose BookKeeper holds the topics:
    /// `metadataStoreUrl` naming ZooKeeper (as `zk:host:port[,host:port]`) or etcd
    /// (`etcd:http://host:port[,...]`, as given); `None` keeps the topics in the local journal
    /// (`metadataStoreUrl` empty or naming one of Pulsar's embedded stores).
    #[must_use]
    pub fn cluster_metadata_store(&self) -> Option<String> {
        let url = self.metadata_store_url.trim();
        if url.starts_with(ETCD_SCHEME) {
            return Some(url.to_owned());
        }
        self.bookkeeper_zookeeper().map(|zk| format!("zk:{zk}"))
    }

    /// The configuration (global) metadata store, when it is not the cluster's own store
    /// ([`BrokerConfig::cluster_metadata_store`]): `configurationMetadataStoreUrl` (or the
    /// deprecated `configurationStoreServers`) naming ZooKeeper (as `zk:...`) or etcd, and
    /// different from `metadataStoreUrl` (Pulsar's `isConfigurationStoreSeparated`). `None`:
    /// the configuration paths are in the cluster's store.
    #[must_use]
    pub fn configuration_metadata_store(&self) -> Option<String> {
        let local = self.cluster_metadata_store()?;
        let url = self.configuration_metadata_store_url.trim();
        if url.is_empty() {
            return None;
        }
        let url = if url.starts_with(ETCD_SCHEME) {
            url.to_owned()
        } else {
            format!(
                "zk:{}",
                url.strip_prefix("zk:").unwrap_or(url).trim_end_matches('/')
            )
        };
        (url != local).then_some(url)
    }

    /// The ZooKeeper servers (`host:port[,host:port]`) `metadataStoreUrl` names, or `None`:
    /// empty, one of Pulsar's embedded stores (`rocksdb:`, `memory:`), or etcd.
    #[must_use]
    pub fn bookkeeper_zookeeper(&self) -> Option<String> {
        let url = self.metadata_store_url.trim();
        if url.is_empty()
            || url.starts_with("rocksdb:")
            || url.starts_with("memory:")
            || url.starts_with(ETCD_SCHEME)
        {
            return None;
        }
        Some(
            url.strip_prefix("zk:")
                .unwrap_or(url)
                .trim_end_matches('/')
                .to_owned(),
        )
    }

    /// The storage-layer settings.
    #[must_use]
    pub fn storage_config(&self) -> StorageConfig {
        StorageConfig {
            journal_sync_data: self.journal_sync_data,
            journal_max_segment_bytes: self.journal_max_size_mb.saturating_mul(1 << 20),
            journal_max_group_wait: Duration::from_millis(self.journal_max_group_wait_msec),
            journal_buffered_writes_threshold: self.journal_buffered_writes_threshold,
            journal_adaptive_group_wait: Duration::from_micros(
                self.journal_adaptive_group_wait_micros,
            ),
            journal_prealloc_bytes: self.journal_pre_alloc_size_mb.saturating_mul(1 << 20),
            journal_direct_writes: self.journal_direct_writes,
            cache_size_bytes: self.managed_ledger_cache_size_mb.saturating_mul(1 << 20),
            cache_eviction_watermark: self.managed_ledger_cache_eviction_watermark,
            cache_eviction_time_threshold: Duration::from_millis(
                self.managed_ledger_cache_eviction_time_threshold_millis,
            ),
            cache_eviction_interval: Duration::from_millis(
                self.managed_ledger_cache_eviction_interval_ms,
            ),
            cursor_flush_interval: Duration::from_secs_f64(
                1.0 / self.managed_ledger_default_mark_delete_rate_limit,
            ),
        }
    }

    /// The per-ledger settings.
    #[must_use]
    pub fn ledger_config(&self) -> LedgerConfig {
        let minutes = |m: f64| Duration::from_secs_f64((m * 60.0).max(0.0));
        LedgerConfig {
            max_entries_per_ledger: self.managed_ledger_max_entries_per_ledger,
            max_size_per_ledger_bytes: self
                .managed_ledger_max_size_per_ledger_mbytes
                .saturating_mul(1 << 20),
            min_rollover_time: minutes(self.managed_ledger_min_ledger_rollover_time_minutes),
            max_rollover_time: minutes(self.managed_ledger_max_ledger_rollover_time_minutes),
            retention_time_ms: if self.default_retention_time_in_minutes < 0 {
                -1
            } else {
                self.default_retention_time_in_minutes * 60_000
            },
            retention_size_bytes: if self.default_retention_size_in_mb < 0 {
                -1
            } else {
                self.default_retention_size_in_mb << 20
            },
            auto_skip_non_recoverable_data: self.auto_skip_non_recoverable_data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The broker's defaults of the storage keys are Pulsar's `broker.conf` values, written in
    /// its units; the ledger's `Default`s are the same values in the ledger's units (the
    /// Python `ManagedLedger(**kw)` settings start from those). This ties the two.
    #[test]
    fn broker_defaults_are_the_ledger_defaults() {
        let broker = BrokerConfig::default();
        assert_eq!(broker.storage_config(), StorageConfig::default());
        assert_eq!(broker.ledger_config(), LedgerConfig::default());
    }
}
