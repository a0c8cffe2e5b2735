//! Group commit timing: how long a durable write round gathers records before the flusher
//! writes and syncs it (`journalMaxGroupWaitMSec`), and how many buffered bytes end the wait
//! early (`journalBufferedWritesThreshold`), as in BookKeeper's journal.
//!
//! With no fixed wait (the default) a round is written as soon as the flusher is free; records
//! that arrive during a write and sync still share the next round. A wait makes each
//! `fdatasync` cover more records, which saves CPU under load and adds up to the wait to publish
//! latency.
//!
//! Without a fixed wait, the **adaptive wait** (`journalAdaptiveGroupWaitMicros`, default 1000)
//! gathers a round only while that costs nothing but the wait:
//! * only under continuous load: the round's first record arrived while the flusher was
//!   writing the previous round (a producer that waits for each receipt never waits here);
//! * only while records keep coming: the wait ends once no record arrived for four times the
//!   recent mean gap between records of a round (a windowed producer whose whole window is
//!   already buffered sends nothing more until its receipts, so its round is written soon after
//!   its burst: the gaps within a burst are short);
//! * at most the setting, counted from the round's first record, and never past the threshold
//!   bytes, a flush or close.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{Journal, State};

/// The settings; written once by the storage after open, read by the flusher each round.
pub(super) struct GroupCommit {
    /// Longest wait in microseconds (0 = none). Relaxed loads and stores: a tuning value; a
    /// stale read changes only how one round is grouped.
    wait_us: AtomicU64,
    /// Bytes at which a waiting round is written at once. Relaxed: as `wait_us`.
    threshold: AtomicUsize,
    /// Longest adaptive wait in microseconds (0 = off); used only while `wait_us` is 0.
    /// Relaxed: as `wait_us`.
    adaptive_us: AtomicU64,
}

/// An adaptive wait ends once no record arrived for this many mean gaps between the records of
/// a round. Measured (`benches/RESULTS.md`, 2 runs each): W2 broker CPU per message under the
/// independent load generator 0.336 / 0.300 / 0.284 µs at 2 / 4 / 8 (0.37-0.42 without the
/// wait), W1 publish p50 at 10 000 msg/s 0.41 / 0.425 / 0.48 ms. A windowed producer (W2
/// under `pulsar-rs-perf`) pays the quiet gap after each burst: ~8 % of its rate at 4. With
/// direct writes, 8 took W2 to 0.246 from 0.274 µs (3 alternating runs) but, in three same-run
/// tables, W1's p99 at a steady 10 000 msg/s to 1.57-2.31 ms against 0.86-1.04 ms at 4: a busy
/// round may wait twice as long. 4 keeps the tail under the 1.5 ms goal.
const QUIET_GAPS: u64 = 4;

/// The shortest quiet gap that ends an adaptive wait: below this, timer and wake-up jitter
/// would end waits between records of one burst.
const MIN_QUIET: Duration = Duration::from_micros(20);

/// When records arrive, kept under the journal's lock by `append` and read by the flusher.
#[derive(Default)]
pub(super) struct Arrivals {
    /// The last append.
    last: Option<Instant>,
    /// Moving mean of the gap between appends of one round, in nanoseconds (weight 1/8 per
    /// append).
    mean_gap_ns: u64,
    /// The round being gathered began while the flusher was writing the previous one.
    busy_round: bool,
}

impl Arrivals {
    /// Records an append at `now`; `first` if it began a round, `busy` if the flusher was
    /// writing meanwhile.
    pub(super) fn arrived(&mut self, now: Instant, first: bool, busy: bool) {
        if let (Some(last), false) = (self.last, first) {
            // Only gaps within a round: the gap before a round's first record spans the
            // previous round's write, and for a windowed producer the wait for its receipts.
            // Gaps over 10 ms are idle time, not a rate: counted as 10 ms.
            let gap = u64::try_from(now.saturating_duration_since(last).as_nanos())
                .unwrap_or(u64::MAX)
                .min(10_000_000);
            self.mean_gap_ns = (self.mean_gap_ns * 7 + gap) / 8;
        }
        self.last = Some(now);
        if first {
            self.busy_round = busy;
        }
    }

    /// When an adaptive wait started at `first` ends: `max` after it, or earlier once no record
    /// arrived for [`QUIET_GAPS`] mean gaps. `None`: this round does not wait.
    fn deadline(&self, first: Instant, max: Duration) -> Option<Instant> {
        if !self.busy_round || max.is_zero() {
            return None;
        }
        let last = self.last?;
        let quiet =
            Duration::from_nanos(self.mean_gap_ns.saturating_mul(QUIET_GAPS)).max(MIN_QUIET);
        Some((first + max).min(last + quiet))
    }
}

impl GroupCommit {
    pub(super) fn new() -> Self {
        GroupCommit {
            wait_us: AtomicU64::new(0),
            threshold: AtomicUsize::new(512 << 10),
            adaptive_us: AtomicU64::new(0),
        }
    }

    fn wait(&self) -> Duration {
        Duration::from_micros(self.wait_us.load(Ordering::Relaxed))
    }

    fn adaptive(&self) -> Duration {
        Duration::from_micros(self.adaptive_us.load(Ordering::Relaxed))
    }

    fn threshold(&self) -> usize {
        self.threshold.load(Ordering::Relaxed)
    }

    /// Whether an append that took the unwritten buffer from `before` to `after` bytes filled
    /// a waiting round, so the flusher must be woken before its wait ends.
    pub(super) fn fills(&self, before: usize, after: usize) -> bool {
        let t = self.threshold();
        (!self.wait().is_zero() || !self.adaptive().is_zero()) && before < t && after >= t
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

    /// Sets `journalAdaptiveGroupWaitMicros`, the longest adaptive wait (zero turns it off).
    pub fn set_adaptive_group_wait(&self, max: Duration) {
        let us = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
        self.group.adaptive_us.store(us, Ordering::Relaxed);
    }

    /// On the flusher, with records buffered: waits until the oldest has waited the group wait
    /// (or, without one, while the adaptive wait lasts), the round holds the threshold's bytes,
    /// a flush is requested, or the journal closes. Appenders keep appending meanwhile (the
    /// condition variable releases the lock while waiting); the deadline is re-read after each
    /// sleep, so appends move an adaptive wait's quiet end without waking the flusher.
    pub(super) fn gather(&self, st: &mut MutexGuard<'_, State>) {
        if !self.sync {
            return;
        }
        let Some(first) = st.gathering_since else {
            return;
        };
        let wait = self.group.wait();
        let adaptive = self.group.adaptive();
        let threshold = self.group.threshold();
        while !st.closed && !st.flush_requested && st.buf.len() < threshold {
            let until = if wait.is_zero() {
                match st.arrivals.deadline(first, adaptive) {
                    Some(until) => until,
                    None => return,
                }
            } else {
                first + wait
            };
            if crate::clock::monotonic() >= until {
                return;
            }
            let _ = self.wake.wait_until(st, until);
        }
    }
}
