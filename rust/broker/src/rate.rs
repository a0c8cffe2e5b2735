//! Rate counters: lock-free totals with a rate computed over the last sampling window, and a
//! token bucket for rate limiting.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Counts events and bytes; [`Meter::rates`] reports per-second rates over the last window.
#[derive(Debug)]
pub struct Meter {
    /// Events counted so far. Relaxed: monotonic statistics, nothing is published through them.
    count: AtomicU64,
    /// Bytes counted so far (same rule).
    bytes: AtomicU64,
    /// (window start, count at start, bytes at start, last rates). Locked only by readers of rates.
    window: Mutex<(Instant, u64, u64, f64, f64)>,
}

impl Default for Meter {
    fn default() -> Self {
        Meter {
            count: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            window: Mutex::new((pulsar_rs_clock::monotonic(), 0, 0, 0.0, 0.0)),
        }
    }
}

impl Meter {
    /// Records `n` events of `bytes` bytes in total.
    pub fn record(&self, n: u64, bytes: u64) {
        // Relaxed: independent monotonic counters.
        self.count.fetch_add(n, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Total events.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Total bytes.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// (events/s, bytes/s) over the window that ended at the latest sample; a new window starts
    /// when the current one is at least one second old.
    #[must_use]
    pub fn rates(&self) -> (f64, f64) {
        let mut w = self.window.lock();
        let elapsed = w.0.elapsed();
        if elapsed >= Duration::from_secs(1) {
            let (c, b) = (self.total(), self.total_bytes());
            let secs = elapsed.as_secs_f64();
            #[allow(clippy::cast_precision_loss)]
            {
                w.3 = (c - w.1) as f64 / secs;
                w.4 = (b - w.2) as f64 / secs;
            }
            *w = (pulsar_rs_clock::monotonic(), c, b, w.3, w.4);
        }
        (w.3, w.4)
    }
}

/// Fixed-point scale of [`TokenBucket`]'s counter: it counts thousandths of a token.
const MILLI: f64 = 1000.0;

/// A token bucket refilled continuously at `rate` per second with capacity `rate` (one second of
/// burst), as in Pulsar's PIP-322. Tokens may go negative: a request already accepted is never
/// refused; the caller waits [`TokenBucket::wait_time`] before accepting more.
///
/// Lock-free: the tokens are one atomic counter (in thousandths) and the last refill time
/// another. A caller that sees the coarse clock past the last refill claims the interval with a
/// compare-and-swap on the time; only the winner credits it, so every nanosecond is credited
/// exactly once however many threads race. Credits are computed from the absolute time
/// (`floor(t × rate)` at both ends), so rounding never accumulates.
#[derive(Debug)]
pub struct TokenBucket {
    /// Tokens per second; immutable.
    rate: f64,
    /// Thousandths of a token per second; immutable.
    rate_milli: u128,
    /// Maximum tokens, in thousandths; immutable.
    capacity: i64,
    /// Tokens available, in thousandths (negative: owed). Updated by every caller.
    tokens: AtomicI64,
    /// [`pulsar_rs_clock::coarse_monotonic_ns`] of the last refill. Advanced by the caller that wins its CAS.
    last_ns: AtomicU64,
    /// The clock: [`pulsar_rs_clock::coarse_monotonic_ns`], or a test's; immutable.
    clock: fn() -> u64,
}

impl TokenBucket {
    /// A bucket allowing `rate` tokens per second, starting full.
    #[must_use]
    pub fn new(rate: f64) -> Self {
        Self::with_capacity(rate, rate)
    }

    /// A bucket with an explicit burst capacity, starting full.
    #[must_use]
    pub fn with_capacity(rate: f64, capacity: f64) -> Self {
        Self::with_clock(rate, capacity, pulsar_rs_clock::coarse_monotonic_ns)
    }

    /// A bucket reading time (in ns) from `clock`.
    fn with_clock(rate: f64, capacity: f64, clock: fn() -> u64) -> Self {
        let capacity = to_milli(capacity.max(0.0));
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rate_milli = (rate.max(0.0) * MILLI).round() as u128;
        TokenBucket {
            rate,
            rate_milli,
            capacity,
            tokens: AtomicI64::new(capacity),
            last_ns: AtomicU64::new(clock()),
            clock,
        }
    }

    /// The configured rate.
    #[must_use]
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Thousandths of a token earned from the origin to `ns`.
    fn earned(&self, ns: u64) -> u128 {
        u128::from(ns) * self.rate_milli / 1_000_000_000
    }

    /// Credits the time since the last refill, once per clock tick whatever the callers.
    fn refill(&self) {
        // Relaxed: the time is only a claim ticket; the CAS below decides who credits which
        // interval, and no other memory is published through it.
        let last = self.last_ns.load(Ordering::Relaxed);
        let now = (self.clock)();
        if now <= last {
            return;
        }
        // Relaxed (both orders): the CAS is atomic in the single modification order of
        // `last_ns`, which is all that makes intervals disjoint; the tokens are a separate
        // counter updated by atomic read-modify-writes of their own.
        if self
            .last_ns
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return; // another caller credits this tick
        }
        let add = i64::try_from(self.earned(now) - self.earned(last)).unwrap_or(i64::MAX);
        let cap = self.capacity;
        // Relaxed: an atomic read-modify-write of a counter that guards no other data; the
        // clamp is inside the update, so concurrent consumers are never overwritten.
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(add).min(cap.max(t)))
            });
    }

    /// Consumes `n` tokens (possibly going negative); returns the tokens left.
    pub fn consume(&self, n: f64) -> f64 {
        self.refill();
        let n = to_milli(n);
        // Relaxed: see `refill`; fetch_sub never loses a concurrent update.
        let left = self.tokens.fetch_sub(n, Ordering::Relaxed) - n;
        from_milli(left)
    }

    /// Takes `n` tokens if that many are available now; never goes negative.
    pub fn try_consume(&self, n: f64) -> bool {
        self.refill();
        let n = to_milli(n);
        // Relaxed: see `refill`; the check and the subtraction are one compare-and-swap, so
        // concurrent callers together never take more than there is.
        self.tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t >= n).then(|| t - n)
            })
            .is_ok()
    }

    /// Tokens available now.
    #[must_use]
    pub fn tokens(&self) -> f64 {
        self.refill();
        // Relaxed: a snapshot of a counter.
        from_milli(self.tokens.load(Ordering::Relaxed))
    }

    /// How long until at least `n` tokens are available (zero if they are now).
    #[must_use]
    pub fn wait_time(&self, n: f64) -> Duration {
        let tokens = self.tokens();
        if tokens >= n || self.rate <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((n - tokens) / self.rate)
        }
    }
}

#[allow(clippy::cast_possible_truncation)]
fn to_milli(n: f64) -> i64 {
    (n * MILLI).round() as i64
}

#[allow(clippy::cast_precision_loss)]
fn from_milli(n: i64) -> f64 {
    n as f64 / MILLI
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_counts_from_many_threads() {
        let m = std::sync::Arc::new(Meter::default());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let m = std::sync::Arc::clone(&m);
                std::thread::spawn(move || (0..10_000).for_each(|_| m.record(1, 10)))
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(m.total(), 40_000);
        assert_eq!(m.total_bytes(), 400_000);
    }

    /// Runs `threads` callers taking one token at a time for `run`; returns the tokens taken.
    fn race(b: &std::sync::Arc<TokenBucket>, threads: usize, run: Duration) -> u64 {
        let start = pulsar_rs_clock::monotonic();
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let b = std::sync::Arc::clone(b);
                std::thread::spawn(move || {
                    let mut taken = 0u64;
                    while start.elapsed() < run {
                        if b.try_consume(1.0) {
                            taken += 1;
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                    taken
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    }

    #[test]
    fn concurrent_callers_never_exceed_the_burst() {
        // No time to refill: 4 threads racing for a full bucket take exactly its capacity.
        let b = std::sync::Arc::new(TokenBucket::with_capacity(1e-3, 5_000.0));
        assert_eq!(race(&b, 4, Duration::from_millis(200)), 5_000);
        assert!(b.tokens() < 1.0);
    }

    #[test]
    fn concurrent_callers_get_the_rate_and_no_more() {
        // 20 000 tokens/s, burst 2 000 (so a descheduled thread loses nothing), for 400 ms:
        // about 2 000 + 8 000 taken, each interval credited once.
        let rate = 20_000.0;
        let b = std::sync::Arc::new(TokenBucket::with_capacity(rate, 2_000.0));
        let run = Duration::from_millis(400);
        let taken = race(&b, 4, run);
        #[allow(clippy::cast_precision_loss)]
        let taken = taken as f64;
        // One coarse clock tick (≤ 10 ms) of slack on each side.
        let most = 2_000.0 + rate * (run.as_secs_f64() + 0.010);
        let least = rate * (run.as_secs_f64() - 0.010) * 0.9;
        assert!(
            (least..=most).contains(&taken),
            "took {taken} tokens, expected {least}..={most}"
        );
    }

    /// A test clock, in ns, moved by hand.
    static FAKE_NS: AtomicU64 = AtomicU64::new(0);
    fn fake_now() -> u64 {
        // Relaxed: a counter moved by the test thread.
        let now = FAKE_NS.load(Ordering::Relaxed);
        // A caller may be preempted between reading `last_ns` and the clock and its CAS: make
        // it likely, so a lost or doubled credit would show.
        std::thread::yield_now();
        now
    }

    /// Takes tokens one at a time from `threads` threads until `done`; returns how many.
    fn race_until(
        b: &std::sync::Arc<TokenBucket>,
        threads: usize,
        done: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Vec<std::thread::JoinHandle<u64>> {
        (0..threads)
            .map(|_| {
                let (b, done) = (std::sync::Arc::clone(b), std::sync::Arc::clone(done));
                std::thread::spawn(move || {
                    let mut taken = 0u64;
                    // Relaxed: a stop flag; the join publishes the counts.
                    while !done.load(Ordering::Relaxed) {
                        if b.try_consume(1.0) {
                            taken += 1;
                        }
                    }
                    // Whatever was credited before the stop is drained too.
                    while b.try_consume(1.0) {
                        taken += 1;
                    }
                    taken
                })
            })
            .collect()
    }

    #[test]
    fn concurrent_callers_get_the_rate_and_never_exceed_the_burst() {
        // Fake time: an emptied bucket, 1 s idle (10 000 tokens earned), then 2 s in 1 ms steps
        // while 4 threads race: exactly 10 000 + 20 000 taken, each interval credited once and
        // each token taken once. (The burst of 30 000 is never reached, so a descheduled thread
        // loses nothing to the cap; `an_idle_bucket_refills_to_its_burst_only` checks the cap.)
        let _serial = FAKE_LOCK.lock();
        FAKE_NS.store(1_000, Ordering::Relaxed);
        let b = std::sync::Arc::new(TokenBucket::with_clock(10_000.0, 30_000.0, fake_now));
        b.consume(30_000.0);
        FAKE_NS.fetch_add(1_000_000_000, Ordering::Relaxed);
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hs = race_until(&b, 4, &done);
        for _ in 0..2_000 {
            FAKE_NS.fetch_add(1_000_000, Ordering::Relaxed);
            std::thread::sleep(Duration::from_micros(50));
        }
        done.store(true, Ordering::Relaxed);
        let taken: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(taken, 10_000 + 20_000, "3 s at 10 000/s");
        assert!(b.tokens().abs() < 1.0);
    }

    #[test]
    fn an_idle_bucket_refills_to_its_burst_only() {
        let _serial = FAKE_LOCK.lock();
        FAKE_NS.store(5_000, Ordering::Relaxed);
        let b = std::sync::Arc::new(TokenBucket::with_clock(1_000.0, 50.0, fake_now));
        b.consume(30.0);
        FAKE_NS.fetch_add(3_600_000_000_000, Ordering::Relaxed);
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let taken: u64 = race_until(&b, 4, &done)
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert_eq!(taken, 50, "an hour idle still allows one burst");
    }

    /// The fake-clock tests share [`FAKE_NS`]: one at a time.
    static FAKE_LOCK: Mutex<()> = Mutex::new(());

    #[test]
    fn token_bucket_goes_negative_and_reports_wait() {
        let b = TokenBucket::new(100.0);
        assert!(
            b.consume(150.0) < 0.0,
            "an accepted request is never refused"
        );
        let w = b.wait_time(1.0);
        assert!(
            w > Duration::from_millis(400) && w <= Duration::from_millis(520),
            "{w:?}"
        );
    }
}

/// A message-rate and a byte-rate limit sharing one decision: how long the caller must pause.
#[derive(Debug)]
pub struct RateLimiter {
    /// Messages per second, if limited.
    msgs: Option<TokenBucket>,
    /// Bytes per second, if limited.
    bytes: Option<TokenBucket>,
}

/// Burst allowed by a [`RateLimiter`], as a fraction of one second of its rate: small, so that
/// the achieved rate over any few seconds stays within a few percent of the limit.
const BURST_FRACTION: f64 = 0.05;

impl RateLimiter {
    /// A limiter for `msgs_per_sec` and `bytes_per_sec` (0 = that dimension unlimited); `None`
    /// when both are unlimited.
    #[must_use]
    pub fn new(msgs_per_sec: f64, bytes_per_sec: f64) -> Option<Self> {
        let bucket = |r: f64| {
            (r > 0.0).then(|| TokenBucket::with_capacity(r, (r * BURST_FRACTION).max(1.0)))
        };
        let l = RateLimiter {
            msgs: bucket(msgs_per_sec),
            bytes: bucket(bytes_per_sec),
        };
        (l.msgs.is_some() || l.bytes.is_some()).then_some(l)
    }

    /// The configured (messages/s, bytes/s), 0 = unlimited.
    #[must_use]
    pub fn rates(&self) -> (f64, f64) {
        (
            self.msgs.as_ref().map_or(0.0, TokenBucket::rate),
            self.bytes.as_ref().map_or(0.0, TokenBucket::rate),
        )
    }

    /// Charges what was just accepted; returns how long to pause before accepting more.
    pub fn consume(&self, msgs: u64, bytes: u64) -> Duration {
        #[allow(clippy::cast_precision_loss)]
        let (m, b) = (msgs as f64, bytes as f64);
        let wait = |bucket: &Option<TokenBucket>, n: f64| {
            bucket.as_ref().map_or(Duration::ZERO, |t| {
                let left = t.consume(n);
                if left < 0.0 {
                    Duration::from_secs_f64(-left / t.rate())
                } else {
                    Duration::ZERO
                }
            })
        };
        wait(&self.msgs, m).max(wait(&self.bytes, b))
    }

    /// How many messages (and bytes) may go now without pausing; `None` = unlimited.
    #[must_use]
    pub fn available(&self) -> (Option<f64>, Option<f64>) {
        (
            self.msgs.as_ref().map(TokenBucket::tokens),
            self.bytes.as_ref().map(TokenBucket::tokens),
        )
    }

    /// How long until at least one message and one byte may go.
    #[must_use]
    pub fn wait_time(&self) -> Duration {
        let w = |b: &Option<TokenBucket>| b.as_ref().map_or(Duration::ZERO, |t| t.wait_time(1.0));
        w(&self.msgs).max(w(&self.bytes))
    }
}

#[cfg(test)]
mod limiter_tests {
    use super::*;

    #[test]
    fn pacing_by_consume_waits_converges_to_the_rate() {
        let l = RateLimiter::new(2000.0, 0.0).unwrap();
        let start = pulsar_rs_clock::monotonic();
        let mut sent = 0u64;
        while start.elapsed() < Duration::from_millis(500) {
            sent += 10;
            let w = l.consume(10, 1000);
            if !w.is_zero() {
                std::thread::sleep(w);
            }
        }
        #[allow(clippy::cast_precision_loss)]
        let rate = sent as f64 / start.elapsed().as_secs_f64();
        assert!(
            (1800.0..2300.0).contains(&rate),
            "achieved {rate} msg/s for a 2000 msg/s limit"
        );
        assert!(RateLimiter::new(0.0, 0.0).is_none());
    }
}
