//! Settings of the storage layer, named after Pulsar's `broker.conf` keys.
//!
//! [`StorageConfig`] applies to a whole data directory (journal, cache); [`LedgerConfig`] to one
//! managed ledger (rollover and retention). Both validate themselves and name the offending key.

use std::time::Duration;

use crate::{LedgerError, Result};

/// Settings shared by every managed ledger of one data directory.
#[derive(Clone, Debug, PartialEq)]
pub struct StorageConfig {
    /// `journalSyncData`: acknowledge an append only after `fdatasync` (group commit). Default true.
    pub journal_sync_data: bool,
    /// `journalMaxSizeMB`: size at which the journal starts a new segment file. Default 256 MiB.
    pub journal_max_segment_bytes: u64,
    /// `journalMaxGroupWaitMSec`: how long a durable write round may wait for more records
    /// before it is written and synced, trading publish latency for fewer `fdatasync` calls.
    /// Default zero: a round is written as soon as the flusher is free (BookKeeper ships 1 ms).
    pub journal_max_group_wait: Duration,
    /// `journalAdaptiveGroupWaitMicros`: with no fixed wait, the longest a durable round may
    /// gather more records while the journal is under continuous load and records keep
    /// arriving (see `journal::group`). Default 1 ms; zero turns it off.
    pub journal_adaptive_group_wait: Duration,
    /// `journalBufferedWritesThreshold`: a waiting round is written at once when it holds this
    /// many bytes. Default 512 KiB, as BookKeeper.
    pub journal_buffered_writes_threshold: u64,
    /// `journalPreAllocSizeMB`: zeros written ahead of the active journal segment's end, so a
    /// durable round's `fdatasync` writes no file-size or allocation metadata (see
    /// `journal::prealloc`). Default 16 MiB, as BookKeeper; 0 disables it.
    pub journal_prealloc_bytes: u64,
    /// `journalDirectWrites` (ours): durable rounds and preallocated zeros are written past the
    /// page cache (`O_DIRECT`) where the file system takes it (see `journal::direct`). Default
    /// true; false keeps recently written entries in the page cache for readers.
    pub journal_direct_writes: bool,
    /// `managedLedgerCacheSizeMB`: the broker-wide entry cache budget in bytes; 0 disables caching.
    pub cache_size_bytes: u64,
    /// `managedLedgerCacheEvictionWatermark`: size eviction goes down to this fraction of the budget.
    pub cache_eviction_watermark: f64,
    /// `managedLedgerCacheEvictionTimeThresholdMillis`: cached entries older than this are evicted.
    pub cache_eviction_time_threshold: Duration,
    /// `managedLedgerCacheEvictionIntervalMs`: period of the background eviction sweep.
    pub cache_eviction_interval: Duration,
    /// `managedLedgerCursorPositionFlushSeconds`-like period at which dirty cursor state is persisted
    /// (derived from `managedLedgerDefaultMarkDeleteRateLimit`, default 1 per second).
    pub cursor_flush_interval: Duration,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            journal_sync_data: true,
            journal_max_segment_bytes: 256 << 20,
            journal_max_group_wait: Duration::ZERO,
            journal_adaptive_group_wait: Duration::from_millis(1),
            journal_buffered_writes_threshold: 512 << 10,
            journal_prealloc_bytes: 16 << 20,
            journal_direct_writes: true,
            cache_size_bytes: 64 << 20,
            cache_eviction_watermark: 0.9,
            cache_eviction_time_threshold: Duration::from_millis(1000),
            cache_eviction_interval: Duration::from_millis(10),
            cursor_flush_interval: Duration::from_secs(1),
        }
    }
}

impl StorageConfig {
    /// Checks every value.
    ///
    /// # Errors
    /// [`LedgerError::InvalidConfig`] naming the first bad key.
    pub fn validate(&self) -> Result<()> {
        if self.journal_max_segment_bytes < 4096 {
            return Err(invalid("journalMaxSizeMB", "must be at least 4 KiB"));
        }
        if self.journal_max_group_wait > Duration::from_secs(1) {
            return Err(invalid(
                "journalMaxGroupWaitMSec",
                "must be at most 1000 (every durable publish waits up to this long)",
            ));
        }
        if self.journal_adaptive_group_wait > Duration::from_secs(1) {
            return Err(invalid(
                "journalAdaptiveGroupWaitMicros",
                "must be at most 1000000 (a durable publish may wait up to this long)",
            ));
        }
        if self.journal_buffered_writes_threshold == 0 {
            return Err(invalid(
                "journalBufferedWritesThreshold",
                "must be positive",
            ));
        }
        if self.journal_prealloc_bytes > 1 << 30 {
            return Err(invalid("journalPreAllocSizeMB", "must be at most 1024"));
        }
        if !(self.cache_eviction_watermark > 0.0 && self.cache_eviction_watermark <= 1.0) {
            return Err(invalid(
                "managedLedgerCacheEvictionWatermark",
                "must be in (0, 1]",
            ));
        }
        if self.cache_eviction_interval.is_zero() {
            return Err(invalid(
                "managedLedgerCacheEvictionIntervalMs",
                "must be > 0",
            ));
        }
        if self.cursor_flush_interval.is_zero() {
            return Err(invalid(
                "managedLedgerDefaultMarkDeleteRateLimit",
                "must be > 0",
            ));
        }
        Ok(())
    }
}

/// Settings of one managed ledger.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerConfig {
    /// `managedLedgerMaxEntriesPerLedger`: roll over after this many entries. Default 50000.
    pub max_entries_per_ledger: u64,
    /// `managedLedgerMaxSizePerLedgerMbytes`: roll over after this many bytes. Default 2048 MiB.
    pub max_size_per_ledger_bytes: u64,
    /// `managedLedgerMinLedgerRolloverTimeMinutes`: never roll over a younger ledger. Default 10 min.
    pub min_rollover_time: Duration,
    /// `managedLedgerMaxLedgerRolloverTimeMinutes`: roll over an older ledger. Default 240 min.
    pub max_rollover_time: Duration,
    /// `defaultRetentionTimeInMinutes` in ms: keep consumed ledgers this long; -1 = forever.
    pub retention_time_ms: i64,
    /// `defaultRetentionSizeInMB` in bytes: keep up to this much consumed data; -1 = unlimited.
    pub retention_size_bytes: i64,
    /// `autoSkipNonRecoverableData`: a cursor that meets an entry recovery found damaged
    /// acknowledges it and moves on (the entry is lost) instead of failing every read of it.
    /// Default false: the subscription stops there until an operator skips it.
    pub auto_skip_non_recoverable_data: bool,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        LedgerConfig {
            max_entries_per_ledger: 50_000,
            max_size_per_ledger_bytes: 2048 << 20,
            min_rollover_time: Duration::from_secs(10 * 60),
            max_rollover_time: Duration::from_secs(240 * 60),
            retention_time_ms: 0,
            retention_size_bytes: 0,
            auto_skip_non_recoverable_data: false,
        }
    }
}

impl LedgerConfig {
    /// Checks every value.
    ///
    /// # Errors
    /// [`LedgerError::InvalidConfig`] naming the first bad key.
    pub fn validate(&self) -> Result<()> {
        if self.max_entries_per_ledger == 0 {
            return Err(invalid("managedLedgerMaxEntriesPerLedger", "must be > 0"));
        }
        if self.max_size_per_ledger_bytes == 0 {
            return Err(invalid(
                "managedLedgerMaxSizePerLedgerMbytes",
                "must be > 0",
            ));
        }
        if self.min_rollover_time > self.max_rollover_time {
            return Err(invalid(
                "managedLedgerMinLedgerRolloverTimeMinutes",
                "must not exceed managedLedgerMaxLedgerRolloverTimeMinutes",
            ));
        }
        if self.retention_time_ms < -1 {
            return Err(invalid(
                "defaultRetentionTimeInMinutes",
                "must be -1 (forever) or >= 0",
            ));
        }
        if self.retention_size_bytes < -1 {
            return Err(invalid(
                "defaultRetentionSizeInMB",
                "must be -1 (unlimited) or >= 0",
            ));
        }
        Ok(())
    }
}

fn invalid(key: &'static str, reason: impl Into<String>) -> LedgerError {
    LedgerError::InvalidConfig {
        key,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_pulsars_and_valid() {
        let c = LedgerConfig::default();
        assert_eq!(c.max_entries_per_ledger, 50_000);
        c.validate().unwrap();
        StorageConfig::default().validate().unwrap();
    }

    #[test]
    fn bad_values_name_the_key() {
        let c = LedgerConfig {
            max_entries_per_ledger: 0,
            ..LedgerConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("managedLedgerMaxEntriesPerLedger"));
        let s = StorageConfig {
            cache_eviction_watermark: 1.5,
            ..StorageConfig::default()
        };
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("managedLedgerCacheEvictionWatermark"));
    }
}
