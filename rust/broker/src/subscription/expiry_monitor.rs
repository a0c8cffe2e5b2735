//! A subscription's message-TTL state and counters ([`ExpiryMonitor`]), kept in the
//! subscription and used by its expiry checks ([`super::expiry`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::rate::Meter;

/// Expiry state and counters of one subscription.
#[derive(Debug, Default)]
pub struct ExpiryMonitor {
    /// Set while a check runs (Pulsar's `expirationCheckInProgress`): a concurrent check (admin
    /// call during the periodic one) is not issued. Acquire/Release: the flag guards the check.
    pub(super) in_progress: AtomicBool,
    /// Entries expired: total and rate. Written by checks, read by stats.
    pub(super) expired: Meter,
    /// When the last check was issued, ms since the epoch (0 = never). Relaxed: statistics.
    pub(super) last_expire_ms: AtomicU64,
}

/// Clears the in-progress flag when a check ends, whatever its outcome.
pub(super) struct Running<'a>(pub(super) &'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        // Release: the check's cursor update happens before the next check may start.
        self.0.store(false, Ordering::Release);
    }
}

impl ExpiryMonitor {
    /// Entries expired per second over the last window.
    #[must_use]
    pub fn rate(&self) -> f64 {
        self.expired.rates().0
    }

    /// Entries expired since the subscription was loaded.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.expired.total()
    }

    /// When the last expiry check was issued (ms since the epoch, 0 = never).
    #[must_use]
    pub fn last_expire_timestamp(&self) -> u64 {
        self.last_expire_ms.load(Ordering::Relaxed)
    }
}
