//! Which settings belong to tiered storage: Pulsar's offload keys (`managedLedgerOffload*`, the
//! driver-prefixed `s3ManagedLedgerOffload*` and `gcsManagedLedgerOffload*`, the read priority,
//! the auto-offload trigger). Pulsar hands its offloaders the broker's raw properties, so keys
//! its `ServiceConfiguration` does not declare (`managedLedgerOffloadServiceEndpoint`,
//! `managedLedgerOffloadRegion`, ...) are still read by its drivers; they are taken here as a
//! family rather than one by one, and the offloader decides what each means.

/// Prefixes of the family.
const PREFIXES: &[&str] = &[
    "managedLedgerOffload",
    "s3ManagedLedgerOffload",
    "gcsManagedLedgerOffload",
];

/// Members without the prefixes.
const OTHERS: &[&str] = &[
    "managedLedgerDataReadPriority",
    "triggerOffloadOnTopicLoad",
    "offloadersDirectory",
    "managedLedgerInactiveOffloadedLedgerEvictionTimeSeconds",
];

/// Whether `key` is a tiered-storage setting.
#[must_use]
pub fn is_offload_key(key: &str) -> bool {
    PREFIXES
        .iter()
        .any(|p| key.starts_with(p) && key.len() > p.len())
        || OTHERS.contains(&key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_family_holds_pulsars_offload_keys_and_nothing_else() {
        for k in [
            "managedLedgerOffloadDriver",
            "managedLedgerOffloadServiceEndpoint",
            "managedLedgerOffloadRegion",
            "managedLedgerOffloadDeletionLagMs",
            "managedLedgerOffloadAutoTriggerSizeThresholdBytes",
            "managedLedgerOffloadThresholdInBytes",
            "s3ManagedLedgerOffloadBucket",
            "managedLedgerDataReadPriority",
        ] {
            assert!(is_offload_key(k), "{k}");
        }
        assert!(!is_offload_key("managedLedgerOffload"));
        assert!(!is_offload_key("managedLedgerMaxEntriesPerLedger"));
    }
}
