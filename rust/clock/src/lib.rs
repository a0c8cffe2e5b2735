//! The one clock of pulsar_rs: every reading of the time in the broker, the server, the cluster
//! member, the export and the BookKeeper client goes through this crate. Two kinds of time are
//! read, and they are kept apart on purpose:
//!
//! * **The broker's time** ([`Clock`], milliseconds since the Unix epoch): what Pulsar's
//!   semantics are defined on. Message TTL and expiry, retention, inactive-topic deletion,
//!   backlog-quota age, deduplication snapshots and producer expiry, delayed delivery, the
//!   Failover delay, transaction timeouts, token expiry, schema, compaction and stats
//!   timestamps. It is injected: a broker runs on [`SystemClock`]; a test hands it a
//!   [`ManualClock`] and advances it instead of sleeping.
//! * **The machine's elapsed time** ([`monotonic`], [`coarse_monotonic_ns`]): how long this
//!   process took. Rate windows, latencies, the token bucket's refill, connection keepalives,
//!   publish throttling pauses, the age of a lookup cache, I/O deadlines. It is never injected: a
//!   test that moves the broker's clock an hour ahead must not make a live connection look dead,
//!   a rate look zero or a throttled producer wait an hour.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The broker's time: milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current time in ms.
    fn now_ms(&self) -> u64;

    /// The current time in ms as Pulsar's wire and JSON fields carry it (`int64`).
    fn now_ms_i64(&self) -> i64 {
        i64::try_from(self.now_ms()).unwrap_or(i64::MAX)
    }

    /// Registers `f` to run after each jump of a clock that moves in jumps (a
    /// [`ManualClock`]), so waits computed from the old reading (a delayed message's due time)
    /// are re-armed at once. The real clock never jumps: there this does nothing.
    fn on_jump(&self, f: JumpListener) {
        drop(f);
    }
}

/// What [`Clock::on_jump`] runs.
pub type JumpListener = Box<dyn Fn() + Send + Sync>;

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock that tests move by hand. Either frozen ([`ManualClock::new`]: it reads its start
/// until advanced) or following the system time ([`ManualClock::following_system`]: the real
/// time plus every advance so far, for a broker whose clients stamp messages with the real time).
#[derive(Default)]
pub struct ManualClock {
    /// The time (frozen) or the sum of the advances (following the system); any thread may
    /// advance it.
    now: AtomicU64,
    /// Whether the system time is added to `now`; immutable.
    follows_system: bool,
    /// Run after each advance ([`Clock::on_jump`]). Locked to register and to run them; a
    /// listener must not register another (it would wait on this lock).
    listeners: Mutex<Vec<JumpListener>>,
}

impl std::fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManualClock")
            .field("now_ms", &self.now_ms())
            .field("follows_system", &self.follows_system)
            .finish_non_exhaustive()
    }
}

impl ManualClock {
    /// A clock reading `start_ms`.
    #[must_use]
    pub fn new(start_ms: u64) -> Self {
        ManualClock {
            now: AtomicU64::new(start_ms),
            follows_system: false,
            listeners: Mutex::new(Vec::new()),
        }
    }

    /// A clock reading the system time plus every advance so far: time flows as usual, and a
    /// test jumps it forward instead of sleeping. What a test of a running broker wants, since
    /// its clients stamp messages with the real time (a message sent after a jump is new).
    #[must_use]
    pub fn following_system() -> Self {
        ManualClock {
            now: AtomicU64::new(0),
            follows_system: true,
            listeners: Mutex::new(Vec::new()),
        }
    }

    /// Moves the clock forward, then runs the jump listeners.
    pub fn advance_ms(&self, ms: u64) {
        // Relaxed: the value is the only shared datum; no other memory is published with it.
        self.now.fetch_add(ms, Ordering::Relaxed);
        let listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for f in listeners.iter() {
            f();
        }
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        // Relaxed: see `advance_ms`.
        let now = self.now.load(Ordering::Relaxed);
        if self.follows_system {
            SystemClock.now_ms().saturating_add(now)
        } else {
            now
        }
    }

    fn on_jump(&self, f: JumpListener) {
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(f);
    }
}

/// The machine's elapsed time: a monotonic instant, for measuring how long this process took
/// (never the broker's time; see the module header).
#[must_use]
pub fn monotonic() -> Instant {
    Instant::now()
}

/// The machine's elapsed time in nanoseconds since the first call, from
/// `CLOCK_MONOTONIC_COARSE`: the kernel updates it once per tick (1–4 ms) and reading it is a
/// plain load from the vDSO page, several times cheaper than a precise read. For hot paths that
/// tolerate a tick of error (the token bucket's refill).
#[must_use]
pub fn coarse_monotonic_ns() -> u64 {
    static ORIGIN: OnceLock<u64> = OnceLock::new();
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_COARSE exists on every Linux
    // since 2.6.32 and clock_gettime only writes the struct it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &raw mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC_COARSE)");
    #[allow(clippy::cast_sign_loss)]
    let now = (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64;
    now - *ORIGIN.get_or_init(|| now)
}

/// The CPU time this process has used (all its threads, user and system), from
/// `CLOCK_PROCESS_CPUTIME_ID`: a broker's own CPU usage in its load report is the growth of this
/// over the growth of [`monotonic`].
#[must_use]
pub fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_PROCESS_CPUTIME_ID exists on every Linux
    // since 2.6.12 and clock_gettime only writes the struct it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut ts) };
    debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    #[allow(clippy::cast_sign_loss)]
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The wall clock as a [`SystemTime`], for what the operating system stamps with it (a file's
/// modification time) and for a load generator's end-to-end latency (sender and receiver read
/// the same machine's clock). Never the broker's time: that is a [`Clock`].
#[must_use]
pub fn system_now() -> SystemTime {
    SystemTime::now()
}

/// The wall clock in nanoseconds since the Unix epoch (see [`system_now`]).
#[must_use]
pub fn system_now_nanos() -> u64 {
    system_now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A wall-clock reading (a file's modification time, a certificate's validity) as milliseconds
/// since the Unix epoch, 0 before it.
#[must_use]
pub fn system_time_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The inverse of [`system_time_ms`], for APIs that take a [`SystemTime`].
#[must_use]
pub fn system_time_of_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + std::time::Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let c = ManualClock::new(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance_ms(250);
        assert_eq!(c.now_ms(), 1_250);
        assert_eq!(c.now_ms_i64(), 1_250);
    }

    #[test]
    fn a_manual_clock_runs_its_jump_listeners_after_each_advance() {
        let c = ManualClock::new(0);
        let seen = std::sync::Arc::new(AtomicU64::new(0));
        let s = std::sync::Arc::clone(&seen);
        let clock: &dyn Clock = &c;
        clock.on_jump(Box::new(move || {
            s.fetch_add(1, Ordering::Relaxed);
        }));
        c.advance_ms(5);
        c.advance_ms(5);
        assert_eq!(seen.load(Ordering::Relaxed), 2);
        // The real clock never jumps: registering is accepted and nothing runs.
        SystemClock.on_jump(Box::new(|| panic!("the system clock does not jump")));
    }

    #[test]
    fn a_manual_clock_following_the_system_adds_its_advances_to_the_real_time() {
        let c = ManualClock::following_system();
        let before = SystemClock.now_ms();
        let read = c.now_ms();
        assert!(read >= before && read <= SystemClock.now_ms());
        c.advance_ms(3_600_000);
        let before = SystemClock.now_ms();
        let read = c.now_ms();
        assert!(read >= before + 3_600_000 && read <= SystemClock.now_ms() + 3_600_000);
    }

    #[test]
    fn system_times_round_trip_through_ms() {
        assert_eq!(system_time_ms(system_time_of_ms(1_234_567)), 1_234_567);
        assert_eq!(
            system_time_ms(UNIX_EPOCH - std::time::Duration::from_secs(1)),
            0
        );
    }

    #[test]
    fn the_coarse_clock_never_goes_back() {
        let a = coarse_monotonic_ns();
        let b = coarse_monotonic_ns();
        assert!(b >= a);
    }
}
