//! Times as Java's `Instant.toString()` prints them, for the stats documents' `connectedSince`,
//! `lastAckedTime` and the like.

use std::time::{SystemTime, UNIX_EPOCH};

/// A time as Java's `Instant.toString()` prints it (Pulsar's `connectedSince`, `lastAckedTime`):
/// UTC, the fraction in groups of three digits and only as long as needed.
pub(in crate::admin) fn instant_string(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let base = super::messages::iso_time(d.as_secs() * 1000);
    let secs = &base[..19];
    let nanos = d.subsec_nanos();
    if nanos == 0 {
        format!("{secs}Z")
    } else if nanos.is_multiple_of(1_000_000) {
        format!("{secs}.{:03}Z", nanos / 1_000_000)
    } else if nanos.is_multiple_of(1000) {
        format!("{secs}.{:06}Z", nanos / 1000)
    } else {
        format!("{secs}.{nanos:09}Z")
    }
}
