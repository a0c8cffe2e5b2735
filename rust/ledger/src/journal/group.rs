//! Group commit timing: how long a durable write round gathers records before the flusher
//! writes and syncs it (`journalMaxGroupWaitMSec`), and how many buffered bytes end the wait
//! early (`journalBufferedWritesThreshold`), as in BookKeeper's journal.
//!
//! With no wait (the default) a round is written as soon as the flusher is free; records that
//! arrive during a write and sync still share the next round. A wait makes each `fdatasync`
//! cover more records, which saves CPU under load and adds up to the wait to publish latency.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{Journal, State};

/// The two settings; written once by the storage after open, read by the flusher each round.
pub(super) struct GroupCommit {
    /// Longest wait in microseconds (0 = none). Relaxed loads and stores: a tuning value; a
    /// stale read changes only how one round is grouped.
    wait_us: AtomicU64,
    /// Bytes at which a waiting round is written at once. Relaxed: as `wait_us`.
    threshold: AtomicUsize,
}

impl GroupCommit {
    pub(super) fn new() -> Self {
        GroupCommit {
            wait_us: AtomicU64::new(0),
            threshold: AtomicUsize::new(512 << 10),
        }
    }

    fn wait(&self) -> Duration {
        Duration::from_micros(self.wait_us.load(Ordering::Relaxed))
    }

    fn threshold(&self) -> usize {
        self.threshold.load(Ordering::Relaxed)
    }

    /// Whether an append that took the unwritten buffer from `before` to `after` bytes filled
    /// a waiting round, so the flusher must be woken before its wait ends.
    pub(super) fn fills(&self, before: usize, after: usize) -> bool {
        let t = self.threshold();
        !self.wait().is_zero() && before < t && after >= t
    }
}

impl Journal {
    /// Sets `journalMaxGroupWaitMSec` and `journalBufferedWritesThreshold` (durable mode only;
    /// a non-durable round is written at once, since nothing waits for it).
    pub fn set_group_commit(&self, wait: Duration, threshold: u64) {
        let us = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
        self.group.wait_us.store(us, Ordering::Relaxed);
        let t = usize::try_from(threshold).unwrap_or(usize::MAX).max(1);
        self.group.threshold.store(t, Ordering::Relaxed);
    }

    /// On the flusher, with records buffered: waits until the oldest has waited the group wait,
    /// the round holds the threshold's bytes, a flush is requested, or the journal closes. Appenders keep appending
    /// meanwhile (the condition variable releases the lock while waiting).
    pub(super) fn gather(&self, st: &mut MutexGuard<'_, State>) {
        let wait = self.group.wait();
        if !self.sync || wait.is_zero() {
            return;
        }
        let Some(first) = st.gathering_since else {
            return;
        };
        let deadline = first + wait;
        let threshold = self.group.threshold();
        while !st.closed
            && !st.flush_requested
            && st.buf.len() < threshold
            && Instant::now() < deadline
        {
            if self.wake.wait_until(st, deadline).timed_out() {
                break;
            }
        }
    }
}
